"""Fail closed on every path, in bounded time (the kernel's part): text the guard cannot
read to the end blocks wherever it sits, every way a policy can end is a blocked and recorded
decision, and a check ends within its budget however the text is shaped. Real kernel, real
audit trail, real parsers."""

import json
import time

import pytest

from agentlightning.contrib.kernel.agentos import GovernanceKernel, Policy, SQLPolicy
from agentlightning.contrib.kernel.agentos.sql import ReadingBudget

DENY = ["DROP", "DELETE", "TRUNCATE"]
#: Nested past Python's recursion limit (about 1,000 levels).
DEEP_JSON_DROP = "[" * 1200 + json.dumps("DROP TABLE users") + "]" * 1200


@pytest.fixture
def kernel():
    return GovernanceKernel([SQLPolicy(deny=DENY)])


def test_a_drop_inside_json_nested_past_the_recursion_limit_blocks_on_a_tool_no_policy_names(kernel):
    decision = kernel.check("notes", {"text": DEEP_JSON_DROP})
    assert decision.blocked
    assert "nested too deeply" in decision.reason


def test_a_drop_inside_deep_json_blocks_in_a_listed_tools_second_argument(kernel):
    decision = kernel.check("database_query", {"query": "SELECT 1", "params": DEEP_JSON_DROP})
    assert decision.blocked
    assert "params" in decision.reason


def test_sql_nested_past_what_the_parser_can_read_blocks_in_another_tools_argument(kernel):
    text = "SELECT " + "(" * 5000 + "1" + ")" * 5000 + "; DROP TABLE users"
    assert kernel.check("notes", {"text": text}).blocked


def test_a_string_over_max_query_chars_in_another_tools_argument_is_not_taken_as_harmless():
    kernel = GovernanceKernel([SQLPolicy(deny=DENY, max_query_chars=1_000)])
    decision = kernel.check("notes", {"text": "DROP TABLE users; " + "SELECT 1; " * 200})
    assert decision.blocked
    assert "max_query_chars" in decision.reason and "not_sql_tools" in decision.reason


class _Exits(Policy):
    """A policy whose every hook can end the way a careless one does: ``sys.exit``."""

    runs_inline = True

    def __init__(self, hook, exception=SystemExit(3)):
        super().__init__()
        self.hook, self.exception = hook, exception

    def _maybe(self, hook):
        if hook == self.hook:
            raise self.exception

    def applies_to(self, tool_name):
        self._maybe("applies_to")
        return True

    def note_for(self, tool_name):
        self._maybe("note_for")
        return None

    def evaluate(self, action, context):
        self._maybe("evaluate")
        return []

    def on_allowed(self, action, context):
        self._maybe("on_allowed")


@pytest.mark.parametrize("hook", ["evaluate", "on_allowed", "note_for"])
@pytest.mark.parametrize("exception", [SystemExit(3), GeneratorExit()], ids=["SystemExit", "GeneratorExit"])
def test_a_policy_ending_with_a_base_exception_is_a_blocked_recorded_decision(tmp_path, hook, exception):
    kernel = GovernanceKernel([_Exits(hook, exception)], recorder=tmp_path / "audit.db")
    decision = kernel.check("database_query", {"query": "SELECT 1"})
    assert decision.blocked
    assert type(exception).__name__ in decision.reason
    assert decision.audit_id is not None
    rows = kernel.audit.records()
    assert [r["policy_verdict"] for r in rows] == ["blocked"]
    assert type(exception).__name__ in rows[0]["violation_reason"]


def test_a_policy_on_its_own_thread_ending_with_system_exit_is_a_blocked_decision():
    policy = _Exits("evaluate")
    policy.runs_inline = False
    decision = GovernanceKernel([policy]).check("database_query", {"query": "SELECT 1"})
    assert decision.blocked and "SystemExit" in decision.reason


def test_an_interrupt_inside_a_policy_is_recorded_as_blocked_and_then_stops_the_caller(tmp_path):
    kernel = GovernanceKernel([_Exits("evaluate", KeyboardInterrupt())], recorder=tmp_path / "audit.db")
    with pytest.raises(KeyboardInterrupt):
        kernel.check("database_query", {"query": "SELECT 1"})
    rows = kernel.audit.records()
    assert [r["policy_verdict"] for r in rows] == ["blocked"]
    assert "KeyboardInterrupt" in rows[0]["violation_reason"]


#: The review's worst input: 98 KB of nested comment openers (12.5 s of CPU before).
WORST = "SELECT 1 /*" + "/*" * 49_000


@pytest.mark.parametrize("dialect", [None, "postgres", "mysql", "sqlite"])
def test_the_reviews_worst_input_is_decided_within_the_bound(dialect):
    kernel = GovernanceKernel([SQLPolicy(deny=DENY, dialect=dialect)], policy_timeout_s=1.0)
    started = time.monotonic()
    decision = kernel.check("database_query", {"query": WORST})
    assert time.monotonic() - started < 1.0
    assert decision.blocked
    assert "max_comment_openers" in decision.reason


def test_a_text_over_no_counted_limit_is_still_stopped_at_the_deadline():
    """With the counted limit raised out of the way, the worker reading the text is killed at
    the deadline: the check ends, blocked, and a later check of the same text is judged afresh."""
    budget = ReadingBudget(max_comment_openers=10**9, deadline_s=0.5)
    kernel = GovernanceKernel([SQLPolicy(deny=DENY, reading_budget=budget)], policy_timeout_s=30.0)
    kernel.check("database_query", {"query": "SELECT 1 /*" + "/*" * 6000})  # starts a worker
    for _ in range(2):
        started = time.monotonic()
        decision = kernel.check("database_query", {"query": WORST})
        elapsed = time.monotonic() - started
        assert decision.blocked
        assert "deadline_s=0.5" in decision.reason
        assert elapsed < 0.5 + 2.0  # the deadline, and a replacement worker's start at most


def test_a_long_text_read_in_a_worker_is_judged_as_the_inline_reading_judges_it():
    budget = ReadingBudget(max_inline_chars=100)
    # This test compares verdicts, not times: the worker's first start on a loaded machine may
    # take longer than the default policy_timeout_s, which the kernel measures around evaluate.
    kernel = GovernanceKernel([SQLPolicy(deny=DENY, reading_budget=budget)], policy_timeout_s=30.0)
    query = "SELECT a FROM t WHERE x IN (" + ",".join(map(str, range(500))) + ")"
    decision = kernel.check("database_query", {"query": query})
    assert decision.allowed, decision.reason
    decision = kernel.check("database_query", {"query": query + "; DROP TABLE t"})
    assert decision.blocked and "DROP statement denied" in decision.reason
