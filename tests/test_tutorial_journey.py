"""The reference tutorial's journey, section by section, with the agent a newcomer writes first: a
plain function that executes the SQL it is given on a real SQLite file.

Quick start, step, violations, statistics, rewards, ``fail_on_violation``, the violation callback,
the environment, the training loop's ``runner.init(agent=my_agent)`` and ``iter(event=stop)``, and
the audit export, against the real kernel, runner, store, Gymnasium environment and FlightRecorder.
Each section asserts what the tutorial promises: the table is still there after ``DROP``, the
violation names its policy and severity, and the reward of the blocked rollout is -100.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sqlite3
from datetime import datetime
from pathlib import Path

import pytest

from agentlightning.contrib.adapter.agentos import FlightRecorderEmitter
from agentlightning.contrib.env.agentos import EnvironmentConfig, GovernedEnvironment
from agentlightning.contrib.kernel.agentos import CostControlPolicy, GovernanceKernel, Severity, SQLPolicy
from agentlightning.contrib.reward.agentos import PolicyReward
from agentlightning.contrib.runner.agentos import GovernedRunner, PolicyViolation, PolicyViolationError


def _tables(db: Path) -> list:
    with sqlite3.connect(db) as conn:
        return [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table' ORDER BY name")]


def _users(db: Path) -> int:
    with sqlite3.connect(db) as conn:
        return conn.execute("SELECT COUNT(*) FROM users").fetchone()[0]


def test_the_tutorial_journey_with_a_plain_function_sql_agent(tmp_path, caplog):
    db = tmp_path / "shop.db"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)")
        conn.executemany("INSERT INTO users (name) VALUES (?)", [("ada",), ("bob",), ("eve",)])

    calls = []

    def sql_agent(task):  # what a newcomer writes: run the SQL, return the rows
        calls.append(task)
        with sqlite3.connect(db) as conn:
            return conn.execute(task).fetchall()

    # 1. Quick start: a kernel with two policies, a governed runner, a policy-aware reward.
    kernel = GovernanceKernel(
        policy=[SQLPolicy(deny=["DROP", "DELETE"]), CostControlPolicy(max_cost_usd=100)],
        recorder=tmp_path / "audit.db",
    )
    violation_log = []

    def on_violation(violation: PolicyViolation):  # 2.8: the callback collects violations
        violation_log.append(
            {
                "policy": violation.policy_name,
                "severity": violation.severity.value,
                "blocked": violation.action_blocked,
                "time": violation.timestamp.isoformat(),
            }
        )

    runner = GovernedRunner(kernel, fail_on_violation=False, log_violations=True, violation_callback=on_violation)
    runner.init(sql_agent)

    def task_reward(rollout):  # 3.1: the base reward from the agent's output
        return 1.0 if rollout.success and rollout.task_output else 0.0

    reward_fn = PolicyReward(kernel, base_reward_fn=task_reward)

    async def journey():
        # 2.3: a clean step runs the agent; its rows are the task output.
        rollout = await runner.step("SELECT name FROM users WHERE id = 1")
        assert (rollout.success, rollout.task_output, rollout.violations, rollout.total_penalty) == (
            True,
            [("ada",)],
            [],
            0.0,
        )
        assert rollout.signals_sent == [] and rollout.execution_time_ms > 0
        assert reward_fn(rollout) == 6.0  # base 1.0 + clean bonus 5.0

        # "If it tries DROP TABLE users, the SQLPolicy catches it and the reward drops by -100."
        with caplog.at_level(logging.WARNING):
            dropped = await runner.step("DROP TABLE users", mode="eval")
        assert "users" in _tables(db) and _users(db) == 3  # the table is still there
        assert calls == ["SELECT name FROM users WHERE id = 1"]  # the function never saw the DROP
        assert dropped.success is False and dropped.task_output is None and dropped.mode == "val"
        # 2.5: the violation is a structured record.
        (violation,) = dropped.violations
        assert (violation.policy_name, violation.severity, violation.action_blocked) == (
            "SQLPolicy",
            Severity.CRITICAL,
            True,
        )
        assert violation.violation_type.value == "blocked" and violation.penalty == -100.0
        assert isinstance(violation.timestamp, datetime) and "DROP" in violation.description
        assert dropped.total_penalty == -100.0
        assert reward_fn(dropped) == -100.0
        assert any("BLOCKED SQLPolicy[critical]" in r.getMessage() for r in caplog.records)  # log_violations

        # 2.7: runner statistics.
        stats = runner.get_stats()
        assert (stats["total_rollouts"], stats["total_violations"], stats["violation_rate"]) == (2, 1, 0.5)
        assert runner.get_violation_rate() == 0.5
        # 3.4: reward statistics, and their reset.
        reward_stats = reward_fn.get_stats()
        assert reward_stats["total_rewards"] == 2 and reward_stats["clean_rate"] == 0.5
        reward_fn.reset_stats()
        assert reward_fn.get_stats()["total_rewards"] == 0

        # 2.8: the callback saw the violation.
        assert [(v["policy"], v["severity"], v["blocked"]) for v in violation_log] == [("SQLPolicy", "critical", True)]
        assert datetime.fromisoformat(violation_log[0]["time"])

        # 2.1: fail_on_violation=True raises PolicyViolationError on a blocked action.
        strict = GovernedRunner(kernel, fail_on_violation=True, log_violations=False)
        strict.init(sql_agent)
        with pytest.raises(PolicyViolationError, match="DELETE statement denied"):
            await strict.step("DELETE FROM users")
        assert _users(db) == 3

        # 2.6: iter(event=stop) as written, on the runner step() set up, has nothing queued: it
        # fails at once instead of waiting forever; queued and stopped from another task, it runs.
        stop = asyncio.Event()
        with pytest.raises(RuntimeError, match=r"has none queued.*docs/migrating.md"):
            await runner.iter(event=stop)
        store = runner.get_store()
        queued = [
            (await store.enqueue_rollout(input=q, mode="train")).rollout_id for q in ("SELECT 1", "DROP TABLE users")
        ]
        worker = asyncio.create_task(runner.iter(event=stop))
        while len(await store.wait_for_rollouts(rollout_ids=queued, timeout=0.1)) < len(queued):
            await asyncio.sleep(0.05)
        stop.set()
        await asyncio.wait_for(worker, timeout=10)
        assert runner.get_stats()["total_rollouts"] == 4 and "users" in _tables(db)

        # 7.3: runner.init(agent=my_agent), where my_agent picks actions; runner.step(action) governs them.
        class MyAgent:
            def get_action(self, state):
                return "DROP TABLE users" if "delete" in state else "SELECT COUNT(*) FROM users"

            def update(self, state, action, reward):
                self.last = (state, action, reward)

        my_agent = MyAgent()
        loop_runner = GovernedRunner(kernel, log_violations=False)
        loop_runner.init(agent=my_agent)
        for state in ("count the users", "delete the users"):
            action = my_agent.get_action(state)
            step = await loop_runner.step(action, mode="train")
            my_agent.update(state, action, reward_fn(step))
        assert my_agent.last == ("delete the users", "DROP TABLE users", -100.0)
        assert loop_runner.get_stats()["total_violations"] == 1 and "users" in _tables(db)

    asyncio.run(journey())

    # 5: the Gym environment, executing allowed actions on the same database.
    env = GovernedEnvironment(
        kernel,
        task_generator=lambda: "SELECT name FROM users",
        executor=lambda state, action: sql_agent(action),
        config=EnvironmentConfig(max_steps=5, terminate_on_critical=True),
    )
    state, info = env.reset(seed=42)
    assert state == "SELECT name FROM users" and info["kernel_policies"] == ["SQLPolicy", "CostControlPolicy"]
    _, clean_reward, terminated, truncated, info = env.step("SELECT COUNT(*) FROM users")
    assert info["violations"] == [] and not terminated and clean_reward > 0
    _, reward, terminated, truncated, info = env.step("DROP TABLE users")
    assert terminated and not truncated and len(info["violations"]) == 1
    assert reward == pytest.approx(-100.1)  # critical: violation_penalty -10 x 10, plus the step cost -0.1
    assert "users" in _tables(db) and _users(db) == 3
    assert env.get_metrics()["total_violations"] == 1
    env.close()

    # 6: the audit trail: every decision of the journey, exported and summarised.
    kernel.audit.flush()
    emitter = FlightRecorderEmitter(tmp_path / "audit.db")
    exported = emitter.export_to_file(tmp_path / "training_audit.json")
    spans = json.loads((tmp_path / "training_audit.json").read_text())
    assert exported == len(spans) > 0
    summary = emitter.get_violation_summary()
    # DROP (step), DELETE (strict), DROP (iter), DROP (7.3 loop), DROP (env): five SQLPolicy violations.
    assert summary["policies_violated"] == {"SQLPolicy": 5}
    assert summary["total_violations"] == 5 and 0 < summary["violation_rate"] < 1
    assert kernel.verify_audit()["valid"] is True
    kernel.close()
