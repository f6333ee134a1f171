"""An adaptive penalty: a Lagrange multiplier on the constraint cost, tuned from store statistics.

The multiplier, its update rule (dual gradient ascent on ``max E[reward] s.t. P(violation) <=
target``, written out with a worked example in the kernel core's ``reward_config``), the rollout's
penalty ``-lambda * cost`` and the reading of an epoch's violation rate from an agentlightning 0.3
store (:meth:`LagrangianPenalty.update_from_store`) are one class, the kernel core's, shared with
the Agent Lightning 1.0 hooks; this room names it beside the rewards that use it.

>>> lagrangian = LagrangianPenalty(target_violation_rate=0.05, learning_rate=2.0, multiplier=1.0)
>>> lagrangian.update(0.30)
1.5
"""

from __future__ import annotations

from agentlightning.contrib.kernel.agentos.reward_config import LagrangianPenalty

__all__ = ["LagrangianPenalty"]
