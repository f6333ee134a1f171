"""Rollout throughput of AgentOSRunner next to the plain agentlightning LitAgentRunner.

Run it on demand (pytest does not collect ``tests/benchmarks``)::

    python tests/benchmarks/bench_runner_throughput.py                     # 50 rollouts x 10 rounds, seed 0
    python tests/benchmarks/bench_runner_throughput.py --rollouts 60 --rounds 12 --seed 3 --json /tmp/runner.json
    python tests/benchmarks/bench_runner_throughput.py --model-ms 20              # with simulated model latency

The agent is the same in every arm: a ``LitAgent`` whose task is 2 or 3 SQL queries; it runs each
one through a tool against a small real SQLite database (users, products, orders; built from
``--seed`` in a temporary directory, never the working directory) and returns the fraction of its
queries that ran as its reward. The queries are SELECTs with joins, filters, aggregates and
sorting, with random parameters, so most are new to the policy's parse cache (as an LLM's queries
would be). The tool opens a connection per call, runs the query and fetches all rows.

Arms (rows of the table), each with its own runner, its own ``InMemoryLightningStore`` and the
default ``AgentOpsTracer`` (the one the Trainer uses; all runners share the process's AgentOps
client and span processor, as runners in one process do):

* ``plain LitAgentRunner`` -- ``agentlightning.LitAgentRunner``; the tool is the plain function.
* ``AgentOSRunner`` -- ``AgentOSRunner(GovernanceKernel([SQLPolicy(deny=["DROP", "DELETE",
  "TRUNCATE"], dialect="sqlite")]), log_violations=False)``; the tool is the same function
  wrapped with ``governed_tool("database_query", fn)``. Every call is checked by the kernel and
  becomes an annotation span of the rollout (a check with a violation at once, through the
  tracer; clean checks together with the reward the agent returned, in the one store call the
  plain runner makes for that reward alone); the runner
  writes a governance summary to the attempt's metadata and returns a ``GovernedRollout``.
* ``AgentOSRunner + audit`` -- the same, with ``recorder=<tmpdir>/audit.db``: every decision is
  also written to a real Agent OS ``FlightRecorder`` (SQLite, SHA-256 hash chain) and committed
  before the check returns, allowed and blocked alike; each executed call's outcome is written too.

``--destructive`` of the tasks of every round (10 % by default, exactly that many per round) have
one destructive statement among their queries (``DROP TABLE ...`` or ``DELETE FROM ...``). The
governed arms block it (the tool does not run; the agent catches ``ActionBlockedError`` and goes
on). The plain runner has no policy and would execute it, wrecking the database for every later
rollout, so in the plain arm's copy of the task that statement is replaced by a read of the same
rows (``DROP TABLE t`` -> ``SELECT COUNT(*) FROM t``, ``DELETE FROM t WHERE c`` -> ``SELECT
COUNT(*) FROM t WHERE c``). So on those tasks the plain arm does one cheap query that the governed
arms do not do -- a bias of a few tens of microseconds per affected rollout, in the governed arms'
favour. Everything else about the tasks is identical across arms. The database is checked
unchanged at the end.

How rollouts are driven: ``await runner.step(task)`` in a loop, in one process and one event
loop, after ``runner.init(agent)`` and ``runner.init_worker(0, store)``. ``step`` runs the same
``_step_impl`` that ``runner.iter()`` runs for a dequeued rollout (resources, trace context,
agent, reward, spans, ``update_attempt``), plus ``start_rollout`` and ``get_rollout_by_id``
around it, and no polling, heartbeat or sleep between rollouts -- so the figures are the runner's
own cost, not the queue's poll interval. Rollouts run one after another: agentlightning's tracer
allows one active trace per process.

Rounds: a warm-up round per arm (not counted), then ``--rounds`` rounds; in each round every arm
runs ``--rollouts`` rollouts on that round's tasks (the same tasks for all arms; new tasks every
round). The order of the arms rotates from round to round (ABC, BCA, CAB, ...) and the garbage
collector is run (untimed) before each arm's batch, so on a noisy shared machine a slow spell or
another arm's garbage hits every arm alike. The GC stays on during timing, as in real use.

Columns:

* ``rollouts/s median`` and ``min-max`` -- per round, rollouts divided by the wall time of the
  arm's batch; the median and the spread over rounds.
* ``vs plain`` -- median rollouts/s of the arm over that of the plain runner.
* ``paired ratio`` -- the same ratio computed within each round (the arms ran seconds apart), its
  median and [min-max] over rounds; less exposed to slow drift of the machine.
* ``ms/rollout`` -- 1000 / median rollouts/s; ``+ms vs plain`` -- its difference to the plain
  runner: the absolute cost of governance per rollout of this agent.
* ``step p50 ms`` -- the median duration of a single ``step`` over all rounds.
* ``CPU ms/rollout`` -- the process's CPU time (``time.process_time``: every thread, so the
  span processor's and the audit writer's too) per rollout, median over rounds; less exposed to
  other processes on a shared machine than wall clock. ``+CPU ms/check`` -- its difference to the
  plain runner's, divided by the governed calls per rollout: governance's CPU per governed call.
* ``checks``, ``blocked``, ``spans/rollout`` -- kernel checks and blocked calls in the counted
  rounds, and the spans the store holds per rollout (governance adds one annotation span per
  check and one per violation).

What governance adds to a rollout, per governed call: the kernel's check (mostly sqlglot parsing
a query it has not seen before), building the check's span, and queueing the audit record if
there is a recorder; per violation: its spans' trip through the tracer's span processor (each
span there is one synchronous store write on the processor's own event-loop thread) and the
audit write the check waits for; per rollout: the governance summary written to the attempt's
metadata (the one store call the plain runner does not make), building the held-back spans and
the ``GovernedRollout`` built by ``step``. With 2-3 cheap queries per rollout these are of the
same order as the plain runner's own per-rollout cost (trace context, reward span, store
updates), so with ``--model-ms 0`` the ratio is a near-worst case; ``--model-ms`` adds the model's
time to every arm alike and shows the ratio an LLM agent would see (the absolute ``+ms`` stays the
same).

Below the table: whether every rollout succeeded, the database was left intact, and (audit arm)
the FlightRecorder's record count and hash-chain check. Logging of agentlightning is set to ERROR
(a second runner in one process makes the tracer warn that it reuses the span processor) and the
runners' per-violation WARNING lines are off (``log_violations=False``), so no arm pays for
writing log lines. Timing targets are not asserted; this only reports.
"""

