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


@needs_affinity
@pytest.mark.e2e
@pytest.mark.skipif(len(CORES) < 2, reason="placing two runner processes on cores of their own needs two cores")
def test_the_trainers_runner_processes_each_run_on_a_core_of_their_own(tmp_path: Path) -> None:
    """The real Trainer with two runner processes and ``pin_to_core=True``: while they run rollouts,
    every thread of runner-0 is on the first core and every thread of runner-1 on the second (read by
    the algorithm, in the Trainer's main process, from the system), and each rollout was governed."""
    import asyncio
    import multiprocessing

    import portpicker

    import agentlightning as agl
    from agentlightning.algorithm import algo

    from agentlightning.contrib.runner.agentos import as_agent, governance_stats
    from agentlightning.contrib.runner.agentos.shutdown import RunnersFirstStrategy

    seen: dict = {}

    @algo
    async def place_and_look(*, store: agl.LightningStore) -> None:
        await store.add_resources({"prompt": agl.PromptTemplate(template="{task}", engine="f-string")})
        ids = [(await store.enqueue_rollout(input=f"SELECT {i}", mode="train")).rollout_id for i in range(6)]
        while len(await store.wait_for_rollouts(rollout_ids=ids, timeout=0.1)) < len(ids):
            await asyncio.sleep(0.05)
        for child in multiprocessing.active_children():
            if child.name.startswith("runner-"):
                tasks = os.listdir(f"/proc/{child.pid}/task")
                seen[child.name] = sorted({core for t in tasks for core in os.sched_getaffinity(int(t))})
        seen["stats"] = await governance_stats(store, ids)

    runner = AgentOSRunner(
        [SQLPolicy(deny=["DROP"])], audit_dir=tmp_path / "audit", log_violations=False, pin_to_core=True
    )
    agl.Trainer(
        algorithm=place_and_look,
        runner=runner,
        strategy=RunnersFirstStrategy(n_runners=2),
        port=portpicker.pick_unused_port(),
    ).fit(as_agent(lambda task: None))
    assert seen.get("runner-0") == [CORES[0]] and seen.get("runner-1") == [CORES[1]], seen
    assert seen["stats"]["total_checks"] == 6, seen["stats"]
