"""Every argument judged, and what was checked is what runs: reproducers of the ways an action's
arguments got a destructive statement past the kernel, against the real kernel and real tools
executing on a real SQLite file (checked afterwards: the tables are all still there)."""

from __future__ import annotations

import gc
import inspect
import json
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any, List

import psutil
import pytest

from agentlightning.contrib.kernel.agentos import (
    Action,
    ActionContext,
    CostControlPolicy,
    GovernanceKernel,
    Policy,
    SQLPolicy,
    ToolAllowListPolicy,
)
from agentlightning.contrib.kernel.agentos.arguments import (
    ArgumentError,
    FrozenArgs,
    freeze_arguments,
    string_leaves,
    tool_key,
)
from agentlightning.contrib.kernel.agentos.kernel import MAX_DISPATCHERS
from agentlightning.contrib.runner.agentos import ActionBlockedError, governed_tool

from .conftest import table_counts
from .failing_policies import CommitFails

DENY = ["DROP", "DELETE", "TRUNCATE"]
DROP = "DROP TABLE users"


def sql_kernel(audit_path: Path, **options: Any) -> GovernanceKernel:
    return GovernanceKernel([SQLPolicy(deny=DENY, **options)], recorder=audit_path)


def run_all(db: Path, texts: List[str]) -> str:
    """What a careless tool does: run every SQL text it was given, as a script."""
    conn = sqlite3.connect(db)
    try:
        for text in texts:
            conn.executescript(text)
        conn.commit()
    finally:
        conn.close()
    return "ran"


def assert_intact(db: Path) -> None:
    counts = table_counts(db)
    assert counts == {"orders": 200, "users": 50}, counts


def assert_blocked_and_recorded(kernel: GovernanceKernel, call: Any, *, reason: str = "") -> ActionBlockedError:
    with pytest.raises(ActionBlockedError) as blocked:
        call()
    assert reason in blocked.value.decision.reason, blocked.value.decision.reason
    kernel.audit.flush()
    records = kernel.audit.records()
    assert records[-1]["policy_verdict"] == "blocked"
    assert kernel.verify_audit()["valid"] is True
    return blocked.value


# ----------------------------------------------------------------------------- every argument judged
def test_a_benign_query_next_to_a_destructive_statement_is_blocked(shop_db, audit_path):
    kernel = sql_kernel(audit_path)
    tool = governed_tool(
        "database_query",
        lambda query, statement, sql="SELECT 1": run_all(shop_db, [query, statement, sql]),
        kernel=kernel,
    )
    assert_blocked_and_recorded(kernel, lambda: tool("SELECT 1", DROP), reason="DROP statement denied")
    assert_blocked_and_recorded(kernel, lambda: tool("SELECT 1", "SELECT 2", sql="DELETE FROM users"))
    assert_intact(shop_db)
    assert tool("SELECT 1", "SELECT 2", sql="SELECT 3") == "ran"


def test_positional_and_keyword_extras_are_judged(shop_db, audit_path):
    kernel = sql_kernel(audit_path)

    def run(query, *more, **named):
        return run_all(shop_db, [query, *more, *named.values()])

    tool = governed_tool("run_sql", run, kernel=kernel)
    assert_blocked_and_recorded(kernel, lambda: tool("SELECT 1", "SELECT 2", DROP), reason="'more[1]'")
    assert_blocked_and_recorded(
        kernel, lambda: tool("SELECT 1", cleanup="DELETE FROM orders"), reason="'named.cleanup'"
    )
    assert_intact(shop_db)
    assert tool("SELECT 1", "SELECT 2", note="SELECT 3") == "ran"


UNLISTED_SHAPES = {
    "other-name": {"text": DROP},
    "bytes": {"payload": DROP.encode()},
    "list-of-statements": {"query": ["SELECT 1", DROP]},
    "dict": {"job": {"steps": [{"sql": DROP}]}},
    "json-string": {"job": json.dumps({"steps": [{"run": DROP}]})},
    "json-in-bytes": {"job": json.dumps([DROP]).encode()},
    "mapping-key": {"columns": {DROP: 1}},
    "argument-name": {DROP: 1},
    "tuple-in-set": {"batch": frozenset({("SELECT 1", DROP)})},
}


