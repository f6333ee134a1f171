"""Small pure reward functions: penalties, shaping, composition. No trainer, store or tracer needed.

>>> drop = PolicyViolation("blocked", "SQLPolicy", "DROP denied", "critical")
>>> shape_reward(1.0, []).final, shape_reward(1.0, [drop]).final
(6.0, -99.0)
"""

from __future__ import annotations

import math
from typing import Any, Callable, Iterable, List, Sequence, Tuple

from ..violations import GovernanceConfigError, PolicyViolation, finite_float
from .config import RewardConfig, shape_reward
from .formula import penalty_from_table

__all__ = ["policy_penalty", "default_base_reward", "rollout_violations", "shape_reward", "CompositeReward"]


def policy_penalty(
    violations: Iterable[PolicyViolation],
    critical_penalty: float = -100.0,
    high_penalty: float = -50.0,
    medium_penalty: float = -10.0,
    low_penalty: float = -1.0,
) -> float:
    """Sum of the violations' penalties (<= 0): a violation's explicit ``penalty`` is honoured,
    the others cost the penalty of their severity.

    >>> vs = [PolicyViolation("blocked", "SQLPolicy", "DROP", "critical"),
    ...       PolicyViolation("warned", "Audit", "slow", "low", penalty=-0.25)]
    >>> policy_penalty(vs), policy_penalty(vs, critical_penalty=-200.0)
    (-100.25, -200.25)
    """
    config = RewardConfig(
        critical_penalty=critical_penalty,
        high_penalty=high_penalty,
        medium_penalty=medium_penalty,
        low_penalty=low_penalty,
    )
    return penalty_from_table(violations, config.severity_penalties)


def default_base_reward(rollout: Any) -> float:
    """The reward before governance: the agent's own reward when it returned or emitted one
    (``rollout.agent_reward``), else 1.0 for a successful rollout and 0.0 otherwise.

    >>> from types import SimpleNamespace
    >>> default_base_reward(SimpleNamespace(success=True)), default_base_reward(SimpleNamespace(success=False))
    (1.0, 0.0)
    >>> default_base_reward(SimpleNamespace(success=True, agent_reward=0.25))
    0.25
    """
    agent_reward = getattr(rollout, "agent_reward", None)
    if agent_reward is not None:
        return float(agent_reward)
    return 1.0 if getattr(rollout, "success", False) else 0.0


def rollout_violations(rollout: Any) -> List[PolicyViolation]:
    """The violations of ``rollout``: an object with ``.violations`` (a ``GovernedRollout``, a
    ``Decision``) or a sequence of violations or decisions."""
    items = getattr(rollout, "violations", rollout)
    if isinstance(items, (str, bytes)) or not isinstance(items, Iterable):
        raise TypeError(
            f"cannot read violations from {type(rollout).__name__}; pass a rollout with a .violations list "
            "(e.g. what AgentOSRunner.step returns), a Decision, or a list of PolicyViolation"
        )
    found: List[PolicyViolation] = []
    for item in items:
        if isinstance(item, PolicyViolation):
            found.append(item)
        elif isinstance(getattr(item, "violations", None), (tuple, list)):
            found.extend(rollout_violations(item))
        else:
            raise TypeError(f"expected PolicyViolation or Decision objects, got {type(item).__name__}: {item!r}")
    return found


RewardFn = Callable[[Any], Any]


class CompositeReward:
    """A weighted sum of reward functions of a rollout.

    Each component returns a number (a :class:`PolicyReward` returns its final reward). With
    ``normalize=True`` the weights are rescaled to sum to 1.

    >>> from types import SimpleNamespace
    >>> accuracy = lambda r: r.accuracy
    >>> speed = lambda r: 1.0 if r.seconds < 2 else 0.0
    >>> reward = CompositeReward([(accuracy, 1.0), (speed, 0.5)])
    >>> reward(SimpleNamespace(accuracy=0.8, seconds=1))
    1.3
    >>> CompositeReward([(accuracy, 3.0), (speed, 1.0)], normalize=True)(SimpleNamespace(accuracy=0.8, seconds=9))
    0.6000000000000001
    """

    def __init__(self, components: Sequence[Tuple[RewardFn, float]], normalize: bool = False) -> None:
        if isinstance(components, (str, bytes)) or not isinstance(components, Sequence) or not components:
            raise GovernanceConfigError("CompositeReward needs a non-empty list of (reward_fn, weight) pairs")
        if not isinstance(normalize, bool):
            raise TypeError(f"normalize must be a bool, got {type(normalize).__name__}")
        checked: List[Tuple[RewardFn, float]] = []
        for index, component in enumerate(components):
            if not isinstance(component, (tuple, list)) or len(component) != 2:
                raise GovernanceConfigError(
                    f"CompositeReward component {index} must be a (reward_fn, weight) pair, got {component!r}"
                )
            fn, weight = component
            if not callable(fn):
                raise TypeError(
                    f"CompositeReward component {index}: reward_fn must be callable, got {type(fn).__name__}"
                )
            if finite_float(weight) is None:
                raise GovernanceConfigError(
                    f"CompositeReward component {index}: weight must be a finite number, got {weight!r}"
                )
            checked.append((fn, float(weight)))
        total = sum(w for _, w in checked)
        if math.isclose(total, 0.0, abs_tol=1e-12):
            raise GovernanceConfigError(
                f"CompositeReward weights sum to zero ({[w for _, w in checked]}): the components cancel out "
                "(and cannot be normalized); give the components weights with a non-zero sum"
            )
        if normalize:
            checked = [(fn, w / total) for fn, w in checked]
        self.components = checked
        self.normalize = normalize

    def __call__(self, rollout: Any) -> float:
        total = 0.0
        for index, (fn, weight) in enumerate(self.components):
            value = fn(rollout)
            value = getattr(value, "final", value)  # a GovernedReward counts by its final value
            if finite_float(value) is None:
                raise TypeError(
                    f"CompositeReward component {index} ({getattr(fn, '__name__', fn)!r}) "
                    f"returned {value!r}, not a finite number"
                )
            total += weight * float(value)
        return total