from __future__ import annotations

import os

# agentlightning imports litellm, which otherwise fetches its model cost map over the network;
# AgentOps would otherwise write agentops.log into the working directory.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("AGENTOPS_LOGGING_TO_FILE", "False")
os.environ.setdefault("AGENTOPS_LOG_LEVEL", "ERROR")

import argparse  # noqa: E402
import asyncio  # noqa: E402
import gc  # noqa: E402
import json  # noqa: E402
import logging  # noqa: E402
import random  # noqa: E402
import sqlite3  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple  # noqa: E402

from bench_common import environment, print_table, require_at_least  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root, for tests.conftest
import agentlightning as agl  # noqa: E402
from agentlightning.store.memory import InMemoryLightningStore  # noqa: E402
from tests.conftest import table_counts  # noqa: E402

from agentlightning.contrib.kernel.agentos import GovernanceKernel, SQLPolicy  # noqa: E402
from agentlightning.contrib.runner.agentos import ActionBlockedError, AgentOSRunner, governed_tool  # noqa: E402

DENY = ("DROP", "DELETE", "TRUNCATE")
TOOL = "database_query"
WARMUP_ROLLOUTS = 10
COUNTRIES = ("DE", "FR", "US", "JP", "BR", "IN", "NG", "CA")
CATEGORIES = ("books", "games", "garden", "kitchen", "music", "sports", "tools", "toys")
STATUSES = ("paid", "shipped", "refunded", "cancelled")
N_USERS, N_PRODUCTS, N_ORDERS = 400, 80, 4000

