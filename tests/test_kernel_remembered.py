"""The kernel remembers pure policies' answers per action, and only theirs, and only while true."""

from __future__ import annotations

from typing import List

from agentlightning.contrib.kernel.agentos import CostControlPolicy, GovernanceKernel, Policy, SQLPolicy
from agentlightning.contrib.kernel.agentos.actions import Action, ActionContext
from agentlightning.contrib.kernel.agentos.memo import MAX_REMEMBERED_ACTIONS, is_pure
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
    assert len({id(d) for d in decisions}) == 5  # each check its own decision
    # Identical calls share the one frozen action the policy judged: nothing can change it.
    assert all(d.action is decisions[0].action for d in decisions)
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
    assert len(kernel._memo) == MAX_REMEMBERED_ACTIONS
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


# ----------------------------------------------------------------- identical calls share one action


def test_identical_calls_share_one_action_and_keep_their_own_decisions(tmp_path):
    from agentlightning.contrib.kernel.agentos.audit import AuditTrail, open_flight_recorder

    trail = AuditTrail(open_flight_recorder(tmp_path / "audit.db"))
    kernel = GovernanceKernel([SQLPolicy(deny=["DROP"])], recorder=trail)
    try:
        decisions = [kernel.check("database_query", {"query": "SELECT 1"}) for _ in range(3)]
        assert decisions[1].action is decisions[0].action is decisions[2].action
        assert len({d.decision_id for d in decisions}) == 3
        assert len({d.audit_id for d in decisions}) == 3 and None not in {d.audit_id for d in decisions}
        assert kernel.verify_audit()["valid"]
        # A different content is a different action; so are calls of more names, or with a cost.
        other = kernel.check("database_query", {"query": "SELECT 2"})
        assert other.action is not decisions[0].action and other.action.args == {"query": "SELECT 2"}
        two = [kernel.check("database_query", {"query": "SELECT 1", "db": "main"}) for _ in range(2)]
        assert two[0].action is two[1].action and two[0].action is not decisions[0].action
        priced = kernel.check("database_query", {"query": "SELECT 1"}, cost_usd=0.5)
        assert priced.action.cost_usd == 0.5 and priced.action is not decisions[0].action
    finally:
        kernel.close()


def test_a_negative_zero_cost_is_not_given_the_action_of_zero():
    import math

    kernel = GovernanceKernel([SQLPolicy(deny=["DROP"])])
    zero = kernel.check("database_query", {"query": "SELECT 1"}, cost_usd=0.0)
    negative = kernel.check("database_query", {"query": "SELECT 1"}, cost_usd=-0.0)
    assert math.copysign(1.0, negative.action.cost_usd) == -1.0  # as the constructor keeps it
    assert math.copysign(1.0, zero.action.cost_usd) == 1.0


def test_str_subclasses_other_keys_and_other_values_keep_the_full_path():
    class Shifty(str):
        def __hash__(self):  # would collide with the plain text's fingerprint
            return hash("SELECT 1")

        def __eq__(self, other):
            return True

    policy = CountingPure()
    kernel = GovernanceKernel([policy])
    plain = kernel.check("tool", {"text": "fine"})
    shifty = kernel.check("tool", {"text": Shifty("bad")})  # its plain value "bad" is judged
    assert shifty.blocked and shifty.action is not plain.action
    assert type(shifty.action.args["text"]) is str and shifty.action.args["text"] == "bad"
    shifty_name = kernel.check("tool", {Shifty("text"): "fine"})
    assert shifty_name.action is not plain.action and type(next(iter(shifty_name.action.args))) is str
    import pytest

    with pytest.raises(TypeError):  # a name that is not a str is refused, as before
        kernel.check("tool", {1: "fine"})
    asked = policy.asked
    for value in (1, 1.5, None, True, b"fine"):
        first, second = kernel.check("tool", {"text": value}), kernel.check("tool", {"text": value})
        assert first.allowed and first.action is not second.action  # not remembered: asked each time
    assert policy.asked == asked + 10
    listed = [kernel.check("tool", {"text": ["fine"]}) for _ in range(2)]
    assert listed[0].action is not listed[1].action and listed[0].action.args["text"] == ("fine",)


