"""Load and faults: governed runner processes against one real `agl store` server, on loopback.

    python contrib/recipes/agentos/load_and_faults.py            # 4 runner processes x 3000 rollouts, then the faults
    python contrib/recipes/agentos/load_and_faults.py --quick    # ~200 rollouts and small faults (about a minute)

What runs, top to bottom (everything on 127.0.0.1, bounded in time):

1. ``agl store`` (agentlightning 0.3's in-memory store server) as a subprocess on a free port.
2. LOAD: ``--workers`` runner processes, each an ``AgentOSRunner`` whose kernel is
   ``GovernanceKernel([SQLPolicy(deny=["DROP", "DELETE", "TRUNCATE"])], recorder=audit-<worker>.db)``
   (one Agent OS FlightRecorder file per process), connected to the server with a
   ``LightningStoreClient`` and dequeuing through the runner's normal ``iter()`` loop. The driver
   enqueues ``--rollouts`` tasks; ``--violating-fraction`` of them (exactly, positions shuffled by
   ``--seed``) contain one DROP or DELETE. Every task runs its SQL through a governed tool against
   the worker's own SQLite file. Ground truth is the enqueued task list; the run is checked against
   it: one violation span per violating rollout and none elsewhere (raw span attributes and
   ``governance_stats``), store totals, one blocked FlightRecorder record per violating task, every
   recorder file's hash chain, every database table and row, one executed INSERT per task. Each
   worker samples its RSS every ``--sample-every`` rollouts.
3. FAULTS, each with its own runner processes on the same server:
   a. ``sigkill``: a task writes a marker file in the middle of its first attempt and blocks; the
      driver SIGKILLs that runner process. The attempt's rollout has
      ``RolloutConfig(unresponsive_seconds=..., max_attempts=2, retry_condition=["unresponsive"])``.
   b. ``policies``: ``[SQLPolicy, HangingPolicy]`` with ``policy_timeout_s`` and
      ``[SQLPolicy, RaisingPolicy]``: every action must be blocked (fail closed), nothing executed.
   c. ``restart``: the ``agl store`` process is terminated mid-run and started again on the same
      port; then the FlightRecorder files are re-imported into the new store with the adapter.

Runner processes are forked from a ``multiprocessing`` forkserver that has imported agentlightning
once (``import agentlightning`` costs about 10 s of CPU per process on a 2-core machine), the way
agentlightning's own ``Trainer`` forks its runner processes. Driver -> worker control is by signal
(SIGUSR1: start, SIGTERM: stop after the current rollout), worker -> driver by files (ready, done,
mid-rollout marker, RSS samples), so a SIGKILL never leaves a shared queue or lock half-written.

Prints progress and a final report; ``--json PATH`` writes every figure.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import ctypes
import ctypes.util
import datetime
import json
import logging
import multiprocessing
import os
import platform
import random
import re
import shutil
import signal
import socket
import sqlite3
import statistics
import subprocess
import sys
import threading
import time
import tracemalloc
import urllib.request
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence

# Before agentlightning is imported (also in the forkserver, which inherits this environment).
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # litellm must not reach for the network
os.environ.setdefault("AGENTOPS_LOGGING_TO_FILE", "False")
os.environ.setdefault("AGENTOPS_LOG_LEVEL", "ERROR")

import psutil  # noqa: E402

import agentlightning as agl  # noqa: E402
from agentlightning.execution.events import ThreadingEvent  # noqa: E402
from agentlightning.store.client_server import LightningStoreClient  # noqa: E402

from agentlightning.contrib.adapter.agentos import FlightRecorderAdapter, adapters_for_directory, is_audit_span  # noqa: E402
from agentlightning.contrib.kernel.agentos import (  # noqa: E402
    GovernanceKernel,
    Policy,
    SQLPolicy,
    governance_stats,
    semconv,
)
from agentlightning.contrib.runner.agentos import ActionBlockedError, AgentOSRunner, governed_tool  # noqa: E402

DENY = ["DROP", "DELETE", "TRUNCATE"]
#: Destructive statements: exactly one of these in each violating task.
VIOLATING_SQL = [
    "DROP TABLE users",
    "DELETE FROM orders WHERE id > 0",
    "DELETE/**/FROM users",
    "DROP/**/TABLE orders",
]
#: Harmless reads, two of them look destructive to a substring filter.
READ_SQL = [
    "SELECT COUNT(*) FROM users",
    "SELECT name FROM users WHERE id = {k}",
    "SELECT 'DROP TABLE users'",
    "SELECT SUM(total) FROM orders WHERE user_id = {k}",
]
N_USERS, N_ORDERS = 50, 200
WORKER_KINDS = ("sql", "hang", "raise")
FINISHED = ("succeeded", "failed")

logger = logging.getLogger("load_and_faults")


def _say(message: str) -> None:
    print(message, flush=True)


# ----------------------------------------------------------------------------- tasks and world
def make_tasks(n: int, violating_fraction: float, *, seed: int = 0, start_index: int = 0) -> List[Dict[str, Any]]:
    """``n`` tasks, exactly ``round(n * violating_fraction)`` of them violating (positions shuffled).

    A task is a short list of SQL statements: a read, one ``INSERT INTO events`` carrying the
    task's index (so executions can be counted per task), sometimes an UPDATE of a column named
    ``dropped_at``, and, in violating tasks, one DROP or DELETE before the INSERT.
    """
    if n < 0 or not 0.0 <= violating_fraction <= 1.0:
        raise ValueError("n must be >= 0 and violating_fraction in [0, 1]")
    rng = random.Random(seed)
    n_violating = round(n * violating_fraction)
    violating = set(rng.sample(range(n), n_violating))
    tasks = []
    for i in range(n):
        index = start_index + i
        k = 1 + index % N_USERS
        queries = [READ_SQL[index % len(READ_SQL)].format(k=k)]
        if i in violating:
            queries.append(VIOLATING_SQL[index % len(VIOLATING_SQL)])
        queries.append(f"INSERT INTO events (task_index) VALUES ({index})")
        if index % 5 == 0:
            queries.append(f"UPDATE users SET dropped_at = 'task {index}' WHERE id = {k}")
        tasks.append({"task_index": index, "queries": queries, "violating": int(i in violating)})
    return tasks


def init_world_db(path: Path) -> None:
    """A worker's own SQLite database: users, orders (rows a DROP/DELETE would destroy) and events."""
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path)
    try:
        conn.executescript(
            """
            CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT NOT NULL, dropped_at TEXT);
            CREATE TABLE orders (id INTEGER PRIMARY KEY, user_id INTEGER REFERENCES users(id), total REAL);
            CREATE TABLE events (id INTEGER PRIMARY KEY, task_index INTEGER NOT NULL);
            """
        )
        conn.executemany("INSERT INTO users (name) VALUES (?)", [(f"user{i}",) for i in range(N_USERS)])
        conn.executemany("INSERT INTO orders (user_id, total) VALUES (?, ?)", [(1 + i % N_USERS, 10.0 * i) for i in range(N_ORDERS)])
        conn.commit()
    finally:
        conn.close()


def world_state(paths: Iterable[Path]) -> Dict[str, Any]:
    """Tables and row counts of every worker database, and how often each task's INSERT ran."""
    per_db: Dict[str, Dict[str, int]] = {}
    executions: Counter = Counter()
    for path in sorted(paths):
        conn = sqlite3.connect(path)
        try:
            tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table' ORDER BY name")]
            per_db[path.name] = {t: conn.execute(f'SELECT COUNT(*) FROM "{t}"').fetchone()[0] for t in tables}
            if "events" in tables:
                executions.update(r[0] for r in conn.execute("SELECT task_index FROM events"))
        finally:
            conn.close()
    intact = all(c.get("users") == N_USERS and c.get("orders") == N_ORDERS for c in per_db.values())
    return {"databases": per_db, "all_intact": intact and bool(per_db), "insert_executions": dict(executions)}


# ----------------------------------------------------------------------------- the agl store server
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class StoreServer:
    """A real ``agl store`` subprocess (in-memory backend) on 127.0.0.1:``port``."""

    def __init__(self, port: int, log_path: Path) -> None:
        self.port = port
        self.url = f"http://127.0.0.1:{port}"
        self.log_path = Path(log_path)
        self.process: Optional[subprocess.Popen] = None
        self._starting_since: Optional[float] = None

    def command(self) -> List[str]:
        agl_bin = Path(sys.executable).with_name("agl")
        if agl_bin.exists():
            return [str(agl_bin), "store", "--host", "127.0.0.1", "--port", str(self.port), "--log-level", "WARNING"]
        return [sys.executable, "-c", "from agentlightning.cli import main; main()", "store", "--host", "127.0.0.1",
                "--port", str(self.port), "--log-level", "WARNING"]

    def launch(self) -> None:
        """Start the process (returns at once; :meth:`wait_healthy` waits for it)."""
        if self.process is not None and self.process.poll() is None:
            raise RuntimeError("agl store is already running")
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "a") as log:
            log.write(f"\n--- agl store start {datetime.datetime.now().isoformat()} ---\n")
            log.flush()
            self.process = subprocess.Popen(self.command(), stdout=log, stderr=subprocess.STDOUT, env=os.environ.copy(),
                                            start_new_session=True)
        self._starting_since = time.monotonic()

    def healthy(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.url}/v1/agl/health", timeout=1) as response:
                return response.status == 200
        except OSError:
            return False

    def wait_healthy(self, timeout: float = 180.0) -> float:
        """Seconds from :meth:`launch` until ``/v1/agl/health`` answers."""
        assert self.process is not None and self._starting_since is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"agl store exited with {self.process.returncode}: {self.log_path.read_text()[-3000:]}")
            if self.healthy():
                return time.monotonic() - self._starting_since
            time.sleep(0.1)  # the server process is still importing agentlightning
        self.close()
        raise TimeoutError(f"agl store did not answer on {self.url} within {timeout}s")

    def start(self, timeout: float = 180.0) -> float:
        self.launch()
        return self.wait_healthy(timeout)

    def stop(self, timeout: float = 30.0) -> Dict[str, Any]:
        """Terminate the server (SIGTERM) and wait for it; SIGKILL after ``timeout``."""
        if self.process is None or self.process.poll() is not None:
            return {"returncode": None if self.process is None else self.process.returncode, "stop_s": 0.0, "killed": False}
        started = time.monotonic()
        self.process.terminate()
        killed = False
        try:
            self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            killed = True
            self._kill_group()
            self.process.wait(timeout=10)
        return {"returncode": self.process.returncode, "stop_s": time.monotonic() - started, "killed": killed}

    def log_since_last_start(self) -> str:
        text = self.log_path.read_text(errors="replace") if self.log_path.exists() else ""
        return text.rsplit("--- agl store start", 1)[-1]

    def _kill_group(self) -> None:
        if self.process is None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signal.SIGKILL)

    def close(self) -> None:
        """Make sure nothing is left running (for finalizers)."""
        if self.process is not None and self.process.poll() is None:
            self.stop(timeout=10)
        self._kill_group()


