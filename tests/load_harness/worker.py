"""The body of one runner process: a governed ``AgentOSRunner`` on a store client, driven by signals.

Driver -> runner control is by signal (SIGUSR1: start, SIGTERM: stop after the current rollout),
runner -> driver by files (ready, done, mid-rollout marker, memory samples), so a SIGKILL never
leaves a shared queue or lock half-written.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import sqlite3
import threading
import time
import tracemalloc
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional

import psutil

import agentlightning as agl
from agentlightning.execution.events import ThreadingEvent
from agentlightning.store.client_server import LightningStoreClient

from agentlightning.contrib.kernel.agentos import GovernanceKernel, Policy, SQLPolicy
from agentlightning.contrib.runner.agentos import AgentOSRunner, governed_tool

from ..governed_calls import count_ran
from .memory import SamplingHook
from .world import DENY, init_world_db

#: Kernels of a runner process: SQLPolicy alone (the load), or with a policy that hangs or raises.
WORKER_KINDS = ("sql", "hang", "raise")

logger = logging.getLogger(__name__)


class HangingPolicy(Policy):
    """A policy that does not answer (a stuck policy service): waits ``hang_s`` seconds, then allows."""

    def __init__(self, hang_s: float = 60.0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.hang_s = float(hang_s)
        self._never = threading.Event()

    def evaluate(self, action: Any, context: Any) -> list:
        self._never.wait(self.hang_s)
        return []


class RaisingPolicy(Policy):
    """A policy whose backend is down: every evaluation raises."""

    def evaluate(self, action: Any, context: Any) -> list:
        raise ConnectionError("policy service unreachable")


def build_kernel(kind: str, recorder: Path, *, policy_timeout_s: float = 0.2, hang_s: float = 60.0) -> GovernanceKernel:
    """The kernel of one runner process: ``sql`` (the load), ``hang`` or ``raise`` (fault b)."""
    policies: List[Policy] = [SQLPolicy(deny=DENY, dialect="sqlite")]
    if kind == "hang":
        policies.append(HangingPolicy(hang_s))
    elif kind == "raise":
        policies.append(RaisingPolicy())
    elif kind != "sql":
        raise ValueError(f"unknown worker kind {kind!r}; use one of {WORKER_KINDS}")
    return GovernanceKernel(policies, recorder=recorder, policy_timeout_s=policy_timeout_s)


# ----------------------------------------------------------------------------- the worker process
@dataclass
class WorkerSpec:
    """Everything a runner process needs; plain data (it is pickled to the forkserver)."""

    name: str
    worker_id: int
    kind: str
    scenario_dir: str
    store_url: str
    driver_pid: int
    sample_every: int = 250
    poll_interval: float = 0.05
    policy_timeout_s: float = 0.2
    hang_s: float = 60.0
    max_lifetime_s: float = 3600.0
    trace_memory: bool = False

    @property
    def paths(self) -> Dict[str, Path]:
        root = Path(self.scenario_dir)
        return {
            "audit": root / "audit" / f"audit-{self.name}.db",
            "db": root / "db" / f"world-{self.name}.db",
            "log": root / "logs" / f"{self.name}.log",
            "ready": root / "state" / f"{self.name}.ready.json",
            "done": root / "state" / f"{self.name}.done.json",
            "samples": root / "samples" / f"{self.name}.jsonl",
            "markers": root / "markers",
        }


def _write_json_atomic(path: Path, data: Any) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, default=str))
    os.replace(tmp, path)


class LoadAgent(agl.LitAgent):
    """Runs each SQL statement of its task through a governed tool on the worker's database.

    A task with ``hold_first_attempt_s`` writes a marker file after its statements in its first
    attempt and then blocks, so that a SIGKILL lands in the middle of that rollout.
    """

    def __init__(self, db_path: Path, marker_dir: Path, worker_name: str) -> None:
        super().__init__()
        self.db_path = Path(db_path)
        self.marker_dir = Path(marker_dir)
        self.worker_name = worker_name
        self._conn: Optional[sqlite3.Connection] = None

    def execute_sql(self, query: str) -> list:
        if self._conn is None:
            self._conn = sqlite3.connect(self.db_path, isolation_level=None)  # autocommit: a statement that ran, ran
        return self._conn.execute(query).fetchall()

    def rollout(self, task: Dict[str, Any], resources: Any, rollout: Any) -> float:
        ran = count_ran(governed_tool("database_query", self.execute_sql), task["queries"])
        hold = task.get("hold_first_attempt_s")
        attempt = getattr(rollout, "attempt", None)
        if hold and attempt is not None and attempt.sequence_id == 1:
            self.marker_dir.mkdir(parents=True, exist_ok=True)
            _write_json_atomic(
                self.marker_dir / f"mid-rollout-{rollout.rollout_id}.json",
                {
                    "pid": os.getpid(),
                    "worker": self.worker_name,
                    "rollout_id": rollout.rollout_id,
                    "attempt_id": attempt.attempt_id,
                },
            )
            threading.Event().wait(hold)  # the driver kills this process now
        return ran / len(task["queries"])


def _watch_driver(driver_pid: int, max_lifetime_s: float) -> None:
    """Exit if the driver is gone or the lifetime is over: never leave an orphan polling a port."""
    deadline = time.monotonic() + max_lifetime_s
    while True:
        time.sleep(0.5)
        if not psutil.pid_exists(driver_pid) or time.monotonic() > deadline:
            os._exit(70)


def worker_main(spec: WorkerSpec) -> None:
    """Body of one runner process (forked from the forkserver)."""
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1, signal.SIGTERM})  # taken synchronously until started
    paths = spec.paths
    for key in ("audit", "db", "log", "ready", "samples"):
        paths[key].parent.mkdir(parents=True, exist_ok=True)
    log = open(paths["log"], "a", buffering=1)
    os.dup2(log.fileno(), 1)
    os.dup2(log.fileno(), 2)
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s", force=True)
    threading.Thread(
        target=_watch_driver, args=(spec.driver_pid, spec.max_lifetime_s), daemon=True, name="driver-watch"
    ).start()

    init_world_db(paths["db"])
    kernel = build_kernel(spec.kind, paths["audit"], policy_timeout_s=spec.policy_timeout_s, hang_s=spec.hang_s)
    runner = AgentOSRunner(
        kernel,
        poll_interval=spec.poll_interval,
        interval_jitter=min(0.02, spec.poll_interval / 2),
        log_violations=False,
    )
    agent = LoadAgent(paths["db"], paths["markers"], spec.name)
    hook = SamplingHook(paths["samples"], spec.sample_every, kernel, trace_memory=spec.trace_memory)
    store = LightningStoreClient(spec.store_url)
    runner.init(agent, hooks=[hook])
    runner.init_worker(spec.worker_id, store)
    _write_json_atomic(paths["ready"], {"pid": os.getpid(), "worker_id": runner.get_worker_id()})

    # Wait for SIGUSR1 (start) or SIGTERM (stop before starting).
    received = None
    while received is None:
        info = signal.sigtimedwait({signal.SIGUSR1, signal.SIGTERM}, 1.0)
        received = info.si_signo if info is not None else None
    stop = ThreadingEvent()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGUSR1, signal.SIGTERM})
    if received == signal.SIGTERM:
        stop.set()

    started = time.monotonic()
    error = None
    if spec.trace_memory:
        tracemalloc.start(1)
    hook.sample("start")
    try:
        if not stop.is_set():
            asyncio.run(_iterate(runner, store, stop))
    except BaseException as err:  # noqa: BLE001 - reported in the done file
        error = f"{type(err).__name__}: {err}"
        logger.exception("runner.iter raised")
    finally:
        hook.sample("end")
        runner.teardown_worker(spec.worker_id)
        runner.teardown()
        kernel.close()
        _write_json_atomic(
            paths["done"],
            {
                "pid": os.getpid(),
                "rollouts": hook.rollouts,
                "seconds": time.monotonic() - started,
                "stats": runner.get_stats(),
                "error": error,
                "threads_at_exit": threading.active_count(),
            },
        )
    # A normal interpreter exit from here: whatever still runs (e.g. a hung policy thread) shows.


async def _iterate(runner: AgentOSRunner, store: LightningStoreClient, stop: ThreadingEvent) -> None:
    try:
        await runner.iter(event=stop)
    finally:
        await store.close()
