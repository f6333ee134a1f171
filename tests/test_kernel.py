"""GovernanceKernel against the real Agent OS: PolicyEngine, FlightRecorder, KernelSpace, signals."""

from __future__ import annotations

import gc
import json
import sqlite3
import threading
import time

import pytest
from agent_control_plane.policy_engine import Condition, ConditionalPermission
from agent_os import AgentSignal, FlightRecorder, KernelSpace, PolicyEngine

from agentlightning.contrib.kernel.agentos import (
    Action,
    ActionContext,
    AgentOSPolicy,
    CostControlPolicy,
    GovernanceConfigError,
    GovernanceKernel,
    Policy,
    Severity,
    SQLPolicy,
    ToolAllowListPolicy,
    Verdict,
    ViolationType,
    as_kernel,
    governance_context,
)
from agentlightning.contrib.kernel.agentos.audit.record import decision_from_record

from .failing_policies import CommitFails


def test_one_line_kernel_from_the_policies_users_know():
    kernel = GovernanceKernel(policy=[SQLPolicy(deny=["DROP", "DELETE"]), CostControlPolicy(max_cost_usd=100)])
    assert kernel.policy_names == ["SQLPolicy", "CostControlPolicy"]
    decision = kernel.check("database_query", {"query": "DROP TABLE users"})
    assert decision.verdict is Verdict.BLOCKED and decision.blocked and not decision.allowed
    assert decision.total_penalty == -100.0
    assert decision.reason.startswith("SQLPolicy[critical]: DROP statement denied")
    assert kernel.check(Action.sql("SELECT name FROM users WHERE id = 42")).verdict is Verdict.ALLOWED


def test_every_decision_is_one_record_on_disk_and_the_chain_verifies(audit_path):
    kernel = GovernanceKernel([SQLPolicy(deny=["DROP", "DELETE"])], recorder=audit_path)
    queries = ["SELECT 1", "DROP TABLE users", "SELECT 'DROP'", "DELETE/**/FROM t", "not sql at all"]
    with governance_context(agent_id="agent-7", rollout_id="ro-1", attempt_id="at-1"):
        decisions = [kernel.check(Action.sql(q)) for q in queries]
    kernel.close()

    reopened = FlightRecorder(db_path=str(audit_path))  # a fresh reader, as an auditor would
    rows = reopened.get_log()
    assert len(rows) == len(queries)
    assert reopened.verify_integrity()["valid"] is True
    by_decision = {decision_from_record(row)["agentos"]["decision_id"]: row for row in rows}
    for decision in decisions:
        assert decision.audit_id == decision.decision_id
        row = by_decision[decision.audit_id]
        envelope = decision_from_record(row)
        assert envelope["agentos"]["rollout_id"] == "ro-1" and envelope["agentos"]["attempt_id"] == "at-1"
        assert row["agent_id"] == "agent-7"
        assert row["policy_verdict"] == ("blocked" if decision.blocked else "allowed")
        assert [v["severity"] for v in envelope["agentos"]["violations"]] == [
            v.severity.value for v in decision.violations
        ]
    assert [d.blocked for d in decisions] == [False, True, False, True, True]
    reopened.close()


def test_editing_a_record_is_detected(audit_path):
    kernel = GovernanceKernel([SQLPolicy(deny=["DROP"])], recorder=audit_path)
    kernel.check(Action.sql("SELECT 1"))
    kernel.check(Action.sql("DROP TABLE users"))
    assert kernel.verify_audit()["valid"]
    kernel.close()
    conn = sqlite3.connect(audit_path)
    conn.execute("UPDATE audit_log SET policy_verdict = 'allowed' WHERE policy_verdict = 'blocked'")
    conn.commit()
    conn.close()
    result = FlightRecorder(db_path=str(audit_path)).verify_integrity()
    assert result["valid"] is False and "tampering" in result["error"]


def test_blocked_decisions_are_on_disk_before_check_returns(audit_path):
    recorder = FlightRecorder(db_path=str(audit_path), batch_size=1000, flush_interval_seconds=3600)
    kernel = GovernanceKernel([SQLPolicy(deny=["DROP"])], recorder=recorder)
    kernel.check(Action.sql("DROP TABLE users"))
    rows = sqlite3.connect(audit_path).execute("SELECT policy_verdict FROM audit_log").fetchall()
    assert rows == [("blocked",)]


