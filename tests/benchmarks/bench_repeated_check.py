"""Where a repeated ``kernel.check`` spends its instructions, part by part (callgrind regions).

Run it on demand (pytest does not collect ``tests/benchmarks``)::

    python tests/benchmarks/bench_repeated_check.py               # this tree
    python tests/benchmarks/bench_repeated_check.py --tree <dir>  # another (a ``git archive`` of a commit)

``bench_hot_path.py`` gives the whole repeated check against its floor; this splits it. Each
region is one loop over ``--n`` realistic text-to-SQL queries (seed 0), every one already judged
(its analysis cached, the kernel's memo filled), under ``valgrind --tool=callgrind``,
``PYTHONHASHSEED=0``; an empty region's count is subtracted and the rest divided by ``--n``.
The same calls are timed natively for the wall-clock column, with the load average.

Rows, each a loop ``for text in texts: <call>``:

* ``loop`` -- an empty body, and ``dict`` -- ``{"query": text}``: the floor of any call;
* ``action`` -- ``Action.of_call("database_query", {"query": text})``: the frozen snapshot;
* ``evaluate`` -- ``SQLPolicy.evaluate`` of a prebuilt action (the analysis-cache hit);
* ``decision`` -- ``Decision.of_kernel`` of prebuilt fields, where the tree has it;
* the other parts of the remembered path, where the tree has them: reading the call's one
  argument into locals and looking its fingerprint up in the memo (where identical calls share
  one ``Action``: the entry holds it), ``plain_call`` (the snapshot and its fingerprint, the
  path of other calls), the memo's look-up (beside the look-up of its key, the row's floor), the
  context, the two clock reads and the decision id, each as the kernel does it;
* ``check ...`` -- ``kernel.check("database_query", {"query": text})`` through kernels of one
  SQL policy, of an SQL policy with a budget (stateful: evaluated every time) and an allow-list,
  and of one SQL policy with an audit trail (queued durability, in a temporary directory).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_common import print_table  # noqa: E402
from bench_kernel_decisions import build_workload  # noqa: E402
from bench_text_to_sql import _generic_queries  # noqa: E402
from callgrind_regions import instrument, on_valgrind, region, run_counted  # noqa: E402
from diff_hot_path import ROOT, load  # noqa: E402

TOOL = "database_query"
DENY = ["DROP", "DELETE", "TRUNCATE"]
#: Kernels with an audit trail, closed before their temporary directory goes.
OPENED: List[Any] = []


def rows(
    package: Any, texts: List[str], blocked: List[str], tmp: Path
) -> List[Tuple[str, Callable[[str], Any], List[str]]]:
    """``(name, call, texts)`` for every measured row."""
    actions = importlib_module(package, "actions")
    sql_policy = package.SQLPolicy(deny=DENY)
    context = actions.ActionContext()
    prebuilt = {text: actions.Action.of_call(TOOL, {"query": text}) for text in texts + blocked}
    one = package.GovernanceKernel([package.SQLPolicy(deny=DENY)])
    mixed = package.GovernanceKernel(
        [
            package.ToolAllowListPolicy([TOOL]),
            package.SQLPolicy(deny=DENY),
            package.CostControlPolicy(max_cost_usd=1e9),
        ]
    )
    audited = package.GovernanceKernel(
        [package.SQLPolicy(deny=DENY)],
        recorder=package.AuditTrail(package.open_flight_recorder(tmp / "audit.db"), durability="queued"),
    )
    OPENED.append(audited)
    out: List[Tuple[str, Callable[[str], Any], List[str]]] = [
        ("loop", lambda text: None, texts),
        ("dict", lambda text: {"query": text}, texts),
        ("action", lambda text: actions.Action.of_call(TOOL, {"query": text}), texts),
        ("evaluate", lambda text: sql_policy.evaluate(prebuilt[text], context), texts),
        ("prebuilt look-up", lambda text: prebuilt[text], texts),
    ]
    of_kernel = getattr(actions.Decision, "of_kernel", None)
    if of_kernel is not None:
        verdict = actions.Verdict.ALLOWED
        out.append(
            (
                "decision",
                lambda text: of_kernel(prebuilt[text], verdict, (), (), context, "d-1", None, None, 1.0),
                texts,
            )
        )
    if hasattr(actions, "action_of_one_str_argument"):  # identical calls share one Action
        out.append(("read the one argument into locals", read_one_argument, texts))
        out.append(
            (
                "read + fingerprint + memo look-up (the shared Action and the answers)",
                lambda text: remembered_entry(one, {"query": text}),
                texts,
            )
        )
    plain_call = getattr(actions, "plain_call", None)
    if plain_call is not None:
        out.append(("snapshot + fingerprint (plain_call)", lambda text: plain_call(TOOL, {"query": text}, 0.0), texts))
        fingerprints = {text: plain_call(TOOL, {"query": text}, 0.0)[1] for text in texts}
        out.append(("memo look-up", lambda text: one._remembered.get(fingerprints[text]), texts))
        out.append(("fingerprint look-up (floor of the row above)", lambda text: fingerprints[text], texts))
    out.append(("context look-up", lambda text: actions.current_context(), texts))
    out.append(("two perf_counter calls", lambda text: time.perf_counter() - time.perf_counter(), texts))
    if hasattr(one, "_id_prefix"):
        new_id = (
            (lambda text: one._id_prefix + hex(next(one._id_counter)))
            if one._id_prefix.endswith("-")
            else (lambda text: f"{one._id_prefix}-{next(one._id_counter):x}")
        )
        out.append(("decision id", new_id, texts))
    out += [
        ("check, SQLPolicy, allowed", lambda text: one.check(TOOL, {"query": text}), texts),
        ("check, SQLPolicy, blocked", lambda text: one.check(TOOL, {"query": text}), blocked),
        ("check, allow-list + SQL + budget, allowed", lambda text: mixed.check(TOOL, {"query": text}), texts),
        ("check, SQLPolicy + audit (queued), allowed", lambda text: audited.check(TOOL, {"query": text}), texts),
    ]
    return out


def read_one_argument(text: str) -> Any:
    """How the kernel reads a call's one argument out of the caller's dict, as it does it."""
    args = {"query": text}
    try:
        (name,) = args
        value = args[name] if type(name) is str else None
    except (ValueError, RuntimeError, KeyError):
        value = None
    return value


def remembered_entry(kernel: Any, args: Dict[str, Any]) -> Any:
    """The kernel's remembered path up to its memo entry (the shared Action and the answers)."""
    try:
        (name,) = args
        value = args[name] if type(name) is str else None
    except (ValueError, RuntimeError, KeyError):
        value = None
    if type(value) is str:
        return kernel._remembered.get((TOOL, 0.0, name, value))
    return None


