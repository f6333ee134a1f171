"""Span conventions for governance decisions, shared by the runner, rewards, environment and
audit adapter so that every path writes (and every reader finds) the same spans.

Each kernel check becomes one ``agentlightning.annotation`` span tagged ``agentos.check``; each
violation of that check becomes one more annotation span tagged ``agentos.violation``, linked to
its check by ``agentos.decision_id``. Attribute names are the constants below.

>>> from agentlightning.contrib.kernel.agentos import GovernanceKernel, SQLPolicy, Action
>>> decision = GovernanceKernel([SQLPolicy(deny=["DROP"])]).check(Action.sql("DROP TABLE t"))
>>> attrs = violation_span_attributes(decision, 0)
>>> attrs[AGENTOS_KIND], attrs[AGENTOS_POLICY_NAME], attrs[AGENTOS_SEVERITY], attrs[AGENTOS_ACTION_BLOCKED]
('violation', 'SQLPolicy', 'critical', True)
"""

from __future__ import annotations

from typing import Any, Dict, Mapping

from agentlightning.utils.otel import make_link_attributes, make_tag_attributes

from .actions import Decision

__all__ = [
    "AGENTOS_CHECK_TAG",
    "AGENTOS_VIOLATION_TAG",
    "AGENTOS_KIND",
    "AGENTOS_DECISION_ID",
    "AGENTOS_VERDICT",
    "AGENTOS_TOOL_NAME",
    "AGENTOS_AGENT_ID",
    "AGENTOS_VIOLATION_COUNT",
    "AGENTOS_TOTAL_PENALTY",
    "AGENTOS_SIGNALS",
    "AGENTOS_VIOLATION_INDEX",
    "AGENTOS_POLICY_NAME",
    "AGENTOS_SEVERITY",
    "AGENTOS_VIOLATION_TYPE",
    "AGENTOS_DESCRIPTION",
    "AGENTOS_PENALTY",
    "AGENTOS_ACTION_BLOCKED",
    "check_span_attributes",
    "violation_span_attributes",
    "is_check_span",
    "is_violation_span",
]

AGENTOS_CHECK_TAG = "agentos.check"
AGENTOS_VIOLATION_TAG = "agentos.violation"

AGENTOS_KIND = "agentos.kind"  #: "check" or "violation"
AGENTOS_DECISION_ID = "agentos.decision_id"
AGENTOS_VERDICT = "agentos.verdict"
AGENTOS_TOOL_NAME = "agentos.tool_name"
AGENTOS_AGENT_ID = "agentos.agent_id"
AGENTOS_VIOLATION_COUNT = "agentos.violation_count"
AGENTOS_TOTAL_PENALTY = "agentos.total_penalty"
AGENTOS_SIGNALS = "agentos.signals"
AGENTOS_VIOLATION_INDEX = "agentos.violation_index"
AGENTOS_POLICY_NAME = "agentos.policy_name"
AGENTOS_SEVERITY = "agentos.severity"
AGENTOS_VIOLATION_TYPE = "agentos.violation_type"
AGENTOS_DESCRIPTION = "agentos.description"
AGENTOS_PENALTY = "agentos.penalty"
AGENTOS_ACTION_BLOCKED = "agentos.action_blocked"

#: Descriptions are truncated in span attributes (the full text is in the audit trail).
MAX_DESCRIPTION_CHARS = 1000


def check_span_attributes(decision: Decision) -> Dict[str, Any]:
    """Attributes of the span recording one kernel check."""
    return {
        AGENTOS_KIND: "check",
        AGENTOS_DECISION_ID: decision.decision_id,
        AGENTOS_VERDICT: decision.verdict.value,
        AGENTOS_TOOL_NAME: decision.action.tool_name,
        AGENTOS_AGENT_ID: decision.context.agent_id,
        AGENTOS_VIOLATION_COUNT: len(decision.violations),
        AGENTOS_TOTAL_PENALTY: decision.total_penalty,
        AGENTOS_SIGNALS: ",".join(decision.signals),
        **make_tag_attributes([AGENTOS_CHECK_TAG]),
    }


def violation_span_attributes(decision: Decision, index: int) -> Dict[str, Any]:
    """Attributes of the span recording violation ``index`` of ``decision``."""
    violation = decision.violations[index]
    return {
        AGENTOS_KIND: "violation",
        AGENTOS_DECISION_ID: decision.decision_id,
        AGENTOS_VIOLATION_INDEX: index,
        AGENTOS_TOOL_NAME: decision.action.tool_name,
        AGENTOS_AGENT_ID: decision.context.agent_id,
        AGENTOS_POLICY_NAME: violation.policy_name,
        AGENTOS_SEVERITY: violation.severity.value,
        AGENTOS_VIOLATION_TYPE: violation.violation_type.value,
        AGENTOS_DESCRIPTION: violation.description[:MAX_DESCRIPTION_CHARS],
        AGENTOS_PENALTY: violation.penalty,
        AGENTOS_ACTION_BLOCKED: bool(violation.action_blocked),
        **make_tag_attributes([AGENTOS_VIOLATION_TAG, f"agentos.severity:{violation.severity.value}"]),
        **make_link_attributes({AGENTOS_DECISION_ID: decision.decision_id}),
    }


def _kind(attributes: Mapping[str, Any]) -> Any:
    return attributes.get(AGENTOS_KIND) if attributes else None


def is_check_span(span: Any) -> bool:
    """True for a span written with :func:`check_span_attributes` (any object with ``.attributes``)."""
    return _kind(getattr(span, "attributes", None) or {}) == "check"


def is_violation_span(span: Any) -> bool:
    """True for a span written with :func:`violation_span_attributes`."""
    return _kind(getattr(span, "attributes", None) or {}) == "violation"
