"""The audit trail: Agent OS FlightRecorder records into LightningStore spans, files and streams.

Every governed decision is one row of an Agent OS ``FlightRecorder`` (SQLite, SHA-256 chain).
:class:`FlightRecorderAdapter` (alias ``FlightRecorderEmitter``) turns each row into a real
``agentlightning`` ``Span`` with ``agent_os.*`` attributes, adds them to a ``LightningStore`` under
the rollout and attempt the decision was made in (awaited, idempotent), exports them to JSON or
JSON Lines files that :func:`verify_export` can prove unedited, and streams new ones.

>>> import os, tempfile
>>> from agentlightning.contrib.kernel.agentos import GovernanceKernel, SQLPolicy
>>> path = os.path.join(tempfile.mkdtemp(), "audit.db")
>>> kernel = GovernanceKernel([SQLPolicy(deny=["DROP"])], recorder=path)
>>> _ = kernel.check("database_query", {"query": "DROP TABLE users"}); kernel.close()
>>> emitter = FlightRecorderEmitter(path, trace_id_prefix="agentos")
>>> [(s.name, s.attributes["agent_os.policy_result"]) for s in emitter.get_new_spans()], emitter.get_new_spans()
([('agent_os.policy_check: blocked by SQLPolicy (critical)', 'blocked')], [])
"""

from agentlightning.contrib.kernel.agentos.semconv import KIND_AUDIT as AUDIT_KIND

from .adapter import (
    AUDIT_ROLLOUT_METADATA_KEY,
    FlightRecorderAdapter,
    FlightRecorderEmitter,
    adapters_for_directory,
    create_emitter,
)
from .export import ExportError, read_export, verify_export, verify_records
from .records import AuditError, AuditRecord, RecorderFileError, RecorderReader, RecordError, parse_record
from .spans import (
    ENTRY_POLICY_CHECK,
    ENTRY_SIGNAL,
    ENTRY_TOOL_CALL,
    MAX_ATTRIBUTE_CHARS,
    LightningSpan,
    entry_type,
    is_audit_span,
    record_attributes,
    record_to_span,
    span_name,
)

__all__ = [
    "AUDIT_KIND",
    "AUDIT_ROLLOUT_METADATA_KEY",
    "AuditError",
    "AuditRecord",
    "ENTRY_POLICY_CHECK",
    "ENTRY_SIGNAL",
    "ENTRY_TOOL_CALL",
    "ExportError",
    "FlightRecorderAdapter",
    "FlightRecorderEmitter",
    "LightningSpan",
    "MAX_ATTRIBUTE_CHARS",
    "RecordError",
    "RecorderFileError",
    "RecorderReader",
    "adapters_for_directory",
    "create_emitter",
    "entry_type",
    "is_audit_span",
    "parse_record",
    "read_export",
    "record_attributes",
    "record_to_span",
    "span_name",
    "verify_export",
    "verify_records",
]
