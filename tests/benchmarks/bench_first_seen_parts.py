"""Where a first-seen governed rollout's instructions go, part by part (callgrind; run on demand).

Run it on demand (pytest does not collect ``tests/benchmarks``)::

    python tests/benchmarks/bench_first_seen_parts.py                          # this tree
    python tests/benchmarks/bench_first_seen_parts.py --tree /tmp/before --tree .
    python tests/benchmarks/bench_first_seen_parts.py --dialect postgres --n 20

The workload is ``bench_gpu_speed.py``'s first-seen one: the agent's read queries of
``bench_runner_throughput.read_query`` (joins, aggregates, calls), each made new with a comment,
judged by ``SQLPolicy(deny=["DROP", "DELETE", "TRUNCATE"], dialect=--dialect)`` (``sqlite`` by
default, the runner benchmarks' policy). Each ``--tree`` is measured in a child process of its own
under valgrind's callgrind (``PYTHONHASHSEED=0``; ``callgrind_regions``: only marked regions
count, on every thread, an empty region's count subtracted, divided by the texts in the region).

The regions form a ladder, each one the previous one's work and one more layer, every text new to
every cache:

* ``tokenize`` -- the dialect's tokenizer alone (sqlglot), or nothing for PostgreSQL;
* ``parse`` -- the bare parse: ``sqlglot.parse(text, read=dialect)``, or libpg_query's C parse to
  JSON text (``pglast.parser.parse_sql_json``) for PostgreSQL;
* ``reading`` -- the guard's reading of the text into statements: the parse and the walk over the
  tree, each node placed by the rows of ``sql.rules`` (``sql.policy.analyze_sql``, uncached);
* ``evaluate`` -- ``SQLPolicy.evaluate`` of a prebuilt ``Action``: the reading under the budget,
  the shared cache, the role of the tool, the lists applied;
* ``action`` -- building the ``Action`` alone (the snapshot of the call: its arguments checked and
  frozen, its content key);
* ``check`` -- ``kernel.check(tool, {"query": text})``, no audit: the snapshot, the plan, the
  policy asked under the kernel's rules, the memo, the decision;
* ``check + audit`` -- the same with a durable audit trail (``recorder=``, ``synchronous=FULL``):
  the decision's record committed before the check returns;
* ``check + audit + outcome`` -- and the call's outcome recorded (``kernel.record_outcome`` with
  the rows the tool returned for the text, run beforehand), as a governed tool does after the call;
* ``rollout plain`` / ``rollout governed`` -- a rollout of one tool call through
  ``agentlightning.LitAgentRunner`` and through ``AgentOSRunner`` over the kernel with the audit
  (the arms of ``bench_runner_overhead.py``, the same queries in both; each call's outcome shares the
  next decision's commit, as natively with rollouts back to back), and the same with no call
  (``, no call``): governed minus plain is what governance adds to a rollout; with no call it is
  the runner's own part per rollout (the spans, the governance summary), and what a call adds
  beyond ``check + audit + outcome`` is the runner's own part per call.

Derived parts (differences of the ladder's rungs) are printed under the table. Instructions are
user space; an fsync's time in the kernel is not in them. Nothing is asserted; this prints.
"""

from __future__ import annotations

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("AGENTOPS_LOGGING_TO_FILE", "False")
os.environ.setdefault("AGENTOPS_LOG_LEVEL", "ERROR")

import argparse  # noqa: E402
import asyncio  # noqa: E402
import gc  # noqa: E402
import importlib  # noqa: E402
import json  # noqa: E402
import logging  # noqa: E402
import random  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any, Callable, Dict, List, Optional, Sequence  # noqa: E402

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))

from bench_common import print_table, require_at_least  # noqa: E402
from callgrind_regions import instrument, on_valgrind, per_call, region, run_counted  # noqa: E402

TOOL = "database_query"
DENY = ["DROP", "DELETE", "TRUNCATE"]
WARM = 10
RUNGS = (
    "tokenize",
    "parse",
    "reading",
    "evaluate",
    "action",
    "check",
    "check + audit",
    "check + audit + outcome",
    "rollout plain, no call",
    "rollout governed, no call",
    "rollout plain",
    "rollout governed",
)


def new_texts(r: random.Random, count: int) -> List[str]:
    """``count`` of the agent's read queries, each new (a comment makes it so, as in bench_gpu_speed)."""
    from bench_runner_throughput import read_query

    return [f"{read_query(r)} -- {r.getrandbits(48):x}" for _ in range(count)]


