"""The database's refusal lands in the rollout: inside AgentOSRunner, an SQLEnvelope from
``governed_sql`` records the database refusing what the kernel allowed as a blocked decision of
the attempt (a violation span in the store, a penalty in the reward, one audit record), and the
database keeps its rows. Real runner, real in-memory LightningStore, real kernel, real SQLite."""

from __future__ import annotations

import asyncio
import sqlite3

from agentlightning.store.memory import InMemoryLightningStore

from agentlightning.contrib.kernel.agentos import GovernanceKernel, SQLPolicy
from agentlightning.contrib.kernel.agentos.sql import SQLRefused
from agentlightning.contrib.reward.agentos import PolicyReward
from agentlightning.contrib.runner.agentos import AgentOSRunner
from agentlightning.contrib.runner.agentos.tools import governed_sql

SCHEMA = """
CREATE TABLE events (id INTEGER);
CREATE TABLE accounts (id INTEGER);
INSERT INTO accounts VALUES (1), (2), (3);
CREATE TRIGGER wipe_accounts AFTER INSERT ON events BEGIN DELETE FROM accounts; END;
"""


def test_a_database_refusal_is_a_blocked_decision_of_the_rollout(tmp_path):
    db = sqlite3.connect(tmp_path / "shop.db", check_same_thread=False)
    db.executescript(SCHEMA)
    kernel = GovernanceKernel([SQLPolicy(deny=["DROP", "DELETE"])], recorder=tmp_path / "audit.db")
    envelope = governed_sql(kernel, db)
    outcomes = []

    def agent(task: str) -> str:
        try:
            envelope.execute(task)
            outcomes.append("ran")
        except SQLRefused as refused:
            outcomes.append(("refused", refused.by_database))
        return "done"

    async def scenario():
        store = InMemoryLightningStore()
        await store.add_resources({})  # the agent needs none
        runner = AgentOSRunner(kernel, reward_fn=PolicyReward(kernel), log_violations=False)
        runner.init(agent)
        runner.init_worker(0, store)
        rollout = await runner.step("INSERT INTO events VALUES (1)")
        spans = await store.query_spans(rollout.rollout_id)
        runner.teardown_worker(0)
        runner.teardown()
        return rollout, spans

    rollout, spans = asyncio.run(scenario())
    # The text is an INSERT, which the kernel allows; its trigger's DELETE is refused by SQLite.
    assert outcomes == [("refused", True)]
    assert db.execute("SELECT count(*) FROM accounts").fetchone()[0] == 3
    verdicts = [d.verdict.value for d in rollout.governance.decisions]
    assert verdicts.count("blocked") == 1
    (violation,) = rollout.violations
    assert violation.policy_name == "SQLEnvelope" and "not authorized" in violation.description
    assert rollout.governance.reward.final < 0
    assert sum(s.attributes.get("agentos.kind") == "violation" for s in spans) == 1
    blocked = [r for r in kernel.audit.records() if r["policy_verdict"] == "blocked"]
    assert len(blocked) == 1 and "SQLEnvelope" in blocked[0]["violation_reason"]