def importlib_module(package: Any, name: str) -> Any:
    import importlib

    return importlib.import_module(f"{package.__name__}.{name}")


def workload(n: int) -> Tuple[List[str], List[str]]:
    texts = _generic_queries(random.Random(0))[:n]
    blocked = [q.sql for q in build_workload(4 * n + 200, 1) if q.kind.should_block][:n]
    return texts, blocked


def count_child(n: int, tree: Path) -> None:
    package = load(tree)
    texts, blocked = workload(n)
    with tempfile.TemporaryDirectory(prefix="agentos-bench-repeated-") as tmp:
        measured = rows(package, texts, blocked, Path(tmp))
        for _, call, inputs in measured:  # every text judged once (and twice: the memo's second sight)
            for text in inputs + inputs:
                call(text)
        instrument()
        with region("empty"):
            pass
        for name, call, inputs in measured:
            for text in inputs[:5]:
                call(text)
            with region(f"{name}|{len(inputs)}"):
                for text in inputs:
                    call(text)
        for kernel in OPENED:
            kernel.close()


def wall_clock(n: int, tree: Path, repeat: int) -> Dict[str, float]:
    package = load(tree)
    texts, blocked = workload(n)
    out = {}
    with tempfile.TemporaryDirectory(prefix="agentos-bench-repeated-") as tmp:
        for name, call, inputs in rows(package, texts, blocked, Path(tmp)):
            for text in inputs + inputs:
                call(text)
            runs = []
            for _ in range(repeat):
                started = time.perf_counter_ns()
                for text in inputs:
                    call(text)
                runs.append((time.perf_counter_ns() - started) / len(inputs) / 1000)
            out[name] = statistics.median(runs)
        for kernel in OPENED:
            kernel.close()
    return out


def main(argv: Optional[Sequence[str]] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=200, help="texts per row (default: 200)")
    parser.add_argument("--repeat", type=int, default=21, help="wall-clock loops per row; the median is shown")
    parser.add_argument("--tree", type=Path, default=ROOT, help="the source tree whose kernel is measured")
    parser.add_argument("--no-callgrind", action="store_true", help="wall clock only")
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write the figures to this JSON file")
    parser.add_argument("--child-count", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child_count:
        if not on_valgrind():
            raise SystemExit("--child-count runs under valgrind only (the parent starts it)")
        count_child(args.n, args.tree)
        return
    load_before = os.getloadavg()
    counts: Dict[str, float] = {}
    if not args.no_callgrind:
        env = dict(os.environ, PYTHONHASHSEED="0", LITELLM_LOCAL_MODEL_COST_MAP="True")
        raw = run_counted(
            [sys.executable, str(Path(__file__)), "--child-count", "--n", str(args.n), "--tree", str(args.tree)], env
        )
        empty = raw.pop("empty", 0)
        for label, total in raw.items():
            name, calls = label.rsplit("|", 1)
            counts[name] = (total - empty) / int(calls)
    wall = wall_clock(args.n, args.tree, args.repeat)
    load_after = os.getloadavg()
    print(f"tree {args.tree}; load average (1, 5, 15 min) before {load_before}, after {load_after}")
    table = [[name, "-" if name not in counts else f"{counts[name]:,.0f}", f"{us:.2f}"] for name, us in wall.items()]
    print_table(["row (per call)", "instructions", "wall us (median)"], table)
    if args.json:
        args.json.write_text(
            json.dumps({"load_before": load_before, "load_after": load_after, "instructions": counts, "wall_us": wall})
        )


if __name__ == "__main__":
    main()
