"""AgentOSRunner: governed rollouts inside the real Agent Lightning runner and Trainer.

>>> from agentlightning.contrib.runner.agentos import AgentOSRunner, governed_tool
>>> from agentlightning.contrib.kernel.agentos import GovernanceKernel, SQLPolicy
>>> runner = AgentOSRunner(GovernanceKernel([SQLPolicy(deny=["DROP", "DELETE"])]))
>>> runner.kernel.policy_names
['SQLPolicy']
"""

from agentlightning.contrib.kernel.agentos import PolicyViolation, PolicyViolationType
from agentlightning.contrib.kernel.agentos.stats import governance_stats

from .agents import ActionOutcome, TaskActionAgent, as_agent
from .attempt import RolloutGovernance, RolloutOutcome, active_rollout
from .quickstart import normalize_mode
from .report import RolloutViolations, rollout_violations_report
from .runner import AgentError, AgentOSRunner, GovernedRollout, GovernedRunner
from .tools import ActionBlockedError, PolicyViolationError, governed_tool

__all__ = [
    "ActionBlockedError",
    "ActionOutcome",
    "AgentError",
    "AgentOSRunner",
    "GovernedRollout",
    "GovernedRunner",
    "PolicyViolation",
    "PolicyViolationError",
    "PolicyViolationType",
    "RolloutGovernance",
    "RolloutOutcome",
    "RolloutViolations",
    "TaskActionAgent",
    "active_rollout",
    "as_agent",
    "governance_stats",
    "governed_tool",
    "normalize_mode",
    "rollout_violations_report",
]
