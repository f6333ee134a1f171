"""A governed rollout with violations is marked on the rollout itself (its metadata, which the
store's rollout list and the dashboard's rollout JSON carry), not only on its attempt."""

from __future__ import annotations

import asyncio

from agentlightning.contrib.kernel.agentos import GovernanceKernel, SQLPolicy
from agentlightning.contrib.reward.agentos import PolicyReward
from agentlightning.contrib.runner.agentos import AgentOSRunner


def test_a_rollout_with_violations_is_marked_in_its_metadata():
    kernel = GovernanceKernel([SQLPolicy(deny=["DROP"])])
    runner = AgentOSRunner(kernel, reward_fn=PolicyReward(kernel), log_violations=False)

    async def run():
        clean = await runner.step("SELECT 1")
        blocked = await runner.step("DROP TABLE users")
        store = runner.get_store()
        listed = {r.rollout_id: r for r in await store.query_rollouts()}
        return listed[clean.rollout_id], listed[blocked.rollout_id]

    clean, blocked = asyncio.run(run())
    assert "agentos" not in (clean.metadata or {})  # a clean rollout costs no extra store write
    mark = blocked.metadata["agentos"]
    assert (mark["violations"], mark["blocked_actions"], mark["total_penalty"]) == (1, 1, -100.0)
    assert mark["violations_by_policy"] == {"SQLPolicy": 1} and mark["attempt_id"]
