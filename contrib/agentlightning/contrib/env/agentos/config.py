""":class:`EnvironmentConfig`: the governed environment's reward, termination and kernel-state knobs,
and the two rules they make (:meth:`EnvironmentConfig.shape`, :meth:`EnvironmentConfig.ending`)."""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field, fields
from typing import Any, Dict, Iterable, Mapping, Optional, Union

from agentlightning.contrib.kernel.agentos import GovernanceConfigError, PolicyViolation, Severity
from agentlightning.contrib.kernel.agentos.reward.formula import GovernedReward, shape_governed_reward
from agentlightning.contrib.kernel.agentos.violations import SeverityTable, finite_number, penalty_number

__all__ = ["EnvironmentConfig", "SEVERITY_SCALE", "config_from_kwargs"]

#: How ``violation_penalty`` is scaled per violation, by severity (the reference's scaling:
#: critical x10, high x5, medium and low x1): the ``"environment_scale"`` preset of the kernel's
#: one per-severity table type. The constraint costs (``DEFAULT_SEVERITY_COSTS``) have the same
#: numbers today but are a table of their own: changing one never changes the other.
SEVERITY_SCALE: SeverityTable = SeverityTable.preset("environment_scale")

_KERNEL_RESET_MODES = (True, False, "all")
_DEFAULT_VIOLATION_PENALTY = -10.0  # the reference's


def _number(name: str, value: Any) -> float:
    return finite_number(f"EnvironmentConfig.{name}", value)