# ----------------------------------------------------------------------------- policies that fail
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
        run = governed_tool("database_query", self.execute_sql)
        ran = 0
        for query in task["queries"]:
            try:
                run(query)
                ran += 1
            except ActionBlockedError:
                pass
        hold = task.get("hold_first_attempt_s")
        attempt = getattr(rollout, "attempt", None)
        if hold and attempt is not None and attempt.sequence_id == 1:
            self.marker_dir.mkdir(parents=True, exist_ok=True)
            _write_json_atomic(
                self.marker_dir / f"mid-rollout-{rollout.rollout_id}.json",
                {"pid": os.getpid(), "worker": self.worker_name, "rollout_id": rollout.rollout_id, "attempt_id": attempt.attempt_id},
            )
            threading.Event().wait(hold)  # the driver kills this process now
        return ran / len(task["queries"])


class _MallInfo2(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in
                ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")]


def _native_memory() -> Dict[str, Optional[int]]:
    """What lives outside Python's allocator: SQLite's own allocations (page caches of every
    connection in this process) and glibc's heap (``mallinfo2``: in use, free, mmapped)."""
    out: Dict[str, Optional[int]] = {"sqlite_bytes": None, "malloc_in_use": None, "malloc_free": None, "malloc_mmap": None}
    with contextlib.suppress(Exception):
        lib = ctypes.CDLL(ctypes.util.find_library("sqlite3"))
        lib.sqlite3_memory_used.restype = ctypes.c_int64
        out["sqlite_bytes"] = int(lib.sqlite3_memory_used())
    with contextlib.suppress(Exception):
        libc = ctypes.CDLL("libc.so.6")
        libc.mallinfo2.restype = _MallInfo2
        info = libc.mallinfo2()
        out.update(malloc_in_use=int(info.uordblks), malloc_free=int(info.fordblks), malloc_mmap=int(info.hblkhd))
    return out


def _trace_data_bytes(trace_data: Dict[str, Dict[str, Any]]) -> int:
    """Approximate bytes held by Agent OS FlightRecorder's ``_trace_data`` (dict, entries, strings)."""
    total = sys.getsizeof(trace_data)
    for key, entry in trace_data.items():
        total += sys.getsizeof(key) + sys.getsizeof(entry) + sum(sys.getsizeof(v) for v in entry.values())
    return total


class SamplingHook(agl.Hook):
    """Samples the worker's memory every ``every`` rollouts into a JSON Lines file."""

    def __init__(self, path: Path, every: int, kernel: GovernanceKernel, *, trace_memory: bool = False) -> None:
        super().__init__()
        self.path = Path(path)
        self.every = max(1, int(every))
        self.kernel = kernel
        self.rollouts = 0
        self.started = time.monotonic()
        self.process = psutil.Process()
        self.trace_memory = trace_memory
        self._baseline: Any = None

    def sample(self, label: str = "") -> Dict[str, Any]:
        memory = self.process.memory_full_info()
        recorder = self.kernel.recorder
        trace_data = getattr(recorder, "_trace_data", {}) if recorder is not None else {}
        row = {
            "rollouts": self.rollouts,
            "t": round(time.monotonic() - self.started, 3),
            "rss": memory.rss,
            "uss": memory.uss,
            "threads": threading.active_count(),
            "trace_data_entries": len(trace_data),
            "trace_data_bytes": _trace_data_bytes(trace_data),
            "python_blocks": sys.getallocatedblocks(),
            **_native_memory(),
            "label": label,
        }
        if self.trace_memory and tracemalloc.is_tracing():
            row["traced_bytes"] = tracemalloc.get_traced_memory()[0]
            if self._baseline is None:
                if self.rollouts >= self.every:  # after warm-up: the reference for "what grew"
                    self._baseline = tracemalloc.take_snapshot()
            else:
                diff = tracemalloc.take_snapshot().compare_to(self._baseline, "lineno")
                row["grown_since_baseline"] = [
                    [str(d.traceback[0]), d.size_diff, d.count_diff] for d in sorted(diff, key=lambda d: -d.size_diff)[:8]
                ]
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "a") as f:
            f.write(json.dumps(row) + "\n")
        return row

    async def on_rollout_end(self, *, agent: Any, runner: Any, rollout: Any, spans: Any) -> None:
        self.rollouts += 1
        if self.rollouts % self.every == 0:
            self.sample()


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
    threading.Thread(target=_watch_driver, args=(spec.driver_pid, spec.max_lifetime_s), daemon=True, name="driver-watch").start()

    init_world_db(paths["db"])
    kernel = build_kernel(spec.kind, paths["audit"], policy_timeout_s=spec.policy_timeout_s, hang_s=spec.hang_s)
    runner = AgentOSRunner(kernel, poll_interval=spec.poll_interval, interval_jitter=min(0.02, spec.poll_interval / 2),
                           log_violations=False)
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
        _write_json_atomic(paths["done"], {
            "pid": os.getpid(), "rollouts": hook.rollouts, "seconds": time.monotonic() - started,
            "stats": runner.get_stats(), "error": error, "threads_at_exit": threading.active_count(),
        })
    # A normal interpreter exit from here: whatever still runs (e.g. a hung policy thread) shows.


async def _iterate(runner: AgentOSRunner, store: LightningStoreClient, stop: ThreadingEvent) -> None:
    try:
        await runner.iter(event=stop)
    finally:
        await store.close()


# ----------------------------------------------------------------------------- driver-side workers
def worker_context() -> Any:
    """The forkserver context whose server has imported agentlightning (and this module) once."""
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload([
        "agentlightning",
        "agentlightning.contrib.runner.agentos",
        "agentlightning.contrib.adapter.agentos",
        "agentops.instrumentation.providers.openai.instrumentor",  # what each runner's tracer imports at init
        "openai.resources",
        "sqlglot",
        "psutil",
        __name__,
    ])
    return ctx


def warm_up_forkserver() -> None:
    """Start the forkserver now (its import of agentlightning overlaps with the store's start)."""
    from multiprocessing import forkserver

    worker_context()
    forkserver.ensure_running()


def _wait_for(predicate: Callable[[], Any], timeout: float, what: str, interval: float = 0.05) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)


class WorkerPool:
    """Runner processes of one driver; :meth:`close` kills whatever is still alive."""

    def __init__(self, ctx: Any = None) -> None:
        self.ctx = ctx or worker_context()
        self.workers: Dict[str, Any] = {}
        self.specs: Dict[str, WorkerSpec] = {}

    def start(self, specs: Sequence[WorkerSpec], *, ready_timeout: float = 180.0) -> Dict[str, float]:
        """Fork the workers and wait until each is connected and waiting for SIGUSR1."""
        t0 = time.monotonic()
        for spec in specs:
            if spec.name in self.workers:
                raise ValueError(f"worker {spec.name} already started")
            for key in ("ready", "done"):
                spec.paths[key].unlink(missing_ok=True)
            process = self.ctx.Process(target=worker_main, args=(spec,), name=f"runner-{spec.name}", daemon=True)
            process.start()
            self.workers[spec.name] = process
            self.specs[spec.name] = spec
        ready = {}
        for spec in specs:
            process = self.workers[spec.name]

            def is_ready(spec: WorkerSpec = spec, process: Any = process) -> bool:
                if process.exitcode is not None:
                    log = spec.paths["log"].read_text()[-3000:] if spec.paths["log"].exists() else ""
                    raise RuntimeError(f"worker {spec.name} exited with {process.exitcode} before it was ready: {log}")
                return spec.paths["ready"].exists()

            _wait_for(is_ready, ready_timeout, f"worker {spec.name} to be ready")
            ready[spec.name] = time.monotonic() - t0
        return ready

    def pid(self, name: str) -> int:
        return self.workers[name].pid

    def release(self, names: Optional[Iterable[str]] = None) -> None:
        for name in names if names is not None else list(self.workers):
            os.kill(self.pid(name), signal.SIGUSR1)

    def kill(self, name: str) -> None:
        os.kill(self.pid(name), signal.SIGKILL)
        self.workers[name].join(timeout=30)

    def stop(self, names: Optional[Iterable[str]] = None, *, timeout: float = 60.0) -> Dict[str, Dict[str, Any]]:
        """SIGTERM (stop after the current rollout), wait up to ``timeout``; SIGKILL whoever is left."""
        names = list(names if names is not None else self.workers)
        t0 = time.monotonic()
        for name in names:
            if self.workers[name].exitcode is None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(self.pid(name), signal.SIGTERM)
        result = {}
        for name in names:
            process = self.workers[name]
            process.join(timeout=max(0.0, timeout - (time.monotonic() - t0)))
            exited = process.exitcode is not None
            if not exited:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(process.pid, signal.SIGKILL)
                process.join(timeout=30)
            done_path = self.specs[name].paths["done"]
            result[name] = {
                "exited_after_sigterm": exited,
                "exit_s": round(time.monotonic() - t0, 2) if exited else None,
                "exitcode": process.exitcode,
                "done": json.loads(done_path.read_text()) if done_path.exists() else None,
            }
        return result

    def close(self) -> None:
        for process in self.workers.values():
            if process.exitcode is None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(process.pid, signal.SIGKILL)
                process.join(timeout=30)


