"""The database-enforced envelope (``SQLEnvelope``) on SQLite and on real PostgreSQL and MariaDB servers.

Each adversarial case hides a destructive effect in the schema, where the text the kernel judges
does not show it (a view's column that calls a deleting function, a column DEFAULT, a CHECK, a
domain CHECK, a function shadowing a built-in on the search path, an operator, a trigger in an
attached SQLite file, an FTS5 command insert). Each test first shows, by running the statement
directly, that it really destroys rows; then that the kernel alone allows it (the hidden effect is
real); then that through the envelope the database refuses it, the rows are all still there
(counted after), and the refusal is one blocked decision in the audit trail with the database's
message. PostgreSQL and MariaDB tests skip without the servers (``source .ci/services.sh``) and
fail in CI instead (``sql_schema_servers.server``).
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any, Callable, Iterator, List

import pytest

from agentlightning.contrib.kernel.agentos import GovernanceConfigError, GovernanceKernel, SQLPolicy
from agentlightning.contrib.kernel.agentos.sql.envelope import ENVELOPE_NAME, SQLEnvelope, SQLRefused

from .sql_schema_servers import mariadb_database, postgres_database

DENY = ["DROP", "DELETE", "TRUNCATE"]


def kernel_for(dialect: str, tmp_path: Path, **policy: Any) -> GovernanceKernel:
    return GovernanceKernel([SQLPolicy(deny=DENY, dialect=dialect, **policy)], recorder=str(tmp_path / "audit.db"))


def refused_by_database(envelope: SQLEnvelope, sql: str) -> SQLRefused:
    """``sql`` passes the kernel, and the database refuses it through the envelope."""
    assert envelope.kernel.check("database_query", {"query": sql}).allowed, f"the text alone should pass: {sql}"
    with pytest.raises(SQLRefused) as caught:
        envelope.execute(sql)
    refused = caught.value
    assert refused.by_database and refused.decision.blocked, refused
    assert refused.decision.violations[0].policy_name == ENVELOPE_NAME
    return refused


def blocked_records(kernel: GovernanceKernel) -> List[dict]:
    return [r for r in kernel.audit.records() if r["policy_verdict"] == "blocked"]


# ---------------------------------------------------------------------------------------- SQLite
@pytest.fixture
def lite(tmp_path: Path) -> Iterator[sqlite3.Connection]:
    conn = sqlite3.connect(str(tmp_path / "shop.db"))
    conn.executescript(
        "CREATE TABLE keep (a); INSERT INTO keep VALUES (1), (2), (3);"
        "CREATE TABLE orders (a); CREATE TRIGGER purge AFTER INSERT ON orders BEGIN DELETE FROM keep; END;"
    )
    conn.commit()
    yield conn
    conn.close()


@pytest.fixture
def other_db(tmp_path: Path) -> Path:
    """Another SQLite file, to attach: inserting into its ``t`` deletes its ``precious`` rows (two)."""
    path = tmp_path / "other.db"
    other = sqlite3.connect(str(path))
    other.executescript(
        "CREATE TABLE t (a); CREATE TABLE precious (a); INSERT INTO precious VALUES (1), (2);"
        "CREATE TRIGGER wipe AFTER INSERT ON t BEGIN DELETE FROM precious; END;"
    )
    other.commit()
    other.close()
    return path


def keep_rows(conn: Any) -> int:
    return conn.execute("SELECT count(*) FROM keep").fetchone()[0]


def test_sqlite_trigger_delete_is_refused_by_the_authorizer_and_recorded_once(lite, tmp_path):
    kernel = kernel_for("sqlite", tmp_path)
    envelope = SQLEnvelope(kernel, lite)
    refused = refused_by_database(envelope, "INSERT INTO orders VALUES (1)")
    assert "DELETE main.keep (run by trigger purge)" in refused.decision.reason
    assert keep_rows(lite) == 3 and lite.execute("SELECT count(*) FROM orders").fetchone()[0] == 0
    # one blocked record, with SQLite's message; the allowed check before it has that outcome
    (blocked,) = blocked_records(kernel)
    assert "not authorized" in blocked["violation_reason"] and ENVELOPE_NAME in blocked["violation_reason"]
    assert json.loads(blocked["tool_args"])["args"] == {"query": "INSERT INTO orders VALUES (1)"}
    errors = [r for r in kernel.audit.records() if r["policy_verdict"] == "error"]
    assert len(errors) == 1 and refused.decision.decision_id in errors[0]["violation_reason"]
    assert kernel.verify_audit()["valid"]
    # the same call without the trigger's effect runs, and commits
    lite.execute("DROP TRIGGER purge")
    result = envelope.execute("INSERT INTO orders VALUES (1)")
    assert not result.read_only and result.rows_changed == 1
    assert lite.execute("SELECT count(*) FROM orders").fetchone()[0] == 1


def test_sqlite_attached_database_trigger_is_refused(lite, other_db, tmp_path):
    kernel = kernel_for("sqlite", tmp_path)
    envelope = SQLEnvelope(kernel, lite)
    # ATTACH in the call itself: the other file's trigger runs in the compiled INSERT, and is refused
    refused = refused_by_database(envelope, f"ATTACH '{other_db}' AS o; INSERT INTO o.t VALUES (1)")
    assert "DELETE o.precious (run by trigger wipe)" in refused.decision.reason
    assert lite.execute("SELECT count(*) FROM o.precious").fetchone()[0] == 2
    # attached by the application before the call: the same
    lite.execute(f"ATTACH '{other_db}' AS p")
    refused = refused_by_database(envelope, "INSERT INTO p.t VALUES (1)")
    assert "DELETE p.precious (run by trigger wipe)" in refused.decision.reason
    assert lite.execute("SELECT count(*) FROM p.precious").fetchone()[0] == 2


def test_sqlite_fts5_command_insert_is_refused(lite, tmp_path):
    lite.executescript(
        "CREATE VIRTUAL TABLE ft USING fts5(body, content='');"
        "INSERT INTO ft(rowid, body) VALUES (1, 'red lamp'), (2, 'blue mug');"
    )
    lite.commit()

    def found() -> int:
        return len(lite.execute("SELECT rowid FROM ft WHERE ft MATCH 'lamp OR mug'").fetchall())

    assert found() == 2
    # it really destroys the index: shown on a copy
    copy = sqlite3.connect(":memory:")
    lite.backup(copy)
    copy.execute("INSERT INTO ft(ft) VALUES ('delete-all')")
    assert len(copy.execute("SELECT rowid FROM ft WHERE ft MATCH 'lamp OR mug'").fetchall()) == 0
    envelope = SQLEnvelope(kernel_for("sqlite", tmp_path), lite)
    refused = refused_by_database(envelope, "INSERT INTO ft(ft) VALUES ('delete-all')")
    assert "DELETE main.ft_data" in refused.decision.reason
    assert found() == 2


def test_sqlite_read_that_writes_is_refused_by_query_only(lite, tmp_path):
    # An application function a view calls, which writes on the same connection: a read that deletes.
    def purge_keep() -> int:
        lite.execute("DELETE FROM keep")
        return 1

    lite.create_function("purge_keep", 0, purge_keep)
    lite.execute("CREATE TEMP VIEW v_report AS SELECT purge_keep() AS p")
    kernel = kernel_for("sqlite", tmp_path, allow_statements=["PRAGMA"])
    envelope = SQLEnvelope(kernel, lite)
    refused_by_database(envelope, "SELECT * FROM v_report")
    assert keep_rows(lite) == 3
    assert lite.execute("PRAGMA query_only").fetchone()[0] == 0  # the connection is handed back as it was


def test_sqlite_transaction_control_and_guarded_pragmas_are_refused(lite, tmp_path):
    envelope = SQLEnvelope(kernel_for("sqlite", tmp_path), lite)
    with pytest.raises(SQLRefused, match="would end or split the transaction") as caught:
        envelope.execute("INSERT INTO keep VALUES (4); COMMIT; INSERT INTO keep VALUES (5)")
    assert not caught.value.by_database and caught.value.decision.blocked
    assert keep_rows(lite) == 3
    with pytest.raises(SQLRefused, match="PRAGMA query_only"):
        envelope.execute("PRAGMA query_only = OFF")


def test_the_envelope_needs_a_sql_policy_and_a_known_driver(lite, tmp_path):
    with pytest.raises(GovernanceConfigError, match="no SQLPolicy for tool"):
        SQLEnvelope(GovernanceKernel([]), lite)
    with pytest.raises(GovernanceConfigError, match="DB-API connection"):
        SQLEnvelope(kernel_for("sqlite", tmp_path), object())


def test_a_blocked_check_never_reaches_the_database(lite, tmp_path):
    envelope = SQLEnvelope(kernel_for("sqlite", tmp_path), lite)
    with pytest.raises(SQLRefused) as caught:
        envelope.execute("DELETE FROM keep")
    assert not caught.value.by_database and "DELETE statement denied" in caught.value.decision.reason
    assert keep_rows(lite) == 3


# ---------------------------------------------------------------------------------------- PostgreSQL
_PG_SCHEMA = """
CREATE TABLE keep (id int);
INSERT INTO keep SELECT generate_series(1, 10);
CREATE TABLE people (id int, name varchar(40));
INSERT INTO people VALUES (1, 'ada lovelace');
CREATE FUNCTION purge_keep() RETURNS int LANGUAGE sql VOLATILE AS 'DELETE FROM keep RETURNING 1';
CREATE FUNCTION purge_keep_bool(int, int) RETURNS boolean LANGUAGE sql VOLATILE
  AS 'DELETE FROM keep; SELECT true';
