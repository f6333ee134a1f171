"""PolicyReward, RewardConfig and friends: exact numbers from pure functions and from a real
AgentOSRunner writing to a real LightningStore, with violations found by the real kernel."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest

import agentlightning as agl
from agentlightning.emitter import emit_reward, find_final_reward, find_reward_spans
from agentlightning.store.memory import InMemoryLightningStore

from agentlightning.contrib.kernel.agentos import (
    Action,
    GovernanceConfigError,
    GovernanceKernel,
    PolicyViolation,
    SQLPolicy,
)
from agentlightning.contrib.kernel.agentos.agl03.reward_span import is_governed_reward_span
from agentlightning.contrib.kernel.agentos.agl03.stats import governance_stats
from agentlightning.contrib.kernel.agentos.reward.shaping import shape_reward
from agentlightning.contrib.kernel.agentos.semconv import AGENTOS_LAGRANGE_MULTIPLIER
from agentlightning.contrib.reward.agentos import (
    CompositeReward,
    LagrangianPenalty,
    PolicyReward,
    RewardConfig,
    create_policy_reward,
    policy_penalty,
)
from agentlightning.contrib.runner.agentos import ActionBlockedError, AgentOSRunner, governed_tool

DENY = ["DROP", "DELETE", "TRUNCATE"]


@pytest.fixture(scope="module")
def kernel():
    return GovernanceKernel([SQLPolicy(deny=DENY, dialect="sqlite")])


def _violations(kernel, *queries):
    return [v for q in queries for v in kernel.check(Action.sql(q)).violations]


def _rollout(kernel, *queries, success=True, **extra):
    return SimpleNamespace(success=success, violations=_violations(kernel, *queries), **extra)


# ----------------------------------------------------------------------------- pure functions
def test_reward_config_defaults_are_the_reference_ones():
    c = RewardConfig()
    assert (c.critical_penalty, c.high_penalty, c.medium_penalty, c.low_penalty) == (-100.0, -50.0, -10.0, -1.0)
    assert (c.clean_bonus, c.multiplicative, c.multiplicative_factor, c.min_reward, c.max_reward) == (
        5.0,
        False,
        0.5,
        -100.0,
        100.0,
    )


@pytest.mark.parametrize(
    "fields, error, message",
    [
        ({"critical_penalty": 100}, GovernanceConfigError, "did you mean -100"),
        ({"low_penalty": "x"}, TypeError, "low_penalty must be a number"),
        ({"medium_penalty": float("nan")}, GovernanceConfigError, "must be finite"),
        ({"clean_bonus": -1}, GovernanceConfigError, "clean_bonus must be >= 0"),
        ({"multiplicative": 1}, TypeError, "multiplicative must be a bool"),
        ({"multiplicative_factor": 1.5}, GovernanceConfigError, "in [0, 1]"),
        ({"min_reward": 10, "max_reward": 5}, GovernanceConfigError, "above max_reward"),
        ({"cost_weights": {"severe": 1.0}}, GovernanceConfigError, "unknown severity 'severe'"),
    ],
)
def test_reward_config_rejects_bad_values_by_name(fields, error, message):
    with pytest.raises(error, match=message.replace("[", r"\[").replace("]", r"\]")):
        RewardConfig(**fields)


def test_policy_penalty_uses_the_table_and_honours_explicit_penalties(kernel):
    drop, delete = _violations(kernel, "DROP TABLE users", "DELETE FROM orders")
    explicit = PolicyViolation("warned", "Custom", "slow query", "high", penalty=-3.0)
    implicit_high = PolicyViolation("warned", "Custom", "slow query", "high")
    unjudged_drop = PolicyViolation("blocked", "SQLPolicy", "DROP denied", "critical")  # no kernel priced it
    assert policy_penalty([drop, delete]) == -200.0
    unjudged = [unjudged_drop, explicit, implicit_high]
    assert policy_penalty(unjudged, critical_penalty=-200.0, high_penalty=-80.0) == -283.0
    with pytest.raises(GovernanceConfigError, match=r"priced -100.0 by the kernel.*says -200.0.*one price"):
        policy_penalty([drop], critical_penalty=-200.0)  # its kernel's price stands: never a second one
    assert policy_penalty([]) == 0.0
    with pytest.raises(TypeError, match="expected PolicyViolation"):
        policy_penalty(["DROP"])
    with pytest.raises(GovernanceConfigError, match="did you mean -5"):
        policy_penalty([drop], low_penalty=5)


def test_additive_shaping_exact_numbers(kernel):
    reward_fn = PolicyReward(kernel)
    assert reward_fn(_rollout(kernel, "SELECT 1")) == 6.0  # base 1 + clean bonus 5
    assert reward_fn(_rollout(kernel, "SELECT 1", success=False)) == 5.0  # base 0 + bonus
    assert reward_fn(_rollout(kernel, "DROP TABLE users")) == -99.0  # 1 - 100
    clamped = reward_fn.score(_rollout(kernel, "DROP TABLE users", "DELETE FROM orders"))
    assert (clamped.final, clamped.policy_penalty, clamped.clamped, clamped.cost, clamped.violation_count) == (
        -100.0,
        -200.0,
        True,
        20.0,
        2,
    )
    capped = PolicyReward(kernel, base_reward_fn=lambda r: 250.0).score(_rollout(kernel, "SELECT 1"))
    assert (capped.final, capped.clamped) == (100.0, True)
    unbounded = PolicyReward(kernel, config=RewardConfig(min_reward=None, max_reward=None))
    assert unbounded(_rollout(kernel, "DROP TABLE a", "DROP TABLE b")) == -199.0
    assert (
        PolicyReward(kernel, base_reward_fn=lambda r: 250.0, config=RewardConfig(max_reward=None))(
            _rollout(kernel, "SELECT 1")
        )
        == 255.0
    )


def test_multiplicative_shaping_never_raises_a_reward(kernel):
    config = RewardConfig(multiplicative=True)
    dropped = _violations(kernel, "DROP TABLE users")
    assert shape_reward(0.9, dropped, config).final == pytest.approx(0.45)
    assert shape_reward(0.9, [], config).final == pytest.approx(5.9)  # clean bonus applies in both modes
    assert shape_reward(-1.0, dropped, config).final == -1.5  # a negative base gets worse, not better
    assert shape_reward(0.0, dropped, config).final == 0.0
    assert shape_reward(0.9, dropped, RewardConfig(multiplicative=True, multiplicative_factor=0.0)).final == 0.0
    many = _violations(kernel, "DROP TABLE a", "DELETE FROM b", "TRUNCATE c")
    assert shape_reward(0.8, many, config).final == pytest.approx(0.4)  # the factor applies once per rollout
    for base in (-50.0, -1.0, 0.0, 0.3, 1.0, 80.0):
        for mode in (config, RewardConfig()):
            assert shape_reward(base, dropped, mode).final <= shape_reward(base, [], mode).final - mode.clean_bonus


def test_explicit_violation_penalty_is_honoured_in_shaping():
    explicit = PolicyViolation("warned", "Latency", "slow", "critical", penalty=-2.0)
    assert shape_reward(1.0, [explicit]).final == -1.0


def test_stats_and_reset(kernel):
    reward_fn = PolicyReward(kernel)
    for queries in (["SELECT 1"], ["SELECT 2"], ["DROP TABLE t"], ["DROP TABLE t", "DELETE FROM u"]):
        reward_fn(_rollout(kernel, *queries))
    assert reward_fn.get_stats() == {
        "total_rewards": 4,
        "total_penalties": -300.0,
        "avg_penalty": -75.0,
        "violation_rate": 0.5,
        "clean_rate": 0.5,
        "avg_reward": (6.0 + 6.0 - 99.0 - 100.0) / 4,
        "total_cost": 30.0,
        "avg_cost": 7.5,
        "ungoverned_rate": 0.0,
        "total_violations": 3,
        "violations_per_rollout": 0.75,
    }
    reward_fn.reset_stats()
    assert reward_fn.get_stats()["total_rewards"] == 0 and reward_fn.get_stats()["violation_rate"] == 0.0


def test_bad_inputs_are_named(kernel):
    with pytest.raises(TypeError, match="base_reward_fn must be callable"):
        PolicyReward(kernel, base_reward_fn=1.0)
    with pytest.raises(TypeError, match="config must be a RewardConfig"):
        PolicyReward(kernel, config={"clean_bonus": 1})
    with pytest.raises(TypeError, match="cannot read violations from int"):
        PolicyReward(kernel)(42)
    with pytest.raises(TypeError, match="base reward must be a finite number"):
        PolicyReward(kernel, base_reward_fn=lambda r: "high")(_rollout(kernel, "SELECT 1"))
    with pytest.raises(GovernanceConfigError, match="multiplicative"):
        PolicyReward(kernel, config=RewardConfig(multiplicative=True), lagrangian=LagrangianPenalty())


def test_factory_exact_numbers(kernel):
    severity_penalties = {"CRITICAL": -200.0, "high": -80.0, "medium": -15.0, "low": -2.0}
    table = RewardConfig(critical_penalty=-200.0, high_penalty=-80.0, medium_penalty=-15.0, low_penalty=-2.0)
    priced = GovernanceKernel(kernel.policies, penalties=table.severity_penalties)
    reward_fn = create_policy_reward(
        priced, base_reward_fn=lambda r: 0.5, severity_penalties=severity_penalties, clean_bonus=10.0, min_reward=None
    )
    assert reward_fn(_rollout(priced, "SELECT 1")) == 10.5
    assert reward_fn(_rollout(priced, "DROP TABLE t")) == -199.5
    with pytest.raises(GovernanceConfigError, match=r"GovernanceKernel\(penalties="):
        create_policy_reward(kernel, severity_penalties=severity_penalties)  # its kernel prices by another table
    assert create_policy_reward(kernel, multiplicative=True)(_rollout(kernel, "DROP TABLE t")) == 0.5
    with pytest.raises(GovernanceConfigError, match="unknown severity 'severe'"):
        create_policy_reward(kernel, severity_penalties={"severe": -1.0})
    with pytest.raises(GovernanceConfigError, match=r"unknown RewardConfig field\(s\) \['bonus'\]"):
        create_policy_reward(kernel, bonus=1.0)
    with pytest.raises(GovernanceConfigError, match="given both"):
        create_policy_reward(kernel, severity_penalties={"low": -2.0}, low_penalty=-3.0)


def test_composite_reward_exact_numbers(kernel):
    policy = PolicyReward(kernel)
    accuracy = lambda r: r.accuracy  # noqa: E731
    efficiency = lambda r: 1.0 if r.seconds < 2 else 0.0  # noqa: E731
    composite = CompositeReward([(accuracy, 1.0), (policy, 0.5), (efficiency, 0.3)])
    clean = _rollout(kernel, "SELECT 1", accuracy=0.8, seconds=1)
    dropped = _rollout(kernel, "DROP TABLE t", accuracy=0.8, seconds=5)
    assert composite(clean) == pytest.approx(0.8 + 0.5 * 6.0 + 0.3)
    assert composite(dropped) == pytest.approx(0.8 + 0.5 * -99.0)
    normalized = CompositeReward([(accuracy, 2.0), (efficiency, 2.0)], normalize=True)
    assert [w for _, w in normalized.components] == [0.5, 0.5]
    assert normalized(clean) == pytest.approx(0.9)


@pytest.mark.parametrize(
    "components, message",
    [
        ([], "non-empty list"),
        ([(lambda r: 1.0, 1.0), (lambda r: 0.0, -1.0)], "sum to zero"),
        ([("accuracy", 1.0)], "must be callable"),
        ([(lambda r: 1.0, "heavy")], "weight must be a finite number"),
        ([(lambda r: 1.0,)], r"\(reward_fn, weight\) pair"),
    ],
)
def test_composite_reward_rejects_bad_components(components, message):
    with pytest.raises((GovernanceConfigError, TypeError), match=message):
        CompositeReward(components)


def test_composite_reward_names_a_component_returning_junk():
    with pytest.raises(TypeError, match="component 1 .* returned None"):
        CompositeReward([(lambda r: 1.0, 1.0), (lambda r: None, 1.0)])(object())


# ----------------------------------------------------------------------------- Lagrangian
def test_lagrangian_update_rule_exact():
    lagrangian = LagrangianPenalty(target_violation_rate=0.1, learning_rate=2.0, multiplier=0.5, max_multiplier=1.0)
    assert lagrangian.update(0.3) == 0.9  # 0.5 + 2 * (0.3 - 0.1)
    assert lagrangian.update(0.6) == 1.0  # capped at max_multiplier
    assert lagrangian.update(0.0) == 0.8
    for _ in range(10):
        lagrangian.update(0.0)
    assert lagrangian.multiplier == 0.0  # never below zero
    assert [h["violation_rate"] for h in lagrangian.history[:3]] == [0.3, 0.6, 0.0]
    with pytest.raises(GovernanceConfigError, match="in \\[0, 1\\]"):
        lagrangian.update(1.5)
    with pytest.raises(GovernanceConfigError, match="learning_rate must be a finite number >= 0"):
        LagrangianPenalty(learning_rate=-1)


def test_lagrangian_prices_the_cost_and_reads_the_multiplier_stamped_on_the_rollout(kernel):
    lagrangian = LagrangianPenalty(multiplier=3.0)
    reward_fn = PolicyReward(kernel, config=RewardConfig(clean_bonus=0.0, min_reward=None), lagrangian=lagrangian)
    dropped = _rollout(kernel, "DROP TABLE t")
    assert reward_fn.score(dropped).final == 1.0 - 3.0 * 10.0
    stamped = _rollout(kernel, "DROP TABLE t", metadata={AGENTOS_LAGRANGE_MULTIPLIER: 0.5})
    reward = reward_fn.score(stamped)
    assert (reward.final, reward.lagrange_multiplier) == (1.0 - 5.0, 0.5)
    assert reward_fn(_rollout(kernel, "SELECT 1")) == 1.0


# ----------------------------------------------------------------------------- with a runner and a store
_query = governed_tool("database_query", lambda query: "ok")


class ScriptedAgent(agl.LitAgent):
    """Runs its task's queries through a governed tool; then returns, emits or raises."""

    def rollout(self, task, resources, rollout):
        for query in task["queries"]:
            try:
                _query(query)
            except ActionBlockedError:
                if task.get("raise_on_block"):
                    raise
        if "emit" in task:
            emit_reward(task["emit"])
            return None
        return task.get("returns", 1.0)


