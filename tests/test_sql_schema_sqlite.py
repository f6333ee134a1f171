"""The schema-aware mode's defaults and its SQLite reader (no server needed).

Without ``database=``: a statement whose effect depends on what is in the database follows the
documented default: ``CALL`` of a routine the text does not create is unknown (blocked) in every
dialect, and a write to a table is judged by its text. With a SQLite database: triggers, their
chains, and foreign-key cascades count, shown by running the statements on the real file.
"""

from __future__ import annotations

import sqlite3

import pytest

from agentlightning.contrib.kernel.agentos import SQLPolicy


@pytest.mark.parametrize("dialect", [None, "postgres", "mysql", "mariadb", "sqlite", "tsql"])
def test_without_database_call_fails_closed(dialect):
    found = SQLPolicy(deny=["DROP"], dialect=dialect).check_sql("CALL archive_old_rows()")
    assert found and "unknown effect: function or routine CALL archive_old_rows" in found[0].description


@pytest.mark.parametrize("dialect", [None, "postgres", "mysql", "sqlite"])
def test_without_database_a_write_is_judged_by_its_text(dialect):
    policy = SQLPolicy(deny=["DELETE"], dialect=dialect)
    assert policy.check_sql("UPDATE orders SET total = 1 WHERE id = 1") == []
    assert policy.check_sql("DELETE FROM orders WHERE id = 1")


def _shop(tmp_path):
    path = tmp_path / "shop.db"
    conn = sqlite3.connect(path)
    conn.executescript(
        "PRAGMA foreign_keys = ON;"
        "CREATE TABLE users (id INTEGER PRIMARY KEY);"
        "CREATE TABLE orders (id INTEGER PRIMARY KEY, user_id INTEGER REFERENCES users ON DELETE SET NULL);"
        "CREATE TABLE events (id INTEGER PRIMARY KEY, what TEXT);"
        "CREATE TABLE audit (id INTEGER PRIMARY KEY);"
        "INSERT INTO users VALUES (1), (2); INSERT INTO orders VALUES (1, 1), (2, 2);"
        "INSERT INTO audit VALUES (1), (2), (3);"
        # a chain: updating orders logs an event, and logging an event purges the audit table
        "CREATE TRIGGER log_update AFTER UPDATE ON orders BEGIN INSERT INTO events (what) VALUES ('u'); END;"
        "CREATE TRIGGER purge_audit AFTER INSERT ON events BEGIN DELETE FROM audit; END;"
    )
    conn.commit()
    return path, conn


#: What a statement sets off in the shop database: the kind denied, a statement that sets it off only
#: with the schema read, what the violation says, a statement that sets off nothing (and why), and
#: the query that shows the effect happened when the statement ran.
SET_OFF = {
    "trigger_chains_are_followed": (
        "DELETE",
        "UPDATE orders SET user_id = 2 WHERE id = 1",
        "DELETE statement denied (trigger purge_audit on events runs it",
        ("UPDATE audit SET id = 9 WHERE id = 1", "audit has no trigger"),
        ("SELECT count(*) FROM audit", (0,)),
    ),
    "cascades_count": (
        "UPDATE",
        "DELETE FROM users WHERE id = 1",
        "foreign key 0 of orders (ON DELETE SET NULL) updates the referencing rows of orders",
        ("DELETE FROM audit WHERE id = 1", "nothing references audit"),
        ("SELECT user_id FROM orders WHERE id = 1", (None,)),
    ),
}


@pytest.mark.parametrize("case", sorted(SET_OFF))
def test_what_a_statement_sets_off_is_denied(tmp_path, case):
    denied, statement, described, (harmless, why), (effect_query, effect) = SET_OFF[case]
    path, conn = _shop(tmp_path)
    aware = SQLPolicy(deny=[denied], dialect="sqlite", database=path)
    assert SQLPolicy(deny=[denied], dialect="sqlite").check_sql(statement) == []
    assert described in aware.check_sql(statement)[0].description
    assert aware.check_sql(harmless) == [], why
    conn.execute(statement)
    conn.commit()
    assert conn.execute(effect_query).fetchone() == effect
    conn.close()


def test_unreadable_catalog_blocks_and_names_the_problem(tmp_path):
    path, conn = _shop(tmp_path)
    conn.close()
    guard = sqlite3.connect(path, check_same_thread=False)
    aware = SQLPolicy(deny=["DELETE"], dialect="sqlite", database=guard)
    assert aware.check_sql("UPDATE audit SET id = 9 WHERE id = 1") == []
    guard.close()
    description = aware.check_sql("UPDATE audit SET id = 9 WHERE id = 1")[0].description
    assert "cannot read the SQLite database's catalog (ProgrammingError" in description
