"""Default deny against the real kernel, with a real SQLite file checked afterwards.

Each destructive reproducer is first run unguarded on a copy of the database, to show it really
destroys something there; then through ``governed_tool`` with
``SQLPolicy(deny=["DROP", "DELETE", "TRUNCATE"], dialect="sqlite")``: it must be blocked, the
tool must not run, and the database file must be byte-for-byte what it was. The harmless
everyday forms run through the same tool and must be allowed.
"""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path
from typing import List

import pytest

from agentlightning.contrib.kernel.agentos import GovernanceKernel, SQLPolicy
from agentlightning.contrib.runner.agentos.tools import ActionBlockedError, governed_tool

from .sql_corpus import CORPUS, DESTROYS, HARMLESS, SCRATCH_ROWS, SCRATCH_TABLES, destruction_in

#: Destruction on SQLite that no list of destructive constructs named, placed by default deny.
REPRODUCERS = {
    "trigger body INSERT OR REPLACE": "CREATE TRIGGER tr AFTER INSERT ON orders BEGIN INSERT OR REPLACE INTO "
    "staging (id, name) VALUES (1, 'x'); END; INSERT INTO orders VALUES (3, 1, 1.0)",
    "trigger body UPDATE OR REPLACE": "CREATE TRIGGER tr AFTER UPDATE ON orders BEGIN UPDATE OR REPLACE staging "
    "SET id = 1 WHERE id = 9; END; UPDATE orders SET total = 1 WHERE id = 1",
    "writable_schema then a schema write": "PRAGMA writable_schema = ON; "
    "UPDATE sqlite_master SET sql = replace(sql, 'note TEXT,', '') WHERE name = 'users'",
    "side-effect function in a SELECT": "SELECT wipe_users()",
    "REPLACE through a view's trigger": "CREATE VIEW v AS SELECT id, name FROM staging; CREATE TRIGGER vt INSTEAD OF "
    "INSERT ON v BEGIN REPLACE INTO staging VALUES (NEW.id, NEW.name); END; INSERT INTO v VALUES (1, 'y')",
}
SQLITE_DEFAULT_DENY = [c for c in CORPUS if c.category == "default-deny" and c.effect[0] != "E"]


def _database(path: Path) -> Path:
    conn = sqlite3.connect(path)
    for statement in SCRATCH_TABLES + SCRATCH_ROWS:
        conn.execute(statement)
    conn.commit()
    conn.close()
    return path


def _connect(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(path)
    # A function with a side effect, as an extension or an application would register it.
    conn.create_function("wipe_users", 0, lambda: conn.execute("DELETE FROM users").rowcount)
    return conn


def _dump(path: Path) -> List[str]:
    conn = sqlite3.connect(path)
    try:
        return list(conn.iterdump())
    finally:
        conn.close()


def _run(path: Path, sql: str) -> None:
    conn = _connect(path)
    try:
        conn.executescript(sql)
        conn.commit()
    finally:
        conn.close()


@pytest.fixture
def kernel(tmp_path):
    kernel = GovernanceKernel(
        [SQLPolicy(deny=["DROP", "DELETE", "TRUNCATE"], dialect="sqlite")], recorder=tmp_path / "audit.db"
    )
    yield kernel
    kernel.close()


def _governed(kernel, path: Path, ran: list):
    def run_sql(query: str) -> str:
        ran.append(query)
        _run(path, query)
        return "ran"

    return governed_tool("database_query", run_sql, kernel=kernel)


@pytest.mark.parametrize("name", sorted(REPRODUCERS))
def test_destruction_no_list_named_is_blocked_and_the_file_is_unchanged(name, kernel, tmp_path):
    sql = REPRODUCERS[name]
    unguarded = _database(tmp_path / "unguarded.db")
    before_unguarded = _dump(unguarded)
    _run(unguarded, sql)
    assert _dump(unguarded) != before_unguarded, f"{name}: the reproducer destroys nothing unguarded"

    guarded = _database(tmp_path / "guarded.db")
    raw = guarded.read_bytes()
    ran: list = []
    with pytest.raises(ActionBlockedError) as blocked:
        _governed(kernel, guarded, ran)(query=sql)
    assert ran == [], f"{name}: the tool ran"
    assert guarded.read_bytes() == raw, f"{name}: the database file changed"
    assert blocked.value.decision.reason
    assert kernel.verify_audit()["valid"] is True


@pytest.mark.parametrize("case", SQLITE_DEFAULT_DENY, ids=[c.id for c in SQLITE_DEFAULT_DENY])
def test_default_deny_corpus_cases_on_a_real_sqlite_file(case, kernel, tmp_path):
    path = _database(tmp_path / "scratch.db")
    copy = tmp_path / "copy.db"
    shutil.copyfile(path, copy)
    ran: list = []
    tool = _governed(kernel, path, ran)
    if destruction_in(case, "sqlite") == DESTROYS:
        with pytest.raises(ActionBlockedError):
            tool(query=case.sql)
        assert ran == [] and path.read_bytes() == copy.read_bytes(), case.id
    else:
        assert destruction_in(case, "sqlite") == HARMLESS, case.id
        assert tool(query=case.sql) == "ran", case.id


def test_schema_aware_mode_counts_what_an_existing_trigger_runs(kernel, tmp_path):
    path = _database(tmp_path / "shop.db")
    conn = sqlite3.connect(path)
    conn.execute("CREATE TRIGGER purge AFTER UPDATE ON orders BEGIN DELETE FROM users; END")
    conn.commit()
    conn.close()
    update = "UPDATE orders SET total = 1 WHERE id = 1"
    text_only = SQLPolicy(deny=["DROP", "DELETE", "TRUNCATE"], dialect="sqlite")
    assert text_only.check_sql(update) == [], "without database= the text alone is judged (the stated limit)"
    aware = SQLPolicy(deny=["DROP", "DELETE", "TRUNCATE"], dialect="sqlite", database=path)
    found = aware.check_sql(update)
    assert found and "trigger purge" in found[0].description
    assert aware.check_sql("INSERT INTO orders VALUES (7, 1, 1.0)") == [], "the trigger fires on UPDATE only"

    schema_kernel = GovernanceKernel([aware], recorder=tmp_path / "audit2.db")
    try:
        raw, ran = path.read_bytes(), []
        with pytest.raises(ActionBlockedError):
            _governed(schema_kernel, path, ran)(query=update)
        assert ran == [] and path.read_bytes() == raw
    finally:
        schema_kernel.close()

    conn = sqlite3.connect(path)
    conn.execute("DROP TRIGGER purge")
    conn.commit()
    conn.close()
    assert aware.check_sql(update) == [], "the catalog is read again when the schema changes"


def test_schema_aware_mode_refuses_what_it_cannot_read(tmp_path):
    with pytest.raises(FileNotFoundError):
        SQLPolicy(deny=["DROP"], dialect="sqlite", database=tmp_path / "missing.db")
    with pytest.raises(TypeError):
        SQLPolicy(deny=["DROP"], database=object())
    from agentlightning.contrib.kernel.agentos import GovernanceConfigError

    with pytest.raises(GovernanceConfigError):
        SQLPolicy(deny=["DROP"], dialect="postgres", database=_database(tmp_path / "x.db"))
