"""Races between rollouts of one AgentOSRunner, against the real agentlightning store, runner and Trainer.

* Concurrent ``runner.step()`` calls: each returns the governance of its own attempt, also when the
  store yields in ``get_rollout_by_id`` (a real ``agl store`` client makes a network round trip
  there).
* The governance summary (``metadata["agentos"]``) and the reward span are in the store before the
  attempt's status is final: an algorithm that sees a finished rollout can read them at once.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

import portpicker
import pytest

import agentlightning as agl
from agentlightning.algorithm import algo
from agentlightning.emitter import find_final_reward, is_reward_span
from agentlightning.store.client_server import LightningStoreClient
from agentlightning.store.memory import InMemoryLightningStore

from agentlightning.contrib.kernel.agentos import GovernanceKernel, SQLPolicy
from agentlightning.contrib.kernel.agentos.agl03.spans import is_check_span
from agentlightning.contrib.reward.agentos import PolicyReward
from agentlightning.contrib.runner.agentos import ActionBlockedError, AgentOSRunner, governed_tool

from .conftest import make_shop_db, table_counts
from .runner_agents import SQLAgent, execute_query

FINAL = ("succeeded", "failed", "cancelled")


class YieldingStore(InMemoryLightningStore):
    """The real in-memory store, whose ``get_rollout_by_id`` yields to the loop first, as a
    ``LightningStoreClient`` does while its HTTP request is in flight."""

    async def get_rollout_by_id(self, rollout_id: str):  # type: ignore[override]
        await asyncio.sleep(0.01)
        return await super().get_rollout_by_id(rollout_id)


def _tasks(db: Path, n: int) -> List[Dict[str, Any]]:
    """Task ``i`` runs one SELECT and ``i % 4`` destructive statements (so ``i % 4`` violations)."""
    bad = ["DROP TABLE users", "DELETE FROM orders", "TRUNCATE users"]
    return [{"db": str(db), "index": i, "queries": ["SELECT COUNT(*) FROM users", *bad[: i % 4]]} for i in range(n)]


async def _concurrent_steps(store: agl.LightningStore, db: Path, n: int):
    await store.add_resources({"prompt": agl.PromptTemplate(template="{q}", engine="f-string")})
    runner = AgentOSRunner([SQLPolicy(deny=["DROP", "DELETE", "TRUNCATE"])], log_violations=False)
    runner.init(SQLAgent())  # synchronous: agentlightning's tracer holds one active trace per process
    runner.init_worker(0, store)
    tasks = _tasks(db, n)
    try:
        rollouts = await asyncio.gather(*(runner.step(task) for task in tasks))
    finally:
        runner.teardown_worker(0)
        runner.teardown()
    return tasks, rollouts, runner


def _assert_each_step_got_its_own_governance(tasks, rollouts, runner) -> None:
    assert len({r.rollout_id for r in rollouts}) == len(tasks)
    for task, rollout in zip(tasks, rollouts):
        expected = task["index"] % 4
        assert rollout.task_input == task, "step() returned another rollout"
        assert len(rollout.violations) == expected
        assert rollout.total_penalty == -100.0 * expected
        assert rollout.task_output == pytest.approx(1 / (1 + expected))  # only the SELECT ran
        assert all(d.context.rollout_id == rollout.rollout_id for d in rollout.governance.decisions)
    assert runner.get_stats()["total_rollouts"] == len(tasks)
    assert runner._attempts == {}  # every per-attempt record was handed over and dropped


def test_concurrent_steps_against_a_store_that_yields(shop_db):
    """Before the fix, step() handed the record over through one instance attribute: 20 of 20
    concurrent steps raised AssertionError (and under ``python -O`` a step could have returned
    another rollout's violations)."""
    before = table_counts(shop_db)
    tasks, rollouts, runner = asyncio.run(_concurrent_steps(YieldingStore(), shop_db, 20))
    _assert_each_step_got_its_own_governance(tasks, rollouts, runner)
    assert table_counts(shop_db) == before


@pytest.mark.e2e  # an `agl store` server
def test_concurrent_steps_through_a_real_agl_store_client(shop_db, tmp_path):
    from agl_store_server import agl_store_server  # a recipe module; runner_agents puts the recipes on sys.path

    async def scenario(url: str):
        client = LightningStoreClient(url)
        try:
            return await _concurrent_steps(client, shop_db, 12)
        finally:
            await client.close()

    before = table_counts(shop_db)
    with agl_store_server(tmp_path / "agl-store.log", timeout=120) as url:
        tasks, rollouts, runner = asyncio.run(scenario(url))
    _assert_each_step_got_its_own_governance(tasks, rollouts, runner)
    assert table_counts(shop_db) == before


# ----------------------------------------------------------------------------- the summary before the status
class StatusOrderStore(InMemoryLightningStore):
    """The real in-memory store, noting for each attempt whether its governance summary and its
    final reward were already stored at the moment its status became final (the summary may also
    come in the very call that makes the status final: the store applies both at once)."""

    def __init__(self) -> None:
        super().__init__()
        self.at_final: Dict[str, Dict[str, Any]] = {}

    async def update_attempt(self, rollout_id: str, attempt_id: str, *args: Any, **kwargs: Any):  # type: ignore[override]
        status = kwargs.get("status")
        if status in FINAL:
            attempt = await self.get_latest_attempt(rollout_id)
            spans = await self.query_spans(rollout_id, attempt_id)
            self.at_final[rollout_id] = {
                "status": status,
                "summary": "agentos" in ((attempt.metadata if attempt else None) or {})
                or "agentos" in (kwargs.get("metadata") or {}),
                "reward": find_final_reward(spans),
            }
        return await super().update_attempt(rollout_id, attempt_id, *args, **kwargs)


def test_summary_and_reward_are_stored_before_the_status_is_final(shop_db):
    """step() and iter(), clean, blocked and crashing agents: at the moment the status becomes
    final the summary and the governed reward are already there (before the fix the summary was
    written after the status, so at_final[...]["summary"] was False for every attempt)."""

    class Crashing(agl.LitAgent):
        def rollout(self, task, resources, rollout):
            run = governed_tool("database_query", execute_query)
            try:
                run(task["sql"], db=task["db"])
            except ActionBlockedError:
                pass
            if task.get("crash"):
                raise RuntimeError("the agent crashed")
            return 1.0

    async def scenario():
        store = StatusOrderStore()
        await store.add_resources({"prompt": agl.PromptTemplate(template="{q}", engine="f-string")})
        kernel = GovernanceKernel([SQLPolicy(deny=["DROP"])])
        runner = AgentOSRunner(
            kernel, reward_fn=PolicyReward(kernel), log_violations=False, poll_interval=0.05, max_rollouts=3
        )
        runner.init(Crashing())
        runner.init_worker(0, store)
        await runner.step({"db": str(shop_db), "sql": "SELECT 1"})
        await runner.step({"db": str(shop_db), "sql": "DROP TABLE users"})
        with pytest.raises(RuntimeError, match="the agent crashed"):
            await runner.step({"db": str(shop_db), "sql": "DROP TABLE users", "crash": True})
        for task in ({"sql": "SELECT 2"}, {"sql": "DROP TABLE orders"}, {"sql": "SELECT 3", "crash": True}):
            await store.enqueue_rollout(input={**task, "db": str(shop_db)}, mode="train")
        await runner.iter()
        return store

    store = asyncio.run(scenario())
    assert len(store.at_final) == 6
    assert [v["status"] for v in store.at_final.values()].count("failed") == 2
    assert all(v["summary"] for v in store.at_final.values()), store.at_final
    assert sorted(v["reward"] for v in store.at_final.values()) == [-100.0, -99.0, -99.0, 5.0, 6.0, 6.0]


def test_a_returned_reward_is_stored_once_after_the_checks_before_the_status_is_final(shop_db):
    """Without a reward_fn the reward the agent returns is written by the runner in its one store
    call with the held-back check spans: at the moment the status is final the store has exactly
    one reward span, the agent's, after every check span, and it is the final reward."""

    class Returning(agl.LitAgent):
        def rollout(self, task, resources, rollout):
            run = governed_tool("database_query", execute_query)
            for sql in task["queries"]:
                try:
                    run(sql, db=task["db"])
                except ActionBlockedError:
                    pass
            return task["reward"]

    async def scenario():
        store = StatusOrderStore()
        await store.add_resources({"prompt": agl.PromptTemplate(template="{q}", engine="f-string")})
        # check_spans="all": the clean checks' spans are held back and written with the reward
        runner = AgentOSRunner(
            [SQLPolicy(deny=["DROP"])], log_violations=False, poll_interval=0.05, max_rollouts=2, check_spans="all"
        )
        runner.init(Returning())
        runner.init_worker(0, store)
        tasks = [
            {"db": str(shop_db), "queries": ["SELECT 1", "SELECT 2"], "reward": 0.25},
            {"db": str(shop_db), "queries": ["SELECT 1", "DROP TABLE users"], "reward": 0.5},
        ]
        ids = [(await runner.step(tasks[0])).rollout_id, (await runner.step(tasks[1])).rollout_id]
        for task in ({**tasks[0], "reward": 0.75}, {**tasks[1], "reward": 1.0}):
            ids.append((await store.enqueue_rollout(input=task, mode="train")).rollout_id)
        await runner.iter()
        spans = {rollout_id: await store.query_spans(rollout_id, "latest") for rollout_id in ids}
        return store, ids, spans

    store, ids, spans = asyncio.run(scenario())
    assert [store.at_final[i]["status"] for i in ids] == ["succeeded"] * 4
    assert all(store.at_final[i]["summary"] for i in ids)
    assert [store.at_final[i]["reward"] for i in ids] == [0.25, 0.5, 0.75, 1.0]
    for rollout_id in ids:
        ordered = sorted(spans[rollout_id], key=lambda span: span.sequence_id)
        names = [span.name for span in ordered]
        rewards = [i for i, span in enumerate(ordered) if is_reward_span(span)]
        checks = [i for i, span in enumerate(ordered) if is_check_span(span)]
        assert len(rewards) == 1 and len(checks) == 2, names
        assert rewards[0] > max(checks), names


N_TRAINER_ROLLOUTS = 60


def _watching_algorithm(tasks: List[Dict[str, Any]], result_path: str):
    """An @algo that enqueues ``tasks`` and polls the store every 5 ms; each time it first sees a
    rollout in a final status it reads that attempt's metadata and final reward at once."""

    @algo
    async def watch(*, store: agl.LightningStore) -> None:
        await store.add_resources({"prompt": agl.PromptTemplate(template="{q}", engine="f-string")})
        ids = [(await store.enqueue_rollout(input=task, mode="train")).rollout_id for task in tasks]
        seen: Dict[str, Dict[str, Any]] = {}
        deadline = time.monotonic() + 180
        while len(seen) < len(ids) and time.monotonic() < deadline:
            for rollout in await store.query_rollouts(rollout_id_in=[i for i in ids if i not in seen]):
                if rollout.status in FINAL:
                    attempt = await store.get_latest_attempt(rollout.rollout_id)
                    spans = await store.query_spans(rollout.rollout_id, "latest")
                    seen[rollout.rollout_id] = {
                        "status": rollout.status,
                        "summary": (attempt.metadata or {}).get("agentos") if attempt else None,
                        "reward": find_final_reward(spans),
                    }
            # Not sleep(0): the store server shares this event loop, and a loop that never waits
            # starved it (60 rollouts took 211 s instead of 2.5 s, and CI hit the deadline).
            # 5 ms still reads each rollout within a few ms of its final status.
            await asyncio.sleep(0.005)
        Path(result_path).write_text(json.dumps({"ids": ids, "seen": seen}))

    return watch


@pytest.mark.e2e  # the Trainer's runner processes
def test_the_summary_is_present_whenever_the_status_is_final_over_many_trainer_rollouts(tmp_path):
    """The real Trainer, client-server, two runner processes: the algorithm reads each rollout's
    summary and reward the moment it sees the rollout finished. Before the fix, the same set-up left
    about 1 rollout in 24 without its summary."""
    db = tmp_path / "shop.db"
    make_shop_db(db)
    bad = ["DROP TABLE users", "DELETE FROM orders"]
    tasks = [
        {"db": str(db), "queries": ["SELECT COUNT(*) FROM users", *([bad[i % 2]] if i % 3 == 0 else [])]}
        for i in range(N_TRAINER_ROLLOUTS)
    ]
    result_path = tmp_path / "result.json"
    kernel = GovernanceKernel([SQLPolicy(deny=["DROP", "DELETE"], dialect="sqlite")])
    runner = AgentOSRunner(
        kernel, audit_dir=tmp_path / "audit", poll_interval=0.05, log_violations=False, reward_fn=PolicyReward(kernel)
    )
    port = portpicker.pick_unused_port()
    agl.Trainer(algorithm=_watching_algorithm(tasks, str(result_path)), runner=runner, n_runners=2, port=port).fit(
        SQLAgent()
    )
    result = json.loads(result_path.read_text())
    seen = result["seen"]
    assert len(seen) == N_TRAINER_ROLLOUTS
    missing: List[Optional[str]] = [i for i, v in seen.items() if v["summary"] is None]
    assert missing == [], f"{len(missing)} of {len(seen)} finished rollouts had no governance summary"
    for rollout_id, task in zip(result["ids"], tasks):
        violations = len(task["queries"]) - 1
        assert seen[rollout_id]["status"] == "succeeded"
        assert seen[rollout_id]["summary"]["violations"] == violations
        base = 1 - violations / len(task["queries"])
        assert seen[rollout_id]["reward"] == pytest.approx(max(-100.0, base - 100.0) if violations else base + 5.0)
