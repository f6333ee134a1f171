"""AgentOSRunner in one process: the reference's step() forms, fail_on_violation, callbacks,
governed tools outside a runner, and isolation of concurrent rollouts."""

from __future__ import annotations

import asyncio
import contextvars
import logging
import threading

import pytest

import agentlightning as agl
from agentlightning.store.memory import InMemoryLightningStore

from agentlightning.contrib.kernel.agentos import (
    ActionContext,
    GovernanceConfigError,
    GovernanceKernel,
    Severity,
    SQLPolicy,
)
from agentlightning.contrib.kernel.agentos.reward.formula import GovernedReward
from agentlightning.contrib.runner.agentos import (
    ActionBlockedError,
    AgentOSRunner,
    GovernedRollout,
    GovernedRunner,
    PolicyViolationError,
    governance_stats,
    governed_tool,
)
from agentlightning.contrib.runner.agentos.attempt import RolloutGovernance, RolloutOutcome, active_rollout

from .conftest import table_counts
from .governed_calls import outcome_in_thread, outcome_of
from .runner_agents import InputSQLAgent, SQLAgent, execute_query


def _run(coro):
    return asyncio.run(coro)


async def _started(runner: AgentOSRunner, agent: agl.LitAgent) -> InMemoryLightningStore:
    store = InMemoryLightningStore()
    await store.add_resources({"prompt": agl.PromptTemplate(template="{q}", engine="f-string")})
    runner.init(agent)
    runner.init_worker(0, store)
    return store


def test_step_governs_the_task_input_before_the_agent_runs(shop_db, audit_path):
    async def scenario():
        kernel = GovernanceKernel([SQLPolicy(deny=["DROP", "DELETE"])], recorder=audit_path)
        runner = GovernedRunner(kernel, govern_input=True, log_violations=False)
        store = await _started(runner, InputSQLAgent(str(shop_db)))
        runner.init(runner.get_agent())  # a second init must not govern the input twice
        blocked = await runner.step("DROP TABLE users")
        selected = await runner.step("SELECT id FROM users WHERE id <= 3")
        stats = await governance_stats(store)
        runner.teardown_worker(0)
        runner.teardown()
        return kernel, store, blocked, selected, stats

    before = table_counts(shop_db)
    kernel, store, blocked, selected, stats = _run(scenario())
    assert table_counts(shop_db) == before  # the DROP never ran
    assert isinstance(blocked, GovernedRollout) and blocked.task_input == "DROP TABLE users"
    assert blocked.success is False and blocked.task_output is None  # the agent did not run
    (violation,) = blocked.violations
    assert (violation.policy_name, violation.severity, violation.penalty) == ("SQLPolicy", Severity.CRITICAL, -100.0)
    assert blocked.total_penalty == -100.0 and blocked.execution_time_ms > 0
    assert selected.success is True and selected.violations == [] and selected.task_output == 3.0  # rows returned
    assert stats["total_rollouts"] == 2 and stats["total_violations"] == 1 and stats["total_checks"] == 2
    assert [r["policy_verdict"] for r in kernel.audit.records()] == ["blocked", "allowed"]


def test_fail_on_violation_raises_after_recording(shop_db):
    async def scenario():
        runner = AgentOSRunner([SQLPolicy(deny=["DROP"])], fail_on_violation=True, log_violations=False)
        store = await _started(runner, SQLAgent())
        with pytest.raises(PolicyViolationError, match="DROP statement denied"):
            await runner.step({"db": str(shop_db), "queries": ["SELECT 1", "DROP TABLE users"]})
        return runner, store

    runner, store = _run(scenario())
    (rollout,) = _run(store.query_rollouts())
    assert rollout.status == "failed"
    spans = _run(store.query_spans(rollout.rollout_id))
    assert sum(s.attributes.get("agentos.kind") == "violation" for s in spans) == 1
    assert runner.get_stats()["total_violations"] == 1
    assert "users" in table_counts(shop_db)


def test_violation_callback_and_logging(shop_db, caplog):
    seen = []

    def callback(violation):
        seen.append((violation.policy_name, violation.severity.value))
        raise RuntimeError("callbacks may fail without breaking governance")

    async def scenario():
        runner = AgentOSRunner([SQLPolicy(deny=["DELETE"], severity="high")], violation_callback=callback)
        await _started(runner, SQLAgent())
        return runner, await runner.step({"db": str(shop_db), "queries": ["DELETE FROM orders", "SELECT 1"]})

    with caplog.at_level(logging.WARNING):
        runner, rollout = _run(scenario())
    assert seen == [("SQLPolicy", "high")]
    assert any("BLOCKED SQLPolicy[high]: DELETE statement denied" in r.getMessage() for r in caplog.records)
    assert rollout.success is True and rollout.task_output == 0.5  # the agent recovered from the block
    assert runner.get_stats() == {
        "total_rollouts": 1,
        "total_violations": 1,
        "violation_rate": 1.0,
        "violations_per_rollout": 1.0,
        "total_checks": 2,
        "blocked_actions": 1,
        "rollouts_with_violations": 1,
        "ungoverned_rollouts": 0,
    }
    assert runner.get_violation_rate() == 1.0


