"""Every check ends within its bound, whatever the text's shape: a generated family of
pathological SQL texts (nesting, comments, quotes, long identifiers, many statements, long
lists, unterminated constructs), at several sizes, in every dialect, through the public call
forms (``kernel.check(tool, dict)`` on a SQL tool, the same text in another tool's argument, and
``Action.sql``), each timed in wall-clock and CPU time. The review's worst input (98 KB of
``/*``) is among them.

    .venv/bin/python tests/benchmarks/bench_reading_bound.py [--sizes 1000 10000 100000] [--json runs/bound.json]

Prints one row per (family, dialect) with the slowest check and its verdict, and the machine's
load average at the start and end; exits 1 if any check took longer than ``--bound`` seconds
(default: the kernel's ``policy_timeout_s`` plus a worker's start, 1.0 + 1.0).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Callable, Dict, List

sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from bench_common import environment, print_table  # noqa: E402

from agentlightning.contrib.kernel.agentos import Action, GovernanceKernel, SQLPolicy  # noqa: E402

DIALECTS = (None, "postgres", "mysql", "sqlite")


def families(size: int) -> Dict[str, str]:
    """Texts of about ``size`` characters, one per shape that has made a parser slow somewhere."""
    n = max(1, size)
    return {
        "nested comment openers": "SELECT 1 /*" + "/*" * (n // 2),
        "closed comments": "SELECT 1 " + "/* x */" * (n // 7),
        "line comments": "SELECT 1 " + "-- x\n" * (n // 5),
        "nested parentheses": "SELECT " + "(" * (n // 2) + "1" + ")" * (n // 2),
        "parentheses, unclosed": "SELECT " + "(" * n,
        "many string literals": "SELECT " + ",".join(["'a'"] * (n // 4)),
        "unterminated string": "SELECT '" + "a" * n,
        "escaped quotes": "SELECT '" + "\\'" * (n // 2),
        "long identifier": "SELECT " + "a" * n,
        "long quoted identifier": 'SELECT "' + "a" * n + '"',
        "many statements": "SELECT 1;" * (n // 9),
        "long IN list": "SELECT 1 WHERE x IN (" + ",".join(["1"] * (n // 2)) + ")",
        "long OR chain": "SELECT 1 WHERE " + " OR ".join(["a=1"] * (n // 7)),
        "nested CASE": "SELECT " + "CASE WHEN 1 THEN " * (n // 17) + "1" + " END" * (n // 17),
        "dollar signs": "SELECT $$" + "$" * n,
        "nested subqueries": "SELECT " + "(SELECT " * (n // 8) + "1" + ")" * (n // 8),
        "destructive tail": "SELECT 1 " + "-- x\n" * (n // 5) + "; DROP TABLE users",
    }


def call_forms(kernel: GovernanceKernel) -> Dict[str, Callable[[str], object]]:
    return {
        "check(sql tool, dict)": lambda text: kernel.check("database_query", {"query": text}),
        "another tool's argument": lambda text: kernel.check("notes", {"text": text, "n": 1}),
        "Action.sql": lambda text: kernel.check(Action.sql(text)),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 4_000, 10_000, 100_000])
    parser.add_argument("--bound", type=float, default=2.0, help="seconds a check may take (exit 1 above)")
    parser.add_argument("--json", type=Path, help="also write the rows here")
    args = parser.parse_args()

    load_before = os.getloadavg()
    rows: List[List[object]] = []
    worst = 0.0
    for dialect in DIALECTS:
        kernel = GovernanceKernel([SQLPolicy(deny=["DROP", "DELETE", "TRUNCATE"], dialect=dialect)])
        kernel.check("database_query", {"query": "SELECT 1 -- x\n" * 1_000})  # the worker's start, not a text's time
        forms = call_forms(kernel)
        for family_size in args.sizes:
            for family, text in families(family_size).items():
                slowest, slowest_cpu, verdicts = 0.0, 0.0, set()
                for form in forms.values():
                    wall, cpu = time.perf_counter(), time.process_time()
                    decision = form(text)
                    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
                    slowest, slowest_cpu = max(slowest, wall), max(slowest_cpu, cpu)
                    verdicts.add("blocked" if decision.blocked else "allowed")
                worst = max(worst, slowest)
                rows.append(
                    [family, dialect or "none", len(text), slowest * 1e3, slowest_cpu * 1e3, "/".join(sorted(verdicts))]
                )
                print(
                    f"  {family:<24} {dialect or 'none':<9} {len(text):>8,} chars  {slowest * 1e3:8.1f} ms", flush=True
                )
    load_after = os.getloadavg()
    print()
    print_table(["family", "dialect", "chars", "slowest ms (wall)", "its CPU ms", "verdicts"], rows)
    print(
        f"\nslowest check: {worst:.3f} s (bound {args.bound} s); "
        f"load average {load_before[0]:.1f} -> {load_after[0]:.1f}"
    )
    print(json.dumps(environment("agent-os-kernel", "pglast")))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"rows": rows, "worst_s": worst, "load": [load_before, load_after]}, indent=1))
    return 1 if worst > args.bound else 0


if __name__ == "__main__":
    raise SystemExit(main())