def test_a_key_whose_eq_raises_while_a_name_is_looked_up_leaves_the_call_to_the_full_path():
    """The key reads each value by its name. A key that is not a str, later in the dict's order
    but first on the name's probe path (it shares the name's hash and took a freed slot), has its
    ``__eq__`` called by that look-up: whatever it raises, the call is not remembered and the full
    path reads it (and refuses the key that is not a str, as it always did)."""
    import pytest

    from agentlightning.contrib.kernel.agentos.actions import NO_COST, content_key

    class Colliding:
        armed = False

        def __hash__(self):
            return hash("query")

        def __eq__(self, other):
            if Colliding.armed:
                raise ValueError("a key's own __eq__")
            return False

    args = {hash("query") % 8: "placeholder"}  # takes the first slot of the name's probe path
    args["query"] = "SELECT 1"
    del args[hash("query") % 8]
    args[Colliding()] = "x"  # the freed slot: probed before the name's own
    assert list(args)[0] == "query"
    Colliding.armed = True
    try:
        assert content_key("tool", args, NO_COST) is None
        with pytest.raises(TypeError, match="keys must be str"):
            GovernanceKernel([CountingPure()]).check("tool", args)
    finally:
        Colliding.armed = False


def test_a_dict_changed_by_another_thread_never_reaches_the_tool_unjudged():
    """Another thread rewrites, adds and removes entries of the caller's dict in a loop while
    checks run: every decision is about exactly the snapshot it holds, and every allowed one
    holds a value the policy judged harmless."""
    import sys
    import threading

    judged: List[str] = []

    class Records(CountingPure):
        """Blocks an action any of whose values is "bad"; records every value it judged."""

        pure = True

        def evaluate(self, action, context):
            judged.extend(action.args.values())
            return [self.violation("bad value")] if "bad" in action.args.values() else []

    kernel = GovernanceKernel([Records()])
    args = {"text": "fine"}
    stop = threading.Event()

    def mutate():
        i = 0
        while not stop.is_set():
            i += 1
            args["text"] = "bad" if i % 2 else f"fine{i % 7}"
            if i % 5 == 0:
                args["extra"] = "bad"
            if i % 5 == 2:
                args.pop("extra", None)
            if i % 11 == 0:
                args.pop("text", None)
                args["text"] = "fine"

    switch = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as possible
    writer = threading.Thread(target=mutate)
    writer.start()
    try:
        decisions = []
        for _ in range(20000):
            decisions.append(kernel.check("tool", args))
    finally:
        stop.set()
        writer.join()
        sys.setswitchinterval(switch)
    assert len(decisions) == 20000
    judged_values = set(judged)
    for decision in decisions:
        values = set(decision.action.args.values())
        if decision.allowed:
            assert "bad" not in values
        else:
            assert "bad" in values
        assert values <= judged_values  # nothing the policy never saw
    assert any(d.blocked for d in decisions) and any(d.allowed for d in decisions)


def test_setting_a_policy_impure_is_asked_every_time_again():
    policy = CountingPure()
    kernel = GovernanceKernel([policy])
    kernel.check("tool", {"text": "fine"})
    kernel.check("tool", {"text": "fine"})
    assert policy.asked == 1
    policy.pure = False  # a configuration change: the plan that said "pure" is forgotten too
    kernel.check("tool", {"text": "fine"})
    kernel.check("tool", {"text": "fine"})
    assert policy.asked == 3


def test_a_budget_counts_shared_actions_once_per_check():
    budget = CostControlPolicy(max_cost_usd=1.0)
    kernel = GovernanceKernel([SQLPolicy(deny=["DROP"]), budget])
    context = ActionContext(rollout_id="r1")
    decisions = [kernel.check("database_query", {"query": "SELECT 1"}, cost_usd=0.3, context=context) for _ in range(4)]
    assert [d.allowed for d in decisions] == [True, True, True, False]
    assert budget.spent(context) == 0.9 and not budget._reserved


