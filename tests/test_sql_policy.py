"""SQLPolicy decides on sqlglot's parse: the forms that fool substring and regex checks."""

from __future__ import annotations

import sqlite3

import pytest
from agent_os import PolicyEngine

from agentlightning.contrib.kernel.agentos import (
    Action,
    ActionContext,
    GovernanceConfigError,
    GovernanceKernel,
    Severity,
    SQLPolicy,
)
from agentlightning.contrib.kernel.agentos.sql import analyze_sql
from agentlightning.contrib.kernel.agentos.sql.policy import _shared_analysis

from .conftest import table_counts

DENY = ["DROP", "DELETE", "TRUNCATE"]

MUST_BLOCK = [
    "DROP TABLE users",
    "drop table users",
    "DrOp TaBlE users",
    "DROP/**/TABLE users",
    "DROP\n\tTABLE\n users",
    "DROP TABLE IF EXISTS orders",
    "DELETE FROM users",
    "DELETE/**/FROM users",
    "delete -- sneaky comment\nFROM users",
    "DELETE FROM users WHERE id IN (SELECT user_id FROM orders)",
    "/* harmless */ DELETE FROM orders",
    "SELECT 1; DROP TABLE users",
    "SELECT * FROM users;DELETE FROM orders;",
    "BEGIN; DELETE FROM users; COMMIT;",
    "WITH gone AS (DELETE FROM users RETURNING id) SELECT * FROM gone",
    "TRUNCATE TABLE orders",
    "truncate orders",
    "ALTER TABLE users DROP COLUMN note",
    "EXPLAIN ANALYZE DELETE FROM users",
    "SELECT id FROM orders /* /* */; DROP TABLE users; -- */",
    "/* /* */ DROP TABLE users; -- */\nSELECT 1",
]

MUST_PASS = [
    "SELECT name FROM users WHERE id = 42",
    "SELECT 'DROP TABLE users' AS prank",
    "SELECT 1 -- drop table users",
    "SELECT * FROM users /* DELETE FROM users */",
    "SELECT * FROM users WHERE note LIKE '%delete from%'",
    "SELECT dropped_at FROM users",
    'SELECT "drop", "delete" FROM (SELECT 1 AS "drop", 2 AS "delete")',
    "UPDATE users SET dropped_at = '2026-01-01' WHERE id = 3",
    "INSERT INTO users (name, note) VALUES ('x', 'please DROP TABLE users')",
    "WITH t AS (SELECT id FROM users) SELECT COUNT(*) FROM t",
    "EXPLAIN DROP TABLE users",  # EXPLAIN without ANALYZE only plans (SQLite prints bytecode)
]

MUST_BLOCK_UNPARSEABLE = ["SELEC * FRM", "", "  ;  ", "DR\u039fP TABLE users", "SELECT (((", "\x00\x01binary"]


@pytest.fixture(scope="module")
def policy() -> SQLPolicy:
    return SQLPolicy(deny=DENY)


@pytest.mark.parametrize("query", MUST_BLOCK)
def test_destructive_forms_are_blocked(policy, query):
    (violation,) = policy.evaluate(Action.sql(query), ActionContext())
    assert violation.action_blocked
    assert violation.severity is Severity.CRITICAL
    assert violation.policy_name == "SQLPolicy"
    assert "statement denied" in violation.description


@pytest.mark.parametrize("query", MUST_PASS)
def test_words_inside_strings_comments_and_identifiers_pass(policy, query):
    assert policy.evaluate(Action.sql(query), ActionContext()) == []


@pytest.mark.parametrize("query", MUST_BLOCK_UNPARSEABLE)
def test_unparseable_sql_is_blocked_with_a_reason(policy, query):
    (violation,) = policy.evaluate(Action.sql(query), ActionContext())
    assert violation.action_blocked
    assert violation.severity is Severity.HIGH
    assert any(
        word in violation.description for word in ("unparseable", "not an SQL statement", "empty SQL", "NUL character")
    )


