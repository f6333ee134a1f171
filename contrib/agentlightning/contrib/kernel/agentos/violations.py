"""Severity, violation types and :class:`PolicyViolation`.

Sign convention (used everywhere in this plugin): a penalty lives in *reward space*, so it is
zero or negative. ``PolicyViolation(severity="critical").penalty == -100.0``; summing the
penalties of a rollout and adding them to the task reward gives the governed reward.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime, timezone
from enum import Enum
from typing import Any, Dict, Iterable, Mapping, Optional, Union

__all__ = [
    "Severity",
    "ViolationType",
    "PolicyViolationType",
    "PolicyViolation",
    "DEFAULT_SEVERITY_PENALTIES",
    "DEFAULT_SEVERITY_COSTS",
    "GovernanceConfigError",
    "constraint_cost",
    "finite_number",
]


class GovernanceConfigError(ValueError):
    """A policy, kernel or violation was configured with an invalid value."""


class Severity(str, Enum):
    """How bad a violation is. Compares equal to its lowercase name.

    >>> Severity.parse("HIGH") is Severity.HIGH
    True
    >>> Severity.CRITICAL == "critical"
    True
    >>> Severity.CRITICAL.rank > Severity.LOW.rank
    True
    """

    CRITICAL = "critical"
    HIGH = "high"
    MEDIUM = "medium"
    LOW = "low"

    @property
    def rank(self) -> int:
        """Orders severities: low=1 ... critical=4."""
        return _SEVERITY_RANK[self]

    @classmethod
    def parse(cls, value: Union["Severity", str]) -> "Severity":
        """Accept a :class:`Severity` or its name in any case; anything else is a clear error."""
        if isinstance(value, Severity):
            return value
        if not isinstance(value, str):
            raise TypeError(f"severity must be a str or Severity, got {type(value).__name__}: {value!r}")
        try:
            return cls(value.strip().lower())
        except ValueError:
            valid = ", ".join(s.value for s in cls)
            raise GovernanceConfigError(f"unknown severity {value!r}; use one of: {valid}") from None

    def __str__(self) -> str:
        return self.value


_SEVERITY_RANK = {Severity.LOW: 1, Severity.MEDIUM: 2, Severity.HIGH: 3, Severity.CRITICAL: 4}

#: Default penalty per violation, in reward space (negative), by severity.
DEFAULT_SEVERITY_PENALTIES: Mapping[Severity, float] = {
    Severity.CRITICAL: -100.0,
    Severity.HIGH: -50.0,
    Severity.MEDIUM: -10.0,
    Severity.LOW: -1.0,
}


#: Default constraint cost per violation, by severity: the safe-RL signal kept separate from the
#: reward (positive, as safety-gymnasium's ``info["cost"]``). The ratios follow the reference
#: environment's severity scaling (critical x10, high x5, medium and low x1).
DEFAULT_SEVERITY_COSTS: Mapping[Severity, float] = {
    Severity.CRITICAL: 10.0,
    Severity.HIGH: 5.0,
    Severity.MEDIUM: 1.0,
    Severity.LOW: 1.0,
}


class ViolationType(str, Enum):
    """What the kernel did about a violation."""

    BLOCKED = "blocked"  #: the action did not execute
    MODIFIED = "modified"  #: the action executed in a rewritten form
    WARNED = "warned"  #: the action executed; the violation is recorded and penalised
    SIGNAL_SENT = "signal_sent"  #: a kernel signal was dispatched to the agent

    @classmethod
    def parse(cls, value: Union["ViolationType", str]) -> "ViolationType":
        if isinstance(value, ViolationType):
            return value
        if not isinstance(value, str):
            raise TypeError(f"violation_type must be a str or ViolationType, got {type(value).__name__}")
        try:
            return cls(value.strip().lower())
        except ValueError:
            valid = ", ".join(v.value for v in cls)
            raise GovernanceConfigError(f"unknown violation_type {value!r}; use one of: {valid}") from None

    def __str__(self) -> str:
        return self.value


#: Name used by the agentmesh-lightning package.
PolicyViolationType = ViolationType


def finite_number(name: str, value: Any) -> float:
    """``value`` as a float; a non-number (bools included) or a NaN/infinity is an error naming ``name``.

    >>> finite_number("RewardConfig.clean_bonus", 5)
    5.0
    >>> finite_number("RewardConfig.clean_bonus", "5")
    Traceback (most recent call last):
    ...
    TypeError: RewardConfig.clean_bonus must be a number, got str: '5'
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a number, got {type(value).__name__}: {value!r}")
    value = float(value)
    if not math.isfinite(value):
        raise GovernanceConfigError(f"{name} must be finite, got {value}")
    return value


def _check_penalty(penalty: Any) -> float:
    penalty = finite_number("penalty", penalty)
    if penalty > 0:
        raise GovernanceConfigError(
            f"penalty must be <= 0 (penalties live in reward space and are negative), got {penalty}; "
            f"did you mean {-penalty}?"
        )
    return penalty


