"""The first ten minutes of a user coming from the reference tutorial (docs/migrating.md).

The reference quick start runs literally (only the imports changed) on a runner that was never set
up, and each error a newcomer met is now either gone or a message that says what to do. Everything
runs against the real kernel, runner, LightningStore and FlightRecorder.
"""

from __future__ import annotations

import ast
import asyncio
import inspect
import logging
import sqlite3
from pathlib import Path

import pytest

import agentlightning as agl
from agentlightning.emitter import find_final_reward
from agentlightning.store.memory import InMemoryLightningStore

from agentlightning.contrib.adapter.agentos import FlightRecorderEmitter
from agentlightning.contrib.kernel.agentos import GovernanceKernel, Severity, SQLPolicy
from agentlightning.contrib.kernel.agentos.agl03.stats import governance_stats
from agentlightning.contrib.reward.agentos import PolicyReward, RewardConfig
from agentlightning.contrib.runner.agentos import (
    ActionBlockedError,
    AgentOSRunner,
    GovernedRunner,
    PolicyViolationError,
    as_agent,
    governed_tool,
)
from agentlightning.contrib.runner.agentos.agents import ActionOutcome, TaskActionAgent

ROOT = Path(__file__).resolve().parent.parent

#: The reference tutorial's quick start (section 1 of the agentmesh-lightning "RL Training
#: Governance" tutorial), word for word below the imports.
REFERENCE_IMPORTS = """\
from agent_os import KernelSpace
from agent_os.policies import SQLPolicy, CostControlPolicy
from agent_lightning_gov import GovernedRunner, PolicyReward
"""
OUR_IMPORTS = """\
import os; os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # keep litellm offline
from agentlightning.contrib.kernel.agentos import GovernanceKernel as KernelSpace, SQLPolicy, CostControlPolicy
from agentlightning.contrib.runner.agentos import GovernedRunner
from agentlightning.contrib.reward.agentos import PolicyReward
"""
REFERENCE_BODY = """\
# 1. Build a kernel with two policies
kernel = KernelSpace(policy=[
    SQLPolicy(deny=["DROP", "DELETE"]),
    CostControlPolicy(max_cost_usd=100),
])
# 2. Create a governed runner
runner = GovernedRunner(kernel)
# 3. Create a policy-aware reward function
def accuracy_reward(rollout):
    return rollout.task_output.accuracy if rollout.success else 0.0
reward_fn = PolicyReward(kernel, base_reward_fn=accuracy_reward)
# 4. Execute a task and score it
rollout = await runner.step("SELECT name FROM users WHERE id = 42")
reward = reward_fn(rollout)
print(f"Success: {rollout.success}")
print(f"Violations: {len(rollout.violations)}")
print(f"Penalty: {rollout.total_penalty}")
print(f"Reward: {reward}")
"""