@dataclass
class EnvironmentConfig:
    """Reward shaping and episode limits of a :class:`GovernedEnvironment`.

    The first six fields are the reference's, with its defaults. Per step (:meth:`shape`, the
    kernel's one reward formula ``shape_governed_reward`` configured by these fields)::

        reward = task_reward + step_penalty + sum(penalties.price(v) for v in violations)
                 (+ success_bonus when the step is clean and successful)

    where ``penalties`` is the kernel's penalty table, the one that prices a violation in every room
    (its policy's explicit penalty, else the table's entry for its severity; the kernel writes that
    price on the violation and its audit record). A table the config gives (``penalties``, or a
    ``violation_penalty`` other than the reference's -10, scaled by ``SEVERITY_SCALE``: critical
    x10, high x5, medium and low x1) must be the kernel's: an environment that builds its kernel
    (from policies or a ``KernelSpace``) builds it with that table, by default the reference's
    ``-10 x SEVERITY_SCALE`` (a low violation costs -10 where ``RewardConfig``'s default table says
    -1); one given a ``GovernanceKernel`` of another table refuses it, naming the fix
    (``GovernanceKernel(penalties=config.severity_penalties)``); with no table given, the given
    kernel's table is the environment's. Penalties are zero or negative, the bonus zero or
    positive; the reward is not clamped.

    * ``max_steps``: steps per episode before the episode is truncated (``truncated=True``).
    * ``terminate_on_critical``: a critical violation ends the episode (``terminated=True``).
    * ``reset_kernel_state``: what ``reset()`` clears in the kernel. ``True``: the per-rollout
      state of the episode that just ended (``kernel.end_rollout(episode_id)``, e.g. a per-rollout
      budget); per-run budgets are kept. ``"all"``: ``kernel.reset()``, every policy's state
      including per-run budgets. ``False``: nothing.
    * ``terminate_on_success`` (beyond the reference): a clean successful step ends the episode
      (``terminated=True``); the text-to-SQL environment turns it on (one task per episode).
    * ``cost_weights`` (beyond the reference): severity -> constraint cost used for
      ``info["cost"]``; missing severities use ``DEFAULT_SEVERITY_COSTS`` (10/5/1/1).
    * ``penalties`` (beyond the reference): the penalty table (a ``SeverityTable`` of kind
      ``"penalty"``) instead of ``violation_penalty`` x ``SEVERITY_SCALE``; give one or the other.

    >>> EnvironmentConfig(max_steps=50).violation_penalty
    -10.0
    >>> EnvironmentConfig(step_penalty=0.1)  # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ...
    agentlightning.contrib.kernel.agentos.violations.GovernanceConfigError: EnvironmentConfig.step_penalty must be <= 0
    (a penalty is negative reward), got 0.1; did you mean -0.1?
    """

    max_steps: int = 100
    violation_penalty: float = _DEFAULT_VIOLATION_PENALTY
    terminate_on_critical: bool = True
    step_penalty: float = -0.1
    success_bonus: float = 10.0
    reset_kernel_state: Union[bool, str] = True
    terminate_on_success: bool = False
    cost_weights: Optional[Dict[str, float]] = field(default=None)
    penalties: Optional[SeverityTable] = field(default=None)

    def __post_init__(self) -> None:
        if isinstance(self.max_steps, bool) or not isinstance(self.max_steps, int):
            raise TypeError(
                f"EnvironmentConfig.max_steps must be an int, got {type(self.max_steps).__name__}: {self.max_steps!r}"
            )
        if self.max_steps < 1:
            raise GovernanceConfigError(
                f"EnvironmentConfig.max_steps must be >= 1 (steps per episode before truncation), got {self.max_steps}"
            )
        for name in ("violation_penalty", "step_penalty"):
            setattr(self, name, penalty_number(f"EnvironmentConfig.{name}", getattr(self, name)))
        self.success_bonus = _number("success_bonus", self.success_bonus)
        if self.success_bonus < 0:
            raise GovernanceConfigError(
                f"EnvironmentConfig.success_bonus must be >= 0 (use violation_penalty or step_penalty for "
                f"penalties), got {self.success_bonus}"
            )
        for name in ("terminate_on_critical", "terminate_on_success"):
            if not isinstance(getattr(self, name), bool):
                raise TypeError(f"EnvironmentConfig.{name} must be True or False, got {getattr(self, name)!r}")
        mode = self.reset_kernel_state
        if not any(mode is m or (isinstance(m, str) and mode == m) for m in _KERNEL_RESET_MODES):
            raise GovernanceConfigError(
                f"EnvironmentConfig.reset_kernel_state must be True (end the finished episode's rollout state), "
                f"'all' (kernel.reset(): all policy state, per-run budgets included) or False, got {mode!r}"
            )
        if self.cost_weights is not None:
            if not isinstance(self.cost_weights, Mapping):
                raise TypeError(
                    f"EnvironmentConfig.cost_weights must be a mapping of severity to cost, e.g. {{'critical': 1.0}}, "
                    f"got {type(self.cost_weights).__name__}"
                )
            weights: Dict[str, float] = {}
            for key, weight in self.cost_weights.items():
                severity = Severity.parse(key)
                weight = _number(f"cost_weights[{key!r}]", weight)
                if weight < 0:
                    raise GovernanceConfigError(f"EnvironmentConfig.cost_weights[{key!r}] must be >= 0, got {weight}")
                weights[severity.value] = weight
            self.cost_weights = weights
        if self.penalties is not None:
            if not isinstance(self.penalties, SeverityTable) or self.penalties.kind != "penalty":
                raise TypeError(
                    "EnvironmentConfig.penalties must be a penalty table, e.g. "
                    f"RewardConfig(critical_penalty=-200).severity_penalties, got {self.penalties!r}"
                )
            if self.violation_penalty != _DEFAULT_VIOLATION_PENALTY:
                raise GovernanceConfigError(
                    "EnvironmentConfig: give penalties (the table) or violation_penalty (scaled by severity), "
                    f"not both; got penalties={self.penalties!r} and violation_penalty={self.violation_penalty}"
                )

    @property
    def given_penalties(self) -> Optional[SeverityTable]:
        """The table this config gives: ``penalties``, or ``violation_penalty`` x :data:`SEVERITY_SCALE`
        when ``violation_penalty`` is not the reference's default; None: none given (the kernel's).

        >>> EnvironmentConfig().given_penalties is None
        True
        >>> EnvironmentConfig(violation_penalty=-2.0).given_penalties["high"]
        -10.0
        """
        if self.penalties is None and self.violation_penalty == _DEFAULT_VIOLATION_PENALTY:
            return None
        return self.severity_penalties

    @property
    def severity_penalties(self) -> SeverityTable:
        """The penalty table of the environment: ``penalties`` if given, else ``violation_penalty`` x
        :data:`SEVERITY_SCALE`.

        >>> EnvironmentConfig().severity_penalties[Severity.LOW]
        -10.0
        """
        if self.penalties is not None:
            return self.penalties
        return SEVERITY_SCALE.scaled(self.violation_penalty, kind="penalty")

    def violation_reward(self, severity: Union[Severity, str]) -> float:
        """The reward added for one violation of ``severity`` without an explicit penalty (the table's entry).

        >>> EnvironmentConfig().violation_reward("critical"), EnvironmentConfig().violation_reward("high")
        (-100.0, -50.0)
        """
        return self.severity_penalties[Severity.parse(severity)]

    def shape(self, task_reward: float, violations: Iterable[PolicyViolation], *, succeeded: bool) -> GovernedReward:
        """One step's governed reward: the kernel's ``shape_governed_reward`` with this config.

        ``base`` is ``task_reward + step_penalty``, the penalty the prices of the violations by
        :attr:`severity_penalties`, the bonus ``success_bonus`` when the step ``succeeded`` (and had no
        violation); ``cost`` uses ``cost_weights``; no clamp.

        >>> drop = PolicyViolation("blocked", "SQLPolicy", "DROP denied", "critical")
        >>> EnvironmentConfig().shape(0.0, [drop], succeeded=False).final
        -100.1
        >>> r = EnvironmentConfig().shape(1.0, [], succeeded=True)
        >>> r.final, r.base, r.clean_bonus
        (10.9, 0.9, 10.0)
        """
        return shape_governed_reward(
            task_reward + self.step_penalty,
            violations,
            self.severity_penalties,
            bonus=self.success_bonus,
            bonus_allowed=succeeded,
            cost_weights=self.cost_weights,
        )

    def ending(self, step: int, *, critical: bool, succeeded: bool) -> Optional[str]:
        """How the episode ends after its ``step``-th step, or ``None`` if it goes on.

        ``"critical"`` (a critical violation, ``terminate_on_critical``) and ``"success"`` (a clean
        successful step, ``terminate_on_success``) terminate it; ``"max_steps"`` truncates it. A
        termination on the last step wins over the truncation.

        >>> config = EnvironmentConfig(max_steps=3)
        >>> config.ending(1, critical=False, succeeded=True), config.ending(3, critical=True, succeeded=False)
        (None, 'critical')
        >>> config.ending(3, critical=False, succeeded=False)
        'max_steps'
        """
        if critical and self.terminate_on_critical:
            return "critical"
        if succeeded and self.terminate_on_success:
            return "success"
        if step >= self.max_steps:
            return "max_steps"
        return None


def config_from_kwargs(config: Optional[EnvironmentConfig] = None, **overrides: Any) -> EnvironmentConfig:
    """``config`` (or the defaults) with ``overrides`` applied; an unknown field is a clear error.

    >>> config_from_kwargs(max_steps=5).max_steps
    5
    >>> config_from_kwargs(max_step=5)  # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ...
    TypeError: unknown EnvironmentConfig field 'max_step' (did you mean 'max_steps'?); valid fields: max_steps,
    violation_penalty, terminate_on_critical, step_penalty, success_bonus, reset_kernel_state, terminate_on_success,
    cost_weights, penalties
    """
    if config is not None and not isinstance(config, EnvironmentConfig):
        raise TypeError(f"config must be an EnvironmentConfig, got {type(config).__name__}")
    names = [f.name for f in fields(EnvironmentConfig)]
    for key in overrides:
        if key not in names:
            close = difflib.get_close_matches(key, names, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise TypeError(f"unknown EnvironmentConfig field {key!r}{hint}; valid fields: {', '.join(names)}")
    base = {f.name: getattr(config, f.name) for f in fields(EnvironmentConfig)} if config is not None else {}
    return EnvironmentConfig(**{**base, **overrides})
