"""Policy-aware rewards: violations shape the reward an RL algorithm reads from the store.

>>> from types import SimpleNamespace
>>> from agentlightning.contrib.kernel.agentos import GovernanceKernel, SQLPolicy, Action
>>> from agentlightning.contrib.reward.agentos import PolicyReward, RewardConfig
>>> kernel = GovernanceKernel([SQLPolicy(deny=["DROP", "DELETE"])])
>>> drop = kernel.check(Action.sql("DROP TABLE users"))
>>> reward = PolicyReward(kernel).score(SimpleNamespace(success=True, violations=drop.violations))
>>> reward.final, reward.base, reward.policy_penalty, reward.cost, reward.clamped
(-99.0, 1.0, -100.0, 10.0, False)
"""

from agentlightning.contrib.kernel.agentos.governed_reward import GovernedReward

from .config import RewardConfig
from .lagrangian import LagrangianPenalty
from .policy_reward import PolicyReward, create_policy_reward
from .shaping import CompositeReward, default_base_reward, policy_penalty, rollout_violations, shape_reward

__all__ = [
    "CompositeReward",
    "GovernedReward",
    "LagrangianPenalty",
    "PolicyReward",
    "RewardConfig",
    "create_policy_reward",
    "default_base_reward",
    "policy_penalty",
    "rollout_violations",
    "shape_reward",
]
