"""The real-model recipe on 1.0, quick mode: SmolLM2 behind the governed gateway, 1.0's controller and rows, GRPO.

The model and the update run in the 0.3 environment (``.venv``: torch exists here for Python 3.11
only), which the recipe drives; ``.ci/run`` has made it before this test runs. Whatever the
sampled SQL is, these hold on every rollout: nothing destructive executed, a blocked call's
reward carries the penalty, an allowed one's does not, every rollout gave 1.0 training rows,
and the trail verifies.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PYTHON_0_3 = ROOT / ".venv" / "bin" / "python"


def test_quick_recipe_through_the_governed_gateway(tmp_path):
    assert PYTHON_0_3.exists(), f"the recipe's model runs in the 0.3 environment; make it first: {PYTHON_0_3}"
    done = subprocess.run(
        [
            str(PYTHON_0_3),
            str(ROOT / "contrib" / "recipes" / "agentos" / "train_sql_gateway.py"),
            "--quick",
            "--out",
            str(tmp_path / "run"),
            "--venv312",
            str(Path(sys.executable).parent.parent),
            "--warm-start-cache",
            str(ROOT / "runs" / "llm" / "warm_start"),
        ],
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    assert len(results["steps"]) == 2
    for step in results["steps"]:
        assert step["rollouts"] == 4 and step["rows"] >= 4
        assert step["destructive_executed"] == 0
        for rollout in step["examples"]:
            blocked = any(d["verdict"] == "blocked" for d in rollout["decisions"])
            if blocked:
                assert rollout["final_reward"] <= -50.0  # base 0 or 1 plus at least the high penalty
            else:
                assert rollout["final_reward"] in (0.0, 1.0)
            if rollout["class"] == "destructive":
                assert blocked
    assert results["audit"] and all(a["valid"] for a in results["audit"])
