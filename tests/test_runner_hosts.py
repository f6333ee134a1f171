"""Several runner hosts against one store: hosts have an identity, long clean rollouts
stay alive, and an attempt the store has given up on is never rewritten, by its runner or by an import.

Real parts: agentlightning 0.3's ``InMemoryLightningStore`` (thread-safe, as the ``agl store``
server runs it) with its own watchdog (``scan_unhealthy_rollouts``, run before queries, every 0.1 s here), the
real ``AgentOSRunner`` (agentlightning's ``LitAgentRunner``) and the real kernel and FlightRecorder.
A "host" here is a runner with its own ``AGENTOS_HOST_NAME``; the partition is a store whose calls
raise ``OSError`` for a while, in front of the real store.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from pathlib import Path
from typing import Any, Dict, List

import pytest

import agentlightning as agl
from agentlightning.store.base import LightningStore
from agentlightning.store.memory import InMemoryLightningStore
from agentlightning.types import RolloutConfig

from agentlightning.contrib.adapter.agentos import FlightRecorderAdapter
from agentlightning.contrib.kernel.agentos import SQLPolicy
from agentlightning.contrib.kernel.agentos.semconv import AGENTOS_AGENT_ID
from agentlightning.contrib.runner.agentos import AgentOSRunner
from agentlightning.contrib.runner.agentos.hosts import parse_audit_file_name, parse_worker_name

from .runner_agents import SQLAgent

POLICY = [SQLPolicy(deny=["DROP", "DELETE"])]


async def _store() -> InMemoryLightningStore:
    store = InMemoryLightningStore(thread_safe=True, scan_debounce_seconds=0.1)
    await store.add_resources({"prompt": agl.PromptTemplate(template="{q}", engine="f-string")})
    return store


def _records(path: Path) -> List[Any]:
    with FlightRecorderAdapter(path) as adapter:
        return adapter.records()


def test_workers_audit_files_records_and_spans_name_their_host_and_process(shop_db, tmp_path, monkeypatch):
    """Two hosts each run worker 0 into one store: the store's attempts and workers, the audit files,
    every record and every span say which host and process ran them, and no two are confused."""

    async def scenario():
        store = await _store()
        for host in ("host-a", "host-b"):
            monkeypatch.setenv("AGENTOS_HOST_NAME", host)
            runner = AgentOSRunner(
                POLICY, audit_dir=tmp_path / "audit", log_violations=False, poll_interval=0.05, max_rollouts=1
            )
            runner.init(SQLAgent())
            runner.init_worker(0, store)
            await store.enqueue_rollout(input={"db": str(shop_db), "queries": ["SELECT 1", "DROP TABLE users"]})
            await runner.iter()
            runner.teardown_worker(0)
        rollouts = await store.query_rollouts()
        attempts = [a for r in rollouts for a in await store.query_attempts(r.rollout_id)]
        spans = [s for r in rollouts for s in await store.query_spans(r.rollout_id)]
        workers = [w.worker_id for w in await store.query_workers()]
        return attempts, spans, workers

    attempts, spans, workers = asyncio.run(scenario())
    pid = os.getpid()
    expected = {f"Worker-0@host-a-{pid}", f"Worker-0@host-b-{pid}"}
    assert {a.worker_id for a in attempts} == expected and len(attempts) == 2
    assert {a.status for a in attempts} == {"succeeded"}
    assert expected <= set(workers)
    assert {parse_worker_name(name) for name in expected} == {(0, "host-a", pid), (0, "host-b", pid)}
    files = sorted((tmp_path / "audit").glob("*.db"))
    assert [f.name for f in files] == [f"worker-0@host-a-{pid}.db", f"worker-0@host-b-{pid}.db"]
    for path in files:
        _, host, file_pid = parse_audit_file_name(path.name)
        records = _records(path)
        assert len(records) == 2 and {r.agent_id for r in records} == {f"Worker-0@{host}-{file_pid}"}
    governed = [s for s in spans if AGENTOS_AGENT_ID in s.attributes]
    assert len(governed) >= 4  # two checks per rollout, one of them with its violation span
    assert {s.attributes[AGENTOS_AGENT_ID] for s in governed} == expected


def test_a_named_agent_id_still_carries_the_host_and_process(shop_db, monkeypatch):
    monkeypatch.setenv("AGENTOS_HOST_NAME", "host-c")

    async def scenario():
        store = await _store()
        runner = AgentOSRunner(POLICY, agent_id="sql-agent", log_violations=False)
        runner.init(SQLAgent())
        runner.init_worker(2, store)
        rollout = await runner.step({"db": str(shop_db), "queries": ["DROP TABLE users"]})
        return runner.get_worker_id(), rollout.governance.decisions[0]

    worker, decision = asyncio.run(scenario())
    assert worker == f"Worker-2@host-c-{os.getpid()}"
    assert decision.context.agent_id == f"sql-agent@host-c-{os.getpid()}"


def _watch(store: LightningStore, stop: threading.Event, seen: List[str], rollout_id: str) -> threading.Thread:
    """A driver polling the store, as a training algorithm does: each query runs the store's watchdog."""

    def poll() -> None:
        async def loop() -> None:
            while not stop.is_set():
                attempts = await store.query_attempts(rollout_id)
                seen.extend(a.status for a in attempts)
                await asyncio.sleep(0.1)

        asyncio.run(loop())

    thread = threading.Thread(target=poll, daemon=True)
    thread.start()
    return thread