# ----------------------------------------------------------------------------- database and tasks


def build_database(path: Path, seed: int) -> None:
    """A small but real shop database: users, products and orders, with an index per join key."""
    r = random.Random(seed)
    conn = sqlite3.connect(path)
    conn.executescript(
        """
        CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT NOT NULL, country TEXT NOT NULL,
                            created_at TEXT NOT NULL);
        CREATE TABLE products (id INTEGER PRIMARY KEY, name TEXT NOT NULL, category TEXT NOT NULL, price REAL NOT NULL);
        CREATE TABLE orders (id INTEGER PRIMARY KEY, user_id INTEGER NOT NULL REFERENCES users(id),
                             product_id INTEGER NOT NULL REFERENCES products(id), total REAL NOT NULL,
                             status TEXT NOT NULL, created_at TEXT NOT NULL);
        CREATE INDEX orders_user ON orders(user_id);
        CREATE INDEX orders_product ON orders(product_id);
        """
    )
    conn.executemany(
        "INSERT INTO users (name, country, created_at) VALUES (?, ?, ?)",
        [
            (f"user{i}", r.choice(COUNTRIES), f"2025-{r.randint(1, 12):02d}-{r.randint(1, 28):02d}")
            for i in range(N_USERS)
        ],
    )
    conn.executemany(
        "INSERT INTO products (name, category, price) VALUES (?, ?, ?)",
        [(f"product{i}", r.choice(CATEGORIES), round(r.uniform(2, 300), 2)) for i in range(N_PRODUCTS)],
    )
    conn.executemany(
        "INSERT INTO orders (user_id, product_id, total, status, created_at) VALUES (?, ?, ?, ?, ?)",
        [
            (
                r.randint(1, N_USERS),
                r.randint(1, N_PRODUCTS),
                round(r.uniform(2, 900), 2),
                r.choice(STATUSES),
                f"2026-{r.randint(1, 12):02d}-{r.randint(1, 28):02d}",
            )
            for _ in range(N_ORDERS)
        ],
    )
    conn.commit()
    conn.close()


def read_query(r: random.Random) -> str:
    """One of the agent's read queries, with random parameters."""
    uid, k = r.randint(1, N_USERS), r.randint(3, 20)
    lo = r.randint(2, 200)
    return r.choice(
        [
            f"SELECT COUNT(*), ROUND(SUM(total), 2) FROM orders WHERE user_id = {uid} AND status <> 'cancelled'",
            f"SELECT u.name, COUNT(o.id) AS n, ROUND(SUM(o.total), 2) AS spent "
            f"FROM users u JOIN orders o ON o.user_id = u.id "
            f"WHERE u.country = '{r.choice(COUNTRIES)}' GROUP BY u.id ORDER BY spent DESC LIMIT {k}",
            f"SELECT p.category, COUNT(*) AS n, ROUND(AVG(o.total), 2) "
            f"FROM orders o JOIN products p ON p.id = o.product_id "
            f"WHERE o.status = '{r.choice(STATUSES)}' AND o.created_at >= '2026-{r.randint(1, 12):02d}-01' "
            f"GROUP BY p.category ORDER BY n DESC",
            f"SELECT id, name, price FROM products WHERE category = '{r.choice(CATEGORIES)}' "
            f"AND price BETWEEN {lo} AND {lo + r.randint(20, 200)} "
            f"ORDER BY price LIMIT {k}",
            f"SELECT o.id, o.total, u.name FROM orders o JOIN users u ON u.id = o.user_id WHERE o.status = 'refunded' "
            f"AND o.total > {r.randint(100, 800)} ORDER BY o.total DESC LIMIT {k}",
            f"WITH recent AS (SELECT user_id, SUM(total) AS spent FROM orders "
            f"WHERE created_at >= '2026-{r.randint(6, 12):02d}-01' "
            f"GROUP BY user_id) SELECT COUNT(*), ROUND(AVG(spent), 2) FROM recent WHERE spent > {r.randint(100, 1500)}",
        ]
    )


