"""Rewards and costs through Agent Lightning 1.0's hooks: the governed reward as the attempt's last ``reward`` event.

1.0 has one scalar reward per rollout: its trainer reads the attempt's **last** ``reward``
event. :class:`GovernanceHooks` appends that event after every rollout, shaped by the kernel
core's one formula (``shape_reward``, the same ``RewardConfig`` as the 0.3 reward room):

    final = clamp(base + penalty(violations) + clean_bonus)

where ``base`` is the agent's own last reward (``missing_base_reward`` when it posted none) and
the violations are those the gateway recorded as ``agentos.decision`` events on the attempt.

Your own reward. A subclass that posts its reward in ``on_succeeded`` (or ``on_failed``) and
calls ``super()`` trains on that reward plus the penalty: the governed reward is written after the
class's outermost ``on_succeeded`` returns, with what it wrote counted among the attempt's events,
whichever order it calls ``super()`` in, or if it does not call it at all. Only that outermost
call writes (a wrapper every subclass's own hook methods get, ``_governed_last``).

Failing closed. 1.0 prints and swallows a hook's exception, and then trains on the agent's own
reward: a failing hook would fail open. So the hook never raises out of ``on_succeeded`` or
``on_failed``, a subclass's own included: any error there or while shaping writes a
*fail-closed* reward instead (``min_reward``, or the critical penalty when the table has no lower
bound), with ``reason`` ``agentos.hook_failed``.
A failed rollout is still trained by 1.0 (with ``reward_fillna_value`` when it has no reward), and
``on_failed`` gets no events: the hook reads them from the gateway itself (its URL and key from
the same configuration file), so a blocked call is penalised whether or not the agent finished.

Loading. 1.0's trainer loads hooks with ``load_hooks(path)``, which requires **exactly one**
``RolloutHooks`` subclass in the file it executes. This file defines one, so its path can be given
as it is (``agentlightning.hooks: <site-packages>/agentlightning/contrib/gateway/agentos/hooks.py``).
A file of yours that subclasses ``GovernanceHooks`` must import the *module*, not the class (a
class imported by name is a second subclass in your file and ``load_hooks`` refuses it)::

    from agentlightning.contrib.gateway.agentos import hooks as agentos_hooks

    class MyHooks(agentos_hooks.GovernanceHooks):
        missing_base_reward = -1.0

Configuration: ``GovernanceHooks(config=...)``, else the file named by ``AGENTOS_GATEWAY_CONFIG``
(the gateway's own configuration: its ``governance.penalties`` and its ``host``/``port``/``key``).
This module uses absolute imports only: ``load_hooks`` executes it outside its package.
"""

from __future__ import annotations

import functools
import os
import traceback
from types import SimpleNamespace
from typing import Any, Dict, List, Mapping, Optional, Sequence

from agentlightning.hooks import RolloutHooks

from agentlightning.contrib.gateway.agentos.config import CONFIG_ENV, GovernanceConfig
from agentlightning.contrib.gateway.agentos.events import (
    DECISION_EVENT,
    REASON_GOVERNED,
    REASON_HOOK_FAILED,
    REWARD_EVENT,
    REWARD_SOURCE,
    violations_from_event_data,
)
from agentlightning.contrib.kernel.agentos import GovernanceConfigError, RewardConfig
from agentlightning.contrib.kernel.agentos.reward.config import shape_reward
from agentlightning.contrib.kernel.agentos.reward.formula import GovernedReward
from agentlightning.contrib.kernel.agentos.violations import finite_float

__all__ = ["GovernanceHooks"]


def _event_type(event: Any) -> Any:
    return event.get("event_type") if isinstance(event, Mapping) else getattr(event, "event_type", None)


def _event_data(event: Any) -> Mapping[str, Any]:
    data = event.get("data") if isinstance(event, Mapping) else getattr(event, "data", None)
    if not isinstance(data, Mapping):
        raise ValueError(f"an event without a data mapping: {event!r}")
    return data