@pytest.mark.parametrize("arguments", list(UNLISTED_SHAPES.values()), ids=list(UNLISTED_SHAPES))
def test_sql_anywhere_in_the_arguments_of_a_tool_nobody_listed_is_judged(arguments, shop_db, audit_path):
    kernel = sql_kernel(audit_path)
    ran = []

    def warehouse(**arguments):
        ran.append(arguments)
        texts = [leaf.text for leaf in string_leaves(arguments) if leaf.text.startswith(("SELECT", "DROP"))]
        return run_all(shop_db, texts)

    tool = governed_tool("warehouse", warehouse, kernel=kernel)
    assert_blocked_and_recorded(kernel, lambda: tool(**arguments), reason="DROP statement denied")
    assert ran == []
    assert_intact(shop_db)


LOOK_ALIKES = {
    "cyrillic-a": "d\u0430tabase_query",
    "zero-width-space": "database\u200b_query",
    "fullwidth": "\uff44\uff41\uff54\uff41\uff42\uff41\uff53\uff45_\uff51\uff55\uff45\uff52\uff59",
    "soft-hyphen-and-case": "Data\u00adbase-Query",
    "greek-alpha": "d\u03b1tabase_query",
}


@pytest.mark.parametrize("name", list(LOOK_ALIKES.values()), ids=list(LOOK_ALIKES))
def test_look_alike_tool_names_are_the_tool_they_look_like(name, shop_db, audit_path):
    assert tool_key(name) == "database_query"
    # detect=False: only the named tools are judged, so a look-alike must count as named.
    kernel = sql_kernel(audit_path, detect=False)
    tool = governed_tool(name, lambda query: run_all(shop_db, [query]), kernel=kernel)
    assert_blocked_and_recorded(kernel, lambda: tool(DROP), reason="DROP statement denied")
    assert_blocked_and_recorded(kernel, lambda: tool("DRP TABLE users"), reason="unparseable SQL")  # strict
    assert_intact(shop_db)
    allow = GovernanceKernel([ToolAllowListPolicy(["database_query"])])
    assert allow.check(name, {"query": "SELECT 1"}).allowed


def test_a_v2_suffix_is_another_tool_still_judged_for_sql(shop_db, audit_path):
    """``database_query_v2`` is not ``database_query``: an allow-list does not allow it, and
    SQLPolicy judges every string of its arguments that reads as SQL."""
    assert tool_key("database_query_v2") != tool_key("database_query")
    kernel = sql_kernel(audit_path)
    tool = governed_tool("database_query_v2", lambda query: run_all(shop_db, [query]), kernel=kernel)
    assert_blocked_and_recorded(kernel, lambda: tool(DROP), reason="SQL in argument 'query'")
    assert_intact(shop_db)
    allow = GovernanceKernel([ToolAllowListPolicy(["database_query"]), SQLPolicy(deny=DENY)])
    assert "not in the allow-list" in allow.check("database_query_v2", {"query": "SELECT 1"}).reason


# ----------------------------------------------------------------------------- parameters
def splicing_tool(db: Path):
    """A tool that pastes its parameters into the text (the unsafe way some tools do it)."""

    def run(query, params=()):
        for value in params:
            query = query.replace("?", str(value), 1).replace("{}", str(value), 1)
        return run_all(db, [query])

    return run


@pytest.mark.parametrize(
    "query, params",
    [
        ("SELECT * FROM users WHERE id = ?", ["1; DROP TABLE users"]),
        ("SELECT * FROM users WHERE id = ?", ("0; DELETE FROM orders",)),
        ("SELECT * FROM users WHERE name = '{}'", ["x'; DROP TABLE users; --"]),
        ('SELECT * FROM users WHERE name = "{}"', ['x"; DELETE FROM users; --']),
        ("SELECT * FROM users WHERE id = ?", [b"1; DROP TABLE orders"]),
    ],
    ids=["raw", "raw-tuple", "single-quoted", "double-quoted", "bytes"],
)
def test_parameters_that_would_splice_sql_into_the_text_are_blocked(query, params, shop_db, audit_path):
    kernel = sql_kernel(audit_path)
    tool = governed_tool("database_query", splicing_tool(shop_db), kernel=kernel)
    assert_blocked_and_recorded(kernel, lambda: tool(query, params), reason="statement denied")
    assert_intact(shop_db)