def destructive_query(r: random.Random) -> Tuple[str, str]:
    """A statement the policy denies, and the read of the same rows the plain arm runs instead."""
    uid = r.randint(1, N_USERS)
    return r.choice(
        [
            ("DROP TABLE orders", "SELECT COUNT(*) FROM orders"),
            ("DROP TABLE IF EXISTS users", "SELECT COUNT(*) FROM users"),
            (f"DELETE FROM orders WHERE user_id = {uid}", f"SELECT COUNT(*) FROM orders WHERE user_id = {uid}"),
            (
                f"DELETE FROM users WHERE country = '{r.choice(COUNTRIES)}'",
                f"SELECT COUNT(*) FROM users WHERE country = '{r.choice(COUNTRIES)}'",
            ),
        ]
    )


@dataclass(frozen=True)
class TaskPair:
    governed: Dict[str, Any]  # what the governed arms run
    plain: Dict[str, Any]  # the same task with its destructive statement (if any) replaced by a read
    destructive: bool


def make_tasks(r: random.Random, count: int, destructive_fraction: float, db: str, per_task: int = 0) -> List[TaskPair]:
    """``count`` tasks of 2 or 3 queries each, or of ``per_task`` queries when it is set."""
    n_destructive = round(destructive_fraction * count)
    destructive = set(r.sample(range(count), n_destructive))
    tasks = []
    for i in range(count):
        queries = [read_query(r) for _ in range(per_task or r.choice((2, 3)))]
        plain = list(queries)
        if i in destructive:
            position = r.randrange(len(queries))
            queries[position], plain[position] = destructive_query(r)
        tasks.append(TaskPair({"db": db, "queries": queries}, {"db": db, "queries": plain}, i in destructive))
    return tasks


# ----------------------------------------------------------------------------- agent


def run_sql(query: str, db: str) -> List[tuple]:
    """The agent's tool: one connection per call, all rows fetched."""
    conn = sqlite3.connect(db)
    try:
        return conn.execute(query).fetchall()
    finally:
        conn.close()


class SQLTaskAgent(agl.LitAgent):
    """Runs the queries of its task through ``tool``; reward = fraction of the queries that ran."""

    def __init__(self, tool: Callable[..., List[tuple]], model_ms: float = 0.0) -> None:
        super().__init__()
        self.tool = tool
        self.model_s = model_ms / 1000.0

    def rollout(self, task: Dict[str, Any], resources: Any, rollout: Any) -> float:
        ran = 0
        for query in task["queries"]:
            if self.model_s:
                time.sleep(self.model_s)  # stands in for the model call that wrote this query
            try:
                self.tool(query, db=task["db"])
                ran += 1
            except ActionBlockedError:
                pass  # an LLM agent would read the message and try something else
        return ran / len(task["queries"])


# ----------------------------------------------------------------------------- arms


@dataclass
class Arm:
    label: str
    runner: agl.LitAgentRunner
    store: InMemoryLightningStore
    governed: bool
    kernel: Optional[GovernanceKernel] = None
    rollouts_per_s: List[float] = field(default_factory=list)  # one per counted round
    cpu_ms_per_rollout: List[float] = field(default_factory=list)  # process CPU time, one per counted round
    step_ms: List[float] = field(default_factory=list)  # every counted step
    rollout_ids: List[str] = field(default_factory=list)  # counted rollouts
    failed: int = 0

    async def run_batch(self, tasks: Sequence[TaskPair], counted: bool) -> None:
        clock = time.perf_counter
        gc.collect()
        steps: List[float] = []
        ids: List[str] = []
        failed = 0
        cpu_started = time.process_time()
        batch_started = clock()
        for pair in tasks:
            started = clock()
            rollout = await self.runner.step(pair.governed if self.governed else pair.plain)
            steps.append(clock() - started)
            ids.append(rollout.rollout_id)
            failed += rollout.status != "succeeded"
        elapsed = clock() - batch_started
        cpu = time.process_time() - cpu_started
        if counted:
            self.rollouts_per_s.append(len(tasks) / elapsed)
            self.cpu_ms_per_rollout.append(cpu / len(tasks) * 1e3)
            self.step_ms.extend(s * 1e3 for s in steps)
            self.rollout_ids.extend(ids)
            self.failed += failed