def test_recorder_path_errors_are_clear(tmp_path):
    with pytest.raises(ValueError, match="is a directory; pass a file path"):
        GovernanceKernel([SQLPolicy()], recorder=tmp_path)
    with pytest.raises(TypeError, match="recorder must be an agent_os.FlightRecorder or a file path"):
        GovernanceKernel([SQLPolicy()], recorder=42)  # type: ignore[arg-type]


def test_agent_os_policy_engine_allow_list_and_conditions():
    engine = PolicyEngine()
    engine.add_constraint("analyst", ["database_query", "refund_user"])
    engine.add_conditional_permission(
        "analyst", ConditionalPermission("refund_user", [Condition("user_status", "eq", "verified")])
    )
    kernel = GovernanceKernel([AgentOSPolicy(engine, role="analyst", severity="medium"), SQLPolicy(deny=["DROP"])])
    denied = kernel.check("send_email", {"to": "x"})
    assert denied.blocked and denied.violations[0].policy_name == "AgentOSPolicy"
    assert denied.violations[0].severity is Severity.MEDIUM and denied.total_penalty == -10.0
    assert kernel.check("refund_user", {"amount": 5}).blocked
    engine.set_agent_context("analyst", {"user_status": "verified"})
    assert kernel.check("refund_user", {"amount": 5}).allowed
    # Agent OS's SQL regex is deferred to SQLPolicy: a string literal no longer trips it...
    assert kernel.check(Action.sql("SELECT 'DROP TABLE users'")).allowed
    # ...and the comment trick it misses is caught by the parser.
    assert kernel.check(Action.sql("DROP/**/TABLE users")).violations[0].policy_name == "SQLPolicy"


def test_agent_os_policy_requires_sqlpolicy_when_deferring_sql():
    engine = PolicyEngine()
    with pytest.raises(GovernanceConfigError, match="has no SQLPolicy"):
        GovernanceKernel([AgentOSPolicy(engine)])
    kernel = GovernanceKernel([AgentOSPolicy(engine, role="a", defer_sql=False)])
    engine.add_constraint("a", ["database_query"])
    assert "Destructive SQL blocked" in kernel.check(Action.sql("DROP TABLE t")).reason


def test_adopting_an_agent_os_kernel_space(audit_path):
    engine = PolicyEngine()
    engine.add_constraint("agent", ["database_query"])
    space = KernelSpace(policy_engine=engine, flight_recorder=FlightRecorder(db_path=str(audit_path)))
    kernel = as_kernel(space)
    assert kernel.policy_names == ["AgentOSPolicy"]
    assert kernel.check("shell", {"cmd": "ls"}).blocked
    assert kernel.recorder is space._flight_recorder
    assert len(kernel.audit.records()) == 1


@pytest.mark.parametrize("bad", ["kernel", object(), PolicyEngine(), [SQLPolicy(), "x"]])
def test_as_kernel_names_what_it_got(bad):
    with pytest.raises(TypeError, match="expected a GovernanceKernel, an agent_os.KernelSpace or a list of policies"):
        as_kernel(bad)


def test_kernel_construction_errors():
    with pytest.raises(TypeError, match="wrap an agent_os.PolicyEngine in AgentOSPolicy"):
        GovernanceKernel([PolicyEngine()])
    with pytest.raises(GovernanceConfigError, match="duplicated: \\['SQLPolicy'\\]"):
        GovernanceKernel([SQLPolicy(), SQLPolicy()])
    with pytest.raises(GovernanceConfigError, match="policy_timeout_s must be a positive"):
        GovernanceKernel([SQLPolicy()], policy_timeout_s=0)
    with pytest.raises(GovernanceConfigError, match="unknown Agent OS signal 'SIGNOPE'"):
        GovernanceKernel([SQLPolicy()], signals={"critical": "SIGNOPE"})
    with pytest.raises(TypeError, match="tool_name must be a non-empty str"):
        GovernanceKernel([SQLPolicy()]).check(123)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="context must be an ActionContext"):
        GovernanceKernel([SQLPolicy()]).check("t", {}, context={"rollout_id": "r"})  # type: ignore[arg-type]


