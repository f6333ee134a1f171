"""The audit room: every kernel decision as one record of a real Agent OS ``FlightRecorder``, durable
before its action runs, sealed and signed when keys are set, and read back and verified here.

In the kernel core (no agentlightning), so the kernel writes it, and the 0.3 adapter, the exporter,
the shipper and the 1.0 gateway read and verify it, with the same code.

* :mod:`.trail`: :class:`~.trail.AuditTrail`, the writer (group commit, fail closed and recover, one
  writer per file), and ``open_flight_recorder``.
* :mod:`.record`: the record format, built, validated and read in one place (``build_tool_args``,
  ``read_tool_args``, ``decision_from_record``).
* :mod:`.seal`: what the FlightRecorder does not do: the audit key, record seals, the signed chain
  head and the one verifier (``verify_rows``, ``verify_file``).
* :mod:`.signing`: per-host Ed25519 signing, key rotation, the keyring, and the command
  ``python -m agentlightning.contrib.kernel.agentos.audit.signing keygen|verify``.
* :mod:`.reader`: reading a recorder file read-only into validated records (``RecorderReader``,
  ``AuditRecord``, ``parse_record``).

>>> import os, tempfile
>>> from agentlightning.contrib.kernel.agentos import GovernanceKernel, SQLPolicy
>>> from agentlightning.contrib.kernel.agentos.audit import open_flight_recorder
>>> from agentlightning.contrib.kernel.agentos.audit.seal import verify_file
>>> path = os.path.join(tempfile.mkdtemp(), "audit.db")
>>> kernel = GovernanceKernel([SQLPolicy(deny=["DROP"])], recorder=open_flight_recorder(path))
>>> kernel.check("database_query", {"query": "DROP TABLE t"}).blocked; kernel.close()
True
>>> verify_file(path)["valid"]
True
"""

# The room's top is the trail's public names, listed once (in trail.py).
from .trail import *  # noqa: F403
from .trail import __all__ as __all__
