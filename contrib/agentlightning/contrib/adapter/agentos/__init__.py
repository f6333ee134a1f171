"""The audit trail: Agent OS FlightRecorder records into LightningStore spans, files and streams.

Every governed decision is one row of an Agent OS ``FlightRecorder`` (SQLite, SHA-256 chain).
:class:`FlightRecorderAdapter` (the reference tutorial's ``FlightRecorderEmitter``: ``reference_names``)
turns each row into a real ``agentlightning`` ``Span`` with ``agent_os.*`` attributes, adds them to a
``LightningStore`` under the rollout and attempt the decision was made in (awaited, idempotent),
exports them to JSON or JSON Lines files that :func:`verify_export` can prove unedited, and
streams new ones.

>>> import os, tempfile
>>> from agentlightning.contrib.kernel.agentos import GovernanceKernel, SQLPolicy
>>> path = os.path.join(tempfile.mkdtemp(), "audit.db")
>>> kernel = GovernanceKernel([SQLPolicy(deny=["DROP"])], recorder=path)
>>> _ = kernel.check("database_query", {"query": "DROP TABLE users"}); kernel.close()
>>> emitter = FlightRecorderEmitter(path, trace_id_prefix="agentos")
>>> [(s.name, s.attributes["agent_os.policy_result"]) for s in emitter.get_new_spans()], emitter.get_new_spans()
([('agent_os.policy_check: blocked by SQLPolicy (critical)', 'blocked')], [])

The top holds the adapter, its factories, the export check and the errors to catch (every one is
an :class:`AuditError`); the rest is imported from its module: ``spans`` (how a record becomes a
span: ``record_to_span``, ``is_audit_span``, ...), ``export`` (``verify_records``) and ``adapter``.
Reading a recorder file into validated records needs no agentlightning, so it is the kernel's:
``agentlightning.contrib.kernel.agentos.audit.reader`` (``AuditRecord``, ``RecorderReader``,
``parse_record``, the finer errors).
"""

from agentlightning.contrib.kernel.agentos.audit.reader import AuditError

from .adapter import FlightRecorderAdapter, adapters_for_directory, create_emitter
from .export import ExportError, read_export, verify_export
from .reference_names import FlightRecorderEmitter
from .spans import LightningSpan

__all__ = [
    "AuditError",
    "ExportError",
    "FlightRecorderAdapter",
    "FlightRecorderEmitter",
    "LightningSpan",
    "adapters_for_directory",
    "create_emitter",
    "read_export",
    "verify_export",
]
