"""PolicyReward: the task reward shaped by the rollout's policy violations."""

from __future__ import annotations

import logging
import threading
import warnings
from typing import Any, Callable, Dict, Mapping, Optional

from agentlightning.contrib.kernel.agentos import GovernanceConfigError, GovernanceKernel, Severity, as_kernel
from agentlightning.contrib.kernel.agentos.agl03.reward_span import reward_core_fields
from agentlightning.contrib.kernel.agentos.agl03.spans import add_spans
from agentlightning.contrib.kernel.agentos.keywords import unknown_keyword_error
from agentlightning.contrib.kernel.agentos.reward import GovernedReward, LagrangianPenalty, RewardConfig
from agentlightning.contrib.kernel.agentos.reward.shaping import default_base_reward, rollout_violations, shape_reward

__all__ = ["PolicyReward", "create_policy_reward"]

logger = logging.getLogger(__name__)


class PolicyReward:
    """Wraps a base reward function and shapes its value by the rollout's violations.

    ``reward_fn(rollout)`` returns the final reward (a float); :meth:`score` returns the whole
    :class:`GovernedReward` (final, base, policy_penalty, clean_bonus, cost, violation count).
    A rollout is anything with ``.violations`` (and ``.success``/``.agent_reward`` for the
    default base reward), such as what ``AgentOSRunner.step`` returns; no tracer or store is
    needed. Attached to a runner, ``AgentOSRunner(kernel, reward_fn=PolicyReward(kernel))``, the
    shaped reward becomes the rollout's final reward span in the store.

    A rollout whose ``governed`` attribute is False (``GovernedRollout.governed``: not one action
    went through the kernel) gets no clean bonus: it has no violations only because nothing was
    checked (``RewardConfig(clean_bonus_requires_check=False)`` pays it anyway). Objects without
    that attribute count as governed.

    When the floor ``min_reward`` cuts a reward (e.g. two critical violations, -200, become -100),
    rollouts with more violations than the floor can express score the same; this is logged once
    per ``PolicyReward`` with the fix (``RewardConfig(min_reward=None)`` or a lower floor).

    Args:
        kernel: the reference's first argument, checked (a ``GovernanceKernel``, an
            ``agent_os.KernelSpace``, a list of policies, or ``None``): the reward reads the
            violations the rollout carries, and a ``GovernanceKernel`` given must price them by
            ``config``'s table (a violation has one price; else the error names both tables and
            the fix, ``GovernanceKernel(penalties=config.severity_penalties)``). The ``kernel``
            attribute is deprecated: scoring never uses it.
        base_reward_fn: ``rollout -> float``; default :func:`default_base_reward` (the agent's
            own reward if it gave one, else 1.0 on success and 0.0 otherwise).
        config: a :class:`RewardConfig` (default: the reference defaults, with the penalty
            table of ``kernel`` when it is a ``GovernanceKernel``). Its table prices the
            violations; one a kernel priced otherwise is refused, never priced twice
            (:meth:`SeverityTable.price`).
        lagrangian: a :class:`LagrangianPenalty`; when given, the penalty is ``-lambda * cost``
            instead of the per-severity table.

    >>> from types import SimpleNamespace
    >>> from agentlightning.contrib.kernel.agentos import GovernanceKernel, SQLPolicy, Action
    >>> kernel = GovernanceKernel([SQLPolicy(deny=["DROP"])])
    >>> drop = kernel.check(Action.sql("DROP TABLE users"))
    >>> reward_fn = PolicyReward(kernel)
    >>> (
    ...     reward_fn(SimpleNamespace(success=True, violations=[])),
    ...     reward_fn(SimpleNamespace(success=True, violations=drop.violations)),
    ... )
    (6.0, -99.0)
    >>> reward_fn.get_stats()  # doctest: +NORMALIZE_WHITESPACE
    {'total_rewards': 2, 'total_penalties': -100.0, 'avg_penalty': -50.0, 'violation_rate': 0.5, 'clean_rate': 0.5,
     'avg_reward': -46.5, 'total_cost': 10.0, 'avg_cost': 5.0, 'ungoverned_rate': 0.0, 'total_violations': 1,
     'violations_per_rollout': 0.5}
    """

    def __init__(
        self,
        kernel: Any,
        base_reward_fn: Optional[Callable[[Any], float]] = None,
        config: Optional[RewardConfig] = None,
        *,
        lagrangian: Optional[LagrangianPenalty] = None,
        **unknown: Any,
    ) -> None:
        if unknown:
            raise unknown_keyword_error(
                type(self).__name__, next(iter(unknown)), ["kernel", "base_reward_fn", "config", "lagrangian"]
            )
        if base_reward_fn is not None and not callable(base_reward_fn):
            raise TypeError(f"base_reward_fn must be callable (rollout -> float), got {type(base_reward_fn).__name__}")
        if config is not None and not isinstance(config, RewardConfig):
            raise TypeError(f"config must be a RewardConfig, got {type(config).__name__}")
        if config is None and isinstance(kernel, GovernanceKernel):  # the kernel's table, its one price
            config = RewardConfig(**{f"{level.value}_penalty": entry for level, entry in kernel.penalties.items()})
        if lagrangian is not None and not isinstance(lagrangian, LagrangianPenalty):
            raise TypeError(f"lagrangian must be a LagrangianPenalty, got {type(lagrangian).__name__}")
        self.base_reward_fn = base_reward_fn or default_base_reward
        self.config = config or RewardConfig()
        self._kernel = as_kernel(kernel, penalties=self.config.severity_penalties) if kernel is not None else None
        if lagrangian is not None and self.config.multiplicative:
            raise GovernanceConfigError(
                "lagrangian= prices violations additively; it cannot be combined with RewardConfig(multiplicative=True)"
            )
        self.lagrangian = lagrangian
        self._lock = threading.Lock()
        self._warned_clamp = False
        self.reset_stats()

    @property
    def kernel(self) -> Any:
        """Deprecated: the kernel given, which scoring never uses (violations come from the rollout)."""
        warnings.warn(
            "PolicyReward.kernel is deprecated: the reward never uses it (it scores the violations each rollout "
            "carries); keep your own reference to the kernel",
            DeprecationWarning,
            stacklevel=2,
        )
        return self._kernel

    def score(self, rollout: Any) -> GovernedReward:
        """The governed reward of ``rollout``, decomposed (and counted in :meth:`get_stats`)."""
        violations = rollout_violations(rollout)
        governed = getattr(rollout, "governed", True)
        if not isinstance(governed, bool):
            raise TypeError(
                f"rollout.governed must be a bool (whether any action went through the kernel), got {governed!r}"
            )
        base = self._base(rollout)
        multiplier = self.lagrangian.multiplier_for(rollout) if self.lagrangian is not None else None
        bonus_allowed = governed or not self.config.clean_bonus_requires_check
        reward = shape_reward(base, violations, self.config, lagrange_multiplier=multiplier, governed=bonus_allowed)
        with self._lock:
            self._stats["total_rewards"] += 1
            self._stats["total_penalties"] += reward.policy_penalty
            self._stats["violating"] += reward.violation_count > 0
            self._stats["violations"] += reward.violation_count
            self._stats["ungoverned"] += not governed and reward.violation_count == 0
            self._stats["clean"] += bonus_allowed and reward.violation_count == 0
            self._stats["sum_rewards"] += reward.final
            self._stats["total_cost"] += reward.cost
            warn = reward.clamped and reward.final == self.config.min_reward and not self._warned_clamp
            self._warned_clamp = self._warned_clamp or warn
        if warn:
            raw = reward.base + reward.policy_penalty + reward.clean_bonus
            logger.warning(
                "PolicyReward: the reward %s (base %s + penalty %s) was clamped to min_reward=%s, so rollouts with "
                "more violations than the floor can express all score %s and training cannot tell them apart. Use "
                "RewardConfig(min_reward=None) to keep every penalty, or a lower min_reward. "
                "(Logged once per PolicyReward.)",
                round(raw, 4),
                round(reward.base, 4),
                round(reward.policy_penalty, 4),
                self.config.min_reward,
                self.config.min_reward,
            )
        return reward

    def _base(self, rollout: Any) -> float:
        """``base_reward_fn(rollout)``; an attribute read on a dict ``task_output`` gets a hint."""
        try:
            return self.base_reward_fn(rollout)
        except AttributeError as err:
            output = getattr(rollout, "task_output", None)
            name = getattr(err, "name", None)
            if isinstance(output, dict) and name is not None and getattr(err, "obj", None) is output:
                raise AttributeError(
                    f"{err}: rollout.task_output is the dict the agent returned; "
                    f"read it as rollout.task_output[{name!r}]"
                    + ("" if name in output else f" (its keys: {sorted(map(str, output))})"),
                    name=name,
                    obj=output,
                ) from err
            raise

    def __call__(self, rollout: Any) -> float:
        return self.score(rollout).final

    async def record(self, store: Any, rollout: Any, attempt_id: Optional[str] = None) -> GovernedReward:
        """Score ``rollout`` and add its reward span to ``store`` (no tracer needed), as the
        last span of its latest attempt (or ``attempt_id``), so ``find_final_reward`` returns it."""
        rollout_id = getattr(rollout, "rollout_id", None)
        if not isinstance(rollout_id, str):
            raise TypeError("record() needs a rollout with a rollout_id (e.g. what AgentOSRunner.step returns)")
        if attempt_id is None:
            attempt = await store.get_latest_attempt(rollout_id)
            if attempt is None:
                raise GovernanceConfigError(f"rollout {rollout_id} has no attempt in this store")
            attempt_id = attempt.attempt_id
        reward = self.score(rollout)
        await add_spans(store, rollout_id, attempt_id, [reward_core_fields(reward)])
        return reward

    def get_stats(self) -> Dict[str, Any]:
        """Totals since the last :meth:`reset_stats` (counts are rollouts scored here).

        ``violation_rate`` (the fraction of rollouts with at least one violation, as in every
        statistics of the package), ``clean_rate`` (rollouts that earned the clean bonus) and
        ``ungoverned_rate`` (no action went through the kernel, no violation); with the default
        ``clean_bonus_requires_check=True`` the three add up to 1. ``violations_per_rollout`` is
        the mean number of violations per rollout.
        """
        with self._lock:
            stats = dict(self._stats)
        n = stats["total_rewards"]
        return {
            "total_rewards": n,
            "total_penalties": stats["total_penalties"],
            "avg_penalty": stats["total_penalties"] / n if n else 0.0,
            "violation_rate": stats["violating"] / n if n else 0.0,
            "clean_rate": stats["clean"] / n if n else 0.0,
            "avg_reward": stats["sum_rewards"] / n if n else 0.0,
            "total_cost": stats["total_cost"],
            "avg_cost": stats["total_cost"] / n if n else 0.0,
            "ungoverned_rate": stats["ungoverned"] / n if n else 0.0,
            "total_violations": stats["violations"],
            "violations_per_rollout": stats["violations"] / n if n else 0.0,
        }

    def reset_stats(self) -> None:
        with self._lock:
            self._stats = {
                "total_rewards": 0,
                "total_penalties": 0.0,
                "violating": 0,
                "violations": 0,
                "ungoverned": 0,
                "clean": 0,
                "sum_rewards": 0.0,
                "total_cost": 0.0,
            }


