"""Policy-aware rewards: violations shape the reward an RL algorithm reads from the store.

>>> from types import SimpleNamespace
>>> from agentlightning.contrib.kernel.agentos import GovernanceKernel, SQLPolicy, Action
>>> from agentlightning.contrib.reward.agentos import PolicyReward, RewardConfig
>>> kernel = GovernanceKernel([SQLPolicy(deny=["DROP", "DELETE"])])
>>> drop = kernel.check(Action.sql("DROP TABLE users"))
>>> reward = PolicyReward(kernel).score(SimpleNamespace(success=True, violations=drop.violations))
>>> reward.final, reward.base, reward.policy_penalty, reward.cost, reward.clamped
(-99.0, 1.0, -100.0, 10.0, False)

The top holds the reference tutorial's names; ``shaping`` has the small pure functions
(``shape_reward``, ``default_base_reward``, ``rollout_violations``) and the kernel's
``governed_reward`` the :class:`GovernedReward` that ``score`` returns.
"""

from .config import RewardConfig
from .lagrangian import LagrangianPenalty
from .policy_reward import PolicyReward, create_policy_reward
from .shaping import CompositeReward, policy_penalty

__all__ = [
    "CompositeReward",
    "LagrangianPenalty",
    "PolicyReward",
    "RewardConfig",
    "create_policy_reward",
    "policy_penalty",
]