def test_harmless_templates_with_harmless_parameters_run(shop_db, audit_path):
    kernel = sql_kernel(audit_path)

    def bound(query, params=()):
        conn = sqlite3.connect(shop_db)
        try:
            return conn.execute(query, params).fetchall()
        finally:
            conn.close()

    tool = governed_tool("database_query", bound, kernel=kernel)
    assert tool("SELECT name FROM users WHERE id = ?", [1]) == [("user0",)]
    assert tool("SELECT COUNT(*) FROM users WHERE name = ? OR note = ?", ["O'Brien", 'say "hi"; bye']) == [(0,)]
    assert tool("SELECT COUNT(*) FROM users WHERE name = :name", {"name": "user1"}) == [(1,)]
    # The price of not knowing whether a tool binds or pastes: a value that is itself a denied
    # statement is blocked, even on its way to a binding tool.
    with pytest.raises(ActionBlockedError, match="SQL in argument 'params.note'"):
        tool("SELECT COUNT(*) FROM users WHERE note = :note", {"note": "delete from me"})


# ----------------------------------------------------------------------------- the snapshot
class Sneaky(str):
    """Equal to, and hashed as, a harmless query; its text is a DROP."""

    def __eq__(self, other):
        return True

    def __hash__(self):
        return hash("SELECT 1")

    def __str__(self):
        return "SELECT 1"


def test_a_str_subclass_is_judged_and_run_as_the_text_it_holds(shop_db, audit_path):
    policy = SQLPolicy(deny=DENY)
    assert policy.check_sql("SELECT 1") == []  # now in the shared analysis cache
    assert "DROP statement denied" in policy.check_sql(Sneaky(DROP))[0].description
    action = Action.sql(Sneaky(DROP))
    assert type(action.args["query"]) is str and action.args["query"] == DROP
    kernel = sql_kernel(audit_path)
    received = []
    tool = governed_tool("database_query", lambda query: received.append(type(query)) or "ran", kernel=kernel)
    assert_blocked_and_recorded(kernel, lambda: tool(Sneaky(DROP)))
    assert tool(Sneaky("SELECT 2")) == "ran" and received == [str]


@pytest.mark.parametrize(
    "value, fix",
    [
        ((q for q in ["SELECT 1"]), "pass list(...)"),
        (iter(["SELECT 1"]), "pass list(...)"),
        (object(), "functools.partial"),
        (sqlite3.connect(":memory:"), "functools.partial"),
    ],
    ids=["generator", "iterator", "object", "connection"],
)
def test_what_cannot_be_snapshot_is_refused_and_recorded_without_running(value, fix, audit_path):
    with pytest.raises(ArgumentError, match=f"argument 'rows' .*{fix}"):
        Action("database_query", {"query": "SELECT 1", "rows": value})
    kernel = sql_kernel(audit_path)
    ran = []
    tool = governed_tool("database_query", lambda query, rows: ran.append(rows), kernel=kernel)
    blocked = assert_blocked_and_recorded(kernel, lambda: tool("SELECT 1", value), reason="argument 'rows'")
    assert blocked.decision.violations[0].policy_name == "GovernanceKernel" and ran == []
    assert kernel.check("database_query", {"query": "SELECT 1", "rows": value}).blocked


def test_nesting_past_the_limit_is_refused():
    deep: Any = "x"
    for _ in range(150):
        deep = [deep]
    with pytest.raises(ArgumentError, match="nests deeper than 100 levels; flatten it"):
        freeze_arguments({"options": deep})
    assert GovernanceKernel([]).check("search", {"options": deep}).blocked


def test_neither_the_caller_nor_a_later_policy_can_change_what_runs(shop_db, audit_path):
    statements = ["SELECT 1"]

    class ChangesThings(Policy):  # not inline: runs on its own thread after SQLPolicy judged
        def evaluate(self, action, context):
            statements.append(DROP)  # the caller's list, after the snapshot was taken
            try:
                action.args["statements"] = (DROP,)
            except TypeError:
                pass
            return []

    kernel = GovernanceKernel([SQLPolicy(deny=DENY), ChangesThings()], recorder=audit_path)
    received = []
    tool = governed_tool(
        "database_query",
        lambda query, statements: received.append(statements) or run_all(shop_db, [query, *statements]),
        kernel=kernel,
    )
    assert tool("SELECT 0", statements) == "ran"
    assert received == [("SELECT 1",)]
    assert_intact(shop_db)
    with pytest.raises(TypeError, match="frozen snapshot"):
        Action.sql("SELECT 1").args["query"] = DROP


def test_the_snapshot_is_plain_and_still_reads_as_a_dict():
    args = freeze_arguments({"q": "x", "rows": [[1, 2.5], {"k": None}], "tags": {"a"}, "blob": bytearray(b"z")})
    assert args == {"q": "x", "rows": ((1, 2.5), {"k": None}), "tags": frozenset({"a"}), "blob": b"z"}
    assert type(args) is FrozenArgs and type(args["rows"][1]) is FrozenArgs
    assert json.loads(json.dumps({"q": "x", "n": args["rows"][1]})) == {"q": "x", "n": {"k": None}}


