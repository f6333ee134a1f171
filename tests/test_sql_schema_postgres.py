"""The schema-aware mode on a real PostgreSQL server.

Each test makes its own database, shows by running the statement there that it really destroys
rows through what the database runs (a trigger, a rule, a cascade, a procedure's body, a
volatile built-in), and that ``SQLPolicy(deny=[...], database=<the guard's connection>)``
blocks it while the text alone is allowed, and while a harmless statement stays allowed.
"""

from __future__ import annotations

import uuid
from typing import Any, Dict, List, NamedTuple, Tuple

import pytest

from agentlightning.contrib.kernel.agentos import Action, GovernanceConfigError, GovernanceKernel, SQLPolicy

from .sql_schema_servers import postgres_database


@pytest.fixture
def pg():
    with postgres_database() as (dsn, psycopg):
        agent = psycopg.connect(dsn, autocommit=True)
        guard = psycopg.connect(dsn, autocommit=True)
        try:
            yield _Server(dsn, psycopg, agent, guard)
        finally:
            guard.close()
            agent.close()


class _Server:
    def __init__(self, dsn: str, psycopg: Any, agent: Any, guard: Any) -> None:
        self.dsn, self.psycopg, self.agent, self.guard = dsn, psycopg, agent, guard

    def run(self, sql: str) -> None:
        self.agent.execute(sql)

    def count(self, table: str, where: str = "true") -> int:
        return self.agent.execute(f"SELECT count(*) FROM {table} WHERE {where}").fetchone()[0]

    def aware(self, deny: List[str], **kwargs: Any) -> SQLPolicy:
        return SQLPolicy(deny=deny, dialect="postgres", database=self.guard, **kwargs)


def _blocked(policy: SQLPolicy, sql: str) -> str:
    found = policy.check_sql(sql)
    assert found, f"expected {sql!r} to be blocked"
    return found[0].description


TEXT_ONLY = SQLPolicy(deny=["DELETE"], dialect="postgres")


def purge_audit_on(**triggers: str) -> str:
    """The SQL that creates ``purge_audit()``, a trigger function that empties the audit table, and a
    trigger of it for each ``name="AFTER UPDATE ON orders"``."""
    return (
        "CREATE FUNCTION purge_audit() RETURNS trigger LANGUAGE plpgsql AS $$"
        " BEGIN DELETE FROM audit; RETURN NEW; END $$;"
    ) + ";".join(
        f"CREATE TRIGGER {name} {event} FOR EACH ROW EXECUTE FUNCTION purge_audit()" for name, event in triggers.items()
    )


class Hidden(NamedTuple):
    """A database where a statement deletes rows through what the database runs, not its text."""

    setup: str
    #: statement -> (what the decision says, why it is blocked); the first is run at the end
    blocked: Dict[str, Tuple[str, str]]
    #: statement -> why the same guard leaves it allowed
    harmless: Dict[str, str]
    #: the table the first blocked statement really empties when run
    emptied: str