def test_a_fork_while_another_thread_holds_the_clock_lock_leaves_the_child_a_free_lock():
    """Only the forking thread goes on in a child: a lock another thread held at the fork stays
    held there, and the child's first kernel would wait on it for ever."""
    import os
    import threading
    import time

    from agentlightning.contrib.kernel.agentos import gc_clock as gc_clock_module

    GovernanceKernel([CountingPure()])  # the first kernel installs the fork hook
    held, release = threading.Event(), threading.Event()

    def hold():
        with gc_clock_module._LOCK:
            held.set()
            release.wait(30)

    holder = threading.Thread(target=hold)
    holder.start()
    assert held.wait(10)
    try:
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                if gc_clock_module._LOCK.acquire(timeout=5):
                    gc_clock_module._LOCK.release()
                    child = GovernanceKernel([CountingPure()])
                    code = 0 if child.check("tool", {"text": "fine"}).allowed else 2
            finally:
                os._exit(code)
        deadline = time.monotonic() + 30
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            if time.monotonic() > deadline:
                os.kill(pid, 9)
                os.waitpid(pid, 0)
                raise AssertionError("the forked child waited on the garbage-collection clock's lock")
            time.sleep(0.05)
        assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    finally:
        release.set()
        holder.join()


def test_shared_actions_still_ask_impure_policies_and_are_forgotten_with_the_answers():
    class CountingImpure(Policy):
        """Not pure: asked on every check; raises when told to."""

        runs_inline = True

        def __init__(self):
            super().__init__()
            self.asked = 0
            self.fail = False

        def evaluate(self, action, context):
            self.asked += 1
            if self.fail:
                raise RuntimeError("down")
            return []

    pure, impure = CountingPure(), CountingImpure()
    kernel = GovernanceKernel([pure, impure])
    first = kernel.check("tool", {"text": "fine"})
    second = kernel.check("tool", {"text": "fine"})
    assert second.action is first.action and pure.asked == 1 and impure.asked == 2
    impure.fail = True  # not pure: its configuration is not remembered, and it is asked again
    failed = kernel.check("tool", {"text": "fine"})
    assert failed.blocked and failed.action is first.action and "raised RuntimeError" in failed.reason
    impure.fail = False
    pure.word = "worse"  # a configuration change: answers and shared actions forgotten
    after = kernel.check("tool", {"text": "fine"})
    assert after.allowed and after.action is not first.action and pure.asked == 2
    assert kernel.check("tool", {"text": "fine"}).action is after.action
    # Bounded: the earliest remembered action is forgotten with its answers.
    only_pure = GovernanceKernel([CountingPure()])
    oldest = only_pure.check("tool", {"text": "t0"}).action
    for i in range(1, MAX_REMEMBERED_ACTIONS + 1):
        only_pure.check("tool", {"text": f"t{i}"})
    assert len(only_pure._memo) == MAX_REMEMBERED_ACTIONS
    again = only_pure.check("tool", {"text": "t0"}).action
    assert again is not oldest and again == oldest


def test_a_dict_resized_by_another_thread_during_the_full_snapshot_is_still_decided():
    """Arguments that are not one plain string take the full snapshot path. Another thread
    resizing the caller's dict meanwhile must not make the check raise with no record (it did:
    the path iterated the caller's dict more than once): every check returns a decision whose
    arguments are one state of the dict."""
    import sys
    import threading

    kernel = GovernanceKernel([SQLPolicy(deny=["DROP"])])
    args = {"query": "SELECT 1", "params": [1, 2]}
    stop = threading.Event()

    def resize():
        i = 0
        while not stop.is_set():
            i += 1
            args[f"k{i % 3}"] = [i]
            if i % 2:
                args.pop(f"k{(i + 1) % 3}", None)

    switch = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    writer = threading.Thread(target=resize)
    writer.start()
    try:
        decisions = [kernel.check("database_query", args) for _ in range(5000)]
    finally:
        stop.set()
        writer.join()
        sys.setswitchinterval(switch)
    assert all(d.allowed for d in decisions)
    assert all(d.action.args["query"] == "SELECT 1" and d.action.args["params"] == (1, 2) for d in decisions)


