"""The schema-aware mode on a real MariaDB server.

Each test makes its own database (its table names carry the database's suffix: the guard reads
every schema on the server), shows by running the statement there that it really destroys rows
through what the server runs (a trigger, a procedure's body, a cascade), and that
``SQLPolicy(deny=[...], database=<the guard's connection>)`` blocks it while the text alone is
allowed, and while a harmless statement stays allowed.
"""

from __future__ import annotations

import uuid
from typing import Any, List

import pytest

from agentlightning.contrib.kernel.agentos import GovernanceConfigError, SQLPolicy

from .sql_schema_servers import mariadb_database


class _Server:
    def __init__(self, socket: str, pymysql: Any, name: str) -> None:
        self.socket, self.pymysql, self.name = socket, pymysql, name
        self.s = name.rsplit("_", 1)[-1]  # the suffix of this test's table names
        self.agent = self.connect()
        self.guard = self.connect()

    def connect(self, **kwargs: Any) -> Any:
        options = dict(unix_socket=self.socket, user="root", database=self.name, autocommit=True)
        options.update(kwargs)
        return self.pymysql.connect(**options)

    def run(self, *statements: str) -> None:
        with self.agent.cursor() as cursor:
            for statement in statements:
                cursor.execute(statement.format(s=self.s))

    def rows(self, sql: str) -> List[Any]:
        with self.agent.cursor() as cursor:
            cursor.execute(sql.format(s=self.s))
            return list(cursor.fetchall())

    def aware(self, deny: List[str], **kwargs: Any) -> SQLPolicy:
        return SQLPolicy(deny=deny, dialect="mariadb", database=self.guard, **kwargs)

    def blocked(self, policy: SQLPolicy, sql: str) -> str:
        found = policy.check_sql(sql.format(s=self.s))
        assert found, f"expected {sql!r} to be blocked"
        return found[0].description

    def allowed(self, policy: SQLPolicy, sql: str) -> bool:
        return policy.check_sql(sql.format(s=self.s)) == []


@pytest.fixture
def maria():
    with mariadb_database() as (socket, pymysql, name):
        server = _Server(socket, pymysql, name)
        try:
            yield server
        finally:
            server.guard.close()
            server.agent.close()


TEXT_ONLY = SQLPolicy(deny=["DELETE"], dialect="mariadb")


def test_update_firing_a_deleting_trigger_counts_as_delete(maria):
    maria.run(
        "CREATE TABLE orders_{s} (id INT PRIMARY KEY, total INT)",
        "CREATE TABLE audit_{s} (id INT)",
        "CREATE TABLE customers_{s} (id INT PRIMARY KEY, name TEXT)",
        "INSERT INTO orders_{s} VALUES (1, 10)",
        "INSERT INTO audit_{s} VALUES (1), (2), (3)",
        "INSERT INTO customers_{s} VALUES (1, 'a')",
        "CREATE TRIGGER purge_{s} AFTER UPDATE ON orders_{s} FOR EACH ROW DELETE FROM audit_{s}",
    )
    update = "UPDATE orders_{s} SET total = 11 WHERE id = 1"
    aware = maria.aware(["DELETE"])
    assert maria.allowed(TEXT_ONLY, update), "the text alone is an UPDATE"
    assert "DELETE statement denied (trigger purge_{s} on orders_{s} runs it".format(s=maria.s) in maria.blocked(
        aware, update
    )
    assert maria.allowed(aware, "UPDATE customers_{s} SET name = 'b' WHERE id = 1"), "no trigger there"

    maria.run(update)
    assert maria.rows("SELECT count(*) FROM audit_{s}") == [(0,)]


def test_trigger_whose_body_replaces_counts_as_delete(maria):
    maria.run(
        "CREATE TABLE orders_{s} (id INT PRIMARY KEY, total INT)",
        "CREATE TABLE latest_{s} (id INT PRIMARY KEY, note TEXT)",
        "INSERT INTO orders_{s} VALUES (1, 10)",
        "INSERT INTO latest_{s} VALUES (1, 'the original row')",
        "CREATE TRIGGER keep_{s} AFTER UPDATE ON orders_{s} FOR EACH ROW "
        "BEGIN REPLACE INTO latest_{s} VALUES (1, 'replaced'); END",
    )
    update = "UPDATE orders_{s} SET total = 11 WHERE id = 1"
    assert maria.allowed(TEXT_ONLY, update)
    description = maria.blocked(maria.aware(["DELETE"]), update)
    assert "DELETE statement denied (trigger keep_{s} on orders_{s} runs it".format(s=maria.s) in description

    maria.run(update)  # REPLACE deleted the conflicting row before inserting its own
    assert maria.rows("SELECT note FROM latest_{s}") == [("replaced",)]