HIDDEN_DELETES = {
    "an UPDATE firing a deleting trigger": Hidden(
        "CREATE TABLE orders (id int PRIMARY KEY, total int); CREATE TABLE audit (id int);"
        "CREATE TABLE customers (id int PRIMARY KEY, name text);"
        "INSERT INTO orders VALUES (1, 10); INSERT INTO audit SELECT generate_series(1, 5);"
        "INSERT INTO customers VALUES (1, 'a');" + purge_audit_on(purge="AFTER UPDATE ON orders"),
        blocked={
            "UPDATE orders SET total = 11 WHERE id = 1": (
                "DELETE statement denied (trigger purge on orders runs it",
                "the trigger empties audit",
            )
        },
        harmless={
            "UPDATE customers SET name = 'b' WHERE id = 1": "no trigger there",
            "INSERT INTO orders VALUES (2, 1)": "the trigger fires on UPDATE only",
        },
        emptied="audit",
    ),
    "a rule that deletes instead of an UPDATE": Hidden(
        "CREATE TABLE notes (id int PRIMARY KEY, body text); CREATE TABLE drafts (id int PRIMARY KEY, body text);"
        "INSERT INTO notes SELECT g, 'n' FROM generate_series(1, 4) g; INSERT INTO drafts VALUES (1, 'd');"
        "CREATE RULE wipe AS ON UPDATE TO notes DO INSTEAD DELETE FROM notes",
        blocked={
            "UPDATE notes SET body = 'x' WHERE id = 1": (
                "DELETE statement denied (rule wipe on notes runs it",
                "the rule's action replaces the UPDATE: every note is gone",
            )
        },
        harmless={"UPDATE drafts SET body = 'e' WHERE id = 1": "no rule there"},
        emptied="notes",
    ),
    "writes whose table is not named count as every table": Hidden(
        "CREATE TABLE orders (id int PRIMARY KEY); CREATE TABLE audit (id int); INSERT INTO audit VALUES (1);"
        "CREATE TABLE plain (id int);" + purge_audit_on(purge="AFTER INSERT ON orders"),
        blocked={
            "MERGE INTO orders o USING (VALUES (1)) v(id) ON o.id = v.id WHEN NOT MATCHED THEN INSERT VALUES (v.id)": (
                "trigger purge on orders",
                "MERGE's target is not among the reader's writes",
            ),
            "COPY plain FROM STDIN": ("trigger purge on orders", "COPY's neither: every table"),
        },
        harmless={"INSERT INTO plain VALUES (1)": "a named table without trigger"},
        emptied="audit",
    ),
    "an event trigger runs on statements that define objects": Hidden(
        "CREATE TABLE audit (id int); INSERT INTO audit VALUES (1), (2);"
        "CREATE FUNCTION purge_on_ddl() RETURNS event_trigger LANGUAGE plpgsql AS $$"
        " BEGIN DELETE FROM audit; END $$;"
        "CREATE EVENT TRIGGER purge_ddl ON ddl_command_end EXECUTE FUNCTION purge_on_ddl()",
        blocked={
            "CREATE TABLE scratch (a int)": (
                "event trigger purge_ddl (ddl_command_end) runs it",
                "a definition fires the event trigger",
            )
        },
        harmless={"UPDATE audit SET id = 3 WHERE id = 1": "rows are not definitions"},
        emptied="audit",
    ),
    "writes through views and partitions reach the tables below": Hidden(
        "CREATE TABLE audit (id int); INSERT INTO audit VALUES (1);"
        "CREATE TABLE items (id int PRIMARY KEY, qty int); INSERT INTO items VALUES (1, 1);"
        "CREATE VIEW items_v AS SELECT id, qty FROM items;"
        "CREATE TABLE events (at date, n int) PARTITION BY RANGE (at);"
        "CREATE TABLE events_2026 PARTITION OF events FOR VALUES FROM ('2026-01-01') TO ('2027-01-01');"
        "INSERT INTO events VALUES ('2026-05-01', 1);"
        + purge_audit_on(purge_items="AFTER UPDATE ON items", purge_events="AFTER UPDATE ON events_2026"),
        blocked={
            "UPDATE items_v SET qty = 2": ("trigger purge_items on items", "the view's table has the trigger"),
            "UPDATE events SET n = 2": ("trigger purge_events on events_2026", "the partition has the trigger"),
        },
        harmless={},
        emptied="audit",
    ),
}


@pytest.mark.parametrize("case", HIDDEN_DELETES)
def test_what_the_database_runs_counts_and_really_deletes(pg, case):
    hidden = HIDDEN_DELETES[case]
    pg.run(hidden.setup)
    aware = pg.aware(["DELETE"])
    for statement, (reason, why) in hidden.blocked.items():
        assert TEXT_ONLY.check_sql(statement) == [], f"the text alone is allowed: {statement}"
        assert reason in _blocked(aware, statement), why
    for statement, why in hidden.harmless.items():
        assert aware.check_sql(statement) == [], why
    pg.run(next(iter(hidden.blocked)))  # what the guard blocked really deletes
    assert pg.count(hidden.emptied) == 0


