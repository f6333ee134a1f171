"""The kernel remembers pure policies' answers per action, and only theirs, and only while true."""

from __future__ import annotations

from typing import List

from agentlightning.contrib.kernel.agentos import CostControlPolicy, GovernanceKernel, Policy, SQLPolicy
from agentlightning.contrib.kernel.agentos.actions import Action, ActionContext
from agentlightning.contrib.kernel.agentos.kernel import MAX_REMEMBERED_ACTIONS, is_pure
from agentlightning.contrib.kernel.agentos.violations import PolicyViolation


class CountingPure(Policy):
    """Blocks the text "bad"; counts how often it is asked."""

    runs_inline = True
    pure = True

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.asked = 0
        self.word = "bad"

    def evaluate(self, action: Action, context: ActionContext) -> List[PolicyViolation]:
        object.__setattr__(self, "asked", self.asked + 1)  # a count for the test, not configuration
        if action.args.get("text") == self.word:
            return [self.violation(f"{self.word} text")]
        return []


class NotRedeclared(CountingPure):
    """Inherits ``pure`` without declaring it: not remembered."""


def test_a_pure_policy_is_asked_once_per_action_and_every_decision_is_its_own():
    policy = CountingPure()
    kernel = GovernanceKernel([policy])
    decisions = [kernel.check("tool", {"text": "fine"}) for _ in range(5)]
    assert policy.asked == 1
    assert all(d.allowed for d in decisions)
    assert len({d.decision_id for d in decisions}) == 5
    assert len({id(d.action) for d in decisions}) == 5  # each decision holds its own snapshot
    blocked = [kernel.check("tool", {"text": "bad"}) for _ in range(3)]
    assert policy.asked == 2
    assert all(d.blocked and d.reason == "CountingPure[high]: bad text" for d in blocked)
    first, second = blocked[0].violations[0], blocked[1].violations[0]
    assert first is not second and first.description == second.description  # each decision owns its findings
    assert second.timestamp >= first.timestamp


def test_changing_a_pure_policy_forgets_what_was_remembered():
    policy = CountingPure()
    kernel = GovernanceKernel([policy])
    assert kernel.check("tool", {"text": "worse"}).allowed
    policy.word = "worse"
    assert kernel.check("tool", {"text": "worse"}).blocked
    sql = SQLPolicy(deny=["DROP"])
    kernel = GovernanceKernel([sql])
    assert kernel.check("database_query", {"query": "DELETE FROM t"}).allowed
    sql.deny = frozenset({"DROP", "DELETE"})
    assert kernel.check("database_query", {"query": "DELETE FROM t"}).blocked


def test_a_stateful_policy_is_evaluated_every_time():
    kernel = GovernanceKernel([SQLPolicy(deny=["DROP"]), CostControlPolicy(max_cost_usd=1.0)])
    verdicts = [kernel.check("database_query", {"query": "SELECT 1"}, cost_usd=0.4).allowed for _ in range(4)]
    assert verdicts == [True, True, False, False]


def test_a_failure_is_not_remembered():
    class FailsOnce(CountingPure):
        pure = True

        def evaluate(self, action, context):
            if not self.asked:
                object.__setattr__(self, "asked", 1)
                raise RuntimeError("flaky")
            return super().evaluate(action, context)

    policy = FailsOnce()
    kernel = GovernanceKernel([policy])
    assert kernel.check("tool", {"text": "fine"}).blocked  # fails closed
    assert kernel.check("tool", {"text": "fine"}).allowed  # asked again, not remembered as blocked
    assert kernel.check("tool", {"text": "fine"}).allowed
    assert policy.asked == 2


def test_only_declared_pure_policies_and_plain_text_actions_are_remembered():
    inherited = NotRedeclared()
    kernel = GovernanceKernel([inherited])
    for _ in range(3):
        kernel.check("tool", {"text": "fine"})
    assert inherited.asked == 3 and not is_pure(inherited)
    policy = CountingPure()
    kernel = GovernanceKernel([policy])
    for _ in range(3):
        kernel.check("tool", {"text": "fine", "limit": 1})  # not all text: no fingerprint
    assert policy.asked == 3
    assert is_pure(SQLPolicy(deny=["DROP"]))
    assert not is_pure(CostControlPolicy(max_cost_usd=1))