async def _run_tasks(runner, tasks):
    store = InMemoryLightningStore()
    await store.add_resources({"prompt": agl.PromptTemplate(template="{q}", engine="f-string")})
    results = []
    with runner.run_context(agent=ScriptedAgent(), store=store):
        for task in tasks:
            try:
                results.append(await runner.step(task))
            except ActionBlockedError:
                results.append(None)
    rows = []
    for rollout in await store.query_rollouts():
        spans = await store.query_spans(rollout.rollout_id, "latest")
        attempt = await store.get_latest_attempt(rollout.rollout_id)
        rows.append(
            {
                "status": rollout.status,
                "final": find_final_reward(spans),
                "reward_spans": find_reward_spans(spans),
                "spans": spans,
                "metadata": attempt.metadata,
            }
        )
    return store, results, rows


@pytest.fixture(scope="module")
def governed_run(kernel):
    tasks = [
        {"queries": ["SELECT 1"], "returns": 0.75},  # clean: 0.75 + 5
        {"queries": ["DROP TABLE users"], "returns": 0.75},  # 0.75 - 100
        {"queries": ["DROP TABLE users", "DELETE FROM orders"], "returns": 0.75},  # clamped at -100
        {"queries": ["SELECT 1"], "emit": 0.5},  # an emitted reward is shaped: 0.5 + 5
        {"queries": ["DROP TABLE users"], "raise_on_block": True},  # failed: base 0 - 100
    ]
    reward_fn = PolicyReward(kernel)
    runner = AgentOSRunner(kernel, reward_fn=reward_fn, log_violations=False)
    store, results, rows = asyncio.run(_run_tasks(runner, tasks))
    return {"store": store, "results": results, "rows": rows, "reward_fn": reward_fn}


