"""The governed reward through 1.0's hooks: the kernel core's formula, the last reward event, failing closed."""

from __future__ import annotations

import textwrap
from pathlib import Path
from types import SimpleNamespace

import pytest

from agentlightning.hooks import load_hooks
from agentlightning.schemas import Event, RolloutCreate

import agentlightning.contrib.gateway.agentos.hooks as hooks_module
import agentlightning.contrib.gateway.agentos.lagrangian_hooks as lagrangian_module
from agentlightning.contrib.gateway.agentos import DECISION_EVENT, GovernanceConfig
from agentlightning.contrib.gateway.agentos.events import decision_event_data
from agentlightning.contrib.gateway.agentos.hooks import GovernanceHooks
from agentlightning.contrib.gateway.agentos.lagrangian_hooks import LagrangianGovernanceHooks
from agentlightning.contrib.kernel.agentos import GovernanceKernel, LagrangianPenalty, RewardConfig, SQLPolicy
from agentlightning.contrib.kernel.agentos.reward.config import shape_reward


class Writer:
    """1.0's TraceWriter protocol, keeping what the hook writes."""

    def __init__(self):
        self.events = []

    def add_event(self, rollout_id, attempt_id, event_type, data):
        self.events.append((rollout_id, attempt_id, event_type, data))


def rollout(metadata=None):
    return SimpleNamespace(rollout_id="ro-1", status=SimpleNamespace(last_attempt_id="0"), metadata=metadata or {})


def event(event_type, data):
    return Event(event_type=event_type, rollout_id="ro-1", attempt_id="0", timestamp=0.0, data=data)


def attempt_events(*queries, agent_reward=1.0):
    kernel = GovernanceKernel([SQLPolicy(deny=["DROP", "DELETE"])])
    events = [
        event(
            DECISION_EVENT,
            decision_event_data(kernel.check("run_sql", {"query": q}), choice_index=0, tool_call_id=None),
        )
        for q in queries
    ]
    if agent_reward is not None:
        events.append(event("reward", {"value": agent_reward, "source": "agent"}))
    return {"0": events}


def config(**penalties):
    return GovernanceConfig.from_mapping({"recorder_dir": "unused", "policies": [{"sql": {}}], "penalties": penalties})


def test_the_last_reward_event_is_the_kernel_formula_over_the_gateways_decisions():
    writer = Writer()
    GovernanceHooks(config(clean_bonus=5.0)).on_succeeded(rollout(), attempt_events("SELECT 1", "DROP TABLE t"), writer)
    ((rollout_id, attempt_id, event_type, data),) = writer.events
    assert (rollout_id, attempt_id, event_type, data["source"], data["reason"]) == (
        "ro-1",
        "0",
        "reward",
        "agentos",
        "agentos.governed",
    )
    kernel = GovernanceKernel([SQLPolicy(deny=["DROP", "DELETE"])])
    expected = shape_reward(
        1.0, kernel.check("run_sql", {"query": "DROP TABLE t"}).violations, RewardConfig(clean_bonus=5.0)
    )
    assert data["value"] == expected.final == -99.0
    assert data["agentos"] == expected.to_dict()


def test_clean_and_unexamined_attempts():
    clean, unexamined = Writer(), Writer()
    hooks = GovernanceHooks(config(clean_bonus=5.0))
    hooks.on_succeeded(rollout(), attempt_events("SELECT 1"), clean)
    hooks.on_succeeded(rollout(), attempt_events(), unexamined)
    assert clean.events[0][3]["value"] == 6.0
    assert unexamined.events[0][3]["value"] == 1.0  # nobody checked an action: no clean bonus


def test_a_failing_hook_fails_closed():
    class Broken(GovernanceHooks):
        def base_reward(self, events):
            raise RuntimeError("boom")

    writer = Writer()
    Broken(config()).on_succeeded(rollout(), attempt_events("SELECT 1"), writer)
    data = writer.events[0][3]
    assert (data["value"], data["reason"]) == (-100.0, "agentos.hook_failed")
    assert "boom" in data["message"]
    assert Broken(config(min_reward=None, critical_penalty=-70.0)).fail_closed_value() == -70.0


def test_a_malformed_decision_event_is_not_skipped():
    events = {"0": [event(DECISION_EVENT, {"violations": "lost"}), event("reward", {"value": 1.0})]}
    writer = Writer()
    GovernanceHooks(config()).on_succeeded(rollout(), events, writer)
    assert writer.events[0][3]["reason"] == "agentos.hook_failed"


def test_startup_without_a_configuration_stops_the_trainer(monkeypatch):
    monkeypatch.delenv("AGENTOS_GATEWAY_CONFIG", raising=False)
    with pytest.raises(ValueError, match="set AGENTOS_GATEWAY_CONFIG"):
        GovernanceHooks().on_startup()


def test_the_lagrangian_hooks_price_with_the_stamped_multiplier_and_update_from_violation_rates():
    hooks = LagrangianGovernanceHooks(
        LagrangianPenalty(target_violation_rate=0.0, learning_rate=2.0, multiplier=1.0), window=2, config=config()
    )
    request = hooks.on_enqueue(RolloutCreate(input={}))
    assert request.metadata == {"agentos.lagrange_multiplier": 1.0}
    writer = Writer()
    hooks.on_succeeded(rollout(request.metadata), attempt_events("DROP TABLE t"), writer)
    assert writer.events[-1][3]["value"] == 1.0 - 1.0 * 10.0  # lambda * cost of one critical violation
    assert hooks.lagrangian.multiplier == 1.0  # one attempt of a window of two
    hooks.on_succeeded(rollout(request.metadata), attempt_events("SELECT 1"), writer)
    assert hooks.lagrangian.multiplier == 1.0 + 2.0 * 0.5  # rate 1/2 above a target of 0
    hooks.on_succeeded(rollout({"agentos.lagrange_multiplier": 1.0}), attempt_events("DROP TABLE t"), writer)
    assert writer.events[-1][3]["value"] == -9.0  # priced at the lambda it was enqueued with, not the new one


def test_load_hooks_accepts_our_files_as_they_are():
    assert type(load_hooks(hooks_module.__file__)).__name__ == "GovernanceHooks"
    assert type(load_hooks(lagrangian_module.__file__)).__name__ == "LagrangianGovernanceHooks"


def test_load_hooks_one_subclass_rule_and_the_way_around_it(tmp_path: Path):
    by_name = tmp_path / "by_name.py"
    by_name.write_text(
        textwrap.dedent(
            """
            from agentlightning.contrib.gateway.agentos.hooks import GovernanceHooks
            class MyHooks(GovernanceHooks):
                missing_base_reward = -1.0
            """
        )
    )
    with pytest.raises(ValueError, match="Multiple RolloutHooks subclasses found"):
        load_hooks(str(by_name))
    by_module = tmp_path / "by_module.py"
    by_module.write_text(
        textwrap.dedent(
            """
            from agentlightning.contrib.gateway.agentos import hooks as agentos_hooks
            class MyHooks(agentos_hooks.GovernanceHooks):
                missing_base_reward = -1.0
            """
        )
    )
    loaded = load_hooks(str(by_module))
    assert (type(loaded).__name__, loaded.missing_base_reward) == ("MyHooks", -1.0)


@pytest.mark.parametrize("value", [10**400, float("nan"), True, "1.0"])
def test_an_agent_reward_that_is_not_a_finite_number_is_a_clear_error(value):
    hooks = GovernanceHooks(config())
    with pytest.raises(ValueError, match="the agent's reward event has no finite value"):
        hooks.base_reward([event("reward", {"value": value, "source": "agent"})])