def test_sql_policy_with_a_database_reads_the_catalog_before_every_decision(tmp_path):
    import sqlite3

    path = tmp_path / "db.sqlite"
    with sqlite3.connect(path) as db:
        db.executescript("CREATE TABLE t (x INT); CREATE TABLE log (x INT);")
    policy = SQLPolicy(deny=["DELETE"], database=str(path))
    assert not is_pure(policy)
    kernel = GovernanceKernel([policy])
    assert kernel.check("database_query", {"query": "INSERT INTO t VALUES (1)"}).allowed
    assert kernel.check("database_query", {"query": "INSERT INTO t VALUES (1)"}).allowed
    with sqlite3.connect(path) as db:  # a trigger that the same text now sets off
        db.execute("CREATE TRIGGER wipe AFTER INSERT ON t BEGIN DELETE FROM log; END")
    assert kernel.check("database_query", {"query": "INSERT INTO t VALUES (1)"}).blocked


def test_the_memory_is_bounded():
    policy = CountingPure()
    kernel = GovernanceKernel([policy])
    for i in range(MAX_REMEMBERED_ACTIONS + 10):
        kernel.check("tool", {"text": f"t{i}"})
    assert len(kernel._remembered) == MAX_REMEMBERED_ACTIONS
    asked = policy.asked
    kernel.check("tool", {"text": "t0"})  # the oldest was forgotten: asked again
    assert policy.asked == asked + 1


def test_sql_policy_with_cache_off_is_not_remembered(monkeypatch):
    """cache=False asks for every text to be judged afresh: the kernel does not remember it either."""
    assert is_pure(SQLPolicy(deny=["DROP"])) and not is_pure(SQLPolicy(deny=["DROP"], cache=False))
    policy = SQLPolicy(deny=["DROP"], cache=False)
    asked: List[str] = []
    evaluate = SQLPolicy.evaluate
    monkeypatch.setattr(SQLPolicy, "evaluate", lambda self, a, c: asked.append(a.args["query"]) or evaluate(self, a, c))
    kernel = GovernanceKernel([policy])
    assert all(kernel.check("database_query", {"query": "SELECT 1"}).allowed for _ in range(3))
    assert asked == ["SELECT 1"] * 3


def test_a_forked_child_gives_its_decisions_ids_of_its_own():
    import os

    kernel = GovernanceKernel([CountingPure()])
    parent_first = kernel.check("tool", {"text": "fine"}).decision_id
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child inherits the kernel, its prefix and its counter
        try:
            ids = " ".join(kernel.check("tool", {"text": "fine"}).decision_id for _ in range(3))
            os.write(write, ids.encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read) as pipe:
        child_ids = pipe.read().split()
    os.waitpid(pid, 0)
    parent_ids = [kernel.check("tool", {"text": "fine"}).decision_id for _ in range(3)]
    assert len(child_ids) == 3
    assert not set(child_ids) & set(parent_ids + [parent_first])
    assert child_ids[0].split("-")[0] != parent_first.split("-")[0]


def test_a_remembered_check_still_takes_its_own_frozen_snapshot():
    import dataclasses

    import pytest

    kernel = GovernanceKernel([CountingPure()])

    class Sneaky(str):
        def __eq__(self, other):  # would tell a comparison "bad" is "fine"
            return True

        __hash__ = str.__hash__

    kernel.check("tool", {"text": "fine"})
    args = {"text": "fine"}
    decision = kernel.check("tool", args)  # remembered: no policy asked
    args["text"] = "bad"
    assert decision.action.args == {"text": "fine"} and decision.allowed
    assert type(decision.action).__name__ == "Action" and type(decision).__name__ == "Decision"
    with pytest.raises(dataclasses.FrozenInstanceError):
        decision.verdict = "blocked"
    with pytest.raises(dataclasses.FrozenInstanceError):
        decision.action.args = {}
    with pytest.raises(TypeError):
        decision.action.args["text"] = "bad"
    sneaky = kernel.check("tool", {"text": Sneaky("bad")})
    assert type(sneaky.action.args["text"]) is str and sneaky.blocked
    assert dataclasses.replace(decision) == decision
