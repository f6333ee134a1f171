"""An execution strategy that starts the runners' work after the store and stops the runners
before it, so a Trainer run starts and ends cleanly.

agentlightning 0.3's ``ClientServerExecutionStrategy`` (what ``Trainer(n_runners=..., port=...)``
builds) runs the algorithm next to the store's HTTP server and the runners in child processes.
When the algorithm returns, the strategy first stops the HTTP server and only then sets the stop
event the runners check between polls. A runner that polls in between cannot reach the store
(``dequeue_rollout failed with exception: Cannot connect to host ...``) and its heartbeat thread
logs tracebacks until the event reaches it: every clean run ends with errors a user reads as
failures.

It starts them the same way round: the runner processes are spawned before the algorithm's side
starts the store's server, so on a loaded machine their heartbeats printed
``ConnectionRefusedError`` tracebacks for as long as the server took to start.
:class:`RunnersFirstStrategy` has each runner process wait until the store's port accepts a
connection (at most ``store_start_timeout`` seconds, then the runner goes on as before and its
own errors say what is wrong), and stops the runners first: when the algorithm returns (or
fails) it sets the stop event and waits, up to ``graceful_timeout`` seconds, for the runner
processes to exit while the store still answers; then the store stops as before. Everything else
(the escalation to SIGINT, SIGTERM and SIGKILL, the exit-code check) is the base class's.

>>> from agentlightning.contrib.runner.agentos.shutdown import RunnersFirstStrategy
>>> strategy = RunnersFirstStrategy(n_runners=2, server_port=4747)
>>> strategy.n_runners, strategy.role
(2, 'both')
>>> # agl.Trainer(algorithm=..., runner=..., strategy=strategy).fit(agent)
"""

from __future__ import annotations

import asyncio
import multiprocessing
import socket
import time
from multiprocessing.context import BaseContext
from typing import Any, List

from agentlightning.execution.base import AlgorithmBundle, RunnerBundle
from agentlightning.execution.client_server import ClientServerExecutionStrategy
from agentlightning.execution.events import ExecutionEvent
from agentlightning.store.base import LightningStore


class RunnersFirstStrategy(ClientServerExecutionStrategy):
    """``ClientServerExecutionStrategy`` whose runner processes stop before the store does (see the module)."""

    def __init__(self, *args: Any, store_start_timeout: float = 300.0, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._runner_processes: List[multiprocessing.Process] = []
        self.store_start_timeout = store_start_timeout

    async def _execute_runner(
        self, runner: RunnerBundle, worker_id: int, store: LightningStore, stop_evt: ExecutionEvent
    ) -> None:
        if self.managed_store:  # the runner is a client of the store's server: wait until it answers
            await asyncio.to_thread(self._wait_for_store, stop_evt)
        await super()._execute_runner(runner, worker_id, store, stop_evt)

    def _wait_for_store(self, stop_evt: ExecutionEvent) -> bool:
        """Whether the store's port accepted a connection before the stop event or the deadline."""
        deadline = time.monotonic() + self.store_start_timeout
        while not stop_evt.is_set() and time.monotonic() < deadline:
            try:
                with socket.create_connection((self.server_host, self.server_port), timeout=1.0):
                    return True
            except OSError:
                time.sleep(0.1)
        return False

    def _spawn_runners(
        self, runner: RunnerBundle, store: LightningStore, stop_evt: ExecutionEvent, *, ctx: BaseContext
    ) -> List[multiprocessing.Process]:
        self._runner_processes = super()._spawn_runners(runner, store, stop_evt, ctx=ctx)
        return self._runner_processes

    async def _execute_algorithm(
        self, algorithm: AlgorithmBundle, store: LightningStore, stop_evt: ExecutionEvent
    ) -> None:
        async def algorithm_then_runners(wrapper_store: LightningStore, event: ExecutionEvent) -> None:
            try:
                await algorithm(wrapper_store, event)
            finally:
                # The base class stops the store when this returns: the runners go first.
                event.set()
                await asyncio.to_thread(self._join_until_deadline, self._runner_processes, self.graceful_timeout)

        await super()._execute_algorithm(algorithm_then_runners, store, stop_evt)
