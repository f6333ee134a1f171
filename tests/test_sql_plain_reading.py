"""The shortcuts of the SQL readers give the analysis the full reading gives.

The PostgreSQL reading decides plain SELECT/INSERT/UPDATE text from libpg_query's JSON text
(``postgres._read_plain``) instead of loading and walking the tree; ``snippet`` skips the split of
text already on one line. Each is compared here with the path it replaces, on realistic queries,
the adversarial corpus and texts built to sit on the shortcut's edges.
"""

from __future__ import annotations

import random
import sys
from pathlib import Path
from typing import Optional

import pytest
from pglast import parser as pg_parser

from agentlightning.contrib.kernel.agentos.sql import postgres
from agentlightning.contrib.kernel.agentos.sql.effects import SQLAnalysis, SQLStatement, _on_one_line, snippet

from .sql_corpus import CORPUS

sys.path.insert(0, str(Path(__file__).resolve().parent / "benchmarks"))

from bench_text_to_sql import _generic_queries, call_and_join_queries  # noqa: E402

#: Texts on the edges of the JSON-text reading, each with whether it takes it.
EDGES = {
    "SELECT c.name, COUNT(*) FROM customers c GROUP BY c.name": True,
    "INSERT INTO orders (id, total) VALUES (1, 2.5)": True,
    "INSERT INTO s.t SELECT * FROM u WHERE x IN (SELECT y FROM z)": True,
    "UPDATE t SET a = (SELECT b FROM u)": True,  # no call: the walk skips the expression's SELECT
    "UPDATE t SET a = (SELECT max(b) FROM u)": True,  # a call: it visits it
    "INSERT INTO t DEFAULT VALUES": True,
    "SELECT 1; select 2;\n select now()": True,
    "SELECT 'FuncCall', '\"Stmt\":', $$\"DropStmt\":{$$": True,
    "SELECT 'é', upper('x');  SELECT 2": True,
    'INSERT INTO "é" VALUES (1)': True,
    "  SELECT   1  ;  ": True,
    "WITH x AS (SELECT 1) SELECT * FROM x": True,
    "WITH u AS (UPDATE users SET name = 'x' RETURNING *) SELECT * FROM u": False,
    "WITH x AS (DELETE FROM t RETURNING *) SELECT * FROM x": False,
    "SELECT 1; UPDATE t SET a = 1; WITH x AS (INSERT INTO t VALUES (1) RETURNING *) SELECT 1": False,
    # The schema PostgreSQL's parser names for the standard's syntax (EXTRACT, TRIM, SUBSTRING ...
    # FROM, POSITION) is the one the walk takes as the built-ins': the same answer, from the text.
    "select pg_catalog.count(*)": True,
    "SELECT EXTRACT(YEAR FROM d), TRIM(x), SUBSTRING(x FROM 1 FOR 2), POSITION('a' IN x) FROM t": True,
    "select public.count(*)": False,
    'select "PG_CATALOG".lower(x)': False,
    "select pg_catalog.lo_unlink(1)": False,
    # Many calls, so many more `{` than the count's bound allows, nested shallowly: measured.
    "SELECT " + ", ".join(f"lower(trim(t.c{i}))" for i in range(20)) + " FROM t": True,
    # Deeply nested calls of few columns: too deep by the tighter bound too, so walked.
    "SELECT " + "lower(" * 150 + "c" + ")" * 150 + " FROM t": False,
    "SELECT lo_unlink(1)": False,
    'SELECT "my""f"(1)': False,
    "SELECT a INTO t FROM b": False,
    "INSERT INTO t VALUES (1) ON CONFLICT DO NOTHING": False,
    "WITH x AS (SELECT 1) INSERT INTO t SELECT * FROM x": False,
    'UPDATE "my""t" SET a = 1': False,
    "DELETE FROM t": False,
    "SELECT 1; DROP TABLE t": False,
    "SELECT * FROM (" * 120 + "SELECT 1" + ") a" * 120: False,  # too deep for the plain reading
    # One split at 'tmt":' and one at '"FuncCall"': the keys and calls it must tell apart.
    "SELECT 'FuncCall', count(*) FROM t": True,  # a string's value next to a call
    'SELECT "FuncCall" FROM t': True,  # a column named FuncCall: no call, the walk visits all
    'SELECT "FuncCall"(1)': False,  # a call of an unknown function named FuncCall
    "SELECT (SELECT (SELECT max(a) FROM t))": True,
    "INSERT INTO t SELECT max(a) FROM u; UPDATE v SET b = (SELECT 1)": True,
    "INSERT INTO t SELECT * FROM (WITH x AS (SELECT 1) SELECT * FROM x) s": False,  # a WITH in the INSERT
    "SELECT 1; WITH x AS (SELECT 1) UPDATE t SET a = 1": False,
    "SELECT 1 INTO t UNION SELECT 2": False,  # INTO in a set operation's left side (no SelectStmt key)
    "SELECT 1; SELECT 2 INTO t": False,
    "SELECT 1; SELECT 'stmt_location'; select 3": True,
    "SELECT 'stmt_len', '\"stmt\":'": True,
}


