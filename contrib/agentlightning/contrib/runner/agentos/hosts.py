"""Who ran it: the host and process every worker name, audit file, record and span carries.

agentlightning numbers a runner's workers from 0 in every process (``Worker-0``), so on several
runner hosts (or several runner processes started by hand) the store shows one ``Worker-0`` for
many processes, and every host's ``audit_dir`` holds a ``worker-0.db``. An :class:`AgentOSRunner`
worker is named ``Worker-<n>@<host>-<pid>`` instead, and writes ``worker-<n>@<host>-<pid>.db``;
its records and spans carry the same name as their agent id. Host and process id together are
unique at any moment across hosts whose names differ; a restarted process gets a new name and a
new file (a hash chain is never continued by another process).

The host name is ``AGENTOS_HOST_NAME`` if set (containers and network namespaces often share or
randomise ``hostname``), else the system's host name, with every character outside
``[A-Za-z0-9._-]`` replaced by ``_``: the name is used as it is in a URL path (agentlightning's
``/workers/<worker id>``) and in a file name.

>>> import os
>>> os.environ["AGENTOS_HOST_NAME"] = "gpu node/7"
>>> host_name()
'gpu_node_7'
>>> worker_name(3) == f"Worker-3@gpu_node_7-{os.getpid()}"
True
>>> parse_worker_name(worker_name(3)) == (3, "gpu_node_7", os.getpid())
True
>>> parse_audit_file_name(audit_file_name(0)) == (0, "gpu_node_7", os.getpid())
True
>>> del os.environ["AGENTOS_HOST_NAME"]
"""

from __future__ import annotations

import os
import re
from typing import Optional, Tuple

# One rule for this host's name: the kernel's, which also names the host in the audit file's signed head.
from agentlightning.contrib.kernel.agentos.audit.signing import HOST_NAME_ENV, host_name

__all__ = [
    "HOST_NAME_ENV",
    "audit_file_name",
    "host_name",
    "parse_audit_file_name",
    "parse_worker_name",
    "process_identity",
    "worker_name",
]

_WORKER = re.compile(r"^Worker-(\d+)@([A-Za-z0-9._-]+)-(\d+)$")
_AUDIT_FILE = re.compile(r"^worker-(\d+)@([A-Za-z0-9._-]+)-(\d+)\.db$")


def process_identity() -> str:
    """``<host>-<pid>``: this process among all runner processes of every host (read at each call,
    so a forked or spawned runner process names itself, not its parent)."""
    return f"{host_name()}-{os.getpid()}"


def worker_name(worker_id: int, identity: Optional[str] = None) -> str:
    """The store's name of worker ``worker_id`` of the process ``identity`` (default: this one):
    ``Worker-<n>@<host>-<pid>``."""
    return f"Worker-{worker_id}@{identity or process_identity()}"


def audit_file_name(worker_id: int, identity: Optional[str] = None) -> str:
    """The FlightRecorder file of worker ``worker_id`` of the process ``identity`` (default: this
    one): ``worker-<n>@<host>-<pid>.db``."""
    return f"worker-{worker_id}@{identity or process_identity()}.db"


def _parsed(pattern: "re.Pattern[str]", text: str) -> Optional[Tuple[int, str, int]]:
    match = pattern.match(text)
    if match is None:
        return None
    return int(match.group(1)), match.group(2), int(match.group(3))


def parse_worker_name(name: str) -> Optional[Tuple[int, str, int]]:
    """``(worker number, host, pid)`` of a worker name :func:`worker_name` made; None for another name."""
    return _parsed(_WORKER, name)


def parse_audit_file_name(name: str) -> Optional[Tuple[int, str, int]]:
    """``(worker number, host, pid)`` of an audit file name :func:`audit_file_name` made; None otherwise."""
    return _parsed(_AUDIT_FILE, name)