def test_governed_tool_refuses_to_run_ungoverned(shop_db):
    calls = []
    tool = governed_tool("database_query", lambda query: calls.append(query))
    with pytest.raises(RuntimeError, match="refusing to run it ungoverned"):
        tool("SELECT 1")
    assert calls == []


def test_governed_tool_with_an_explicit_kernel_records_outcomes(shop_db, audit_path):
    kernel = GovernanceKernel([SQLPolicy(deny=["DROP"])], recorder=audit_path)
    run = governed_tool("database_query", execute_query, kernel=kernel)
    assert run("SELECT COUNT(*) FROM users", db=str(shop_db)) == [(50,)]
    with pytest.raises(ActionBlockedError) as err:
        run(query="DROP TABLE users", db=str(shop_db))
    assert "users" in table_counts(shop_db)
    assert err.value.violations[0].policy_name == "SQLPolicy"
    rows = kernel.audit.records()
    assert [(r["policy_verdict"], r["result"]) for r in rows] == [("allowed", "[(50,)]"), ("blocked", None)]


def test_async_governed_tool():
    kernel = GovernanceKernel([SQLPolicy(deny=["DROP"])])

    @governed_tool("database_query", kernel=kernel)
    async def query(query: str) -> str:
        return query.lower()

    assert asyncio.run(query("SELECT 1")) == "select 1"
    with pytest.raises(ActionBlockedError):
        asyncio.run(query("DROP TABLE t"))


def test_concurrent_rollouts_never_mix_decisions():
    kernel = GovernanceKernel([SQLPolicy(deny=["DROP"])])
    tool = governed_tool("database_query", lambda query: query)

    async def rollout(name: str, n_drops: int) -> RolloutGovernance:
        state = RolloutGovernance(kernel=kernel, context=ActionContext(rollout_id=name))
        with state.activate():
            for i in range(6):
                try:
                    tool("DROP TABLE t" if i < n_drops else "SELECT 1")
                except ActionBlockedError:
                    pass
                await asyncio.sleep(0)  # interleave with the other rollouts
        return state

    async def main():
        return await asyncio.gather(*(rollout(f"ro-{n}", n) for n in range(4)))

    states = asyncio.run(main())
    assert [len(s.violations) for s in states] == [0, 1, 2, 3]
    assert all(d.context.rollout_id == s.context.rollout_id for s in states for d in s.decisions)
    assert active_rollout() is None


def test_bad_runner_configuration():
    with pytest.raises(TypeError, match="expected a GovernanceKernel, an agent_os.KernelSpace or a list of policies"):
        AgentOSRunner("strict")
    with pytest.raises(TypeError, match="fail_on_violation must be a bool"):
        AgentOSRunner([SQLPolicy()], fail_on_violation="yes")
    with pytest.raises(TypeError, match="violation_callback must be callable"):
        AgentOSRunner([SQLPolicy()], violation_callback=42)


def test_a_recorder_from_another_process_is_refused(audit_path):
    kernel = GovernanceKernel([SQLPolicy()], recorder=audit_path)
    kernel.audit.pid = -1  # as if the kernel had been built in the parent of a forked runner
    runner = AgentOSRunner(kernel)
    with pytest.raises(GovernanceConfigError, match="Pass audit_dir="):
        runner.init_worker(0, InMemoryLightningStore())


