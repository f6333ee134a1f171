"""First-seen SQLPolicy check time against a baseline copy of the SQL guard, side by side.

Run it on demand, with a baseline tree exported from another commit::

    git archive <commit> | tar -x -C /tmp/baseline
    python tests/benchmarks/bench_sql_before_after.py /tmp/baseline

Both guards are loaded in this one process (the baseline's kernel modules under another package
name) and timed query by query, interleaved with the bare parse by the parser each uses, on the
2,000 queries of ``bench_kernel_decisions.py`` (seed 0), first-seen (``cache=False``). A loaded
machine slows all three alike, so the ratios to the bare parse are what to compare.
"""

from __future__ import annotations

import gc
import importlib
import json
import os
import statistics
import sys
import time
import types
from pathlib import Path
from typing import Callable, Dict, List

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
sys.path.insert(0, str(Path(__file__).resolve().parent))

import sqlglot  # noqa: E402
from bench_kernel_decisions import build_workload  # noqa: E402
from pglast import parser as pg_parser  # noqa: E402

from agentlightning.contrib.kernel.agentos import SQLPolicy  # noqa: E402


def load_baseline(root: Path) -> type:
    """The baseline tree's SQLPolicy, its kernel package loaded as ``agentos_baseline``."""
    kernel = root / "contrib" / "agentlightning" / "contrib" / "kernel" / "agentos"
    package = types.ModuleType("agentos_baseline")
    package.__path__ = [str(kernel)]  # its own __init__ is not run: only the SQL modules are needed
    sys.modules["agentos_baseline"] = package
    module = importlib.import_module("agentos_baseline.sql")
    return module.SQLPolicy


def timed(call: Callable[[str], object], sql: str) -> int:
    start = time.perf_counter_ns()
    call(sql)
    return time.perf_counter_ns() - start


def main() -> None:
    baseline = load_baseline(Path(sys.argv[1]))
    queries = [q.sql for q in build_workload(2000, 0)]
    results: Dict[str, Dict[str, List[int]]] = {}
    for dialect in (None, "postgres"):
        before = baseline(deny=["DROP", "DELETE", "TRUNCATE"], dialect=dialect, cache=False)
        after = SQLPolicy(deny=["DROP", "DELETE", "TRUNCATE"], dialect=dialect, cache=False)
        if dialect == "postgres":

            def bare(sql: str) -> object:
                try:
                    return json.loads(pg_parser.parse_sql_json(sql))
                except pg_parser.ParseError:
                    return None

        else:

            def bare(sql: str) -> object:
                try:
                    return sqlglot.parse(sql)
                except sqlglot.errors.SqlglotError:
                    return None

        for sql in queries[:50]:  # warm-up
            before.check_sql(sql + " ")
            after.check_sql(sql + " ")
            bare(sql + " ")
        series: Dict[str, List[int]] = {"before": [], "after": [], "bare": []}
        gc.collect()
        for sql in queries:
            series["bare"].append(timed(bare, sql))
            series["before"].append(timed(before.check_sql, sql))
            series["after"].append(timed(after.check_sql, sql))
        results[dialect or "none"] = series
    print(
        f"{'dialect':10} {'bare us':>9} {'before us':>10} {'after us':>9} {'before/bare':>12} {'after/bare':>11} "
        f"{'after/before':>13}"
    )
    for name, series in results.items():
        med = {k: statistics.median(v) / 1000 for k, v in series.items()}
        print(
            f"{name:10} {med['bare']:9.1f} {med['before']:10.1f} {med['after']:9.1f} "
            f"{med['before'] / med['bare']:11.2f}x {med['after'] / med['bare']:10.2f}x "
            f"{med['after'] / med['before']:12.2f}x"
        )


if __name__ == "__main__":
    main()