def test_runner_stores_the_governed_reward_as_the_final_reward(governed_run):
    rows = governed_run["rows"]
    assert [r["final"] for r in rows] == [5.75, -99.25, -100.0, 5.5, -100.0]
    assert [r["status"] for r in rows] == ["succeeded"] * 4 + ["failed"]
    for row in rows:
        assert is_governed_reward_span(row["reward_spans"][-1])  # the last reward span is the governed one
        assert not any(is_governed_reward_span(s) for s in row["reward_spans"][:-1])
    assert all(row["spans"][-1] is row["reward_spans"][-1] for row in rows[:4])  # succeeded: the very last span
    # a returned float is replaced, not stored unshaped; an emitted one stays as a record before it
    assert [len(r["reward_spans"]) for r in rows] == [1, 1, 1, 2, 1]


def test_runner_reward_span_is_multidimensional_with_cost(governed_run):
    span = governed_run["rows"][2]["spans"][-1]
    attributes = span.attributes
    dims = {
        attributes[f"agentlightning.reward.{i}.name"]: attributes[f"agentlightning.reward.{i}.value"] for i in range(4)
    }
    assert attributes["agentlightning.reward.0.name"] == "final"
    assert dims == {"final": -100.0, "base": 0.75, "policy_penalty": -200.0, "clean_bonus": 0.0}
    assert (
        attributes["agentos.cost"],
        attributes["agentos.violation_count"],
        attributes["agentos.reward_clamped"],
    ) == (20.0, 2, True)