def test_governed_tool_binds_arguments_as_the_signature_does():
    """The action's arguments are the call's arguments by parameter name, whatever the call
    style; a call that does not fit the signature fails before any check."""
    seen = []
    kernel = GovernanceKernel([SQLPolicy(deny=["DROP"])])

    def query(sql_db, query, limit=10, *, explain=False):
        return (sql_db, query, limit, explain)

    tool = governed_tool("database_query", query, kernel=kernel)
    kernel_check = kernel.check
    # The governed tool hands the kernel the tool name and the bound arguments (the kernel builds the action).
    kernel.check = lambda action, args=None, **kw: (
        seen.append(dict(args) if isinstance(action, str) else dict(action.args)) or kernel_check(action, args, **kw)
    )
    assert tool("db", "SELECT 1") == ("db", "SELECT 1", 10, False)
    assert tool("db", query="SELECT 2", explain=True) == ("db", "SELECT 2", 10, True)
    assert tool(explain=True, query="SELECT 3", sql_db="db", limit=1) == ("db", "SELECT 3", 1, True)
    assert seen == [
        {"sql_db": "db", "query": "SELECT 1"},
        {"sql_db": "db", "query": "SELECT 2", "explain": True},
        {"sql_db": "db", "query": "SELECT 3", "limit": 1, "explain": True},
    ]
    assert list(seen[2]) == ["sql_db", "query", "limit", "explain"]  # parameter order, as bind() gives
    for bad_call in (
        lambda: tool("db"),
        lambda: tool("db", "SELECT 1", query="x"),
        lambda: tool("db", "q", 1, 2),
        lambda: tool("db", "q", nope=1),
    ):
        with pytest.raises(TypeError):
            bad_call()
    assert len(seen) == 3  # none of the bad calls reached the kernel
    with pytest.raises(ActionBlockedError):
        tool("db", "DROP TABLE users")

    def positional_only(query, /, *rest, **options):
        return (query, rest, options)

    odd = governed_tool("database_query", positional_only, kernel=kernel)
    assert odd("SELECT 1", 2, mode="x") == ("SELECT 1", (2,), {"mode": "x"})
    with pytest.raises(ActionBlockedError):
        odd("DROP TABLE users")


# ----------------------------------------------------------------------------- span names
class _LLMThenSQLAgent(agl.LitAgent):
    """Records an LLM call span (as an instrumented OpenAI client would) and runs its SQL."""

    def rollout(self, task, resources, rollout):
        from agentlightning.tracer.base import get_active_tracer

        get_active_tracer().create_span(
            "openai.chat.completion",
            attributes={
                "prompt_token_ids": [1, 2, 3],
                "response_token_ids": [4, 5],
                "gen_ai.response.id": f"resp-{rollout.rollout_id}",
            },
        )
        try:
            governed_tool("database_query", execute_query)(task["sql"], db=task["db"])
        except ActionBlockedError:
            return 0.0
        if task.get("crash"):
            raise RuntimeError("the agent crashed after its query")
        return 1.0


def test_spans_are_named_for_the_dashboard_and_still_read_by_agentlightning(shop_db):
    """Check, violation and reward spans carry readable names (the dashboard's traces table and
    its name search show names only), while find_final_reward, the Trainer's default adapter
    (TracerTraceToTriplet) and governance_stats read them by their attributes as before."""
    from agentlightning.adapter import TracerTraceToTriplet
    from agentlightning.emitter import find_final_reward

    from agentlightning.contrib.kernel.agentos import semconv
    from agentlightning.contrib.kernel.agentos.agl03.spans import is_violation_span
    from agentlightning.contrib.reward.agentos import PolicyReward

    async def scenario():
        kernel = GovernanceKernel([SQLPolicy(deny=["DROP"])])
        # check_spans="all": the allowed checks' spans are named too (by default only violations are stored)
        runner = AgentOSRunner(kernel, reward_fn=PolicyReward(kernel), log_violations=False, check_spans="all")
        store = await _started(runner, _LLMThenSQLAgent())
        results = []
        for task in ({"sql": "SELECT 1"}, {"sql": "DROP TABLE users"}, {"sql": "SELECT 2", "crash": True}):
            try:
                rollout = await runner.step({**task, "db": str(shop_db)})
                rollout_id = rollout.rollout_id
            except RuntimeError:
                (rollout_id,) = [r.rollout_id for r in await store.query_rollouts() if r.status == "failed"]
            results.append(await store.query_spans(rollout_id, "latest"))
        return results, await governance_stats(store)

    (clean, dropped, crashed), stats = _run(scenario())
    names = [[s.name for s in spans if s.name.startswith("agentos.")] for spans in (clean, dropped, crashed)]
    assert names[0] == [
        "agentos.check: allowed database_query",
        "agentos.reward: final 6.0 (base 1.0, penalty 0.0, bonus 5.0)",
    ]
    assert names[1] == [
        "agentos.check: blocked database_query",
        "agentos.violation: SQLPolicy (critical) penalty -100.0, blocked",
        "agentos.reward: final -100.0 (base 0.0, penalty -100.0, bonus 0.0)",
    ]
    # The agent crashed after a clean check: the reward went through the tracer, named too (success=False: base 0).
    assert names[2] == [
        "agentos.check: allowed database_query",
        "agentos.reward: final 5.0 (base 0.0, penalty 0.0, bonus 5.0)",
    ]
    assert [find_final_reward(spans) for spans in (clean, dropped, crashed)] == [6.0, -100.0, 5.0]
    assert all(
        is_violation_span(s) == s.name.startswith(semconv.VIOLATION_SPAN_NAME)
        for spans in (clean, dropped)
        for s in spans
    )
    adapter = TracerTraceToTriplet()
    assert [adapter.adapt(spans)[-1].reward for spans in (clean, dropped)] == [6.0, -100.0]
    assert (stats["total_checks"], stats["total_violations"], stats["blocked_actions"]) == (3, 1, 1)