def create_policy_reward(
    kernel: Any,
    base_reward_fn: Optional[Callable[[Any], float]] = None,
    severity_penalties: Optional[Mapping[Any, float]] = None,
    clean_bonus: float = 5.0,
    multiplicative: bool = False,
    **config_fields: Any,
) -> PolicyReward:
    """One-line :class:`PolicyReward`; other :class:`RewardConfig` fields pass through.

    >>> reward_fn = create_policy_reward(None, severity_penalties={"critical": -200.0}, clean_bonus=10.0)
    >>> reward_fn.config.critical_penalty, reward_fn.config.high_penalty, reward_fn.config.clean_bonus
    (-200.0, -50.0, 10.0)
    """
    unknown = set(config_fields) - set(RewardConfig.field_names())
    if unknown:
        raise GovernanceConfigError(
            f"unknown RewardConfig field(s) {sorted(unknown)}; valid: {', '.join(RewardConfig.field_names())}"
        )
    penalties: Dict[str, float] = {}
    for key, value in (severity_penalties or {}).items():
        penalties[f"{Severity.parse(key).value}_penalty"] = value
    clash = set(penalties) & set(config_fields)
    if clash:
        raise GovernanceConfigError(f"{sorted(clash)} given both in severity_penalties and as keywords; give each once")
    config = RewardConfig(clean_bonus=clean_bonus, multiplicative=multiplicative, **penalties, **config_fields)
    return PolicyReward(kernel, base_reward_fn=base_reward_fn, config=config)