class GovernanceHooks(RolloutHooks):
    """Writes the governed reward as the last ``reward`` event of each rollout (see the module docstring)."""

    #: The base reward of an attempt whose agent posted no reward (1.0's own default fill is 0.0).
    missing_base_reward: float = 0.0

    def __init__(self, config: Optional[GovernanceConfig] = None, *, gateway_url: Optional[str] = None) -> None:
        self.config = config
        self.gateway_url = gateway_url
        self.gateway_key: Optional[str] = None

    # -- lifecycle --------------------------------------------------------------------------
    def on_startup(self, store: Any | None = None) -> None:
        """Read the configuration (an error here stops the trainer: 1.0 does not swallow it)."""
        if self.config is not None:
            return
        path = os.environ.get(CONFIG_ENV)
        if not path:
            raise GovernanceConfigError(
                f"GovernanceHooks needs the gateway's configuration: set {CONFIG_ENV} to its file, "
                "or construct GovernanceHooks(config=GovernanceConfig...)"
            )
        from omegaconf import OmegaConf

        loaded = OmegaConf.to_container(OmegaConf.load(path), resolve=True)
        self.config = GovernanceConfig.from_file(path)
        if isinstance(loaded, Mapping) and self.gateway_url is None and "port" in loaded:
            host = str(loaded.get("host") or "127.0.0.1")
            host = "127.0.0.1" if host in ("0.0.0.0", "::") else host
            self.gateway_url = f"http://{host}:{int(loaded['port'])}"
            self.gateway_key = str(loaded.get("key") or "") or None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """A subclass's own ``on_succeeded`` / ``on_failed`` is wrapped as ours is: the governed
        reward is written once, after the outermost one returns (see :func:`_governed_last`)."""
        super().__init_subclass__(**kwargs)
        for name in ("on_succeeded", "on_failed"):
            method = cls.__dict__.get(name)
            if method is not None and not getattr(method, "_agentos_governed_last", False):
                setattr(cls, name, _governed_last(method, name))

    def on_succeeded(self, rollout: Any, events: Dict[str, List[Any]], store: Any) -> None:
        """Nothing of its own: the governed reward is written after the outermost ``on_succeeded``
        of the class returns (:func:`_governed_last`), so a subclass's reward, posted before or
        after ``super()``, is its base."""

    def on_failed(self, rollout: Any, store: Any) -> None:
        """As :meth:`on_succeeded`; the attempt's events are read from the gateway (1.0 gives none)."""

    def _governed_reward_after(
        self, name: str, rollout: Any, events: Optional[Mapping[str, List[Any]]], writer: "_AttemptWriter", failure: Any
    ) -> None:
        """Write the governed reward, the attempt's last, once the hook method ``name`` returned.
        The events are those 1.0 gave (or, for ``on_failed``, the gateway's), then those the
        hook method wrote itself (a reward of the user's own among them)."""
        if name == "on_succeeded":
            attempt_id = self._attempt_id(rollout, events or {})
            given: Any = lambda: (events or {}).get(attempt_id, [])  # noqa: E731 - read inside the fail-closed guard
        else:
            attempt_id = rollout.status.last_attempt_id or "0"
            given = lambda: self._fetch_events(rollout.rollout_id, attempt_id)  # noqa: E731

        def read_events() -> List[Any]:
            if failure is not None:
                raise RuntimeError(f"{type(self).__name__}.{name} raised {failure!r}")
            return list(given()) + writer.written(rollout.rollout_id, attempt_id)

        self._write_reward(rollout, attempt_id, read_events, writer.store)

    # -- the reward ---------------------------------------------------------------------------
    @property
    def reward_config(self) -> RewardConfig:
        if self.config is None:
            self.on_startup()
        assert self.config is not None
        return self.config.reward

    def multiplier_for(self, rollout: Any) -> Optional[float]:
        """The Lagrange multiplier pricing ``rollout`` (None: the penalty table). See the Lagrangian hooks."""
        return None

    def base_reward(self, events: Sequence[Any]) -> float:
        """The agent's own last reward on the attempt (ours excluded), else :attr:`missing_base_reward`."""
        for event in reversed(events):
            if _event_type(event) != REWARD_EVENT:
                continue
            data = _event_data(event)
            if data.get("source") == REWARD_SOURCE:
                continue
            value = data.get("value")
            if finite_float(value) is None:
                raise ValueError(f"the agent's reward event has no finite value: {dict(data)!r}")
            return float(value)
        return float(self.missing_base_reward)

    def governed_reward(self, rollout: Any, events: Sequence[Any]) -> GovernedReward:
        """The kernel core's formula over the attempt's events."""
        decisions = [_event_data(e) for e in events if _event_type(e) == DECISION_EVENT]
        config = self.reward_config
        return shape_reward(
            self.base_reward(events),
            violations_from_event_data(decisions),
            config,
            lagrange_multiplier=self.multiplier_for(rollout),
            governed=bool(decisions) or not config.clean_bonus_requires_check,
        )

    def fail_closed_value(self) -> float:
        """The reward written when shaping failed: the lowest the table allows."""
        config = self.reward_config
        return config.min_reward if config.min_reward is not None else config.critical_penalty

    def _write_reward(self, rollout: Any, attempt_id: str, read_events: Any, store: Any) -> None:
        try:
            events = list(read_events())
            reward = self.governed_reward(rollout, events)
            self.after_reward(rollout, events, reward)
            data: Dict[str, Any] = {
                "value": reward.final,
                "message": (
                    f"governed: base {reward.base} + penalty {reward.policy_penalty} + bonus {reward.clean_bonus}"
                    f" ({reward.violation_count} violation(s))"
                ),
                "source": REWARD_SOURCE,
                "reason": REASON_GOVERNED,
                "agentos": reward.to_dict(),
            }
        except Exception as error:  # never fail open: 1.0 would swallow it and train on the agent's reward
            traceback.print_exc()
            data = {
                "value": self.fail_closed_value(),
                "message": f"the governance hook failed ({error!r}); fail-closed reward",
                "source": REWARD_SOURCE,
                "reason": REASON_HOOK_FAILED,
            }
        store.add_event(rollout.rollout_id, attempt_id, REWARD_EVENT, data)

    def after_reward(self, rollout: Any, events: Sequence[Any], reward: GovernedReward) -> None:
        """Called with each shaped reward (the Lagrangian hooks count violation rates here)."""

    # -- events ----------------------------------------------------------------------------------
    @staticmethod
    def _attempt_id(rollout: Any, events: Mapping[str, Any]) -> str:
        attempt_id = rollout.status.last_attempt_id
        if attempt_id:
            return attempt_id
        if len(events) == 1:
            return next(iter(events))
        raise ValueError(f"rollout {rollout.rollout_id} has no last attempt and events of {sorted(events)}")

    def _fetch_events(self, rollout_id: str, attempt_id: str) -> List[Any]:
        if self.gateway_url is None:
            raise RuntimeError(
                "on_failed needs the gateway's URL to read the attempt's events (host/port in the config)"
            )
        from agentlightning.client import AgentLightningSyncClient

        with AgentLightningSyncClient(base_url=self.gateway_url, key=self.gateway_key, timeout=30.0) as client:
            response = client.get(f"/api/rollouts/{rollout_id}/events")
            response.raise_for_status()
            return [SimpleNamespace(**e) for e in response.json() if e.get("attempt_id") == attempt_id]


