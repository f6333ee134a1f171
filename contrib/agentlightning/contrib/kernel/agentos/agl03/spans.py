"""Check and violation spans: their names, attributes and agentlightning ``Span`` objects.

Inside a runner, spans are emitted into the active trace. Everything else (a reward computed
after the rollout, a Gymnasium episode, an imported audit trail) builds the same spans here and
adds them to a ``LightningStore`` under a rollout and attempt of its choice. Attribute names are
constants in the kernel's ``semconv``; the reward span is built in :mod:`.reward_span`. This module needs
agentlightning 0.3 and is imported only by the 0.3 rooms (the kernel core never imports it).

>>> from agentlightning.contrib.kernel.agentos import GovernanceKernel, SQLPolicy, Action
>>> from agentlightning.contrib.kernel.agentos.semconv import (
...     AGENTOS_ACTION_BLOCKED, AGENTOS_KIND, AGENTOS_POLICY_NAME, AGENTOS_SEVERITY)
>>> decision = GovernanceKernel([SQLPolicy(deny=["DROP"])]).check(Action.sql("DROP TABLE t"))
>>> attrs = violation_span_attributes(decision, 0)
>>> attrs[AGENTOS_KIND], attrs[AGENTOS_POLICY_NAME], attrs[AGENTOS_SEVERITY], attrs[AGENTOS_ACTION_BLOCKED]
('violation', 'SQLPolicy', 'critical', True)
>>> check_span_name(decision), violation_span_name(decision, 0)
('agentos.check: blocked database_query', 'agentos.violation: SQLPolicy (critical) penalty -100.0, blocked')
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence

from agentlightning.store.base import LightningStore
from agentlightning.tracer.base import get_active_tracer
from agentlightning.tracer.dummy import DummyTracer
from agentlightning.types import Span, TraceStatus
from agentlightning.types.tracer import SpanCoreFields
from agentlightning.utils.otel import (
    check_attributes_sanity,
    flatten_attributes,
    make_link_attributes,
    make_tag_attributes,
    sanitize_attributes,
)

from ..actions import Decision
from ..semconv import (
    AGENTOS_AGENT_ID,
    AGENTOS_CHECK_TAG,
    AGENTOS_DECISION_ID,
    AGENTOS_KIND,
    AGENTOS_PENALTY,
    AGENTOS_SEVERITY,
    AGENTOS_SIGNALS,
    AGENTOS_TOOL_NAME,
    AGENTOS_TOTAL_PENALTY,
    AGENTOS_VERDICT,
    AGENTOS_VIOLATION_COUNT,
    AGENTOS_VIOLATION_INDEX,
    AGENTOS_VIOLATION_TAG,
    CHECK_SPAN_NAME,
    KIND_CHECK,
    KIND_VIOLATION,
    VIOLATION_SPAN_NAME,
)
from ..sql.effects import snippet
from ..violations import SeverityTable, penalty_of

__all__ = [
    "annotation_span",
    "check_span_name",
    "violation_span_name",
    "check_span_attributes",
    "violation_span_attributes",
    "span_kind",
    "is_check_span",
    "is_violation_span",
    "decision_core_fields",
    "emit_decision_spans",
    "add_spans",
    "readable_number",
]

#: Names are for the dashboard's table: policy and tool names go on one line there (a newline or tab
#: would break it) and long ones are cut (never in attributes).
_MAX_NAME_PART_CHARS = 80


def readable_number(value: float) -> str:
    """A reward or penalty as people read it in a span name.

    >>> readable_number(-100), readable_number(0.851234567), readable_number(6)
    ('-100.0', '0.8512', '6.0')
    """
    return repr(round(float(value), 4))


def check_span_name(decision: Decision) -> str:
    """``agentos.check: <verdict> <tool>``, the name of a check span in the dashboard."""
    tool = snippet(decision.action.tool_name, _MAX_NAME_PART_CHARS)
    return f"{CHECK_SPAN_NAME}: {decision.verdict.value} {tool}"


def violation_span_name(decision: Decision, index: int, *, penalties: Optional[SeverityTable] = None) -> str:
    """``agentos.violation: <policy> (<severity>) penalty <p>, <blocked|not blocked>``, the penalty
    the price its kernel wrote on it (checked against ``penalties`` when given: :func:`penalty_of`)."""
    violation = decision.violations[index]
    outcome = "blocked" if violation.action_blocked else "not blocked"
    policy = snippet(violation.policy_name, _MAX_NAME_PART_CHARS)
    return (
        f"{VIOLATION_SPAN_NAME}: {policy} ({violation.severity.value}) "
        f"penalty {readable_number(penalty_of(violation, penalties))}, {outcome}"
    )


def check_span_attributes(decision: Decision, *, penalties: Optional[SeverityTable] = None) -> Dict[str, Any]:
    """Attributes of the span recording one kernel check; its total penalty as :func:`violation_span_attributes`."""
    return {
        AGENTOS_KIND: KIND_CHECK,
        AGENTOS_DECISION_ID: decision.decision_id,
        AGENTOS_VERDICT: decision.verdict.value,
        AGENTOS_TOOL_NAME: decision.action.tool_name,
        AGENTOS_AGENT_ID: decision.context.agent_id,
        AGENTOS_VIOLATION_COUNT: len(decision.violations),
        AGENTOS_TOTAL_PENALTY: float(sum(penalty_of(v, penalties) for v in decision.violations)),
        AGENTOS_SIGNALS: ",".join(decision.signals),
        **make_tag_attributes([AGENTOS_CHECK_TAG]),
    }


def violation_span_attributes(
    decision: Decision, index: int, *, penalties: Optional[SeverityTable] = None
) -> Dict[str, Any]:
    """Attributes of the span recording violation ``index`` of ``decision``: where it was found,
    then the violation's own (:meth:`PolicyViolation.span_attributes`), its penalty the price its
    kernel wrote on it (checked against ``penalties`` when given: :func:`penalty_of`)."""
    violation = decision.violations[index]
    return {
        AGENTOS_KIND: KIND_VIOLATION,
        AGENTOS_DECISION_ID: decision.decision_id,
        AGENTOS_VIOLATION_INDEX: index,
        AGENTOS_TOOL_NAME: decision.action.tool_name,
        AGENTOS_AGENT_ID: decision.context.agent_id,
        **violation.span_attributes(),  # as its fields declare (PolicyViolation.span_attributes)
        AGENTOS_PENALTY: penalty_of(violation, penalties),
        **make_tag_attributes([AGENTOS_VIOLATION_TAG, f"{AGENTOS_SEVERITY}:{violation.severity.value}"]),
        **make_link_attributes({AGENTOS_DECISION_ID: decision.decision_id}),
    }


def span_kind(span: Any) -> Any:
    """The ``agentos.kind`` of a span (any object with ``.attributes``): ``"check"``,
    ``"violation"``, ``"reward"``, or None for a span this plugin did not write.

    >>> from types import SimpleNamespace
    >>> span_kind(SimpleNamespace(attributes={"agentos.kind": "check"})), span_kind(SimpleNamespace(attributes=None))
    ('check', None)
    """
    return (getattr(span, "attributes", None) or {}).get(AGENTOS_KIND)


def is_check_span(span: Any) -> bool:
    """True for a span written with :func:`check_span_attributes` (any object with ``.attributes``)."""
    return span_kind(span) == KIND_CHECK


def is_violation_span(span: Any) -> bool:
    """True for a span written with :func:`violation_span_attributes`."""
    return span_kind(span) == KIND_VIOLATION


def annotation_span(name: str, annotation: Dict[str, Any], *, propagate: bool = True) -> SpanCoreFields:
    """An annotation span called ``name``: agentlightning's ``emit_annotation`` with a name.

    The attributes are flattened, checked and sanitised by agentlightning's own helpers, exactly
    as ``emit_annotation`` does; only the span name differs (``emit_annotation`` always writes
    ``agentlightning.annotation``, which the dashboard cannot tell apart). With ``propagate`` the
    span goes to the active tracer (inside a rollout); without, it is only built, to be added to a
    store with :func:`add_spans`.

    >>> annotation_span("agentos.check: allowed t", {"agentos.kind": "check"}, propagate=False).name
    'agentos.check: allowed t'
    """
    attributes = flatten_attributes(annotation, expand_leaf_lists=False)
    check_attributes_sanity(attributes)
    attributes = sanitize_attributes(attributes)
    tracer = get_active_tracer() if propagate else DummyTracer()
    if tracer is None:
        raise RuntimeError(
            f"No active tracer found. Cannot emit the span {name!r} outside a rollout; build it with propagate=False."
        )
    return tracer.create_span(name=name, attributes=attributes, status=TraceStatus(status_code="OK"))


def decision_core_fields(decision: Decision, *, penalties: Optional[SeverityTable] = None) -> List[SpanCoreFields]:
    """The check span and one span per violation of ``decision`` (as the runner emits them),
    penalties priced by the table ``penalties`` (default: the default table)."""
    check = check_span_attributes(decision, penalties=penalties)
    fields = [annotation_span(check_span_name(decision), check, propagate=False)]
    fields += [
        annotation_span(
            violation_span_name(decision, i, penalties=penalties),
            violation_span_attributes(decision, i, penalties=penalties),
            propagate=False,
        )
        for i in range(len(decision.violations))
    ]
    return fields


def emit_decision_spans(decision: Decision, *, penalties: Optional[SeverityTable] = None) -> None:
    """Send the check span and one span per violation of ``decision`` to the active tracer.

    Outside a trace (a governed tool used with an explicit kernel and no runner) there is nowhere
    to put spans, and nothing is sent; the decision is still in the kernel's audit trail.
    """
    if get_active_tracer() is None:
        return
    annotation_span(check_span_name(decision), check_span_attributes(decision, penalties=penalties))
    for index in range(len(decision.violations)):
        annotation_span(
            violation_span_name(decision, index, penalties=penalties),
            violation_span_attributes(decision, index, penalties=penalties),
        )


async def add_spans(
    store: LightningStore, rollout_id: str, attempt_id: str, fields: Sequence[SpanCoreFields]
) -> List[Span]:
    """Add ``fields`` to ``store`` as spans of the attempt, in order, after any span already there."""
    if not fields:
        return []
    sequence_ids = await store.get_many_span_sequence_ids([(rollout_id, attempt_id)] * len(fields))
    spans = [
        Span.from_core_fields(core, rollout_id=rollout_id, attempt_id=attempt_id, sequence_id=sequence_id)
        for core, sequence_id in zip(fields, sequence_ids)
    ]
    await store.add_many_spans(spans)
    return spans
