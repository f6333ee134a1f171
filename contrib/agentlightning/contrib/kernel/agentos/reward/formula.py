"""The governed reward of a rollout (or of one environment step): its type and its formula.

:class:`GovernedReward` is what the reward package's ``shape_reward`` returns and what the runner
and the environment write: ``final = clamp(base + policy_penalty + clean_bonus)``, decomposed,
with the constraint ``cost`` kept beside it (never folded into ``final``). :func:`shape_governed_reward`
is that formula, the only one: the reward package and the Agent Lightning 1.0 gateway's hooks
configure it with a ``RewardConfig``, the environment with an ``EnvironmentConfig``; each hands it
a penalty table (:class:`.violations.SeverityTable`), which prices every violation by one rule
(:meth:`.violations.SeverityTable.price`). It lives in the kernel so that every room above it can
compute, write and read the same reward without importing each other.

This module is part of the kernel core: it imports no agentlightning. The reward *span* (an
agentlightning 0.3 ``Span``) is built in ``agl03.reward_span``, which only the 0.3 rooms import.

>>> reward = shape_governed_reward(1.0, [], SeverityTable.preset("penalties"), bonus=5.0)
>>> reward.final, reward.dimensions()
(6.0, {'final': 6.0, 'base': 1.0, 'policy_penalty': 0.0, 'clean_bonus': 5.0})
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, Iterable, Mapping, Optional

from ..semconv import (
    REWARD_BASE,
    REWARD_CLEAN_BONUS,
    REWARD_FINAL,
    REWARD_POLICY_PENALTY,
)
from ..violations import (
    GovernanceConfigError,
    PolicyViolation,
    SeverityTable,
    constraint_cost,
    finite_float,
)

__all__ = [
    "GovernedReward",
    "clamp_reward",
    "penalty_from_table",
    "shape_governed_reward",
]


@dataclass(frozen=True)
class GovernedReward:
    """One rollout's (or one step's) governed reward, decomposed.

    ``final = clamp(base + policy_penalty + clean_bonus)``; ``cost`` is the constraint cost kept
    separate from the reward, ``clamped`` says whether a bound was hit.

    >>> r = GovernedReward(final=-100.0, base=1.0, policy_penalty=-200.0, clean_bonus=0.0, cost=20.0,
    ...                    violation_count=2, clamped=True)
    >>> r.dimensions()
    {'final': -100.0, 'base': 1.0, 'policy_penalty': -200.0, 'clean_bonus': 0.0}
    >>> r.to_dict()["cost"], r.to_dict()["violation_count"]
    (20.0, 2)
    """

    final: float
    base: float
    policy_penalty: float
    clean_bonus: float
    cost: float
    violation_count: int
    clamped: bool = False
    lagrange_multiplier: Optional[float] = None

    def dimensions(self) -> Dict[str, float]:
        """The reward dimensions, ``final`` first (agentlightning's primary dimension)."""
        return {
            REWARD_FINAL: self.final,
            REWARD_BASE: self.base,
            REWARD_POLICY_PENALTY: self.policy_penalty,
            REWARD_CLEAN_BONUS: self.clean_bonus,
        }

    def to_dict(self) -> Dict[str, Any]:
        """JSON-ready form (stored in the attempt's metadata)."""
        data = {
            **self.dimensions(),
            "cost": self.cost,
            "violation_count": self.violation_count,
            "clamped": self.clamped,
        }
        if self.lagrange_multiplier is not None:
            data["lagrange_multiplier"] = self.lagrange_multiplier
        return data


def clamp_reward(value: float, min_reward: Optional[float] = None, max_reward: Optional[float] = None) -> float:
    """``value`` limited to ``[min_reward, max_reward]``; a ``None`` bound is open.

    >>> clamp_reward(-250.0, -100.0, 100.0), clamp_reward(-250.0, None, 100.0)
    (-100.0, -250.0)
    """
    if min_reward is not None and value < min_reward:
        return min_reward
    if max_reward is not None and value > max_reward:
        return max_reward
    return value


def penalty_from_table(violations: Iterable[PolicyViolation], penalties: SeverityTable) -> float:
    """The sum of the violations' prices by the penalty table ``penalties`` (<= 0): each costs
    :meth:`SeverityTable.price`, its explicit penalty if its policy set one, else its severity's entry.

    >>> table = SeverityTable("penalty", critical=-100.0, high=-50.0, medium=-10.0, low=-1.0)
    >>> vs = [PolicyViolation("blocked", "SQLPolicy", "DROP", "critical"),
    ...       PolicyViolation("warned", "Audit", "slow", "low", penalty=-0.25)]
    >>> penalty_from_table(vs, table)
    -100.25
    """
    if not isinstance(penalties, SeverityTable):
        raise TypeError(
            f"penalties must be a SeverityTable of kind 'penalty' (e.g. RewardConfig(...).severity_penalties), "
            f"got {type(penalties).__name__}"
        )
    return float(sum(penalties.price(violation) for violation in violations))


def shape_governed_reward(
    base: float,
    violations: Iterable[PolicyViolation],
    penalties: SeverityTable,
    *,
    bonus: float = 0.0,
    bonus_allowed: bool = True,
    lagrange_multiplier: Optional[float] = None,
    multiplicative_factor: Optional[float] = None,
    cost_weights: Optional[Mapping[Any, float]] = None,
    min_reward: Optional[float] = None,
    max_reward: Optional[float] = None,
) -> GovernedReward:
    """The governed reward formula, the one every room uses: ``final = clamp(base + penalty + bonus)``.

    * ``penalty`` is 0 without violations; otherwise ``-lagrange_multiplier * cost`` when a
      multiplier is given, ``-|base| * (1 - multiplicative_factor)`` when a factor is given, else
      :func:`penalty_from_table` of the penalty table ``penalties`` (a policy's explicit penalty
      replaces its severity's entry, in every room: :meth:`SeverityTable.price`).
    * ``bonus`` is paid only when there is no violation and ``bonus_allowed`` (the rollout was
      governed, the environment step succeeded).
    * ``cost`` is ``constraint_cost(violations, cost_weights)``, reported beside the reward.
    * ``min_reward`` / ``max_reward`` clamp ``final`` (``None``: open); ``clamped`` says a bound was hit.

    The reward package passes a ``RewardConfig``'s table (critical -100 ... low -1 by default,
    clamped to [-100, 100]); the environment passes its ``EnvironmentConfig``'s table (by default
    ``violation_penalty`` scaled by severity, x10/x5/x1/x1, no clamp) and folds its step penalty
    into ``base``.

    >>> drop = PolicyViolation("blocked", "SQLPolicy", "DROP denied", "critical")
    >>> table = SeverityTable.preset("penalties")
    >>> shape_governed_reward(1.0, [], table, bonus=5.0).final
    6.0
    >>> r = shape_governed_reward(1.0, [drop, drop], table, bonus=5.0, min_reward=-100.0)
    >>> r.final, r.policy_penalty, r.clean_bonus, r.cost, r.clamped
    (-100.0, -200.0, 0.0, 20.0, True)
    >>> shape_governed_reward(1.0, [drop], table, lagrange_multiplier=0.5).policy_penalty
    -5.0
    """
    if finite_float(base) is None:
        raise TypeError(f"the base reward must be a finite number, got {type(base).__name__}: {base!r}")
    base = float(base)
    violations = list(violations)
    cost = constraint_cost(violations, cost_weights)
    if not violations:
        penalty = 0.0
    elif lagrange_multiplier is not None:
        if multiplicative_factor is not None:
            raise GovernanceConfigError(
                "a Lagrange multiplier prices the cost additively; it cannot be combined with a multiplicative "
                "penalty (RewardConfig(multiplicative=True)); use one or the other"
            )
        penalty = -float(lagrange_multiplier) * cost
    elif multiplicative_factor is not None:
        penalty = -abs(base) * (1.0 - multiplicative_factor)
    else:
        penalty = penalty_from_table(violations, penalties)
    if not isinstance(bonus_allowed, bool):
        raise TypeError(f"bonus_allowed must be a bool, got {type(bonus_allowed).__name__}")
    paid_bonus = float(bonus) if not violations and bonus_allowed else 0.0
    raw = base + penalty + paid_bonus
    final = clamp_reward(raw, min_reward, max_reward)
    return GovernedReward(
        final=final,
        base=base,
        policy_penalty=penalty,
        clean_bonus=paid_bonus,
        cost=cost,
        violation_count=len(violations),
        clamped=final != raw,
        lagrange_multiplier=None if lagrange_multiplier is None else float(lagrange_multiplier),
    )
