"""A check through every public call form, before and after, in one run (callgrind instructions).

Run it on demand (pytest does not collect ``tests/benchmarks``)::

    python tests/benchmarks/bench_check_forms.py                              # this tree
    python tests/benchmarks/bench_check_forms.py --tree /tmp/before --tree .  # side by side
    python tests/benchmarks/bench_check_forms.py --seed 1 --only repeated     # another workload, some rows

Each ``--tree`` (a checkout or a ``git archive`` of any commit) is measured in a child process of
its own under valgrind's callgrind (``PYTHONHASHSEED=0``; ``callgrind_regions``: only marked
regions count, an empty region's count subtracted, divided by the calls in the region). Rows:

* ``repeated`` -- ``kernel.check`` of a text already judged, through each public form:
  ``check(tool, dict)``, ``check(action)`` of a prebuilt :class:`Action`, ``check(Action.sql(q))``
  building the action in the call, and ``check(tool, dict)`` with two arguments; a kernel of one
  ``SQLPolicy``. The target is 15,000 instructions for every form. ``repeated: check(tool, dict),
  blocked`` is the first form for destructive texts the policy blocks (``bench_kernel_decisions``'
  workload): the decision's violations are priced by the kernel's table on every check.
* ``extra SQLPolicy`` -- a first-seen check (every text new to the kernel and to the shared
  analysis caches, which are emptied before each call, the emptying inside the region for every
  row alike) with one ``SQLPolicy`` on the database tool, then with 1 and 4 more ``SQLPolicy``
  on other tools (``detect=True``, the default). The target: each extra policy adds at most 10%.
* ``first-seen <dialect>`` -- a first-seen check (``cache=False``: every call reads) against the
  bare parse: ``sqlglot.parse`` for sqlglot's dialects, libpg_query's C parse for PostgreSQL, both
  its Python tree (``pglast.parser.parse_sql``) and its JSON text (``parse_sql_json``). The
  workload is ``bench_text_to_sql.call_and_join_queries`` (joins and calls, seed ``--seed``).
  Targets: postgres <= 2x the C parse, the others <= 1.2x ``sqlglot.parse``.

The workloads: the realistic text-to-SQL queries of ``bench_text_to_sql.py`` (every seventh, so
every family of query is in) for the repeated rows, and the queries with calls and joins of
``--seed`` for the first-seen rows. Nothing is asserted; this prints.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import sys
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import sqlglot  # noqa: E402
from bench_common import print_table  # noqa: E402
from bench_kernel_decisions import build_workload  # noqa: E402
from bench_text_to_sql import _generic_queries, call_and_join_queries  # noqa: E402
from callgrind_regions import instrument, on_valgrind, per_call, region, run_counted  # noqa: E402
from diff_hot_path import ROOT, load  # noqa: E402
from pglast import parser as pg_parser  # noqa: E402

TOOL = "database_query"
DENY = ["DROP", "DELETE", "TRUNCATE"]
DIALECTS: Tuple[Optional[str], ...] = (None, "mysql", "sqlite", "postgres")
#: A row: (name, call, texts measured, texts to warm its code paths with, the row it is compared to).
Row = Tuple[str, Callable[[str], Any], List[str], List[str], Optional[str]]


def importlib_module(package: Any, name: str) -> Any:
    import importlib

    return importlib.import_module(f"{package.__name__}.{name}")


def rows(package: Any, n: int, seed: int) -> List[Row]:
    actions = importlib_module(package, "actions")
    sql_policy_module = importlib_module(package, "sql.policy")
    Action, GovernanceKernel, SQLPolicy = actions.Action, package.GovernanceKernel, package.SQLPolicy
    realistic = _generic_queries(random.Random(0))[::7]
    repeated, repeated_warm = realistic[:n], realistic[n : n + 20]
    calls = call_and_join_queries(random.Random(seed), 2 * n + 40)
    first, first_warm = calls[:n], calls[n : n + 20]
    out: List[Row] = []

    # ------------------------------------------------------------------ repeated, every form
    one = GovernanceKernel([SQLPolicy(deny=DENY)])
    prebuilt = {text: Action(TOOL, {"query": text}) for text in repeated + repeated_warm}
    out.append(("repeated: dict look-up (floor)", prebuilt.get, repeated, repeated_warm, None))
    out.append(("repeated: check(tool, dict)", lambda t: one.check(TOOL, {"query": t}), repeated, repeated_warm, None))
    out.append(("repeated: check(prebuilt Action)", lambda t: one.check(prebuilt[t]), repeated, repeated_warm, None))
    out.append(("repeated: check(Action.sql(q))", lambda t: one.check(Action.sql(t)), repeated, repeated_warm, None))
    out.append(
        (
            "repeated: check(tool, dict of two)",
            lambda t: one.check(TOOL, {"query": t, "database": "shop"}),
            repeated,
            repeated_warm,
            None,
        )
    )
    blocked = [q.sql for q in build_workload(4 * n + 280, 1) if q.kind.should_block][: n + 20]
    blocked, blocked_warm = blocked[:n], blocked[n:]
    out.append(
        ("repeated: check(tool, dict), blocked", lambda t: one.check(TOOL, {"query": t}), blocked, blocked_warm, None)
    )

    # ------------------------------------------------------------------ first-seen, extra SQLPolicy
    def forget_analyses() -> None:
        sql_policy_module._shared_analysis.cache_clear()
        sql_policy_module._shared_long_analysis.cache_clear()

    def first_seen(kernel: Any) -> Callable[[str], Any]:
        def call(text: str) -> Any:
            forget_analyses()
            return kernel.check(TOOL, {"query": text})

        return call

    for dialect in (None, "postgres"):
        label = dialect or "none"
        base = f"extra SQLPolicy ({label}): 0"
        for extra in (0, 1, 4):
            policies = [SQLPolicy(deny=DENY, dialect=dialect)] + [
                SQLPolicy(deny=["ALTER", "GRANT"], dialect=dialect, tools=[f"warehouse_{i}_query"], name=f"sql_{i}")
                for i in range(extra)
            ]
            name = f"extra SQLPolicy ({label}): {extra}"
            out.append((name, first_seen(GovernanceKernel(policies)), first, first_warm, None if extra == 0 else base))

    # ------------------------------------------------------------------ first-seen against the parse
    for dialect in DIALECTS:
        label = dialect or "none"
        kernel = GovernanceKernel([SQLPolicy(deny=DENY, dialect=dialect, cache=False)])
        name = f"first-seen {label}: check"
        if dialect == "postgres":
            out.append((f"first-seen {label}: pglast parse_sql", pg_parser.parse_sql, first, first_warm, None))
            out.append(
                (f"first-seen {label}: pglast parse_sql_json", pg_parser.parse_sql_json, first, first_warm, None)
            )
            floor = f"first-seen {label}: pglast parse_sql"
        else:
            floor = f"first-seen {label}: sqlglot.parse"
            out.append((floor, lambda t, d=dialect: sqlglot.parse(t, read=d), first, first_warm, None))
        out.append((name, lambda t, k=kernel: k.check(TOOL, {"query": t}), first, first_warm, floor))
    return out


def count_child(tree: Path, n: int, seed: int, only: str) -> None:
    package = load(tree)
    measured = [row for row in rows(package, n, seed) if not only or any(w in row[0] for w in only.split(","))]
    for name, call, texts, warm, _ in measured:
        if name.startswith("repeated"):
            for text in texts + warm:  # judged once: the rows measure the second sight
                call(text)
        for text in warm:
            call(text)
    instrument()
    with region("empty"):
        pass
    for name, call, texts, warm, _ in measured:
        if name.startswith("repeated"):  # judged again now: a first-seen row empties the analysis caches
            for text in texts:
                call(text)
        for text in warm[:5]:
            call(text)
        gc.collect()  # the collector's counters start from zero in every region
        with region(f"{name}|{len(texts)}"):
            for text in texts:
                call(text)


def instructions(tree: Path, n: int, seed: int, only: str) -> Dict[str, float]:
    env = dict(os.environ, PYTHONHASHSEED="0", LITELLM_LOCAL_MODEL_COST_MAP="True")
    argv = [sys.executable, str(Path(__file__)), "--child-count", "--n", str(n), "--seed", str(seed)]
    return per_call(run_counted(argv + ["--only", only, "--tree", str(tree)], env))


def main(argv: Optional[Sequence[str]] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", type=Path, action="append", help="a source tree to measure (repeat for several)")
    parser.add_argument("--n", type=int, default=30, help="texts per row (default: 30)")
    parser.add_argument("--seed", type=int, default=1, help="seed of the first-seen workload (default: 1)")
    parser.add_argument("--only", default="", help="comma-separated parts of row names to measure")
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write the figures to this JSON file")
    parser.add_argument("--child-count", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    trees = args.tree or [ROOT]
    if args.child_count:
        if not on_valgrind():
            raise SystemExit("--child-count runs under valgrind only (the parent starts it)")
        count_child(trees[0], args.n, args.seed, args.only)
        return
    load_before = os.getloadavg()
    counts = {str(tree): instructions(tree, args.n, args.seed, args.only) for tree in trees}
    package = load(trees[0])
    compared = {name: base for name, _, _, _, base in rows(package, 1, args.seed)}
    print(f"seed {args.seed}, {args.n} texts per row; load average before {load_before}, after {os.getloadavg()}")
    header = ["row (instructions per call)"]
    for tree in trees:
        header += [str(tree), "ratio"]
    table = []
    for name in counts[str(trees[0])]:
        line = [name]
        for tree in trees:
            figures = counts[str(tree)]
            value = figures.get(name)
            base = compared.get(name)
            line.append("-" if value is None else f"{value:,.0f}")
            if base is None or value is None or base not in figures:
                line.append("")
            elif name.startswith("extra"):
                line.append(f"+{(value - figures[base]) / figures[base]:.1%}")
            else:
                line.append(f"{value / figures[base]:.2f}x")
        table.append(line)
    print_table(header, table)
    if args.json:
        args.json.write_text(json.dumps({"seed": args.seed, "n": args.n, "instructions": counts}, indent=1))


if __name__ == "__main__":
    main()
