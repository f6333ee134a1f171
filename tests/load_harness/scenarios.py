"""The scenarios: the load, then the faults (SIGKILL mid-rollout, failing policies, store restart).

Each scenario starts its own runner processes on the run's ``agl store`` server, drives them,
stops them and returns every figure it measured, checked against the tasks it enqueued.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import statistics
import time
from collections import Counter
from pathlib import Path
from typing import Any, Awaitable, Callable, Dict, List, Tuple, TypeVar

import psutil

import agentlightning as agl
from agentlightning.store.client_server import LightningStoreClient

from agentlightning.contrib.adapter.agentos import FlightRecorderAdapter, adapters_for_directory
from agentlightning.contrib.adapter.agentos.adapter import AUDIT_ROLLOUT_METADATA_KEY
from agentlightning.contrib.adapter.agentos.spans import is_audit_span
from agentlightning.contrib.kernel.agentos.agl03.stats import governance_stats
from agentlightning.contrib.kernel.agentos.semconv import AGENT_OS_ATTEMPT_ID, AGENT_OS_ROLLOUT_ID

from .checks import audit_summary, cpu_seconds, file_sizes, log_lines, verify_rollouts
from .memory import rss_report
from .pool import WorkerPool, WorkerSpec, make_specs, wait_for
from .store_calls import (
    add_resources,
    collect_rollouts,
    count_finished,
    enqueue_tasks,
    finished_in_store,
    span_row,
    wait_finished,
)
from .store_server import StoreServer
from .world import DENY, make_tasks, world_state

#: What the store-restart fault reports of the store's statistics before and after the restart.
STORE_TOTALS = ("total_rollouts", "total_attempts", "total_spans", "total_resources", "total_workers")


def fresh_dir(path: Path) -> Path:
    """An empty directory at ``path`` (a previous one is deleted)."""
    if path.exists():
        shutil.rmtree(path)
    path.mkdir(parents=True)
    return path


T = TypeVar("T")


def on_store(url: str, work: Callable[[LightningStoreClient], Awaitable[T]]) -> T:
    """``work`` run with a client of the store at ``url`` (closed after), in an event loop of its own."""

    async def run() -> T:
        store = LightningStoreClient(url)
        try:
            return await work(store)
        finally:
            await store.close()

    return asyncio.run(run())


def start_runners(
    run_dir: Path, scenario: str, server: StoreServer, names: List[str], **options: Any
) -> Tuple[Path, List[WorkerSpec]]:
    """A fresh directory ``run_dir/scenario`` and, in it, the specs of runner processes ``names`` on
    the store of ``server`` (``options``: :func:`make_specs`'s)."""
    directory = fresh_dir(Path(run_dir) / scenario)
    return directory, make_specs(directory, server.url, names, **options)


def audit_totals(audit: Dict[str, Any]) -> Dict[str, Any]:
    """The audit summary without its per-rollout and per-attempt tables (reported as totals)."""
    return {k: v for k, v in audit.items() if k not in ("blocked_by_rollout", "blocked_by_attempt")}


# ----------------------------------------------------------------------------- 1. load
def run_load(
    server: StoreServer,
    pool: WorkerPool,
    run_dir: Path,
    *,
    workers: int = 4,
    rollouts: int = 3000,
    violating_fraction: float = 0.1,
    seed: int = 0,
    sample_every: int = 250,
    poll_interval: float = 0.05,
    timeout: float = 900.0,
    trace_memory: bool = False,
) -> Dict[str, Any]:
    """N runner processes drain ``rollouts`` tasks from the server; everything checked against the tasks."""
    names = [f"load-{i}" for i in range(workers)]
    scenario, specs = start_runners(
        run_dir,
        "load",
        server,
        names,
        sample_every=sample_every,
        poll_interval=poll_interval,
        trace_memory=trace_memory,
    )
    tasks = make_tasks(rollouts, violating_fraction, seed=seed)
    print(f"[load] forking {workers} runner processes", flush=True)
    ready = pool.start(specs)
    print(
        f"[load] runners ready after {max(ready.values()):.1f}s; enqueuing {rollouts} tasks "
        f"({sum(t['violating'] for t in tasks)} violating)",
        flush=True,
    )
    procs = {"agl store": server.process.pid, **{name: pool.pid(name) for name in names}}
    server_rss_start = psutil.Process(server.process.pid).memory_info().rss / 2**20
    loadavg_start = os.getloadavg()

    async def drive(store: LightningStoreClient) -> Dict[str, Any]:
        before = (await store.query_rollouts(limit=1)).total
        await add_resources(store)
        baseline = await finished_in_store(store)
        t_enqueue = time.monotonic()
        ids = await enqueue_tasks(store, tasks)
        enqueue_s = time.monotonic() - t_enqueue
        cpu_before = cpu_seconds(procs)
        t0 = time.monotonic()
        pool.release(names)
        t1 = await wait_finished(store, ids, baseline=baseline, timeout=timeout, label="load")
        cpu_after = cpu_seconds(procs)
        return {
            "store_rollouts_before": before,
            "ids": ids,
            "enqueue_s": enqueue_s,
            "t0": t0,
            "t1": t1,
            "cpu_s": {k: round(cpu_after[k] - cpu_before[k], 1) for k in cpu_before if k in cpu_after},
            "server_rss_mib_end": round(psutil.Process(server.process.pid).memory_info().rss / 2**20, 1),
            "store_statistics_end": dict(await store.statistics()),
            "loadavg_end": os.getloadavg(),
        }

    try:
        timing = on_store(server.url, drive)
    finally:
        stopped = pool.stop(names)
    ids = timing["ids"]
    wall = timing["t1"] - timing["t0"]
    print(
        f"[load] {rollouts} rollouts in {wall:.1f}s ({rollouts / wall:.1f}/s); checking the store, files and databases",
        flush=True,
    )

    async def check(store: LightningStoreClient) -> Dict[str, Any]:
        t = time.monotonic()
        collected = await collect_rollouts(store, ids)
        stats_ids = await governance_stats(store, ids)
        stats_all = await governance_stats(store) if timing["store_rollouts_before"] == 0 else None
        return {
            "collected": collected,
            "stats_ids": stats_ids,
            "stats_all": stats_all,
            "check_s": time.monotonic() - t,
        }

    checked = on_store(server.url, check)
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
        "audit": audit_totals(audit),
        "audit_one_blocked_record_per_violating_task": set(blocked_by_rollout) == violating_ids
        and all(n == 1 for n in blocked_by_rollout.values()),
        "audit_records_equal_checks": audit["records"] == verdict["expected_checks"] and audit["pending"] == 0,
        "world": world,
        "insert_executed_once_per_task": sorted(executions) == sorted(t["task_index"] for t in tasks)
        and all(n == 1 for n in executions.values()),
        "rss": rss_report(scenario / "samples"),
        "stopped": {
            k: {kk: v[kk] for kk in ("exited_after_sigterm", "exit_s", "exitcode")}
            | {"error": (v["done"] or {}).get("error")}
            for k, v in stopped.items()
        },
        "worker_logs": log_lines((scenario / "logs").glob("*.log")),
    }