async def start_arm(
    label: str,
    runner: agl.LitAgentRunner,
    tool: Callable[..., Any],
    governed: bool,
    kernel: Optional[GovernanceKernel] = None,
    model_ms: float = 0.0,
    worker_id: int = 0,
) -> Arm:
    store = InMemoryLightningStore()
    await store.add_resources({"prompt": agl.PromptTemplate(template="{q}", engine="f-string")})
    runner.init(SQLTaskAgent(tool, model_ms))
    runner.init_worker(worker_id, store)
    return Arm(label, runner, store, governed, kernel)


def policy() -> SQLPolicy:
    return SQLPolicy(deny=list(DENY), dialect="sqlite")


@dataclass
class Results:
    arms: List[Arm]
    db_intact: bool
    audit: Dict[str, Any]
    spans_per_rollout: Dict[str, float]
    checks: Dict[str, int]
    blocked: Dict[str, int]
    expected_blocked: int
    elapsed_s: float


async def measure(
    rounds: int, rollouts: int, seed: int, destructive: float, tmp: Path, model_ms: float = 0.0, per_task: int = 0
) -> Results:
    started = time.perf_counter()
    db = tmp / "shop.db"
    build_database(db, seed)
    before = table_counts(db)
    r = random.Random(seed)
    warmup = make_tasks(r, WARMUP_ROLLOUTS, destructive, str(db), per_task)
    schedule = [make_tasks(r, rollouts, destructive, str(db), per_task) for _ in range(rounds)]

    governed = governed_tool(TOOL, run_sql)
    kernel = GovernanceKernel([policy()])
    audit_kernel = GovernanceKernel([policy()], recorder=tmp / "audit.db")
    arms = [
        await start_arm(
            "plain LitAgentRunner", agl.LitAgentRunner(agl.AgentOpsTracer()), run_sql, governed=False, model_ms=model_ms
        ),
        await start_arm("AgentOSRunner", AgentOSRunner(kernel, log_violations=False), governed, True, kernel, model_ms),
        await start_arm(
            "AgentOSRunner + audit",
            AgentOSRunner(audit_kernel, log_violations=False),
            governed,
            True,
            audit_kernel,
            model_ms,
        ),
    ]
    try:
        for arm in arms:
            await arm.run_batch(warmup, counted=False)
        counts_before = {
            arm.label: dict(arm.runner.get_stats()) for arm in arms if isinstance(arm.runner, AgentOSRunner)
        }
        for index, tasks in enumerate(schedule):
            shift = index % len(arms)
            for arm in (*arms[shift:], *arms[:shift]):
                await arm.run_batch(tasks, counted=True)

        spans_per_rollout = {}
        for arm in arms:
            total = 0
            for rollout_id in arm.rollout_ids:
                total += len(await arm.store.query_spans(rollout_id))
            spans_per_rollout[arm.label] = total / len(arm.rollout_ids)
        checks, blocked = {}, {}
        for arm in arms:
            if isinstance(arm.runner, AgentOSRunner):
                stats = arm.runner.get_stats()
                checks[arm.label] = stats["total_checks"] - counts_before[arm.label]["total_checks"]
                blocked[arm.label] = stats["blocked_actions"] - counts_before[arm.label]["blocked_actions"]
            else:
                checks[arm.label] = blocked[arm.label] = 0
    finally:
        for arm in arms:
            try:
                arm.runner.teardown_worker(0)
                arm.runner.teardown()
            except Exception:  # noqa: BLE001 -- a teardown problem must not hide the figures
                logging.getLogger(__name__).exception("teardown of %s failed", arm.label)
    audit_kernel.audit.flush()
    audit = audit_kernel.verify_audit()
    audit_kernel.close()
    kernel.close()
    return Results(
        arms=arms,
        db_intact=table_counts(db) == before,
        audit=audit,
        spans_per_rollout=spans_per_rollout,
        checks=checks,
        blocked=blocked,
        expected_blocked=sum(t.destructive for tasks in schedule for t in tasks),
        elapsed_s=time.perf_counter() - started,
    )