class _AttemptWriter:
    """The ``TraceWriter`` a governed hook method is given: every event goes on to 1.0's, and is
    kept, so the governed reward written after the method returns sees what it wrote."""

    def __init__(self, store: Any) -> None:
        self.store = store
        self._written: List[SimpleNamespace] = []

    def add_event(self, rollout_id: str, attempt_id: str, event_type: str, data: Dict[str, Any]) -> Any:
        result = self.store.add_event(rollout_id, attempt_id, event_type, data)
        self._written.append(
            SimpleNamespace(rollout_id=rollout_id, attempt_id=attempt_id, event_type=event_type, data=data)
        )
        return result

    def written(self, rollout_id: str, attempt_id: str) -> List[SimpleNamespace]:
        return [e for e in self._written if (e.rollout_id, e.attempt_id) == (rollout_id, attempt_id)]


def _governed_last(method: Any, name: str) -> Any:
    """``method`` (an ``on_succeeded`` or ``on_failed``) run with an :class:`_AttemptWriter`, then
    the governed reward written as the attempt's last ``reward`` event.

    Only the outermost call writes: a ``super()`` call from a subclass arrives with the writer
    already in place and just runs. An exception from the method is printed and becomes the
    fail-closed reward; nothing is raised to 1.0, which would drop every queued event (the
    user's and ours) and train on the agent's own reward."""

    @functools.wraps(method)
    def governed(self: GovernanceHooks, rollout: Any, *args: Any) -> None:
        store = args[-1]
        if isinstance(store, _AttemptWriter):
            method(self, rollout, *args)
            return
        writer = _AttemptWriter(store)
        failure = None
        try:
            method(self, rollout, *args[:-1], writer)
        except Exception as error:  # noqa: BLE001 - fail closed below, never open
            traceback.print_exc()
            failure = error
        events = args[0] if name == "on_succeeded" else None
        self._governed_reward_after(name, rollout, events, writer, failure)

    governed._agentos_governed_last = True  # type: ignore[attr-defined]
    return governed


GovernanceHooks.on_succeeded = _governed_last(GovernanceHooks.on_succeeded, "on_succeeded")  # type: ignore[method-assign]
GovernanceHooks.on_failed = _governed_last(GovernanceHooks.on_failed, "on_failed")  # type: ignore[method-assign]
