"""Names of the governance spans and their attributes: constants only.

Shared by the runner, rewards, environment and audit adapter so that every path writes (and
every reader finds) the same spans. The spans themselves are built in ``agl03.spans`` (checks and
violations) and ``agl03.reward_span`` (the reward), the way agentlightning keeps its
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
``reward_span.is_governed_reward_span``), and agentlightning finds rewards by their
``agentlightning.reward.*`` attributes (``find_final_reward``), whatever the name.

The audit adapter (``agentlightning.contrib.adapter.agentos``) turns each FlightRecorder record
into one more span, ``agentos.kind = "audit"``, whose attributes are ``agent_os.*``: the names of
the reference (agentmesh-lightning) FlightRecorder emitter, kept so that its users' queries still
work. They are the ``AGENT_OS_*`` constants here; ``AGENTOS_*`` are this plugin's ``agentos.*``.

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
    "KIND_AUDIT",
    "AGENTOS_AUDIT_TAG",
    "AUDIT_SPAN_NAME_PREFIX",
    "AUDIT_SERVICE_NAME",
    "AGENT_OS_ENTRY_TYPE",
    "AGENT_OS_AGENT_ID",
    "AGENT_OS_TOOL_NAME",
    "AGENT_OS_TOOL_ARGS",
    "AGENT_OS_TOOL_ARGS_TRUNCATED",
    "AGENT_OS_TOOL_RESULT",
    "AGENT_OS_TOOL_RESULT_TRUNCATED",
    "AGENT_OS_EXECUTION_TIME_MS",
    "AGENT_OS_VERDICT",
    "AGENT_OS_BLOCKED",
    "AGENT_OS_RECORD_ID",
    "AGENT_OS_RECORD_TRACE_ID",
    "AGENT_OS_TIMESTAMP",
    "AGENT_OS_ENTRY_HASH",
    "AGENT_OS_CONTENT_HASH",
    "AGENT_OS_RECORDER",
    "AGENT_OS_DECISION_ID",
    "AGENT_OS_ROLLOUT_ID",
    "AGENT_OS_ATTEMPT_ID",
    "AGENT_OS_POLICY_NAME",
    "AGENT_OS_POLICY_RESULT",
    "AGENT_OS_POLICY_VIOLATED",
    "AGENT_OS_SEVERITY",
    "AGENT_OS_VIOLATION_COUNT",
    "AGENT_OS_TOTAL_PENALTY",
    "AGENT_OS_VIOLATION_REASON",
    "AGENT_OS_SIGNAL_TYPE",
    "AGENT_OS_SIGNAL_TARGET",
    "AGENT_OS_EXTRA_PREFIX",
    "AGENT_OS_UNVERIFIED",
]

AGENTOS_CHECK_TAG = "agentos.check"
AGENTOS_VIOLATION_TAG = "agentos.violation"

#: What a span records: one of the ``KIND_*`` values (``KIND_AUDIT``, at the end, for the audit adapter's).
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

#: ``agentos.kind`` of the audit adapter's spans, one per FlightRecorder record.
KIND_AUDIT = "audit"
AGENTOS_AUDIT_TAG = "agentos.audit"
#: Audit span names are ``agent_os.<entry type>``, then (readable names) ``": "`` and a summary.
AUDIT_SPAN_NAME_PREFIX = "agent_os."
#: ``service.name`` of the audit spans' OpenTelemetry resource.
AUDIT_SERVICE_NAME = "agent_os.flight_recorder"

# Attributes of the audit adapter's spans (the record, its action and the decision on it).
AGENT_OS_ENTRY_TYPE = "agent_os.entry_type"  #: policy_check, signal or tool_call
AGENT_OS_AGENT_ID = "agent_os.agent_id"
AGENT_OS_TOOL_NAME = "agent_os.tool_name"
AGENT_OS_TOOL_ARGS = "agent_os.tool_args"
AGENT_OS_TOOL_ARGS_TRUNCATED = "agent_os.tool_args_truncated"
AGENT_OS_TOOL_RESULT = "agent_os.tool_result"
AGENT_OS_TOOL_RESULT_TRUNCATED = "agent_os.tool_result_truncated"
AGENT_OS_EXECUTION_TIME_MS = "agent_os.execution_time_ms"
AGENT_OS_VERDICT = "agent_os.verdict"  #: the FlightRecorder's verdict (pending, allowed, blocked, ...)
AGENT_OS_BLOCKED = "agent_os.blocked"
AGENT_OS_RECORD_ID = "agent_os.record_id"
AGENT_OS_RECORD_TRACE_ID = "agent_os.record_trace_id"
AGENT_OS_TIMESTAMP = "agent_os.timestamp"
AGENT_OS_ENTRY_HASH = "agent_os.entry_hash"
AGENT_OS_CONTENT_HASH = "agent_os.content_hash"
AGENT_OS_RECORDER = "agent_os.recorder"  #: the FlightRecorder file the record was read from
AGENT_OS_DECISION_ID = "agent_os.decision_id"
AGENT_OS_ROLLOUT_ID = "agent_os.rollout_id"
AGENT_OS_ATTEMPT_ID = "agent_os.attempt_id"
AGENT_OS_POLICY_NAME = "agent_os.policy_name"  #: the policies with a finding, comma-separated
AGENT_OS_POLICY_RESULT = "agent_os.policy_result"  #: the kernel's verdict
AGENT_OS_POLICY_VIOLATED = "agent_os.policy_violated"
AGENT_OS_SEVERITY = "agent_os.severity"  #: the worst severity of the record's violations
AGENT_OS_VIOLATION_COUNT = "agent_os.violation_count"
AGENT_OS_TOTAL_PENALTY = "agent_os.total_penalty"
AGENT_OS_VIOLATION_REASON = "agent_os.violation_reason"
AGENT_OS_SIGNAL_TYPE = "agent_os.signal_type"
AGENT_OS_SIGNAL_TARGET = "agent_os.signal_target"
#: A field kept by a non-strict reader (``strict=False``) is the attribute ``agent_os.extra.<field>``.
AGENT_OS_EXTRA_PREFIX = "agent_os.extra."
#: On spans imported from a file that failed verification, because the caller forced it: why it failed.
AGENT_OS_UNVERIFIED = "agent_os.unverified"
