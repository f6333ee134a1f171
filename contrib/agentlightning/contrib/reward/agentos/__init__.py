"""Policy-aware rewards: violations shape the reward an RL algorithm reads from the store.

>>> from types import SimpleNamespace
>>> from agentlightning.contrib.kernel.agentos import GovernanceKernel, SQLPolicy, Action
>>> from agentlightning.contrib.reward.agentos import PolicyReward, RewardConfig
>>> kernel = GovernanceKernel([SQLPolicy(deny=["DROP", "DELETE"])])
>>> drop = kernel.check(Action.sql("DROP TABLE users"))
>>> reward = PolicyReward(kernel).score(SimpleNamespace(success=True, violations=drop.violations))
>>> reward.final, reward.base, reward.policy_penalty, reward.cost, reward.clamped
(-99.0, 1.0, -100.0, 10.0, False)

The top holds the reference tutorial's names. This room is the 0.3 side of the reward: the
:class:`PolicyReward` object a runner calls and its reward span in the store. The formula itself,
its configuration and the small pure functions live in the kernel core's reward formula room,
``agentlightning.contrib.kernel.agentos.reward`` (``formula``: :class:`GovernedReward` and
``shape_governed_reward``; ``config``: ``RewardConfig``, ``shape_reward``; ``lagrangian``;
``shaping``: ``policy_penalty``, ``default_base_reward``, ``rollout_violations``,
``CompositeReward``), so the environment and the 1.0 gateway price violations alike.
"""

from agentlightning.contrib.kernel.agentos.reward import LagrangianPenalty, RewardConfig
from agentlightning.contrib.kernel.agentos.reward.shaping import CompositeReward, policy_penalty

from .policy_reward import PolicyReward, create_policy_reward

__all__ = [
    "CompositeReward",
    "LagrangianPenalty",
    "PolicyReward",
    "RewardConfig",
    "create_policy_reward",
    "policy_penalty",
]
