"""Attempt heartbeats that do not depend on spans.

agentlightning 0.3's store marks an attempt ``unresponsive`` when its ``last_heartbeat_time`` is
older than the rollout's ``unresponsive_seconds`` (or, with none, when it started that long ago),
and the only thing that sets that time during a rollout is a span arriving. ``AgentOSRunner``
writes a rollout's clean check spans together when the rollout ends (one store call instead of
one per check), so a clean rollout longer than ``unresponsive_seconds`` sent nothing and was given
up, then retried, while it was still running. agentlightning's own runner heartbeat
(``update_worker``) is about the worker, and the store's watchdog does not read it.

:class:`AttemptHeartbeats` beats every attempt the runner is running with the store's own API for
it, ``update_attempt(rollout_id, attempt_id, last_heartbeat_time=now)``, which changes nothing
else (no status, no worker). It runs in a thread with its own event loop, as agentlightning's
worker heartbeat does, because an agent's synchronous work holds the runner's loop for as long as
it runs. Each attempt is beaten every third of its ``unresponsive_seconds`` (the runner's
``heartbeat_interval`` when the rollout has none, or when that is shorter).

The thread calls the store from a loop of its own, so heartbeats need a store that says it is
thread-safe (``store.capabilities["thread_safe"]``: a ``LightningStoreClient`` of an ``agl
store``, ``InMemoryLightningStore(thread_safe=True)``); with any other store there are none, and
the runner says so once if a rollout sets ``unresponsive_seconds``.

An attempt is beaten only while the store still counts it as the rollout's live attempt (its
latest, ``preparing`` or ``running``): an attempt the store has given up on is never written
again, and its heartbeats stop. A heartbeat that fails (the store unreachable) is retried at the
next beat, each call bounded by the interval.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from dataclasses import dataclass
from typing import Any, Dict, Optional, Tuple

from agentlightning.store.base import LightningStore

__all__ = ["AttemptHeartbeats", "LIVE_ATTEMPT_STATUSES", "attempt_is_live", "attempt_state", "heartbeat_interval"]

logger = logging.getLogger(__name__)

#: The attempt statuses in which the store still expects the attempt's runner to finish it.
LIVE_ATTEMPT_STATUSES = ("preparing", "running")

#: The fraction of ``unresponsive_seconds`` between two heartbeats: two may be lost in a row.
_BEATS_PER_WINDOW = 3
_SHORTEST_INTERVAL = 0.05


def heartbeat_interval(unresponsive_seconds: Optional[float], default: float) -> float:
    """Seconds between two heartbeats of an attempt whose rollout allows ``unresponsive_seconds``.

    >>> heartbeat_interval(None, 10.0), heartbeat_interval(1.5, 10.0), heartbeat_interval(300, 10.0)
    (10.0, 0.5, 10.0)
    """
    interval = default
    if unresponsive_seconds is not None and unresponsive_seconds > 0:
        interval = min(interval, unresponsive_seconds / _BEATS_PER_WINDOW)
    return max(interval, _SHORTEST_INTERVAL)


async def attempt_is_live(store: LightningStore, rollout_id: str, attempt_id: str) -> Tuple[bool, str]:
    """(whether ``attempt_id`` is still the rollout's live attempt, what the store says of it)."""
    live, reason, _ = await attempt_state(store, rollout_id, attempt_id)
    return live, reason


async def attempt_state(store: LightningStore, rollout_id: str, attempt_id: str) -> Tuple[bool, str, Optional[str]]:
    """(whether ``attempt_id`` is still the rollout's live attempt, what the store says of it, the
    attempt's own status in the store, None if the store does not have it).

    The rollout's latest attempt is read first: when it is this one, it says everything. Every
    attempt of the rollout is read only when it is not, for this one's own status (a superseded
    attempt may still say ``running``, which the runner puts back)."""
    latest = await store.get_latest_attempt(rollout_id)
    if latest is not None and latest.attempt_id == attempt_id:
        own = latest
    else:
        attempts = await store.query_attempts(rollout_id) if latest is not None else []
        own = next((a for a in attempts if a.attempt_id == attempt_id), None)
    if own is None or latest is None:
        return False, "the store has no such attempt", None
    if latest.attempt_id != attempt_id:
        return False, f"superseded by attempt {latest.attempt_id} ({latest.status})", own.status
    if own.status not in LIVE_ATTEMPT_STATUSES:
        return False, f"the store has marked it {own.status}", own.status
    return True, own.status, own.status


@dataclass
class _Beat:
    rollout_id: str
    attempt_id: str
    interval: float
    due: float


class AttemptHeartbeats:
    """Heartbeats of the attempts one runner process is running (see the module docstring)."""

    def __init__(self, store: LightningStore, default_interval: float) -> None:
        self.store = store
        self.default_interval = default_interval
        self._beats: Dict[Tuple[str, str], _Beat] = {}
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self._failing = False
        self.enabled = bool(getattr(store, "capabilities", {}).get("thread_safe", False))
        self._said_disabled = False

    def add(self, rollout: Any) -> None:
        """Beat the attempt of ``rollout`` (an ``AttemptedRollout``) from now until :meth:`remove`."""
        config = getattr(rollout, "config", None)
        interval = heartbeat_interval(getattr(config, "unresponsive_seconds", None), self.default_interval)
        key = (rollout.rollout_id, rollout.attempt.attempt_id)
        if not self.enabled:
            if getattr(config, "unresponsive_seconds", None) is not None and not self._said_disabled:
                self._said_disabled = True
                logger.warning(
                    "AgentOSRunner: the store (%s) is not thread-safe, so attempts get no heartbeats and the store may "
                    "mark a long clean rollout unresponsive (unresponsive_seconds=%s). Use "
                    "InMemoryLightningStore(thread_safe=True), or an agl store. (Logged once per worker.)",
                    type(self.store).__name__,
                    config.unresponsive_seconds,
                )
            return
        with self._lock:
            self._beats[key] = _Beat(key[0], key[1], interval, time.monotonic() + interval)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="agentos-attempt-heartbeats", daemon=True)
                self._thread.start()
        self._wake.set()

    def remove(self, rollout_id: str, attempt_id: str) -> None:
        """Stop beating the attempt (it ended, or is being concluded)."""
        with self._lock:
            self._beats.pop((rollout_id, attempt_id), None)

    def beating(self) -> Tuple[Tuple[str, str], ...]:
        """The attempts being beaten."""
        with self._lock:
            return tuple(self._beats)

    def stop(self) -> None:
        """Stop the thread (the runner's worker is torn down); attempts still listed are dropped."""
        with self._lock:
            self._beats.clear()
            thread, self._thread = self._thread, None
        self._stopping.set()
        self._wake.set()
        if thread is not None:
            thread.join(timeout=10)

    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        try:
            while not self._stopping.is_set():
                self._wake.clear()  # before reading the list: an attempt added from here on wakes the wait
                now = time.monotonic()
                with self._lock:
                    due = [b for b in self._beats.values() if b.due <= now]
                for beat in due:
                    loop.run_until_complete(self._beat(beat))
                    beat.due = time.monotonic() + beat.interval
                with self._lock:
                    following = min((b.due for b in self._beats.values()), default=None)
                self._wake.wait(timeout=None if following is None else max(0.0, following - time.monotonic()))
        finally:
            loop.close()

    async def _beat(self, beat: _Beat) -> None:
        try:
            live, why = await asyncio.wait_for(
                attempt_is_live(self.store, beat.rollout_id, beat.attempt_id), timeout=beat.interval
            )
            if not live:
                logger.warning(
                    "AgentOSRunner: rollout %s attempt %s is no longer the store's live attempt (%s); its heartbeats "
                    "stop and the runner will not write it again",
                    beat.rollout_id,
                    beat.attempt_id,
                    why,
                )
                self.remove(beat.rollout_id, beat.attempt_id)
                return
            await asyncio.wait_for(
                self.store.update_attempt(beat.rollout_id, beat.attempt_id, last_heartbeat_time=time.time()),
                timeout=beat.interval,
            )
            if self._failing:
                self._failing = False
                logger.warning("AgentOSRunner: attempt heartbeats reach the store again")
        except Exception as err:
            if not self._failing:
                self._failing = True
                logger.warning(
                    "AgentOSRunner: the heartbeat of rollout %s attempt %s did not reach the store (%s: %s); "
                    "retrying every %.2f s (logged once until heartbeats reach the store again)",
                    beat.rollout_id,
                    beat.attempt_id,
                    type(err).__name__,
                    err,
                    beat.interval,
                )