def test_a_mapping_that_cannot_be_read_is_refused_and_recorded(tmp_path):
    from collections.abc import Mapping

    class Unreadable(Mapping):
        def __getitem__(self, key):
            raise KeyError(key)

        def __iter__(self):
            raise RuntimeError("cannot list my keys")

        def __len__(self):
            return 1

    kernel = GovernanceKernel([SQLPolicy(deny=["DROP"])], recorder=tmp_path / "audit.db")
    decision = kernel.check("database_query", Unreadable())
    assert decision.blocked and decision.audit_id is not None
    assert "the arguments could not be read: RuntimeError: cannot list my keys" in decision.reason
    assert kernel.verify_audit()["valid"] is True


def test_every_call_form_is_served_by_the_memo_and_keeps_its_own_decision():
    """A tool name and a dict, a prebuilt Action, an Action built in each call and a dict of two
    arguments: each form is asked once per content, and each check is still its own decision."""
    policy = CountingPure()
    kernel = GovernanceKernel([policy])
    prebuilt = Action("tool", {"text": "fine"})
    forms = [
        lambda: kernel.check("tool", {"text": "fine"}),
        lambda: kernel.check(prebuilt),
        lambda: kernel.check(Action("tool", {"text": "fine"})),
        lambda: kernel.check("tool", {"text": "fine", "note": "x"}),
        lambda: kernel.check(Action("tool", {"text": "fine", "note": "x"})),
    ]
    decisions = [form() for form in forms for _ in range(3)]
    assert policy.asked == 2  # one content of one argument, one of two
    assert all(d.allowed for d in decisions)
    assert len({d.decision_id for d in decisions}) == len(decisions)
    assert all(decisions[i].action is prebuilt for i in (3, 4, 5))  # a caller's own Action is what is decided
    blocked = [kernel.check(Action("tool", {"text": "bad"})) for _ in range(3)]
    assert policy.asked == 3 and all(d.blocked for d in blocked)
    assert blocked[0].violations[0] is not blocked[1].violations[0]


def test_an_action_sql_built_in_each_call_is_shared_and_served_by_the_memo():
    sql = SQLPolicy(deny=["DROP"])
    kernel = GovernanceKernel([sql])
    first, second = kernel.check(Action.sql("SELECT 41")), kernel.check(Action.sql("SELECT 41"))
    assert first.action is second.action and first.decision_id != second.decision_id
    assert kernel.check(Action.sql("DROP TABLE t")).blocked and kernel.check(Action.sql("DROP TABLE t")).blocked
    assert Action.sql("SELECT 41", cost_usd=0.5).cost_usd == 0.5  # another content: another action
    assert Action.sql("SELECT 41", tool_name="sql") is not Action.sql("SELECT 41")


def test_an_action_subclass_is_not_remembered():
    class Loud(Action):
        pass

    policy = CountingPure()
    kernel = GovernanceKernel([policy])
    for _ in range(3):
        kernel.check(Loud("tool", {"text": "fine"}))
    assert policy.asked == 3


def test_a_checked_decision_behaves_as_one_built_by_its_constructor():
    """The kernel stores only the fields a check made in a decision (defaults stay on the class):
    every field still reads, compares, copies, pickles and replaces as the dataclass's own."""
    import copy
    import dataclasses
    import pickle

    from agentlightning.contrib.kernel.agentos.actions import Decision

    kernel = GovernanceKernel([CountingPure()])
    checked = [kernel.check("tool", {"text": text}) for text in ("fine", "bad")]
    checked.append(kernel.check("tool", {"text": "fine"}, context=ActionContext(agent_id="a1", rollout_id="r1")))
    assert checked[0].context == ActionContext() and checked[2].context.rollout_id == "r1"
    for decision in checked:
        fields = {f.name: getattr(decision, f.name) for f in dataclasses.fields(Decision)}
        assert decision == Decision(**fields)
        assert dataclasses.asdict(decision) == dataclasses.asdict(Decision(**fields))
        assert pickle.loads(pickle.dumps(decision)) == decision == copy.deepcopy(decision)
        assert dataclasses.replace(decision, audit_id="x").audit_id == "x"
        assert (decision.violations, decision.signals, decision.original_action, decision.notes)[1:] == ((), None, ())
    assert kernel.check("tool", {"text": "bad"}).violations[0].description == "bad text"
