"""A fair queue of blocking jobs per rollout: one rollout's slow checks never hold every worker.

The gateway judges each model response on a small thread pool (the event loop must stay free).
A plain pool serves jobs first come, first served: two slow checks of one rollout (a pathological
input the kernel needs seconds for) occupy both workers and every other rollout waits behind
them. :class:`FairQueue` gives each rollout at most ``per_rollout`` workers at a time and serves
the rollouts with waiting jobs in turn, so another rollout's check starts on the next free worker
(with the default ``per_rollout=1`` and two workers: at once, beside the slow one).

What it cannot do is stop a job that is running: with as many slow rollouts as workers, the next
rollout waits for the first of them to finish. The kernel's own deadline bounds that wait.

>>> import asyncio
>>> async def demo():
...     queue = FairQueue(workers=2)
...     results = await asyncio.gather(queue.run("r1", pow, 2, 10), queue.run("r2", pow, 3, 2))
...     queue.shutdown()
...     return results
>>> asyncio.run(demo())
[1024, 9]
"""

from __future__ import annotations

import asyncio
import inspect
from collections import OrderedDict, deque
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Deque, Dict, TypeVar

__all__ = ["FairQueue"]

T = TypeVar("T")


class FairQueue:
    """Runs blocking jobs on ``workers`` threads, at most ``per_rollout`` of one key at a time, keys served in turn.

    Used from one event loop (its bookkeeping is loop-thread only; worker threads report back with
    ``call_soon_threadsafe``).
    """

    def __init__(self, workers: int, *, per_rollout: int = 1, thread_name_prefix: str = "agentos-gateway") -> None:
        if workers < 1 or per_rollout < 1:
            raise ValueError(f"workers and per_rollout must be >= 1, got {workers} and {per_rollout}")
        self.workers = workers
        self.per_rollout = per_rollout
        self.executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix=thread_name_prefix)
        # Keys with waiting jobs, in the order they are next served; each key's turns first in, first out.
        self._waiting: "OrderedDict[str, Deque[asyncio.Future]]" = OrderedDict()
        self._running: Dict[str, int] = {}
        self._busy = 0

    async def run(self, key: str, function: Callable[..., T], *args: Any) -> T:
        """``function(*args)`` on a worker thread when ``key``'s turn comes (awaited on the loop if it is a coroutine
        function: its turn then ends when it returns)."""
        loop = asyncio.get_running_loop()
        turn: asyncio.Future = loop.create_future()
        self._waiting.setdefault(key, deque()).append(turn)
        self._dispatch()
        try:
            await turn
        except asyncio.CancelledError:
            if turn.done() and not turn.cancelled():
                self._release(key)  # granted, then cancelled before the job was submitted
            raise
        if inspect.iscoroutinefunction(function):  # work that awaits (another process): on the loop, no thread
            try:
                return await function(*args)
            finally:
                self._release(key)
        try:
            job = self.executor.submit(function, *args)
        except BaseException:
            self._release(key)
            raise
        # The worker is given back when the job ends, not when its caller stops waiting: a cancelled
        # caller's job still runs on its thread.
        job.add_done_callback(lambda _: loop.call_soon_threadsafe(self._release, key))
        return await asyncio.wrap_future(job)

    def _release(self, key: str) -> None:
        self._busy -= 1
        self._running[key] -= 1
        if not self._running[key]:
            del self._running[key]
        self._dispatch()

    def _dispatch(self) -> None:
        while self._busy < self.workers:
            key = next((k for k in self._waiting if self._running.get(k, 0) < self.per_rollout), None)
            if key is None:
                return
            turns = self._waiting[key]
            turn = turns.popleft()
            if turns:
                self._waiting.move_to_end(key)  # the other keys come first next time
            else:
                del self._waiting[key]
            if turn.cancelled():
                continue
            self._running[key] = self._running.get(key, 0) + 1
            self._busy += 1
            turn.set_result(None)

    def shutdown(self) -> None:
        self.executor.shutdown(wait=True)
