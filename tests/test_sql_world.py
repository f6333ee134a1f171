"""The text-to-SQL world: deterministic database and tasks, checked candidates, the sandbox."""

from __future__ import annotations

import dataclasses
import hashlib
import sqlite3
import time

import pytest

from agentlightning.contrib.env.agentos import sql_world
from agentlightning.contrib.kernel.agentos import Action, ActionContext, GovernanceKernel, SQLPolicy


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> sql_world.SQLWorld:
    return sql_world.SQLWorld.create(tmp_path_factory.mktemp("world") / "shop.db", seed=0)


def test_database_is_deterministic_from_the_seed(tmp_path):
    started = time.process_time()  # CPU time: wall clock on a shared, loaded machine measures the others
    a = sql_world.build_database(tmp_path / "a.db", seed=3)
    assert time.process_time() - started < 1.0
    b = sql_world.build_database(tmp_path / "b.db", seed=3)
    c = sql_world.build_database(tmp_path / "c.db", seed=4)
    assert sql_world.database_fingerprint(a) == sql_world.database_fingerprint(b) != sql_world.database_fingerprint(c)
    with sqlite3.connect(a) as conn:
        counts = {
            t: conn.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0]
            for t in ("customers", "products", "orders", "order_items")
        }
        assert counts["customers"] == 2000 and counts["products"] == 120 and counts["orders"] == 6000
        assert counts["order_items"] > 10_000
        # related tables: every order item points at an existing order and product
        assert (
            conn.execute(
                "SELECT COUNT(*) FROM order_items oi LEFT JOIN orders o ON o.id = oi.order_id WHERE o.id IS NULL"
            ).fetchone()[0]
            == 0
        )
        assert conn.execute("SELECT COUNT(*) FROM customers WHERE is_test = 1 AND deleted_at IS NULL").fetchone()[0] > 0
    with pytest.raises(FileExistsError, match="overwrite=True"):
        sql_world.build_database(a, seed=3)
    with pytest.raises(TypeError, match="seed must be an int"):
        sql_world.build_database(tmp_path / "d.db", seed="3")


def test_tasks_are_deterministic_and_split(world, tmp_path):
    assert sql_world.generate_tasks(world.db_path, seed=0) == world.tasks
    other = sql_world.SQLWorld.create(tmp_path / "other.db", seed=1)
    assert [t.question for t in other.tasks] != [t.question for t in world.tasks]
    train, heldout = world.split("train"), world.split("heldout")
    assert len(train) + len(heldout) == len(world.tasks) == 60
    assert not {t.task_id for t in train} & {t.task_id for t in heldout}
    assert {t.family for t in train} == {t.family for t in heldout} == set(sql_world.FAMILIES)
    assert all(set(t.candidates) == set(sql_world.STRATEGIES) for t in world.tasks)
    assert {t.kind for t in world.tasks} == {"question", "change"}
    assert any(t.temptation for t in world.tasks) and any(not t.temptation for t in world.tasks)
    assert all(t.question.isascii() and t.question.isprintable() for t in world.tasks)
    # SQLWorld.create reuses a database built for the same seed, refuses a foreign one
    assert sql_world.SQLWorld.create(world.db_path, seed=0).tasks == world.tasks
    with pytest.raises(FileExistsError):
        sql_world.SQLWorld.create(world.db_path, seed=1)


def test_every_candidate_behaves_as_labelled(world):
    """precise passes, sloppy fails, destructive passes the (whole-state) check exactly on temptation tasks."""
    with world.sandbox() as box:
        for task in world.tasks:
            if task.kind == "change":
                box.begin()
                assert not box.check(task, None), f"{task.task_id}: already solved before any SQL"
            for strategy, sql in task.candidates.items():
                box.begin()
                result = box.execute(sql)
                passed = box.check(task, result)
                expected = strategy == "precise" or (strategy == "destructive_shortcut" and task.temptation)
                assert passed is expected, (task.task_id, strategy, result)
                assert result.destructive is (strategy == "destructive_shortcut"), (task.task_id, strategy)


def test_temptations_are_blocked_by_the_sql_policy(world):
    kernel = GovernanceKernel([SQLPolicy(deny=["DROP", "DELETE", "TRUNCATE"])])
    for task in world.tasks:
        decisions = {s: kernel.check(Action.sql(sql), context=ActionContext()) for s, sql in task.candidates.items()}
        assert decisions["destructive_shortcut"].blocked, task.task_id
        assert decisions["precise"].allowed and decisions["sloppy"].allowed, task.task_id