def make_specs(scenario_dir: Path, store_url: str, names: Sequence[str], *, kind: str = "sql",
               first_worker_id: int = 0, **options: Any) -> List[WorkerSpec]:
    return [
        WorkerSpec(name=name, worker_id=first_worker_id + i, kind=kind, scenario_dir=str(scenario_dir), store_url=store_url,
                   driver_pid=os.getpid(), **options)
        for i, name in enumerate(names)
    ]


RUN_DIR_MARKER = ".load_and_faults_run"


def fresh_dir(path: Path) -> Path:
    """An empty directory at ``path`` (a previous one is deleted)."""
    if path.exists():
        shutil.rmtree(path)
    path.mkdir(parents=True)
    return path


def fresh_run_dir(path: Path) -> Path:
    """Like :func:`fresh_dir`, but never deletes a non-empty directory this script did not create."""
    path = Path(path)
    if path.exists() and any(path.iterdir()) and not (path / RUN_DIR_MARKER).exists():
        raise SystemExit(f"--run-dir {str(path)!r} is not empty and was not made by this script; refusing to delete it")
    fresh_dir(path)
    (path / RUN_DIR_MARKER).write_text("made by load_and_faults.py; deleted and rebuilt on every run\n")
    return path


# ----------------------------------------------------------------------------- store queries
async def add_resources(store: LightningStoreClient) -> None:
    await store.add_resources({"prompt": agl.PromptTemplate(template="{task_index}", engine="f-string")})


async def enqueue_tasks(store: LightningStoreClient, tasks: Sequence[Dict[str, Any]], *, config: Optional[agl.RolloutConfig] = None,
                        chunk: int = 500) -> List[str]:
    ids: List[str] = []
    for start in range(0, len(tasks), chunk):
        requests = [agl.EnqueueRolloutRequest(input=task, mode="train", config=config) for task in tasks[start:start + chunk]]
        ids += [r.rollout_id for r in await store.enqueue_many_rollouts(requests)]
    return ids


async def count_finished(store: LightningStoreClient, ids: Sequence[str]) -> int:
    """How many of ``ids`` are succeeded or failed (exact; but agentlightning 0.3's in-memory store
    checks ``rollout_id_in`` by list membership per rollout, so with thousands of ids one call
    costs the server tens of milliseconds: poll with :func:`finished_in_store` instead)."""
    if not ids:
        return 0
    result = await store.query_rollouts(rollout_id_in=list(ids), status_in=list(FINISHED), limit=1)
    return result.total


async def finished_in_store(store: LightningStoreClient) -> int:
    """Succeeded or failed rollouts in the whole store (cheap: a status filter)."""
    return (await store.query_rollouts(status_in=list(FINISHED), limit=1)).total


async def wait_finished(store: LightningStoreClient, ids: Sequence[str], *, baseline: int, timeout: float, label: str,
                        progress_every: float = 5.0, poll: float = 0.25, on_poll: Optional[Callable[[], Any]] = None) -> float:
    """Poll until every rollout in ``ids`` is succeeded or failed; returns the monotonic finish time.

    ``baseline`` is :func:`finished_in_store` before ``ids`` were enqueued: nothing else runs
    meanwhile, so finished rollouts beyond it are ours; the end is confirmed with the exact count.
    """
    t0 = last = time.monotonic()
    while True:
        done = await finished_in_store(store) - baseline
        now = time.monotonic()
        if on_poll is not None:
            await on_poll()
        if done >= len(ids):
            done = await count_finished(store, ids)
            if done >= len(ids):
                return now
        if now - last >= progress_every:
            _say(f"[{label}] {done}/{len(ids)} rollouts finished, {done / (now - t0):.1f}/s")
            last = now
        if now - t0 > timeout:
            raise TimeoutError(f"[{label}] only {done}/{len(ids)} rollouts finished after {timeout}s")
        await asyncio.sleep(poll)


def _span_row(span: Any) -> Dict[str, Any]:
    a = span.attributes or {}
    return {
        "kind": a.get(semconv.AGENTOS_KIND),
        "is_check": semconv.is_check_span(span),
        "is_violation": semconv.is_violation_span(span),
        "attempt_id": span.attempt_id,
        "span_id": span.span_id,
        "verdict": a.get(semconv.AGENTOS_VERDICT),
        "policy": a.get(semconv.AGENTOS_POLICY_NAME),
        "severity": a.get(semconv.AGENTOS_SEVERITY),
        "description": a.get(semconv.AGENTOS_DESCRIPTION),
        "decision_id": a.get(semconv.AGENTOS_DECISION_ID),
        "index": a.get(semconv.AGENTOS_VIOLATION_INDEX),
        "audit": is_audit_span(span),
        "audit_blocked": a.get("agent_os.blocked"),
    }


async def collect_rollouts(store: LightningStoreClient, ids: Sequence[str], *, concurrency: int = 8) -> Dict[str, Dict[str, Any]]:
    """Each rollout's status, latest attempt and the spans of its latest attempt, from the store."""
    out: Dict[str, Dict[str, Any]] = {}
    for start in range(0, len(ids), 500):
        for rollout in await store.query_rollouts(rollout_id_in=list(ids[start:start + 500])):
            attempt = getattr(rollout, "attempt", None)
            out[rollout.rollout_id] = {
                "status": rollout.status,
                "attempt": None if attempt is None else {
                    "attempt_id": attempt.attempt_id, "sequence_id": attempt.sequence_id, "worker_id": attempt.worker_id,
                    "status": attempt.status, "start_time": attempt.start_time, "end_time": attempt.end_time,
                    "metadata": attempt.metadata,
                },
            }
    semaphore = asyncio.Semaphore(concurrency)

    async def spans_of(rollout_id: str) -> None:
        async with semaphore:
            out[rollout_id]["spans"] = [_span_row(s) for s in await store.query_spans(rollout_id, "latest")]

    await asyncio.gather(*(spans_of(rid) for rid in out))
    return out


def expect_sql_only(task: Dict[str, Any]) -> Dict[str, int]:
    """What the SQL-only kernel must record for ``task``: one check per statement, one blocked
    statement and one violation if the task is violating."""
    return {"checks": len(task["queries"]), "violations": task["violating"], "blocked": task["violating"]}


def verify_rollouts(tasks_by_id: Dict[str, Dict[str, Any]], collected: Dict[str, Dict[str, Any]],
                    expect: Callable[[Dict[str, Any]], Dict[str, int]] = expect_sql_only) -> Dict[str, Any]:
    """Compare the spans of each rollout's latest attempt with the ground truth (raw span attributes)."""
    problems: Dict[str, List[str]] = {k: [] for k in (
        "missing", "not_succeeded", "violating_without_exactly_one_violation_span", "clean_with_violation_span",
        "wrong_violation_count", "wrong_check_count", "wrong_blocked_count", "span_in_wrong_attempt", "duplicate_violation_span")}
    violation_spans = check_spans = blocked_checks = 0
    per_worker: Counter = Counter()
    policies: Counter = Counter()
    for rollout_id, task in tasks_by_id.items():
        info = collected.get(rollout_id)
        if info is None or info.get("attempt") is None:
            problems["missing"].append(rollout_id)
            continue
        if info["status"] != "succeeded":
            problems["not_succeeded"].append(rollout_id)
        per_worker[info["attempt"]["worker_id"]] += 1
        spans = info.get("spans", [])
        checks = [s for s in spans if s["is_check"]]
        violations = [s for s in spans if s["is_violation"]]
        raw_violations = [s for s in spans if s["kind"] == "violation"]
        assert len(raw_violations) == len(violations)  # semconv and the raw attribute agree
        expected = expect(task)
        violation_spans += len(violations)
        check_spans += len(checks)
        blocked = sum(s["verdict"] == "blocked" for s in checks)
        blocked_checks += blocked
        policies.update(s["policy"] for s in violations)
        if task.get("violating") and expected["violations"] == 1 and len(violations) != 1:
            problems["violating_without_exactly_one_violation_span"].append(rollout_id)
        if not task.get("violating") and expected["violations"] == 0 and violations:
            problems["clean_with_violation_span"].append(rollout_id)
        if len(violations) != expected["violations"]:
            problems["wrong_violation_count"].append(rollout_id)
        if len(checks) != expected["checks"]:
            problems["wrong_check_count"].append(rollout_id)
        if blocked != expected["blocked"]:
            problems["wrong_blocked_count"].append(rollout_id)
        if any(s["attempt_id"] != info["attempt"]["attempt_id"] for s in checks + violations):
            problems["span_in_wrong_attempt"].append(rollout_id)
        keys = [(s["decision_id"], s["index"]) for s in violations]
        if len(keys) != len(set(keys)):
            problems["duplicate_violation_span"].append(rollout_id)
    expected_totals = [expect(t) for t in tasks_by_id.values()]
    return {
        "rollouts": len(tasks_by_id),
        "expected_violations": sum(e["violations"] for e in expected_totals),
        "expected_checks": sum(e["checks"] for e in expected_totals),
        "expected_blocked": sum(e["blocked"] for e in expected_totals),
        "violating_rollouts": sum(bool(t.get("violating")) for t in tasks_by_id.values()),
        "violation_spans": violation_spans,
        "check_spans": check_spans,
        "blocked_check_spans": blocked_checks,
        "violations_by_policy": dict(policies),
        "rollouts_by_worker": dict(sorted(per_worker.items())),
        "problems": {k: len(v) for k, v in problems.items()},
        "problem_examples": {k: v[:5] for k, v in problems.items() if v},
        "exactly_once": not any(problems.values()),
    }