# ----------------------------------------------------------------------------- one outcome per attempt
def test_summary_rollout_and_reward_input_come_from_one_outcome(shop_db):
    """The attempt's metadata summary, the GovernedRollout of step() and what reward_fn saw agree,
    and the attempt's record takes no decision after its outcome was computed."""
    seen, contexts, ran = [], [], []

    def reward_fn(rollout):
        seen.append(rollout)
        return GovernedReward(final=2.0, base=1.0, policy_penalty=-100.0, clean_bonus=0.0, cost=7.0, violation_count=1)

    def agent(task):
        tool = governed_tool("database_query", lambda query: ran.append(query))
        contexts.append((tool, contextvars.copy_context()))
        for query in task:
            try:
                tool(query)
            except ActionBlockedError:
                pass
        return 0.5

    async def scenario():
        runner = AgentOSRunner([SQLPolicy(deny=["DROP"])], reward_fn=reward_fn, log_violations=False)
        runner.init(agent)
        rollout = await runner.step(["SELECT 1", "DROP TABLE users"])
        attempts = await runner.get_store().query_attempts(rollout.rollout_id)
        return rollout, attempts[-1].metadata["agentos"]

    rollout, summary = _run(scenario())
    (view,) = seen
    assert ran == ["SELECT 1"]  # the DROP never ran
    assert [d.decision_id for d in view.governance.decisions] == [d.decision_id for d in rollout.governance.decisions]
    assert view.violations == rollout.violations and len(rollout.violations) == 1
    assert view.agent_reward == rollout.agent_reward == 0.5 and view.success is True and view.governance.reward is None
    assert (
        rollout.governance.reward.final == 2.0 and rollout.governance.cost == 7.0
    )  # the reward's own cost, everywhere
    assert summary["reward"] == rollout.governance.reward.to_dict() and summary["cost"] == rollout.governance.cost
    assert (summary["checks"], summary["violations"], summary["total_penalty"]) == (2, 1, rollout.total_penalty)
    # A governed tool called in the attempt's context after it ended is refused before it runs.
    ((tool, context),) = contexts
    with pytest.raises(RuntimeError, match="has ended: its governance outcome is final"):
        context.run(tool, "SELECT 2")
    assert ran == ["SELECT 1"]


def test_a_call_after_the_attempt_ended_is_refused_and_recorded(tmp_path):
    """A governed tool called once the attempt's outcome is final does not run, and its refusal
    is recorded like any blocked action: in the audit trail and through on_decision."""
    from agentlightning.contrib.kernel.agentos import Action

    kernel = GovernanceKernel([SQLPolicy(deny=["DROP"])], recorder=tmp_path / "audit.db")
    seen, ran = [], []
    record = RolloutGovernance(kernel, ActionContext(rollout_id="ro-late"), on_decision=seen.append)
    tool = governed_tool("database_query", lambda query: ran.append(query))
    with record.activate():
        tool("SELECT 1")
        outcome = record.conclude()
        with pytest.raises(RuntimeError, match="has ended: its governance outcome is final"):
            tool("SELECT 2")
    assert ran == ["SELECT 1"] and len(outcome.decisions) == 1
    late = seen[-1]
    assert late.blocked and late.violations[0].policy_name == "AgentOSRunner" and late.action == Action.sql("SELECT 2")
    kernel.audit.flush()
    verdicts = [row["policy_verdict"] for row in kernel.audit.records()]
    assert verdicts == ["allowed", "blocked"]
    kernel.close()


def test_a_check_under_way_when_the_attempt_ends_counts_in_its_outcome():
    """The outcome waits for a check that started before it: the decision is in the outcome, so
    the reward and the summary see it (it is never only in the audit trail)."""
    import threading
    import time

    from agentlightning.contrib.kernel.agentos import Policy, PolicyViolation

    class SlowWarning(Policy):
        name = "SlowWarning"

        def evaluate(self, action, context):
            started.set()
            time.sleep(0.3)
            return [PolicyViolation("warned", self.name, "slow but allowed", "high")]

    started = threading.Event()
    record = RolloutGovernance(GovernanceKernel([SlowWarning()]), ActionContext(rollout_id="ro-race"))
    tool = governed_tool("database_query", lambda query: query)
    with record.activate():
        context = contextvars.copy_context()  # the attempt's context, as a thread the agent started has it
    worker = threading.Thread(target=context.run, args=(tool, "SELECT 1"))
    worker.start()
    assert started.wait(5)
    outcome = record.conclude()  # while the policy is still deciding
    worker.join(5)
    assert len(outcome.decisions) == 1 and len(outcome.violations) == 1
    assert record.decisions == outcome.decisions