# ----------------------------------------------------------------------------- report


def report(results: Results, header: str, env: Dict[str, Any]) -> Dict[str, Any]:
    """Print the figures; return them as a JSON-able dict."""
    plain = results.arms[0]
    plain_median = statistics.median(plain.rollouts_per_s)
    plain_cpu = statistics.median(plain.cpu_ms_per_rollout)
    rows = []
    for arm in results.arms:
        median = statistics.median(arm.rollouts_per_s)
        paired = [a / p for a, p in zip(arm.rollouts_per_s, plain.rollouts_per_s, strict=True)]
        rows.append(
            {
                "arm": arm.label,
                "rounds": len(arm.rollouts_per_s),
                "rollouts": len(arm.rollout_ids),
                "rollouts_per_s_median": median,
                "rollouts_per_s_min": min(arm.rollouts_per_s),
                "rollouts_per_s_max": max(arm.rollouts_per_s),
                "rollouts_per_s_by_round": arm.rollouts_per_s,
                "ratio_to_plain": median / plain_median,
                "paired_ratio_median": statistics.median(paired),
                "paired_ratio_min": min(paired),
                "paired_ratio_max": max(paired),
                "ms_per_rollout": 1e3 / median,
                "extra_ms_vs_plain": 1e3 / median - 1e3 / plain_median,
                "step_p50_ms": statistics.median(arm.step_ms),
                "cpu_ms_per_rollout": statistics.median(arm.cpu_ms_per_rollout),
                "cpu_ms_per_rollout_by_round": arm.cpu_ms_per_rollout,
                # Governance's CPU per governed call: the arm's extra CPU per rollout over the
                # plain runner's, divided by the governed calls per rollout.
                "extra_cpu_ms_per_check": (statistics.median(arm.cpu_ms_per_rollout) - plain_cpu)
                / (results.checks[arm.label] / len(arm.rollout_ids))
                if results.checks[arm.label]
                else None,
                "checks": results.checks[arm.label],
                "blocked": results.blocked[arm.label],
                "spans_per_rollout": results.spans_per_rollout[arm.label],
                "failed_rollouts": arm.failed,
            }
        )

    print(header)
    print(f"{env['python']} on {env['platform']}, {env['cpus']} CPUs")
    sqlglotc = "yes" if env["sqlglotc_in_use"] else "no (pure-Python parser)"
    print(
        f"agentlightning {env['agentlightning']}, agentops {env['agentops']}, "
        f"agent-os-kernel {env['agent_os_kernel']}, "
        f"sqlglot {env['sqlglot']} (compiled parser: {sqlglotc}), SQLite {env['sqlite']}"
    )
    print(
        f"policy: SQLPolicy(deny={list(DENY)}, dialect='sqlite'); driven by runner.step(); "
        f"InMemoryLightningStore; AgentOpsTracer\n"
    )
    print_table(
        [
            "arm",
            "rollouts/s median",
            "min-max",
            "vs plain",
            "paired ratio [min-max]",
            "ms/rollout",
            "+ms vs plain",
            "step p50 ms",
            "CPU ms/rollout",
            "+CPU ms/check",
            "checks",
            "blocked",
            "spans/rollout",
        ],
        [
            [
                row["arm"],
                f"{row['rollouts_per_s_median']:.1f}",
                f"{row['rollouts_per_s_min']:.1f}-{row['rollouts_per_s_max']:.1f}",
                f"{row['ratio_to_plain']:.2f}",
                f"{row['paired_ratio_median']:.2f} [{row['paired_ratio_min']:.2f}-{row['paired_ratio_max']:.2f}]",
                f"{row['ms_per_rollout']:.2f}",
                "-" if row is rows[0] else f"{row['extra_ms_vs_plain']:+.2f}",
                f"{row['step_p50_ms']:.2f}",
                f"{row['cpu_ms_per_rollout']:.2f}",
                "-" if row["extra_cpu_ms_per_check"] is None else f"{row['extra_cpu_ms_per_check']:+.3f}",
                row["checks"] if row is not rows[0] else "-",
                row["blocked"] if row is not rows[0] else "-",
                f"{row['spans_per_rollout']:.1f}",
            ]
            for row in rows
        ],
        float_format=",.2f",
    )
    failed = sum(row["failed_rollouts"] for row in rows)
    print(
        f"\nrollouts that did not succeed: {failed}; "
        f"database unchanged after all rollouts: {'yes' if results.db_intact else 'NO'}"
    )
    print(
        f"destructive statements in the counted tasks: {results.expected_blocked}; blocked by "
        + ", ".join(f"{label}: {n}" for label, n in results.blocked.items() if label != plain.label)
        + " (the plain arm ran a read of the same rows instead)"
    )
    print(
        f"audit trail: {results.audit.get('total_entries')} FlightRecorder records (warm-up included), "
        f"hash chain valid: {results.audit.get('valid')}"
    )
    print(f"\nset-up, warm-up and measurement took {results.elapsed_s:.1f} s")
    return {
        "environment": env,
        "rows": rows,
        "db_intact": results.db_intact,
        "destructive_statements": results.expected_blocked,
        "audit": {"records": results.audit.get("total_entries"), "valid": results.audit.get("valid")},
        "elapsed_s": results.elapsed_s,
    }