def test_catalog_is_read_again_after_create_trigger(pg):
    pg.run(
        "CREATE TABLE orders (id int PRIMARY KEY, total int); CREATE TABLE audit (id int);"
        "INSERT INTO orders VALUES (1, 10); INSERT INTO audit VALUES (1)"
    )
    update = "UPDATE orders SET total = 11 WHERE id = 1"
    aware = pg.aware(["DELETE"])
    assert aware.check_sql(update) == [], "no trigger yet"
    pg.run(purge_audit_on(purge="BEFORE UPDATE ON orders"))
    assert "trigger purge on orders" in _blocked(aware, update), "the new trigger is seen on the next check"
    pg.run("ALTER TABLE orders DISABLE TRIGGER purge")
    assert aware.check_sql(update) == [], "a disabled trigger does not fire"
    pg.run("ALTER TABLE orders ENABLE TRIGGER purge; DROP TRIGGER purge ON orders")
    assert aware.check_sql(update) == [], "and a dropped one is gone"


def test_foreign_key_cascades_are_visible_in_the_decision(pg):
    pg.run(
        "CREATE TABLE users (id int PRIMARY KEY);"
        "CREATE TABLE orders (id int PRIMARY KEY, user_id int REFERENCES users ON DELETE CASCADE);"
        "CREATE TABLE tickets (id int PRIMARY KEY, user_id int REFERENCES users ON DELETE SET NULL);"
        "CREATE TABLE lonely (id int PRIMARY KEY);"
        "INSERT INTO users VALUES (1), (2); INSERT INTO orders VALUES (1, 1), (2, 1), (3, 2);"
        "INSERT INTO tickets VALUES (1, 1); INSERT INTO lonely VALUES (1)"
    )
    delete = "DELETE FROM users WHERE id = 1"
    description = _blocked(pg.aware(["DELETE"]), delete)
    assert "foreign key orders_user_id_fkey of orders (ON DELETE CASCADE) deletes the referencing rows" in description
    # A deny list without DELETE still sees the cascade's UPDATE of another table.
    no_update = pg.aware(["UPDATE"])
    assert SQLPolicy(deny=["UPDATE"], dialect="postgres").check_sql(delete) == []
    assert "tickets_user_id_fkey of tickets (ON DELETE SET NULL) updates the referencing rows" in _blocked(
        no_update, delete
    )
    assert no_update.check_sql("DELETE FROM lonely WHERE id = 1") == [], "nothing references lonely"

    pg.run(delete)  # the DELETE of one user really removes two orders and clears a ticket
    assert pg.count("orders") == 1 and pg.count("tickets", "user_id IS NULL") == 1


def test_call_is_judged_by_the_procedure_body(pg):
    pg.run(
        "CREATE TABLE orders (id int PRIMARY KEY); CREATE TABLE log (msg text);"
        "INSERT INTO orders SELECT generate_series(1, 3);"
        "CREATE PROCEDURE archive_old_rows() LANGUAGE sql AS $$ DELETE FROM orders $$;"
        "CREATE PROCEDURE note(m text) LANGUAGE plpgsql AS $$ BEGIN INSERT INTO log VALUES (m); END $$"
    )
    call = "CALL archive_old_rows()"
    assert "unknown effect" in TEXT_ONLY.check_sql(call)[0].description, "without database= CALL fails closed"
    aware = pg.aware(["DELETE"])
    assert "DELETE statement denied (routine archive_old_rows's body runs it)" in _blocked(aware, call)
    assert aware.check_sql("CALL note('hello')") == [], "a procedure that only inserts is placed by its body"
    assert "unknown effect" in _blocked(aware, "CALL no_such_procedure()"), "one the database lacks stays unknown"

    pg.run(call)
    assert pg.count("orders") == 0


