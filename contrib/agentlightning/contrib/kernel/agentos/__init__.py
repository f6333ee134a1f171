"""Governance kernel boundary for Agent Lightning, built on the real Agent OS.

An :class:`Action` goes in, a :class:`Decision` comes out: allowed, blocked, modified or warned,
with the :class:`PolicyViolation` objects (severity, penalty) that explain it, and one record in
the attached Agent OS ``FlightRecorder``.

Penalties use one sign convention everywhere: reward space, zero or negative
(``critical=-100``, ``high=-50``, ``medium=-10``, ``low=-1`` by default).

>>> from agentlightning.contrib.kernel.agentos import GovernanceKernel, SQLPolicy, CostControlPolicy
>>> kernel = GovernanceKernel([SQLPolicy(deny=["DROP", "DELETE"]), CostControlPolicy(max_cost_usd=100)])
>>> decision = kernel.check("database_query", {"query": "delete/**/from users"})
>>> decision.blocked, decision.violations[0].severity.value, decision.total_penalty
(True, 'critical', -100.0)

The package is the kernel *core* and imports no agentlightning: actions, decisions, policies, the SQL
guard, violations, the audit trail and the reward formula work beside Agent Lightning 0.3, beside 1.0
or with neither. The 0.3 side is one sub-room, ``agl03``, imported only by the 0.3 rooms: ``agl03.spans``
(check and violation spans), ``agl03.reward_span`` (the reward span) and ``agl03.stats`` (totals read
from a LightningStore, ``governance_stats``).

The top holds the core classes; the rest is imported from its module: ``sql`` (``analyze_sql``,
``SQLAnalysis``, ``SQL_KEYWORDS``), ``audit`` (the audit room: ``AuditTrail``, ``open_flight_recorder``;
``audit.record``, ``audit.seal``, ``audit.signing``, ``audit.reader``), ``reward`` (the reward formula
room: ``shape_reward``, ``GovernedReward``), ``violations`` (the default tables, ``constraint_cost``),
``semconv`` (attribute names), ``agl03.stats``.
"""

from .actions import Action, ActionContext, Decision, Verdict, governance_context
from .engine import AgentOSPolicy
from .kernel import GovernanceKernel, as_kernel
from .policies import CostControlPolicy, Policy, ToolAllowListPolicy
from .reward import LagrangianPenalty, RewardConfig
from .sql import SQLPolicy
from .tool_rules import ToolRulesPolicy
from .violations import GovernanceConfigError, PolicyViolation, Severity, SeverityTable, ViolationType

__all__ = [
    "Action",
    "ActionContext",
    "AgentOSPolicy",
    "CostControlPolicy",
    "Decision",
    "GovernanceConfigError",
    "GovernanceKernel",
    "LagrangianPenalty",
    "Policy",
    "PolicyViolation",
    "RewardConfig",
    "SQLPolicy",
    "Severity",
    "SeverityTable",
    "ToolAllowListPolicy",
    "ToolRulesPolicy",
    "Verdict",
    "ViolationType",
    "as_kernel",
    "governance_context",
]