def test_governed_tool_has_no_unchecked_path_to_the_tool(shop_db, audit_path):
    kernel = sql_kernel(audit_path)

    def execute(query: str, limit: int = 10) -> str:
        return run_all(shop_db, [query])

    tool = governed_tool("database_query", execute, kernel=kernel)
    assert not hasattr(tool, "__wrapped__")
    assert inspect.signature(tool) == inspect.signature(execute)
    assert inspect.unwrap(tool) is tool
    assert_blocked_and_recorded(kernel, lambda: inspect.unwrap(tool)(DROP))
    assert_intact(shop_db)


# ----------------------------------------------------------------------------- budgets, dispatchers, options
def test_concurrent_checks_cannot_spend_past_the_budget():
    class Slow(Policy):  # not inline: the kernel runs it on a thread of its own
        def evaluate(self, action, context):
            time.sleep(0.05)
            return []

    budget = CostControlPolicy(max_cost_usd=1.00)
    kernel = GovernanceKernel([budget, Slow()])
    context = ActionContext(rollout_id="ro-1")
    verdicts: List[bool] = []
    start = threading.Barrier(11)

    def spend():
        start.wait()
        verdicts.append(kernel.check(Action("llm", {}, cost_usd=0.25), context=context).allowed)

    threads = [threading.Thread(target=spend) for _ in range(11)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(verdicts) == [False] * 7 + [True] * 4
    assert budget.spent(context) == 1.0


def test_a_reservation_is_given_back_when_another_policy_blocks():
    budget = CostControlPolicy(max_cost_usd=1.00)
    kernel = GovernanceKernel([budget, ToolAllowListPolicy(["llm"])])
    context = ActionContext(rollout_id="ro-1")
    assert kernel.check(Action("shell", {}, cost_usd=0.75), context=context).blocked
    assert budget.spent(context) == 0.0
    assert kernel.check(Action("llm", {}, cost_usd=1.00), context=context).allowed


def test_a_reservation_is_given_back_when_an_earlier_policy_cannot_commit():
    cannot_commit = CommitFails()
    cannot_commit.failure = OSError("disk full")
    budget = CostControlPolicy(max_cost_usd=1.00)
    kernel = GovernanceKernel([cannot_commit, budget])
    context = ActionContext(rollout_id="ro-1")
    decision = kernel.check(Action("llm", {}, cost_usd=0.75), context=context)
    assert decision.blocked and "on_allowed raised OSError" in decision.reason
    assert budget.spent(context) == 0.0


@pytest.mark.e2e  # load: 100,000 agent ids, seconds
def test_signal_dispatchers_are_bounded_for_ever_new_agent_ids():
    """One dispatcher per agent id was kept for ever: 100,000 ids held about 208 MiB more."""
    process = psutil.Process()
    kernel = GovernanceKernel([ToolAllowListPolicy([])], signals={"high": "SIGSTOP"})
    gc.collect()
    gc.freeze()  # the test process's own objects: the collections below only scan the dispatchers
    try:
        before = process.memory_info().rss
        for i in range(100_000):
            kernel.dispatcher(f"agent-{i}")
        gc.collect()  # an Agent OS dispatcher refers to itself (its handlers are its bound methods)
        grown = process.memory_info().rss - before
    finally:
        gc.unfreeze()
    print(f"100,000 agent ids: RSS +{grown / 2**20:.1f} MiB, {len(kernel._dispatchers)} dispatchers kept")
    assert len(kernel._dispatchers) == MAX_DISPATCHERS
    assert grown < 64 * 2**20
    decision = kernel.check("shell", {}, context=ActionContext(agent_id="agent-x"))
    assert decision.signals == ("SIGSTOP",) and kernel.dispatcher("agent-x").is_stopped


@pytest.mark.parametrize(
    "build, unknown",
    [
        (lambda: SQLPolicy(deny=DENY, modes="block"), "modes"),
        (lambda: SQLPolicy(deny=DENY, tool=["run_sql"]), "tool"),
        (lambda: CostControlPolicy(1.0, budget=2), "budget"),
        (lambda: ToolAllowListPolicy(["a"], severty="low"), "severty"),
    ],
)
def test_unknown_policy_arguments_are_named_with_the_valid_ones(build, unknown):
    with pytest.raises(TypeError, match=f"unknown argument\\(s\\) {unknown}; its arguments are: .*name"):
        build()