# ----------------------------------------------------------------------------- 2a. SIGKILL
def fault_sigkill(
    server: StoreServer,
    pool: WorkerPool,
    run_dir: Path,
    *,
    workers: int = 3,
    rollouts: int = 60,
    violating_fraction: float = 0.1,
    seed: int = 1,
    unresponsive_seconds: float = 2.0,
    hold_s: float = 300.0,
    poll_interval: float = 0.05,
    timeout: float = 180.0,
) -> Dict[str, Any]:
    """SIGKILL a runner process in the middle of a rollout; the others carry on."""
    names = [f"kill-{i}" for i in range(workers)]
    scenario, specs = start_runners(
        run_dir, "sigkill", server, names, first_worker_id=100, poll_interval=poll_interval, sample_every=10_000
    )
    kill_task = {
        "task_index": 0,
        "violating": 1,
        "hold_first_attempt_s": hold_s,
        "queries": [
            "SELECT COUNT(*) FROM users",
            "INSERT INTO events (task_index) VALUES (0)",
            "DROP TABLE users",
            "SELECT SUM(total) FROM orders",
        ],
    }
    tasks = make_tasks(rollouts, violating_fraction, seed=seed, start_index=1)
    config = agl.RolloutConfig(
        unresponsive_seconds=unresponsive_seconds, max_attempts=2, retry_condition=["unresponsive"]
    )
    pool.start(specs)
    print(
        f"[sigkill] {workers} runners ready; a task that blocks mid-rollout, then {rollouts} ordinary tasks", flush=True
    )

    async def drive(store: LightningStoreClient) -> Dict[str, Any]:
        await add_resources(store)
        baseline = await finished_in_store(store)
        (kill_id,) = await enqueue_tasks(store, [kill_task], config=config)
        ids = await enqueue_tasks(store, tasks)
        pool.release(names)
        marker = scenario / "markers" / f"mid-rollout-{kill_id}.json"
        await asyncio.to_thread(wait_for, marker.exists, 60.0, "the mid-rollout marker")
        victim = json.loads(marker.read_text())
        t_kill = time.monotonic()
        name = victim["worker"]
        pool.kill(name)
        print(
            f"[sigkill] SIGKILLed {name} (pid {victim['pid']}) inside rollout {kill_id}, "
            f"attempt {victim['attempt_id']}",
            flush=True,
        )
        transitions: List[Dict[str, Any]] = []

        async def watch() -> None:
            attempts = await store.query_attempts(kill_id)
            state = [(a.sequence_id, a.status, a.worker_id) for a in attempts]
            if not transitions or transitions[-1]["state"] != state:
                transitions.append({"t_after_kill_s": round(time.monotonic() - t_kill, 2), "state": state})

        t_done = await wait_finished(
            store, [kill_id] + ids, baseline=baseline, timeout=timeout, label="sigkill", on_poll=watch
        )
        attempts = [
            {"sequence_id": a.sequence_id, "attempt_id": a.attempt_id, "status": a.status, "worker_id": a.worker_id}
            for a in await store.query_attempts(kill_id)
        ]
        killed_attempt_spans = [span_row(s) for s in await store.query_spans(kill_id, victim["attempt_id"])]
        rollout = await store.get_rollout_by_id(kill_id)
        return {
            "kill_id": kill_id,
            "ids": ids,
            "victim": victim,
            "t_kill": t_kill,
            "t_done": t_done,
            "transitions": transitions,
            "attempts": attempts,
            "killed_attempt_spans": killed_attempt_spans,
            "kill_rollout_status": rollout.status if rollout else None,
        }

    try:
        run = on_store(server.url, drive)
    finally:
        survivors = [n for n in names if pool.workers[n].exitcode is None]
        stopped = pool.stop(survivors)
    victim = run["victim"]
    kill_id, ids = run["kill_id"], run["ids"]
    victim_process = pool.workers[victim["worker"]]

    async def check(store: LightningStoreClient) -> Dict[str, Any]:
        collected = await collect_rollouts(store, [kill_id] + ids)
        stats = await governance_stats(store, [kill_id] + ids)
        # What the store lost with the killed attempt is in the victim's FlightRecorder file.
        adapter = FlightRecorderAdapter(scenario / "audit" / f"audit-{victim['worker']}.db")
        reimported = await adapter.emit_to_store(store)
        again = await adapter.emit_to_store(store)
        adapter.close()
        after = [span_row(s) for s in await store.query_spans(kill_id, victim["attempt_id"])]
        # The killed attempt is unresponsive: a span would turn it back into running, so its records
        # go to the audit rollout, marked with the rollout and attempt they were made in.
        audit_rollouts = [r for r in await store.query_rollouts() if (r.metadata or {}).get(AUDIT_ROLLOUT_METADATA_KEY)]
        placed = [
            span_row(s)
            for r in audit_rollouts
            for s in await store.query_spans(r.rollout_id)
            if s.attributes.get(AGENT_OS_ROLLOUT_ID) == kill_id
            and s.attributes.get(AGENT_OS_ATTEMPT_ID) == victim["attempt_id"]
        ]
        status_after = [a.status for a in await store.query_attempts(kill_id) if a.attempt_id == victim["attempt_id"]]
        stats_after = await governance_stats(store, [kill_id] + ids)
        return {
            "collected": collected,
            "stats": stats,
            "reimported": reimported,
            "again": again,
            "killed_attempt_after_import": after,
            "audit_rollout_spans_of_killed_attempt": placed,
            "killed_attempt_status_after_import": status_after[0] if status_after else None,
            "stats_after": stats_after,
        }

    checked = on_store(server.url, check)
    tasks_by_id = {kill_id: kill_task, **dict(zip(ids, tasks))}
    verdict = verify_rollouts(tasks_by_id, checked["collected"])
    audit = audit_summary(scenario / "audit")
    victim_file = audit["files"][f"audit-{victim['worker']}.db"]
    victim_records = [r for r in FlightRecorderAdapter(scenario / "audit" / f"audit-{victim['worker']}.db").records()]
    victim_queries = [json.loads(r.tool_args)["args"]["query"] for r in victim_records if r.rollout_id == kill_id]
    world = world_state((scenario / "db").glob("world-*.db"))
    executions = world.pop("insert_executions")
    other_workers_after_kill = Counter(
        c["attempt"]["worker_id"] for rid, c in checked["collected"].items() if rid != kill_id and c.get("attempt")
    )
    unresponsive_at = next(
        (
            t["t_after_kill_s"]
            for t in run["transitions"]
            if any(s[1] in ("unresponsive", "timeout", "failed") for s in t["state"])
        ),
        None,
    )
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
        "killed_attempt_spans_in_store": {
            "checks": sum(s["is_check"] for s in killed_spans),
            "violations": sum(s["is_violation"] for s in killed_spans),
            "all": len(killed_spans),
        },
        "killed_attempt_decisions_made": len(kill_task["queries"]),
        "victim_recorder": victim_file,
        "victim_recorder_kill_rollout_queries_on_disk": victim_queries,
        "victim_records_lost": len(kill_task["queries"]) - len(victim_queries),
        "victim_blocked_record_of_killed_attempt": audit["blocked_by_attempt"].get(
            f"{kill_id}/{victim['attempt_id']}", 0
        ),
        "reimport_of_victim_file": {
            "added": checked["reimported"],
            "added_again": checked["again"],
            "killed_attempt_audit_blocked_spans": sum(
                bool(s["audit"] and s["audit_blocked"]) for s in checked["killed_attempt_after_import"]
            ),
            "audit_rollout_blocked_spans_of_killed_attempt": sum(
                bool(s["audit"] and s["audit_blocked"]) for s in checked["audit_rollout_spans_of_killed_attempt"]
            ),
            "killed_attempt_status_after_import": checked["killed_attempt_status_after_import"],
        },
        "spans": verdict,
        "governance_stats": checked["stats"],
        "governance_stats_unchanged_by_import": checked["stats"] == checked["stats_after"],
        "rollouts_by_surviving_workers": dict(other_workers_after_kill),
        "audit": audit_totals(audit),
        "world": world,
        "kill_task_insert_executions": executions.get(0, 0),
        "other_inserts_executed_once": all(executions.get(t["task_index"], 0) == 1 for t in tasks),
        "survivors_stopped": {
            k: {kk: v[kk] for kk in ("exited_after_sigterm", "exitcode")} for k, v in stopped.items()
        },
    }


