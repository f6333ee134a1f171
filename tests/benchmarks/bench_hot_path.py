"""The kernel's hot path in instructions (callgrind) beside paired wall-clock medians.

Run it on demand (pytest does not collect ``tests/benchmarks``)::

    python tests/benchmarks/bench_hot_path.py                 # callgrind counts + wall clock + audit waits
    python tests/benchmarks/bench_hot_path.py --no-callgrind  # wall clock only (no valgrind needed)
    python tests/benchmarks/bench_hot_path.py --json /tmp/hot.json

Workload: the realistic text-to-SQL queries of ``bench_text_to_sql.py`` (seed 0; joins,
aggregates, CTEs, window functions, inserts, updates; every one runs on SQLite), and the same
queries joined into scripts of about 1,000 and 10,000 characters, to see whether a check's cost
grows faster than a parse's with the text's length. Blocked decisions use the DELETE/DROP
queries of ``bench_kernel_decisions.py``.

**Instructions.** The whole measurement runs a second time in a child process under valgrind's
callgrind, ``PYTHONHASHSEED=0``; only the marked regions count (``callgrind_regions``: client
requests zero the counters, collect, and dump them under the region's label). A region is one
loop over ``--n`` texts of one call; its count, less an empty region's, divided by ``--n`` is
the figure per call. Every region is preceded by a warm-up on other texts.

**Wall clock.** In this process, natively: for each text the calls of a pair (a check and its
floor) are timed one after the other in alternating order, so both run under the same load; the
median of each and the median of the per-text ratios are printed, with the load average before
and after.

Rows (first-seen: a policy built with ``cache=False``, so every call parses):

* ``first-seen, <dialect>`` -- ``GovernanceKernel([SQLPolicy(deny=[DROP, DELETE, TRUNCATE],
  dialect=...)]).check("database_query", {"query": text})`` against the bare parse of the same
  text: ``sqlglot.parse(text, read=dialect)``, or for PostgreSQL libpg_query's C parse
  (``pglast.parser.parse_sql_json``).
* ``repeated`` -- the same kernel call on a text whose analysis is cached, allowed and blocked;
  against a dict look-up of the text.
* ``audit`` -- ``kernel.check`` with a durable audit trail (group commit, synchronous=FULL) under
  a steady rate of allowed decisions from several threads: how long each check waited, against
  the commit that wrote its record (see :func:`audit_waits`).

Targets: first-seen <= 1.2x the bare parse (no dialect, mysql, sqlite), postgres <=
2x the C parse, the ratio not growing with length; repeated <= 15,000 instructions; no check
waits for the audit of other decisions. Nothing is asserted; this prints.
"""

from __future__ import annotations

import argparse
import bisect
import gc
import json
import os
import random
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import orjson  # noqa: E402
import sqlglot  # noqa: E402
from bench_common import environment, print_table  # noqa: E402
from bench_kernel_decisions import build_workload  # noqa: E402
from bench_text_to_sql import _generic_queries  # noqa: E402
from callgrind_regions import instrument, on_valgrind, region, run_counted  # noqa: E402
from diff_hot_path import ROOT, load  # noqa: E402
from pglast import parser as pg_parser  # noqa: E402

#: The kernel package measured: this tree's, or another's with ``--tree`` (loaded in ``main``).
GovernanceKernel: Any = None
SQLPolicy: Any = None


def use_tree(tree: Path) -> None:
    """Measure the kernel of ``tree`` (a checkout or ``git archive`` of any commit)."""
    global GovernanceKernel, SQLPolicy
    package = load(tree)
    GovernanceKernel, SQLPolicy = package.GovernanceKernel, package.SQLPolicy


DENY = ("DROP", "DELETE", "TRUNCATE")
TOOL = "database_query"
DIALECTS: Tuple[Optional[str], ...] = (None, "mysql", "sqlite", "postgres")
LENGTHS = ("short", "1k", "10k")
TARGET_RATIO = {None: 1.2, "mysql": 1.2, "sqlite": 1.2, "postgres": 2.0}
TARGET_REPEATED = 15_000


# ----------------------------------------------------------------------------- workload


def realistic() -> List[str]:
    return _generic_queries(random.Random(0))


def scripts(queries: Sequence[str], length: int) -> List[str]:
    """Distinct scripts of about ``length`` characters: consecutive queries joined by ``;``."""
    out, current = [], []
    for query in queries:
        current.append(query)
        if sum(len(q) + 2 for q in current) >= length:
            out.append(";\n".join(current))
            current = []
    return out


