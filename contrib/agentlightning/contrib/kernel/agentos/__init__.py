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
or with neither. Three modules are the 0.3 side and are imported only by the 0.3 rooms: ``spans``
(check and violation spans), ``reward_span`` (the reward span) and ``stats`` (totals read from a
LightningStore). ``governance_stats`` stays reachable from here, imported when first asked for.
"""

from typing import Any

from . import semconv
from .actions import Action, ActionContext, Decision, Verdict, current_context, governance_context
from .audit import AuditTrail, open_flight_recorder
from .audit_record import decision_from_record
from .engine import AgentOSPolicy
from .kernel import GovernanceKernel, as_kernel
from .policies import CostControlPolicy, Policy, ToolAllowListPolicy
from .reward_config import LagrangianPenalty, RewardConfig, shape_reward
from .sql import SQL_KEYWORDS, SQLAnalysis, SQLPolicy, analyze_sql
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
    "LagrangianPenalty",
    "Policy",
    "PolicyViolation",
    "PolicyViolationType",
    "RewardConfig",
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
    "open_flight_recorder",
    "shape_reward",
]

# Names of the 0.3 side, imported on first use so that importing the core never imports agentlightning.
_LIGHTNING_03_NAMES = {"governance_stats": "stats"}


def __getattr__(name: str) -> Any:
    if name in _LIGHTNING_03_NAMES:
        from importlib import import_module

        try:
            module = import_module(f".{_LIGHTNING_03_NAMES[name]}", __name__)
        except ImportError as error:
            raise ImportError(
                f"{name} reads an agentlightning 0.3 LightningStore, which this environment cannot import ({error}); "
                "install the 0.3 line: pip install 'agentlightning-contrib-agentos[agl03]'"
            ) from error
        value = getattr(module, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
