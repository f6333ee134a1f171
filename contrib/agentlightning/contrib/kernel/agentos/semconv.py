"""Span conventions for governance decisions, shared by the runner, rewards, environment and
audit adapter so that every path writes (and every reader finds) the same spans.

Each kernel check becomes one annotation span tagged ``agentos.check``; each violation of that
check becomes one more annotation span tagged ``agentos.violation``, linked to its check by
``agentos.decision_id``. The governed reward of a rollout is one multi-dimensional agentlightning
reward span (primary dimension ``final``, then ``base``, ``policy_penalty`` and ``clean_bonus``)
tagged ``agentos.reward``, carrying the constraint cost and violation count as attributes
(:class:`GovernedReward`). Attribute names are the constants below.

They are annotation spans in everything agentlightning reads (built by its annotation and reward
emitters: the same flattened attributes, ``agentlightning.tag``/``agentlightning.link`` and
``agentlightning.reward.*`` keys, status OK), but they are *named* for people: the ``agl store``
dashboard's traces table and its name search show only span names, so instead of
``agentlightning.annotation`` a span is called, for example::

    agentos.check: blocked database_query
    agentos.violation: SQLPolicy (critical) penalty -100.0, blocked
    agentos.reward: final -100.0 (base 0.0, penalty -100.0, bonus 0.0)

Programs never match on these names: they select by the ``agentos.kind`` attribute
(:func:`is_check_span`, :func:`is_violation_span`, :func:`is_governed_reward_span`), and
agentlightning finds rewards by their ``agentlightning.reward.*`` attributes
(``find_final_reward``), whatever the name.

>>> from agentlightning.contrib.kernel.agentos import GovernanceKernel, SQLPolicy, Action
>>> decision = GovernanceKernel([SQLPolicy(deny=["DROP"])]).check(Action.sql("DROP TABLE t"))
>>> attrs = violation_span_attributes(decision, 0)
>>> attrs[AGENTOS_KIND], attrs[AGENTOS_POLICY_NAME], attrs[AGENTOS_SEVERITY], attrs[AGENTOS_ACTION_BLOCKED]
('violation', 'SQLPolicy', 'critical', True)
>>> check_span_name(decision), violation_span_name(decision, 0)
('agentos.check: blocked database_query', 'agentos.violation: SQLPolicy (critical) penalty -100.0, blocked')
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any, Dict, Mapping, Optional, Sequence

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
    "AGENTOS_REWARD_TAG",
    "AGENTOS_COST",
    "AGENTOS_REWARD_CLAMPED",
    "AGENTOS_LAGRANGE_MULTIPLIER",
    "REWARD_FINAL",
    "REWARD_BASE",
    "REWARD_POLICY_PENALTY",
    "REWARD_CLEAN_BONUS",
    "GovernedReward",
    "is_governed_reward_span",
    "decisions_summary",
    "check_span_attributes",
    "violation_span_attributes",
    "is_check_span",
    "is_violation_span",
    "CHECK_SPAN_NAME",
    "VIOLATION_SPAN_NAME",
    "REWARD_SPAN_NAME",
    "check_span_name",
    "violation_span_name",
    "reward_span_name",
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

AGENTOS_REWARD_TAG = "agentos.reward"
AGENTOS_COST = "agentos.cost"  #: constraint cost of the rollout (>= 0), see ``constraint_cost``
AGENTOS_REWARD_CLAMPED = "agentos.reward_clamped"  #: the final reward hit min_reward/max_reward
AGENTOS_LAGRANGE_MULTIPLIER = "agentos.lagrange_multiplier"  #: the multiplier that priced the cost

#: Names of the governed reward's dimensions; ``final`` is the primary one (``find_final_reward``).
REWARD_FINAL = "final"
REWARD_BASE = "base"
REWARD_POLICY_PENALTY = "policy_penalty"
REWARD_CLEAN_BONUS = "clean_bonus"

#: Descriptions are truncated in span attributes (the full text is in the audit trail).
MAX_DESCRIPTION_CHARS = 1000

#: Span names start with these (then ``": "`` and a readable summary); see the module docstring.
CHECK_SPAN_NAME = "agentos.check"
VIOLATION_SPAN_NAME = "agentos.violation"
REWARD_SPAN_NAME = "agentos.reward"

#: Names are for the dashboard's table: long policy or tool names are cut there (never in attributes).
_MAX_NAME_PART_CHARS = 80


def _name_part(text: Any) -> str:
    text = " ".join(str(text).split())  # one line: newlines or tabs in a tool name would break the table
    return text if len(text) <= _MAX_NAME_PART_CHARS else text[: _MAX_NAME_PART_CHARS - 3] + "..."


def _number(value: float) -> str:
    """A reward or penalty as people read it: ``-100.0``, ``0.85``, ``6.0``."""
    return repr(round(float(value), 4))


def check_span_name(decision: Decision) -> str:
    """``agentos.check: <verdict> <tool>``, the name of a check span in the dashboard."""
    return f"{CHECK_SPAN_NAME}: {decision.verdict.value} {_name_part(decision.action.tool_name)}"


def violation_span_name(decision: Decision, index: int) -> str:
    """``agentos.violation: <policy> (<severity>) penalty <p>, <blocked|not blocked>``."""
    violation = decision.violations[index]
    outcome = "blocked" if violation.action_blocked else "not blocked"
    return (
        f"{VIOLATION_SPAN_NAME}: {_name_part(violation.policy_name)} ({violation.severity.value}) "
        f"penalty {_number(violation.penalty)}, {outcome}"
    )


def reward_span_name(reward: "GovernedReward") -> str:
    """``agentos.reward: final <f> (base <b>, penalty <p>, bonus <c>[, clamped])``.

    >>> reward_span_name(GovernedReward(final=6.0, base=1.0, policy_penalty=0.0, clean_bonus=5.0, cost=0.0, violation_count=0))
    'agentos.reward: final 6.0 (base 1.0, penalty 0.0, bonus 5.0)'
    """
    clamped = ", clamped" if reward.clamped else ""
    return (
        f"{REWARD_SPAN_NAME}: final {_number(reward.final)} (base {_number(reward.base)}, "
        f"penalty {_number(reward.policy_penalty)}, bonus {_number(reward.clean_bonus)}{clamped})"
    )


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


@dataclass(frozen=True)
class GovernedReward:
    """One rollout's (or one step's) governed reward, decomposed.

    ``final = clamp(base + policy_penalty + clean_bonus)``; ``cost`` is the constraint cost kept
    separate from the reward, ``clamped`` says whether a bound was hit.

    >>> r = GovernedReward(final=-100.0, base=1.0, policy_penalty=-200.0, clean_bonus=0.0, cost=20.0, violation_count=2, clamped=True)
    >>> r.dimensions()
    {'final': -100.0, 'base': 1.0, 'policy_penalty': -200.0, 'clean_bonus': 0.0}
    >>> r.span_attributes()[AGENTOS_COST], r.span_attributes()[AGENTOS_VIOLATION_COUNT]
    (20.0, 2)
    """

    final: float
    base: float
    policy_penalty: float
    clean_bonus: float
    cost: float
    violation_count: int
    clamped: bool = False
    lagrange_multiplier: Optional[float] = None

    def dimensions(self) -> Dict[str, float]:
        """The reward dimensions, ``final`` first (agentlightning's primary dimension)."""
        return {
            REWARD_FINAL: self.final,
            REWARD_BASE: self.base,
            REWARD_POLICY_PENALTY: self.policy_penalty,
            REWARD_CLEAN_BONUS: self.clean_bonus,
        }

    def span_attributes(self) -> Dict[str, Any]:
        """Attributes of the reward span besides the reward dimensions."""
        attributes: Dict[str, Any] = {
            AGENTOS_KIND: "reward",
            AGENTOS_COST: self.cost,
            AGENTOS_VIOLATION_COUNT: self.violation_count,
            AGENTOS_REWARD_CLAMPED: self.clamped,
            **make_tag_attributes([AGENTOS_REWARD_TAG]),
        }
        if self.lagrange_multiplier is not None:
            attributes[AGENTOS_LAGRANGE_MULTIPLIER] = self.lagrange_multiplier
        return attributes

    def to_dict(self) -> Dict[str, Any]:
        """JSON-ready form (stored in the attempt's metadata)."""
        data = {**self.dimensions(), "cost": self.cost, "violation_count": self.violation_count, "clamped": self.clamped}
        if self.lagrange_multiplier is not None:
            data["lagrange_multiplier"] = self.lagrange_multiplier
        return data


def is_governed_reward_span(span: Any) -> bool:
    """True for the reward span written from a :class:`GovernedReward`."""
    return _kind(getattr(span, "attributes", None) or {}) == "reward"


def decisions_summary(decisions: Sequence[Decision]) -> Dict[str, Any]:
    """The governance summary of one rollout's (or episode's) decisions, as stored in the
    attempt's metadata under ``"agentos"`` by the runner and the environment alike.

    >>> from agentlightning.contrib.kernel.agentos import GovernanceKernel, SQLPolicy, Action
    >>> kernel = GovernanceKernel([SQLPolicy(deny=["DROP"])])
    >>> decisions_summary([kernel.check(Action.sql("SELECT 1")), kernel.check(Action.sql("DROP TABLE t"))])
    {'checks': 2, 'violations': 1, 'blocked_actions': 1, 'total_penalty': -100.0, 'signals': [], 'violations_by_policy': {'SQLPolicy': 1}}
    """
    violations = [v for d in decisions for v in d.violations]
    return {
        "checks": len(decisions),
        "violations": len(violations),
        "blocked_actions": sum(d.blocked for d in decisions),
        "total_penalty": float(sum(d.total_penalty for d in decisions)),
        "signals": [s for d in decisions for s in d.signals],
        "violations_by_policy": dict(Counter(v.policy_name for v in violations)),
    }