def test_call_is_judged_by_the_procedure_body(maria):
    maria.run(
        "CREATE TABLE orders_{s} (id INT PRIMARY KEY)",
        "CREATE TABLE log_{s} (msg TEXT)",
        "INSERT INTO orders_{s} VALUES (1), (2), (3)",
        "CREATE PROCEDURE archive_{s}() BEGIN DELETE FROM orders_{s} WHERE id > 0; END",
        "CREATE PROCEDURE note_{s}(m TEXT) INSERT INTO log_{s} VALUES (m)",
        "CREATE FUNCTION shout_{s}(m TEXT) RETURNS TEXT DETERMINISTIC RETURN UPPER(m)",
    )
    maria.run("CREATE FUNCTION purge_{s}() RETURNS INT MODIFIES SQL DATA BEGIN DELETE FROM log_{s}; RETURN 1; END")
    call = "CALL archive_{s}()"
    assert "unknown effect" in TEXT_ONLY.check_sql(call.format(s=maria.s))[0].description
    aware = maria.aware(["DELETE"])
    assert "DELETE statement denied (routine archive_{s}'s body runs it)".format(s=maria.s) in maria.blocked(
        aware, call
    )
    assert maria.allowed(aware, "CALL note_{s}('hello')"), "a procedure that only inserts is placed by its body"
    assert maria.allowed(aware, "SELECT shout_{s}('x')"), "a function whose body only computes is placed"
    assert "unknown effect" in maria.blocked(aware, "SELECT sleep(1)"), "a built-in off the list stays unknown"
    assert "routine purge_{s}'s body runs it".format(s=maria.s) in maria.blocked(aware, "SELECT purge_{s}()")

    maria.run(call)
    assert maria.rows("SELECT count(*) FROM orders_{s}") == [(0,)]


def test_foreign_key_cascades_are_visible_in_the_decision(maria):
    maria.run(
        "CREATE TABLE users_{s} (id INT PRIMARY KEY) ENGINE=InnoDB",
        "CREATE TABLE orders_{s} (id INT PRIMARY KEY, user_id INT, "
        "CONSTRAINT orders_user_{s} FOREIGN KEY (user_id) REFERENCES users_{s} (id) ON DELETE CASCADE) ENGINE=InnoDB",
        "CREATE TABLE tickets_{s} (id INT PRIMARY KEY, user_id INT, "
        "CONSTRAINT tickets_user_{s} FOREIGN KEY (user_id) REFERENCES users_{s} (id) ON DELETE SET NULL) ENGINE=InnoDB",
        "CREATE TABLE lonely_{s} (id INT PRIMARY KEY)",
        "INSERT INTO users_{s} VALUES (1), (2)",
        "INSERT INTO orders_{s} VALUES (1, 1), (2, 1), (3, 2)",
        "INSERT INTO tickets_{s} VALUES (1, 1)",
        "INSERT INTO lonely_{s} VALUES (1)",
    )
    delete = "DELETE FROM users_{s} WHERE id = 1"
    expected = "foreign key orders_user_{s} of orders_{s} (ON DELETE CASCADE) deletes the referencing rows"
    assert expected.format(s=maria.s) in maria.blocked(maria.aware(["DELETE"]), delete)
    no_update = maria.aware(["UPDATE"])
    assert maria.allowed(SQLPolicy(deny=["UPDATE"], dialect="mariadb"), delete)
    assert "(ON DELETE SET NULL) updates the referencing rows" in maria.blocked(no_update, delete)
    assert maria.allowed(no_update, "DELETE FROM lonely_{s} WHERE id = 1")

    maria.run(delete)
    assert maria.rows("SELECT count(*) FROM orders_{s}") == [(1,)]
    assert maria.rows("SELECT count(*) FROM tickets_{s} WHERE user_id IS NULL") == [(1,)]


