"""What AgentOSRunner stores per attempt: spans for the decisions with violations and one governance
summary (the default, ``check_spans="violations"``), or also a span per allowed decision
(``check_spans="all"``). Every decision is in the audit trail either way, and the statistics read
from the store count every check in both."""

from __future__ import annotations

import asyncio

import pytest

import agentlightning as agl
from agentlightning.store.memory import InMemoryLightningStore

from agentlightning.contrib.kernel.agentos import GovernanceKernel, SQLPolicy
from agentlightning.contrib.runner.agentos import AgentOSRunner, governance_stats

from .runner_agents import SQLAgent

QUERIES = ["SELECT 1", "SELECT id FROM users", "DROP TABLE users", "SELECT 2"]


def _scenario(shop_db, audit_path, **options):
    async def run():
        kernel = GovernanceKernel([SQLPolicy(deny=["DROP"])], recorder=audit_path)
        runner = AgentOSRunner(kernel, log_violations=False, **options)
        store = InMemoryLightningStore()
        await store.add_resources({"prompt": agl.PromptTemplate(template="{q}", engine="f-string")})
        runner.init(SQLAgent())
        runner.init_worker(0, store)
        rollout = await runner.step({"db": str(shop_db), "queries": QUERIES})
        spans = await store.query_spans(rollout.rollout_id, "latest")
        attempt = await store.get_latest_attempt(rollout.rollout_id)
        stats = await governance_stats(store)
        records = kernel.audit.records()
        runner.teardown_worker(0)
        runner.teardown()
        return spans, attempt, stats, records

    return asyncio.run(run())


def _governance_span_names(spans):
    return [s.name for s in spans if s.name.startswith(("agentos.check", "agentos.violation"))]


def test_by_default_only_the_decisions_with_violations_become_spans(shop_db, audit_path):
    spans, attempt, stats, records = _scenario(shop_db, audit_path)
    assert _governance_span_names(spans) == [
        "agentos.check: blocked database_query",
        "agentos.violation: SQLPolicy (critical) penalty -100.0, blocked",
    ]
    summary = attempt.metadata["agentos"]
    assert (summary["checks"], summary["violations"], summary["blocked_actions"]) == (4, 1, 1)
    assert (stats["total_checks"], stats["total_violations"], stats["blocked_actions"]) == (4, 1, 1)
    assert [r["policy_verdict"] for r in records] == ["allowed", "allowed", "blocked", "allowed"]


def test_check_spans_all_adds_a_span_per_allowed_decision(shop_db, audit_path):
    spans, attempt, stats, records = _scenario(shop_db, audit_path, check_spans="all")
    names = _governance_span_names(spans)
    assert names.count("agentos.check: allowed database_query") == 3
    assert names.count("agentos.check: blocked database_query") == 1
    assert names.count("agentos.violation: SQLPolicy (critical) penalty -100.0, blocked") == 1
    assert (stats["total_checks"], stats["total_violations"], stats["blocked_actions"]) == (4, 1, 1)
    assert len(records) == 4


@pytest.mark.parametrize("value", ["allowed", "ALL", None, True])
def test_a_bad_check_spans_value_is_refused_naming_both_choices(value):
    with pytest.raises(ValueError, match=r"check_spans must be 'violations' .* or 'all' .*got"):
        AgentOSRunner([SQLPolicy(deny=["DROP"])], check_spans=value)
