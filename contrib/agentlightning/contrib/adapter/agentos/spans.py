r"""One FlightRecorder record -> one ``agentlightning.types.Span`` with ``agent_os.*`` attributes.

The spans are :class:`LightningSpan`\ s: agentlightning's own ``Span`` (what ``LightningStore``
holds) under the reference tutorial's name, with its ``to_dict()`` and ``to_json()``.

Entry type (``agent_os.entry_type``), decided per record:

* ``policy_check``: a policy found something (the action was blocked, warned or rewritten);
  attributes ``agent_os.policy_name``, ``agent_os.policy_result``, ``agent_os.policy_violated``,
  plus ``agent_os.severity`` (worst), ``agent_os.blocked``, ``agent_os.violation_count``,
  ``agent_os.total_penalty``, ``agent_os.violation_reason``;
* ``signal``: a record of an Agent OS kernel signal (a ``kernel_panic`` record, or a row whose tool
  name is a signal such as ``SIGKILL``); attributes ``agent_os.signal_type``, ``agent_os.signal_target``;
* ``tool_call``: everything else (an action every policy allowed, or a row written without a
  governance envelope).

Every span carries ``agent_os.entry_type``, ``agent_os.agent_id``, the tool attributes
(``agent_os.tool_name``, ``agent_os.tool_args`` and ``agent_os.tool_result``, each truncated to
1000 characters), the record's identity (``agent_os.record_id``, ``agent_os.record_trace_id``,
``agent_os.entry_hash``, ``agent_os.content_hash``) and ``agentos.kind = "audit"``. That last
attribute keeps audit spans apart from the runner's ``check``/``violation`` annotation spans, so
``governance_stats`` never counts a violation twice. A blocked record that also dispatched kernel
signals stays a ``policy_check`` and gets the signal attributes too.

The span id is the first 16 hex digits of the record's ``entry_hash`` (its SHA-256 chain hash,
fixed when the row is inserted), so the same record always becomes the same span id: a store
that already holds it rejects a second copy.

>>> import os, tempfile
>>> from agentlightning.contrib.kernel.agentos import GovernanceKernel, SQLPolicy
>>> from agentlightning.contrib.kernel.agentos.audit.reader import RecorderReader
>>> path = os.path.join(tempfile.mkdtemp(), "audit.db")
>>> kernel = GovernanceKernel([SQLPolicy(deny=["DROP"])], recorder=path)
>>> _ = kernel.check("database_query", {"query": "DROP TABLE t"}); kernel.close()
>>> record = next(RecorderReader(path).records())
>>> span = record_to_span(record)
>>> span.name
'agent_os.policy_check: blocked by SQLPolicy (critical)'
>>> [span.attributes[f"agent_os.{name}"] for name in ("entry_type", "policy_name", "severity", "blocked")]
['policy_check', 'SQLPolicy', 'critical', True]
"""

from __future__ import annotations

import hashlib
import json
from datetime import datetime
from typing import Any, Dict, Optional

from agent_os import AgentSignal
from pydantic import model_validator

from agentlightning.types import Span
from agentlightning.types.tracer import OtelResource, SpanContext, TraceStatus
from agentlightning.utils.otel import make_tag_attributes

from agentlightning.contrib.kernel.agentos.audit.reader import AuditRecord
from agentlightning.contrib.kernel.agentos.audit.record import violation_summary
from agentlightning.contrib.kernel.agentos.semconv import (
    AGENT_OS_AGENT_ID,
    AGENT_OS_ATTEMPT_ID,
    AGENT_OS_BLOCKED,
    AGENT_OS_CONTENT_HASH,
    AGENT_OS_DECISION_ID,
    AGENT_OS_ENTRY_HASH,
    AGENT_OS_ENTRY_TYPE,
    AGENT_OS_EXECUTION_TIME_MS,
    AGENT_OS_EXTRA_PREFIX,
    AGENT_OS_POLICY_RESULT,
    AGENT_OS_POLICY_VIOLATED,
    AGENT_OS_RECORD_ID,
    AGENT_OS_RECORD_TRACE_ID,
    AGENT_OS_RECORDER,
    AGENT_OS_ROLLOUT_ID,
    AGENT_OS_SIGNAL_TARGET,
    AGENT_OS_SIGNAL_TYPE,
    AGENT_OS_TIMESTAMP,
    AGENT_OS_TOOL_ARGS,
    AGENT_OS_TOOL_ARGS_TRUNCATED,
    AGENT_OS_TOOL_NAME,
    AGENT_OS_TOOL_RESULT,
    AGENT_OS_TOOL_RESULT_TRUNCATED,
    AGENT_OS_VERDICT,
    AGENT_OS_VIOLATION_COUNT,
    AGENT_OS_VIOLATION_REASON,
    AGENTOS_AUDIT_TAG,
    AGENTOS_KIND,
    AUDIT_SERVICE_NAME,
    AUDIT_SPAN_NAME_PREFIX,
    KIND_AUDIT,
)
from agentlightning.contrib.kernel.agentos.violations import worst_severity