def test_non_string_sql_missing_argument_and_huge_payload_are_blocked(policy):
    ctx = ActionContext()
    assert "must be a string of SQL, got int" in policy.evaluate(Action.sql(123), ctx)[0].description
    assert (
        "without its SQL argument 'query'" in policy.evaluate(Action("database_query", {"q": "x"}), ctx)[0].description
    )
    # A SQL tool's text under another usual argument name is still judged as its SQL.
    assert "unparseable SQL" in policy.evaluate(Action("database_query", {"sql": "x"}), ctx)[0].description
    assert (
        "DROP statement denied"
        in policy.evaluate(Action("database_query", {"statement": "DROP TABLE t"}), ctx)[0].description
    )
    huge = "SELECT 1 " + "-" * 10_000_000
    assert "over max_query_chars=100,000" in policy.evaluate(Action.sql(huge), ctx)[0].description


def test_sql_reaching_other_tools_is_judged_and_plain_text_is_not(policy):
    """A tool the policy does not name is no way around it: SQL under a SQL-named argument is
    judged (detect=True, the default); text that does not read as SQL is not its business."""
    ctx = ActionContext()
    (found,) = policy.evaluate(Action("search", {"query": "DROP TABLE users"}), ctx)
    assert "argument 'query' of tool 'search'" in found.description and "DROP statement denied" in found.description
    assert policy.evaluate(Action("search", {"query": "delete my account please"}), ctx) == []
    assert policy.evaluate(Action("search", {"query": "SELECT 1"}), ctx) == []
    assert SQLPolicy(deny=DENY, detect=False).evaluate(Action("search", {"query": "DROP TABLE users"}), ctx) == []


def test_tool_names_match_loosely(policy):
    ctx = ActionContext()
    for tool in ("Database_Query", "database-query", " DATABASE_QUERY ", "sql"):
        (found,) = policy.evaluate(Action(tool, {"query": "DELETE FROM users"}), ctx)
        assert found.action_blocked, tool


def test_allow_list_mode_and_per_keyword_severity():
    policy = SQLPolicy(
        deny=["DROP"], allow=["SELECT", "UPDATE"], severities={"DROP": "critical", "INSERT": "medium"}, severity="high"
    )
    ctx = ActionContext()
    assert policy.evaluate(Action.sql("SELECT 1"), ctx) == []
    (insert,) = policy.evaluate(Action.sql("INSERT INTO users (name) VALUES ('a')"), ctx)
    assert insert.severity is Severity.MEDIUM and "not in allow-list" in insert.description
    (mixed,) = policy.evaluate(Action.sql("INSERT INTO users (name) VALUES ('a'); DROP TABLE users"), ctx)
    assert mixed.severity is Severity.CRITICAL  # the worst finding sets the severity; one violation per action
    assert "DROP statement denied" in mixed.description and "INSERT statement not in allow-list" in mixed.description


def test_merge_delete_branch_and_insert_or_replace_are_seen():
    ctx = ActionContext()
    merge = "MERGE INTO users USING staging ON users.id = staging.id WHEN MATCHED THEN DELETE"
    assert SQLPolicy(deny=["DELETE"], dialect="postgres").evaluate(Action.sql(merge), ctx)
    assert SQLPolicy(deny=["REPLACE"], dialect="sqlite").evaluate(
        Action.sql("INSERT OR REPLACE INTO users VALUES (1, 'a', NULL, NULL)"), ctx
    )
    assert SQLPolicy(deny=["DROP"]).evaluate(Action.sql("EXECUTE 'DROP TABLE users'"), ctx)


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        ({"deny": ["DORP"]}, GovernanceConfigError, "unknown SQL keyword 'DORP'"),
        ({"deny": "DROP"}, TypeError, "not a single str"),
        ({"deny": [], "allow": None}, GovernanceConfigError, "needs deny"),
        ({"severity": "apocalyptic"}, GovernanceConfigError, "unknown severity"),
        ({"dialect": "klingon"}, GovernanceConfigError, "unknown SQL dialect 'klingon'"),
        ({"max_query_chars": 0}, GovernanceConfigError, "max_query_chars must be a positive int"),
        ({"mode": "maybe"}, GovernanceConfigError, "unknown policy mode"),
        ({"frobnicate": True}, TypeError, "frobnicate"),
    ],
)
def test_bad_configuration_is_a_clear_error(kwargs, error, message):
    with pytest.raises(error, match=message):
        SQLPolicy(**kwargs)