@dataclass
class PolicyViolation:
    """One policy finding about one action.

    ``penalty`` defaults from ``severity`` (see :data:`DEFAULT_SEVERITY_PENALTIES`); an explicit
    penalty is kept and flagged in ``penalty_is_explicit`` so reward shaping honours it.
    ``action_blocked`` defaults to ``violation_type == BLOCKED``.

    >>> v = PolicyViolation("blocked", "SQLPolicy", "DROP statement denied", "critical")
    >>> (v.penalty, v.action_blocked, v.penalty_is_explicit)
    (-100.0, True, False)
    >>> PolicyViolation("warned", "Audit", "slow query", "low", penalty=-0.5).penalty
    -0.5
    """

    violation_type: ViolationType
    policy_name: str
    description: str
    severity: Severity = Severity.MEDIUM
    timestamp: datetime = field(default_factory=lambda: datetime.now(timezone.utc))
    action_blocked: Optional[bool] = None
    penalty: Optional[float] = None
    penalty_is_explicit: bool = field(init=False, default=False)

    def __post_init__(self) -> None:
        self.violation_type = ViolationType.parse(self.violation_type)
        if not isinstance(self.policy_name, str) or not self.policy_name:
            raise TypeError(f"policy_name must be a non-empty str, got {self.policy_name!r}")
        if not isinstance(self.description, str):
            raise TypeError(f"description must be a str, got {type(self.description).__name__}")
        self.severity = Severity.parse(self.severity)
        if not isinstance(self.timestamp, datetime):
            raise TypeError(f"timestamp must be a datetime, got {type(self.timestamp).__name__}")
        if self.timestamp.tzinfo is None:
            self.timestamp = self.timestamp.replace(tzinfo=timezone.utc)
        if self.action_blocked is None:
            self.action_blocked = self.violation_type is ViolationType.BLOCKED
        elif not isinstance(self.action_blocked, bool):
            raise TypeError(f"action_blocked must be a bool, got {type(self.action_blocked).__name__}")
        if self.penalty is None:
            self.penalty = DEFAULT_SEVERITY_PENALTIES[self.severity]
        else:
            self.penalty = _check_penalty(self.penalty)
            self.penalty_is_explicit = True

    def to_dict(self) -> Dict[str, Any]:
        """JSON-ready form (used in span attributes and the audit record)."""
        return {
            "violation_type": self.violation_type.value,
            "policy_name": self.policy_name,
            "description": self.description,
            "severity": self.severity.value,
            "timestamp": self.timestamp.isoformat(),
            "action_blocked": self.action_blocked,
            "penalty": self.penalty,
            "penalty_is_explicit": self.penalty_is_explicit,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "PolicyViolation":
        """Inverse of :meth:`to_dict`.

        >>> v = PolicyViolation("blocked", "P", "d", "high")
        >>> PolicyViolation.from_dict(v.to_dict()) == v
        True
        """
        ts = data.get("timestamp")
        violation = cls(
            violation_type=data["violation_type"],
            policy_name=data["policy_name"],
            description=data["description"],
            severity=data["severity"],
            timestamp=datetime.fromisoformat(ts) if isinstance(ts, str) else datetime.now(timezone.utc),
            action_blocked=data.get("action_blocked"),
            penalty=data.get("penalty") if data.get("penalty_is_explicit") else None,
        )
        return violation


def constraint_cost(violations: Iterable["PolicyViolation"], weights: Optional[Mapping[Any, float]] = None) -> float:
    """The constraint cost of a set of violations: the sum of their severities' weights (>= 0).

    ``weights`` maps severities (or their names) to non-negative costs; missing severities use
    :data:`DEFAULT_SEVERITY_COSTS`. Safe-RL algorithms (Lagrangian PPO, CPO) constrain the
    expected cost directly instead of folding a hand-tuned penalty into the reward.

    >>> vs = [PolicyViolation("blocked", "SQLPolicy", "DROP", "critical"), PolicyViolation("warned", "P", "x", "low")]
    >>> constraint_cost(vs)
    11.0
    >>> constraint_cost(vs, weights={"critical": 1.0, "low": 0.0})
    1.0
    >>> constraint_cost([])
    0.0
    """
    table = dict(DEFAULT_SEVERITY_COSTS)
    for key, weight in (weights or {}).items():
        if isinstance(weight, bool) or not isinstance(weight, (int, float)) or not math.isfinite(weight) or weight < 0:
            raise GovernanceConfigError(f"cost weight for {key!r} must be a finite number >= 0, got {weight!r}")
        table[Severity.parse(key)] = float(weight)
    total = 0.0
    for violation in violations:
        if not isinstance(violation, PolicyViolation):
            raise TypeError(f"expected PolicyViolation objects, got {type(violation).__name__}")
        total += table[violation.severity]
    return total