@pytest.mark.parametrize("cls", [RolloutGovernance, RolloutOutcome])
def test_an_attempts_record_and_outcome_take_the_fields_they_declare(cls):
    """RolloutGovernance and RolloutOutcome get their __init__ from ``_set_in_one_write`` (one write
    of their attributes): its parameters are the declared init fields (RolloutOutcome's include
    GovernanceOutcome's), in order and with their defaults."""
    import dataclasses
    import inspect

    declared = dataclasses.fields(cls)
    parameters = list(inspect.signature(cls.__init__).parameters.values())[1:]
    empty = inspect.Parameter.empty
    assert [(p.name, p.default) for p in parameters] == [
        (f.name, empty if f.default is dataclasses.MISSING else f.default) for f in declared if f.init
    ]


def test_one_write_init_refuses_fields_it_cannot_start():
    """``_set_in_one_write`` builds an __init__ only from fields it can start as declared: an init
    field with a default factory, another field with no default, or a class with a ``__post_init__`` (which it
    would not call) is refused when the class is made."""
    import dataclasses

    from agentlightning.contrib.runner.agentos.attempt import _set_in_one_write

    with pytest.raises(TypeError, match="items"):

        @_set_in_one_write
        @dataclasses.dataclass(frozen=True)
        class WithFactory:
            items: list = dataclasses.field(default_factory=list)

    with pytest.raises(TypeError, match="late"):

        @_set_in_one_write
        @dataclasses.dataclass(frozen=True)
        class WithoutDefault:
            late: int = dataclasses.field(init=False)

    with pytest.raises(TypeError, match="__post_init__"):

        @_set_in_one_write
        @dataclasses.dataclass(frozen=True)
        class Checked:
            value: int = 0

            def __post_init__(self) -> None:
                pass

    @_set_in_one_write
    @dataclasses.dataclass(frozen=True)
    class Pair:
        first: int
        second: list = dataclasses.field(default_factory=list, init=False)

    assert Pair(1) == Pair(first=1) and Pair(1).second == [] and Pair(1).second is not Pair(1).second


def test_a_governance_record_starts_as_its_fields_declare():
    """Every field RolloutGovernance's __init__ does not take starts as declared, fresh for each
    record; the record stays frozen, and so does its outcome."""
    import dataclasses

    declared = dataclasses.fields(RolloutGovernance)
    kernel = GovernanceKernel([])
    one, two = RolloutGovernance(kernel, ActionContext()), RolloutGovernance(kernel, ActionContext())
    for f in declared:
        if f.init:
            continue
        if f.default_factory is dataclasses.MISSING:
            assert getattr(one, f.name) == f.default
        else:
            assert type(getattr(one, f.name)) is type(f.default_factory())
            assert getattr(one, f.name) is not getattr(two, f.name)
            if not isinstance(getattr(one, f.name), type(threading.RLock())):
                assert len(getattr(one, f.name)) == 0
    with pytest.raises(dataclasses.FrozenInstanceError):
        one.kernel = kernel  # type: ignore[misc]
    outcome = one.conclude()
    assert outcome == RolloutOutcome() and dataclasses.replace(outcome, agent_failed=True).agent_failed
    with pytest.raises(dataclasses.FrozenInstanceError):
        outcome.agent_failed = True  # type: ignore[misc]


# ----------------------------------------------------------------------------- threads, BaseException, boundaries
class _ThreadedSQLAgent(agl.LitAgent):
    """Runs its task's SQL from a thread it starts and from a thread-pool job, then joins them."""

    def rollout(self, task, resources, rollout):
        import concurrent.futures

        run = governed_tool("database_query", execute_query)
        in_thread = outcome_in_thread(run, task["in_thread"], db=task["db"])
        with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
            in_pool = pool.submit(outcome_of, run, task["in_pool"], db=task["db"]).result()
        return float([in_thread, in_pool].count("ran"))