CREATE FUNCTION wipe_keep() RETURNS int LANGUAGE plpgsql VOLATILE AS $$BEGIN TRUNCATE keep; RETURN 1; END$$;
CREATE VIEW v_report AS SELECT purge_keep() AS p;
CREATE TABLE titled (id int, title text, stamp int DEFAULT purge_keep());
CREATE TABLE checked (id int CHECK (purge_keep() IS NOT NULL));
CREATE DOMAIN checked_int AS int CHECK (purge_keep() IS NOT NULL);
CREATE OPERATOR === (LEFTARG = int, RIGHTARG = int, FUNCTION = purge_keep_bool);
CREATE SCHEMA shadow;
CREATE FUNCTION shadow.initcap(varchar) RETURNS text LANGUAGE sql VOLATILE
  AS 'DELETE FROM public.keep; SELECT $1::text';
"""

_PG_HIDDEN = {
    "view": "SELECT * FROM v_report",
    "view in a CTE": "WITH r AS (SELECT * FROM v_report) SELECT * FROM r",
    "view in a subquery": "SELECT * FROM (SELECT p FROM v_report) AS s",
    "view in a JOIN": "SELECT people.name FROM people JOIN v_report ON true",
    "view through COPY TO STDOUT": "COPY (SELECT * FROM v_report) TO STDOUT",
    "view through EXPLAIN ANALYZE": "EXPLAIN ANALYZE SELECT * FROM v_report",
    "view through a cursor": "DECLARE c CURSOR FOR SELECT * FROM v_report; FETCH ALL FROM c",
    "view into CREATE TABLE AS": "CREATE TABLE snapshot AS SELECT * FROM v_report",
    "column DEFAULT": "INSERT INTO titled (id, title) VALUES (1, 'a')",
    "table CHECK": "INSERT INTO checked (id) VALUES (1)",
    "domain CHECK": "SELECT 5::checked_int",
    "user operator": "SELECT 1 === 2",
    "search_path shadowing a built-in": "SELECT initcap(name) FROM people",
}


@pytest.fixture
def pg_server():
    """(conninfo, the agent's connection) of a fresh database holding ``_PG_SCHEMA``."""
    with postgres_database() as (dsn, psycopg):
        conn = psycopg.connect(dsn, autocommit=True)
        try:
            conn.execute(_PG_SCHEMA)
            conn.execute("SET search_path = shadow, public")  # the CVE-2018-1058 order: a user schema first
            yield dsn, conn
        finally:
            conn.close()


@pytest.fixture
def pg(pg_server):
    return pg_server[1]


def _pg_keep(conn: Any) -> int:
    return conn.execute("SELECT count(*) FROM public.keep").fetchone()[0]


@pytest.mark.parametrize("case", sorted(_PG_HIDDEN))
def test_postgres_hidden_delete_does_not_change_the_database(pg, tmp_path, case):
    sql = _PG_HIDDEN[case]
    # it really deletes: run directly in a transaction, counted, rolled back
    pg.execute("BEGIN")
    try:
        cursor = pg.cursor()
        if sql.startswith("COPY"):
            with cursor.copy(sql) as copy:
                b"".join(bytes(chunk) for chunk in copy)
        else:
            for part in sql.split("; "):
                cursor.execute(part)
        assert _pg_keep(pg) == 0, f"{case}: the schema should delete the rows"
    finally:
        pg.execute("ROLLBACK")
    assert _pg_keep(pg) == 10
    kernel = kernel_for("postgres", tmp_path)
    refused = refused_by_database(SQLEnvelope(kernel, pg), sql)
    assert _pg_keep(pg) == 10
    reason = refused.decision.reason
    assert "read-only transaction" in reason or "rows deleted from keep (DELETE denied)" in reason, reason
    assert pg.execute("SELECT to_regclass('public.snapshot')").fetchone()[0] is None
    assert len(blocked_records(kernel)) == 1


def test_postgres_opted_in_function_that_truncates_is_still_refused(pg, tmp_path):
    kernel = kernel_for("postgres", tmp_path, allow_functions=["wipe_keep"])
    refused_by_database(SQLEnvelope(kernel, pg), "SELECT wipe_keep()")
    assert _pg_keep(pg) == 10


def test_postgres_hidden_truncate_in_a_write_is_seen_in_the_catalog(pg, tmp_path):
    pg.execute("CREATE TABLE stamped (id int, stamp int DEFAULT wipe_keep())")
    kernel = kernel_for("postgres", tmp_path)
    refused = refused_by_database(SQLEnvelope(kernel, pg), "INSERT INTO stamped (id) VALUES (1)")
    assert "new relfilenode (TRUNCATE denied)" in refused.decision.reason
    assert _pg_keep(pg) == 10 and pg.execute("SELECT count(*) FROM stamped").fetchone()[0] == 0


def test_postgres_allowed_reads_and_writes_run_and_commit(pg, tmp_path):
    envelope = SQLEnvelope(kernel_for("postgres", tmp_path), pg)
    result = envelope.execute("SELECT name FROM people ORDER BY id")
    assert result.read_only and result.rows == (("ada lovelace",),) and result.columns == ("name",)
    result = envelope.execute("INSERT INTO people VALUES (2, 'grace hopper'); UPDATE people SET id = 3 WHERE id = 2")
    assert not result.read_only and result.rows_changed == 2
    assert pg.execute("SELECT count(*) FROM people WHERE id = 3").fetchone()[0] == 1
    copied = envelope.execute("COPY (SELECT id FROM people ORDER BY id) TO STDOUT")
    assert copied.rows == (("1",), ("3",))
    assert pg.info.transaction_status == 0  # idle: no transaction left open


def test_postgres_needs_an_autocommit_connection(tmp_path):
    with postgres_database() as (dsn, psycopg):
        with psycopg.connect(dsn) as conn:
            with pytest.raises(GovernanceConfigError, match="autocommit"):
                SQLEnvelope(kernel_for("postgres", tmp_path), conn)


# ---------------------------------------------------------------------------------------- MariaDB
@pytest.fixture
def maria():
    with mariadb_database() as (socket, pymysql, name):
        conn = pymysql.connect(unix_socket=socket, user="root", database=name, autocommit=True)
        try:
            with conn.cursor() as cursor:
                for statement in (
                    "CREATE TABLE keep (id int) ENGINE=InnoDB",
                    "INSERT INTO keep VALUES (1), (2), (3), (4), (5)",
                    "CREATE TABLE people (id int, name varchar(40)) ENGINE=InnoDB",
                    "INSERT INTO people VALUES (1, 'ada')",
                    "CREATE FUNCTION purge_keep() RETURNS int MODIFIES SQL DATA BEGIN DELETE FROM keep; RETURN 1; END",
                    "CREATE VIEW v_report AS SELECT purge_keep() AS p",
                    "CREATE TABLE orders (id int) ENGINE=InnoDB",
                    "CREATE TRIGGER wipe AFTER INSERT ON orders FOR EACH ROW DELETE FROM keep",
                ):
                    cursor.execute(statement)
            yield conn
        finally:
            conn.close()


def _maria_keep(conn: Any) -> int:
    with conn.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM keep")
        return cursor.fetchone()[0]


_MARIA_HIDDEN = {
    "view": "SELECT * FROM v_report",
    "view in a CTE": "WITH r AS (SELECT * FROM v_report) SELECT * FROM r",
    "view in a subquery": "SELECT * FROM (SELECT p FROM v_report) AS s",
    "view in a JOIN": "SELECT people.name FROM people JOIN v_report ON true",
    "trigger on an allowed INSERT": "INSERT INTO orders VALUES (1)",
}


@pytest.mark.parametrize("case", sorted(_MARIA_HIDDEN))
def test_mariadb_hidden_delete_does_not_change_the_database(maria, tmp_path, case):
    sql = _MARIA_HIDDEN[case]
    with maria.cursor() as cursor:
        cursor.execute("START TRANSACTION")
        cursor.execute(sql)
        assert _maria_keep(maria) == 0, f"{case}: the schema should delete the rows"
        cursor.execute("ROLLBACK")
    assert _maria_keep(maria) == 5
    kernel = kernel_for("mysql", tmp_path)
    refused = refused_by_database(SQLEnvelope(kernel, maria), sql)
    reason = refused.decision.reason
    assert "READ ONLY transaction" in reason or "rows deleted (DELETE denied)" in reason, reason
    assert _maria_keep(maria) == 5
    assert len(blocked_records(kernel)) == 1


def test_mariadb_allowed_reads_and_writes_run_and_commit(maria, tmp_path):
    envelope = SQLEnvelope(kernel_for("mysql", tmp_path), maria)
    assert envelope.execute("SELECT name FROM people").rows == (("ada",),)
    result = envelope.execute("INSERT INTO people VALUES (2, 'grace')")
    assert not result.read_only and result.rows_changed == 1
    with maria.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM people")
        assert cursor.fetchone()[0] == 2


def test_mariadb_ddl_commits_at_once_and_the_refusal_says_so(maria, tmp_path):
    # A procedure the user opted in that deletes, then runs DDL: MariaDB commits before the DDL,
    # so the envelope sees the deletion but cannot undo it. The refusal says so; it is the limit
    # docs/kernel.md states (the static check is the only line for MariaDB's DDL).
    with maria.cursor() as cursor:
        cursor.execute("CREATE PROCEDURE tidy() BEGIN DELETE FROM keep; CREATE TABLE tidied (id int); END")
    kernel = kernel_for("mysql", tmp_path, allow_functions=["tidy"])
    refused = refused_by_database(SQLEnvelope(kernel, maria), "CALL tidy()")
    assert "5 rows deleted (DELETE denied)" in refused.decision.reason
    assert "NOT undone: an implicit commit (DDL)" in refused.decision.reason
    assert _maria_keep(maria) == 0


# ---------------------------------------------------------------------------------------- database= mode, SQLite
def test_schema_aware_sqlite_counts_an_fts_command_insert_as_delete(lite, tmp_path):
    lite.executescript(
        "CREATE VIRTUAL TABLE ft USING fts5(body, content='');"
        "INSERT INTO ft(rowid, body) VALUES (1, 'red lamp'), (2, 'blue mug');"
    )
    aware = SQLPolicy(deny=DENY, dialect="sqlite", database=lite)
    found = aware.check_sql("INSERT INTO ft(ft) VALUES ('delete-all')")
    assert found and "DELETE statement denied (an INSERT naming a full-text table's own column" in found[0].description
    assert aware.check_sql("INSERT INTO ft(ft, rank) SELECT 'delete-all', 1")  # a command it cannot read
    assert not aware.check_sql("INSERT INTO ft(ft) VALUES ('optimize')")
    assert not aware.check_sql("INSERT INTO ft(rowid, body) VALUES (3, 'green box')")
    # what the guard let through runs, and the documents are still there (counted after)
    lite.execute("INSERT INTO ft(ft) VALUES ('optimize')")
    lite.execute("INSERT INTO ft(rowid, body) VALUES (3, 'green box')")
    assert len(lite.execute("SELECT rowid FROM ft WHERE ft MATCH 'lamp OR mug OR box'").fetchall()) == 3


def test_schema_aware_sqlite_reads_attached_files_and_refuses_attach_in_the_text(lite, other_db):
    aware = SQLPolicy(deny=DENY, dialect="sqlite", database=lite)
    found = aware.check_sql(f"ATTACH '{other_db}' AS o; INSERT INTO o.t VALUES (1)")
    assert found and "statement ATTACH (the attached file's triggers" in found[0].description
    trusting = SQLPolicy(deny=DENY, dialect="sqlite", database=lite, allow_statements=["ATTACH"])
    assert not trusting.check_sql(f"ATTACH '{other_db}' AS o")
    # a file the connection has attached is read: its trigger counts
    lite.execute(f"ATTACH '{other_db}' AS o")
    found = aware.check_sql("INSERT INTO o.t VALUES (1)")
    assert found and "DELETE statement denied (trigger wipe on t" in found[0].description
    assert lite.execute("SELECT count(*) FROM o.precious").fetchone()[0] == 2


def assert_schema_aware_blocks(
    guard: Any, dialect: str, sql: str, never_ran: Callable[[], bool], harmless: List[str]
) -> None:
    """A kernel whose SQL policy reads the schema through ``guard`` (closed after) blocks ``sql`` as a
    DELETE (it never ran: ``never_ran()``) and allows the ``harmless`` statements."""
    try:
        kernel = GovernanceKernel([SQLPolicy(deny=DENY, dialect=dialect, database=guard)])
        decision = kernel.check("database_query", {"query": sql})
        assert decision.blocked, sql
        assert "DELETE statement denied (" in decision.reason, decision.reason
        assert never_ran()
        for statement in harmless:
            assert kernel.check("database_query", {"query": statement}).allowed, statement
    finally:
        guard.close()


# ---------------------------------------------------------------------------------------- database= mode, PostgreSQL
@pytest.mark.parametrize("case", sorted(_PG_HIDDEN))
def test_schema_aware_postgres_resolves_what_the_statement_reaches(pg_server, case):
    dsn, pg = pg_server
    harmless = ["SELECT name FROM people", "INSERT INTO people VALUES (5, 'x')"]
    guard = type(pg).connect(dsn, autocommit=True)
    assert_schema_aware_blocks(guard, "postgres", _PG_HIDDEN[case], lambda: _pg_keep(pg) == 10, harmless)


def test_schema_aware_postgres_sees_a_default_added_after_the_catalog_was_read(pg_server):
    dsn, pg = pg_server
    guard = type(pg).connect(dsn, autocommit=True)
    try:
        aware = SQLPolicy(deny=DENY, dialect="postgres", database=guard)
        assert not aware.check_sql("INSERT INTO people (name) VALUES ('x')")
        pg.execute("ALTER TABLE people ALTER COLUMN id SET DEFAULT purge_keep()")
        found = aware.check_sql("INSERT INTO people (name) VALUES ('x')")
        assert found and "a column DEFAULT of people calls purge_keep()" in found[0].description
    finally:
        guard.close()


# ---------------------------------------------------------------------------------------- database= mode, MariaDB
@pytest.mark.parametrize("case", sorted(c for c in _MARIA_HIDDEN if c.startswith("view")))  # triggers: already
def test_schema_aware_mariadb_resolves_what_the_statement_reaches(maria, case):
    guard = type(maria)(unix_socket=maria.unix_socket, user="root", database=maria.db.decode(), autocommit=True)
    assert_schema_aware_blocks(
        guard, "mysql", _MARIA_HIDDEN[case], lambda: _maria_keep(maria) == 5, ["SELECT name FROM people"]
    )


def test_postgres_connection_with_an_open_transaction_is_refused(pg, tmp_path):
    envelope = SQLEnvelope(kernel_for("postgres", tmp_path), pg)
    pg.execute("BEGIN")  # BEGIN inside it would only warn, and the read would run read-write
    try:
        with pytest.raises(GovernanceConfigError, match="has a transaction open"):
            envelope.execute("SELECT * FROM v_report")
        assert _pg_keep(pg) == 10
    finally:
        pg.execute("ROLLBACK")


def test_schema_aware_postgres_judges_built_ins_the_schema_calls_as_the_text_would(pg_server):
    # serial columns (DEFAULT nextval(...)), a timestamp default, a view of now(): everyday schemas
    dsn, pg = pg_server
    pg.execute(
        "CREATE TABLE events (id serial PRIMARY KEY, at timestamptz DEFAULT clock_timestamp(), note text);"
        "CREATE VIEW recent AS SELECT id, now() - at AS age FROM events"
    )
    guard = type(pg).connect(dsn, autocommit=True)
    try:
        aware = SQLPolicy(deny=DENY, dialect="postgres", database=guard)
        assert aware.check_sql("INSERT INTO events (note) VALUES ('x')") == []
        assert aware.check_sql("SELECT * FROM recent") == []
    finally:
        guard.close()


def test_schema_aware_postgres_sees_a_volatile_built_in_in_a_view_default_or_check(pg_server):
    dsn, pg = pg_server
    pg.execute(
        "CREATE VIEW unlinking AS SELECT lo_unlink(0) AS gone;"
        "CREATE TABLE stamped2 (id int, gone int DEFAULT lo_unlink(0));"
        "CREATE TABLE checked2 (id int CHECK (lo_unlink(id) IS NOT NULL))"
    )
    guard = type(pg).connect(dsn, autocommit=True)
    try:
        aware = SQLPolicy(deny=DENY, dialect="postgres", database=guard)
        for sql in (
            "SELECT * FROM unlinking",
            "INSERT INTO stamped2 (id) VALUES (1)",
            "INSERT INTO checked2 VALUES (1)",
        ):
            found = aware.check_sql(sql)
            assert found and "lo_unlink()" in found[0].description, sql
    finally:
        guard.close()
