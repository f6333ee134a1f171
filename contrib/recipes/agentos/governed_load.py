"""Governed runner processes under load, against one real `agl store` server on loopback.

    python contrib/recipes/agentos/governed_load.py            # 4 runner processes, 1000 rollouts
    python contrib/recipes/agentos/governed_load.py --quick    # 2 runner processes, 60 rollouts

1. starts `agl store` (agentlightning's store server) on 127.0.0.1, on a free port;
2. builds a SQLite shop database and ``--rollouts`` tasks: each reads, inserts one row into
   ``events``, and exactly ``--violating-fraction`` of them also try one DROP or DELETE;
3. runs a ``Trainer`` whose ``--runners`` runner processes are ``AgentOSRunner``s, clients of
   that server: each checks every statement with ``GovernanceKernel([SQLPolicy(deny=DENY)])``
   and writes its own FlightRecorder file. The algorithm enqueues the tasks, prints progress
   until all have finished, and reads back the violation spans of every rollout and
   ``governance_stats``;
4. verifies each FlightRecorder file's hash chain and counts the database's rows.

The full-size measurement, with faults (a runner SIGKILLed mid-rollout, a policy that hangs or
raises, a store restart) and memory figures, is tests/benchmarks/bench_load_and_faults.py; see
docs/load_and_faults.md.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import sqlite3
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # before agentlightning is imported
os.environ.setdefault("AGENTOPS_LOGGING_TO_FILE", "False")
os.environ.setdefault("AGENTOPS_LOG_LEVEL", "ERROR")

import agentlightning as agl  # noqa: E402
from agentlightning.algorithm import algo  # noqa: E402
from agentlightning.execution.client_server import ClientServerExecutionStrategy  # noqa: E402
from agentlightning.store.client_server import LightningStoreClient  # noqa: E402
from agl_store_server import agl_store_server  # noqa: E402
from scripted_sql_agent import ScriptedSQLAgent  # noqa: E402

from agentlightning.contrib.adapter.agentos import adapters_for_directory  # noqa: E402
from agentlightning.contrib.kernel.agentos import GovernanceKernel, SQLPolicy  # noqa: E402
from agentlightning.contrib.kernel.agentos.agl03.spans import is_violation_span  # noqa: E402
from agentlightning.contrib.kernel.agentos.agl03.stats import governance_stats  # noqa: E402
from agentlightning.contrib.runner.agentos import AgentOSRunner  # noqa: E402

DENY = ["DROP", "DELETE", "TRUNCATE"]
#: Harmless reads (the third looks destructive to a substring filter) and the destructive statements.
READS = ["SELECT COUNT(*) FROM users", "SELECT name FROM users WHERE id = 7", "SELECT 'DROP TABLE users'"]
DESTRUCTIVE = ["DROP TABLE users", "DELETE FROM orders WHERE id > 0", "DELETE/**/FROM users", "DROP/**/TABLE orders"]


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runners", type=int, default=4, help="AgentOSRunner processes (default: 4)")
    parser.add_argument("--rollouts", type=int, default=1000, help="tasks enqueued, one rollout each (default: 1000)")
    parser.add_argument(
        "--violating-fraction", type=float, default=0.1, help="fraction of tasks with one DROP or DELETE (default: 0.1)"
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of which tasks violate (default: 0)")
    parser.add_argument("--port", type=int, default=None, help="port of agl store on 127.0.0.1 (default: a free one)")
    parser.add_argument(
        "--workdir", type=Path, default=None, help="database, audit files, server log (default: temp dir)"
    )
    parser.add_argument("--timeout", type=float, default=600.0, help="give up after this many seconds (default: 600)")
    parser.add_argument("--quick", action="store_true", help="small run: 2 runner processes, 60 rollouts")
    args = parser.parse_args(argv)
    if args.quick:
        args.runners, args.rollouts = 2, 60
    if args.runners < 1 or args.rollouts < 1 or not 0.0 <= args.violating_fraction <= 1.0:
        parser.error("--runners and --rollouts must be >= 1 and --violating-fraction in [0, 1]")
    return args


def build_database(path: Path) -> None:
    """A shop: 50 users, 200 orders (what a DROP or DELETE would destroy) and an empty events table."""
    with sqlite3.connect(path) as conn:
        conn.executescript(
            "CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT);"
            "CREATE TABLE orders (id INTEGER PRIMARY KEY, user_id INTEGER, total REAL);"
            "CREATE TABLE events (id INTEGER PRIMARY KEY, task_index INTEGER);"
        )
        conn.executemany("INSERT INTO users (name) VALUES (?)", [(f"user{i}",) for i in range(50)])
        conn.executemany("INSERT INTO orders (user_id, total) VALUES (?, ?)", [(i % 50, 10.0 * i) for i in range(200)])
    conn.close()


def row_counts(path: Path) -> Dict[str, int]:
    with sqlite3.connect(path) as conn:
        tables = [name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        counts = {table: conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0] for table in tables}
    conn.close()
    return counts


def make_tasks(n: int, violating_fraction: float, seed: int, db: Path) -> List[Dict[str, Any]]:
    """``n`` tasks, exactly ``round(n * violating_fraction)`` of them with one destructive statement."""
    violating = set(random.Random(seed).sample(range(n), round(n * violating_fraction)))
    tasks = []
    for i in range(n):
        queries = [READS[i % len(READS)]]
        if i in violating:
            queries.append(DESTRUCTIVE[i % len(DESTRUCTIVE)])
        queries.append(f"INSERT INTO events (task_index) VALUES ({i})")
        tasks.append({"db": str(db), "queries": queries, "violating": i in violating})
    return tasks


def main(argv: Optional[List[str]] = None) -> Dict[str, Any]:
    args = parse_args(argv)
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="agentos-load-"))
    workdir.mkdir(parents=True, exist_ok=True)
    db = workdir / "shop.db"
    build_database(db)
    rows_before = row_counts(db)
    tasks = make_tasks(args.rollouts, args.violating_fraction, args.seed, db)
    n_violating = sum(task["violating"] for task in tasks)
    read_back: Dict[str, Any] = {}

    @algo
    async def enqueue_and_read_back(*, store: agl.LightningStore) -> None:
        await store.add_resources({"prompt": agl.PromptTemplate(template="{queries}", engine="f-string")})
        requests = [agl.EnqueueRolloutRequest(input=task, mode="train") for task in tasks]
        ids = [rollout.rollout_id for rollout in await store.enqueue_many_rollouts(requests)]
        started = time.monotonic()
        while True:
            # This server holds our rollouts only, so a status filter counts ours (and is cheap).
            finished = (await store.query_rollouts(status_in=["succeeded", "failed"], limit=1)).total
            elapsed = time.monotonic() - started
            print(f"[{elapsed:6.1f} s] {finished}/{len(ids)} rollouts finished", flush=True)
            if finished >= len(ids):
                break
            if elapsed > args.timeout:
                raise TimeoutError(f"only {finished} of {len(ids)} rollouts finished in {args.timeout} s")
            await asyncio.sleep(2.0)
        read_back["seconds"] = elapsed
        read_back["violations"] = [
            sum(is_violation_span(span) for span in await store.query_spans(rollout_id, "latest")) for rollout_id in ids
        ]
        read_back["statuses"] = [rollout.status for rollout in await store.query_rollouts(rollout_id_in=ids)]
        read_back["stats"] = await governance_stats(store, ids)

    kernel = GovernanceKernel([SQLPolicy(deny=DENY, dialect="sqlite")])
    runner = AgentOSRunner(kernel, audit_dir=workdir / "audit", poll_interval=0.05, log_violations=False)
    with agl_store_server(workdir / "agl-store.log", port=args.port) as store_url:
        print(
            f"agl store on {store_url}; {args.runners} runner processes, {len(tasks)} tasks ({n_violating} violating)"
        )
        store = LightningStoreClient(store_url)
        try:
            strategy = ClientServerExecutionStrategy(n_runners=args.runners, managed_store=False)
            trainer = agl.Trainer(algorithm=enqueue_and_read_back, runner=runner, store=store, strategy=strategy)
            trainer.fit(ScriptedSQLAgent())
        finally:
            asyncio.run(store.close())

    recorders = {}
    for adapter in adapters_for_directory(workdir / "audit"):
        blocked = sum(record.blocked for record in adapter.records())
        recorders[adapter.path.name] = {"valid": adapter.verify_integrity()["valid"], "blocked": blocked}
        adapter.close()
    rows_after = row_counts(db)
    violations = read_back["violations"]
    figures = {
        "rollouts": len(tasks),
        "succeeded": read_back["statuses"].count("succeeded"),
        "rollouts_per_s": round(len(tasks) / read_back["seconds"], 1),
        "violating_tasks": n_violating,
        "violations_found": sum(violations),
        "violations_where_expected": all(found == task["violating"] for found, task in zip(violations, tasks)),
        "governance_stats": read_back["stats"],
        "flight_recorders": recorders,
        "rows_destroyed": sum(rows_before[t] - rows_after.get(t, 0) for t in ("users", "orders")),
        "inserts_executed": rows_after["events"],
    }
    stats = figures["governance_stats"]
    print(f"{figures['succeeded']}/{len(tasks)} rollouts succeeded, {figures['rollouts_per_s']} rollouts/s")
    print(
        f"violation spans: {figures['violations_found']} for {n_violating} violating tasks, each in its own "
        f"rollout: {figures['violations_where_expected']}"
    )
    print(
        f"governance_stats: violations={stats['total_violations']} blocked={stats['blocked_actions']} "
        f"checks={stats['total_checks']}"
    )
    print(
        "FlightRecorder files:",
        ", ".join(f"{name} (valid: {r['valid']}, {r['blocked']} blocked)" for name, r in recorders.items()),
    )
    print(f"rows before {rows_before}, after {rows_after}: {figures['rows_destroyed']} destroyed")
    return figures


if __name__ == "__main__":
    main()