def test_functions_in_select_judged_by_body_or_volatility(pg):
    pg.run(
        "CREATE TABLE orders (id int PRIMARY KEY); INSERT INTO orders SELECT generate_series(1, 3);"
        "CREATE FUNCTION purge() RETURNS int LANGUAGE sql AS $$ DELETE FROM orders RETURNING 1 $$;"
        "CREATE FUNCTION dynamic(t text) RETURNS void LANGUAGE plpgsql AS $$ BEGIN EXECUTE 'DELETE FROM ' || t; END $$;"
        "CREATE FUNCTION total() RETURNS bigint LANGUAGE sql STABLE AS $$ SELECT count(*) FROM orders $$"
    )
    aware = pg.aware(["DELETE"])
    assert "routine purge's body runs it" in _blocked(aware, "SELECT purge()")
    assert aware.check_sql("SELECT total()") == [], "a body that only reads is placed"
    assert "dynamic() (its body cannot be checked: PL/pgSQL EXECUTE" in _blocked(aware, "SELECT dynamic('orders')")
    assert pg.aware(["DELETE"], allow_functions=["dynamic"]).check_sql("SELECT dynamic('orders')") == []

    # Built-ins whose bodies are C: judged by pg_proc.provolatile.
    oid = pg.agent.execute("SELECT lo_create(0)").fetchone()[0]
    unlink = f"SELECT lo_unlink({oid})"
    assert "lo_unlink() (LANGUAGE internal, VOLATILE in pg_proc" in _blocked(aware, unlink)
    # STABLE in pg_proc: placed with the database, and from the text too (the generated table is pg_proc's).
    assert TEXT_ONLY.check_sql("SELECT pg_get_userbyid(10)") == []
    assert aware.check_sql("SELECT pg_get_userbyid(10)") == [], "STABLE in pg_proc: placed"
    pg.run(unlink)  # the volatile built-in really deletes the large object
    assert pg.count("pg_largeobject_metadata", f"oid = {oid}") == 0

    pg.run("SELECT purge()")
    assert pg.count("orders") == 0


def test_trigger_whose_function_cannot_be_read_is_unknown_unless_allowed(pg):
    pg.run(
        "CREATE TABLE t (id int, v text); INSERT INTO t VALUES (1, 'a');"
        "CREATE TRIGGER skip_same BEFORE UPDATE ON t FOR EACH ROW EXECUTE FUNCTION suppress_redundant_updates_trigger()"
    )
    update = "UPDATE t SET v = 'b'"
    description = _blocked(pg.aware(["DELETE"]), update)
    assert "suppress_redundant_updates_trigger() (LANGUAGE internal, VOLATILE in pg_proc" in description
    assert pg.aware(["DELETE"], allow_functions=["suppress_redundant_updates_trigger"]).check_sql(update) == []