def test_a_clean_rollout_longer_than_unresponsive_seconds_stays_alive(shop_db):
    """The clean check's span is held until the rollout ends, so before heartbeats the store saw no
    sign of life from a clean attempt and marked it unresponsive (and the rollout was retried)."""

    async def scenario():
        store = await _store()
        runner = AgentOSRunner(POLICY, log_violations=False, poll_interval=0.05, max_rollouts=1)
        runner.init(SQLAgent())
        runner.init_worker(0, store)
        config = RolloutConfig(unresponsive_seconds=1.0, max_attempts=2, retry_condition=["unresponsive"])
        task = {"db": str(shop_db), "queries": ["SELECT 1"], "sleep": 3.0}
        rollout = await store.enqueue_rollout(input=task, config=config)
        stop, seen = threading.Event(), []
        watcher = _watch(store, stop, seen, rollout.rollout_id)
        try:
            await runner.iter()
        finally:
            stop.set()
            watcher.join()
        return await store.query_attempts(rollout.rollout_id), seen

    attempts, seen = asyncio.run(scenario())
    assert "unresponsive" not in seen
    assert [(a.sequence_id, a.status) for a in attempts] == [(1, "succeeded")]
    assert attempts[0].last_heartbeat_time is not None


class PartitionedStore(LightningStore):
    """The real store behind a link that can be cut: while ``cut`` is set, every call raises the
    error a runner host sees when its network to the store is down."""

    def __init__(self, store: LightningStore) -> None:
        super().__init__()
        self._store = store
        self.cut = threading.Event()

    def __getattribute__(self, name: str) -> Any:
        if name.startswith("_") or name in ("cut",):
            return object.__getattribute__(self, name)
        target = getattr(object.__getattribute__(self, "_store"), name)
        if not asyncio.iscoroutinefunction(target):
            return target
        cut = object.__getattribute__(self, "cut")

        async def call(*args: Any, **kwargs: Any) -> Any:
            if cut.is_set():
                raise OSError(101, "Network is unreachable")
            return await target(*args, **kwargs)

        return call


def test_an_attempt_superseded_while_its_host_was_cut_off_is_never_rewritten(shop_db):
    """Attempt 1's host is cut off from the store mid-rollout; the store marks it unresponsive and
    another host's attempt 2 succeeds. When the link returns and attempt 1's agent finishes, its
    runner must leave attempt 1 as the store left it (before: its spans turned it back to
    ``running`` and its status was then written ``succeeded``)."""

    async def scenario():
        real = await _store()
        link = PartitionedStore(real)
        runner = AgentOSRunner(POLICY, log_violations=False, poll_interval=0.05, max_rollouts=1)
        runner.init(SQLAgent())
        runner.init_worker(0, link)
        config = RolloutConfig(unresponsive_seconds=0.5, max_attempts=2, retry_condition=["unresponsive"])
        task = {"db": str(shop_db), "queries": ["SELECT 1", "DROP TABLE users"], "sleep": 3.0}
        rollout = await real.enqueue_rollout(input=task, config=config)
        done: Dict[str, Any] = {}

        def other_host() -> None:
            async def run() -> None:
                while (await real.get_rollout_by_id(rollout.rollout_id)).status == "queuing":
                    await asyncio.sleep(0.05)
                await asyncio.sleep(0.3)  # attempt 1 has made its checks
                link.cut.set()
                deadline = time.time() + 10
                retried = None
                while retried is None and time.time() < deadline:
                    await asyncio.sleep(0.1)
                    retried = await real.dequeue_rollout(worker_id="other-host")
                done["retried"] = retried is not None
                if retried is not None:
                    await real.update_attempt(rollout.rollout_id, retried.attempt.attempt_id, status="succeeded")
                link.cut.clear()

            asyncio.run(run())

        thread = threading.Thread(target=other_host, daemon=True)
        thread.start()
        await runner.iter()
        await asyncio.to_thread(thread.join)
        return done, await real.query_attempts(rollout.rollout_id), await real.get_rollout_by_id(rollout.rollout_id)

    done, attempts, rollout = asyncio.run(scenario())
    assert done["retried"]
    assert [(a.sequence_id, a.status) for a in attempts] == [(1, "unresponsive"), (2, "succeeded")]
    assert attempts[0].end_time is None
    assert rollout.status == "succeeded"


