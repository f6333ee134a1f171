"""Statements that hold statements, as rows of data: one test per wrapper row and form of inner,
for the command reader (``rules.WRAPPERS``, sqlglot dialects) and PostgreSQL's reader
(``rules.PG_WRAPPERS``). Each example says what the text counts as: the wrapper's own keyword,
the inner statement's kinds when it runs, an unknown construct, or SQL that cannot be checked."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentlightning.contrib.kernel.agentos.sql import analyze_sql, rules

RUNS = "RUNS"  # the inner statement runs: its kinds count, with the reason "run a statement"

#: (first word or node type, dialect, SQL, expected kinds, expected outcome)
#: outcome: "" known, "unknown:<name>" an unknown construct, "unverifiable" cannot be checked.
COMMAND_EXAMPLES = [
    ("EXPLAIN", "mysql", "EXPLAIN DELETE FROM t", {"EXPLAIN"}, ""),
    ("EXPLAIN", "mysql", "EXPLAIN ANALYZE DELETE FROM t", {"EXPLAIN", "DELETE"}, ""),
    ("EXPLAIN", "sqlite", "EXPLAIN QUERY PLAN DELETE FROM t", {"EXPLAIN"}, ""),
    ("DESCRIBE", "mysql", "DESCRIBE t", {"DESCRIBE"}, ""),
    ("DESC", "mysql", "DESC SELECT 1", {"DESCRIBE"}, ""),
    ("ANALYZE", "mysql", "ANALYZE DELETE FROM t", {"ANALYZE", "DELETE"}, ""),
    ("ANALYZE", "mysql", "ANALYZE FORMAT=JSON UPDATE t SET a = 1", {"ANALYZE", "UPDATE"}, ""),
    ("PREPARE", "mysql", "PREPARE s FROM 'DELETE FROM t'", {"PREPARE", "DELETE"}, ""),
    ("PREPARE", "mysql", "PREPARE s FROM @q", set(), "unverifiable"),
    ("PREPARE", "mysql", "PREPARE s FROM 'SELECT 1'; EXECUTE s", {"PREPARE", "EXECUTE", "SELECT"}, ""),
    ("EXECUTE", "mysql", "EXECUTE s", set(), "unverifiable"),
    ("EXECUTE", "mysql", "EXECUTE IMMEDIATE 'DROP TABLE t'", {"EXECUTE", "DROP"}, ""),
    ("EXEC", "tsql", "EXEC sp_executesql N'DELETE FROM t'", {"EXECUTE", "DELETE"}, ""),
    ("DO", "mysql", "DO 1, 2", {"DO", "SELECT"}, ""),
    ("DO", "mysql", "DO lo_unlink(1)", {"DO", "SELECT"}, "unknown:lo_unlink"),
    ("DO", "sqlite", "DO 'BEGIN NULL; END'", {"DO"}, "unknown:DO"),
    ("CALL", "mysql", "CALL archive()", {"CALL"}, "unknown:archive"),
    ("CALL", "mysql", "CREATE PROCEDURE p() BEGIN DELETE FROM t; END; CALL p()", {"CREATE", "CALL", "DELETE"}, ""),
]

PG_EXAMPLES = [
    ("ExplainStmt", "postgres", "EXPLAIN DELETE FROM t", {"EXPLAIN"}, ""),
    ("ExplainStmt", "postgres", "EXPLAIN (ANALYZE) DELETE FROM t", {"EXPLAIN", "DELETE"}, ""),
    ("ExplainStmt", "postgres", "EXPLAIN (ANALYZE false) DELETE FROM t", {"EXPLAIN"}, ""),
    ("PrepareStmt", "postgres", "PREPARE s AS DELETE FROM t", {"PREPARE", "DELETE"}, ""),
    ("ExecuteStmt", "postgres", "PREPARE s AS SELECT 1; EXECUTE s", {"PREPARE", "EXECUTE", "SELECT"}, ""),
    ("ExecuteStmt", "postgres", "EXECUTE s", set(), "unverifiable"),
    ("DoStmt", "postgres", "DO $$ BEGIN DELETE FROM t; END $$", {"DO", "DELETE"}, ""),
    ("CallStmt", "postgres", "CALL archive()", {"CALL"}, "unknown:archive"),
]


def check(dialect, sql, kinds, outcome):
    analysis = analyze_sql(sql, dialect)
    assert analysis.error is None, analysis.error
    if outcome == "unverifiable":
        assert analysis.unverifiable, analysis
        return
    assert analysis.unverifiable is None, analysis.unverifiable
    assert kinds <= analysis.kinds, (sorted(analysis.kinds), sql)
    unknown = {u.name for u in analysis.unknown}
    if outcome.startswith("unknown:"):
        assert outcome.split(":", 1)[1] in unknown, (unknown, sql)
    else:
        assert not unknown, (unknown, sql)
    if kinds - {"EXPLAIN", "DESCRIBE", "ANALYZE", "PREPARE", "EXECUTE", "DO", "CALL", "CREATE", "SELECT"}:
        inner = next(s for s in analysis.statements if s.kinds & kinds)
        assert any(why and "runs" in why for _, why in inner.because), inner.because  # counted as run by it


@pytest.mark.parametrize("first, dialect, sql, kinds, outcome", COMMAND_EXAMPLES, ids=[e[2] for e in COMMAND_EXAMPLES])
def test_each_command_wrapper_row(first, dialect, sql, kinds, outcome):
    assert rules.wrapper_for(first, [w.upper() for w in sql.split()[1:]]) is not None
    check(dialect, sql, kinds, outcome)


@pytest.mark.parametrize("node_type, dialect, sql, kinds, outcome", PG_EXAMPLES, ids=[e[2] for e in PG_EXAMPLES])
def test_each_postgres_wrapper_row(node_type, dialect, sql, kinds, outcome):
    assert node_type in rules.PG_WRAPPERS
    check(dialect, sql, kinds, outcome)


def test_every_wrapper_row_has_an_example():
    words = {e[0] for e in COMMAND_EXAMPLES}
    for wrapper in rules.WRAPPERS:
        assert set(wrapper.words) <= words, wrapper.words
    assert set(rules.PG_WRAPPERS) == {e[0] for e in PG_EXAMPLES}


@pytest.mark.parametrize("dialect", ["mysql", "postgres"])
def test_what_explain_only_plans_is_not_judged_and_what_it_runs_is(dialect):
    """The row says whether the inner statement runs: a call the guard cannot place is no concern
    in a plan, and unknown once ``ANALYZE`` runs it."""
    planned = analyze_sql("EXPLAIN SELECT lo_unlink(1)", dialect)
    assert planned.kinds == {"EXPLAIN"} and not planned.unknown
    ran = analyze_sql("EXPLAIN ANALYZE SELECT lo_unlink(1)", dialect)
    assert "SELECT" in ran.kinds and [u.name for u in ran.unknown] == ["lo_unlink"]


def test_analyze_table_is_maintenance_not_a_wrapper():
    assert rules.wrapper_for("ANALYZE", ["TABLE", "t"]) is None
    assert analyze_sql("ANALYZE TABLE t", "mysql").kinds == {"ANALYZE"}


def test_the_docs_table_of_wrappers_names_every_row():
    docs = (Path(__file__).resolve().parents[1] / "docs" / "kernel.md").read_text()
    table = docs[docs.index("**Statements that hold statements**") : docs.index("**Always blocked**")]
    first_cells = [line.split("|")[1] for line in table.splitlines() if line.startswith("| ")][2:]
    assert first_cells, "the wrappers table is missing"
    for wrapper in rules.WRAPPERS:
        for word in wrapper.words:
            assert any(f"`{word}" in cell or f"/`{word}`" in cell for cell in first_cells), word