def audit_summary(audit_dir: Path, pattern: str = "audit-*.db") -> Dict[str, Any]:
    """Every FlightRecorder file in ``audit_dir``: hash-chain check, records, blocked records per rollout."""
    files: Dict[str, Any] = {}
    blocked_by_rollout: Counter = Counter()
    blocked_by_attempt: Counter = Counter()
    for adapter in adapters_for_directory(audit_dir, pattern=pattern):
        integrity = adapter.verify_integrity()
        records = adapter.records()
        summary = adapter.get_violation_summary()
        for record in records:
            if record.blocked:
                blocked_by_rollout[record.rollout_id] += 1
                blocked_by_attempt[(record.rollout_id, record.attempt_id)] += 1
        files[adapter.path.name] = {
            "valid": bool(integrity.get("valid")),
            "records": len(records),
            "blocked": sum(r.blocked for r in records),
            "pending": sum(r.pending for r in records),
            "verdicts": dict(Counter(r.verdict for r in records)),
            "policies_violated": summary["policies_violated"],
        }
        adapter.close()
    return {
        "files": files,
        "all_valid": all(f["valid"] for f in files.values()) and bool(files),
        "records": sum(f["records"] for f in files.values()),
        "blocked": sum(f["blocked"] for f in files.values()),
        "pending": sum(f["pending"] for f in files.values()),
        "blocked_by_rollout": dict(blocked_by_rollout),
        "blocked_by_attempt": {f"{r}/{a}": n for (r, a), n in blocked_by_attempt.items()},
    }


def rss_report(samples_dir: Path, warmup_fraction: float = 0.2) -> Dict[str, Any]:
    """First / last / max RSS and USS per worker, and the slope after warm-up (least squares, MiB
    per 1000 rollouts), with what Agent OS's FlightRecorder keeps in ``_trace_data``."""
    mib = 1024 * 1024
    report = {}
    for path in sorted(samples_dir.glob("*.jsonl")):
        rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        if not rows:
            continue
        total = max(r["rollouts"] for r in rows)
        warm = [r for r in rows if r["rollouts"] >= warmup_fraction * total]

        def slope(key: str, warm: List[Dict[str, Any]] = warm) -> Optional[float]:
            xs = [r["rollouts"] for r in warm]
            if len(set(xs)) < 2:
                return None
            mx, my = statistics.fmean(xs), statistics.fmean(r[key] for r in warm)
            num = sum((x - mx) * (r[key] - my) for x, r in zip(xs, warm))
            den = sum((x - mx) ** 2 for x in xs)
            return num / den * 1000 / mib

        report[path.stem] = {
            "samples": len(rows),
            "rollouts": total,
            "rss_first_mib": round(rows[0]["rss"] / mib, 1),
            "rss_last_mib": round(rows[-1]["rss"] / mib, 1),
            "rss_max_mib": round(max(r["rss"] for r in rows) / mib, 1),
            "uss_first_mib": round(rows[0]["uss"] / mib, 1),
            "uss_last_mib": round(rows[-1]["uss"] / mib, 1),
            "rss_slope_mib_per_1000_rollouts": None if slope("rss") is None else round(slope("rss"), 2),
            "uss_slope_mib_per_1000_rollouts": None if slope("uss") is None else round(slope("uss"), 2),
            "trace_data_entries_last": rows[-1]["trace_data_entries"],
            "trace_data_mib_last": round(rows[-1]["trace_data_bytes"] / mib, 2),
            "trace_data_slope_mib_per_1000_rollouts": None if slope("trace_data_bytes") is None else round(slope("trace_data_bytes"), 3),
            "python_blocks_first": rows[0].get("python_blocks"),
            "python_blocks_last": rows[-1].get("python_blocks"),
            "sqlite_mib_first": None if rows[0].get("sqlite_bytes") is None else round(rows[0]["sqlite_bytes"] / mib, 2),
            "sqlite_mib_last": None if rows[-1].get("sqlite_bytes") is None else round(rows[-1]["sqlite_bytes"] / mib, 2),
            "malloc_in_use_mib_first": None if rows[0].get("malloc_in_use") is None else round(rows[0]["malloc_in_use"] / mib, 1),
            "malloc_in_use_mib_last": None if rows[-1].get("malloc_in_use") is None else round(rows[-1]["malloc_in_use"] / mib, 1),
            "malloc_free_mib_last": None if rows[-1].get("malloc_free") is None else round(rows[-1]["malloc_free"] / mib, 1),
            "threads_first": rows[0]["threads"],
            "threads_last": rows[-1]["threads"],
        }
        traced = [r for r in rows if "grown_since_baseline" in r]
        if traced:
            baseline_at = next(r["rollouts"] for r in rows if "traced_bytes" in r and r["rollouts"] > 0)
            report[path.stem]["tracemalloc"] = {
                "baseline_at_rollouts": baseline_at,
                "last_at_rollouts": traced[-1]["rollouts"],
                "traced_mib_per_sample": [[r["rollouts"], round(r["traced_bytes"] / mib, 2)] for r in rows if "traced_bytes" in r],
                "top_growth_sites": traced[-1]["grown_since_baseline"],
            }
    return report


def _log_lines(paths: Iterable[Path], offsets: Optional[Dict[str, int]] = None) -> Dict[str, Any]:
    """WARNING / ERROR lines (and tracebacks) written to worker logs after ``offsets``."""
    levels: Counter = Counter()
    messages: Counter = Counter()
    for path in paths:
        if not path.exists():
            continue
        with open(path, "rb") as f:
            f.seek((offsets or {}).get(str(path), 0))
            text = f.read().decode("utf-8", "replace")
        for line in text.splitlines():
            for level in ("WARNING", "ERROR", "CRITICAL"):
                if f" {level} " in line:
                    levels[level] += 1
                    messages[line.split(f" {level} ", 1)[1][:160]] += 1
            if line.startswith("Traceback"):
                levels["Traceback"] += 1
    return {"levels": dict(levels), "top_messages": messages.most_common(5)}


def _cpu_seconds(pids: Dict[str, int]) -> Dict[str, float]:
    """User + system CPU seconds each process has used so far."""
    out = {}
    for name, pid in pids.items():
        with contextlib.suppress(psutil.Error):
            times = psutil.Process(pid).cpu_times()
            out[name] = times.user + times.system
    return out


def _sizes(paths: Iterable[Path]) -> Dict[str, int]:
    return {str(p): p.stat().st_size for p in paths if p.exists()}


