"""Behaviour unchanged: every analysis, decision, span field and audit envelope of two trees, compared.

Run it on demand (pytest does not collect ``tests/benchmarks``)::

    python tests/benchmarks/diff_hot_path.py                  # base 6023c1d against this tree
    python tests/benchmarks/diff_hot_path.py --base <commit>

The base commit's kernel is exported with ``git archive`` into a temporary directory. Each tree
is run in a process of its own (``PYTHONHASHSEED=0``), its kernel package loaded from its own
directory under one package name, on the same inputs:

* the labelled corpus of ``tests/sql_corpus.py`` (this tree's copy, for both);
* the realistic text-to-SQL queries of ``bench_text_to_sql.py`` (seed 0) with the
  dialect-specific ones, and the 2,000 queries of ``bench_kernel_decisions.py`` (seed 0);
* decorated scripts in the manner of the adversarial property tests (denied statements among
  safe ones, random comments, per-letter casing, tabs and newlines; seed 0) and junk inputs
  (NUL bytes, lone surrogates, non-strings, an over-long text).

For every text and every dialect (none, postgres, mysql, mariadb, sqlite) each process writes
``analyze_sql``'s statements (text, kinds, reasons, unknown constructs) or its error, and, for
three policies (the destructive deny list, a broad deny list, an allow-list), the kernel's
decision twice through the shared cache, and for the first policy first-seen (``cache=False``): verdict, reason,
every violation field, signals, the check and violation span attributes and the audit envelope
(decision ids and timings masked, the only fields that differ between two runs of one tree).
Texts are also judged as a string argument of a tool no policy names (detection). The parent
compares the two outputs line by line and prints how many differ, with examples.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import types
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
PACKAGE = "agentos_under_test"
DIALECTS: Tuple[Optional[str], ...] = (None, "postgres", "mysql", "mariadb", "sqlite")
POLICIES: Dict[str, Dict[str, Any]] = {
    "destructive": {"deny": ["DROP", "DELETE", "TRUNCATE"]},
    "broad": {
        "deny": ["DROP", "DELETE", "TRUNCATE", "ALTER", "UPDATE", "INSERT", "MERGE", "REPLACE", "GRANT", "CREATE"]
    },
    "select-only": {"allow": ["SELECT"]},
}


# ----------------------------------------------------------------------------- inputs


def _decorated(r: random.Random, statement: str) -> str:
    words = statement.split(" ")
    out = []
    for word in words:
        word = "".join(c.upper() if r.random() < 0.5 else c.lower() for c in word) if word.isalpha() else word
        out.append(word)
        out.append(r.choice([" ", "\t", "\n", " /* x */ ", " -- c\n", "  "]))
    return "".join(out).strip()


def adversarial_scripts(count: int) -> List[str]:
    r = random.Random(0)
    safe = ["SELECT * FROM users", "SELECT id FROM t WHERE name = 'Seattle'", "INSERT INTO log VALUES (1)"]
    denied = ["DROP TABLE users", "DELETE FROM users", "TRUNCATE TABLE users", "WITH d AS (DELETE FROM t) SELECT 1"]
    out = []
    for _ in range(count):
        statements = [r.choice(safe) for _ in range(r.randint(0, 3))]
        for _ in range(r.randint(1, 2)):
            statements.insert(r.randint(0, len(statements)), r.choice(denied))
        out.append("; ".join(_decorated(r, s) for s in statements))
    return out


def inputs(stride: int = 1) -> List[Tuple[str, Any]]:
    """``(id, text)`` for every input, the same in both processes; ``stride`` keeps every
    stride-th of the generated queries and every (stride/5)-th adversarial script (the corpus and
    the junk inputs are all kept)."""
    sys.path.insert(0, str(HERE))
    sys.path.insert(0, str(ROOT / "tests"))
    from bench_kernel_decisions import build_workload
    from bench_text_to_sql import _dialect_queries, _generic_queries
    from sql_corpus import CORPUS

    out: List[Tuple[str, Any]] = [(f"corpus:{case.id}", case.sql) for case in CORPUS]
    generic = _generic_queries(random.Random(0))
    out += [(f"text-to-sql:{i}", q) for i, q in enumerate(generic)][::stride]
    for dialect in ("postgres", "mysql", "sqlite"):
        out += [(f"text-to-sql-{dialect}:{i}", q) for i, q in enumerate(_dialect_queries(dialect))][::stride]
    out += [(f"decisions:{i}", q.sql) for i, q in enumerate(build_workload(2000, 0))][::stride]
    out += [(f"adversarial:{i}", s) for i, s in enumerate(adversarial_scripts(400))][:: max(1, stride // 5)]
    out += [
        ("junk:nul", "SELECT 1\x00; DROP TABLE t"),
        ("junk:surrogate", "SELECT '\ud800'"),
        ("junk:bytes", b"DROP TABLE t"),
        ("junk:int", 42),
        ("junk:none", None),
        ("junk:long", "SELECT " + "1 + " * 40_000 + "1"),
        ("junk:empty", ""),
        ("junk:comment-only", "-- nothing here"),
    ]
    return out


# ----------------------------------------------------------------------------- one tree


def load(tree: Path) -> types.ModuleType:
    """The kernel package of ``tree`` as :data:`PACKAGE` (its ``__init__`` runs: it is the API)."""
    kernel = tree / "contrib" / "agentlightning" / "contrib" / "kernel" / "agentos"
    spec = importlib.util.spec_from_file_location(
        PACKAGE, kernel / "__init__.py", submodule_search_locations=[str(kernel)]
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[PACKAGE] = module
    spec.loader.exec_module(module)
    return module


#: Seconds a policy may take here (the kernel's default is 1 s; see ``emit``).
POLICY_TIMEOUT_S = 120.0

#: Fields that differ between two runs of one tree: timings and clock times.
_VOLATILE = re.compile(r"elapsed|timestamp|_at$|(^|_)time(_|$)|duration")


def _masked(value: Any, ids: Sequence[str]) -> Any:
    if isinstance(value, dict):
        return {k: _masked(v, ids) for k, v in value.items() if not _VOLATILE.search(k)}
    if isinstance(value, (list, tuple)):
        return [_masked(v, ids) for v in value]
    if isinstance(value, str):
        for i in ids:
            value = value.replace(i, "<id>")
        return value
    if isinstance(value, float):
        return repr(value)
    return value


def _analysis(analysis: Any) -> Dict[str, Any]:
    return {
        "error": analysis.error,
        "unverifiable": analysis.unverifiable,
        "statements": [
            {
                "text": s.text,
                "kinds": sorted(s.kinds),
                "because": [list(b) for b in s.because],
                "unknown": [u.reason() for u in s.unknown],
                "writes": sorted(getattr(s, "writes", ()) or ()),
            }
            for s in analysis.statements
        ],
    }


def _module_of_tree(*names: str) -> types.ModuleType:
    """The first of ``names`` the tree under test has: a module keeps its role when a commit moves it
    (``audit_record`` became ``audit.record``, ``spans`` became ``agl03.spans``), so either tree loads."""
    for name in names:
        try:
            return importlib.import_module(f"{PACKAGE}.{name}")
        except ModuleNotFoundError as err:
            if not f"{PACKAGE}.{name}".startswith(str(err.name)):  # a module missing inside it is an error
                raise
    raise ModuleNotFoundError(f"none of {names} in the tree under test")


def _decision(package: types.ModuleType, decision: Any) -> Dict[str, Any]:
    spans = _module_of_tree("agl03.spans", "spans")
    record = _module_of_tree("audit.record", "audit_record")
    out = {
        "verdict": decision.verdict.value,
        "reason": decision.reason,
        "penalty": decision.total_penalty,
        "signals": list(decision.signals),
        "violations": [
            {
                "type": v.violation_type.value,
                "policy": v.policy_name,
                "description": v.description,
                "severity": v.severity.value,
                "penalty": v.penalty,
                "blocked": v.action_blocked,
            }
            for v in decision.violations
        ],
        "action": [decision.action.tool_name, dict(decision.action.args)],
        "check_span": [spans.check_span_name(decision), spans.check_span_attributes(decision)],
        "violation_spans": [
            [spans.violation_span_name(decision, i), spans.violation_span_attributes(decision, i)]
            for i in range(len(decision.violations))
        ],
        "envelope": record.governance_envelope(decision),
    }
    return _masked(out, [decision.decision_id])


def emit(tree: Path, out_path: Path, stride: int) -> None:
    package = load(tree)
    sql = importlib.import_module(f"{PACKAGE}.sql")
    kernels = {}
    # A policy's time limit is the one load-dependent part of a decision: under load, the base tree
    # or this one can pass the default 1 s on the 5,000-statement script and be blocked for that
    # alone. Both trees get the same generous limit, so a difference here is a difference in reading.
    limit = {"policy_timeout_s": POLICY_TIMEOUT_S}
    for dialect in DIALECTS:
        for name, options in POLICIES.items():
            first = package.GovernanceKernel([sql.SQLPolicy(dialect=dialect, cache=False, **options)], **limit)
            cached = package.GovernanceKernel([sql.SQLPolicy(dialect=dialect, **options)], **limit)
            kernels[dialect, name] = (first, cached)
    with out_path.open("w") as out:
        for ident, text in inputs(stride):
            for dialect in DIALECTS:
                line: Dict[str, Any] = {"id": ident, "dialect": dialect}
                if isinstance(text, str):
                    try:
                        line["analysis"] = _analysis(sql.analyze_sql(text, dialect))
                    except Exception as err:  # noqa: BLE001 - the raw reader refuses junk the policy screens
                        line["analysis"] = f"{type(err).__name__}: {err}"
                for name in POLICIES:
                    first, cached = kernels[dialect, name]
                    line[name] = [
                        _decision(package, cached.check("database_query", {"query": text})),
                        _decision(package, cached.check("database_query", {"query": text})),
                    ]
                    if name == "destructive":  # first-seen (no cache) once: the same reading
                        line[name].append(_decision(package, first.check("database_query", {"query": text})))
                if dialect is None:
                    line["detected"] = _decision(
                        package, kernels[None, "destructive"][1].check("send_message", {"text": text})
                    )
                out.write(json.dumps(line, sort_keys=True, default=repr) + "\n")


# ----------------------------------------------------------------------------- compare


def export(commit: str, into: Path) -> None:
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", commit, "contrib"], check=True, capture_output=True)
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)


def start_tree(tree: Path, out_path: Path, stride: int) -> "subprocess.Popen[bytes]":
    env = dict(os.environ, PYTHONHASHSEED="0", LITELLM_LOCAL_MODEL_COST_MAP="True")
    command = [sys.executable, str(Path(__file__)), "--emit", str(tree), str(out_path), "--stride", str(stride)]
    return subprocess.Popen(command, env=env)


def lines(path: Path) -> Iterator[Dict[str, Any]]:
    with path.open() as f:
        for line in f:
            yield json.loads(line)


def main(argv: Optional[Sequence[str]] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", default="6023c1d", help="the commit to compare against (default: 6023c1d)")
    parser.add_argument("--show", type=int, default=5, help="differences to print")
    parser.add_argument(
        "--stride", type=int, default=1, help="keep every N-th generated query (default 1: all of them)"
    )
    parser.add_argument("--keep", type=Path, help="write the two outputs here (default: a temporary directory)")
    parser.add_argument("--emit", nargs=2, metavar=("TREE", "OUT"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.emit:
        emit(Path(args.emit[0]), Path(args.emit[1]), args.stride)
        return
    with tempfile.TemporaryDirectory(prefix="agentos-diff-") as tmp:
        base_tree = Path(tmp) / "base"
        base_tree.mkdir()
        export(args.base, base_tree)
        outputs = args.keep or Path(tmp)
        outputs.mkdir(parents=True, exist_ok=True)
        before, after = outputs / "before.jsonl", outputs / "after.jsonl"
        runs = [start_tree(base_tree, before, args.stride), start_tree(ROOT, after, args.stride)]  # side by side
        if any(run.wait() != 0 for run in runs):
            raise SystemExit("a tree's run failed (see above)")
        compared = differing = 0
        fields: Dict[str, int] = {}
        for old, new in zip(lines(before), lines(after), strict=True):
            compared += 1
            if old == new:
                continue
            differing += 1
            for key in sorted(set(old) | set(new)):
                if old.get(key) != new.get(key):
                    fields[key] = fields.get(key, 0) + 1
            if differing <= args.show:
                keys = [k for k in sorted(set(old) | set(new)) if old.get(k) != new.get(k)]
                print(f"DIFFERENT {old['id']} dialect={old['dialect']}: {keys}")
                for key in keys[:2]:
                    a, b = json.dumps(old.get(key)), json.dumps(new.get(key))
                    at = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
                    print(f"  before: ...{a[max(0, at - 200) : at + 300]}")
                    print(f"  after:  ...{b[max(0, at - 200) : at + 300]}")
    print(
        f"base {args.base} against this tree (stride {args.stride}): {compared:,} (input, dialect) lines compared, "
        f"{differing} differ"
    )
    if fields:
        print("differing fields:", fields)
    sys.exit(1 if differing else 0)


if __name__ == "__main__":
    main()
