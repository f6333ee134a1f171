"""An execution strategy that stops the runners before the store, so a finished Trainer run ends cleanly.

agentlightning 0.3's ``ClientServerExecutionStrategy`` (what ``Trainer(n_runners=..., port=...)``
builds) runs the algorithm next to the store's HTTP server and the runners in child processes.
When the algorithm returns, the strategy first stops the HTTP server and only then sets the stop
event the runners check between polls. A runner that polls in between cannot reach the store
(``dequeue_rollout failed with exception: Cannot connect to host ...``) and its heartbeat thread
logs tracebacks until the event reaches it: every clean run ends with errors a user reads as
failures.

:class:`RunnersFirstStrategy` reverses the order: when the algorithm returns (or fails) it sets
the stop event and waits, up to ``graceful_timeout`` seconds, for the runner processes to exit
while the store still answers; then the store stops as before. Everything else (the escalation
to SIGINT, SIGTERM and SIGKILL, the exit-code check) is the base class's.

>>> from agentlightning.contrib.runner.agentos.shutdown import RunnersFirstStrategy
>>> strategy = RunnersFirstStrategy(n_runners=2, server_port=4747)
>>> strategy.n_runners, strategy.role
(2, 'both')
>>> # agl.Trainer(algorithm=..., runner=..., strategy=strategy).fit(agent)
"""

from __future__ import annotations

import asyncio
import multiprocessing
from multiprocessing.context import BaseContext
from typing import Any, List

from agentlightning.execution.base import AlgorithmBundle, RunnerBundle
from agentlightning.execution.client_server import ClientServerExecutionStrategy
from agentlightning.execution.events import ExecutionEvent
from agentlightning.store.base import LightningStore


class RunnersFirstStrategy(ClientServerExecutionStrategy):
    """``ClientServerExecutionStrategy`` whose runner processes stop before the store does (see the module)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._runner_processes: List[multiprocessing.Process] = []

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