def test_catalog_that_cannot_be_read_blocks(pg, tmp_path):
    pg.run("CREATE TABLE t (id int); INSERT INTO t VALUES (1)")
    aware = pg.aware(["DELETE"])
    assert aware.check_sql("UPDATE t SET id = 2") == []

    # Permission denied: a role that may not read pg_trigger.
    role = f"agentos_no_catalog_{uuid.uuid4().hex[:10]}"
    pg.run(f"CREATE ROLE {role}; REVOKE SELECT ON pg_catalog.pg_trigger FROM PUBLIC")
    try:
        limited = pg.psycopg.connect(pg.dsn, autocommit=True)
        limited.execute(f"SET ROLE {role}")
        description = _blocked(SQLPolicy(deny=["DELETE"], dialect="postgres", database=limited), "UPDATE t SET id = 2")
        assert "cannot read the PostgreSQL database's catalog (InsufficientPrivilege" in description
        assert "permission denied" in description
        limited.close()
    finally:
        pg.run(f"GRANT SELECT ON pg_catalog.pg_trigger TO PUBLIC; DROP ROLE {role}")

    # The connection dies (its server process is terminated): blocked, every time, until it works.
    pid = pg.guard.execute("SELECT pg_backend_pid()").fetchone()[0]
    pg.run(f"SELECT pg_terminate_backend({pid})")
    for _ in range(2):
        assert "cannot read the PostgreSQL database's catalog" in _blocked(aware, "UPDATE t SET id = 2")
    assert aware.check_sql("SELECT 1") == [], "a read that sets nothing off does not need the catalog"
    kernel = GovernanceKernel([aware], recorder=tmp_path / "audit.db")
    try:  # through the kernel: blocked, and the reason is in the audit trail
        assert kernel.check(Action.sql("UPDATE t SET id = 2")).blocked
        (row,) = kernel.audit.records()
        assert row["policy_verdict"] == "blocked" and "cannot read the PostgreSQL" in row["violation_reason"]
    finally:
        kernel.close()

    # Given a factory, the guard reconnects on the next check and recovers.
    made = []

    def connect():
        made.append(pg.psycopg.connect(pg.dsn, autocommit=True))
        return made[-1]

    recovering = SQLPolicy(deny=["DELETE"], dialect="postgres", database=connect)
    assert recovering.check_sql("UPDATE t SET id = 2") == []
    pg.run(f"SELECT pg_terminate_backend({made[-1].info.backend_pid})")
    assert "cannot read" in _blocked(recovering, "UPDATE t SET id = 2")
    assert recovering.check_sql("UPDATE t SET id = 2") == [] and len(made) == 2
    made[-1].close()


def test_the_guard_wants_its_own_autocommit_connection(pg):
    in_transaction = pg.psycopg.connect(pg.dsn)
    try:
        with pytest.raises(GovernanceConfigError, match="autocommit"):
            SQLPolicy(deny=["DELETE"], dialect="postgres", database=in_transaction)
        with pytest.raises(GovernanceConfigError, match="dialect='mysql'"):
            SQLPolicy(deny=["DELETE"], dialect="mysql", database=pg.guard)
    finally:
        in_transaction.close()


# ----------------------------------------------------------------- row-level security and user casts
_KEEP_AND_PURGE = (
    "CREATE TABLE keep (id int); INSERT INTO keep SELECT generate_series(1, 10);"
    "CREATE FUNCTION purge_keep() RETURNS boolean LANGUAGE plpgsql VOLATILE AS $$"
    " BEGIN DELETE FROM keep; RETURN true; END $$;"
)


@pytest.fixture
def agent_role(pg):
    """A role that is not a superuser (superusers bypass row-level security), dropped after."""
    role = f"agentos_agent_{uuid.uuid4().hex[:10]}"
    pg.run(f"CREATE ROLE {role} NOLOGIN")
    try:
        yield role
    finally:
        pg.run("RESET ROLE")
        pg.run(f"DROP OWNED BY {role}; DROP ROLE {role}")


def _deletes_when_run(pg: Any, sql: str, role: str = "") -> None:
    """``sql`` really empties ``keep`` when run (in a transaction, rolled back)."""
    pg.run("BEGIN")
    try:
        if role:
            pg.run(f"SET LOCAL ROLE {role}")
        pg.run(sql)
        pg.run("RESET ROLE")
        assert pg.count("keep") == 0, f"{sql}: the schema should delete the rows"
    finally:
        pg.run("ROLLBACK")
    assert pg.count("keep") == 10


