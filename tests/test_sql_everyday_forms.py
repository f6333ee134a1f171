"""Everyday statements of the named dialects are read, not refused, and the
``sql_mode`` handling is the same for ``SET`` and ``SET STATEMENT``.

Each harmless form is allowed with the broad destructive deny list; the same form carrying a
destructive statement, or a mode that disables strictness while UPDATE is denied, is blocked.
"""

from __future__ import annotations

import pytest

from agentlightning.contrib.kernel.agentos.sql import SQLPolicy

DESTRUCTIVE = ["DROP", "DELETE", "TRUNCATE"]

MARIADB_FORMS = [
    "INSERT INTO t (id, v) VALUES (1, 'a') ON DUPLICATE KEY UPDATE v = VALUES(v)",
    "VALUES (1, 'a'), (2, 'b')",
    "UPDATE IGNORE t SET v = 1 WHERE id = 2",
    "UPDATE LOW_PRIORITY IGNORE t SET v = 1 WHERE id = 2",
    "SELECT a, b INTO @x, @y FROM t WHERE id = 1",
    "ALTER TABLE t ADD COLUMN c INT, ALGORITHM=INPLACE, LOCK=NONE",
    "SELECT FORMAT(1234.5, 2), CONNECTION_ID()",
    "SET STATEMENT max_statement_time = 1 FOR SELECT * FROM t",
    "SET STATEMENT sql_mode = 'STRICT_TRANS_TABLES' FOR INSERT INTO t VALUES (1)",
]


@pytest.mark.parametrize("dialect", ["mariadb", "mysql"])
@pytest.mark.parametrize("query", MARIADB_FORMS)
def test_mariadb_everyday_forms_are_read_and_allowed(dialect, query):
    assert SQLPolicy(deny=DESTRUCTIVE, dialect=dialect).check_sql(query) == []


@pytest.mark.parametrize(
    "query, denied",
    [
        ("SET STATEMENT max_statement_time = 1 FOR DELETE FROM t", "DELETE"),
        ("SET STATEMENT sql_mode = 'STRICT_TRANS_TABLES' FOR DROP TABLE t", "DROP"),
        ("SELECT a, b INTO @x, @y FROM t WHERE purge_rows(a)", "unknown effect"),
        ("VALUES (1, drop_everything())", "unknown effect"),
        ("UPDATE IGNORE t SET v = cleanup(v)", "unknown effect"),
        ("ALTER TABLE t DROP COLUMN c, ALGORITHM=INPLACE, LOCK=NONE", "DROP"),
        ("SET STATEMENT sql_mode = 'ANSI_QUOTES' FOR SELECT \"x\"", "unknown effect"),
    ],
)
def test_the_same_forms_still_block_what_they_carry(query, denied):
    blocked = SQLPolicy(deny=DESTRUCTIVE, dialect="mariadb").check_sql(query)
    assert blocked and denied in blocked[0].description


@pytest.mark.parametrize(
    "query",
    [
        "BEGIN; INSERT INTO t VALUES (1); END TRANSACTION;",
        "BEGIN TRANSACTION; UPDATE t SET v = 1; END;",
        "BEGIN; SELECT 1; END WORK",
        "SELECT snippet(ft, 0, '[', ']', '...', 5), highlight(ft, 0, '[', ']'), bm25(ft) FROM ft "
        "WHERE ft MATCH 'x' ORDER BY bm25(ft)",
    ],
)
def test_sqlite_end_transaction_and_fts5_auxiliary_functions_are_read(query):
    assert SQLPolicy(deny=DESTRUCTIVE, dialect="sqlite").check_sql(query) == []


def test_sqlite_end_followed_by_anything_else_is_not_a_commit():
    assert SQLPolicy(deny=DESTRUCTIVE, dialect="sqlite").check_sql("END IF")


@pytest.mark.parametrize(
    "query",
    [
        "SET sql_mode = ''",
        "SET @@sql_mode = 'NO_ENGINE_SUBSTITUTION'",
        "SET STATEMENT sql_mode = '' FOR INSERT INTO t VALUES (1)",
        "SET STATEMENT sql_mode = 'NO_ZERO_DATE' FOR UPDATE t SET v = 300",
    ],
)
def test_a_mode_without_strictness_counts_as_update_in_set_and_set_statement(query):
    """``SET sql_mode = ''`` was placed as a harmless session setting, and ``SET STATEMENT`` was
    unknown: without a strict mode later writes silently truncate or zero values, so with
    UPDATE denied both forms are blocked, with the reason; with UPDATE allowed both are allowed."""
    blocked = SQLPolicy(deny=DESTRUCTIVE + ["UPDATE"], dialect="mariadb").check_sql(query)
    assert blocked and "without a strict mode" in blocked[0].description
    if "UPDATE t" not in query:
        assert SQLPolicy(deny=DESTRUCTIVE, dialect="mariadb").check_sql(query) == []


@pytest.mark.parametrize(
    "query",
    [
        "SET sql_mode = 'STRICT_TRANS_TABLES,NO_ZERO_DATE'",
        "SET STATEMENT sql_mode = 'TRADITIONAL' FOR INSERT INTO t VALUES (1)",
    ],
)
def test_a_strict_mode_is_a_plain_session_setting_in_both_forms(query):
    assert SQLPolicy(deny=DESTRUCTIVE + ["UPDATE"], dialect="mariadb").check_sql(query) == []
