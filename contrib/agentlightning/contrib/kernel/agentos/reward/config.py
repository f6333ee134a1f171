"""How violations price a reward: :class:`RewardConfig` (the one object a user overrides the penalty table with)
and :func:`shape_reward`.

The kernel core's configuration of its one formula (:func:`.formula.shape_governed_reward`), shared
by both Agent Lightning lines: the 0.3 reward room re-exports these names, and the 1.0 gateway's
hooks read a ``RewardConfig`` from their configuration file (``governance.penalties``).

>>> drop = PolicyViolation("blocked", "SQLPolicy", "DROP denied", "critical")
>>> shape_reward(1.0, []).final, shape_reward(1.0, [drop]).final
(6.0, -99.0)
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, Mapping, Optional, Sequence

from ..violations import GovernanceConfigError, PolicyViolation, Severity, SeverityTable, finite_number, penalty_number
from .formula import GovernedReward, clamp_reward, shape_governed_reward

__all__ = ["RewardConfig", "shape_reward"]


def _number(name: str, value: Any) -> float:
    return finite_number(f"RewardConfig.{name}", value)


@dataclass
class RewardConfig:
    """How violations shape a reward (names and defaults of the reference tutorial).

    Additive mode: ``final = clamp(base + sum(penalties) + clean_bonus_if_clean)``; a violation
    whose ``penalty`` was set explicitly keeps it, others use the per-severity penalty below.
    Multiplicative mode: on any violation ``final = base - |base| * (1 - multiplicative_factor)``
    (``0.9 -> 0.45`` with the default 0.5; a negative base gets *more* negative, ``-1.0 -> -1.5``,
    so a violation never raises a reward). ``min_reward``/``max_reward`` of ``None`` disable a bound.

    ``cost_weights`` (beyond the reference) maps severities to the constraint cost reported next
    to the reward; missing severities use ``DEFAULT_SEVERITY_COSTS`` (critical 10, high 5,
    medium 1, low 1).

    ``clean_bonus_requires_check`` (beyond the reference, default True): the clean bonus goes only
    to rollouts in which at least one action went through the kernel; a rollout nobody checked is
    not clean, only unexamined. Set it False if your agent legitimately finishes some rollouts
    without any action, or those earn ``clean_bonus`` less than a rollout with a clean tool call.

    >>> RewardConfig().critical_penalty, RewardConfig().clean_bonus
    (-100.0, 5.0)
    >>> try:
    ...     RewardConfig(high_penalty=20)
    ... except GovernanceConfigError as error:
    ...     print(error)
    RewardConfig.high_penalty must be <= 0 (a penalty is negative reward), got 20.0; did you mean -20.0?
    """

    critical_penalty: float = -100.0
    high_penalty: float = -50.0
    medium_penalty: float = -10.0
    low_penalty: float = -1.0
    clean_bonus: float = 5.0
    multiplicative: bool = False
    multiplicative_factor: float = 0.5
    min_reward: Optional[float] = -100.0
    max_reward: Optional[float] = 100.0
    cost_weights: Optional[Mapping[Any, float]] = field(default=None, repr=False)
    clean_bonus_requires_check: bool = True

    def __post_init__(self) -> None:
        for name in ("critical_penalty", "high_penalty", "medium_penalty", "low_penalty"):
            setattr(self, name, penalty_number(f"RewardConfig.{name}", getattr(self, name)))
        self.clean_bonus = _number("clean_bonus", self.clean_bonus)
        if self.clean_bonus < 0:
            raise GovernanceConfigError(
                f"RewardConfig.clean_bonus must be >= 0 (it rewards clean rollouts), got {self.clean_bonus}; "
                "put penalties in the *_penalty fields"
            )
        for name in ("multiplicative", "clean_bonus_requires_check"):
            if not isinstance(getattr(self, name), bool):
                raise TypeError(f"RewardConfig.{name} must be a bool, got {type(getattr(self, name)).__name__}")
        self.multiplicative_factor = _number("multiplicative_factor", self.multiplicative_factor)
        if not 0.0 <= self.multiplicative_factor <= 1.0:
            raise GovernanceConfigError(
                f"RewardConfig.multiplicative_factor must be in [0, 1] (a factor above 1 would raise the reward of a "
                f"violating rollout), got {self.multiplicative_factor}"
            )
        for name in ("min_reward", "max_reward"):
            if getattr(self, name) is not None:
                setattr(self, name, _number(name, getattr(self, name)))
        if self.min_reward is not None and self.max_reward is not None and self.min_reward > self.max_reward:
            raise GovernanceConfigError(
                f"RewardConfig.min_reward ({self.min_reward}) is above max_reward ({self.max_reward})"
            )
        if self.cost_weights is not None:
            if not isinstance(self.cost_weights, Mapping):
                raise TypeError(
                    "RewardConfig.cost_weights must be a mapping of severity to cost, "
                    f"got {type(self.cost_weights).__name__}"
                )
            self.cost_weights = {Severity.parse(k): v for k, v in self.cost_weights.items()}

    @property
    def severity_penalties(self) -> SeverityTable:
        """The four ``*_penalty`` fields as a penalty :class:`SeverityTable` (the defaults are its
        ``"penalties"`` preset).

        >>> RewardConfig().severity_penalties == SeverityTable.preset("penalties")
        True
        """
        return SeverityTable(
            "penalty",
            critical=self.critical_penalty,
            high=self.high_penalty,
            medium=self.medium_penalty,
            low=self.low_penalty,
        )

    def clamp(self, value: float) -> float:
        """``value`` limited to ``[min_reward, max_reward]`` (a ``None`` bound is open).

        >>> RewardConfig().clamp(-250.0), RewardConfig(min_reward=None).clamp(-250.0)
        (-100.0, -250.0)
        """
        return clamp_reward(value, self.min_reward, self.max_reward)

    @classmethod
    def field_names(cls) -> tuple:
        return tuple(f.name for f in fields(cls))


def shape_reward(
    base: float,
    violations: Sequence[PolicyViolation],
    config: Optional[RewardConfig] = None,
    *,
    lagrange_multiplier: Optional[float] = None,
    governed: bool = True,
) -> GovernedReward:
    """The governed reward of one rollout, decomposed (see :class:`RewardConfig` for the rules):
    the kernel's one formula, ``shape_governed_reward``, configured by ``config``.

    With ``lagrange_multiplier`` (lambda), the penalty is ``-lambda * cost`` instead of the
    per-severity table (additive mode only). ``governed=False`` (no action of the rollout went
    through the kernel) withholds the clean bonus: a rollout nobody checked is not clean, only
    unexamined.

        >>> high = PolicyViolation("warned", "P", "d", "high")
    >>> r = shape_reward(0.9, [high], RewardConfig(multiplicative=True))
    >>> r.final, r.policy_penalty, r.cost
    (0.45, -0.45, 5.0)
    >>> shape_reward(1.0, [high], lagrange_multiplier=2.0).policy_penalty
    -10.0
    >>> shape_reward(1.0, [], governed=False).final
    1.0
    """
    config = config or RewardConfig()
    if not isinstance(governed, bool):
        raise TypeError(f"governed must be a bool, got {type(governed).__name__}")
    return shape_governed_reward(
        base,
        violations,
        config.severity_penalties,
        bonus=config.clean_bonus,
        bonus_allowed=governed,
        lagrange_multiplier=lagrange_multiplier,
        multiplicative_factor=config.multiplicative_factor if config.multiplicative else None,
        cost_weights=config.cost_weights,
        min_reward=config.min_reward,
        max_reward=config.max_reward,
    )