__all__ = [
    "LightningSpan",
    "ENTRY_POLICY_CHECK",
    "ENTRY_SIGNAL",
    "ENTRY_TOOL_CALL",
    "MAX_ATTRIBUTE_CHARS",
    "entry_type",
    "record_attributes",
    "record_span_id",
    "record_to_span",
    "span_name",
    "is_audit_span",
]

#: Values of ``agent_os.entry_type`` (see the module docstring).
ENTRY_POLICY_CHECK = "policy_check"
ENTRY_SIGNAL = "signal"
ENTRY_TOOL_CALL = "tool_call"
#: ``agent_os.tool_args``, ``agent_os.tool_result`` and descriptions are cut to this many characters.
MAX_ATTRIBUTE_CHARS = 1000

_SIGNAL_NAMES = frozenset(s.name for s in AgentSignal)
_RESOURCE = OtelResource(attributes={"service.name": AUDIT_SERVICE_NAME}, schema_url="")


class LightningSpan(Span):
    """The reference tutorial's ``LightningSpan``: agentlightning's own ``Span``, with ``to_dict()`` and ``to_json()``.

    Every span the emitter makes is one (so a ``LightningStore`` takes it as it is). Built by hand
    with the tutorial's arguments, the fields a store fills in (rollout, attempt, sequence number,
    status, resource, links) start empty, and ``start_time``/``end_time`` may be timezone-aware
    datetimes: they are kept as epoch seconds, like every ``Span``'s times.

    >>> from datetime import datetime, timezone
    >>> moment = datetime(2026, 1, 1, tzinfo=timezone.utc)
    >>> span = LightningSpan(span_id="entry-001", trace_id="agentos-agent-42", name="agent_os.policy_check",
    ...     start_time=moment, end_time=moment, attributes={"agent_os.policy_violated": True}, events=[])
    >>> span.to_dict()["start_time"], span.to_dict()["attributes"], isinstance(span, Span)
    (1767225600.0, {'agent_os.policy_violated': True}, True)
    >>> LightningSpan.model_validate_json(span.to_json()) == span
    True
    """

    @model_validator(mode="before")
    @classmethod
    def _reference_arguments(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        values = dict(data)
        for key in ("start_time", "end_time"):
            moment = values.get(key)
            if isinstance(moment, datetime):
                if moment.tzinfo is None:
                    raise ValueError(
                        f"LightningSpan {key}: a datetime without a time zone is ambiguous; "
                        "give an aware one, e.g. datetime.now(timezone.utc), or epoch seconds"
                    )
                values[key] = moment.timestamp()
        span_id, trace_id = values.get("span_id"), values.get("trace_id")
        defaults: Dict[str, Any] = {
            "rollout_id": "",
            "attempt_id": "",
            "sequence_id": 0,
            "parent_id": None,
            "status": TraceStatus(status_code="UNSET"),
            "events": [],
            "links": [],
            "context": SpanContext(trace_id=trace_id, span_id=span_id, is_remote=False, trace_state={})
            if isinstance(span_id, str) and isinstance(trace_id, str)
            else None,
            "parent": None,
            "resource": OtelResource(attributes={}, schema_url=""),
        }
        for key, value in defaults.items():
            values.setdefault(key, value)
        return values

    def to_dict(self) -> Dict[str, Any]:
        """The span as JSON-ready values (``model_dump(mode="json")``)."""
        return self.model_dump(mode="json")

    def to_json(self) -> str:
        """The span as a JSON string (``model_dump_json()``); ``LightningSpan.model_validate_json`` reads it back."""
        return self.model_dump_json()


def entry_type(record: AuditRecord) -> str:
    """``policy_check``, ``signal`` or ``tool_call`` (see the module docstring)."""
    if record.policy_violated:
        return ENTRY_POLICY_CHECK
    if record.tool_name == "kernel_panic" or record.tool_name in _SIGNAL_NAMES:
        return ENTRY_SIGNAL
    return ENTRY_TOOL_CALL


def _truncate(value: Any, limit: int = MAX_ATTRIBUTE_CHARS) -> tuple:
    if value is None:
        return "", False
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=repr)
    return (text[:limit], True) if len(text) > limit else (text, False)