def count_child(tree: Path, n: int, dialect: Optional[str]) -> None:
    """Under callgrind: one region per rung, ``n`` new texts each."""
    from bench_runner_overhead import CALLGRIND_OUTCOME_LINGER_S, Bench, load_contrib

    load_contrib(tree)
    import sqlglot
    from bench_runner_throughput import run_sql
    from pglast import parser as pg_parser

    kernel_package = importlib.import_module("agentlightning.contrib.kernel.agentos")
    actions = importlib.import_module("agentlightning.contrib.kernel.agentos.actions")
    sql_policy = importlib.import_module("agentlightning.contrib.kernel.agentos.sql.policy")
    Action, ActionContext = actions.Action, actions.ActionContext
    GovernanceKernel, SQLPolicy = kernel_package.GovernanceKernel, kernel_package.SQLPolicy
    r = random.Random(0)
    scratch = tempfile.TemporaryDirectory(prefix="bench-first-seen-parts-", dir=".")
    tmp = Path(scratch.name)

    policy = SQLPolicy(deny=DENY, dialect=dialect)
    context = ActionContext()
    plain_kernel = GovernanceKernel([SQLPolicy(deny=DENY, dialect=dialect)])
    audited_kernel = GovernanceKernel([SQLPolicy(deny=DENY, dialect=dialect)], recorder=tmp / "check-audit.db")
    if dialect == "postgres":
        tokenize: Optional[Callable[[str], Any]] = None
        parse: Callable[[str], Any] = pg_parser.parse_sql_json
    else:
        tokenize = sqlglot.Dialect.get_or_raise(dialect).tokenize
        parse = lambda t: sqlglot.parse(t, read=dialect)  # noqa: E731
    calls: Dict[str, Callable[[List[str]], Any]] = {
        "parse": lambda texts: [parse(t) for t in texts],
        "reading": lambda texts: [sql_policy.analyze_sql(t, dialect) for t in texts],
        "evaluate": lambda texts: [policy.evaluate(a, context) for a in texts],
        "action": lambda texts: [Action(TOOL, {"query": t}) for t in texts],
        "check": lambda texts: [plain_kernel.check(TOOL, {"query": t}) for t in texts],
        "check + audit": lambda texts: [audited_kernel.check(TOOL, {"query": t}) for t in texts],
        "check + audit + outcome": lambda texts: [
            audited_kernel.record_outcome(audited_kernel.check(TOOL, {"query": t}), result=rows, execution_time_ms=1.0)
            for t, rows in texts
        ],
    }
    if tokenize is not None:
        calls = {"tokenize": lambda texts: [tokenize(t) for t in texts], **calls}

    # Its governed kernel reads sqlite, whatever --dialect. The outcome shares the next decision's commit, as it
    # does natively with rollouts back to back (callgrind's slowdown would outlast the product's linger).
    bench = Bench([0, 1], True, tmp, 0, audit=True, outcome_linger_s=CALLGRIND_OUTCOME_LINGER_S)

    def prepared(name: str, texts: List[str]) -> List[Any]:
        """What the rung's call takes: prebuilt actions for ``evaluate`` (their building is a rung of
        its own); for ``outcome`` each text with the rows the tool returned for it (run beforehand)."""
        if name == "evaluate":
            return [Action(TOOL, {"query": t}) for t in texts]
        if name.endswith("outcome"):
            return [(t, run_sql(t, str(bench.db))) for t in texts]
        return texts

    def tasks(calls: int, count: int) -> List[Dict[str, Any]]:
        return [{"db": str(bench.db), "queries": [t][:calls]} for t in new_texts(r, count)]

    async def measure() -> None:  # one event loop for the runners' whole life
        await bench.start()
        for arm in bench.arms:
            await bench.run(arm, tasks(arm.calls, WARM))
        for name, call in calls.items():
            call(prepared(name, new_texts(r, WARM)))
        instrument()
        with region("empty"):
            pass
        for name, call in calls.items():
            texts = prepared(name, new_texts(r, n))
            call(prepared(name, new_texts(r, 3)))
            gc.collect()
            with region(f"{name}|{n}"):
                call(texts)
        counted, warm = tasks(1, n), tasks(1, 3)  # the same queries in both arms: SQLite's own work is alike
        for arm in bench.arms:
            await bench.run(arm, [{**task, "queries": task["queries"][: arm.calls]} for task in warm])
            gc.collect()
            label = f"rollout {'governed' if arm.governed else 'plain'}{'' if arm.calls else ', no call'}"
            with region(f"{label}|{n}"):
                await bench.run(arm, [{**task, "queries": task["queries"][: arm.calls]} for task in counted])
        bench.stop()

    asyncio.run(measure())
    plain_kernel.close()
    audited_kernel.close()
    scratch.cleanup()


