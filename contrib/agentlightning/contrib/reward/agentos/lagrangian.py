"""An adaptive penalty: a Lagrange multiplier on the constraint cost, tuned from store statistics.

Instead of guessing ``critical_penalty=-100`` vs ``-50``, state the constraint ("at most 1% of
rollouts may violate a policy") and let the multiplier find the price. Once per epoch:

    lambda <- clip(lambda + learning_rate * (observed_violation_rate - target_violation_rate), 0, max_multiplier)

where ``observed_violation_rate`` is the fraction of the epoch's rollouts with at least one
violation, read from the store (:func:`governance_stats`). The rollout's penalty is then
``-lambda * cost`` (cost: severity-weighted violations, see ``constraint_cost``). This is
dual gradient ascent on the constrained problem ``max E[reward] s.t. P(violation) <= target``:
while the agent violates more than allowed, violations get more expensive; once it is within
budget, the price relaxes (never below zero), so safe behaviour is not over-penalised.

>>> lagrangian = LagrangianPenalty(target_violation_rate=0.05, learning_rate=2.0, multiplier=1.0)
>>> lagrangian.update(0.30), lagrangian.update(0.30), lagrangian.update(0.0)
(1.5, 2.0, 1.9)
>>> lagrangian.penalty(cost=10.0)
-19.0
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

from agentlightning.contrib.kernel.agentos.reward_config import LagrangianPenalty as CoreLagrangianPenalty
from agentlightning.contrib.kernel.agentos.stats import governance_stats

__all__ = ["LagrangianPenalty"]


class LagrangianPenalty(CoreLagrangianPenalty):
    """The kernel core's :class:`~agentlightning.contrib.kernel.agentos.reward_config.LagrangianPenalty`
    (lambda, its update rule, its rollout metadata), plus :meth:`update_from_store`, which reads the
    violation rate from an agentlightning 0.3 store."""

    async def update_from_store(self, store: Any, rollout_ids: Optional[Sequence[str]] = None) -> float:
        """Update from the fraction of ``rollout_ids`` (default: all rollouts) with a violation,
        as recorded in ``store`` (in-memory or a client of ``agl store``)."""
        stats = await governance_stats(store, rollout_ids)
        if stats["total_rollouts"] == 0:
            return self.multiplier
        return self.update(stats["rollout_violation_rate"])