def main(argv: Optional[Sequence[str]] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rollouts", type=int, default=50, help="rollouts per arm per round (default: 50)")
    parser.add_argument(
        "--rounds",
        type=int,
        default=10,
        help="counted rounds; every arm runs once per round, in rotating order (default: 10)",
    )
    parser.add_argument(
        "--seed", type=int, default=0, help="seed of the database content and of the tasks (default: 0)"
    )
    parser.add_argument(
        "--destructive",
        type=float,
        default=0.1,
        metavar="FRACTION",
        help="fraction of each round's tasks that carry one DROP or DELETE (default: 0.1)",
    )
    parser.add_argument(
        "--model-ms",
        type=float,
        default=0.0,
        metavar="MS",
        help="simulated model latency before each query, in ms (a sleep, as an LLM call would take); "
        "0, the default, leaves only the cheap SQLite tool: the near-worst case for the ratio",
    )
    parser.add_argument(
        "--queries",
        type=int,
        default=0,
        metavar="N",
        help="governed queries per rollout (default 0: 2 or 3 at random); 1 isolates the per-call overhead",
    )
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write the figures to this JSON file")
    args = parser.parse_args(argv)
    require_at_least(parser, args, queries=0, model_ms=0, rollouts=1, rounds=1)
    if not 0 <= args.destructive <= 1:
        parser.error("--destructive must be between 0 and 1")

    logging.getLogger("agentlightning").setLevel(logging.ERROR)
    with tempfile.TemporaryDirectory(prefix="bench-runner-") as tmp:
        results = asyncio.run(
            measure(args.rounds, args.rollouts, args.seed, args.destructive, Path(tmp), args.model_ms, args.queries)
        )
    header = (
        f"Rollout throughput, plain LitAgentRunner vs AgentOSRunner -- "
        f"{args.rounds} rounds x {args.rollouts} rollouts per arm, "
        f"seed={args.seed}, destructive={args.destructive:.0%} of tasks, model latency={args.model_ms:g} ms per query, "
        f"warm-up={WARMUP_ROLLOUTS} rollouts per arm"
    )
    figures = report(results, header, environment("agentlightning", "agentops", "agent-os-kernel"))
    if args.json is not None:
        settings = {
            "rollouts": args.rollouts,
            "rounds": args.rounds,
            "seed": args.seed,
            "destructive": args.destructive,
            "model_ms": args.model_ms,
            "warmup": WARMUP_ROLLOUTS,
        }
        args.json.write_text(json.dumps({**settings, **figures}, indent=2) + "\n")
        print(f"figures written to {args.json}")


if __name__ == "__main__":
    main()
