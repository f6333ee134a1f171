"""The adversarial SQL corpus through SQLPolicy and through Agent OS's own SQL check, side by side.

Run it on demand (pytest does not collect ``tests/benchmarks``)::

    python tests/benchmarks/bench_sql_corpus.py
    python tests/benchmarks/bench_sql_corpus.py --json /tmp/sql_corpus.json

The corpus is ``tests/sql_corpus.py``: labelled entries (``block``/``allow``) in categories, all
labelled against one deny list (``DENY`` there). Each entry is decided by

* ``SQLPolicy(deny=DENY).check_sql`` -- the plugin's policy, on a fresh instance so that every
  entry is parsed (first-seen, no cache hit); no kernel around it, so no time-out can turn a slow
  parse into a block;
* ``agent_os.PolicyEngine.check_violation`` -- Agent OS 3.7's own check, as in
  ``bench_kernel_decisions.py``: a role allowed the ``database_query`` tool, so the verdict is its
  SQL regex. That regex looks for DROP, DELETE FROM, TRUNCATE, ALTER TABLE ... DROP and
  UPDATE ... WHERE 1=1 only and cannot be configured, so the table also counts its false
  negatives among the entries whose denied statement is a DROP, DELETE or TRUNCATE ("in scope").

A false negative (FN) is a ``block`` entry that was allowed; a false positive (FP) an ``allow``
entry that was blocked. Below the table: the SQLPolicy FNs one by one, and the FPs compared with
``KNOWN_FALSE_POSITIVES``. Decision times are medians over the corpus, one timed call per entry
(``time.perf_counter_ns``, garbage collector on, after a warm-up on other queries).

The second part is the destructive deny list, ``DESTRUCTIVE`` (DROP, DELETE, TRUNCATE), judged per
database: an entry is destructive on SQLite, PostgreSQL or MariaDB when a statement of those
kinds really ran there, harmless there when the database ran it and none did, and not counted
for a database that rejected it (``destruction_in`` in the corpus module). Each row is one
policy judged on one set of databases' outcomes:

* ``SQLPolicy(deny=DESTRUCTIVE)`` with no dialect, on all three databases at once (destructive
  anywhere must be blocked; harmless somewhere and destructive nowhere is an FP if blocked) and
  on each database alone;
* ``SQLPolicy(deny=DESTRUCTIVE, dialect=D)`` on D's own outcomes, D in postgres, mysql (judged on
  MariaDB) and sqlite;
* Agent OS's regex (whose scope is exactly these three kinds) on all three databases.

Of the true blocks (destructive entries blocked), ``recognised`` counts those where
``analyze_sql(text, dialect).error`` is None: the text was read as statements and the block
comes from what they are (a denied kind, or SQL that cannot be verified, counted again under
``unverifiable``); ``parse failure`` those where it is not None, blocked only because the text
could not be read; ``unknown`` those read as statements holding a construct no effect row places
(default deny: blocked whatever the lists say); ``other`` the rest (limits such as NUL bytes and
``max_query_chars``).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence

# agentlightning imports litellm, which otherwise fetches its model cost map over the network.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root, for tests.sql_corpus

from agent_os import PolicyEngine  # noqa: E402
from bench_common import environment, print_table  # noqa: E402

from tests import sql_corpus as corpus  # noqa: E402

from agentlightning.contrib.kernel.agentos import SQLPolicy  # noqa: E402
from agentlightning.contrib.kernel.agentos.sql import analyze_sql  # noqa: E402

ROLE = "agent"
TOOL = "database_query"
# sqlglot logs a warning for every statement it keeps as an unparsed Command.
logging.getLogger("sqlglot").setLevel(logging.ERROR)
WARMUP = [
    "SELECT 1",
    "SELECT a FROM b WHERE c = 'd'",
    "DELETE FROM t",
    "WITH x AS (SELECT 1) SELECT * FROM x",
    "DROP TABLE t; SELECT 2",
]


RAISED: List[str] = []  # entries on which SQLPolicy.check_sql raised (the kernel blocks those: fail closed)


def decide_all(cases: Sequence[corpus.Case]) -> Dict[str, Dict[str, List[Any]]]:
    """Per approach: blocked flags and decision times (ns), in corpus order."""
    engine = PolicyEngine()
    engine.add_constraint(ROLE, [TOOL])

    def sqlpolicy(sql: str) -> bool:
        try:
            return bool(SQLPolicy(deny=list(corpus.DENY), cache=False).check_sql(sql))
        except Exception as err:  # noqa: BLE001 - counted as blocked, as GovernanceKernel does
            RAISED.append(f"{type(err).__name__}: {err}")
            return True

    def agent_os(sql: str) -> bool:
        return engine.check_violation(ROLE, TOOL, {"query": sql}) is not None

    approaches: Dict[str, Callable[[str], bool]] = {"sqlpolicy": sqlpolicy, "agent_os": agent_os}
    for decide in approaches.values():
        for sql in WARMUP * 3:
            decide(sql)
    results: Dict[str, Dict[str, List[Any]]] = {name: {"blocked": [], "ns": []} for name in approaches}
    clock = time.perf_counter_ns
    for case in cases:
        for name, decide in approaches.items():
            raised_before = len(RAISED)
            started = clock()
            blocked = decide(case.sql)
            elapsed = clock() - started
            if len(RAISED) > raised_before:
                RAISED[-1] = f"{case.id}: {RAISED[-1]}"
            results[name]["blocked"].append(blocked)
            results[name]["ns"].append(elapsed)
    return results


def errors(cases: Sequence[corpus.Case], blocked: Sequence[bool]) -> Dict[str, List[corpus.Case]]:
    return {
        "fn": [c for c, b in zip(cases, blocked, strict=True) if c.label == corpus.BLOCK and not b],
        "fp": [c for c, b in zip(cases, blocked, strict=True) if c.label == corpus.ALLOW and b],
    }


def short(sql: str, limit: int = 90) -> str:
    text = repr(sql)
    return text if len(text) <= limit else f"{text[: limit - 20]}... ({len(sql):,} chars)"


def report(results: Dict[str, Dict[str, List[Any]]], env: Dict[str, Any]) -> Dict[str, Any]:
    cases = list(corpus.CORPUS)
    print(
        f"Adversarial SQL corpus: {len(cases)} entries in {len(corpus.CATEGORIES)} categories, "
        f"deny list {list(corpus.DENY)}"
    )
    print(
        f"{env['python']} on {env['platform']}, {env['cpus']} CPUs; sqlglot {env['sqlglot']} "
        f"(compiled parser: {env['sqlglotc_in_use']}); agent-os-kernel {env['agent_os_kernel']}; "
        f"SQLite {env['sqlite']}\n"
    )

    rows: List[Dict[str, Any]] = []
    groups = [(category, [i for i, c in enumerate(cases) if c.category == category]) for category in corpus.CATEGORIES]
    groups.append(("total", list(range(len(cases)))))
    for name, members in groups:
        subset = [cases[i] for i in members]
        ours = errors(subset, [results["sqlpolicy"]["blocked"][i] for i in members])
        theirs = errors(subset, [results["agent_os"]["blocked"][i] for i in members])
        rows.append(
            {
                "category": name,
                "n": len(subset),
                "block": sum(c.label == corpus.BLOCK for c in subset),
                "allow": sum(c.label == corpus.ALLOW for c in subset),
                "sqlpolicy_fn": len(ours["fn"]),
                "sqlpolicy_fp": len(ours["fp"]),
                "agent_os_fn": len(theirs["fn"]),
                "agent_os_fn_in_scope": sum(c.in_agent_os_scope for c in theirs["fn"]),
                "agent_os_fp": len(theirs["fp"]),
            }
        )
    print_table(
        ["category", "n", "block", "allow", "SQLPolicy FN", "SQLPolicy FP", "Agent OS FN", "(in scope)", "Agent OS FP"],
        [list(r.values()) for r in rows],
    )
    in_scope = sum(c.in_agent_os_scope for c in cases)
    print(
        f"(in scope: of the {in_scope} entries whose denied statement is a DROP, DELETE or TRUNCATE, "
        "the ones Agent OS allowed)\n"
    )

    medians = {name: statistics.median(r["ns"]) / 1000 for name, r in results.items()}
    maxima = {name: max(r["ns"]) / 1000 for name, r in results.items()}
    print_table(
        ["decision time", "median us", "max us"],
        [
            ["SQLPolicy.check_sql (first-seen)", medians["sqlpolicy"], maxima["sqlpolicy"]],
            ["agent_os PolicyEngine.check_violation", medians["agent_os"], maxima["agent_os"]],
        ],
    )

    ours = errors(cases, results["sqlpolicy"]["blocked"])
    print(f"\nSQLPolicy false negatives ({len(ours['fn'])}):")
    for c in ours["fn"]:
        print(f"  [{c.category}] {c.id}: {short(c.sql)}\n      {c.note}")
    print(
        f"\nSQLPolicy.check_sql raised on {len(RAISED)} entries "
        "(counted as blocked; GovernanceKernel fails closed on them):"
    )
    for line in RAISED:
        print(f"  {line}")
    fp_ids = {c.id for c in ours["fp"]}
    print(
        f"\nSQLPolicy false positives ({len(fp_ids)}); new (not in KNOWN_FALSE_POSITIVES): "
        f"{sorted(fp_ids - corpus.KNOWN_FALSE_POSITIVES) or 'none'}; "
        f"known but now allowed: {sorted(corpus.KNOWN_FALSE_POSITIVES - fp_ids) or 'none'}"
    )
    for c in ours["fp"]:
        print(f"  [{c.category}] {c.id}: {short(c.sql)}")

    return {
        "environment": env,
        "deny": list(corpus.DENY),
        "rows": rows,
        "decision_time_us": {"median": medians, "max": maxima},
        "sqlpolicy_false_negatives": [
            {"id": c.id, "category": c.category, "sql": c.sql, "note": c.note} for c in ours["fn"]
        ],
        "sqlpolicy_false_positives": sorted(fp_ids),
        "sqlpolicy_check_sql_raised": list(RAISED),
        "agent_os_false_negatives": [c.id for c in errors(cases, results["agent_os"]["blocked"])["fn"]],
        "agent_os_false_positives": [c.id for c in errors(cases, results["agent_os"]["blocked"])["fp"]],
    }


def block_source(sql: str, dialect: Optional[str]) -> str:
    """Why a blocked text was blocked: "parse failure" when ``analyze_sql`` could not read it,
    "unverifiable" when it read SQL that cannot be known in advance, "recognised" when it read
    a denied kind, "unknown" when it read a construct no effect row places, "other" otherwise
    (limits the policy checks before reading)."""
    analysis = analyze_sql(sql, dialect)
    if analysis.error is not None:
        return "parse failure"
    if getattr(analysis, "unverifiable", None) is not None:
        return "unverifiable"
    if analysis.kinds & set(corpus.DESTRUCTIVE):
        return "recognised"
    if getattr(analysis, "unknown", ()):
        return "unknown"
    return "other"


def destructive_report(agent_os_blocked: Dict[str, bool]) -> Dict[str, Any]:
    """The per-database table for deny=DESTRUCTIVE (see the module doc) and its JSON figures."""
    judged_on = [("no dialect", None, corpus.DATABASES)] + [("no dialect", None, (db,)) for db in corpus.DATABASES]
    judged_on += [(c.name, c.dialect, c.databases) for c in corpus.CONFIGURATIONS if c.dialect is not None]
    rows: List[List[Any]] = []
    figures: List[Dict[str, Any]] = []
    verdicts: Dict[Optional[str], Dict[str, bool]] = {}
    for policy_name, dialect, databases in judged_on:
        if dialect not in verdicts:

            def decide(sql: str, d: Optional[str] = dialect) -> bool:
                return bool(SQLPolicy(deny=list(corpus.DESTRUCTIVE), dialect=d, cache=False).check_sql(sql))

            verdicts[dialect] = {c.id: decide(c.sql) for c in corpus.CORPUS}
        blocked = verdicts[dialect]
        destructive = [c for c in corpus.CORPUS if corpus.destruction_across(c, databases) == corpus.DESTROYS]
        harmless = [c for c in corpus.CORPUS if corpus.destruction_across(c, databases) == corpus.HARMLESS]
        fn = [c.id for c in destructive if not blocked[c.id]]
        fp = [c.id for c in harmless if blocked[c.id]]
        sources = Counter(block_source(c.sql, dialect) for c in destructive if blocked[c.id])
        judged = "all three" if len(databases) > 1 else databases[0]
        rows.append(
            [
                policy_name,
                judged,
                len(destructive),
                len(fn),
                len(harmless),
                len(fp),
                len(destructive) - len(fn),
                sources["recognised"] + sources["unverifiable"],
                sources["unverifiable"],
                sources["parse failure"],
                sources["unknown"],
                sources["other"],
            ]
        )
        figures.append(
            {
                "policy": policy_name,
                "dialect": dialect,
                "judged_on": list(databases),
                "destructive": len(destructive),
                "false_negatives": fn,
                "harmless": len(harmless),
                "false_positives": fp,
                "true_block_sources": dict(sources),
            }
        )
    destructive = [c for c in corpus.CORPUS if corpus.destruction_across(c) == corpus.DESTROYS]
    harmless = [c for c in corpus.CORPUS if corpus.destruction_across(c) == corpus.HARMLESS]
    agent_fn = [c.id for c in destructive if not agent_os_blocked[c.id]]
    agent_fp = [c.id for c in harmless if agent_os_blocked[c.id]]
    rows.append(
        [
            "Agent OS regex",
            "all three",
            len(destructive),
            len(agent_fn),
            len(harmless),
            len(agent_fp),
            len(destructive) - len(agent_fn),
            "",
            "",
            "",
            "",
            "",
        ]
    )
    figures.append(
        {
            "policy": "Agent OS regex",
            "judged_on": list(corpus.DATABASES),
            "destructive": len(destructive),
            "false_negatives": agent_fn,
            "harmless": len(harmless),
            "false_positives": agent_fp,
        }
    )

    print(
        f"\nThe destructive deny list {list(corpus.DESTRUCTIVE)}, judged on what each database did "
        f"(destructive: a statement of those kinds ran there):\n"
    )
    print_table(
        [
            "policy",
            "judged on",
            "destructive",
            "FN",
            "harmless",
            "FP",
            "true blocks",
            "recognised",
            "(unverifiable)",
            "parse failure",
            "unknown",
            "other",
        ],
        rows,
    )
    for figure, row in zip(figures, rows, strict=True):
        if figure["false_negatives"]:
            print(f"\n{row[0]} on {row[1]}: false negatives {figure['false_negatives']}")
    for configuration in corpus.CONFIGURATIONS:
        figure = next(
            f for f in figures if f["policy"] == configuration.name and f["judged_on"] == list(configuration.databases)
        )
        fp = set(figure["false_positives"])
        known = corpus.KNOWN_DESTRUCTIVE_FALSE_POSITIVES[configuration.key]
        print(
            f"\n{configuration.name} ({len(fp)} FP): "
            f"not in KNOWN_DESTRUCTIVE_FALSE_POSITIVES: {sorted(fp - known) or 'none'}; "
            f"known but now allowed: {sorted(known - fp) or 'none'}"
        )
    return {"deny": list(corpus.DESTRUCTIVE), "rows": figures}


def main(argv: Optional[Sequence[str]] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write the figures to this JSON file")
    args = parser.parse_args(argv)
    results = decide_all(corpus.CORPUS)
    figures = report(results, environment("sqlglotc", "agent-os-kernel", "pglast"))
    figures["destructive"] = destructive_report(
        {c.id: b for c, b in zip(corpus.CORPUS, results["agent_os"]["blocked"], strict=True)}
    )
    if args.json is not None:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")
        print(f"\nfigures written to {args.json}")


if __name__ == "__main__":
    main()
