"""One penalty table prices a violation everywhere: the 1.0 gateway hooks' side.

The gateway's configuration file overrides the table once (``governance.penalties``, the fields of
a ``RewardConfig``); the gateway's kernel prices by it and the hook's reward prices the attempt's
violations with that same table (the 0.3 rooms' side is ``tests/test_penalty_table.py``).
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from agentlightning.schemas import Event

from agentlightning.contrib.gateway.agentos import DECISION_EVENT, GovernanceConfig
from agentlightning.contrib.gateway.agentos.events import decision_event_data
from agentlightning.contrib.gateway.agentos.hooks import GovernanceHooks
from agentlightning.contrib.kernel.agentos import (
    GovernanceKernel,
    Policy,
    PolicyViolation,
    RewardConfig,
    SQLPolicy,
    ViolationType,
)

EXPLICIT = -7.5
USER_PENALTIES = {"critical_penalty": -200.0, "high_penalty": -80.0, "medium_penalty": -15.0, "low_penalty": -2.0}


class FlagsUsers(Policy):
    def evaluate(self, action, context):
        if "users" not in str(action.args.get("query", "")):
            return []
        return [PolicyViolation(ViolationType.WARNED, self.name, "touches users", "high", penalty=EXPLICIT)]


class Writer:
    def __init__(self):
        self.events = []

    def add_event(self, rollout_id, attempt_id, event_type, data):
        self.events.append(data)


@pytest.mark.parametrize(
    "penalties, expected", [({}, [-100.0, EXPLICIT]), (USER_PENALTIES, [-200.0, EXPLICIT])], ids=["default", "user's"]
)
def test_the_gateway_hook_prices_a_violation_as_the_table_does(penalties, expected):
    config = GovernanceConfig.from_mapping(
        {"recorder_dir": "unused", "policies": [{"sql": {}}], "penalties": {**penalties, "min_reward": None}}
    )
    assert config.reward == RewardConfig(**penalties, min_reward=None)  # the one config object
    table = config.reward.severity_penalties
    decision = GovernanceKernel([SQLPolicy(deny=["DROP"]), FlagsUsers()], penalties=table).check(
        "run_sql", {"query": "DROP TABLE users"}
    )
    assert [v.penalty for v in decision.violations] == expected
    assert [table.price(v) for v in decision.violations] == expected

    data = decision_event_data(decision, choice_index=0, tool_call_id=None)
    events = [
        Event(event_type=DECISION_EVENT, rollout_id="ro-1", attempt_id="0", timestamp=0.0, data=data),
        Event(event_type="reward", rollout_id="ro-1", attempt_id="0", timestamp=0.0, data={"value": 0.0}),
    ]
    writer = Writer()
    rollout = SimpleNamespace(rollout_id="ro-1", status=SimpleNamespace(last_attempt_id="0"), metadata={})
    GovernanceHooks(config).on_succeeded(rollout, {"0": events}, writer)
    (reward,) = writer.events
    assert reward["agentos"]["policy_penalty"] == reward["value"] == sum(expected)


# ---------------------------------------------------------------------------------------------
# The kernel holds the one table: the gateway's kernel prices by the configuration's
# table, and the hook refuses (fails closed on) violations a kernel priced by another one.


def _hook_reward(config, decision):
    data = decision_event_data(decision, choice_index=0, tool_call_id=None)
    events = [Event(event_type=DECISION_EVENT, rollout_id="ro-1", attempt_id="0", timestamp=0.0, data=data)]
    writer = Writer()
    rollout = SimpleNamespace(rollout_id="ro-1", status=SimpleNamespace(last_attempt_id="0"), metadata={})
    GovernanceHooks(config).on_succeeded(rollout, {"0": events}, writer)
    (reward,) = writer.events
    return reward


def test_the_gateways_kernel_prices_by_the_configurations_table(tmp_path):
    config = GovernanceConfig.from_mapping(
        {"recorder_dir": str(tmp_path), "policies": [{"sql": {"deny": ["DROP"]}}], "penalties": USER_PENALTIES}
    )
    kernel = config.build_kernel()
    try:
        decision = kernel.check("run_sql", {"query": "DROP TABLE users"})
    finally:
        kernel.audit.close()
    assert kernel.penalties == config.reward.severity_penalties
    assert [v.penalty for v in decision.violations] == [-200.0]
    assert _hook_reward(config, decision)["agentos"]["policy_penalty"] == -200.0


def test_the_hook_fails_closed_on_violations_a_kernel_priced_by_another_table():
    from agentlightning.contrib.gateway.agentos import REASON_HOOK_FAILED

    decision = GovernanceKernel([SQLPolicy(deny=["DROP"])]).check("run_sql", {"query": "DROP TABLE users"})
    config = GovernanceConfig.from_mapping(
        {"recorder_dir": "unused", "policies": [{"sql": {}}], "penalties": {**USER_PENALTIES, "min_reward": -500.0}}
    )
    reward = _hook_reward(config, decision)
    assert (reward["reason"], reward["value"]) == (REASON_HOOK_FAILED, -500.0)