def test_runner_exposes_reward_and_cost_on_the_rollout_and_attempt(governed_run):
    clean, dropped = governed_run["results"][:2]
    assert (clean.governance.reward.final, clean.governance.cost, clean.agent_reward) == (5.75, 0.0, 0.75)
    assert (dropped.governance.reward.final, dropped.governance.cost) == (-99.25, 10.0)
    summaries = [r["metadata"]["agentos"] for r in governed_run["rows"]]
    assert [s["cost"] for s in summaries] == [0.0, 10.0, 20.0, 0.0, 10.0]
    assert [s["reward"]["final"] for s in summaries] == [5.75, -99.25, -100.0, 5.5, -100.0]
    assert governed_run["reward_fn"].get_stats()["total_rewards"] == 5


def test_multiplicative_and_plain_callable_reward_fns_in_the_runner(kernel):
    tasks = [{"queries": ["SELECT 1"], "returns": 0.8}, {"queries": ["DROP TABLE t"], "returns": 0.8}]
    _, _, rows = asyncio.run(
        _run_tasks(
            AgentOSRunner(
                kernel, reward_fn=PolicyReward(kernel, config=RewardConfig(multiplicative=True)), log_violations=False
            ),
            tasks,
        )
    )
    assert [r["final"] for r in rows] == pytest.approx([5.8, 0.4])
    plain = lambda rollout: -len(rollout.violations) + rollout.agent_reward  # noqa: E731
    _, _, rows = asyncio.run(_run_tasks(AgentOSRunner(kernel, reward_fn=plain, log_violations=False), tasks))
    assert [r["final"] for r in rows] == pytest.approx([0.8, -0.2])
    with pytest.raises(TypeError, match="reward_fn must be callable"):
        AgentOSRunner(kernel, reward_fn="PolicyReward")