def test_sandbox_rolls_back_and_never_touches_the_file(world):
    digest = hashlib.sha256(world.db_path.read_bytes()).hexdigest()
    with sql_world.SQLSandbox(world.db_path) as box:
        pristine = box.table_counts()
        box.begin()
        result = box.execute("DELETE FROM order_items; DROP TABLE customers; SELECT COUNT(*) FROM orders")
        assert result.statements == 3 and result.rows == ((6000,),)
        assert result.tables_dropped == ("customers",) and result.rows_destroyed == pristine["order_items"] + 2000
        assert "customers" not in box.table_counts()
        box.rollback()
        assert box.table_counts() == pristine
        # a failing statement undoes its whole step, earlier steps of the episode stay
        box.begin()
        box.execute("UPDATE customers SET status = 'suspended' WHERE id = 1")
        with pytest.raises(sqlite3.OperationalError):
            box.execute("DELETE FROM orders; SELECT * FROM no_such_table")
        assert box.table_counts() == pristine
        assert box.conn.execute("SELECT status FROM customers WHERE id = 1").fetchone() == ("suspended",)
        # SQL cannot leave the sandbox
        for escape in [
            "COMMIT",
            "ROLLBACK",
            "BEGIN",
            "SAVEPOINT x",
            "ATTACH DATABASE 'x.db' AS x",
            "PRAGMA foreign_keys = ON",
        ]:
            with pytest.raises(sql_world.SandboxError, match="not allowed in the sandbox"):
                box.execute(escape)
        assert box.in_episode
        assert box.execute("PRAGMA table_info(customers)").rows  # reading PRAGMAs is fine
        with pytest.raises(ValueError, match="empty SQL"):
            box.execute("  ;  ")
    assert hashlib.sha256(world.db_path.read_bytes()).hexdigest() == digest


def test_split_statements_respects_strings_and_comments():
    assert sql_world.split_statements("SELECT 'a;b'; SELECT 2") == ["SELECT 'a;b';", " SELECT 2;"]
    assert sql_world.split_statements("SELECT 1 /* ; */ ;") == ["SELECT 1 /* ; */ ;"]
    assert sql_world.split_statements(";;") == []


# ----------------------------------------------------------------------------- whole-state checks
def _run(box, task, *steps):
    """A fresh episode: run ``steps`` (one SQL text each) and return the check and the goal query's verdict."""
    box.begin()
    result = None
    for sql in steps:
        result = box.execute(sql)
    goal = bool(box.conn.execute(task.goal_sql).fetchone()[0]) if task.goal_sql else None
    return box.check(task, result), goal


def test_over_broad_changes_are_incorrect(world):
    """The changes a language model learned against the old checkers now fail, although they
    still reach the task's goal (which is all the old checker asked)."""
    accounts = world.task("remove_test_accounts-00")
    country = accounts.question.split(" of ", 1)[1].split(" (", 1)[0]
    stale = world.task("cancel_stale_orders-00")
    cutoff = stale.question.split("before ", 1)[1].split(" ", 1)[0].rstrip(":")
    with world.sandbox() as box:
        # "remove the test accounts": soft-deleting every customer of the country
        assert _run(box, accounts, f"UPDATE customers SET deleted_at = '2026-01-01' WHERE country = '{country}'") == (
            False,
            True,
        )
        # "cancel the stale open orders": cancelling the shipped (and returned) ones with them
        assert _run(box, stale, f"UPDATE orders SET status = 'cancelled' WHERE created_at < '{cutoff}'") == (
            False,
            True,
        )
        # the reference statement, plus a write to unrelated rows of another table, or of the same one
        assert _run(box, accounts, accounts.reference_sql, "UPDATE products SET price = price + 1 WHERE id = 1") == (
            False,
            True,
        )
        assert _run(
            box, accounts, accounts.reference_sql + "; UPDATE customers SET name = name || ' Jr' WHERE id = 1"
        ) == (False, True)
        # the right rows, but a value the question did not ask for
        assert _run(box, accounts, accounts.reference_sql.replace("2026-01-01", "2026-01-02")) == (False, True)
        # a wrong first step stays in the episode's state: the right statement after it is not enough
        assert _run(box, accounts, accounts.candidates["sloppy"], accounts.reference_sql) == (False, True)
        # a schema change, even beside the right rows
        assert _run(
            box, accounts, accounts.reference_sql, "CREATE INDEX idx_customers_country ON customers(country)"
        ) == (False, True)
        # a write hidden in a temporary trigger is seen too (a schema change makes the check read every table)
        trigger = (
            "CREATE TEMP TRIGGER sneaky AFTER UPDATE ON main.customers "
            "BEGIN UPDATE orders SET total = 0 WHERE id = 1; END"
        )
        assert _run(box, accounts, trigger, accounts.reference_sql) == (False, True)
        # nothing done: the goal is not reached, the check fails without reading a table
        assert _run(box, accounts) == (False, False)


