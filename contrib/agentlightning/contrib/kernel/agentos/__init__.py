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
"""

from . import semconv
from .actions import Action, ActionContext, Decision, Verdict, current_context, governance_context
from .audit import AuditTrail, open_flight_recorder
from .audit_record import decision_from_record
from .engine import AgentOSPolicy
from .kernel import GovernanceKernel, as_kernel
from .policies import CostControlPolicy, Policy, ToolAllowListPolicy
from .sql import SQL_KEYWORDS, SQLAnalysis, SQLPolicy, analyze_sql
from .stats import governance_stats
from .violations import (
    DEFAULT_SEVERITY_COSTS,
    DEFAULT_SEVERITY_PENALTIES,
    GovernanceConfigError,
    PolicyViolation,
    PolicyViolationType,
    Severity,
    ViolationType,
    constraint_cost,
    finite_number,
)

__all__ = [
    "Action",
    "ActionContext",
    "AgentOSPolicy",
    "AuditTrail",
    "CostControlPolicy",
    "DEFAULT_SEVERITY_COSTS",
    "DEFAULT_SEVERITY_PENALTIES",
    "Decision",
    "GovernanceConfigError",
    "GovernanceKernel",
    "Policy",
    "PolicyViolation",
    "PolicyViolationType",
    "SQLAnalysis",
    "SQLPolicy",
    "SQL_KEYWORDS",
    "Severity",
    "ToolAllowListPolicy",
    "Verdict",
    "ViolationType",
    "analyze_sql",
    "semconv",
    "as_kernel",
    "constraint_cost",
    "finite_number",
    "current_context",
    "decision_from_record",
    "governance_context",
    "governance_stats",
    "open_flight_recorder",
]
