"""An adaptive penalty: a Lagrange multiplier on the constraint cost, tuned from store statistics.

The multiplier, its update rule (dual gradient ascent on ``max E[reward] s.t. P(violation) <=
target``, written out with a worked example in the kernel core's ``reward_config``) and the
rollout's penalty ``-lambda * cost`` are the core's :class:`LagrangianPenalty`, shared with the
Agent Lightning 1.0 hooks. This room adds one thing: reading the observed violation rate of an
epoch from an agentlightning 0.3 store (:meth:`LagrangianPenalty.update_from_store`).

>>> lagrangian = LagrangianPenalty(target_violation_rate=0.05, learning_rate=2.0, multiplier=1.0)
>>> lagrangian.update(0.30)
1.5
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
        return self.update(stats["violation_rate"])