def test_a_governed_call_from_a_thread_the_agent_started_belongs_to_its_rollout(shop_db):
    """Before: a call from a threading.Thread or a ThreadPoolExecutor job ran outside the rollout's
    context, so it was refused as ungoverned (or, with an explicit kernel, blocked) while the
    rollout scored as clean. Now each is checked in the rollout, its violation in the outcome."""
    from agentlightning.contrib.reward.agentos import PolicyReward

    async def scenario():
        kernel = GovernanceKernel([SQLPolicy(deny=["DROP", "DELETE"])])
        runner = AgentOSRunner(kernel, reward_fn=PolicyReward(kernel), log_violations=False)
        store = await _started(runner, _ThreadedSQLAgent())
        task = {"db": str(shop_db), "in_thread": "DROP TABLE users", "in_pool": "SELECT COUNT(*) FROM orders"}
        dirty = await runner.step(task)
        clean = await runner.step({**task, "in_thread": "SELECT 1"})
        summary = (await store.query_attempts(dirty.rollout_id))[-1].metadata["agentos"]
        return dirty, clean, summary

    before = table_counts(shop_db)
    dirty, clean, summary = _run(scenario())
    assert table_counts(shop_db) == before
    assert [v.policy_name for v in dirty.violations] == ["SQLPolicy"] and dirty.total_penalty == -100.0
    assert len(dirty.governance.decisions) == 2
    assert all(d.context.rollout_id == dirty.rollout_id for d in dirty.governance.decisions)
    assert dirty.governance.reward.final == -99.0 and summary["violations"] == 1 and summary["checks"] == 2
    assert clean.violations == [] and clean.governance.reward.final == 7.0 and len(clean.governance.decisions) == 2


class _Bail(BaseException):
    """Not an Exception: agentlightning's runner does not catch it."""


class _BailAfterViolation(agl.LitAgent):
    def rollout(self, task, resources, rollout):
        try:
            governed_tool("database_query", execute_query)(task["sql"], db=task["db"])
        except ActionBlockedError:
            pass
        if task.get("bail"):
            raise _Bail("the agent gave up")
        return 1.0


def test_an_agent_raising_a_base_exception_after_a_violation_is_penalised_and_iter_goes_on(shop_db):
    """Before: the BaseException escaped agentlightning's `except Exception`: the attempt was marked
    succeeded with no reward span and runner.iter() died. Now the attempt fails with its penalty
    and reward span, and iter() runs the next rollout; step() raises AgentError from it."""
    from agentlightning.emitter import find_final_reward

    from agentlightning.contrib.reward.agentos import PolicyReward
    from agentlightning.contrib.runner.agentos.runner import AgentError

    async def scenario():
        kernel = GovernanceKernel([SQLPolicy(deny=["DROP"])])
        runner = AgentOSRunner(
            kernel, reward_fn=PolicyReward(kernel), log_violations=False, poll_interval=0.05, max_rollouts=2
        )
        store = await _started(runner, _BailAfterViolation())
        bailing = await store.enqueue_rollout(input={"db": str(shop_db), "sql": "DROP TABLE users", "bail": True})
        after = await store.enqueue_rollout(input={"db": str(shop_db), "sql": "SELECT 1"})
        await runner.iter()
        with pytest.raises(AgentError, match="the agent raised _Bail: the agent gave up") as raised:
            await runner.step({"db": str(shop_db), "sql": "DROP TABLE orders", "bail": True})
        results = {}
        for rollout in await store.query_rollouts():
            attempt = (await store.query_attempts(rollout.rollout_id))[-1]
            spans = await store.query_spans(rollout.rollout_id, "latest")
            results[rollout.rollout_id] = (rollout.status, find_final_reward(spans), attempt.metadata["agentos"])
        return bailing.rollout_id, after.rollout_id, results, raised.value, runner

    bailing, after, results, error, runner = _run(scenario())
    assert isinstance(error.__cause__, _Bail)
    assert results[bailing][:2] == ("failed", -100.0) and results[bailing][2]["violations"] == 1
    assert results[after][:2] == ("succeeded", 6.0)
    assert sorted(status for status, _, _ in results.values()) == ["failed", "failed", "succeeded"]
    assert runner.get_stats()["total_violations"] == 2
    assert "users" in table_counts(shop_db) and "orders" in table_counts(shop_db)


def test_bad_input_is_refused_where_it_enters(tmp_path):
    a_file = tmp_path / "audit"
    a_file.write_text("not a directory")
    with pytest.raises(ValueError, match=r"audit_dir=.* is a file; it must be a directory.*worker-<id>.db"):
        AgentOSRunner([SQLPolicy()], audit_dir=a_file)
    with pytest.raises(TypeError, match="audit_dir must be a directory path"):
        AgentOSRunner([SQLPolicy()], audit_dir=42)
    with pytest.raises(TypeError, match="govern_input must be True, False or None"):
        AgentOSRunner([SQLPolicy()], govern_input="yes")
    runner = AgentOSRunner([SQLPolicy()])
    with pytest.raises(
        TypeError,
        match=r"store must be an agentlightning LightningStore, got str: .*LightningStoreClient\('http://127.0.0.1:4747'\)",
    ):
        runner.init_worker(0, store="http://127.0.0.1:4747")
    with pytest.raises(TypeError, match="store must be an agentlightning LightningStore, got dict"):
        runner.init_worker(0, store={})
    with pytest.raises(TypeError, match="worker_id must be an int"):
        runner.init_worker("0", store=InMemoryLightningStore())


