"""The text-to-SQL world: deterministic database and tasks, checked candidates, the sandbox."""

from __future__ import annotations

import hashlib
import sqlite3
import time

import pytest

from agentlightning.contrib.env.agentos import (
    FAMILIES,
    STRATEGIES,
    SandboxError,
    SQLSandbox,
    SQLWorld,
    build_database,
    database_fingerprint,
    generate_tasks,
    split_statements,
)
from agentlightning.contrib.kernel.agentos import Action, ActionContext, GovernanceKernel, SQLPolicy


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> SQLWorld:
    return SQLWorld.create(tmp_path_factory.mktemp("world") / "shop.db", seed=0)


def test_database_is_deterministic_from_the_seed(tmp_path):
    started = time.perf_counter()
    a = build_database(tmp_path / "a.db", seed=3)
    assert time.perf_counter() - started < 1.0
    b = build_database(tmp_path / "b.db", seed=3)
    c = build_database(tmp_path / "c.db", seed=4)
    assert database_fingerprint(a) == database_fingerprint(b) != database_fingerprint(c)
    with sqlite3.connect(a) as conn:
        counts = {t: conn.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in ("customers", "products", "orders", "order_items")}
        assert counts["customers"] == 2000 and counts["products"] == 120 and counts["orders"] == 6000
        assert counts["order_items"] > 10_000
        # related tables: every order item points at an existing order and product
        assert conn.execute("SELECT COUNT(*) FROM order_items oi LEFT JOIN orders o ON o.id = oi.order_id WHERE o.id IS NULL").fetchone()[0] == 0
        assert conn.execute("SELECT COUNT(*) FROM customers WHERE is_test = 1 AND deleted_at IS NULL").fetchone()[0] > 0
    with pytest.raises(FileExistsError, match="overwrite=True"):
        build_database(a, seed=3)
    with pytest.raises(TypeError, match="seed must be an int"):
        build_database(tmp_path / "d.db", seed="3")


def test_tasks_are_deterministic_and_split(world, tmp_path):
    assert generate_tasks(world.db_path, seed=0) == world.tasks
    other = SQLWorld.create(tmp_path / "other.db", seed=1)
    assert [t.question for t in other.tasks] != [t.question for t in world.tasks]
    train, heldout = world.split("train"), world.split("heldout")
    assert len(train) + len(heldout) == len(world.tasks) == 60
    assert not {t.task_id for t in train} & {t.task_id for t in heldout}
    assert {t.family for t in train} == {t.family for t in heldout} == set(FAMILIES)
    assert all(set(t.candidates) == set(STRATEGIES) for t in world.tasks)
    assert {t.kind for t in world.tasks} == {"question", "change"}
    assert any(t.temptation for t in world.tasks) and any(not t.temptation for t in world.tasks)
    assert all(t.question.isascii() and t.question.isprintable() for t in world.tasks)
    # SQLWorld.create reuses a database built for the same seed, refuses a foreign one
    assert SQLWorld.create(world.db_path, seed=0).tasks == world.tasks
    with pytest.raises(FileExistsError):
        SQLWorld.create(world.db_path, seed=1)


def test_every_candidate_behaves_as_labelled(world):
    """precise passes, sloppy fails, destructive passes the naive check exactly on temptation tasks."""
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
    with SQLSandbox(world.db_path) as box:
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
        for escape in ["COMMIT", "ROLLBACK", "BEGIN", "SAVEPOINT x", "ATTACH DATABASE 'x.db' AS x", "PRAGMA foreign_keys = ON"]:
            with pytest.raises(SandboxError, match="not allowed in the sandbox"):
                box.execute(escape)
        assert box.in_episode
        assert box.execute("PRAGMA table_info(customers)").rows  # reading PRAGMAs is fine
        with pytest.raises(ValueError, match="empty SQL"):
            box.execute("  ;  ")
    assert hashlib.sha256(world.db_path.read_bytes()).hexdigest() == digest


def test_split_statements_respects_strings_and_comments():
    assert split_statements("SELECT 'a;b'; SELECT 2") == ["SELECT 'a;b';", " SELECT 2;"]
    assert split_statements("SELECT 1 /* ; */ ;") == ["SELECT 1 /* ; */ ;"]
    assert split_statements(";;") == []
