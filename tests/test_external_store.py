"""The main recipe against an external `agl store` (--store-url), and the port clash that running
`agl store` on the Trainer's port causes (docs/audit.md, "Training runs and the agl store
dashboard"). A real `agl store` subprocess on a free port, the real Trainer and runner processes."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
import textwrap
import urllib.request
from pathlib import Path

import portpicker
import pytest

from agentlightning.store.client_server import LightningStoreClient

from agentlightning.contrib.kernel.agentos.agl03.stats import governance_stats
from agentlightning.contrib.runner.agentos import report

# End to end (an `agl store` server and the recipe's Trainer processes): minutes; `pytest -m "not e2e"` leaves it out.
pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parent.parent
RECIPE_DIR = ROOT / "contrib" / "recipes" / "agentos"


@pytest.fixture(scope="module")
def agl_store(tmp_path_factory):
    """``agl store --port <free port>``, as a user starts it for the dashboard."""
    port = portpicker.pick_unused_port()
    sys.path.insert(0, str(RECIPE_DIR))
    try:
        from agl_store_server import agl_store_server
    finally:
        sys.path.remove(str(RECIPE_DIR))
    with agl_store_server(tmp_path_factory.mktemp("agl_store") / "agl-store.log", port=port, timeout=120) as url:
        yield {"url": url, "port": port}


@pytest.fixture(scope="module")
def recipe_run(agl_store, tmp_path_factory):
    sys.path.insert(0, str(RECIPE_DIR))
    try:
        import train_sql_grpo

        out = tmp_path_factory.mktemp("sql_grpo_external")
        argv = [
            "--seeds",
            "0",
            "--epochs",
            "1",
            "--group-size",
            "2",
            "--runners",
            "1",
            "--no-plot",
            "--out",
            str(out),
            "--store-url",
            agl_store["url"],
        ]
        results = train_sql_grpo.main(argv)
        arms = {arm: json.loads((out / f"{arm}.json").read_text()) for arm in ("governed", "ungoverned")}
        return {"results": results, "arms": arms, "out": out}
    finally:
        sys.path.remove(str(RECIPE_DIR))


def _store_view(url: str):
    async def read():
        client = LightningStoreClient(url)
        try:
            rollouts = list(await client.query_rollouts())
            return rollouts, await governance_stats(client)
        finally:
            await client.close()

    return asyncio.run(read())


def test_both_arms_train_into_the_external_store(agl_store, recipe_run):
    governed, ungoverned = recipe_run["arms"]["governed"], recipe_run["arms"]["ungoverned"]
    rollouts, stats = _store_view(agl_store["url"])
    # The training rollouts of both arms, plus their held-out evaluations, are all in the one store.
    assert len(rollouts) > len(governed["rollouts"]) + len(ungoverned["rollouts"]) > 0
    assert {r.status for r in rollouts} == {"succeeded"}
    # Each arm counts only its own rollouts, although the store holds both arms.
    assert ungoverned["store_governance_stats"]["total_violations"] == 0
    assert governed["store_governance_stats"]["total_violations"] == stats["total_violations"] > 0
    assert governed["store_governance_stats"]["duplicate_spans"] == 0
    assert recipe_run["results"]["args"]["store_url"] == agl_store["url"]


def test_the_violations_command_lists_them(agl_store, recipe_run, capsys):
    assert report.main(["violations", "--store-url", agl_store["url"]]) == 0
    printed = capsys.readouterr().out
    rollouts, stats = _store_view(agl_store["url"])
    assert printed.startswith(f"{stats['rollouts_with_violations']} of {len(rollouts)} rollouts had violations")
    assert printed.count(f"{agl_store['url']}/traces?rolloutId=") == stats["rollouts_with_violations"]
    assert "SQLPolicy (critical) x1" in printed
    assert report.main(["violations", "--store-url", agl_store["url"], "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert len(rows) == stats["rollouts_with_violations"] and all(
        r["violations"] >= 1 and r["total_penalty"] <= -100.0 for r in rows
    )


def test_the_violations_command_runs_as_a_module(agl_store, recipe_run):
    done = subprocess.run(
        [sys.executable, "-m", "agentlightning.contrib.runner.agentos", "violations", "--store-url", agl_store["url"]],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert re.match(r"\d+ of \d+ rollouts had violations\n", done.stdout) and "SQLPolicy (critical)" in done.stdout
    nobody = f"http://127.0.0.1:{portpicker.pick_unused_port()}"
    missing = subprocess.run(
        [sys.executable, "-m", "agentlightning.contrib.runner.agentos", "violations", "--store-url", nobody],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert missing.returncode == 2 and "Is `agl store --port <port>` running there?" in missing.stderr


def test_a_trainer_serving_its_own_store_on_agl_stores_port_fails(agl_store, tmp_path):
    """The clash docs/audit.md describes: `agl store` and the Trainer both default to port 4747.
    Here agl store holds a free port and a Trainer is told to serve on it."""
    script = textwrap.dedent(
        f"""
        import os
        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        import agentlightning as agl
        from agentlightning.algorithm import algo
        from agentlightning.contrib.kernel.agentos import SQLPolicy
        from agentlightning.contrib.runner.agentos import AgentOSRunner, as_agent

        @algo
        async def nothing(*, store):
            print("the algorithm ran", flush=True)

        try:
            agl.Trainer(algorithm=nothing, runner=AgentOSRunner([SQLPolicy(deny=["DROP"])]), n_runners=1,
                        port={agl_store["port"]}).fit(as_agent(lambda task: 1.0))
        except RuntimeError as err:
            print("Trainer.fit raised:", err, flush=True)
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    output = done.stdout + done.stderr
    assert "address already in use" in output
    assert "Trainer.fit raised: Server did not start up" in output and "the algorithm ran" not in output
    urllib.request.urlopen(f"{agl_store['url']}/v1/agl/health", timeout=5).read()  # agl store is unharmed


def test_a_store_url_nobody_answers_is_named_with_the_fix(tmp_path):
    sys.path.insert(0, str(RECIPE_DIR))
    try:
        import train_sql_grpo

        url = f"http://127.0.0.1:{portpicker.pick_unused_port()}"
        with pytest.raises(
            SystemExit, match=r"--store-url .*: no agl store answers there .*agl store --host 127.0.0.1 --port 4747"
        ):
            train_sql_grpo.main(["--store-url", url, "--out", str(tmp_path)])
        with pytest.raises(SystemExit):
            train_sql_grpo.parse_args(["--store-url", "127.0.0.1:4747"])  # not a URL: argparse error
    finally:
        sys.path.remove(str(RECIPE_DIR))