# ------------------------------------------------------------------------- the agent composed, one outcome, one view
class _PlainSQLAgent(agl.LitAgent):
    """A user's agent with state of its own, run by both runners below."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def rollout(self, task, resources, rollout):
        self.calls += 1
        try:
            governed_tool("database_query", execute_query)(task["sql"], db=task["db"])
        except ActionBlockedError:
            return 0.0
        return 1.0


def _attributes(agent) -> dict:
    return {name: value for name, value in vars(agent).items()}


def test_the_users_agent_is_composed_never_modified(shop_db):
    """The runner runs the user's agent inside a GovernedAgent: after init, steps (clean, blocked,
    with and without reward_fn), a second init and teardown, the agent object has exactly the
    attributes agentlightning's own LitAgentRunner leaves on it (its runner reference), no method
    shadowed on the instance, and its class unchanged."""
    from agentlightning.runner import LitAgentRunner
    from agentlightning.tracer.agentops import AgentOpsTracer

    from agentlightning.contrib.reward.agentos import PolicyReward
    from agentlightning.contrib.runner.agentos.agents import GovernedAgent

    async def run(runner, agent, tasks):
        store = InMemoryLightningStore()
        await store.add_resources({"prompt": agl.PromptTemplate(template="{q}", engine="f-string")})
        runner.init(agent)
        runner.init_worker(0, store)
        if isinstance(runner, AgentOSRunner):
            assert isinstance(runner.get_agent(), GovernedAgent) and runner.get_agent().agent is agent
        for task in tasks:
            await runner.step(task)
        while_set_up.append(set(vars(agent)))  # before teardown, which could undo a patch
        runner.teardown_worker(0)
        runner.teardown()

    tasks = [{"db": str(shop_db), "sql": "SELECT 1"}, {"db": str(shop_db), "sql": "DROP TABLE users"}]
    while_set_up = []
    plain_agent, governed_agent = _PlainSQLAgent(), _PlainSQLAgent()
    untouched = _attributes(governed_agent)
    _run(run(LitAgentRunner(AgentOpsTracer()), plain_agent, []))  # its governed tool would refuse to run there
    kernel = GovernanceKernel([SQLPolicy(deny=["DROP"])])
    for reward_fn in (None, PolicyReward(kernel)):
        runner = AgentOSRunner(kernel, reward_fn=reward_fn, log_violations=False)
        _run(run(runner, governed_agent, tasks))
    after = _attributes(governed_agent)
    assert type(governed_agent) is _PlainSQLAgent and governed_agent.calls == 4 and plain_agent.calls == 0
    assert set(after) == set(_attributes(plain_agent)) == set(untouched)  # nothing added, nothing shadowed
    assert while_set_up == [set(untouched)] * 3  # also while the runners were set up
    changed = {name for name in after if name != "calls" and after[name] is not untouched[name]}
    assert changed == {"_runner_ref"}  # what LitAgentRunner.init sets too (agent.set_runner)
    assert not any(name.endswith("rollout") or name.endswith("rollout_async") for name in after)
    assert "users" in table_counts(shop_db)


def test_get_agent_is_the_governed_agent_around_yours(shop_db):
    from agentlightning.contrib.runner.agentos.agents import GovernedAgent

    async def scenario():
        runner = AgentOSRunner([SQLPolicy(deny=["DROP"])], log_violations=False)
        mine = _PlainSQLAgent()
        await _started(runner, mine)
        governed = runner.get_agent()
        runner.init(governed)  # init with the governed agent governs the user's agent once, not twice
        rollout = await runner.step({"db": str(shop_db), "sql": "DROP TABLE users"})
        return runner, mine, governed, rollout

    runner, mine, governed, rollout = _run(scenario())
    assert isinstance(governed, GovernedAgent) and governed.agent is mine and runner.user_agent is mine
    assert runner.get_agent().agent is mine and mine.calls == 1
    assert len(rollout.governance.decisions) == 1 and len(rollout.violations) == 1  # checked once


def test_the_rollout_holds_its_outcome_and_the_tutorial_names_read_it(shop_db):
    """GovernedRollout holds the attempt's frozen outcome (rollout.governance) instead of copies;
    the reference tutorial's names and the names reward functions read give the outcome's values
    without a warning; cost, reward and decisions are the outcome's alone."""
    import warnings

    from agentlightning.contrib.reward.agentos import PolicyReward
    from agentlightning.contrib.runner.agentos.attempt import RolloutOutcome

    async def scenario():
        kernel = GovernanceKernel([SQLPolicy(deny=["DROP"])])
        runner = AgentOSRunner(kernel, reward_fn=PolicyReward(kernel), log_violations=False)
        store = await _started(runner, _PlainSQLAgent())
        rollout = await runner.step({"db": str(shop_db), "sql": "DROP TABLE users"})
        summary = (await store.query_attempts(rollout.rollout_id))[-1].metadata["agentos"]
        return rollout, summary

    rollout, summary = _run(scenario())
    outcome = rollout.governance
    assert isinstance(outcome, RolloutOutcome) and outcome.summary() == summary
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # none of these warns
        tutorial = (
            rollout.task_input,
            rollout.task_output,
            rollout.success,
            rollout.violations,
            rollout.signals_sent,
            rollout.total_penalty,
            rollout.execution_time_ms > 0,
            rollout.governed,
            rollout.agent_reward,
        )
    assert tutorial[1:] == (0.0, True, list(outcome.violations), [], -100.0, True, True, 0.0)
    assert tutorial[0]["sql"] == "DROP TABLE users"
    assert len(outcome.decisions) == 1
    assert outcome.reward.final == -100.0 and outcome.cost == 10.0  # base 0.0 (the agent returned 0.0) - 100