def test_tool_allow_list():
    kernel = GovernanceKernel([ToolAllowListPolicy(["database_query"], severity="low")])
    decision = kernel.check("rm_rf", {"path": "/"})
    assert decision.blocked and decision.total_penalty == -1.0
    assert kernel.check("database_query", {"query": "SELECT 1"}).allowed


def test_cost_budget_trips_exactly_at_the_limit():
    kernel = GovernanceKernel([CostControlPolicy(max_cost_usd=1.0)])
    ro1 = ActionContext(rollout_id="ro-1")
    verdicts = [kernel.check(Action("llm", {}, cost_usd=0.1), context=ro1).allowed for _ in range(11)]
    assert verdicts == [True] * 10 + [False]  # ten dimes reach $1.00 exactly; the eleventh is over
    assert kernel.check(Action("llm", {}, cost_usd=0.0), context=ro1).allowed  # at the limit, free actions pass
    assert kernel.check(Action("llm", {}, cost_usd=0.1), context=ActionContext(rollout_id="ro-2")).allowed
    kernel.report_cost(0.01, context=ro1)  # spent elsewhere (an LLM call): now over the limit
    over = kernel.check(Action("llm", {}, cost_usd=0.0), context=ro1)
    assert over.blocked and "budget exceeded in rollout ro-1" in over.reason
    kernel.end_rollout("ro-1")
    assert kernel.check(Action("llm", {}, cost_usd=1.0), context=ro1).allowed


def test_run_scoped_budget_is_shared_across_rollouts():
    kernel = GovernanceKernel([CostControlPolicy(max_cost_usd=0.5, scope="run")])
    assert kernel.check(Action("llm", {}, cost_usd=0.5), context=ActionContext(rollout_id="a")).allowed
    assert kernel.check(Action("llm", {}, cost_usd=0.01), context=ActionContext(rollout_id="b")).blocked


class Exploding(Policy):
    def evaluate(self, action, context):
        raise ZeroDivisionError("boom")


class Hanging(Policy):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.release = threading.Event()

    def evaluate(self, action, context):
        self.release.wait(30)
        return []


class Confused(Policy):
    runs_inline = True

    def evaluate(self, action, context):
        return "looks fine to me"


class Silent(Policy):
    """Forgets to return: None is not an answer."""

    runs_inline = True

    def evaluate(self, action, context):
        return None


class HalfGenerator(Policy):
    """Yields one finding, then raises: the kernel must not let the exception escape."""

    runs_inline = True

    def evaluate(self, action, context):
        yield self.violation("first finding", severity="low")
        raise KeyError("second finding crashed")


class HalfGeneratorOnThread(HalfGenerator):
    runs_inline = False


@pytest.mark.parametrize(
    "policy, message",
    [
        (Exploding(), "evaluate raised ZeroDivisionError: boom (failing closed: action blocked)"),
        (Hanging(), "evaluate timed out after 0.2s (failing closed: action blocked)"),
        (Confused(), "evaluate returned str, not a list of PolicyViolation"),
        (Silent(), "evaluate returned None, not a list of PolicyViolation (return [] when the action is fine)"),
        (HalfGenerator(), "evaluate raised KeyError: 'second finding crashed' (failing closed: action blocked)"),
        (
            HalfGeneratorOnThread(),
            "evaluate raised KeyError: 'second finding crashed' (failing closed: action blocked)",
        ),
    ],
)
def test_policy_failures_block_and_are_recorded(policy, message, audit_path):
    kernel = GovernanceKernel([policy], recorder=audit_path, policy_timeout_s=0.2, error_severity="high")
    try:
        decision = kernel.check(Action.sql("SELECT 1"))
    finally:
        if isinstance(policy, Hanging):
            policy.release.set()
    assert decision.blocked
    (violation,) = decision.violations
    assert violation.policy_name == type(policy).__name__ and message in violation.description
    assert violation.severity is Severity.HIGH
    rows = kernel.audit.records()
    assert [r["policy_verdict"] for r in rows] == ["blocked"] and message in rows[0]["violation_reason"]
    # The kernel keeps working: a failing policy keeps blocking; a released hung one answers again.
    assert kernel.check(Action.sql("SELECT 2")).blocked is (not isinstance(policy, Hanging))