def test_repeated_queries_hit_the_cache(policy):
    query = "SELECT id FROM users WHERE name = 'cache-probe'"
    policy.check_sql(query)
    before = _shared_analysis.cache_info().hits
    policy.check_sql(query)
    SQLPolicy(deny=["UPDATE"]).check_sql(query)  # another policy shares the parse
    assert _shared_analysis.cache_info().hits == before + 2


def test_nested_comment_ambiguity_fails_closed_without_a_dialect(shop_db):
    """sqlglot's default reading nests block comments (Postgres); SQLite does not, and runs the DROP."""
    query = "SELECT id FROM orders /* /* */; DROP TABLE users; -- */"
    conn = sqlite3.connect(shop_db)
    conn.executescript(query)  # proof of the danger on a real SQLite database
    assert "users" not in table_counts(shop_db)
    conn.close()
    assert SQLPolicy(deny=["DROP"]).check_sql(query)[0].description.startswith("DROP statement denied")
    assert SQLPolicy(deny=["DROP"], dialect="sqlite").check_sql(query)
    assert SQLPolicy(deny=["DROP"], dialect="postgres").check_sql(query) == []  # a comment in Postgres
    # A nested comment that only Postgres can read is unparseable under the flat reading: blocked.
    assert "unparseable" in SQLPolicy(deny=["DROP"]).check_sql("/* a /* b */ c */ SELECT 1")[0].description


def test_analyze_sql_names_nested_statement_kinds():
    assert analyze_sql("WITH d AS (DELETE FROM t RETURNING *) SELECT * FROM d", "postgres").kinds == {
        "SELECT",
        "DELETE",
    }


def test_against_a_real_sqlite_database_blocked_statements_never_run(shop_db):
    """Route every query through the kernel and execute only what it allows."""
    kernel = GovernanceKernel([SQLPolicy(deny=DENY, dialect="sqlite")])
    before = table_counts(shop_db)
    conn = sqlite3.connect(shop_db)
    executed, blocked = [], []
    for query in MUST_BLOCK + MUST_PASS:
        decision = kernel.check(Action.sql(query))
        if decision.allowed:
            conn.executescript(query)
            executed.append(query)
        else:
            blocked.append(query)
    conn.close()
    assert blocked == MUST_BLOCK
    assert executed == MUST_PASS
    after = table_counts(shop_db)
    assert after["users"] == before["users"] + 1  # the one INSERT in MUST_PASS
    assert after["orders"] == before["orders"]
    columns = [r[1] for r in sqlite3.connect(shop_db).execute("PRAGMA table_info(users)")]
    assert "note" in columns  # ALTER TABLE ... DROP COLUMN was blocked


def test_agent_os_regex_check_gets_these_wrong_and_sqlpolicy_does_not(policy):
    """Why SQLPolicy exists: the same inputs through Agent OS 3.7's own check_violation."""
    engine = PolicyEngine()
    engine.add_constraint("agent", ["database_query"])
    regex_misses = ["DELETE/**/FROM users", "DROP/**/TABLE users", "delete -- c\nFROM users"]
    regex_false_alarms = [
        "SELECT 'DROP TABLE users'",
        "SELECT 1 -- drop table x",
        "SELECT * FROM users WHERE note LIKE '%delete from%'",
    ]
    for query in regex_misses:
        assert engine.check_violation("agent", "database_query", {"query": query}) is None
        assert policy.check_sql(query)
    for query in regex_false_alarms:
        assert engine.check_violation("agent", "database_query", {"query": query}) is not None
        assert policy.check_sql(query) == []
