"""Fail closed on the kernel's loose ends: costs too large for a float, a configuration changed
after the kernel worked out what applies to a tool, and hostile values where the kernel reads
what a caller or a policy handed it. Each check decides and records, or the bad value is a clear
error where it is configured; never an exception with no record."""

from __future__ import annotations

import threading
from typing import Any, List

import pytest

from agentlightning.contrib.kernel.agentos import CostControlPolicy, GovernanceKernel, Policy, SQLPolicy
from agentlightning.contrib.kernel.agentos.actions import Action
from agentlightning.contrib.kernel.agentos.violations import (
    GovernanceConfigError,
    PolicyViolation,
    constraint_cost,
    finite_number,
)

HUGE = 10**400  # an int float() cannot hold: OverflowError


@pytest.fixture
def kernel_with_trail(tmp_path):
    kernels: List[GovernanceKernel] = []

    def build(policies: Any) -> GovernanceKernel:
        kernel = GovernanceKernel(policies, recorder=tmp_path / f"audit-{len(kernels)}.db")
        kernels.append(kernel)
        return kernel

    yield build
    for kernel in kernels:
        kernel.close()


# ----------------------------------------------------------------------------- costs


@pytest.mark.parametrize("cost", [HUGE, -1, float("nan"), float("inf"), "1", True])
def test_a_call_whose_cost_is_not_one_is_blocked_and_recorded(kernel_with_trail, cost):
    kernel = kernel_with_trail([SQLPolicy(deny=["DROP"]), CostControlPolicy(max_cost_usd=10)])
    decision = kernel.check("database_query", {"query": "SELECT 1"}, cost_usd=cost)
    assert decision.blocked
    assert decision.violations[0].policy_name == "GovernanceKernel"
    assert "cost_usd must be" in decision.reason
    assert decision.audit_id is not None
    assert kernel.verify_audit()["valid"]


def test_a_huge_cost_with_arguments_that_cannot_be_snapshot_names_both(kernel_with_trail):
    kernel = kernel_with_trail([SQLPolicy(deny=["DROP"])])
    decision = kernel.check("database_query", {"query": "SELECT 1", "rows": iter([1])}, cost_usd=HUGE)
    assert decision.blocked
    assert "too large for a float" in decision.reason and "iterator" in decision.reason


def test_an_action_built_with_a_huge_cost_is_a_clear_error():
    with pytest.raises(ValueError, match=r"cost_usd must be finite and >= 0, got an int of 1329 bits"):
        Action("llm", {}, cost_usd=HUGE)


def test_a_budget_too_large_for_a_float_is_a_clear_configuration_error():
    with pytest.raises(GovernanceConfigError, match="max_cost_usd must be finite and >= 0"):
        CostControlPolicy(max_cost_usd=HUGE)
    budget = CostControlPolicy(max_cost_usd=1.0)
    with pytest.raises(ValueError, match="cost_usd must be finite and >= 0"):
        budget.report_cost(HUGE)
    with pytest.raises(ValueError, match="cost_usd must be finite and >= 0"):
        GovernanceKernel([budget]).report_cost(float("inf"))
    assert budget.spent() == 0.0


def test_configured_numbers_too_large_for_a_float_are_clear_errors():
    with pytest.raises(GovernanceConfigError, match="must be finite, got an int of 1329 bits"):
        finite_number("RewardConfig.clean_bonus", HUGE)
    with pytest.raises(GovernanceConfigError, match="must be finite"):
        PolicyViolation("blocked", "P", "d", "high", penalty=-HUGE)
    with pytest.raises(GovernanceConfigError, match="cost weight for 'high' must be a finite number"):
        constraint_cost([], weights={"high": HUGE})


def test_a_recorded_penalty_too_large_for_a_float_is_named_not_raised():
    from agentlightning.contrib.kernel.agentos.violations import VIOLATION_FIELDS

    problem = VIOLATION_FIELDS["penalty"].check(-HUGE)
    assert problem == "must be a finite number, got an int of 1329 bits (too large for a float)"


class HugePenalty(Policy):
    """Sets a violation's penalty after building it, to an int float() cannot hold."""

    runs_inline = True

    def evaluate(self, action, context):
        violation = self.violation("found something")
        violation.penalty = -HUGE
        return [violation]


def test_a_policy_violation_changed_to_a_huge_penalty_blocks_and_is_recorded(kernel_with_trail):
    kernel = kernel_with_trail([HugePenalty()])
    decision = kernel.check("search", {"q": "x"})
    assert decision.blocked
    assert "penalty is int, not a finite float" in decision.reason
    assert decision.audit_id is not None
    assert decision.total_penalty == -50.0  # the kernel's failure at error_severity, not the huge one
    assert kernel.verify_audit()["valid"]


# ----------------------------------------------------------------------------- configuration changes