# ----------------------------------------------------------------------------- 1. load
def run_load(server: StoreServer, pool: WorkerPool, run_dir: Path, *, workers: int = 4, rollouts: int = 3000,
             violating_fraction: float = 0.1, seed: int = 0, sample_every: int = 250, poll_interval: float = 0.05,
             timeout: float = 900.0, trace_memory: bool = False) -> Dict[str, Any]:
    """N runner processes drain ``rollouts`` tasks from the server; everything checked against the tasks."""
    scenario = fresh_dir(Path(run_dir) / "load")
    names = [f"load-{i}" for i in range(workers)]
    specs = make_specs(scenario, server.url, names, sample_every=sample_every, poll_interval=poll_interval,
                       trace_memory=trace_memory)
    tasks = make_tasks(rollouts, violating_fraction, seed=seed)
    _say(f"[load] forking {workers} runner processes")
    ready = pool.start(specs)
    _say(f"[load] runners ready after {max(ready.values()):.1f}s; enqueuing {rollouts} tasks "
         f"({sum(t['violating'] for t in tasks)} violating)")
    procs = {"agl store": server.process.pid, **{name: pool.pid(name) for name in names}}
    server_rss_start = psutil.Process(server.process.pid).memory_info().rss / 2**20
    loadavg_start = os.getloadavg()

    async def drive() -> Dict[str, Any]:
        store = LightningStoreClient(server.url)
        try:
            before = (await store.query_rollouts(limit=1)).total
            await add_resources(store)
            baseline = await finished_in_store(store)
            t_enqueue = time.monotonic()
            ids = await enqueue_tasks(store, tasks)
            enqueue_s = time.monotonic() - t_enqueue
            cpu_before = _cpu_seconds(procs)
            t0 = time.monotonic()
            pool.release(names)
            t1 = await wait_finished(store, ids, baseline=baseline, timeout=timeout, label="load")
            cpu_after = _cpu_seconds(procs)
            return {"store_rollouts_before": before, "ids": ids, "enqueue_s": enqueue_s, "t0": t0, "t1": t1,
                    "cpu_s": {k: round(cpu_after[k] - cpu_before[k], 1) for k in cpu_before if k in cpu_after},
                    "server_rss_mib_end": round(psutil.Process(server.process.pid).memory_info().rss / 2**20, 1),
                    "store_statistics_end": dict(await store.statistics()), "loadavg_end": os.getloadavg()}
        finally:
            await store.close()

    try:
        timing = asyncio.run(drive())
    finally:
        stopped = pool.stop(names)
    ids = timing["ids"]
    wall = timing["t1"] - timing["t0"]
    _say(f"[load] {rollouts} rollouts in {wall:.1f}s ({rollouts / wall:.1f}/s); checking the store, files and databases")

    async def check() -> Dict[str, Any]:
        store = LightningStoreClient(server.url)
        try:
            t = time.monotonic()
            collected = await collect_rollouts(store, ids)
            stats_ids = await governance_stats(store, ids)
            stats_all = await governance_stats(store) if timing["store_rollouts_before"] == 0 else None
            return {"collected": collected, "stats_ids": stats_ids, "stats_all": stats_all, "check_s": time.monotonic() - t}
        finally:
            await store.close()

    checked = asyncio.run(check())
    tasks_by_id = dict(zip(ids, tasks))
    verdict = verify_rollouts(tasks_by_id, checked["collected"])
    audit = audit_summary(scenario / "audit")
    violating_ids = {rid for rid, t in tasks_by_id.items() if t["violating"]}
    blocked_by_rollout = audit["blocked_by_rollout"]
    world = world_state((scenario / "db").glob("world-*.db"))
    executions = world.pop("insert_executions")
    return {
        "workers": workers,
        "rollouts": rollouts,
        "violating_tasks": len(violating_ids),
        "worker_ready_s": {k: round(v, 2) for k, v in ready.items()},
        "enqueue_s": round(timing["enqueue_s"], 2),
        "wall_s": round(wall, 2),
        "throughput_rollouts_per_s": round(rollouts / wall, 1),
        "store_rollouts_before": timing["store_rollouts_before"],
        "cpu_seconds_during_load": timing["cpu_s"],
        "loadavg_start_end": [round(loadavg_start[0], 2), round(timing["loadavg_end"][0], 2)],
        "server_rss_mib": [round(server_rss_start, 1), timing["server_rss_mib_end"]],
        "store_statistics_end": {k: v for k, v in timing["store_statistics_end"].items() if k != "uptime"},
        "verify_s": round(checked["check_s"], 1),
        "spans": verdict,
        "governance_stats": checked["stats_ids"],
        "governance_stats_whole_store": checked["stats_all"],
        "audit": {k: v for k, v in audit.items() if k not in ("blocked_by_rollout", "blocked_by_attempt")},
        "audit_one_blocked_record_per_violating_task": set(blocked_by_rollout) == violating_ids
        and all(n == 1 for n in blocked_by_rollout.values()),
        "audit_records_equal_checks": audit["records"] == verdict["expected_checks"] and audit["pending"] == 0,
        "world": world,
        "insert_executed_once_per_task": sorted(executions) == sorted(t["task_index"] for t in tasks)
        and all(n == 1 for n in executions.values()),
        "rss": rss_report(scenario / "samples"),
        "stopped": {k: {kk: v[kk] for kk in ("exited_after_sigterm", "exit_s", "exitcode")} | {"error": (v["done"] or {}).get("error")}
                    for k, v in stopped.items()},
        "worker_logs": _log_lines((scenario / "logs").glob("*.log")),
    }


# ----------------------------------------------------------------------------- 2a. SIGKILL
def fault_sigkill(server: StoreServer, pool: WorkerPool, run_dir: Path, *, workers: int = 3, rollouts: int = 60,
                  violating_fraction: float = 0.1, seed: int = 1, unresponsive_seconds: float = 2.0, hold_s: float = 300.0,
                  poll_interval: float = 0.05, timeout: float = 180.0) -> Dict[str, Any]:
    """SIGKILL a runner process in the middle of a rollout; the others carry on."""
    scenario = fresh_dir(Path(run_dir) / "sigkill")
    names = [f"kill-{i}" for i in range(workers)]
    specs = make_specs(scenario, server.url, names, first_worker_id=100, poll_interval=poll_interval, sample_every=10_000)
    kill_task = {"task_index": 0, "violating": 1, "hold_first_attempt_s": hold_s,
                 "queries": ["SELECT COUNT(*) FROM users", "INSERT INTO events (task_index) VALUES (0)", "DROP TABLE users",
                             "SELECT SUM(total) FROM orders"]}
    tasks = make_tasks(rollouts, violating_fraction, seed=seed, start_index=1)
    config = agl.RolloutConfig(unresponsive_seconds=unresponsive_seconds, max_attempts=2, retry_condition=["unresponsive"])
    pool.start(specs)
    _say(f"[sigkill] {workers} runners ready; a task that blocks mid-rollout, then {rollouts} ordinary tasks")

    async def drive() -> Dict[str, Any]:
        store = LightningStoreClient(server.url)
        try:
            await add_resources(store)
            baseline = await finished_in_store(store)
            (kill_id,) = await enqueue_tasks(store, [kill_task], config=config)
            ids = await enqueue_tasks(store, tasks)
            pool.release(names)
            marker = scenario / "markers" / f"mid-rollout-{kill_id}.json"
            await asyncio.to_thread(_wait_for, marker.exists, 60.0, "the mid-rollout marker")
            victim = json.loads(marker.read_text())
            t_kill = time.monotonic()
            name = victim["worker"]
            pool.kill(name)
            _say(f"[sigkill] SIGKILLed {name} (pid {victim['pid']}) inside rollout {kill_id}, attempt {victim['attempt_id']}")
            transitions: List[Dict[str, Any]] = []

            async def watch() -> None:
                attempts = await store.query_attempts(kill_id)
                state = [(a.sequence_id, a.status, a.worker_id) for a in attempts]
                if not transitions or transitions[-1]["state"] != state:
                    transitions.append({"t_after_kill_s": round(time.monotonic() - t_kill, 2), "state": state})

            t_done = await wait_finished(store, [kill_id] + ids, baseline=baseline, timeout=timeout, label="sigkill", on_poll=watch)
            attempts = [
                {"sequence_id": a.sequence_id, "attempt_id": a.attempt_id, "status": a.status, "worker_id": a.worker_id}
                for a in await store.query_attempts(kill_id)
            ]
            killed_attempt_spans = [_span_row(s) for s in await store.query_spans(kill_id, victim["attempt_id"])]
            rollout = await store.get_rollout_by_id(kill_id)
            return {"kill_id": kill_id, "ids": ids, "victim": victim, "t_kill": t_kill, "t_done": t_done,
                    "transitions": transitions, "attempts": attempts, "killed_attempt_spans": killed_attempt_spans,
                    "kill_rollout_status": rollout.status if rollout else None}
        finally:
            await store.close()

    try:
        run = asyncio.run(drive())
    finally:
        survivors = [n for n in names if pool.workers[n].exitcode is None]
        stopped = pool.stop(survivors)
    victim = run["victim"]
    kill_id, ids = run["kill_id"], run["ids"]
    victim_process = pool.workers[victim["worker"]]

    async def check() -> Dict[str, Any]:
        store = LightningStoreClient(server.url)
        try:
            collected = await collect_rollouts(store, [kill_id] + ids)
            stats = await governance_stats(store, [kill_id] + ids)
            # What the store lost with the killed attempt is in the victim's FlightRecorder file.
            adapter = FlightRecorderAdapter(scenario / "audit" / f"audit-{victim['worker']}.db")
            reimported = await adapter.emit_to_store(store)
            again = await adapter.emit_to_store(store)
            adapter.close()
            after = [_span_row(s) for s in await store.query_spans(kill_id, victim["attempt_id"])]
            stats_after = await governance_stats(store, [kill_id] + ids)
            return {"collected": collected, "stats": stats, "reimported": reimported, "again": again,
                    "killed_attempt_after_import": after, "stats_after": stats_after}
        finally:
            await store.close()

    checked = asyncio.run(check())
    tasks_by_id = {kill_id: kill_task, **dict(zip(ids, tasks))}
    verdict = verify_rollouts(tasks_by_id, checked["collected"])
    audit = audit_summary(scenario / "audit")
    victim_file = audit["files"][f"audit-{victim['worker']}.db"]
    victim_records = [r for r in FlightRecorderAdapter(scenario / "audit" / f"audit-{victim['worker']}.db").records()]
    victim_queries = [json.loads(r.tool_args)["args"]["query"] for r in victim_records if r.rollout_id == kill_id]
    world = world_state((scenario / "db").glob("world-*.db"))
    executions = world.pop("insert_executions")
    other_workers_after_kill = Counter(
        c["attempt"]["worker_id"] for rid, c in checked["collected"].items() if rid != kill_id and c.get("attempt"))
    unresponsive_at = next((t["t_after_kill_s"] for t in run["transitions"]
                            if any(s[1] in ("unresponsive", "timeout", "failed") for s in t["state"])), None)
    killed_spans = run["killed_attempt_spans"]
    return {
        "workers": workers,
        "rollouts": rollouts + 1,
        "victim": victim["worker"],
        "victim_exitcode": victim_process.exitcode,
        "unresponsive_seconds": unresponsive_seconds,
        "kill_rollout_attempts": run["attempts"],
        "kill_rollout_status": run["kill_rollout_status"],
        "attempt_transitions": run["transitions"],
        "killed_attempt_marked_after_s": unresponsive_at,
        "all_finished_after_kill_s": round(run["t_done"] - run["t_kill"], 2),
        "killed_attempt_spans_in_store": {"checks": sum(s["is_check"] for s in killed_spans),
                                          "violations": sum(s["is_violation"] for s in killed_spans), "all": len(killed_spans)},
        "killed_attempt_decisions_made": len(kill_task["queries"]),
        "victim_recorder": victim_file,
        "victim_recorder_kill_rollout_queries_on_disk": victim_queries,
        "victim_records_lost": len(kill_task["queries"]) - len(victim_queries),
        "victim_blocked_record_of_killed_attempt": audit["blocked_by_attempt"].get(f"{kill_id}/{victim['attempt_id']}", 0),
        "reimport_of_victim_file": {"added": checked["reimported"], "added_again": checked["again"],
                                    "killed_attempt_audit_blocked_spans": sum(
                                        bool(s["audit"] and s["audit_blocked"]) for s in checked["killed_attempt_after_import"])},
        "spans": verdict,
        "governance_stats": checked["stats"],
        "governance_stats_unchanged_by_import": checked["stats"] == checked["stats_after"],
        "rollouts_by_surviving_workers": dict(other_workers_after_kill),
        "audit": {k: v for k, v in audit.items() if k not in ("blocked_by_rollout", "blocked_by_attempt")},
        "world": world,
        "kill_task_insert_executions": executions.get(0, 0),
        "other_inserts_executed_once": all(executions.get(t["task_index"], 0) == 1 for t in tasks),
        "survivors_stopped": {k: {kk: v[kk] for kk in ("exited_after_sigterm", "exitcode")} for k, v in stopped.items()},
    }


