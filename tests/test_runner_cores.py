"""``AgentOSRunner(pin_to_core=True)``: a runner worker's process on a core of its own.

Each case runs in a fresh interpreter (pinning the test process would pin the rest of the suite),
with the real ``AgentOSRunner``, its tracer and a durable audit trail, and reads the affinity of every
thread of that process from the system (``os.sched_getaffinity`` of each ``/proc/self/task``):
threads started before ``init_worker`` (the trail's committer, a thread of the agent's), and one
started after it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from agentlightning.contrib.kernel.agentos import SQLPolicy
from agentlightning.contrib.runner.agentos import AgentOSRunner

CORES = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []

WORKER = textwrap.dedent(
    """
    import asyncio, json, os, sys, threading
    from agentlightning.store.memory import InMemoryLightningStore
    from agentlightning.contrib.kernel.agentos import Action, GovernanceKernel, SQLPolicy
    from agentlightning.contrib.runner.agentos import AgentOSRunner

    worker_id, pin, audit = int(sys.argv[1]), sys.argv[2] == "pin", sys.argv[3]
    kernel = GovernanceKernel([SQLPolicy(deny=["DROP"])], recorder=audit)
    assert kernel.check(Action.sql("SELECT 1")).allowed  # the trail's threads exist before init_worker
    before = threading.Event()
    threading.Thread(target=before.wait, daemon=True).start()
    runner = AgentOSRunner(kernel, log_violations=False, pin_to_core=pin)
    runner.init(lambda task: None)
    runner.init_worker(worker_id, InMemoryLightningStore())
    after = threading.Event()
    threading.Thread(target=after.wait, daemon=True).start()
    rollout = asyncio.run(runner.step("SELECT 2", resources={}))
    threads = {int(t): sorted(os.sched_getaffinity(int(t))) for t in os.listdir("/proc/self/task")}
    print(json.dumps({"core": runner.core, "threads": list(threads.values()), "success": rollout.success}))
    before.set(); after.set()
    runner.teardown_worker(worker_id); runner.teardown(); kernel.close()
    """
)


def _run_worker(tmp_path: Path, worker_id: int, pin: bool) -> dict:
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    done = subprocess.run(
        [sys.executable, "-c", WORKER, str(worker_id), "pin" if pin else "float", str(tmp_path / f"w{worker_id}.db")],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


needs_affinity = pytest.mark.skipif(not CORES, reason="this system reports no CPU affinity (not Linux)")


@needs_affinity
@pytest.mark.parametrize("worker_id", [0, 1, len(CORES)])
def test_a_pinned_worker_runs_every_thread_on_its_core(tmp_path: Path, worker_id: int) -> None:
    """Worker *i* on the *i*-th core the process may use, round the cores (worker ``len(cores)`` on the first):
    every thread, those started before ``init_worker`` and after it, and the rollout still governed."""
    seen = _run_worker(tmp_path, worker_id, pin=True)
    expected = CORES[worker_id % len(CORES)]
    assert seen["core"] == expected
    assert len(seen["threads"]) >= 3 and all(cores == [expected] for cores in seen["threads"]), seen
    assert seen["success"] is True


@needs_affinity
def test_a_worker_is_left_to_the_scheduler_by_default(tmp_path: Path) -> None:
    seen = _run_worker(tmp_path, 1, pin=False)
    assert seen["core"] is None
    assert all(cores == CORES for cores in seen["threads"]), seen


def test_pin_to_core_must_be_a_bool() -> None:
    with pytest.raises(TypeError, match="pin_to_core must be a bool"):
        AgentOSRunner([SQLPolicy()], pin_to_core="yes")  # type: ignore[arg-type]


def test_a_refused_placement_leaves_the_worker_running_where_the_system_places_it(monkeypatch, caplog) -> None:
    """A core the system will not give (a cpuset changed since the process read it): the worker says so
    and runs unpinned, never unchecked."""
    from agentlightning.contrib.kernel.agentos import cores
    from agentlightning.contrib.runner.agentos import runner as runner_module

    def refuse(pid: int, mask) -> None:
        raise OSError(22, "Invalid argument")

    monkeypatch.setattr(cores.os, "sched_setaffinity", refuse)
    with caplog.at_level("WARNING", logger=runner_module.__name__):
        assert runner_module._place_worker(0) is None
    assert "pin_to_core=True" in caplog.text and "runs where the system places it" in caplog.text