def instructions(tree: Path, n: int, dialect: Optional[str]) -> Dict[str, float]:
    env = dict(os.environ, PYTHONHASHSEED="0", LITELLM_LOCAL_MODEL_COST_MAP="True")
    argv = [sys.executable, str(Path(__file__)), "--child-count", "--n", str(n), "--tree", str(tree)]
    argv += ["--dialect", dialect or "none"]
    return per_call(run_counted(argv, env))


def parts(figures: Dict[str, float]) -> List[Sequence[Any]]:
    """The derived parts: (name, instructions, what it is)."""
    get = figures.get
    rows: List[Sequence[Any]] = []

    def add(name: str, high: str, low: Optional[str], what: str) -> None:
        if get(high) is not None and (low is None or get(low) is not None):
            rows.append((name, get(high) - (get(low) if low else 0.0), what))

    add("the parse", "parse", None, "sqlglot.parse / libpg_query's C parse")
    add("  of it, the tokenizer", "tokenize", None, "sqlglot's tokenizer")
    add("the walk, plan and rules", "reading", "parse", "reading - parse: the tree placed by the effect rows")
    add("policy evaluation", "evaluate", "reading", "evaluate - reading: budget, cache, role, lists")
    add("the Action (snapshot)", "action", None, "Action(tool, args)")
    if get("check") is not None and get("evaluate") is not None and get("action") is not None:
        rows.append(("the kernel's check", get("check") - get("evaluate") - get("action"), "check - evaluate - action"))
    add("the audit record of the decision", "check + audit", "check", "committed before the check returns")
    add("the audit record of the outcome", "check + audit + outcome", "check + audit", "record_outcome(rows)")
    add("the runner, per rollout", "rollout governed, no call", "rollout plain, no call", "governed - plain, no call")
    names = ("rollout governed", "rollout plain", "rollout governed, no call", "rollout plain, no call")
    if all(get(k) is not None for k in names + ("check + audit + outcome",)):
        fixed = get("rollout governed, no call") - get("rollout plain, no call")
        per_call = get("rollout governed") - get("rollout plain") - fixed - get("check + audit + outcome")
        rows.append(("the runner, per call", per_call, "the rest of a governed call: binding, span, bookkeeping"))
    add("governance per rollout", "rollout governed", "rollout plain", "governed - plain, one call each")
    return rows


def main(argv: Optional[Sequence[str]] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", type=Path, action="append", help="a source tree to measure (repeat for several)")
    parser.add_argument("--n", type=int, default=30, help="texts (and rollouts) per region (default: 30)")
    parser.add_argument("--dialect", default="sqlite", help="the SQLPolicy's dialect, or 'none' (default: sqlite)")
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write the figures to this JSON file")
    parser.add_argument("--child-count", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    require_at_least(parser, args, n=1)
    dialect = None if args.dialect == "none" else args.dialect
    trees = [t.resolve() for t in (args.tree or [ROOT])]
    logging.getLogger("agentlightning").setLevel(logging.ERROR)
    if args.child_count:
        if not on_valgrind():
            raise SystemExit("--child-count runs under valgrind only (the parent starts it)")
        count_child(trees[0], args.n, dialect)
        return
    load_before = os.getloadavg()
    counts = {str(tree): instructions(tree, args.n, dialect) for tree in trees}
    print(f"dialect {args.dialect}, {args.n} new texts per region; load average before {load_before}")
    header = ["rung (instructions per text)"] + [str(t) for t in trees]
    print_table(header, [[name] + [f"{counts[str(t)].get(name, float('nan')):,.0f}" for t in trees] for name in RUNGS])
    print()
    derived = {str(t): {name: value for name, value, _ in parts(counts[str(t)])} for t in trees}
    names = [name for name, _, _ in parts(counts[str(trees[0])])]
    whats = {name: what for name, _, what in parts(counts[str(trees[0])])}
    print_table(
        ["part (instructions per rollout)"] + [str(t) for t in trees] + ["what"],
        [[name] + [f"{derived[str(t)].get(name, float('nan')):,.0f}" for t in trees] + [whats[name]] for name in names],
    )
    if args.json:
        args.json.write_text(json.dumps({"dialect": args.dialect, "n": args.n, "instructions": counts}, indent=1))


if __name__ == "__main__":
    main()