def test_a_policy_set_to_detect_is_asked_about_tools_it_did_not_apply_to_before():
    policy = SQLPolicy(deny=["DROP"], detect=False)
    kernel = GovernanceKernel([policy])
    assert kernel.check("search", {"q": "DROP TABLE users"}).allowed  # search is not a SQL tool
    assert kernel.check(Action("search", {"q": "DROP TABLE users", "n": 1})).allowed
    policy.detect = True  # a pure policy's configuration: every kernel works it out again
    assert kernel.check("search", {"q": "DROP TABLE users"}).blocked
    assert kernel.check(Action("search", {"q": "DROP TABLE users", "n": 1})).blocked


def test_a_note_follows_the_configuration():
    policy = SQLPolicy(deny=["DROP"], detect=False, not_sql_tools=["send_message"])
    kernel = GovernanceKernel([policy])
    assert kernel.check("send_message", {"text": "hello"}).notes == ()
    policy.detect = True  # now the tool's arguments are skipped by declaration: the note says so
    assert kernel.check("send_message", {"text": "hello"}).notes
    assert kernel.check(Action("send_message", {"text": "hello", "n": 1})).notes


class Counting(Policy):
    runs_inline = True
    pure = True

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        object.__setattr__(self, "asked", 0)

    def evaluate(self, action, context):
        object.__setattr__(self, "asked", self.asked + 1)
        return [self.violation("always")] if action.args.get("q") == "bad" else []


def test_policies_added_or_removed_are_asked_or_not_from_the_next_check_on():
    first, second = Counting(name="first"), Counting(name="second")
    kernel = GovernanceKernel([first])
    for _ in range(2):
        assert kernel.check("search", {"q": "fine"}).allowed
    assert first.asked == 1  # remembered after the first check
    kernel.policies = kernel.policies + (second,)
    assert kernel.check("search", {"q": "fine"}).allowed
    assert (first.asked, second.asked) == (2, 1)  # nothing remembered from before the change
    bad = Action("search", {"q": "bad", "n": 1})
    assert kernel.check(bad).reason == "first[high]: always; second[high]: always"
    assert kernel.policy_names == ["first", "second"]
    kernel.policies = [second]
    asked = first.asked
    assert kernel.check("search", {"q": "bad"}).reason == "second[high]: always"
    assert kernel.check(Action("search", {"q": "bad", "n": 1})).reason == "second[high]: always"
    assert first.asked == asked  # removed: asked no more


def test_a_changed_list_of_policies_is_checked_as_the_constructor_checks_it():
    kernel = GovernanceKernel([SQLPolicy(deny=["DROP"])])
    with pytest.raises(TypeError, match="every policy must be a Policy"):
        kernel.policies = ["SQLPolicy"]
    with pytest.raises(GovernanceConfigError, match="policy names must be unique"):
        kernel.policies = [SQLPolicy(deny=["DROP"]), SQLPolicy(deny=["DELETE"])]
    assert kernel.check("database_query", {"query": "DROP TABLE t"}).blocked  # unchanged after a refusal


class Rewrites(Policy):
    runs_inline = True

    def rewrite(self, action, context):
        return Action(action.tool_name, {"q": "safe"})

    def evaluate(self, action, context):
        return []


def test_a_rewriting_policy_added_later_rewrites():
    kernel = GovernanceKernel([Counting()])
    assert kernel.check("search", {"q": "x"}).verdict.value == "allowed"
    kernel.policies = kernel.policies + (Rewrites(),)
    decision = kernel.check("search", {"q": "x"})
    assert decision.verdict.value == "modified" and decision.action.args["q"] == "safe"


# ----------------------------------------------------------------------------- hostile values


class Hostile(str):
    """A str whose own methods raise once armed (after the caller built its dict)."""

    armed = False

    def __eq__(self, other: object) -> bool:
        if Hostile.armed:
            raise RuntimeError("hostile __eq__")
        return str.__eq__(self, other)

    def __hash__(self) -> int:
        if Hostile.armed:
            raise RuntimeError("hostile __hash__")
        return 1  # every Hostile collides: a dict must compare them with __eq__

    def strip(self, *args: Any) -> str:
        raise RuntimeError("hostile strip")

    def __len__(self) -> int:
        raise RuntimeError("hostile __len__")

    def __format__(self, spec: str) -> str:
        raise RuntimeError("hostile __format__")


@pytest.fixture
def armed():
    Hostile.armed = True
    yield
    Hostile.armed = False


def test_a_hostile_tool_name_is_read_as_the_text_it_holds(kernel_with_trail, armed):
    kernel = kernel_with_trail([SQLPolicy(deny=["DROP"])])
    decision = kernel.check(Hostile("database_query"), {"query": "DROP TABLE t"})
    assert decision.blocked and type(decision.action.tool_name) is str
    assert decision.action.tool_name == "database_query"
    assert kernel.check(Hostile("database_query"), {"query": "SELECT 1"}).allowed