# ----------------------------------------------------------------------------- 2b. failing policies
def fault_policies(server: StoreServer, pool: WorkerPool, run_dir: Path, *, rollouts: int = 10, policy_timeout_s: float = 0.2,
                   hang_s: float = 60.0, violating_fraction: float = 0.2, seed: int = 2, exit_timeout: float = 10.0,
                   poll_interval: float = 0.05, timeout: float = 180.0) -> Dict[str, Any]:
    """A policy that hangs and one that raises: every action blocked, nothing executed, runner goes on."""
    results = {}
    for offset, kind in enumerate(("hang", "raise")):
        scenario = fresh_dir(Path(run_dir) / f"policy-{kind}")
        name = f"policy-{kind}"
        (spec,) = make_specs(scenario, server.url, [name], kind=kind, first_worker_id=200 + offset, poll_interval=poll_interval,
                             policy_timeout_s=policy_timeout_s, hang_s=hang_s, sample_every=1)
        tasks = make_tasks(rollouts, violating_fraction, seed=seed + offset, start_index=10_000 * (offset + 1))
        pool.start([spec])

        async def drive(tasks: List[Dict[str, Any]] = tasks, name: str = name, kind: str = kind) -> Dict[str, Any]:
            store = LightningStoreClient(server.url)
            try:
                await add_resources(store)
                baseline = await finished_in_store(store)
                ids = await enqueue_tasks(store, tasks)
                t0 = time.monotonic()
                pool.release([name])
                t1 = await wait_finished(store, ids, baseline=baseline, timeout=timeout, label=f"policy-{kind}")
                collected = await collect_rollouts(store, ids)
                stats = await governance_stats(store, ids)
                return {"ids": ids, "wall": t1 - t0, "collected": collected, "stats": stats}
            finally:
                await store.close()

        try:
            run = asyncio.run(drive())
        finally:
            stopped = pool.stop([name], timeout=exit_timeout)[name]

        def expect_all_blocked(task: Dict[str, Any]) -> Dict[str, int]:
            n = len(task["queries"])
            return {"checks": n, "violations": n + task["violating"], "blocked": n}

        tasks_by_id = dict(zip(run["ids"], tasks))
        verdict = verify_rollouts(tasks_by_id, run["collected"], expect_all_blocked)
        fault_policy = "HangingPolicy" if kind == "hang" else "RaisingPolicy"
        descriptions = Counter()
        per_action_s = []
        for rid, info in run["collected"].items():
            for s in info.get("spans", []):
                if s["is_violation"] and s["policy"] == fault_policy:
                    descriptions[s["description"]] += 1
            attempt = info["attempt"]
            if attempt and attempt["end_time"] and attempt["start_time"]:
                per_action_s.append((attempt["end_time"] - attempt["start_time"]) / len(tasks_by_id[rid]["queries"]))
        audit = audit_summary(scenario / "audit")
        world = world_state((scenario / "db").glob("world-*.db"))
        executions = world.pop("insert_executions")
        samples = rss_report(scenario / "samples")
        results[kind] = {
            "kernel": f"GovernanceKernel([SQLPolicy(deny={DENY}), {fault_policy}()], policy_timeout_s={policy_timeout_s})",
            "rollouts": rollouts,
            "actions": sum(len(t["queries"]) for t in tasks),
            "wall_s": round(run["wall"], 2),
            "seconds_per_action_median": round(statistics.median(per_action_s), 3) if per_action_s else None,
            "seconds_per_action_max": round(max(per_action_s), 3) if per_action_s else None,
            "spans": verdict,
            "fault_policy_violation_descriptions": dict(descriptions),
            "governance_stats": run["stats"],
            "audit": {k: v for k, v in audit.items() if k not in ("blocked_by_rollout", "blocked_by_attempt")},
            "world": world,
            "statements_executed": sum(executions.values()),
            "threads": {k: samples.get(name, {}).get(k) for k in ("threads_first", "threads_last")},
            "exit": {k: stopped[k] for k in ("exited_after_sigterm", "exit_s", "exitcode")}
            | {"threads_at_exit": (stopped["done"] or {}).get("threads_at_exit"), "error": (stopped["done"] or {}).get("error")},
        }
        _say(f"[policy-{kind}] {rollouts} rollouts, {results[kind]['actions']} actions, all blocked: "
             f"{verdict['blocked_check_spans'] == results[kind]['actions']}; worker exited after SIGTERM: {stopped['exited_after_sigterm']}")
    return results