def test_catalog_is_read_again_after_create_trigger(maria):
    maria.run(
        "CREATE TABLE orders_{s} (id INT PRIMARY KEY, total INT)",
        "CREATE TABLE audit_{s} (id INT)",
        "INSERT INTO orders_{s} VALUES (1, 10)",
        "INSERT INTO audit_{s} VALUES (1)",
    )
    update = "UPDATE orders_{s} SET total = 11 WHERE id = 1"
    aware = maria.aware(["DELETE"])
    assert maria.allowed(aware, update)
    maria.run("CREATE TRIGGER purge_{s} BEFORE UPDATE ON orders_{s} FOR EACH ROW DELETE FROM audit_{s}")
    assert "trigger purge_{s}".format(s=maria.s) in maria.blocked(aware, update)
    maria.run("DROP TRIGGER purge_{s}")
    assert maria.allowed(aware, update)


def test_catalog_that_cannot_be_read_blocks(maria):
    maria.run("CREATE TABLE t_{s} (id INT)")
    aware = maria.aware(["DELETE"])
    assert maria.allowed(aware, "UPDATE t_{s} SET id = 2")
    with maria.guard.cursor() as cursor:
        cursor.execute("SELECT CONNECTION_ID()")
        (thread,) = cursor.fetchone()
    maria.run(f"KILL {int(thread)}")
    for _ in range(2):
        assert "cannot read the MariaDB database's catalog" in maria.blocked(aware, "UPDATE t_{s} SET id = 2")

    with pytest.raises(GovernanceConfigError, match="autocommit"):
        SQLPolicy(deny=["DELETE"], dialect="mariadb", database=maria.connect(autocommit=False))


def test_a_user_without_global_trigger_privilege_is_refused(maria):
    """information_schema shows a table's triggers only to a user with the TRIGGER privilege on
    it: such a user would read an empty catalog and allow everything, so it is blocked."""
    maria.run(
        "CREATE TABLE orders_{s} (id INT PRIMARY KEY, total INT)",
        "CREATE TABLE audit_{s} (id INT)",
        "CREATE TRIGGER purge_{s} AFTER UPDATE ON orders_{s} FOR EACH ROW DELETE FROM audit_{s}",
    )
    user, password = f"agentos_ro_{maria.s}", uuid.uuid4().hex
    maria.run(
        f"CREATE USER '{user}'@'localhost' IDENTIFIED BY '{password}'",
        f"GRANT SELECT ON {maria.name}.* TO '{user}'@'localhost'",
    )
    try:
        limited = maria.connect(user=user, password=password)
        with limited.cursor() as cursor:
            cursor.execute(
                "SELECT count(*) FROM information_schema.TRIGGERS WHERE TRIGGER_NAME = %s", (f"purge_{maria.s}",)
            )
            assert cursor.fetchone() == (0,), "the trigger is hidden from this user"
        description = maria.blocked(maria_policy(limited), "UPDATE orders_{s} SET total = 1")
        assert (
            "cannot read the MariaDB database's catalog: the guard's user lacks the global SELECT/TRIGGER"
            in description
        )
        limited.close()
    finally:
        maria.run(f"DROP USER '{user}'@'localhost'")


def maria_policy(connection):
    return SQLPolicy(deny=["DELETE"], dialect="mariadb", database=connection)


def test_a_write_through_a_view_reaches_the_table_below(maria):
    maria.run(
        "CREATE TABLE items_{s} (id INT PRIMARY KEY, qty INT)",
        "CREATE TABLE audit_{s} (id INT)",
        "INSERT INTO items_{s} VALUES (1, 1)",
        "INSERT INTO audit_{s} VALUES (1)",
        "CREATE VIEW items_v_{s} AS SELECT id, qty FROM items_{s}",
        "CREATE TRIGGER purge_{s} AFTER UPDATE ON items_{s} FOR EACH ROW DELETE FROM audit_{s}",
    )
    update = "UPDATE items_v_{s} SET qty = 2"
    assert maria.allowed(TEXT_ONLY, update)
    assert "trigger purge_{s} on items_{s}".format(s=maria.s) in maria.blocked(maria.aware(["DELETE"]), update)
    maria.run(update)
    assert maria.rows("SELECT count(*) FROM audit_{s}") == [(0,)]
