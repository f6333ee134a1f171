"""The audit trail of a real multi-runner Trainer run, exported into a real `agl store` server.

`agl store` runs as a subprocess; the Trainer's two runner processes connect to it (client-server
strategy with managed_store=False and a LightningStoreClient); each runner process writes its own
FlightRecorder file (allowed decisions batched, blocked ones flushed). Afterwards the files are
emitted into the server through a LightningStoreClient, and what the server holds is compared
with what is on disk."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path

import portpicker
import pytest

import agentlightning as agl
from agentlightning.execution.client_server import ClientServerExecutionStrategy
from agentlightning.store.client_server import LightningStoreClient
from agl_store_server import agl_store_server  # noqa: E402  (a recipe module; runner_agents puts the recipes on sys.path)

from agentlightning.contrib.adapter.agentos import adapters_for_directory, verify_export
from agentlightning.contrib.adapter.agentos.spans import is_audit_span
from agentlightning.contrib.kernel.agentos import GovernanceKernel, SQLPolicy
from agentlightning.contrib.kernel.agentos.agl03.stats import governance_stats
from agentlightning.contrib.reward.agentos import PolicyReward
from agentlightning.contrib.runner.agentos import AgentOSRunner
from agentlightning.contrib.runner.agentos.hosts import parse_audit_file_name

from .conftest import make_shop_db
from .runner_agents import SQLAgent, make_collecting_algorithm, mixed_sql_tasks

# End to end (an `agl store` server and a two-runner Trainer): minutes; `pytest -m "not e2e"` leaves it out.
pytestmark = pytest.mark.e2e

BAD = ["DROP TABLE users", "DELETE/**/FROM orders", "TRUNCATE users"]
GOOD = ["SELECT COUNT(*) FROM users", "SELECT 'DROP TABLE users'"]
N_ROLLOUTS = 12


async def _snapshot(url: str):
    client = LightningStoreClient(url)
    try:
        rollouts = list(await client.query_rollouts())
        spans = {r.rollout_id: list(await client.query_spans(r.rollout_id)) for r in rollouts}
        return rollouts, spans, await governance_stats(client)
    finally:
        await client.close()


async def _emit(url: str, audit_dir: Path):
    client = LightningStoreClient(url)
    try:
        adapters = adapters_for_directory(audit_dir)
        first = [await a.emit_to_store(client) for a in adapters]
        second = [await a.emit_to_store(client) for a in adapters]
        fresh = [await a.emit_to_store(client) for a in adapters_for_directory(audit_dir)]  # new cursors
        return first, second, fresh
    finally:
        await client.close()


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("adapter_trainer")
    db = tmp / "shop.db"
    make_shop_db(db)
    tasks = mixed_sql_tasks(str(db), N_ROLLOUTS, GOOD, BAD, second_bad_every=4, sleep=0.05)
    port = portpicker.pick_unused_port()
    with agl_store_server(tmp / "agl-store.log", port=port) as url:
        kernel = GovernanceKernel([SQLPolicy(deny=["DROP", "DELETE", "TRUNCATE"], dialect="sqlite")])
        runner = AgentOSRunner(
            kernel, audit_dir=tmp / "audit", poll_interval=0.1, log_violations=False, reward_fn=PolicyReward(kernel)
        )
        store = LightningStoreClient(url)
        trainer = agl.Trainer(
            algorithm=make_collecting_algorithm(tasks, str(tmp / "result.json"), port),
            runner=runner,
            store=store,
            strategy=ClientServerExecutionStrategy(n_runners=2, managed_store=False),
        )
        trainer.fit(SQLAgent())
        asyncio.run(store.close())
        before = asyncio.run(_snapshot(url))
        emitted = asyncio.run(_emit(url, tmp / "audit"))
        after = asyncio.run(_snapshot(url))
    return {
        "tasks": tasks,
        "audit_dir": tmp / "audit",
        "result": json.loads((tmp / "result.json").read_text()),
        "before": before,
        "emitted": emitted,
        "after": after,
        "tmp": tmp,
    }


def _disk_rows(audit_dir: Path):
    rows = []
    for path in sorted(audit_dir.glob("worker-*.db")):
        conn = sqlite3.connect(path)
        rows += [(path.name, *r) for r in conn.execute("SELECT id, policy_verdict, tool_args FROM audit_log")]
        conn.close()
    return rows


def test_two_runner_processes_each_wrote_a_recorder_file(run):
    assert {r["status"] for r in run["result"]["rollouts"].values()} == {"succeeded"}
    assert len({r["worker_id"] for r in run["result"]["rollouts"].values()}) == 2
    assert sorted(parse_audit_file_name(p.name)[0] for p in run["audit_dir"].glob("*.db")) == [0, 1]


def test_violation_spans_in_the_store_equal_blocked_records_on_disk(run):
    rows = _disk_rows(run["audit_dir"])
    expected = sum(q in BAD for t in run["tasks"] for q in t["queries"])
    blocked_on_disk = sum(r[2] == "blocked" for r in rows)
    _, spans, stats = run["after"]
    audit = [s for ss in spans.values() for s in ss if is_audit_span(s)]
    audit_blocked = [s for s in audit if s.attributes["agent_os.blocked"] is True]
    assert blocked_on_disk == expected > 0
    assert len(audit_blocked) == blocked_on_disk
    assert all(s.name.startswith("agent_os.policy_check: blocked by SQLPolicy") for s in audit_blocked)
    # every record, allowed ones too (batched by the recorder), reached the store exactly once
    assert len(audit) == len(rows) == sum(len(t["queries"]) for t in run["tasks"])
    # the runner's own violation spans are still the only ones governance_stats counts
    assert stats["total_violations"] == expected == run["before"][2]["total_violations"]
    assert stats["total_rollouts"] == N_ROLLOUTS and stats["duplicate_spans"] == 0


def test_audit_spans_sit_in_the_rollout_and_attempt_of_their_decision(run):
    rollouts, spans, _ = run["after"]
    latest = {rid: r["attempt_id"] for rid, r in run["result"]["rollouts"].items()}
    for rollout_id, rollout_spans in spans.items():
        audit = [s for s in rollout_spans if is_audit_span(s)]
        task = run["tasks"][run["result"]["rollouts"][rollout_id]["task_index"]]
        assert len(audit) == len(task["queries"])
        for span in audit:
            assert span.attributes["agent_os.rollout_id"] == span.rollout_id == rollout_id
            assert span.attributes["agent_os.attempt_id"] == span.attempt_id == latest[rollout_id]
        # the governed reward span is still the rollout's final reward, next to the audit spans
        assert run["result"]["rollouts"][rollout_id]["final_reward"] is not None
    assert len(rollouts) == N_ROLLOUTS  # no audit rollout was needed


def test_repeated_and_fresh_emits_duplicate_nothing(run):
    first, second, fresh = run["emitted"]
    assert sum(first) == len(_disk_rows(run["audit_dir"]))
    assert second == [0, 0] and fresh == [0, 0]
    _, spans, _ = run["after"]
    for rollout_spans in spans.values():
        ids = [s.span_id for s in rollout_spans]
        assert len(ids) == len(set(ids))


def test_each_recorder_file_verifies_and_exports_verifiably(run):
    for adapter in adapters_for_directory(run["audit_dir"]):
        assert adapter.verify_integrity()["valid"] is True
        out = run["tmp"] / "exports" / (adapter.path.stem + ".jsonl")
        assert adapter.export_to_file(out) == len(adapter.records())
        assert verify_export(out, against=adapter.path, expected_head=adapter.chain_head())["valid"] is True