@pytest.mark.parametrize(
    "policy, sql",
    [
        ("FOR SELECT USING (purge_keep())", "SELECT * FROM notes"),
        ("USING (purge_keep())", "SELECT count(*) FROM notes WHERE id > 0"),
        ("FOR INSERT WITH CHECK (purge_keep())", "INSERT INTO notes VALUES (2, 'b')"),
        ("FOR UPDATE USING (purge_keep())", "UPDATE notes SET body = 'c'"),
    ],
)
def test_a_row_level_security_policy_runs_for_statements_on_its_table(pg, agent_role, policy, sql):
    pg.run(
        _KEEP_AND_PURGE + "CREATE TABLE notes (id int, body text); INSERT INTO notes VALUES (1, 'a');"
        "CREATE TABLE plain (id int);"
        f"ALTER TABLE notes ENABLE ROW LEVEL SECURITY; CREATE POLICY p ON notes {policy};"
        f"GRANT ALL ON notes, keep, plain TO {agent_role}"
    )
    _deletes_when_run(pg, sql, role=agent_role)
    assert not TEXT_ONLY.check_sql(sql)
    reason = _blocked(pg.aware(["DELETE"]), sql)
    assert "a row-level security policy on notes" in reason, reason
    assert not pg.aware(["DELETE"]).check_sql("SELECT * FROM plain")


@pytest.mark.parametrize(
    "context, sql, harmless",
    [
        ("", "SELECT 5::mood", "SELECT 'ok'::mood, 5::text"),
        ("", "SELECT CAST(id AS mood) FROM keep LIMIT 1", "SELECT CAST(id AS text) FROM keep"),
        ("AS ASSIGNMENT", "INSERT INTO feelings (m) VALUES (5)", "SELECT 5::text"),
        # where an implicit cast applies the text does not show: it counts for every statement
        ("AS IMPLICIT", "SELECT mood_name(5)", None),
    ],
)
def test_a_user_defined_cast_runs_its_function(pg, context, sql, harmless):
    pg.run(
        _KEEP_AND_PURGE + "CREATE TYPE mood AS ENUM ('ok');"
        "CREATE FUNCTION to_mood(int) RETURNS mood LANGUAGE plpgsql VOLATILE AS $$"
        " BEGIN DELETE FROM keep; RETURN 'ok'; END $$;"
        f"CREATE CAST (int AS mood) WITH FUNCTION to_mood(int) {context};"
        "CREATE TABLE feelings (m mood);"
        "CREATE FUNCTION mood_name(mood) RETURNS text LANGUAGE sql IMMUTABLE AS 'SELECT $1::text'"
    )
    _deletes_when_run(pg, sql)
    assert not TEXT_ONLY.check_sql(sql.replace("mood_name", "lower"))  # the text alone shows no DELETE
    reason = _blocked(pg.aware(["DELETE"]), sql)
    assert "cast" in reason and "to_mood()" in reason, reason
    if harmless is not None:
        assert not pg.aware(["DELETE"]).check_sql(harmless)


# ----------------------------------------------------------------- operators the text does not name
_SHADOW_COMPARISONS = "".join(
    f"CREATE FUNCTION shadow.{name}(int, int) RETURNS boolean LANGUAGE plpgsql VOLATILE AS $$"
    f" BEGIN DELETE FROM public.keep; RETURN $1 OPERATOR(pg_catalog.{op}) $2; END $$;"
    f"CREATE OPERATOR shadow.{op} (LEFTARG = int, RIGHTARG = int, FUNCTION = shadow.{name});"
    for name, op in (("eq", "="), ("lt", "<"), ("le", "<="), ("gt", ">"), ("ge", ">="))
)


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT * FROM people WHERE id BETWEEN 0 AND 5",
        "SELECT * FROM people WHERE id NOT BETWEEN 5 AND 9",
        "SELECT * FROM people WHERE id BETWEEN SYMMETRIC 5 AND 0",
        "SELECT * FROM people WHERE id IN (SELECT 1)",
        "SELECT CASE id WHEN 1 THEN 'one' END FROM people",
        "SELECT * FROM people JOIN people AS p2 USING (id)",
        "SELECT * FROM people NATURAL JOIN people AS p2",
    ],
)
def test_an_operator_the_text_does_not_name_is_looked_up(pg, sql):
    """BETWEEN is read as >= and <=, IN (subquery), CASE x WHEN and JOIN USING as =: PostgreSQL
    looks those operators up on the search_path like any other (CVE-2018-1058's pattern)."""
    pg.run(
        _KEEP_AND_PURGE + "CREATE TABLE people (id int, name text); INSERT INTO people VALUES (1, 'ada');"
        "CREATE SCHEMA shadow;" + _SHADOW_COMPARISONS
    )
    pg.run("SET search_path = shadow, pg_catalog, public")
    _deletes_when_run(pg, sql)
    pg.run("RESET search_path")
    assert not TEXT_ONLY.check_sql(sql)
    reason = _blocked(pg.aware(["DELETE"]), sql)
    assert "operator shadow." in reason, reason
    assert not pg.aware(["DELETE"]).check_sql("SELECT name FROM people WHERE name LIKE 'a%'")