def test_on_allowed_raising_blocks_and_is_recorded(audit_path):
    budget = CostControlPolicy(max_cost_usd=10)
    kernel = GovernanceKernel([budget, CommitFails()], recorder=audit_path)
    decision = kernel.check(Action("llm", {}, cost_usd=1.0))
    assert decision.blocked
    (violation,) = decision.violations
    assert violation.policy_name == "CommitFails"
    assert "on_allowed raised RuntimeError: budget store unavailable" in violation.description
    rows = kernel.audit.records()
    assert [r["policy_verdict"] for r in rows] == ["blocked"] and "budget store unavailable" in rows[0][
        "violation_reason"
    ]


def test_a_failed_audit_write_blocks_the_action_it_concerns_and_every_later_one(audit_path):
    recorder = FlightRecorder(db_path=str(audit_path), enable_batching=False)
    kernel = GovernanceKernel([SQLPolicy(deny=["DROP"])], recorder=recorder)
    conn = sqlite3.connect(audit_path)
    conn.execute("DROP TABLE audit_log")  # the trail becomes unwritable
    conn.commit()
    conn.close()
    # The record is committed before the check answers, so the very action whose record failed
    # is blocked (it used to be allowed, with the failure found later by the writer thread).
    first = kernel.check(Action.sql("SELECT 1"))
    assert first.blocked and "audit write failed" in first.reason and "no such table" in first.reason
    assert kernel.audit.outage["actions_blocked"] == 1
    for query in ("SELECT 2", "DROP TABLE users"):
        decision = kernel.check(Action.sql(query))
        assert decision.blocked
    assert "audit writes are failing" in kernel.check(Action.sql("SELECT 3")).reason
    assert kernel.audit.outage["actions_blocked"] == 3 and kernel.audit.outage["blocked_records_lost"] == 1
    kernel.close()  # the outage never ends (the table is gone): closing says so in the log


class Redactor(Policy):
    runs_inline = True

    def rewrite(self, action, context):
        if "password" in action.args:
            return Action(action.tool_name, {**action.args, "password": "***"})
        return None

    def evaluate(self, action, context):
        return []


class Advisory(Policy):
    runs_inline = True

    def evaluate(self, action, context):
        return (
            [self.violation("queries without LIMIT are discouraged")]
            if "LIMIT" not in action.args.get("query", "")
            else []
        )


def test_modified_and_warned_verdicts(audit_path):
    kernel = GovernanceKernel([Redactor(severity="low"), Advisory(mode="warn", severity="low")], recorder=audit_path)
    modified = kernel.check("login", {"user": "a", "password": "hunter2"})
    assert modified.verdict is Verdict.MODIFIED and modified.allowed
    assert modified.action.args["password"] == "***" and modified.original_action.args["password"] == "hunter2"
    assert modified.violations[0].violation_type is ViolationType.MODIFIED
    warned = kernel.check(Action.sql("SELECT * FROM users"))
    assert warned.verdict is Verdict.WARNED and warned.allowed and warned.total_penalty == -1.0
    rows = {decision_from_record(r)["agentos"]["decision_id"]: r for r in kernel.audit.records()}
    assert "hunter2" not in json.dumps(decision_from_record(rows[modified.audit_id])["args"])


def test_signals_are_dispatched_through_agent_os():
    kernel = GovernanceKernel([SQLPolicy(deny=["DROP"])], signals={"critical": "SIGSTOP"})
    decision = kernel.check(Action.sql("DROP TABLE users"), context=ActionContext(agent_id="agent-9"))
    assert decision.signals == ("SIGSTOP",)
    dispatcher = kernel.dispatcher("agent-9")
    assert dispatcher.is_stopped and not dispatcher.is_terminated
    killer = GovernanceKernel([SQLPolicy(deny=["DROP"])], signals={Severity.CRITICAL: AgentSignal.SIGPOLICY})
    assert killer.check(Action.sql("DROP TABLE users")).signals == ("SIGPOLICY", "SIGKILL")
    assert killer.dispatcher("agent").is_terminated
    assert kernel.check(Action.sql("SELECT 1")).signals == ()