# ----------------------------------------------------------------------------- 2b. failing policies
def fault_policies(
    server: StoreServer,
    pool: WorkerPool,
    run_dir: Path,
    *,
    rollouts: int = 10,
    policy_timeout_s: float = 0.2,
    hang_s: float = 60.0,
    violating_fraction: float = 0.2,
    seed: int = 2,
    exit_timeout: float = 10.0,
    poll_interval: float = 0.05,
    timeout: float = 180.0,
) -> Dict[str, Any]:
    """A policy that hangs and one that raises: every action blocked, nothing executed, runner goes on."""
    results = {}
    for offset, kind in enumerate(("hang", "raise")):
        name = f"policy-{kind}"
        scenario, (spec,) = start_runners(
            run_dir,
            name,
            server,
            [name],
            kind=kind,
            first_worker_id=200 + offset,
            poll_interval=poll_interval,
            policy_timeout_s=policy_timeout_s,
            hang_s=hang_s,
            sample_every=1,
        )
        tasks = make_tasks(rollouts, violating_fraction, seed=seed + offset, start_index=10_000 * (offset + 1))
        pool.start([spec])

        async def drive(
            store: LightningStoreClient, tasks: List[Dict[str, Any]] = tasks, name: str = name, kind: str = kind
        ) -> Dict[str, Any]:
            await add_resources(store)
            baseline = await finished_in_store(store)
            ids = await enqueue_tasks(store, tasks)
            t0 = time.monotonic()
            pool.release([name])
            t1 = await wait_finished(store, ids, baseline=baseline, timeout=timeout, label=f"policy-{kind}")
            collected = await collect_rollouts(store, ids)
            stats = await governance_stats(store, ids)
            return {"ids": ids, "wall": t1 - t0, "collected": collected, "stats": stats}

        try:
            run = on_store(server.url, drive)
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
            "kernel": f"GovernanceKernel([SQLPolicy(deny={DENY}), {fault_policy}()], "
            f"policy_timeout_s={policy_timeout_s})",
            "rollouts": rollouts,
            "actions": sum(len(t["queries"]) for t in tasks),
            "wall_s": round(run["wall"], 2),
            "seconds_per_action_median": round(statistics.median(per_action_s), 3) if per_action_s else None,
            "seconds_per_action_max": round(max(per_action_s), 3) if per_action_s else None,
            "spans": verdict,
            "fault_policy_violation_descriptions": dict(descriptions),
            "governance_stats": run["stats"],
            "audit": audit_totals(audit),
            "world": world,
            "statements_executed": sum(executions.values()),
            "threads": {k: samples.get(name, {}).get(k) for k in ("threads_first", "threads_last")},
            "exit": {k: stopped[k] for k in ("exited_after_sigterm", "exit_s", "exitcode")}
            | {
                "threads_at_exit": (stopped["done"] or {}).get("threads_at_exit"),
                "error": (stopped["done"] or {}).get("error"),
            },
        }
        print(
            f"[policy-{kind}] {rollouts} rollouts, {results[kind]['actions']} actions, all blocked: "
            f"{verdict['blocked_check_spans'] == results[kind]['actions']}; "
            f"worker exited after SIGTERM: {stopped['exited_after_sigterm']}",
            flush=True,
        )
    return results