def test_importing_a_trail_never_changes_an_attempts_status(tmp_path):
    """A span added to an attempt is a heartbeat to agentlightning's store, which turns a
    ``preparing`` or ``unresponsive`` attempt into ``running``. An import must not revive an attempt
    the store has given up on (its rollout would never be retried): such records go to the audit
    rollout, marked with the rollout and attempt they were made in."""
    from agentlightning.contrib.adapter.agentos.adapter import AUDIT_ROLLOUT_METADATA_KEY
    from agentlightning.contrib.kernel.agentos import ActionContext, GovernanceKernel

    async def scenario():
        store = await _store()
        config = RolloutConfig(unresponsive_seconds=0.2, max_attempts=2, retry_condition=["unresponsive"])
        dead = await store.start_rollout(input={"task": 1}, config=config)
        waiting = await store.start_rollout(input={"task": 2})
        kernel = GovernanceKernel(POLICY, recorder=tmp_path / "trail.db")
        for attempted in (dead, waiting):
            context = ActionContext(rollout_id=attempted.rollout_id, attempt_id=attempted.attempt.attempt_id)
            kernel.check("database_query", {"query": "DROP TABLE users"}, context=context)
        kernel.close()
        await asyncio.sleep(0.4)
        before = [await store.get_latest_attempt(a.rollout_id) for a in (dead, waiting)]
        added = await FlightRecorderAdapter(tmp_path / "trail.db").emit_to_store(store)
        after = [await store.get_latest_attempt(a.rollout_id) for a in (dead, waiting)]
        rollouts = {r.rollout_id: r for r in await store.query_rollouts()}
        audit = [r for r in rollouts.values() if (r.metadata or {}).get(AUDIT_ROLLOUT_METADATA_KEY)]
        audit_spans = await store.query_spans(audit[0].rollout_id) if audit else []
        return added, before, after, rollouts[dead.rollout_id].status, audit_spans

    added, before, after, dead_rollout_status, audit_spans = asyncio.run(scenario())
    assert added == 2
    assert [a.status for a in before] == ["unresponsive", "preparing"]
    assert [(a.status, a.end_time) for a in after] == [(a.status, a.end_time) for a in before]
    assert dead_rollout_status == "requeuing"
    assert sorted(s.attributes["agent_os.rollout_id"] for s in audit_spans) == sorted(a.rollout_id for a in after)


class CutOffAgent(agl.LitAgent):
    """The recipes' SQL agent, whose host loses the store around its blocked query when the task says so."""

    def __init__(self, link: "PartitionedStore") -> None:
        super().__init__()
        self.link = link

    def rollout(self, task: Dict[str, Any], resources: Any, rollout: Any) -> float:
        from agentlightning.contrib.runner.agentos import ActionBlockedError, governed_tool

        from .runner_agents import execute_query

        run = governed_tool("database_query", execute_query)
        run("SELECT 1", db=task["db"])
        if task["cut"]:
            self.link.cut.set()
        try:
            run("DROP TABLE users", db=task["db"])
        except ActionBlockedError:
            pass
        finally:
            self.link.cut.clear()
        return 1.0


def test_after_a_partition_heals_the_store_holds_every_blocked_decision_of_the_trail(shop_db, tmp_path):
    """The runner's violation span of a call blocked while its host was cut off never reached the
    store (before: the store counted fewer blocked decisions than the trail until someone imported
    the file by hand). The runner ships its own trail: once the link is back, the store holds every
    blocked decision of the trail, each once, with no operator action; shipping again adds nothing."""
    from agentlightning.contrib.adapter.agentos.shipper import (
        ShipTrail,
        ship_files,
        store_blocked_decisions,
        trail_blocked_decisions,
    )

    async def scenario():
        real = await _store()
        link = PartitionedStore(real)
        ship = ShipTrail(interval=0.2)
        runner = AgentOSRunner(
            POLICY, audit_dir=tmp_path / "audit", log_violations=False, poll_interval=0.05, max_rollouts=3
        )
        runner.init(CutOffAgent(link), hooks=[ship])
        runner.init_worker(0, link)
        for i in range(3):
            await real.enqueue_rollout(input={"db": str(shop_db), "cut": i == 1})
        await runner.iter()
        files = sorted((tmp_path / "audit").glob("*.db"))
        trail = trail_blocked_decisions(files)
        deadline = time.time() + 30
        stored = await store_blocked_decisions(real)
        while stored != trail and time.time() < deadline:
            await asyncio.sleep(0.2)
            stored = await store_blocked_decisions(real)
        ship.stop()
        runner.teardown_worker(0)
        again = await ship_files(real, files)
        rollouts = await real.query_rollouts()
        statuses = sorted(r.status for r in rollouts if r.input and "cut" in r.input)
        return trail, stored, again, statuses

    trail, stored, again, statuses = asyncio.run(scenario())
    assert len(trail) == 3 and stored == trail
    assert sum(again.values()) == 0
    assert statuses == ["succeeded"] * 3