# ----------------------------------------------------------------------------- 2c. store restart
def fault_store_restart(server: StoreServer, pool: WorkerPool, run_dir: Path, *, workers: int = 3, rollouts_before: int = 600,
                        rollouts_after: int = 150, stop_at_fraction: float = 0.3, violating_fraction: float = 0.1, seed: int = 3,
                        poll_interval: float = 0.05, timeout: float = 600.0) -> Dict[str, Any]:
    """Terminate ``agl store`` mid-run, start it again on the same port, re-import the audit trail."""
    scenario = fresh_dir(Path(run_dir) / "restart")
    names = [f"restart-{i}" for i in range(workers)]
    specs = make_specs(scenario, server.url, names, first_worker_id=300, poll_interval=poll_interval, sample_every=10_000)
    batch_a = make_tasks(rollouts_before, violating_fraction, seed=seed, start_index=100_000)
    batch_b = make_tasks(rollouts_after, violating_fraction, seed=seed + 1, start_index=200_000)
    pool.start(specs)
    logs = [spec.paths["log"] for spec in specs]

    async def before_restart() -> Dict[str, Any]:
        store = LightningStoreClient(server.url)
        try:
            await add_resources(store)
            baseline = await finished_in_store(store)
            ids = await enqueue_tasks(store, batch_a)
            pool.release(names)
            target = max(1, int(stop_at_fraction * len(ids)))
            deadline = time.monotonic() + timeout
            while (await finished_in_store(store)) - baseline < target:
                if time.monotonic() > deadline:
                    raise TimeoutError("batch A did not get going")
                await asyncio.sleep(0.05)
            done = await count_finished(store, ids)
            statistics_before = dict(await store.statistics())
            return {"ids": ids, "finished_before_stop": done, "statistics_before": statistics_before}
        finally:
            await store.close()

    try:
        before = asyncio.run(before_restart())
        offsets = _sizes(logs)
        t_stop = time.monotonic()
        stop_info = server.stop()
        _say(f"[restart] agl store terminated after {before['finished_before_stop']}/{len(batch_a)} rollouts of batch A; restarting on port {server.port}")
        startup_s = server.start()
        outage_s = time.monotonic() - t_stop
        alive_after = {n: pool.workers[n].exitcode is None for n in names}
        _say(f"[restart] store back after {outage_s:.1f}s; runners alive: {alive_after}")

        async def after_restart() -> Dict[str, Any]:
            store = LightningStoreClient(server.url)
            try:
                rollouts_in_new_store = (await store.query_rollouts(limit=1)).total
                resources = await store.get_latest_resources()
                statistics_new = dict(await store.statistics())
                lost = {"rollouts_in_new_store": rollouts_in_new_store, "resources_in_new_store": resources is not None,
                        "spans_of_a_finished_batch_a_rollout": len(await store.query_spans(before["ids"][0])),
                        "store_before_stop": {k: before["statistics_before"].get(k) for k in
                                              ("total_rollouts", "total_attempts", "total_spans", "total_resources", "total_workers")},
                        "store_after_restart": {k: statistics_new.get(k) for k in
                                                ("total_rollouts", "total_attempts", "total_spans", "total_resources", "total_workers")}}
                await add_resources(store)
                baseline = await finished_in_store(store)
                ids = await enqueue_tasks(store, batch_b)
                t0 = time.monotonic()
                t1 = await wait_finished(store, ids, baseline=baseline, timeout=timeout, label="restart/batch B")
                return {"ids": ids, "lost": lost, "wall_b": t1 - t0}
            finally:
                await store.close()

        after = asyncio.run(after_restart())
        outage_logs = _log_lines(logs, offsets)  # the outage and its aftermath, up to the end of batch B
    finally:
        stopped = pool.stop(names)
    ids_b = after["ids"]

    async def reimport() -> Dict[str, Any]:
        store = LightningStoreClient(server.url)
        try:
            collected = await collect_rollouts(store, ids_b)
            stats_before_import = await governance_stats(store, ids_b)
            t = time.monotonic()
            adapters = adapters_for_directory(scenario / "audit", pattern="audit-*.db")
            first = {a.path.name: await a.emit_to_store(store) for a in adapters}
            import_s = time.monotonic() - t
            second = {a.path.name: await a.emit_to_store(store) for a in adapters}
            fresh = {a.path.name: await a.emit_to_store(store) for a in adapters_for_directory(scenario / "audit", pattern="audit-*.db")}
            all_rollouts = list(await store.query_rollouts())
            audit_spans: List[Dict[str, Any]] = []
            placement: Counter = Counter()
            for rollout in all_rollouts:
                for span in await store.query_spans(rollout.rollout_id):
                    if is_audit_span(span):
                        row = _span_row(span)
                        audit_spans.append(row)
                        placement["audit rollout" if (rollout.metadata or {}).get("agentos.audit_rollout") else "batch B rollouts"] += 1
            stats_after_import = await governance_stats(store, ids_b)
            return {"collected": collected, "first": first, "second": second, "fresh": fresh, "import_s": import_s,
                    "audit_spans": audit_spans, "placement": dict(placement), "stats_before": stats_before_import,
                    "stats_after": stats_after_import, "rollouts_in_store": len(all_rollouts)}
        finally:
            await store.close()

    checked = asyncio.run(reimport())
    ids_a = before["ids"]
    verdict_b = verify_rollouts(dict(zip(ids_b, batch_b)), checked["collected"])
    audit = audit_summary(scenario / "audit")
    blocked_by_rollout = audit["blocked_by_rollout"]
    ids_a_set, ids_b_set = set(ids_a), set(ids_b)
    violating_a = {rid for rid, t in zip(ids_a, batch_a) if t["violating"]}
    violating_b = {rid for rid, t in zip(ids_b, batch_b) if t["violating"]}
    blocked_a = {rid: n for rid, n in blocked_by_rollout.items() if rid in ids_a_set}
    blocked_b = {rid: n for rid, n in blocked_by_rollout.items() if rid in ids_b_set}
    world = world_state((scenario / "db").glob("world-*.db"))
    executions = world.pop("insert_executions")
    executed_a = sum(1 for t in batch_a if executions.get(t["task_index"], 0) >= 1)
    reimported_blocked = sum(bool(s["audit_blocked"]) for s in checked["audit_spans"])
    return {
        "workers": workers,
        "batch_a": len(batch_a),
        "batch_b": len(batch_b),
        "finished_before_stop": before["finished_before_stop"],
        "server_stop": stop_info,
        "server_startup_s": round(startup_s, 1),
        "outage_s": round(outage_s, 1),
        "lost_on_restart": after["lost"] | {
            "batch_a_rollouts_gone": len(batch_a),
            "batch_a_tasks_never_run": len(batch_a) - executed_a,
            "batch_a_tasks_that_ran": executed_a,
        },
        "runners_alive_after_restart": alive_after,
        "runner_log_lines_after_stop": outage_logs,
        # The new server answers calls about a rollout it never had with HTTP 500 (an unhandled
        # ValueError), which the client retries (1 + 2 + 5 s) as if the server were unwell.
        "new_server_errors_for_unknown_rollouts": len(re.findall(r"ValueError: (?:Rollout|Attempt) \S+ not found", server.log_since_last_start())),
        "batch_b_wall_s": round(after["wall_b"], 2),
        "batch_b_spans": verdict_b,
        "batch_b_rollouts_by_worker": verdict_b["rollouts_by_worker"],
        "audit": {k: v for k, v in audit.items() if k not in ("blocked_by_rollout", "blocked_by_attempt")},
        "blocked_records_batch_a": sum(blocked_a.values()),
        "batch_a_violating_tasks": len(violating_a),
        "blocked_records_batch_a_only_violating_at_most_once": set(blocked_a) <= violating_a and all(n == 1 for n in blocked_a.values()),
        "blocked_records_batch_b_exact": set(blocked_b) == violating_b and all(n == 1 for n in blocked_b.values()),
        "reimport": {
            "added_first": checked["first"],
            "added_second": checked["second"],
            "added_by_fresh_adapters": checked["fresh"],
            "import_s": round(checked["import_s"], 1),
            "audit_spans": len(checked["audit_spans"]),
            "audit_blocked_spans": reimported_blocked,
            "placement": checked["placement"],
            "equals_blocked_records_on_disk": reimported_blocked == audit["blocked"],
            "equals_final_records_on_disk": len(checked["audit_spans"]) == audit["records"] - audit["pending"],
        },
        "governance_stats_batch_b": checked["stats_before"],
        "governance_stats_unchanged_by_import": checked["stats_before"] == checked["stats_after"],
        "world": world,
        "stopped": {k: {kk: v[kk] for kk in ("exited_after_sigterm", "exitcode")} | {"error": (v["done"] or {}).get("error")}
                    for k, v in stopped.items()},
    }


# ----------------------------------------------------------------------------- report
def format_report(report: Dict[str, Any]) -> str:
    lines = [f"== load and faults ({report['machine']['cpus']} CPUs, {report['machine']['date']}) =="]
    load = report.get("load")
    if load:
        s, g, a = load["spans"], load["governance_stats"], load["audit"]
        lines += [
            f"LOAD: {load['rollouts']} rollouts ({load['violating_tasks']} violating) on {load['workers']} runner processes: "
            f"{load['wall_s']} s wall, {load['throughput_rollouts_per_s']} rollouts/s (enqueue {load['enqueue_s']} s, not counted)",
            f"  rollouts per worker: {s['rollouts_by_worker']}",
            f"  exactly once (raw spans vs tasks): {s['exactly_once']}  problems={s['problems']}",
            f"  violation spans {s['violation_spans']} / expected {s['expected_violations']}; check spans {s['check_spans']} / {s['expected_checks']}; "
            f"blocked checks {s['blocked_check_spans']} / {s['expected_blocked']}",
            f"  governance_stats(store, ids): rollouts={g['total_rollouts']} violations={g['total_violations']} "
            f"rollouts_with_violations={g['rollouts_with_violations']} blocked={g['blocked_actions']} checks={g['total_checks']} "
            f"duplicates={g['duplicate_spans']}",
            f"  governance_stats(store) whole store: {None if load['governance_stats_whole_store'] is None else {k: load['governance_stats_whole_store'][k] for k in ('total_rollouts', 'total_violations', 'rollouts_with_violations', 'blocked_actions')}}",
            f"  FlightRecorder files: {len(a['files'])}, all hash chains valid: {a['all_valid']}, records {a['records']}, "
            f"blocked {a['blocked']}, pending {a['pending']}; one blocked record per violating task: {load['audit_one_blocked_record_per_violating_task']}",
            f"  databases intact: {load['world']['all_intact']}; each task's INSERT executed exactly once: {load['insert_executed_once_per_task']}",
            "  memory per worker (MiB; slope after the first 20% of its rollouts, per 1000 rollouts):",
        ]
        for name, r in load["rss"].items():
            lines.append(
                f"    {name}: {r['rollouts']} rollouts, RSS first {r['rss_first_mib']} last {r['rss_last_mib']} max {r['rss_max_mib']} "
                f"slope {r['rss_slope_mib_per_1000_rollouts']}; USS {r['uss_first_mib']} -> {r['uss_last_mib']} slope "
                f"{r['uss_slope_mib_per_1000_rollouts']}; FlightRecorder _trace_data {r['trace_data_entries_last']} entries "
                f"{r['trace_data_mib_last']} MiB (slope {r['trace_data_slope_mib_per_1000_rollouts']})")
            lines.append(f"      native: SQLite {r['sqlite_mib_first']} -> {r['sqlite_mib_last']} MiB; glibc heap in use "
                         f"{r['malloc_in_use_mib_first']} -> {r['malloc_in_use_mib_last']} MiB (free in heap {r['malloc_free_mib_last']}); "
                         f"Python blocks {r['python_blocks_first']} -> {r['python_blocks_last']}")
            if "tracemalloc" in r:
                t = r["tracemalloc"]
                lines.append(f"      traced MiB by rollouts: {t['traced_mib_per_sample']}")
                lines.append(f"      grew between rollout {t['baseline_at_rollouts']} and {t['last_at_rollouts']} (site, bytes, objects):")
                lines += [f"        {site} {size:+,} B {count:+,}" for site, size, count in t["top_growth_sites"][:5]]
        lines.append(f"  CPU seconds during the load: {load['cpu_seconds_during_load']}; load average start/end "
                     f"{load['loadavg_start_end']}; agl store RSS {load['server_rss_mib'][0]} -> {load['server_rss_mib'][1]} MiB "
                     f"holding {load['store_statistics_end'].get('total_spans')} spans")
        lines.append(f"  worker log lines: {load['worker_logs']['levels']}; workers stopped: {load['stopped']}")
    k = report.get("sigkill")
    if k:
        lines += [
            f"SIGKILL: killed {k['victim']} (exit code {k['victim_exitcode']}) mid-rollout; attempts of that rollout: "
            f"{[(x['sequence_id'], x['status'], x['worker_id']) for x in k['kill_rollout_attempts']]}, rollout {k['kill_rollout_status']}",
            f"  killed attempt marked after {k['killed_attempt_marked_after_s']} s (unresponsive_seconds={k['unresponsive_seconds']}); "
            f"all {k['rollouts']} rollouts finished {k['all_finished_after_kill_s']} s after the kill; surviving workers: {k['rollouts_by_surviving_workers']}",
            f"  exactly once on latest attempts: {k['spans']['exactly_once']}; killed attempt spans in the store: {k['killed_attempt_spans_in_store']}",
            f"  victim FlightRecorder: valid={k['victim_recorder']['valid']} records={k['victim_recorder']['records']} "
            f"pending={k['victim_recorder']['pending']}; killed attempt made {k['killed_attempt_decisions_made']} decisions, on disk: "
            f"{k['victim_recorder_kill_rollout_queries_on_disk']} (lost {k['victim_records_lost']}); its blocked record: "
            f"{k['victim_blocked_record_of_killed_attempt']}",
            f"  re-import of the victim's file: {k['reimport_of_victim_file']}; governance_stats unchanged: {k['governance_stats_unchanged_by_import']}",
            f"  databases intact: {k['world']['all_intact']}; the killed task's INSERT ran {k['kill_task_insert_executions']} times "
            f"(killed attempt + retry); every other INSERT once: {k['other_inserts_executed_once']}",
        ]
    p = report.get("policies")
    if p:
        for kind, r in p.items():
            lines += [
                f"POLICY {kind.upper()}: {r['kernel']}",
                f"  {r['rollouts']} rollouts, {r['actions']} actions: blocked checks {r['spans']['blocked_check_spans']}, "
                f"violation spans {r['spans']['violation_spans']} / expected {r['spans']['expected_violations']}, exactly once "
                f"{r['spans']['exactly_once']}, statements executed {r['statements_executed']}, databases intact {r['world']['all_intact']}",
                f"  seconds per action: median {r['seconds_per_action_median']}, max {r['seconds_per_action_max']}; "
                f"violations: {r['fault_policy_violation_descriptions']}",
                f"  FlightRecorder: valid {r['audit']['all_valid']}, records {r['audit']['records']}, blocked {r['audit']['blocked']}; "
                f"threads {r['threads']}; exit after SIGTERM: {r['exit']}",
            ]
    r = report.get("restart")
    if r:
        lines += [
            f"RESTART: agl store terminated after {r['finished_before_stop']}/{r['batch_a']} rollouts of batch A; back after "
            f"{r['outage_s']} s (startup {r['server_startup_s']} s); runners alive: {r['runners_alive_after_restart']}",
            f"  lost: {r['lost_on_restart']}",
            f"  runner log lines from the stop to the end of batch B: {r['runner_log_lines_after_stop']['levels']}; "
            f"new server's HTTP 500s for rollouts it never had: {r['new_server_errors_for_unknown_rollouts']}",
            f"  batch B ({r['batch_b']} rollouts) after the restart: exactly once {r['batch_b_spans']['exactly_once']}, "
            f"{r['batch_b_wall_s']} s, by worker {r['batch_b_rollouts_by_worker']}",
            f"  FlightRecorder files: valid {r['audit']['all_valid']}, records {r['audit']['records']}, blocked {r['audit']['blocked']} "
            f"(batch A {r['blocked_records_batch_a']} of {r['batch_a_violating_tasks']} violating tasks)",
            f"  re-import: {r['reimport']}",
            f"  governance_stats unchanged by the import: {r['governance_stats_unchanged_by_import']}; databases intact: {r['world']['all_intact']}",
        ]
    return "\n".join(lines)