def test_concurrent_checks_keep_one_record_each_and_a_valid_chain(audit_path):
    kernel = GovernanceKernel([SQLPolicy(deny=["DROP"])], recorder=audit_path)
    errors = []

    def worker(n: int) -> None:
        try:
            with governance_context(agent_id=f"w{n}", rollout_id=f"ro-{n}"):
                for i in range(50):
                    kernel.check(Action.sql("DROP TABLE t" if i % 5 == 0 else f"SELECT {i}"))
        except Exception as err:  # pragma: no cover - surfaced by the assert below
            errors.append(err)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    rows = kernel.audit.records()
    assert len(rows) == 200
    assert sum(r["policy_verdict"] == "blocked" for r in rows) == 40
    assert kernel.verify_audit()["valid"] is True


class OnlyFor(Policy):
    """Counts the actions it is asked about; applies to one tool."""

    runs_inline = True

    def __init__(self, tool, name=None):
        super().__init__(name=name or f"OnlyFor-{tool}")
        self.tool = tool
        self.asked = 0

    def applies_to(self, tool_name):
        return tool_name == self.tool

    def evaluate(self, action, context):
        self.asked += 1
        return []


class BrokenAppliesTo(OnlyFor):
    def applies_to(self, tool_name):
        raise RuntimeError("cannot tell")


def test_the_kernel_consults_only_the_policies_that_apply_to_the_tool():
    search, email, unsure = OnlyFor("search"), OnlyFor("send_email"), BrokenAppliesTo("x", name="unsure")
    sql_elsewhere = SQLPolicy(deny=["DROP"], tools=["warehouse_query"], name="warehouse")
    kernel = GovernanceKernel([search, email, unsure, sql_elsewhere, SQLPolicy(deny=["DROP"])])
    for _ in range(3):
        assert kernel.check("search", {"q": "x"}).allowed
    assert kernel.check(Action.sql("DROP TABLE users")).blocked
    assert kernel.check("warehouse_query", {"query": "DROP TABLE facts"}).violations[0].policy_name == "warehouse"
    assert (search.asked, email.asked, unsure.asked) == (3, 0, 5)  # a failing applies_to means "ask"


def test_a_garbage_collection_inside_an_inline_policy_does_not_count_against_its_timeout():
    """A full collection in a big process can take a second; it must not block a harmless action.
    The collection is emulated through gc.callbacks (what the interpreter calls around one)."""

    class PausedByCollector(Policy):
        runs_inline = True

        def evaluate(self, action, context):
            for callback in list(gc.callbacks):
                callback("start", {"generation": 2})
            time.sleep(0.3)
            for callback in list(gc.callbacks):
                callback("stop", {"generation": 2, "collected": 0, "uncollectable": 0})
            return []

    class SlowItself(Policy):
        runs_inline = True

        def evaluate(self, action, context):
            time.sleep(0.3)
            return []

    assert GovernanceKernel([PausedByCollector()], policy_timeout_s=0.1).check("search", {}).allowed
    slow = GovernanceKernel([SlowItself()], policy_timeout_s=0.1).check("search", {})
    assert slow.blocked and "longer than policy_timeout_s=0.1s" in slow.reason


def test_a_lone_surrogate_anywhere_does_not_stop_the_audit_trail(audit_path):
    """Any string an agent or policy produces can hold one; the FlightRecorder hashes UTF-8."""

    class EchoesTheArgument(Policy):
        runs_inline = True

        def evaluate(self, action, context):
            return [self.violation(f"refused {action.args.get('x')}")] if action.tool_name == "echo\ud800" else []

    kernel = GovernanceKernel([EchoesTheArgument()], recorder=audit_path)
    with governance_context(agent_id="agent\udfff"):
        blocked = kernel.check("echo\ud800", {"x": "\ud800"})
        allowed = kernel.check("other", {"x": "\ud800"})
    assert blocked.blocked and allowed.allowed
    kernel.record_outcome(allowed, result="result \udc80", execution_time_ms=1.0)
    assert kernel.audit.failure is None
    rows = kernel.audit.records()
    assert [r["policy_verdict"] for r in rows] == ["blocked", "allowed"]
    assert rows[0]["violation_reason"].endswith("refused \\ud800") and rows[1]["result"] == "result \\udc80"
    assert kernel.verify_audit()["valid"] is True