def test_a_reward_fn_that_raises_fails_the_attempt_after_its_summary(shop_db):
    """The outcome is concluded in the on_rollout_end hook; a reward_fn that raises there must not
    leave the attempt marked succeeded: the summary (without a reward) and the check spans are
    stored, the attempt is failed, step raises the reward_fn's error, and iter goes on."""
    from .test_runner_races import StatusOrderStore

    def broken_reward(rollout):
        raise ValueError("reward_fn is broken")

    async def scenario():
        store = StatusOrderStore()
        await store.add_resources({"prompt": agl.PromptTemplate(template="{q}", engine="f-string")})
        runner = AgentOSRunner(
            [SQLPolicy(deny=["DROP"])],
            reward_fn=broken_reward,
            log_violations=False,
            poll_interval=0.05,
            max_rollouts=2,
        )
        runner.init(_PlainSQLAgent())
        runner.init_worker(0, store)
        with pytest.raises(ValueError, match="reward_fn is broken"):
            await runner.step({"db": str(shop_db), "sql": "DROP TABLE users"})
        for sql in ("SELECT 1", "DROP TABLE orders"):
            await store.enqueue_rollout(input={"db": str(shop_db), "sql": sql}, mode="train")
        await runner.iter()
        rows = []
        for rollout in await store.query_rollouts():
            attempt = (await store.query_attempts(rollout.rollout_id))[-1]
            spans = await store.query_spans(rollout.rollout_id, "latest")
            kinds = [s.attributes.get("agentos.kind") for s in spans if s.attributes.get("agentos.kind")]
            rows.append((rollout.status, attempt.metadata["agentos"]["reward"], kinds))
        return store, rows, runner

    store, rows, runner = _run(scenario())
    assert [row[0] for row in rows] == ["failed", "failed", "failed"]
    assert all(row[1] is None for row in rows)  # no reward: none was computed
    # The clean attempt stores no check span (check_spans="violations", the default).
    assert sorted(row[2] for row in rows) == [[], ["check", "violation"], ["check", "violation"]]
    assert all(v["summary"] for v in store.at_final.values()) and len(store.at_final) == 3
    assert runner._attempts == {} and runner.get_stats()["total_rollouts"] == 3


def test_a_held_back_check_span_is_the_span_decision_core_fields_builds():
    """The runner builds a clean check span from a template per (verdict, tool, agent, penalty,
    signals), replacing only the decision id: it must be the span the spans module builds."""
    from agentlightning.contrib.kernel.agentos import ActionContext, ToolAllowListPolicy
    from agentlightning.contrib.kernel.agentos.agl03.spans import decision_core_fields
    from agentlightning.contrib.runner.agentos.attempt import _clean_check_span

    kernel = GovernanceKernel([ToolAllowListPolicy(["database_query", "search"]), SQLPolicy(deny=["DROP"])])
    decisions = [
        kernel.check(tool, {"query": query}, context=ActionContext(agent_id=agent, rollout_id=f"ro-{i}"))
        for i, (tool, query, agent) in enumerate(
            [
                (t, q, a)
                for t in ("database_query", "search")
                for q in ("SELECT 1", "SELECT 2")
                for a in ("w0", "worker-1", "agent")
            ]
        )
    ]
    assert all(d.allowed and not d.violations for d in decisions)
    for decision in decisions * 2:  # the second time from the template
        expected = decision_core_fields(decision)[0].model_copy(update={"start_time": 5.0, "end_time": 5.0})
        built = _clean_check_span(decision, 5.0)
        assert built.model_dump() == expected.model_dump()
        assert list(built.attributes) == list(expected.attributes)  # the same order too
    blocked = kernel.check("database_query", {"query": "DROP TABLE t"})
    with pytest.raises(ValueError, match="not held back"):
        _clean_check_span(blocked, 5.0)