def test_hostile_argument_names_are_read_as_the_text_they_hold(kernel_with_trail):
    args = {Hostile("query"): "DROP TABLE t", Hostile("other"): "x", Hostile("gone"): "y"}
    del args[Hostile("gone")]  # a dict with a deleted entry: its copy inserts every key again
    kernel = kernel_with_trail([SQLPolicy(deny=["DROP"])])
    Hostile.armed = True
    try:
        decision = kernel.check("database_query", args)
    finally:
        Hostile.armed = False
    assert decision.blocked and decision.audit_id is not None
    assert decision.reason == "SQLPolicy[critical]: DROP statement denied: DROP TABLE t"
    assert [type(name) for name in decision.action.args] == [str, str]


class HostileNote(Policy):
    runs_inline = True

    def note_for(self, tool_name):
        return Hostile("a note")

    def evaluate(self, action, context):
        return []


def test_a_note_of_a_str_subclass_is_recorded_as_its_text(kernel_with_trail, armed):
    kernel = kernel_with_trail([HostileNote()])
    decision = kernel.check("search", {"q": "x"})
    assert decision.allowed and decision.notes == ("HostileNote: a note",)
    assert type(decision.notes[0]) is str


class HostileList(list):
    def __iter__(self):
        raise RuntimeError("hostile __iter__")


class ReturnsHostileList(Policy):
    runs_inline = True

    def evaluate(self, action, context):
        return HostileList([self.violation("x")])


class HostileViolation(PolicyViolation):
    """Says whether it blocks until it is handed over; then raises when asked."""

    hostile = False

    @property
    def action_blocked(self):  # type: ignore[override]
        if self.hostile:
            raise RuntimeError("hostile action_blocked")
        return self.__dict__.get("blocks")

    @action_blocked.setter
    def action_blocked(self, value):
        self.__dict__["blocks"] = value


class ReturnsHostileViolation(Policy):
    runs_inline = True

    def evaluate(self, action, context):
        violation = HostileViolation("warned", self.name, "x", "low")
        violation.hostile = True
        return [violation]


class ChangesItsViolation(Policy):
    runs_inline = True

    def evaluate(self, action, context):
        violation = self.violation("x", severity="low")
        violation.severity = Hostile("low")
        return [violation]


class Keeps(Policy):
    """Keeps its violation, to change it after the decision."""

    runs_inline = True

    def evaluate(self, action, context):
        self.kept = PolicyViolation("warned", self.name, "original", "low")
        return [self.kept]


@pytest.mark.parametrize("policy", [ReturnsHostileList(), ReturnsHostileViolation(), ChangesItsViolation()])
def test_a_policy_answer_with_hostile_parts_blocks_and_is_recorded(kernel_with_trail, policy, armed):
    kernel = kernel_with_trail([policy])
    decision = kernel.check("search", {"q": "x"})
    assert decision.blocked
    assert decision.audit_id is not None
    assert all(type(v) is PolicyViolation for v in decision.violations)
    assert "failing closed" in decision.reason


def test_a_policy_cannot_change_a_violation_after_the_decision(kernel_with_trail):
    policy = Keeps()
    kernel = kernel_with_trail([policy])
    decision = kernel.check("search", {"q": "x"})
    policy.kept.description = "changed afterwards"
    assert decision.verdict.value == "warned" and decision.violations[0].description == "original"


class RewritesToASubclass(Policy):
    runs_inline = True

    def rewrite(self, action, context):
        class Sneaky(Action):
            def __eq__(self, other):
                raise RuntimeError("hostile __eq__")

            __hash__ = Action.__hash__

        return Sneaky(action.tool_name, {"q": "safe"})

    def evaluate(self, action, context):
        return []


def test_a_rewrite_to_an_action_subclass_is_its_plain_action(kernel_with_trail):
    kernel = kernel_with_trail([RewritesToASubclass()])
    decision = kernel.check("search", {"q": "x"})
    assert decision.verdict.value == "modified" and type(decision.action) is Action
    assert decision.action.args == {"q": "safe"}


class EndlessList(list):
    def __iter__(self):
        threading.Event().wait()  # never set: this answer can never be read
        return iter(())


class ReturnsEndlessList(Policy):
    """Runs on a thread of its own (not inline): its answer's __iter__ never ends."""

    def evaluate(self, action, context):
        return EndlessList()


def test_a_threaded_policy_answer_that_never_ends_times_out_on_its_own_thread(kernel_with_trail):
    kernel = GovernanceKernel([ReturnsEndlessList()], policy_timeout_s=0.2)
    decision = kernel.check("search", {"q": "x"})
    assert decision.blocked and "timed out after 0.2s" in decision.reason


def test_check_takes_no_private_keyword_and_refuse_records_a_blocked_decision_of_its_own():
    """``refuse`` enters the decision step itself; ``check``'s signature is only its public one."""
    import inspect

    assert [name for name in inspect.signature(GovernanceKernel.check).parameters if name.startswith("_")] == []
    kernel = GovernanceKernel([SQLPolicy(deny=["DROP"])])
    decision = kernel.refuse(Action.sql("SELECT 1"), "the rollout has ended", refused_by="AgentOSRunner")
    assert decision.blocked and [v.policy_name for v in decision.violations] == ["AgentOSRunner"]
    assert kernel.check(Action.sql("SELECT 1")).allowed  # a refusal is not remembered as an answer
