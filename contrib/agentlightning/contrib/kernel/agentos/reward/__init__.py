"""The reward formula room: how a violation is priced and how a rollout's reward is shaped.

Small pure functions and the configuration they read, in the kernel core (no agentlightning), so
every room prices a violation alike: the 0.3 reward room (``PolicyReward``), the environment, the
spans and the 1.0 gateway's hooks.

* The penalty table: a ``SeverityTable`` of kind ``"penalty"`` (:mod:`..violations`) maps a severity
  to a penalty; ``table.price(violation)`` is the one rule (the policy's explicit penalty, else the
  table's entry). :class:`RewardConfig` is the one object a user overrides it with
  (``RewardConfig(critical_penalty=-200).severity_penalties``).
* :mod:`.formula`: :class:`~.formula.GovernedReward` and the formula,
  ``final = clamp(base + penalty + bonus)`` (``shape_governed_reward``, ``penalty_from_table``,
  ``clamp_reward``).
* :mod:`.config`: :class:`RewardConfig` and ``shape_reward`` (the formula configured by it).
* :mod:`.lagrangian`: :class:`LagrangianPenalty`, the adaptive price ``-lambda * cost``.
* :mod:`.shaping`: ``policy_penalty``, ``default_base_reward``, ``rollout_violations``,
  ``CompositeReward``.

>>> from agentlightning.contrib.kernel.agentos import PolicyViolation
>>> from agentlightning.contrib.kernel.agentos.reward import RewardConfig, shape_reward
>>> drop = PolicyViolation("blocked", "SQLPolicy", "DROP denied", "critical")
>>> config = RewardConfig(critical_penalty=-200.0)
>>> config.severity_penalties.price(drop), shape_reward(1.0, [drop], config).final
(-200.0, -100.0)
"""

from .config import RewardConfig, shape_reward
from .formula import GovernedReward
from .lagrangian import LagrangianPenalty

__all__ = ["GovernedReward", "LagrangianPenalty", "RewardConfig", "shape_reward"]
