"""AgentOSRunner: governed rollouts inside the real Agent Lightning runner and Trainer.

>>> from agentlightning.contrib.runner.agentos import AgentOSRunner, governed_tool
>>> from agentlightning.contrib.kernel.agentos import GovernanceKernel, SQLPolicy
>>> runner = AgentOSRunner(GovernanceKernel([SQLPolicy(deny=["DROP", "DELETE"])]))
>>> runner.kernel.policy_names
['SQLPolicy']
"""

from .runner import AgentOSRunner, GovernedRollout, GovernedRunner
from agentlightning.contrib.kernel.agentos.stats import governance_stats
from .tools import ActionBlockedError, PolicyViolationError, RolloutGovernance, active_rollout, governed_tool

__all__ = [
    "ActionBlockedError",
    "AgentOSRunner",
    "GovernedRollout",
    "GovernedRunner",
    "PolicyViolationError",
    "RolloutGovernance",
    "active_rollout",
    "governance_stats",
    "governed_tool",
]
