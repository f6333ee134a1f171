"""Names of the governance spans and their attributes: constants only.

Shared by the runner, rewards, environment and audit adapter so that every path writes (and
every reader finds) the same spans. The spans themselves are built in :mod:`.spans` (checks and
violations) and :mod:`.governed_reward` (the reward), the way agentlightning keeps its
``semconv`` for names and builds spans in its emitters.

Each kernel check becomes one annotation span tagged ``agentos.check``; each violation of that
check becomes one more annotation span tagged ``agentos.violation``, linked to its check by
``agentos.decision_id``. The governed reward of a rollout is one multi-dimensional agentlightning
reward span (primary dimension ``final``, then ``base``, ``policy_penalty`` and ``clean_bonus``)
tagged ``agentos.reward``, carrying the constraint cost and violation count as attributes.

They are annotation spans in everything agentlightning reads (built by its annotation and reward
emitters: the same flattened attributes, ``agentlightning.tag``/``agentlightning.link`` and
``agentlightning.reward.*`` keys, status OK), but they are *named* for people: the ``agl store``
dashboard's traces table and its name search show only span names, so instead of
``agentlightning.annotation`` a span is called, for example::

    agentos.check: blocked database_query
    agentos.violation: SQLPolicy (critical) penalty -100.0, blocked
    agentos.reward: final -100.0 (base 0.0, penalty -100.0, bonus 0.0)

Programs never match on these names: they select by the ``agentos.kind`` attribute
(``spans.is_check_span``, ``spans.is_violation_span``,
``governed_reward.is_governed_reward_span``), and agentlightning finds rewards by their
``agentlightning.reward.*`` attributes (``find_final_reward``), whatever the name.

>>> AGENTOS_KIND, KIND_VIOLATION, VIOLATION_SPAN_NAME
('agentos.kind', 'violation', 'agentos.violation')
"""

from __future__ import annotations

__all__ = [
    "AGENTOS_CHECK_TAG",
    "AGENTOS_VIOLATION_TAG",
    "AGENTOS_KIND",
    "KIND_CHECK",
    "KIND_VIOLATION",
    "KIND_REWARD",
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
    "MAX_DESCRIPTION_CHARS",
    "CHECK_SPAN_NAME",
    "VIOLATION_SPAN_NAME",
    "REWARD_SPAN_NAME",
]

AGENTOS_CHECK_TAG = "agentos.check"
AGENTOS_VIOLATION_TAG = "agentos.violation"

#: What a span records: one of the ``KIND_*`` values below (the audit adapter writes "audit").
AGENTOS_KIND = "agentos.kind"
KIND_CHECK = "check"
KIND_VIOLATION = "violation"
KIND_REWARD = "reward"

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