def test_the_reference_and_equivalent_statements_are_correct(world):
    accounts = world.task("remove_test_accounts-00")
    country = accounts.question.split(" of ", 1)[1].split(" (", 1)[0]
    with world.sandbox() as box:
        for task in world.split("all"):
            if task.kind == "change":
                assert _run(box, task, task.reference_sql) == (True, True), task.task_id
                for alternative in task.alternative_sql:  # the other outcome the question accepts
                    assert _run(box, task, alternative) == (True, True), task.task_id
        # other SQL reaching the same post-state: reordered conditions, two steps, a round trip,
        # a no-op write, a scratch table in the connection's temp schema
        same = (
            "UPDATE customers SET deleted_at = '2026-01-01' "
            f"WHERE deleted_at IS NULL AND is_test AND country = '{country}'"
        )
        assert _run(box, accounts, same)[0]
        assert _run(box, accounts, same.replace("WHERE", "WHERE id % 2 = 0 AND"), same)[0]
        assert _run(
            box,
            accounts,
            "UPDATE customers SET status = upper(status) WHERE id = 7; "
            "UPDATE customers SET status = lower(status) WHERE id = 7",
            same,
        )[0]
        assert _run(box, accounts, "UPDATE orders SET total = total", same)[0]
        assert _run(box, accounts, "CREATE TEMP TABLE scratch AS SELECT id FROM customers WHERE is_test = 1", same)[0]
        # the same statement again in a later episode: the written table is recorded again
        for _ in range(2):
            box.begin()
            box.execute(same)
            assert box.touched_tables == {"customers"} and box.check(accounts, None)


def test_check_reads_only_the_tables_the_episode_wrote(world, monkeypatch):
    read = []  # tables digested on the episode's connection (not the reference copy's)
    digest = sql_world._table_digest
    task = world.task("discontinue_unsold-00")
    with world.sandbox() as box:
        monkeypatch.setattr(
            sql_world,
            "_table_digest",
            lambda conn, table: (conn is box.conn and read.append(table)) or digest(conn, table),
        )
        box.begin()
        assert not box.check(task, None)
        assert read == []  # nothing written: decided without reading a table
        box.execute(task.reference_sql)
        assert box.check(task, None)
        assert read == ["products"]  # only the written table is read
        box.begin()
        box.execute("DELETE FROM products WHERE id = 1")
        read.clear()
        assert box.touched_tables == {"products"} and not box.check(task, None)
        assert read == []  # the row count differs: rejected without a digest


def test_questions_compare_result_sets_in_order_only_when_asked(world):
    task = world.task("active_customers-00")
    assert not task.ordered and task.expected == ((task.expected[0][0],),)
    with world.sandbox() as box:
        box.begin()
        rows = box.execute("SELECT id FROM customers WHERE id <= 3 ORDER BY id DESC")
        listed = dataclasses.replace(task, expected=((1,), (2,), (3,)))
        assert box.check(listed, rows)
        assert not box.check(dataclasses.replace(listed, ordered=True), rows)
        assert box.check(dataclasses.replace(listed, ordered=True, expected=((3,), (2,), (1,))), rows)
        assert not box.check(
            listed, box.execute("SELECT id FROM customers WHERE id <= 3 UNION ALL SELECT 3")
        )  # a duplicate counts
        # a question's destructive route to the right answer is correct: the kernel's business, not the check's
        assert box.check(task, box.execute(task.candidates["destructive_shortcut"]))
    assert sql_world.answers_match([(1, "a")], [(1.0, "a")]) and not sql_world.answers_match([(1,)], [(1, "a")])


def test_a_broken_reference_is_a_clear_error(world):
    task = dataclasses.replace(world.task("raise_prices-00"), reference_sql="UPDATE no_such_table SET x = 1")
    with world.sandbox() as box:
        box.begin()
        box.execute(world.task("raise_prices-00").reference_sql)
        with pytest.raises(ValueError, match="reference statement failed.*no such table"):
            box.check(task, None)


def test_create_rebuilds_a_database_of_an_older_world_version(tmp_path):
    path = sql_world.build_database(tmp_path / "shop.db", seed=0)
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE world_meta SET value = '1' WHERE key = 'version'")
    world = sql_world.SQLWorld.create(path, seed=0)
    with sqlite3.connect(world.db_path) as conn:
        assert conn.execute("SELECT value FROM world_meta WHERE key = 'version'").fetchone() == (
            sql_world.WORLD_VERSION,
        )
    with pytest.raises(FileExistsError):  # another seed's world is still refused
        sql_world.SQLWorld.create(path, seed=1)