# ----------------------------------------------------------------------------- 2c. store restart
def fault_store_restart(
    server: StoreServer,
    pool: WorkerPool,
    run_dir: Path,
    *,
    workers: int = 3,
    rollouts_before: int = 600,
    rollouts_after: int = 150,
    stop_at_fraction: float = 0.3,
    violating_fraction: float = 0.1,
    seed: int = 3,
    poll_interval: float = 0.05,
    timeout: float = 600.0,
) -> Dict[str, Any]:
    """Terminate ``agl store`` mid-run, start it again on the same port, re-import the audit trail."""
    names = [f"restart-{i}" for i in range(workers)]
    scenario, specs = start_runners(
        run_dir, "restart", server, names, first_worker_id=300, poll_interval=poll_interval, sample_every=10_000
    )
    batch_a = make_tasks(rollouts_before, violating_fraction, seed=seed, start_index=100_000)
    batch_b = make_tasks(rollouts_after, violating_fraction, seed=seed + 1, start_index=200_000)
    pool.start(specs)
    logs = [spec.paths["log"] for spec in specs]

    async def before_restart(store: LightningStoreClient) -> Dict[str, Any]:
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

    try:
        before = on_store(server.url, before_restart)
        offsets = file_sizes(logs)
        t_stop = time.monotonic()
        stop_info = server.stop()
        print(
            f"[restart] agl store terminated after {before['finished_before_stop']}/{len(batch_a)} rollouts "
            f"of batch A; restarting on port {server.port}",
            flush=True,
        )
        startup_s = server.start()
        outage_s = time.monotonic() - t_stop
        alive_after = {n: pool.workers[n].exitcode is None for n in names}
        print(f"[restart] store back after {outage_s:.1f}s; runners alive: {alive_after}", flush=True)

        async def after_restart(store: LightningStoreClient) -> Dict[str, Any]:
            rollouts_in_new_store = (await store.query_rollouts(limit=1)).total
            resources = await store.get_latest_resources()
            statistics_new = dict(await store.statistics())
            lost = {
                "rollouts_in_new_store": rollouts_in_new_store,
                "resources_in_new_store": resources is not None,
                "spans_of_a_finished_batch_a_rollout": len(await store.query_spans(before["ids"][0])),
                "store_before_stop": {k: before["statistics_before"].get(k) for k in STORE_TOTALS},
                "store_after_restart": {k: statistics_new.get(k) for k in STORE_TOTALS},
            }
            await add_resources(store)
            baseline = await finished_in_store(store)
            ids = await enqueue_tasks(store, batch_b)
            t0 = time.monotonic()
            t1 = await wait_finished(store, ids, baseline=baseline, timeout=timeout, label="restart/batch B")
            return {"ids": ids, "lost": lost, "wall_b": t1 - t0}

        after = on_store(server.url, after_restart)
        outage_logs = log_lines(logs, offsets)  # the outage and its aftermath, up to the end of batch B
    finally:
        stopped = pool.stop(names)
    ids_b = after["ids"]

    async def reimport(store: LightningStoreClient) -> Dict[str, Any]:
        collected = await collect_rollouts(store, ids_b)
        stats_before_import = await governance_stats(store, ids_b)
        t = time.monotonic()
        adapters = adapters_for_directory(scenario / "audit", pattern="audit-*.db")
        first = {a.path.name: await a.emit_to_store(store) for a in adapters}
        import_s = time.monotonic() - t
        second = {a.path.name: await a.emit_to_store(store) for a in adapters}
        fresh_adapters = adapters_for_directory(scenario / "audit", pattern="audit-*.db")
        fresh = {a.path.name: await a.emit_to_store(store) for a in fresh_adapters}
        all_rollouts = list(await store.query_rollouts())
        audit_spans: List[Dict[str, Any]] = []
        placement: Counter = Counter()
        for rollout in all_rollouts:
            for span in await store.query_spans(rollout.rollout_id):
                if is_audit_span(span):
                    row = span_row(span)
                    audit_spans.append(row)
                    in_audit_rollout = (rollout.metadata or {}).get("agentos.audit_rollout")
                    placement["audit rollout" if in_audit_rollout else "batch B rollouts"] += 1
        stats_after_import = await governance_stats(store, ids_b)
        return {
            "collected": collected,
            "first": first,
            "second": second,
            "fresh": fresh,
            "import_s": import_s,
            "audit_spans": audit_spans,
            "placement": dict(placement),
            "stats_before": stats_before_import,
            "stats_after": stats_after_import,
            "rollouts_in_store": len(all_rollouts),
        }

    checked = on_store(server.url, reimport)
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
        "lost_on_restart": after["lost"]
        | {
            "batch_a_rollouts_gone": len(batch_a),
            "batch_a_tasks_never_run": len(batch_a) - executed_a,
            "batch_a_tasks_that_ran": executed_a,
        },
        "runners_alive_after_restart": alive_after,
        "runner_log_lines_after_stop": outage_logs,
        # The new server answers calls about a rollout it never had with HTTP 500 (an unhandled
        # ValueError), which the client retries (1 + 2 + 5 s) as if the server were unwell.
        "new_server_errors_for_unknown_rollouts": len(
            re.findall(r"ValueError: (?:Rollout|Attempt) \S+ not found", server.log_since_last_start())
        ),
        "batch_b_wall_s": round(after["wall_b"], 2),
        "batch_b_spans": verdict_b,
        "batch_b_rollouts_by_worker": verdict_b["rollouts_by_worker"],
        "audit": audit_totals(audit),
        "blocked_records_batch_a": sum(blocked_a.values()),
        "batch_a_violating_tasks": len(violating_a),
        "blocked_records_batch_a_only_violating_at_most_once": set(blocked_a) <= violating_a
        and all(n == 1 for n in blocked_a.values()),
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
        "stopped": {
            k: {kk: v[kk] for kk in ("exited_after_sigterm", "exitcode")} | {"error": (v["done"] or {}).get("error")}
            for k, v in stopped.items()
        },
    }