def test_standalone_record_without_a_tracer_makes_the_governed_reward_final(kernel):
    async def scenario():
        runner = AgentOSRunner(kernel, log_violations=False)  # no reward_fn: the agent's float is stored
        store = InMemoryLightningStore()
        await store.add_resources({"prompt": agl.PromptTemplate(template="{q}", engine="f-string")})
        with runner.run_context(agent=ScriptedAgent(), store=store):
            rollout = await runner.step({"queries": ["DROP TABLE users"], "returns": 1.0})
        before = find_final_reward(await store.query_spans(rollout.rollout_id, "latest"))
        reward_fn = PolicyReward(kernel)
        value = reward_fn(rollout)  # outside any runner or tracer
        recorded = await reward_fn.record(store, rollout)
        after = find_final_reward(await store.query_spans(rollout.rollout_id, "latest"))
        return before, value, recorded, after

    before, value, recorded, after = asyncio.run(scenario())
    assert (before, value, recorded.final, after) == (1.0, -99.0, -99.0, -99.0)


def test_lagrangian_updates_from_store_statistics(kernel, governed_run):
    lagrangian = LagrangianPenalty(target_violation_rate=0.2, learning_rate=1.0, multiplier=1.0)
    stats = asyncio.run(governance_stats(governed_run["store"]))
    assert stats["violation_rate"] == 3 / 5
    assert asyncio.run(lagrangian.update_from_store(governed_run["store"])) == pytest.approx(1.0 + (0.6 - 0.2))
    empty = LagrangianPenalty(multiplier=2.0)
    assert asyncio.run(empty.update_from_store(InMemoryLightningStore())) == 2.0 and empty.history == []


