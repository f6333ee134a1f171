"""The slips a newcomer makes in the first hour, each answered at the boundary by an error that
names the fix, instead of a call that silently does the wrong thing or an error from deep inside
Python.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import sqlite3

import pytest

from agentlightning.store.memory import InMemoryLightningStore

from agentlightning.contrib.adapter.agentos import ExportError, verify_export
from agentlightning.contrib.kernel.agentos import Action, GovernanceKernel, SQLPolicy
from agentlightning.contrib.kernel.agentos.agl03.stats import governance_stats
from agentlightning.contrib.reward.agentos import PolicyReward
from agentlightning.contrib.runner.agentos import AgentOSRunner, governed_tool


# ----------------------------------------------------------------------------- a tool name that is SQL
@pytest.mark.parametrize("text", ["DROP TABLE users", "DELETE/**/FROM/**/users", "SELECT * FROM users;"])
def test_sql_in_place_of_a_tool_name_is_refused_with_the_right_call(text):
    kernel = GovernanceKernel([SQLPolicy(deny=["DROP", "DELETE"])])
    with pytest.raises(ValueError, match=r"is not a tool name") as raised:
        kernel.check(text)
    message = str(raised.value)
    assert "Action.sql(" in message and 'kernel.check("database_query", {"query": ' in message
    with pytest.raises(ValueError, match=r"is not a tool name"):
        kernel.check(text, {"query": "SELECT 1"})
    with pytest.raises(ValueError, match=r"is not a tool name"):
        Action(text)
    assert kernel.check(Action.sql(text)).blocked == ("DROP" in text or "DELETE" in text)


@pytest.mark.parametrize("name", ["database_query", "run-sql", "mcp__db__query", "db.query", "files/read", "tool:v2"])
def test_tool_names_as_frameworks_write_them_are_still_names(name):
    kernel = GovernanceKernel([SQLPolicy(deny=["DROP"])])
    assert kernel.check(name, {"query": "DROP TABLE users"}).blocked
    assert kernel.check(name, {"query": "SELECT 1"}).allowed


# ----------------------------------------------------------------------------- common slips
def test_governance_stats_without_await_says_to_await_it():
    store = InMemoryLightningStore()
    pending = governance_stats(store)
    with pytest.raises(TypeError, match=r"await governance_stats\(store\)") as raised:
        pending["total_rollouts"]  # the README's old line, without await
    assert "asyncio.run(governance_stats(store))" in str(raised.value)
    assert asyncio.run(governance_stats(store))["total_rollouts"] == 0  # awaited: it works


def test_an_async_governed_tool_called_without_await_logs_the_fix(caplog):
    ran = []

    async def run_sql(query):
        ran.append(query)
        return "rows"

    tool = governed_tool("database_query", run_sql, kernel=GovernanceKernel([SQLPolicy(deny=["DROP"])]))
    with caplog.at_level(logging.ERROR):
        tool("SELECT 1")  # the slip: no await
        gc.collect()
    messages = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert any("was never awaited" in m and "await database_query(" in m and "did not run" in m for m in messages)
    assert ran == []
    assert asyncio.run(tool("SELECT 1")) == "rows" and ran == ["SELECT 1"]  # awaited: it runs
    assert asyncio.iscoroutinefunction(tool)


def test_verify_export_on_a_recorder_database_names_the_verifier_for_it(tmp_path):
    path = tmp_path / "audit.db"
    kernel = GovernanceKernel([SQLPolicy(deny=["DROP"])], recorder=path)
    kernel.check(Action.sql("SELECT 1"))
    kernel.close()
    assert sqlite3.connect(path).execute("SELECT count(*) FROM sqlite_master").fetchone()[0] > 0
    with pytest.raises(ExportError, match=r"is a FlightRecorder database, not an export") as raised:
        verify_export(path)
    assert "verify_file(" in str(raised.value) and "export_to_file" in str(raised.value)


def test_an_unknown_keyword_of_the_runner_says_did_you_mean():
    with pytest.raises(TypeError, match=r"AgentOSRunner\(\) got an unexpected keyword argument 'log_violation'"):
        AgentOSRunner([SQLPolicy(deny=["DROP"])], log_violation=False)
    with pytest.raises(TypeError, match=r"did you mean 'log_violations'\?"):
        AgentOSRunner([SQLPolicy(deny=["DROP"])], log_violation=False)


def test_an_unknown_keyword_of_policy_reward_says_did_you_mean():
    with pytest.raises(TypeError, match=r"PolicyReward\(\) got an unexpected keyword argument 'base_reward'.*"):
        PolicyReward(GovernanceKernel([SQLPolicy(deny=["DROP"])]), base_reward=lambda rollout: 1.0)
    with pytest.raises(TypeError, match=r"did you mean 'base_reward_fn'\?"):
        PolicyReward(GovernanceKernel([SQLPolicy(deny=["DROP"])]), base_reward=lambda rollout: 1.0)


# ----------------------------------------------------------------------------- Trainer.fit(plain function)
def test_trainer_fit_needs_as_agent_for_a_plain_function_and_fails_upstream_before_any_code_of_ours():
    """``Trainer.fit(fn)`` fails in agentlightning's first line of ``fit`` (``agent.set_trainer``),
    before the runner is set up, so no code of this package is on that path and the fix is
    documented (docs/runner.md) instead: ``Trainer.fit(as_agent(fn))``, which governs as usual."""
    import agentlightning as agl
    from agentlightning.algorithm import algo
    from agentlightning.execution import SharedMemoryExecutionStrategy

    from agentlightning.contrib.runner.agentos import as_agent

    stats = []

    @algo
    async def enqueue(*, store) -> None:
        await store.add_resources({"prompt": agl.PromptTemplate(template="{task}", engine="f-string")})
        ids = [(await store.enqueue_rollout(input=q, mode="train")).rollout_id for q in ["SELECT 1", "DROP TABLE t"]]
        while len(await store.wait_for_rollouts(rollout_ids=ids, timeout=0.1)) < len(ids):
            await asyncio.sleep(0.05)
        stats.append(await governance_stats(store, ids))

    def sql_agent(task):
        return 1.0

    runner = AgentOSRunner([SQLPolicy(deny=["DROP"])], log_violations=False)
    trainer = agl.Trainer(
        algorithm=enqueue, runner=runner, strategy=SharedMemoryExecutionStrategy(n_runners=1, main_thread="algorithm")
    )
    with pytest.raises(AttributeError, match=r"'function' object has no attribute 'set_trainer'"):
        trainer.fit(sql_agent)
    assert stats == []  # agentlightning stopped before the runner was set up
    with pytest.raises(ValueError):
        runner.get_agent()
    trainer.fit(as_agent(sql_agent))
    assert stats[0]["total_rollouts"] == 2 and stats[0]["blocked_actions"] == 1
