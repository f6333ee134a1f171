"""The programs the hosts of ``tests/test_hosts_netns.py`` run, each inside its network namespace.

``python tests/netns_roles.py runner ...``: a runner host, agentlightning 0.3's client-server
strategy in the runner role (``Trainer(strategy=ClientServerExecutionStrategy(role="runner"))``)
with ``AgentOSRunner`` and the trail shipper hook, against the store host's ``agl store``. Its
working directory is the host's own disk: the SQLite file the tasks name (``shop.db``) and its
audit files are there.

:func:`drive` is the driver, on the store host: enqueues governed rollouts with retries, then
watches the store until every rollout has finished, keeping what it sees (each attempt's statuses,
in order, and which host runs what) in a dict the test reads while it breaks hosts. :func:`report`
reads what the store holds at the end. The test runs both in threads that joined the store host's
namespace (``Hosts.call_in``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from pathlib import Path
from typing import Any, Dict, List

HERE = Path(__file__).resolve().parent
RECIPE_DIR = HERE.parent / "contrib" / "recipes" / "agentos"

#: What the tasks ask for; the kernel must block every ``BAD`` statement (and none of ``GOOD``).
GOOD = ["SELECT COUNT(*) FROM users", "SELECT name FROM users WHERE id = 3", "SELECT SUM(total) FROM orders"]
BAD = ["DROP TABLE users", "DELETE FROM orders", "DROP TABLE orders", "DELETE FROM users WHERE id > 0"]
DENY = ["DROP", "DELETE"]


def tasks(count: int, sleep: float, prefix: str) -> List[Dict[str, Any]]:
    """``count`` tasks on the host's own ``shop.db``: each runs a good query, then a destructive
    statement if its index is even and another if it is a multiple of three (so some have two)."""
    made = []
    for i in range(count):
        queries = [GOOD[i % len(GOOD)]]
        if i % 2 == 0:
            queries.append(BAD[i % len(BAD)])
        if i % 3 == 0:
            queries.append(BAD[(i + 1) % len(BAD)])
        made.append({"db": "shop.db", "queries": queries, "sleep": sleep, "task": f"{prefix}-{i}"})
    return made


def run_runner(args: argparse.Namespace) -> None:
    sys.path.insert(0, str(RECIPE_DIR))
    import agentlightning as agl
    from agentlightning.execution.client_server import ClientServerExecutionStrategy
    from scripted_sql_agent import ScriptedSQLAgent

    from agentlightning.contrib.adapter.agentos.shipper import ShipTrail
    from agentlightning.contrib.kernel.agentos import SQLPolicy
    from agentlightning.contrib.runner.agentos import AgentOSRunner

    runner = AgentOSRunner(
        [SQLPolicy(deny=DENY, dialect="sqlite")], audit_dir="audit", poll_interval=0.1, log_violations=False
    )
    strategy = ClientServerExecutionStrategy(
        role="runner", server_host=args.store_host, server_port=args.store_port, n_runners=args.n_runners
    )
    trainer = agl.Trainer(runner=runner, strategy=strategy, hooks=[ShipTrail(interval=args.ship_interval)])
    print(f"runner host {os.environ.get('AGENTOS_HOST_NAME')} (pid {os.getpid()}) starts", flush=True)
    trainer.fit(ScriptedSQLAgent())


async def _attempts_by_rollout(store: Any, ids: List[str]) -> Dict[str, List[Any]]:
    return {rollout_id: list(await store.query_attempts(rollout_id)) for rollout_id in ids}


async def drive(
    store_url: str,
    progress: Dict[str, Any],
    *,
    count: int,
    sleep: float,
    prefix: str,
    unresponsive_seconds: float,
    max_attempts: int,
    timeout: float,
) -> None:
    """Enqueue ``count`` tasks and watch them to their end; ``progress`` is kept current."""
    import agentlightning as agl
    from agentlightning.store.client_server import LightningStoreClient
    from agentlightning.types import RolloutConfig

    store = LightningStoreClient(store_url)
    try:
        await store.add_resources({"prompt": agl.PromptTemplate(template="{queries}", engine="f-string")})
        config = RolloutConfig(
            unresponsive_seconds=unresponsive_seconds,
            max_attempts=max_attempts,
            retry_condition=["unresponsive", "timeout", "failed"],
        )
        requests = [
            agl.EnqueueRolloutRequest(input=task, mode="train", config=config) for task in tasks(count, sleep, prefix)
        ]
        ids = [rollout.rollout_id for rollout in await store.enqueue_many_rollouts(requests)]
        started = time.monotonic()
        # Every status each attempt was seen in, in order (a superseded attempt must not change).
        history: Dict[str, List[str]] = {}
        superseded_at: Dict[str, str] = {}
        seen_when_superseded: Dict[str, int] = {}
        workers: Dict[str, Any] = {}
        while True:
            rollouts = {r.rollout_id: r for r in await store.query_rollouts(rollout_id_in=ids)}
            attempts = await _attempts_by_rollout(store, ids)
            running_by_host: Dict[str, int] = {}
            for rollout_id, listed in attempts.items():
                latest = max((a.sequence_id for a in listed), default=0)
                for attempt in listed:
                    workers[attempt.attempt_id] = attempt.worker_id
                    seen = history.setdefault(attempt.attempt_id, [])
                    if not seen or seen[-1] != attempt.status:
                        seen.append(attempt.status)
                    if attempt.sequence_id < latest and attempt.attempt_id not in superseded_at:
                        superseded_at[attempt.attempt_id] = attempt.status
                        seen_when_superseded[attempt.attempt_id] = len(seen)
                    if attempt.status == "running" and attempt.worker_id and "@" in attempt.worker_id:
                        host = attempt.worker_id.split("@", 1)[1].rsplit("-", 1)[0]
                        running_by_host[host] = running_by_host.get(host, 0) + 1
            finished = sum(r.status in ("succeeded", "failed", "cancelled") for r in rollouts.values())
            elapsed = time.monotonic() - started
            # A snapshot of its own (the test reads it from another thread while this one goes on).
            progress.update(
                json.loads(
                    json.dumps(
                        {
                            "elapsed": elapsed,
                            "rollouts": len(ids),
                            "finished": finished,
                            "running_by_host": running_by_host,
                            "statuses": {rid: r.status for rid, r in rollouts.items()},
                            "history": history,
                            "workers": workers,
                            "superseded_at": superseded_at,
                            # The statuses seen after an attempt was superseded (none: never rewritten).
                            "after_superseded": {a: history[a][n:] for a, n in seen_when_superseded.items()},
                            "ids": ids,
                            "done": finished == len(ids),
                        }
                    )
                )
            )
            if finished == len(ids) or elapsed > timeout:
                return
            await asyncio.sleep(0.3)
    finally:
        await store.close()


async def report(store_url: str, files: List[Path], wait_for_trail: float) -> Dict[str, Any]:
    """What the store holds (rollouts, attempts, spans) and the blocked decisions of the store and
    of the trail ``files``, after waiting up to ``wait_for_trail`` s for the store to hold the
    trails' (the runner hosts' shippers at work)."""
    from agentlightning.store.client_server import LightningStoreClient

    from agentlightning.contrib.adapter.agentos.shipper import store_blocked_decisions, trail_blocked_decisions

    trail = trail_blocked_decisions(files)
    store = LightningStoreClient(store_url)
    try:
        deadline = time.monotonic() + wait_for_trail
        stored = await store_blocked_decisions(store)
        while not trail <= stored and time.monotonic() < deadline:
            await asyncio.sleep(0.5)
            stored = await store_blocked_decisions(store)
        waited = wait_for_trail - max(0.0, deadline - time.monotonic())
        rollouts = await store.query_rollouts()
        result: Dict[str, Any] = {"rollouts": {}, "waited_for_trail": waited}
        for rollout in rollouts:
            attempts = await store.query_attempts(rollout.rollout_id)
            spans = await store.query_spans(rollout.rollout_id)
            result["rollouts"][rollout.rollout_id] = {
                "status": rollout.status,
                "input": rollout.input,
                "metadata": rollout.metadata,
                "attempts": [
                    {
                        "attempt_id": a.attempt_id,
                        "sequence_id": a.sequence_id,
                        "status": a.status,
                        "worker_id": a.worker_id,
                        "end_time": a.end_time,
                    }
                    for a in attempts
                ],
                "spans": [
                    {
                        "span_id": s.span_id,
                        "name": s.name,
                        "attempt_id": s.attempt_id,
                        "attributes": dict(s.attributes or {}),
                    }
                    for s in spans
                ],
            }
        result["trail_blocked"] = sorted(trail)
        result["store_blocked"] = sorted(stored)
    finally:
        await store.close()
    return json.loads(json.dumps(result, default=str))


def main(argv: List[str]) -> None:
    parser = argparse.ArgumentParser(prog="netns_roles.py")
    commands = parser.add_subparsers(dest="command", required=True)
    runner = commands.add_parser("runner", help="a runner host: AgentOSRunner in 0.3's client-server runner role")
    runner.add_argument("--store-host", required=True)
    runner.add_argument("--store-port", type=int, required=True)
    runner.add_argument("--n-runners", type=int, default=2)
    runner.add_argument("--ship-interval", type=float, default=1.0)
    run_runner(parser.parse_args(argv))


if __name__ == "__main__":
    main(sys.argv[1:])
