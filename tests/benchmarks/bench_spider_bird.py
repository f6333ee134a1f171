"""Spider and BIRD gold queries through the SQL guard: how many does it block, and why.

Run it on demand (pytest does not collect ``tests/benchmarks``)::

    python tests/benchmarks/bench_spider_bird.py              # the table, and every blocked text
    python tests/benchmarks/bench_spider_bird.py --json PATH  # also the figures as JSON

The corpora are built from their public sources by ``corpora/build_text_to_sql_corpora.py`` (the
header of each file says from where, and under which licence). Every query is judged by
``SQLPolicy(deny=["DROP", "DELETE", "TRUNCATE"], dialect=D, cache=False)`` (first-seen) for D in
no dialect, sqlite (the engine the benchmarks run on), postgres and mysql. Targets: **0 blocked
with dialect="sqlite"**; with no dialect, 0 blocked where the text is not dialect-specific. A
text counts as dialect-specific when every reason it is blocked for names engines that read it
and others that do not: a function only some engines declare a safe built-in (the reason says
which), or syntax only some engines read (backtick identifiers: MySQL's and SQLite's, not
PostgreSQL's); the table gives both counts.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from agentlightning.contrib.kernel.agentos import SQLPolicy  # noqa: E402

CORPORA_DIR = Path(__file__).resolve().parent / "corpora"
CORPORA = {"Spider": CORPORA_DIR / "spider_gold.sql", "BIRD dev": CORPORA_DIR / "bird_dev_gold.sql"}
DIALECTS: Sequence[Optional[str]] = (None, "sqlite", "postgres", "mysql")
DENY = ["DROP", "DELETE", "TRUNCATE"]
#: What a no-dialect reason says when the text is read by some engines only.
_DIALECT_SPECIFIC = ("declared a safe built-in by", "it reads as SQL with dialect=")


def read_corpus(path: Path) -> List[str]:
    """The queries of a built corpus file (its ``--`` header lines left out)."""
    return [line for line in path.read_text(encoding="utf-8").splitlines() if line and not line.startswith("-- ")]


def missing_corpora() -> List[Path]:
    return [path for path in CORPORA.values() if not path.is_file()]


def blocked_reasons(queries: Sequence[str], dialect: Optional[str]) -> Dict[str, str]:
    """``{query: reason}`` for every query ``SQLPolicy`` blocks, each judged first-seen."""
    policy = SQLPolicy(deny=DENY, dialect=dialect, cache=False)
    blocked = {}
    for query in queries:
        violations = policy.check_sql(query)
        if violations:
            blocked[query] = violations[0].description
    return blocked


def dialect_specific(reason: str) -> bool:
    return any(marker in reason for marker in _DIALECT_SPECIFIC)


def run() -> Dict[str, Any]:
    figures: Dict[str, Any] = {}
    for corpus, path in CORPORA.items():
        queries = read_corpus(path)
        for dialect in DIALECTS:
            started = time.perf_counter()
            blocked = blocked_reasons(queries, dialect)
            seconds = time.perf_counter() - started
            specific = {q: r for q, r in blocked.items() if dialect is None and dialect_specific(r)}
            figures[f"{corpus} / {dialect or 'no dialect'}"] = {
                "queries": len(queries),
                "blocked": len(blocked),
                "dialect_specific": len(specific),
                "other": len(blocked) - len(specific),
                "seconds": round(seconds, 1),
                "blocked_texts": [{"query": q, "reason": r} for q, r in blocked.items()],
            }
    return figures


def report(figures: Dict[str, Any]) -> None:
    print(f"{'corpus / set-up':28} {'queries':>8} {'blocked':>8} {'dialect-specific':>17} {'other':>6} {'s':>6}")
    for name, row in figures.items():
        print(
            f"{name:28} {row['queries']:>8,} {row['blocked']:>8,} {row['dialect_specific']:>17,} "
            f"{row['other']:>6,} {row['seconds']:>6}"
        )
    for name, row in figures.items():
        if row["blocked_texts"]:
            print(f"\n{name}: {row['blocked']} blocked")
            for entry in row["blocked_texts"]:
                print(f"  {entry['query']}\n    -> {entry['reason']}")


def main(argv: Optional[Sequence[str]] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write the figures to this JSON file")
    args = parser.parse_args(argv)
    missing = missing_corpora()
    if missing:
        raise SystemExit(
            f"missing corpus files {[str(p) for p in missing]}: build them with "
            "python tests/benchmarks/corpora/build_text_to_sql_corpora.py (its --help says from where)"
        )
    figures = run()
    report(figures)
    if args.json is not None:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")
        print(f"\nfigures written to {args.json}")


if __name__ == "__main__":
    main()