def test_runner_prices_a_rollout_at_the_multiplier_it_was_enqueued_with(kernel):
    """The algorithm stamps lambda on the rollouts it enqueues; a runner (any process) uses it."""

    async def scenario():
        store = InMemoryLightningStore()
        await store.add_resources({"prompt": agl.PromptTemplate(template="{q}", engine="f-string")})
        algorithm_side = LagrangianPenalty(multiplier=7.0)
        enqueued = await store.enqueue_rollout(
            input={"queries": ["DROP TABLE t"], "returns": 1.0},
            mode="train",
            metadata=algorithm_side.rollout_metadata(),
        )
        runner_side = PolicyReward(
            kernel, config=RewardConfig(min_reward=None, clean_bonus=0.0), lagrangian=LagrangianPenalty(multiplier=1.0)
        )
        runner = AgentOSRunner(kernel, reward_fn=runner_side, log_violations=False, max_rollouts=1, poll_interval=0.01)
        with runner.run_context(agent=ScriptedAgent(), store=store):
            await runner.iter()
        return find_final_reward(await store.query_spans(enqueued.rollout_id, "latest"))

    assert asyncio.run(scenario()) == 1.0 - 7.0 * 10.0


def test_one_lagrangian_penalty_class_serves_the_kernel_the_reward_room_and_the_store():
    from agentlightning.contrib.kernel.agentos import LagrangianPenalty as KernelLagrangianPenalty
    from agentlightning.contrib.reward.agentos import LagrangianPenalty as RewardLagrangianPenalty

    assert RewardLagrangianPenalty is KernelLagrangianPenalty
    # The 1.0 hooks and a 0.3 training loop hold the same object: the kernel's class reads a 0.3 store too.
    lagrangian = KernelLagrangianPenalty(multiplier=2.0)
    assert asyncio.run(lagrangian.update_from_store(InMemoryLightningStore())) == 2.0