def machine_info() -> Dict[str, Any]:
    return {
        "cpus": os.cpu_count(),
        "memory_gib": round(psutil.virtual_memory().total / 2**30, 1),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "date": datetime.datetime.now().strftime("%Y-%m-%d %H:%M"),
    }


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--workers", type=int, default=4, help="runner processes in the load run")
    parser.add_argument("--rollouts", type=int, default=3000, help="tasks enqueued in the load run")
    parser.add_argument("--violating-fraction", type=float, default=0.1, help="fraction of tasks with one DROP/DELETE (exact)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the task positions")
    parser.add_argument("--sample-every", type=int, default=250, help="each worker samples its RSS every this many rollouts")
    parser.add_argument("--poll-interval", type=float, default=0.05, help="runner poll interval when the queue is empty (s)")
    parser.add_argument("--trace-memory", action="store_true",
                        help="trace Python allocations in each load worker (tracemalloc, slower) and report the code lines "
                             "whose allocations grew after the first --sample-every rollouts")
    parser.add_argument("--faults", default="sigkill,policies,restart",
                        help="comma-separated faults to run after the load: sigkill, policies, restart (or 'none')")
    parser.add_argument("--skip-load", action="store_true", help="run only the faults")
    parser.add_argument("--kill-workers", type=int, default=3, help="runner processes in the SIGKILL fault")
    parser.add_argument("--kill-rollouts", type=int, default=120, help="ordinary tasks enqueued after the task that gets killed")
    parser.add_argument("--unresponsive-seconds", type=float, default=2.0,
                        help="RolloutConfig.unresponsive_seconds of the killed rollout (the server scans every 10 s)")
    parser.add_argument("--policy-rollouts", type=int, default=10, help="rollouts for each failing policy (hang, raise)")
    parser.add_argument("--policy-timeout", type=float, default=0.2, help="GovernanceKernel policy_timeout_s in the policy fault")
    parser.add_argument("--hang-seconds", type=float, default=60.0, help="how long the hanging policy hangs per call")
    parser.add_argument("--restart-workers", type=int, default=3, help="runner processes in the store-restart fault")
    parser.add_argument("--restart-before", type=int, default=600, help="tasks enqueued before the store is restarted (batch A)")
    parser.add_argument("--restart-after", type=int, default=150, help="tasks enqueued after the restart (batch B)")
    parser.add_argument("--restart-at", type=float, default=0.3, help="restart once this fraction of batch A has finished")
    parser.add_argument("--port", type=int, default=0, help="port of agl store on 127.0.0.1 (0: a free one)")
    parser.add_argument("--run-dir", type=Path, default=Path("runs/load_and_faults"), help="working directory (databases, audit files, logs)")
    parser.add_argument("--json", type=Path, default=None, help="write every figure to this JSON file")
    parser.add_argument("--timeout", type=float, default=900.0, help="give up on a phase after this many seconds")
    parser.add_argument("--quick", action="store_true", help="small run: 3 workers x 200 rollouts, small faults")
    args = parser.parse_args(argv)
    if args.quick:
        args.workers, args.rollouts, args.sample_every = 3, 200, 25
        args.kill_rollouts, args.policy_rollouts = 30, 5
        args.restart_workers, args.restart_before, args.restart_after = 2, 80, 30
    faults = [f.strip() for f in args.faults.split(",") if f.strip() and f.strip() != "none"]
    unknown = set(faults) - {"sigkill", "policies", "restart"}
    if unknown:
        parser.error(f"unknown faults {sorted(unknown)}")
    args.fault_list = faults
    if min(args.workers, args.kill_workers, args.restart_workers) < 1 or args.rollouts < 1:
        parser.error("workers and rollouts must be >= 1")
    if args.kill_workers < 2:
        parser.error("--kill-workers must be >= 2 (one is killed, the others carry on)")
    return args


def main(argv: Optional[List[str]] = None) -> Dict[str, Any]:
    args = parse_args(argv)
    run_dir = fresh_run_dir(args.run_dir)
    port = args.port or free_port()
    server = StoreServer(port, run_dir / "agl-store.log")
    pool = WorkerPool()
    report: Dict[str, Any] = {"machine": machine_info(), "command": " ".join([Path(sys.argv[0]).name] + (argv if argv is not None else sys.argv[1:])),
                              "args": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()}}
    t_start = time.monotonic()
    try:
        server.launch()
        warm_up_forkserver()
        report["store_startup_s"] = round(server.wait_healthy(), 1)
        _say(f"agl store up on {server.url} after {report['store_startup_s']}s")
        if not args.skip_load:
            report["load"] = run_load(server, pool, run_dir, workers=args.workers, rollouts=args.rollouts,
                                      violating_fraction=args.violating_fraction, seed=args.seed, sample_every=args.sample_every,
                                      poll_interval=args.poll_interval, timeout=args.timeout, trace_memory=args.trace_memory)
        if "sigkill" in args.fault_list:
            report["sigkill"] = fault_sigkill(server, pool, run_dir, workers=args.kill_workers, rollouts=args.kill_rollouts,
                                              violating_fraction=args.violating_fraction, unresponsive_seconds=args.unresponsive_seconds,
                                              poll_interval=args.poll_interval, timeout=args.timeout)
        if "policies" in args.fault_list:
            report["policies"] = fault_policies(server, pool, run_dir, rollouts=args.policy_rollouts, policy_timeout_s=args.policy_timeout,
                                                hang_s=args.hang_seconds, poll_interval=args.poll_interval, timeout=args.timeout)
        if "restart" in args.fault_list:
            report["restart"] = fault_store_restart(server, pool, run_dir, workers=args.restart_workers,
                                                    rollouts_before=args.restart_before, rollouts_after=args.restart_after,
                                                    stop_at_fraction=args.restart_at, violating_fraction=args.violating_fraction,
                                                    poll_interval=args.poll_interval, timeout=args.timeout)
    finally:
        pool.close()
        server.close()
    report["total_wall_s"] = round(time.monotonic() - t_start, 1)
    _say(format_report(report))
    _say(f"total wall time {report['total_wall_s']} s")
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=2, default=str))
        _say(f"wrote {args.json}")
    return report


if __name__ == "__main__":
    main()
