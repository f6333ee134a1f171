"""The adaptive price of a violation: :class:`LagrangianPenalty`, a Lagrange multiplier on the constraint cost.

The multiplier. Instead of guessing ``critical_penalty=-100`` vs ``-50``, state the constraint ("at most 1% of
rollouts may violate a policy") and let the multiplier find the price. Once per epoch:

    lambda <- clip(lambda + learning_rate * (observed_violation_rate - target_violation_rate), 0, max_multiplier)

where ``observed_violation_rate`` is the fraction of the epoch's rollouts with at least one
violation (on 0.3 read from the store by ``update_from_store``; on 1.0 counted by the Lagrangian
hooks from the attempts' decision events). The rollout's penalty is then
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

from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence

from ..semconv import AGENTOS_LAGRANGE_MULTIPLIER
from ..violations import GovernanceConfigError, finite_float

__all__ = ["LagrangianPenalty"]


def _finite(name: str, value: Any, low: float = 0.0) -> float:
    if finite_float(value) is None or value < low:
        raise GovernanceConfigError(f"LagrangianPenalty.{name} must be a finite number >= {low}, got {value!r}")
    return float(value)


@dataclass
class LagrangianPenalty:
    """The multiplier lambda and its update rule (see the module docstring).

    Args:
        target_violation_rate: the budget: allowed fraction of rollouts with a violation, in [0, 1].
        learning_rate: step size of the multiplier per unit of rate error.
        multiplier: the initial lambda.
        max_multiplier: an upper bound on lambda (``None``: unbounded).

    The algorithm that owns it updates lambda each epoch (:meth:`update` with the epoch's
    violation rate; or :meth:`update_from_store` with a 0.3 store) and stamps new rollouts with
    :meth:`rollout_metadata`; a :class:`PolicyReward` holding it prices
    each rollout with the lambda stamped on that rollout (runners in other processes included),
    or with its own current lambda when the rollout carries none.
    """

    target_violation_rate: float = 0.01
    learning_rate: float = 1.0
    multiplier: float = 1.0
    max_multiplier: Optional[float] = 100.0
    history: List[Dict[str, float]] = field(default_factory=list, repr=False)

    def __post_init__(self) -> None:
        self.target_violation_rate = _finite("target_violation_rate", self.target_violation_rate)
        if self.target_violation_rate > 1:
            raise GovernanceConfigError(
                "LagrangianPenalty.target_violation_rate is a fraction of rollouts in [0, 1], "
                f"got {self.target_violation_rate}"
            )
        self.learning_rate = _finite("learning_rate", self.learning_rate)
        self.multiplier = _finite("multiplier", self.multiplier)
        if self.max_multiplier is not None:
            self.max_multiplier = _finite("max_multiplier", self.max_multiplier)
            self.multiplier = min(self.multiplier, self.max_multiplier)

    def update(self, violation_rate: float) -> float:
        """One dual step from an observed violation rate; returns the new lambda."""
        rate = _finite("update(violation_rate)", violation_rate)
        if rate > 1:
            raise GovernanceConfigError(f"violation_rate is a fraction of rollouts in [0, 1], got {rate}")
        new = max(0.0, self.multiplier + self.learning_rate * (rate - self.target_violation_rate))
        if self.max_multiplier is not None:
            new = min(new, self.max_multiplier)
        self.multiplier = round(new, 12)  # keeps printed trajectories readable; far below any meaningful step
        self.history.append({"violation_rate": rate, "multiplier": self.multiplier})
        return self.multiplier

    def penalty(self, cost: float) -> float:
        """The penalty (<= 0) of a rollout with constraint cost ``cost`` at the current lambda."""
        return -self.multiplier * _finite("penalty(cost)", cost)

    def rollout_metadata(self) -> Dict[str, float]:
        """Metadata to enqueue rollouts with, so every runner prices them at this lambda.

        >>> LagrangianPenalty(multiplier=2.5).rollout_metadata()
        {'agentos.lagrange_multiplier': 2.5}
        """
        return {AGENTOS_LAGRANGE_MULTIPLIER: self.multiplier}

    async def update_from_store(self, store: Any, rollout_ids: Optional[Sequence[str]] = None) -> float:
        """Update from the fraction of ``rollout_ids`` (default: all rollouts) with a violation, as
        recorded in an agentlightning 0.3 ``store`` (in-memory or a client of ``agl store``); the
        multiplier stays as it is when the store holds no rollout."""
        from ..agl03.stats import (
            governance_stats,  # 0.3's store API: imported by the call that needs it, never by the core
        )

        stats = await governance_stats(store, rollout_ids)
        if stats["total_rollouts"] == 0:
            return self.multiplier
        return self.update(stats["violation_rate"])

    def multiplier_for(self, rollout: Any) -> float:
        """The lambda stamped on ``rollout`` (its ``metadata``), else the current one."""
        metadata = getattr(rollout, "metadata", None)
        if isinstance(metadata, Mapping) and AGENTOS_LAGRANGE_MULTIPLIER in metadata:
            return _finite("rollout metadata multiplier", metadata[AGENTOS_LAGRANGE_MULTIPLIER])
        return self.multiplier