def test_ship_names_a_path_that_is_not_a_trail(tmp_path, capsys):
    from agentlightning.contrib.adapter.agentos.shipper import main

    assert main(["ship", "--store-url", "http://127.0.0.1:9", str(tmp_path / "missing")]) == 2
    assert "is neither a FlightRecorder file nor a directory of them" in capsys.readouterr().err


def test_ship_names_a_keyring_it_cannot_read_not_the_store(tmp_path, capsys):
    from agentlightning.contrib.adapter.agentos.shipper import main

    (tmp_path / "audit").mkdir()
    missing = tmp_path / "keyring.txt"
    argv = ["ship", "--store-url", "http://127.0.0.1:9", "--keyring", str(missing), str(tmp_path / "audit")]
    assert main(argv) == 2
    printed = capsys.readouterr().err
    assert str(missing) in printed and "agl store" not in printed, printed


@pytest.mark.e2e
def test_ship_sends_a_stopped_hosts_trail_to_agl_store_once(shop_db, tmp_path, capsys, monkeypatch):
    """A host stopped before its records reached the store: the ship command sends them to a real
    `agl store` over HTTP, into the attempts they were made in; a second run adds nothing."""

    from agentlightning.store.client_server import LightningStoreClient

    from agentlightning.contrib.adapter.agentos.shipper import main
    from agentlightning.contrib.kernel.agentos import ActionContext, GovernanceKernel

    from .runner_agents import RECIPE_DIR

    monkeypatch.syspath_prepend(str(RECIPE_DIR))
    from agl_store_server import agl_store_server

    with agl_store_server(tmp_path / "agl-store.log") as url:

        async def start():
            client = LightningStoreClient(url)
            try:
                attempted = await client.start_rollout(input={"task": 1})
                await client.update_attempt(attempted.rollout_id, attempted.attempt.attempt_id, status="running")
                return attempted
            finally:
                await client.close()

        attempted = asyncio.run(start())
        audit = tmp_path / "audit"
        audit.mkdir()
        kernel = GovernanceKernel(POLICY, recorder=audit / "worker-0@stopped-host-42.db")
        context = ActionContext(
            agent_id="Worker-0@stopped-host-42",
            rollout_id=attempted.rollout_id,
            attempt_id=attempted.attempt.attempt_id,
        )
        for query in ("SELECT 1", "DROP TABLE users", "DELETE FROM orders"):
            kernel.check("database_query", {"query": query}, context=context)
        kernel.close()
        assert main(["ship", "--store-url", url, str(audit)]) == 0
        first = capsys.readouterr().out
        assert main(["ship", "--store-url", url, str(audit)]) == 0
        second = capsys.readouterr().out

        async def read():
            client = LightningStoreClient(url)
            try:
                return await client.query_spans(attempted.rollout_id, attempted.attempt.attempt_id), (
                    await client.get_latest_attempt(attempted.rollout_id)
                )
            finally:
                await client.close()

        spans, attempt = asyncio.run(read())
    assert (
        "3 span(s) added" in first and "blocked decisions: 2 in the files, 2 of them in the store, 0 missing" in first
    )
    assert "0 span(s) added" in second and "0 missing" in second
    assert len(spans) == 3 and attempt.status == "running"


def test_a_store_that_is_not_thread_safe_gets_no_heartbeats_and_the_user_is_told(caplog):
    """Heartbeats call the store from a thread of their own: never a store that is not thread-safe."""
    from agentlightning.contrib.runner.agentos.heartbeat import AttemptHeartbeats

    async def scenario():
        store = InMemoryLightningStore()
        config = RolloutConfig(unresponsive_seconds=1.0)
        attempted = await store.start_rollout(input={"task": 1}, config=config)
        heartbeats = AttemptHeartbeats(store, default_interval=10.0)
        heartbeats.add(attempted)
        heartbeats.add(attempted)
        return heartbeats

    with caplog.at_level("WARNING"):
        heartbeats = asyncio.run(scenario())
    assert not heartbeats.enabled and heartbeats.beating() == ()
    said = [r.getMessage() for r in caplog.records if "not thread-safe" in r.getMessage()]
    assert len(said) == 1 and "InMemoryLightningStore(thread_safe=True)" in said[0]
