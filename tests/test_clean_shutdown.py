"""A clean Trainer run starts and ends cleanly: the runner room's strategy starts the runner
processes' work after the store answers and stops them before the store.

With agentlightning 0.3's own ``ClientServerExecutionStrategy`` the store's HTTP server stops
first, and runners that poll in between log ``dequeue_rollout failed with exception: Cannot
connect to host ...`` (and heartbeat tracebacks). The runner room's ``RunnersFirstStrategy``
(``agentlightning.contrib.runner.agentos.shutdown``, which the recipes use) stops the runners first.

Each run is a real Trainer run (two runner processes, the governed runner, a SQLite database) in
a Python process of its own, as a user runs a recipe: under pytest the runner processes would
inherit pytest's log capture and print nothing, so their stderr is read from outside.

There is no control run with agentlightning's own strategy: its noise needs a runner to poll in
the short window between the store's stop and the stop event, and whether one does depends on
the machine's timing (seen in most runs on a quiet machine, in none of three inside one CI run),
so a control could not be relied on to fail or pass.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e  # real Trainer runs in processes of their own

ROOT = Path(__file__).resolve().parents[1]

#: A Trainer run of six governed rollouts with the strategy named in argv[1]; prints the statuses.
SCRIPT = """
import json, sys
sys.path.insert(0, sys.argv[3])
import portpicker
import agentlightning as agl
from agentlightning.execution.client_server import ClientServerExecutionStrategy
from agentlightning.contrib.kernel.agentos import GovernanceKernel, SQLPolicy
from agentlightning.contrib.runner.agentos import AgentOSRunner
from tests.conftest import make_shop_db
from tests.runner_agents import SQLAgent, make_collecting_algorithm, mixed_sql_tasks
from agentlightning.contrib.runner.agentos.shutdown import RunnersFirstStrategy

class SlowStoreStart(RunnersFirstStrategy):
    # The store's server starts seconds after the runners, as on a loaded machine.

    async def _execute_algorithm(self, algorithm, store, stop_evt):
        import asyncio
        await asyncio.sleep(4)
        await super()._execute_algorithm(algorithm, store, stop_evt)


strategies = {"recipes": RunnersFirstStrategy, "plain": ClientServerExecutionStrategy, "slow-store": SlowStoreStart}
strategy = strategies[sys.argv[1]](n_runners=2)
tmp = sys.argv[2]
make_shop_db(tmp + "/shop.db")
tasks = mixed_sql_tasks(tmp + "/shop.db", 6, ["SELECT COUNT(*) FROM users"], ["DROP TABLE users"],
                        second_bad_every=4, sleep=0)
kernel = GovernanceKernel([SQLPolicy(deny=["DROP", "DELETE"], dialect="sqlite")])
runner = AgentOSRunner(kernel, audit_dir=tmp + "/audit", poll_interval=0.05, log_violations=False)
port = portpicker.pick_unused_port()
algorithm = make_collecting_algorithm(tasks, tmp + "/result.json", port)
agl.Trainer(algorithm=algorithm, runner=runner, strategy=strategy, port=port).fit(SQLAgent())
result = json.load(open(tmp + "/result.json"))
print("STATUSES", json.dumps(sorted(r["status"] for r in result["rollouts"].values())))
"""

#: What the shutdown noise looks like (agentlightning's store client and the runner's heartbeat).
NOISE = ("Cannot connect to host", "dequeue_rollout failed", "Traceback", "Unable to update worker heartbeat")


def fit(tmp_path: Path, strategy: str) -> subprocess.CompletedProcess:
    tmp_path.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, strategy, str(tmp_path), str(ROOT)],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,
        env=env,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    statuses = json.loads(done.stdout.split("STATUSES", 1)[1])
    assert statuses == ["succeeded"] * 6
    return done


def test_a_clean_run_with_the_recipes_strategy_prints_no_shutdown_errors(tmp_path):
    done = fit(tmp_path, "recipes")
    printed = done.stdout + done.stderr
    assert not [n for n in NOISE if n in printed], printed[-3000:]


def test_runners_wait_for_a_store_that_starts_late(tmp_path):
    """Under load the store's server started seconds after the runner processes, whose
    heartbeats printed ``ConnectionRefusedError`` tracebacks until it answered."""
    done = fit(tmp_path, "slow-store")
    printed = done.stdout + done.stderr
    assert not [n for n in NOISE + ("ConnectionRefusedError", "Connect call failed") if n in printed], printed[-3000:]