# ----------------------------------------------------------------- overloads shadowing a built-in
_SHADOW_OVERLOADS = (
    "CREATE SCHEMA shadow;"
    "CREATE FUNCTION shadow.initcap(varchar) RETURNS text LANGUAGE plpgsql VOLATILE AS $$"
    " BEGIN DELETE FROM public.keep; RETURN $1::text; END $$;"
    "CREATE FUNCTION shadow.lower(text, int) RETURNS text LANGUAGE plpgsql VOLATILE AS $$"
    " BEGIN DELETE FROM public.keep; RETURN $1; END $$;"
)


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT initcap('ada'::varchar)",  # exactly shadow.initcap's argument type
        "SELECT initcap(name) FROM people",  # a varchar column: the guard does not know its type
        "SELECT lower(name, 2) FROM people",  # only shadow.lower takes two arguments
    ],
)
def test_a_user_overload_that_the_arguments_can_reach_counts(pg, sql):
    pg.run(_KEEP_AND_PURGE + "CREATE TABLE people (id int, name varchar(40)); INSERT INTO people VALUES (1, 'ada');")
    pg.run(_SHADOW_OVERLOADS + "SET search_path = shadow, public")
    _deletes_when_run(pg, sql)
    reason = _blocked(pg.aware(["DELETE"]), sql)
    assert "may resolve to shadow." in reason, reason


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT initcap('ada'::text)",  # pg_catalog.initcap(text) is the exact match
        "SELECT lower(name) FROM people",  # shadow.lower takes two arguments
        "SELECT lower('A'::text), initcap(5::text)",
    ],
)
def test_a_user_overload_the_arguments_cannot_reach_does_not_count(pg, sql):
    pg.run(_KEEP_AND_PURGE + "CREATE TABLE people (id int, name varchar(40)); INSERT INTO people VALUES (1, 'ada');")
    pg.run(_SHADOW_OVERLOADS + "SET search_path = shadow, public")
    pg.run("BEGIN")
    try:
        pg.run(sql)
        assert pg.count("keep") == 10, f"{sql} should resolve to the built-in"
    finally:
        pg.run("ROLLBACK")
    assert not pg.aware(["DELETE"]).check_sql(sql)


def test_a_policy_or_cast_created_after_the_catalog_was_read_is_seen(pg):
    pg.run(
        _KEEP_AND_PURGE + "CREATE TABLE notes (id int); ALTER TABLE notes ENABLE ROW LEVEL SECURITY;"
        "CREATE TYPE mood AS ENUM ('ok');"
        "CREATE FUNCTION to_mood(int) RETURNS mood LANGUAGE plpgsql VOLATILE AS $$"
        " BEGIN DELETE FROM keep; RETURN 'ok'; END $$;"
    )
    aware = pg.aware(["DELETE"])
    assert not aware.check_sql("SELECT * FROM notes") and not aware.check_sql("SELECT 5::mood")
    pg.run("CREATE POLICY p ON notes USING (purge_keep())")
    assert "row-level security policy on notes" in _blocked(aware, "SELECT * FROM notes")
    pg.run("CREATE CAST (int AS mood) WITH FUNCTION to_mood(int)")
    assert "to_mood()" in _blocked(aware, "SELECT 5::mood")