def texts_by_length(queries: Sequence[str], n: int, offset: int) -> Dict[str, List[str]]:
    """``n`` texts of each length (from ``offset`` in the workload, so warm-ups use others)."""
    shifted = list(queries[offset:]) + list(queries[:offset])
    return {
        "short": shifted[:n],
        "1k": scripts(shifted, 1_000)[: max(3, n // 4)],
        "10k": scripts(shifted * 12, 10_000)[: max(3, n // 20)],
    }


def blocked_texts(n: int) -> List[str]:
    return [q.sql for q in build_workload(4 * n + 200, 1) if q.kind.should_block][:n]


# ----------------------------------------------------------------------------- the calls


def bare_parse(dialect: Optional[str]) -> Callable[[str], Any]:
    if dialect == "postgres":
        return pg_parser.parse_sql_json
    return lambda text: sqlglot.parse(text, read=dialect)


def first_seen_kernel(dialect: Optional[str]) -> GovernanceKernel:
    return GovernanceKernel([SQLPolicy(deny=list(DENY), dialect=dialect, cache=False)])


def kernel_call(kernel: GovernanceKernel) -> Callable[[str], Any]:
    return lambda text: kernel.check(TOOL, {"query": text})


def pairs(n: int, only: str = "") -> List[Tuple[str, Callable[[str], Any], Callable[[str], Any], List[str], List[str]]]:
    """(row, check, floor, texts, warm-up texts) for every measured pair (whose name contains one
    of the comma-separated ``only``, when given)."""
    queries = realistic()
    warm = queries[-20:]
    rows = []
    for dialect in DIALECTS:
        check = kernel_call(first_seen_kernel(dialect))
        floor = bare_parse(dialect)
        for length, texts in texts_by_length(queries, n, offset=0).items():
            rows.append((f"first-seen {dialect or 'none'} {length}", check, floor, texts, warm))
    cached = GovernanceKernel([SQLPolicy(deny=list(DENY))])
    allowed, blocked = queries[:n], blocked_texts(n)
    lookup = {text: text for text in allowed + blocked}
    rows.append(("repeated allowed", kernel_call(cached), lookup.get, allowed, allowed))
    rows.append(("repeated blocked", kernel_call(cached), lookup.get, blocked, blocked))
    wanted = [w for w in only.split(",") if w]
    return [row for row in rows if not wanted or any(w in row[0] for w in wanted)]


# ----------------------------------------------------------------------------- instructions


def count_child(n: int, only: str) -> None:
    """Under callgrind: one region per (row, side), an empty one first."""
    rows = pairs(n, only)
    for _, check, floor, _, warm in rows:
        for text in warm:
            check(text)
            floor(text)
    instrument()
    with region("empty"):
        pass
    for name, check, floor, texts, _ in rows:
        for side, call in (("check", check), ("floor", floor)):
            for text in texts[:5]:  # the warm-up of this very region's code paths, other texts first
                call(text)
            # The garbage collector's counters start from zero in every region: otherwise whether a
            # full collection falls inside a region depends on which rows ran before it (the same
            # row measured 1.01 M or 1.05 M per call with different --only).
            gc.collect()
            with region(f"{name}|{side}|{len(texts)}"):
                for text in texts:
                    call(text)
    with region(f"pglast json.loads|-|{len(rows[0][3])}"):
        for text in rows[0][3]:
            json.loads(pg_parser.parse_sql_json(text))
    with region(f"pglast orjson.loads|-|{len(rows[0][3])}"):
        for text in rows[0][3]:
            orjson.loads(pg_parser.parse_sql_json(text))


def instructions(n: int, tree: Path, only: str) -> Dict[str, float]:
    """Instructions per call for every region (empty-region overhead subtracted; a label ends
    with the number of calls its region made)."""
    env = dict(os.environ, PYTHONHASHSEED="0", LITELLM_LOCAL_MODEL_COST_MAP="True")
    counts = run_counted(
        [sys.executable, str(Path(__file__)), "--child-count", "--n", str(n), "--tree", str(tree), "--only", only],
        env,
    )
    empty = counts.pop("empty", 0)
    per_call = {}
    for label, total in counts.items():
        name, side, calls = label.rsplit("|", 2)
        per_call[f"{name}|{side}"] = (total - empty) / int(calls)
    return per_call


# ----------------------------------------------------------------------------- wall clock


def wall_clock(n: int, only: str) -> Dict[str, Tuple[float, float, float]]:
    """``{row: (check median us, floor median us, median of per-text ratios)}``, pairs interleaved."""
    out = {}
    for name, check, floor, texts, warm in pairs(n, only):
        for text in warm:
            check(text)
            floor(text)
        a, b, ratios = [], [], []
        for i, text in enumerate(texts):
            order = ((check, a), (floor, b)) if i % 2 == 0 else ((floor, b), (check, a))
            for call, sink in order:
                start = time.perf_counter_ns()
                call(text)
                sink.append(time.perf_counter_ns() - start)
            ratios.append(a[-1] / max(b[-1], 1))
        out[name] = (statistics.median(a) / 1000, statistics.median(b) / 1000, statistics.median(ratios))
    return out


# ----------------------------------------------------------------------------- audit


def audit_waits(rate: float, seconds: float, threads: int) -> Dict[str, Any]:
    """Allowed checks at ``rate`` per second from ``threads`` threads through a kernel with a
    durable audit trail. The wait for the record (from ``AuditTrail.record``'s call to its return,
    timed by wrapping it) is set against the writer's commits (timed by wrapping the trail's one
    commit method): ``commits_waited`` is how many commits ended in that time, at least 1 (its
    own); on a loaded machine it also counts the time a released thread waits for a CPU. The
    exact test is ``records_left_out_of_a_later_commit``: records that a commit which began after
    they were queued did not take (each commit takes the whole queue), so that they waited on the
    audit of other decisions beyond the commit in flight when they arrived."""
    queries = realistic()
    lock = threading.Lock()
    with tempfile.TemporaryDirectory(prefix="agentos-bench-audit-") as tmp:
        kernel = GovernanceKernel([SQLPolicy(deny=list(DENY))], recorder=Path(tmp) / "audit.db")
        trail = kernel.audit
        assert trail is not None
        commit_ends: List[float] = []
        commit_spans: List[float] = []
        commit_sizes: List[int] = []
        original = trail._commit

        put = trail._put
        queued_at: Dict[int, float] = {}
        commit_starts: List[float] = []
        groups_passed_over: List[int] = []

        def timed_put(item: Any) -> None:
            queued_at[id(item)] = time.perf_counter()
            put(item)

        def timed_commit(work: Any, *rest: Any) -> None:
            started = time.perf_counter()
            for item in work:  # commits that began after this record was queued and left it out
                at = queued_at.pop(id(item), started)
                groups_passed_over.append(len(commit_starts) - bisect.bisect_right(commit_starts, at))
            commit_starts.append(started)
            original(work, *rest)
            ended = time.perf_counter()
            commit_spans.append(ended - started)
            commit_sizes.append(len(work))
            commit_ends.append(ended)

        trail._commit = timed_commit  # type: ignore[method-assign]
        trail._put = timed_put  # type: ignore[method-assign]
        recording = trail.record
        record_spans: List[Tuple[float, float]] = []

        def timed_record(decision: Any) -> str:
            started = time.perf_counter()
            audit_id = recording(decision)
            with lock:
                record_spans.append((started, time.perf_counter()))
            return audit_id

        trail.record = timed_record  # type: ignore[method-assign]
        for text in queries[:200]:
            kernel.check(TOOL, {"query": text})
        commit_ends.clear(), commit_spans.clear(), commit_sizes.clear(), record_spans.clear()
        groups_passed_over.clear()
        waits: List[Tuple[float, float]] = []
        per_thread = rate / threads
        deadline = time.perf_counter() + seconds

        def worker(index: int) -> None:
            next_at, i = time.perf_counter(), index
            while next_at < deadline:
                delay = next_at - time.perf_counter()
                if delay > 0:
                    time.sleep(delay)
                started = time.perf_counter()
                decision = kernel.check(TOOL, {"query": queries[i % len(queries)]})
                ended = time.perf_counter()
                assert decision.allowed, decision.reason
                with lock:
                    waits.append((started, ended))
                i += threads
                next_at += 1 / per_thread

        pool = [threading.Thread(target=worker, args=(k,)) for k in range(threads)]
        began = time.perf_counter()
        for t in pool:
            t.start()
        for t in pool:
            t.join()
        elapsed = time.perf_counter() - began
        kernel.close()
    ends = sorted(commit_ends)
    waited = [bisect.bisect_right(ends, e) - bisect.bisect_left(ends, s) for s, e in record_spans]
    record_ms = sorted((e - s) * 1000 for s, e in record_spans)
    latencies = sorted((e - s) * 1000 for s, e in waits)
    spans = sorted(x * 1000 for x in commit_spans)
    return {
        "rate_target": rate,
        "rate_done": len(waits) / elapsed,
        "threads": threads,
        "checks": len(waits),
        "commits": len(spans),
        "records_per_commit_median": statistics.median(commit_sizes) if commit_sizes else 0,
        "check_ms_median": statistics.median(latencies),
        "check_ms_p99": latencies[int(0.99 * (len(latencies) - 1))],
        "check_ms_max": latencies[-1],
        "record_wait_ms_median": statistics.median(record_ms),
        "record_wait_ms_max": record_ms[-1],
        "commit_ms_median": statistics.median(spans) if spans else 0,
        "commit_ms_max": spans[-1] if spans else 0,
        "commits_waited_max": max(waited) if waited else 0,
        "checks_waiting_over_2_commits": sum(1 for w in waited if w > 2),
        "records_left_out_of_a_later_commit": sum(1 for g in groups_passed_over if g > 0),
        "commits_that_left_a_record_out_max": max(groups_passed_over, default=0),
    }


# ----------------------------------------------------------------------------- report


def report(counts: Optional[Dict[str, float]], wall: Dict[str, Tuple[float, float, float]]) -> List[Dict[str, Any]]:
    rows, table = [], []
    for name, (check_us, floor_us, paired) in wall.items():
        check_i = counts.get(f"{name}|check") if counts else None
        floor_i = counts.get(f"{name}|floor") if counts else None
        ratio_i = check_i / floor_i if check_i and floor_i else None
        if name.startswith("first-seen"):
            dialect = name.split()[1]
            target = TARGET_RATIO[None if dialect == "none" else dialect]
            verdict = "" if ratio_i is None else ("met" if ratio_i <= target else "missed")
            target_text = f"<= {target}x"
        else:
            target_text = f"<= {TARGET_REPEATED:,} instr"
            verdict = "" if check_i is None else ("met" if check_i <= TARGET_REPEATED else "missed")
        row = {
            "row": name,
            "check_instr": check_i,
            "floor_instr": floor_i,
            "instr_ratio": ratio_i,
            "check_us": check_us,
            "floor_us": floor_us,
            "paired_ratio": paired,
            "target": target_text,
            "verdict": verdict,
        }
        rows.append(row)
        table.append(
            [
                name,
                "-" if check_i is None else f"{check_i:,.0f}",
                "-" if floor_i is None else f"{floor_i:,.0f}",
                "-" if ratio_i is None else f"{ratio_i:.2f}x",
                f"{check_us:.1f}",
                f"{floor_us:.1f}",
                f"{paired:.2f}x",
                target_text,
                verdict,
            ]
        )
    print_table(
        [
            "row (check | floor)",
            "check instr",
            "floor instr",
            "instr ratio",
            "check us",
            "floor us",
            "paired us ratio",
            "target",
            "verdict",
        ],
        table,
    )
    if counts and "pglast json.loads|-" in counts:
        loads = counts["pglast json.loads|-"]
        print(f"libpg_query JSON parse + json.loads, short texts: {loads:,.0f} instructions/call")
    if counts and "pglast orjson.loads|-" in counts:
        loads = counts["pglast orjson.loads|-"]
        print(f"libpg_query JSON parse + orjson.loads, short texts: {loads:,.0f} instructions/call")
    return rows


def main(argv: Optional[Sequence[str]] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=200, help="texts per row under callgrind (default: 200)")
    parser.add_argument("--wall-n", type=int, default=400, help="texts per row for wall clock (default: 400)")
    parser.add_argument("--no-callgrind", action="store_true", help="wall clock only")
    parser.add_argument("--audit-rates", default="1000,2000", help="allowed decisions/s for the audit waits")
    parser.add_argument("--audit-seconds", type=float, default=5.0)
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write the figures to this JSON file")
    parser.add_argument("--only", default="", help="comma-separated parts of row names: measure only those rows")
    parser.add_argument("--tree", type=Path, default=ROOT, help="the source tree whose kernel is measured")
    parser.add_argument("--child-count", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    use_tree(args.tree)
    if args.child_count:
        if not on_valgrind():
            raise SystemExit("--child-count runs under valgrind only (the parent starts it)")
        count_child(args.n, args.only)
        return
    env = environment("agent-os-kernel", "pglast")
    env["tree"] = str(args.tree)
    print(json.dumps(env))
    load_before = os.getloadavg()
    counts = None
    if not args.no_callgrind:
        started = time.perf_counter()
        counts = instructions(args.n, args.tree, args.only)
        print(f"callgrind: {len(counts)} regions, {args.n} texts each, {time.perf_counter() - started:.0f} s")
    wall = wall_clock(args.wall_n, args.only)
    load_after = os.getloadavg()
    print(f"load average (1, 5, 15 min): before {load_before}, after {load_after}; cpus {os.cpu_count()}")
    rows = report(counts, wall)
    audits = []
    for rate in (float(r) for r in args.audit_rates.split(",") if r):
        result = audit_waits(rate, args.audit_seconds, threads=4)
        audits.append(result)
        print("audit:", json.dumps({k: round(v, 3) if isinstance(v, float) else v for k, v in result.items()}))
    print(f"load average after the audit runs: {os.getloadavg()}")
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "environment": env,
                    "load_before": load_before,
                    "load_after": load_after,
                    "rows": rows,
                    "instructions": counts,
                    "audit": audits,
                },
                indent=2,
            )
        )


if __name__ == "__main__":
    main()