def record_span_id(record: AuditRecord) -> str:
    """Deterministic 16-hex-digit span id of ``record`` (from its chain hash)."""
    if record.entry_hash and len(record.entry_hash) >= 16:
        return record.entry_hash[:16]
    return hashlib.sha256(f"agentos-record:{record.trace_id}".encode()).hexdigest()[:16]


def record_attributes(
    record: AuditRecord, *, include_signals: bool = True, kind: Optional[str] = None
) -> Dict[str, Any]:
    """The span attributes of ``record`` (``agent_os.*`` plus ``agentos.kind = "audit"``); the
    names are constants in :mod:`agentlightning.contrib.kernel.agentos.semconv`."""
    kind = kind or entry_type(record)
    args, args_cut = _truncate(record.args if record.tool_args is not None else None)
    result, result_cut = _truncate(record.result)
    attributes: Dict[str, Any] = {
        AGENTOS_KIND: KIND_AUDIT,
        AGENT_OS_ENTRY_TYPE: kind,
        AGENT_OS_AGENT_ID: record.agent_id,
        AGENT_OS_TOOL_NAME: record.tool_name,
        AGENT_OS_TOOL_ARGS: args,
        AGENT_OS_TOOL_RESULT: result,
        AGENT_OS_VERDICT: record.verdict,
        AGENT_OS_BLOCKED: record.blocked,
        AGENT_OS_RECORD_ID: record.record_id,
        AGENT_OS_RECORD_TRACE_ID: record.trace_id,
        AGENT_OS_TIMESTAMP: record.timestamp,
        AGENT_OS_ENTRY_HASH: record.entry_hash or "",
        AGENT_OS_CONTENT_HASH: record.content_hash or "",
        AGENT_OS_RECORDER: record.source,
        **make_tag_attributes([AGENTOS_AUDIT_TAG, f"{AGENT_OS_ENTRY_TYPE}:{kind}"]),
    }
    if args_cut:
        attributes[AGENT_OS_TOOL_ARGS_TRUNCATED] = True
    if result_cut:
        attributes[AGENT_OS_TOOL_RESULT_TRUNCATED] = True
    if record.execution_time_ms is not None:
        attributes[AGENT_OS_EXECUTION_TIME_MS] = record.execution_time_ms
    envelope = record.envelope
    if envelope is not None:
        attributes[AGENT_OS_DECISION_ID] = envelope["decision_id"]
        if envelope.get("rollout_id"):
            attributes[AGENT_OS_ROLLOUT_ID] = envelope["rollout_id"]
        if envelope.get("attempt_id"):
            attributes[AGENT_OS_ATTEMPT_ID] = envelope["attempt_id"]
    if envelope is not None or kind == ENTRY_POLICY_CHECK:
        violations = record.violations
        attributes[AGENT_OS_POLICY_RESULT] = record.policy_verdict
        attributes[AGENT_OS_POLICY_VIOLATED] = record.policy_violated
        attributes[AGENT_OS_VIOLATION_COUNT] = len(violations)
        attributes.update(violation_summary(violations))  # policy names, worst severity, total penalty
    if record.violation_reason:
        attributes[AGENT_OS_VIOLATION_REASON] = _truncate(record.violation_reason)[0]
    signals = record.signals
    if kind == ENTRY_SIGNAL:
        signals = signals or ([record.tool_name] if record.tool_name in _SIGNAL_NAMES else [AgentSignal.SIGKILL.name])
    if signals and (include_signals or kind == ENTRY_SIGNAL):
        attributes[AGENT_OS_SIGNAL_TYPE] = ",".join(signals)
        attributes[AGENT_OS_SIGNAL_TARGET] = record.agent_id
    for key, value in record.extra.items():  # strict=False keeps unknown fields, never drops them
        attributes[AGENT_OS_EXTRA_PREFIX + key] = json.dumps(value, sort_keys=True, default=repr)[:MAX_ATTRIBUTE_CHARS]
    return attributes