def _walked(text: str) -> SQLAnalysis:
    original = postgres._read_plain
    postgres._read_plain = lambda text, raw_tree: None  # type: ignore[assignment]
    try:
        return postgres.read_postgres(text)
    finally:
        postgres._read_plain = original  # type: ignore[assignment]


def _plain(text: str) -> Optional[SQLAnalysis]:
    try:
        raw_tree = pg_parser.parse_sql_json(text)
    except pg_parser.ParseError:
        return None
    return postgres._read_plain(text, raw_tree)


@pytest.mark.parametrize("text", list(EDGES))
def test_plain_reading_on_its_edges(text: str) -> None:
    plain = _plain(text)
    assert (plain is not None) == EDGES[text], plain
    assert postgres.read_postgres(text) == _walked(text)
    if plain is not None:
        assert plain == _walked(text)


def test_plain_reading_equals_the_walk_on_realistic_and_corpus_texts() -> None:
    queries = _generic_queries(random.Random(0))
    texts = queries[::5] + [";\n".join(queries[i : i + 6]) for i in range(0, len(queries), 60)]
    texts += [case.sql for case in CORPUS]
    taken = 0
    for text in texts:
        plain = _plain(text)
        if plain is not None:
            taken += 1
            assert plain == _walked(text), text
    assert taken > len(texts) // 3  # the shortcut is what realistic text takes


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_plain_reading_equals_the_walk_on_queries_with_calls_and_joins(seed: int) -> None:
    taken = 0
    for text in call_and_join_queries(random.Random(seed), 60):
        plain = _plain(text)
        if plain is not None:
            taken += 1
            assert plain == _walked(text), text
    assert taken == 60  # calls of the curated functions, in pg_catalog or unqualified: every one


def test_the_nesting_bounds_are_never_below_the_depth_of_the_tree() -> None:
    import json

    def depth(value: object) -> int:
        if isinstance(value, dict):
            return 1 + max((depth(v) for v in value.values()), default=0)
        if isinstance(value, list):
            return max((depth(v) for v in value), default=0)
        return 0

    texts = call_and_join_queries(random.Random(3), 20) + _generic_queries(random.Random(0))[::40]
    texts += ["SELECT * FROM (" * 40 + "SELECT 1" + ") a" * 40, "SELECT 1; SELECT (((2)))", "SELECT '{{{'"]
    texts += ["SELECT x.a FROM t AS x (a, b) JOIN u AS y (c) ON x.a = y.c", "SELECT " + "-" * 60 + "1"]
    texts += [case.sql for case in CORPUS]
    for text in texts:
        try:
            raw_tree = pg_parser.parse_sql_json(text)
            deepest = depth(json.loads(raw_tree))
        except (pg_parser.ParseError, RecursionError):  # not SQL, or too deep to load here
            continue
        assert all(bound >= deepest for bound in postgres._nesting_bounds(raw_tree, 0, len(raw_tree))), text


def test_every_statement_node_type_ends_in_stmt() -> None:
    """The JSON-text reading counts ``Stmt":`` to find statements of other types: every type the
    walk reads as a statement must end so (the rest are calls, ``FuncCall``, or inert)."""
    assert all(node_type.endswith("Stmt") for node_type in postgres._NODE_KINDS)
    assert all(node_type.endswith("Stmt") for node_type in postgres.rules.PG_WRAPPERS)
    assert set(postgres._PLAIN_STATEMENTS) == {"SelectStmt", "InsertStmt", "UpdateStmt"}


def test_one_line_test_matches_the_split() -> None:
    for code in range(0x300):
        for text in (f"a{chr(code)}b", chr(code), f"a {chr(code)}", f"{chr(code)}{chr(code)}"):
            if _on_one_line(text):
                assert " ".join(text.split()) == text, repr(text)
            assert snippet(text) == " ".join(text.split())[:120], repr(text)
    assert _on_one_line("SELECT a FROM t WHERE b = 'x'")
    assert not _on_one_line("SELECT  a") and not _on_one_line(" SELECT a") and not _on_one_line("SELECT\ta")


def test_statement_snippet_matches_snippet() -> None:
    """The plain reading's own one-line test gives what ``snippet`` gives."""
    for code in range(0x300):
        for text in (f"a{chr(code)}b", chr(code), f"a {chr(code)}", f"{chr(code)}{chr(code)}", "x" * 119 + chr(code)):
            assert postgres._snippet(text) == snippet(text), repr(text)
    for text in ("SELECT a FROM t WHERE b = 'x'", "s" * 120, "s" * 121, "SELECT  a", " SELECT a", "SELECT\ta"):
        assert postgres._snippet(text) == snippet(text), repr(text)


def test_plain_statements_are_the_dataclasses_themselves() -> None:
    """Built with their fields at once, the plain reading's statements and analysis are equal to,
    hash like and print like the ones ``__init__`` builds."""
    text = "INSERT INTO t SELECT max(a) FROM u; SELECT 1"
    plain = _plain(text)
    assert plain is not None
    rebuilt = SQLAnalysis(
        tuple(SQLStatement(s.text, s.kinds, s.because, s.unknown, s.writes) for s in plain.statements)
    )
    assert plain == rebuilt and hash(plain.statements) == hash(rebuilt.statements)
    assert repr(plain) == repr(rebuilt) and plain.error is None and plain.unverifiable is None