def run_top_level_await(source: str, namespace: dict, loop: asyncio.AbstractEventLoop) -> None:
    """Run ``source`` as IPython or ``python -m asyncio`` would: top-level ``await`` allowed."""
    code = compile(source, "quickstart", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    result = eval(code, namespace)  # noqa: S307 - the reference's own text
    if inspect.iscoroutine(result):
        loop.run_until_complete(result)


def test_reference_quick_start_runs_literally(capsys, caplog):
    namespace: dict = {"__name__": "quickstart"}
    loop = asyncio.new_event_loop()
    try:
        with caplog.at_level(logging.WARNING):
            run_top_level_await(OUR_IMPORTS + REFERENCE_BODY, namespace, loop)
            assert capsys.readouterr().out.splitlines() == [
                "Success: True",
                "Violations: 0",
                "Penalty: 0.0",
                "Reward: 6.0",
            ]

            # What the reference promises for the destructive statement, on the same runner.
            run_top_level_await(
                'rollout = await runner.step("DROP TABLE users")\nreward = reward_fn(rollout)', namespace, loop
            )
        rollout, reward = namespace["rollout"], namespace["reward"]
        assert rollout.success is False
        (violation,) = rollout.violations
        assert (violation.policy_name, violation.severity, violation.action_blocked) == (
            "SQLPolicy",
            Severity.CRITICAL,
            True,
        )
        assert rollout.total_penalty == -100.0 and reward == -100.0
        assert isinstance(rollout.task_output, ActionOutcome) and rollout.task_output.verdict == "blocked"
        # log_violations=True (the reference default): one WARNING naming the policy
        assert any("BLOCKED SQLPolicy[critical]: DROP statement denied" in r.getMessage() for r in caplog.records)

        # The runner made its own agent and store; both rollouts and their spans are in it.
        runner = namespace["runner"]
        assert isinstance(runner.get_agent().agent, TaskActionAgent)  # composed in the runner's GovernedAgent
        stats = loop.run_until_complete(governance_stats(runner.get_store()))
        assert (
            stats["total_rollouts"],
            stats["total_checks"],
            stats["total_violations"],
            stats["blocked_actions"],
        ) == (2, 2, 1, 1)
        assert runner.get_stats()["total_rollouts"] == 2 and runner.get_stats()["violation_rate"] == 0.5
        assert namespace["reward_fn"].get_stats()["clean_rate"] == 0.5
    finally:
        loop.close()


def test_readme_quick_start_is_the_reference_text():
    readme = (ROOT / "README.md").read_text()
    block = readme.split("\n## Quick start\n", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    assert block.startswith(OUR_IMPORTS)
    assert block[len(OUR_IMPORTS) :].lstrip("\n") == REFERENCE_BODY
    assert len(REFERENCE_IMPORTS.splitlines()) == 3  # the reference's imports, replaced by ours


def test_each_step_in_its_own_asyncio_run():
    """A script without top-level await: one asyncio.run per step, on the same runner."""
    runner = GovernedRunner([SQLPolicy(deny=["DROP"])], log_violations=False)
    first = asyncio.run(runner.step("SELECT 1"))
    second = asyncio.run(runner.step("DROP TABLE users"))
    assert (first.success, second.success, second.total_penalty) == (True, False, -100.0)
    assert asyncio.run(governance_stats(runner.get_store()))["total_rollouts"] == 2


def test_the_task_must_be_an_action_when_there_is_no_agent():
    runner = GovernedRunner([SQLPolicy(deny=["DROP"])], log_violations=False)
    with pytest.raises(
        TypeError, match=r"with no agent, the task itself is the action to govern.*runner.init\(agent\)"
    ):
        asyncio.run(runner.step(42))
    rollout = asyncio.run(runner.step({"query": "DROP TABLE t"}))  # a dict of the tool's arguments
    assert rollout.success is False and rollout.violations[0].policy_name == "SQLPolicy"


def test_fail_on_violation_without_an_agent_raises():
    runner = GovernedRunner([SQLPolicy(deny=["DROP"])], fail_on_violation=True, log_violations=False)
    with pytest.raises(PolicyViolationError, match="DROP statement denied"):
        asyncio.run(runner.step("DROP TABLE users"))
    assert runner.get_stats()["blocked_actions"] == 1


# ----------------------------------------------------------------------------- plain functions as agents
def _db(tmp_path: Path) -> str:
    path = tmp_path / "shop.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)")
        conn.executemany("INSERT INTO users (name) VALUES (?)", [("ada",), ("bob",)])
    return str(path)


def test_a_plain_function_is_an_agent(tmp_path):
    db = _db(tmp_path)

    def run_sql(query: str) -> list:
        with sqlite3.connect(db) as conn:
            return conn.execute(query).fetchall()

    query = governed_tool("database_query", run_sql)

    def agent(task):  # fn(task) -> float
        try:
            return float(len(query(task)))
        except ActionBlockedError:
            return 0.0

    async def async_agent(task):  # async works too
        return None

    runner = AgentOSRunner([SQLPolicy(deny=["DROP"])], reward_fn=None, log_violations=False)
    runner.init(agent)  # wrapped in a LitAgent: agentlightning's init calls set_runner, which a function lacks
    assert isinstance(runner.get_agent(), agl.LitAgent)
    rollout = asyncio.run(runner.step("SELECT name FROM users"))
    assert rollout.success and rollout.task_output == 2.0
    assert find_final_reward(asyncio.run(runner.get_store().query_spans(rollout.rollout_id, "latest"))) == 2.0

    # A plain function's string task is the action: checked before the function runs, so the
    # function is not called on the DROP at all (it used to run and read the ActionBlockedError).
    blocked = asyncio.run(runner.step("DROP TABLE users"))
    assert (
        blocked.task_output is None
        and blocked.success is False
        and blocked.total_penalty == -100.0
        and blocked.violations[0].policy_name == "SQLPolicy"
    )
    assert run_sql("SELECT COUNT(*) FROM users") == [(2,)]  # the DROP never ran

    runner.init(async_agent)
    assert asyncio.run(runner.step("SELECT 1")).success is True

    async def in_run_context():  # agentlightning's run_context(agent=...) takes a function too
        store = InMemoryLightningStore()
        await store.add_resources({})
        other = AgentOSRunner([SQLPolicy(deny=["DROP"])], log_violations=False)
        with other.run_context(agent=agent, store=store):
            return await other.step("SELECT name FROM users")

    assert asyncio.run(in_run_context()).task_output == 2.0


def test_bad_agents_are_named_with_the_fix():
    with pytest.raises(TypeError, match=r"must be an instance: TaskActionAgent\(\)"):
        as_agent(TaskActionAgent)
    with pytest.raises(TypeError, match=r"requires \['resources'\], which nothing passes.*LitAgent subclass"):
        as_agent(lambda task, resources: 1.0)
    with pytest.raises(TypeError, match="takes no argument for the task"):
        as_agent(lambda: 1.0)
    runner = AgentOSRunner([SQLPolicy(deny=["DROP"])])
    with pytest.raises(TypeError, match="the agent must be an agentlightning LitAgent or a function"):
        runner.init("not an agent")


def test_an_agent_that_needs_an_llm_is_told_what_to_pass():
    runner = AgentOSRunner([SQLPolicy(deny=["DROP"])])
    runner.init(lambda task, llm: 1.0)
    with pytest.raises(ValueError, match=r"takes an `llm`.*resources=\{'main_llm': agl.LLM"):
        asyncio.run(runner.step("SELECT 1"))


def test_a_prompt_template_agent_gets_one_on_demand():
    seen = []
    runner = AgentOSRunner([SQLPolicy(deny=["DROP"])], govern_input=True, log_violations=False)
    runner.init(lambda task, prompt_template: seen.append(prompt_template.format(task=task)) or 1.0)
    assert asyncio.run(runner.step("SELECT 1")).success
    assert seen == ["SELECT 1"]


# ----------------------------------------------------------------------------- newcomer errors
def test_results_other_than_rewards_are_the_task_output(caplog):
    """Before: TypeError 'Invalid raw result type' failed the rollout. Now the dict is the
    task_output, and the runner says once that it is not a reward and what to do."""
    runner = AgentOSRunner([SQLPolicy(deny=["DROP"])], govern_input=True, log_violations=False)
    runner.init(lambda task: {"accuracy": 0.75, "rows": 3})
    with caplog.at_level(logging.WARNING):
        first = asyncio.run(runner.step("SELECT 1"))
        second = asyncio.run(runner.step("SELECT 2"))
    assert first.success and first.task_output == {"accuracy": 0.75, "rows": 3} and second.success
    messages = [r.getMessage() for r in caplog.records if "task_output" in r.getMessage()]
    assert len(messages) == 1  # once per runner
    assert (
        "returned a dict" in messages[0]
        and "agl.emit_reward" in messages[0]
        and "reward_fn=PolicyReward" in messages[0]
    )

    # With a reward_fn the dict feeds the reward; reading it as an attribute gets the hint.
    kernel = GovernanceKernel([SQLPolicy(deny=["DROP"])])
    good = AgentOSRunner(
        kernel,
        govern_input=True,
        log_violations=False,
        reward_fn=PolicyReward(kernel, base_reward_fn=lambda r: r.task_output["accuracy"]),
    )
    good.init(lambda task: {"accuracy": 0.75})
    rollout = asyncio.run(good.step("SELECT 1"))
    assert rollout.governance.reward.final == 5.75
    assert find_final_reward(asyncio.run(good.get_store().query_spans(rollout.rollout_id, "latest"))) == 5.75

    wrong = PolicyReward(kernel, base_reward_fn=lambda r: r.task_output.accuracy)
    with pytest.raises(AttributeError, match=r"read it as rollout.task_output\['accuracy'\]"):
        wrong(rollout)


def test_store_not_initialized_says_what_to_do():
    runner = AgentOSRunner([SQLPolicy(deny=["DROP"])], poll_interval=0.05)
    runner.init(lambda task: 1.0)
    with pytest.raises(
        ValueError,
        match=r"no store: call runner.init_worker\(0, store\) first \(the Trainer does it for you\).*runner.step",
    ):
        asyncio.run(runner.iter())
    with pytest.raises(ValueError, match=r"no agent: call runner.init\(agent\) first"):
        AgentOSRunner([SQLPolicy(deny=["DROP"])]).get_agent()


def test_a_store_without_resources_says_what_to_do(caplog):
    async def scenario():
        store = InMemoryLightningStore()  # the user's own store, set up without resources
        runner = AgentOSRunner(
            [SQLPolicy(deny=["DROP"])], govern_input=True, log_violations=False, poll_interval=0.05, max_rollouts=1
        )
        runner.init(lambda task: 1.0)
        runner.init_worker(0, store)
        with pytest.raises(
            RuntimeError, match=r"Failed to fetch resources: .*this store has none.*store.add_resources"
        ):
            await runner.step("SELECT 1")
        # iter() (the Trainer's path) logs the same explanation once, instead of agentlightning's bare line.
        await store.enqueue_rollout(input="SELECT 1", mode="train")
        with caplog.at_level(logging.ERROR):
            await runner.iter()
        return [r.getMessage() for r in caplog.records if "store.add_resources" in r.getMessage()]

    messages = asyncio.run(scenario())
    assert len(messages) == 1 and "was skipped" in messages[0]


def test_mode_eval_is_val():
    runner = AgentOSRunner([SQLPolicy(deny=["DROP"])], log_violations=False)
    assert asyncio.run(runner.step("SELECT 1", mode="eval")).mode == "val"  # the reference's spelling
    assert asyncio.run(runner.step("SELECT 1", mode="train")).mode == "train"
    with pytest.raises(
        ValueError, match=r"mode must be 'train', 'val' or 'test'.*'eval' means 'val'.*got 'evaluate-ish'"
    ):
        asyncio.run(runner.step("SELECT 1", mode="evaluate-ish"))


def test_unawaited_emit_to_store_cannot_be_dropped_silently(tmp_path, caplog):
    path = tmp_path / "audit.db"
    kernel = GovernanceKernel([SQLPolicy(deny=["DROP"])], recorder=path)
    kernel.check("database_query", {"query": "DROP TABLE users"})
    kernel.close()
    emitter = FlightRecorderEmitter(path)
    store = InMemoryLightningStore()
    with caplog.at_level(logging.ERROR):
        emitter.emit_to_store(store)  # the reference's line, without await
    (message,) = [r.getMessage() for r in caplog.records if "never awaited" in r.getMessage()]
    assert (
        "nothing was done" in message and "await adapter.emit_to_store(store)" in message and "asyncio.run(" in message
    )
    assert list(asyncio.run(store.query_rollouts())) == []  # indeed nothing
    assert asyncio.run(emitter.emit_to_store(store)) == 1  # awaited: it works


def test_a_clamped_penalty_is_reported_once(caplog):
    kernel = GovernanceKernel([SQLPolicy(deny=["DROP", "DELETE"])])
    decisions = [kernel.check("database_query", {"query": q}) for q in ("DROP TABLE a", "DELETE FROM b")]
    from types import SimpleNamespace

    two_critical = SimpleNamespace(success=True, violations=[v for d in decisions for v in d.violations])
    reward_fn = PolicyReward(kernel)
    with caplog.at_level(logging.WARNING):
        assert reward_fn(two_critical) == -100.0 and reward_fn(two_critical) == -100.0
    messages = [r.getMessage() for r in caplog.records if "clamped" in r.getMessage()]
    assert len(messages) == 1
    assert (
        "-199.0" in messages[0]
        and "min_reward=-100.0" in messages[0]
        and "RewardConfig(min_reward=None)" in messages[0]
    )
    assert PolicyReward(kernel, config=RewardConfig(min_reward=None))(two_critical) == -199.0


def test_flight_recorder_default_path_is_reported(tmp_path, monkeypatch, caplog):
    from agent_os import FlightRecorder

    monkeypatch.chdir(tmp_path)
    with caplog.at_level(logging.WARNING):
        recorder = FlightRecorder()  # the reference's 7.1: writes ./flight_recorder.db
        kernel = GovernanceKernel([SQLPolicy(deny=["DROP"])], recorder=recorder)
        FlightRecorderEmitter(recorder)
    messages = [r.getMessage() for r in caplog.records if "default path" in r.getMessage()]
    assert len(messages) == 1  # once per file
    assert (
        str(tmp_path / "flight_recorder.db") in messages[0]
        and "FlightRecorder(db_path='runs/<run>/audit.db')" in messages[0]
    )
    kernel.close()
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        GovernanceKernel([SQLPolicy(deny=["DROP"])], recorder=tmp_path / "runs" / "audit.db").close()
    assert not [r for r in caplog.records if "default path" in r.getMessage()]


def test_an_ungoverned_rollout_is_reported_and_earns_no_clean_bonus(tmp_path, caplog):
    """The trap, now only with govern_input=False: an agent that runs its SQL directly. Nothing is
    checked, so the DROP runs, and the rollout is reported and scores no clean bonus. (With the
    default, a plain function's string task is checked first: see the tutorial journey test.)"""
    db = _db(tmp_path)

    def careless_agent(task):
        with sqlite3.connect(db) as conn:
            conn.execute(task)
        return 1.0

    kernel = GovernanceKernel([SQLPolicy(deny=["DROP"])])
    runner = AgentOSRunner(kernel, reward_fn=PolicyReward(kernel), govern_input=False, log_violations=False)
    runner.init(careless_agent)
    with caplog.at_level(logging.WARNING):
        rollouts = [asyncio.run(runner.step(q)) for q in ("SELECT 1", "DROP TABLE users")]
    messages = [r.getMessage() for r in caplog.records if "without a single governance check" in r.getMessage()]
    assert len(messages) == 1  # once per runner
    assert "governed_tool('database_query', fn)" in messages[0] and "govern_input=True" in messages[0]
    assert all(r.governed is False and r.violations == [] for r in rollouts)
    assert [r.governance.reward.final for r in rollouts] == [1.0, 1.0]  # the agent's reward, no clean bonus
    assert [r.governance.reward.clean_bonus for r in rollouts] == [0.0, 0.0]
    assert runner.get_stats()["ungoverned_rollouts"] == 2
    assert runner.reward_fn.get_stats()["ungoverned_rate"] == 1.0 and runner.reward_fn.get_stats()["clean_rate"] == 0.0

    # An agent that legitimately acts without tools in some rollouts can keep the bonus for them.
    lenient = PolicyReward(kernel, config=RewardConfig(clean_bonus_requires_check=False))
    assert lenient(rollouts[0]) == 6.0 and lenient.get_stats()["clean_rate"] == 1.0
    with pytest.raises(TypeError, match="clean_bonus_requires_check must be a bool"):
        RewardConfig(clean_bonus_requires_check="no")

    # The two fixes the message names: govern the task, or the tool.
    governed = AgentOSRunner(kernel, reward_fn=PolicyReward(kernel), govern_input=True, log_violations=False)
    governed.init(careless_agent)
    clean, dropped = (asyncio.run(governed.step(q)) for q in ("SELECT 1", "DROP TABLE t2"))
    assert clean.governed and clean.governance.reward.final == 6.0
    assert dropped.success is False and dropped.governance.reward.final == -100.0
    assert governed.get_stats()["ungoverned_rollouts"] == 0


def test_a_plain_functions_blocked_task_says_it_was_judged_as_the_action(caplog):
    """With the default, a plain function's string task is the action: a task in prose is blocked
    as unparseable SQL, and the runner says once why, and how to opt out (govern_input=False);
    passing govern_input=True explicitly means the user knows, so nothing is explained."""
    answered = []

    def chat_agent(task):
        answered.append(task)
        return f"answered: {task}"

    runner = AgentOSRunner([SQLPolicy(deny=["DROP"])], log_violations=False)
    runner.init(chat_agent)
    with caplog.at_level(logging.WARNING):
        rollouts = [asyncio.run(runner.step(q)) for q in ("How many users?", "Who signed up?", "SELECT 1")]
    assert [r.success for r in rollouts] == [False, False, True] and answered == ["SELECT 1"]
    hints = [r.getMessage() for r in caplog.records if "each string task is itself the action" in r.getMessage()]
    assert len(hints) == 1  # once per runner
    assert "database_query(query=task)" in hints[0] and "govern_input=False" in hints[0]

    caplog.clear()
    explicit = AgentOSRunner([SQLPolicy(deny=["DROP"])], govern_input=True, log_violations=False)
    explicit.init(chat_agent)
    with caplog.at_level(logging.WARNING):
        assert asyncio.run(explicit.step("How many users?")).success is False
    assert not [r for r in caplog.records if "each string task is itself the action" in r.getMessage()]