def span_name(record: AuditRecord, *, readable: bool = True, kind: Optional[str] = None) -> str:
    """``agent_os.<entry_type>``, followed (``readable=True``) by what a person needs to read it
    in the dashboard's traces table, which shows span names but not attribute values:

    * ``agent_os.policy_check: blocked by SQLPolicy (critical)``
    * ``agent_os.signal: SIGKILL``
    * ``agent_os.tool_call: database_query``

    Programs should select spans by ``agent_os.entry_type`` (or ``name.split(":")[0]``).
    """
    kind = kind or entry_type(record)
    base = f"{AUDIT_SPAN_NAME_PREFIX}{kind}"
    if not readable:
        return base
    if kind == ENTRY_POLICY_CHECK:
        worst = worst_severity(v["severity"] for v in record.violations)
        verdict = "blocked" if record.blocked else record.policy_verdict
        policies = ", ".join(record.policy_names) or "Agent OS"
        return f"{base}: {verdict} by {policies}" + (f" ({worst})" if worst else "")
    if kind == ENTRY_SIGNAL:
        return f"{base}: {','.join(record.signals) or record.tool_name}"
    return f"{base}: {record.tool_name}" + (
        f" ({record.verdict})" if record.verdict not in ("allowed", "pending") else ""
    )


def record_to_span(
    record: AuditRecord,
    *,
    rollout_id: Optional[str] = None,
    attempt_id: Optional[str] = None,
    sequence_id: Optional[int] = None,
    trace_id_prefix: str = "agentos",
    include_signals: bool = True,
    readable_names: bool = True,
) -> LightningSpan:
    """The span of ``record`` (a :class:`LightningSpan`, i.e. an agentlightning ``Span``).

    ``rollout_id``/``attempt_id`` default to the record's own (from its governance envelope, or
    ``""`` for a record made outside any rollout) and ``sequence_id`` to the record id; a store
    export replaces them with the target attempt and store-issued sequence ids. The trace id is
    ``f"{trace_id_prefix}-{agent_id}"``; the status is ``ERROR`` for blocked or failed actions so
    they stand out in the dashboard.
    """
    kind = entry_type(record)
    start = record.time
    end = start + record.execution_time_ms / 1000.0 if record.execution_time_ms else start
    status = (
        TraceStatus(status_code="ERROR", description=(record.violation_reason or record.verdict)[:MAX_ATTRIBUTE_CHARS])
        if record.verdict in ("blocked", "error")
        else TraceStatus(status_code="OK")
    )
    return LightningSpan.from_attributes(
        attributes=record_attributes(record, include_signals=include_signals, kind=kind),
        rollout_id=rollout_id if rollout_id is not None else (record.rollout_id or ""),
        attempt_id=attempt_id if attempt_id is not None else (record.attempt_id or ""),
        sequence_id=sequence_id if sequence_id is not None else record.record_id,
        name=span_name(record, readable=readable_names, kind=kind),
        trace_id=f"{trace_id_prefix}-{record.agent_id}",
        span_id=record_span_id(record),
        start_time=start,
        end_time=end,
        resource=_RESOURCE,
        status=status,
    )


def is_audit_span(span: Any) -> bool:
    """True for a span written by this adapter (any object with ``.attributes``)."""
    attributes = getattr(span, "attributes", None) or {}
    return attributes.get(AGENTOS_KIND) == KIND_AUDIT
