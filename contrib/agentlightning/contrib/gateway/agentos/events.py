"""Names and data of the events the governed gateway writes on an Agent Lightning 1.0 attempt.

Names only, plus the two functions that write and read a decision event, the way
agentlightning's ``semconv`` keeps span names in one place. A 1.0 event is
``Event(event_type, rollout_id, attempt_id, timestamp, data)``; the gateway writes one
:data:`DECISION_EVENT` per judged action, and the hooks write the governed reward as the
attempt's last ``reward`` event (1.0's trainer trains on the last one).

>>> from agentlightning.contrib.kernel.agentos import GovernanceKernel, SQLPolicy
>>> decision = GovernanceKernel([SQLPolicy(deny=["DROP"])]).check("run_sql", {"query": "DROP TABLE t"})
>>> data = decision_event_data(decision, choice_index=0, tool_call_id="call_1")
>>> data["verdict"], data["violations"][0]["severity"]
('blocked', 'critical')
>>> [v.severity.value for v in violations_from_event_data([data])]
['critical']
"""

from __future__ import annotations

from typing import Any, Dict, Iterable, List, Mapping, Optional

from agentlightning.contrib.kernel.agentos import Decision, PolicyViolation

__all__ = [
    "DECISION_EVENT",
    "REWARD_EVENT",
    "REWARD_SOURCE",
    "REASON_GOVERNED",
    "REASON_HOOK_FAILED",
    "decision_event_data",
    "violations_from_event_data",
]

#: One event per action the gateway judged (a tool call, or a text answer read as an action).
DECISION_EVENT = "agentos.decision"
#: 1.0's well-known reward event type; the trainer reads the attempt's last one.
REWARD_EVENT = "reward"
#: ``RewardData.source`` of the governed reward.
REWARD_SOURCE = "agentos"
#: ``RewardData.reason`` of a reward shaped by the kernel's formula.
REASON_GOVERNED = "agentos.governed"
#: ``RewardData.reason`` of the fail-closed reward written when the hook itself failed.
REASON_HOOK_FAILED = "agentos.hook_failed"


def decision_event_data(
    decision: Decision, *, choice_index: Optional[int], tool_call_id: Optional[str], source: str = "tool_call"
) -> Dict[str, Any]:
    """The data of a :data:`DECISION_EVENT`: the decision, its violations as the audit record holds them
    (``source``: ``tool_call``, ``text``, or ``response`` for a whole response withheld, ``choice_index`` None).

    A violation carries its severity, any explicit penalty and the price the gateway's kernel wrote
    on it by the configuration's table (``governance.penalties``); the hooks price it with that
    same table, and a table that disagrees with the kernel's price is refused (the hook fails closed)."""
    return {
        "decision_id": decision.decision_id,
        "audit_id": decision.audit_id,
        "source": source,
        "choice_index": choice_index,
        "tool_call_id": tool_call_id,
        "tool_name": decision.action.tool_name,
        "verdict": decision.verdict.value,
        "blocked": decision.blocked,
        "reason": decision.reason,
        "violations": [violation.to_dict() for violation in decision.violations],
    }


def violations_from_event_data(datas: Iterable[Mapping[str, Any]]) -> List[PolicyViolation]:
    """Every violation recorded in the given decision events' data, in order (the inverse of
    :func:`decision_event_data` for violations; a malformed entry raises, it is never skipped)."""
    found: List[PolicyViolation] = []
    for data in datas:
        violations = data.get("violations")
        if not isinstance(violations, list):
            raise ValueError(f"a {DECISION_EVENT} event needs a 'violations' list, got {violations!r}")
        found.extend(PolicyViolation.from_dict(v) for v in violations)
    return found
