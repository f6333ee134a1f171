"""One penalty table prices a violation everywhere, and the kernel holds it (0.3 line).

The same violations (one priced by its severity, one with the explicit penalty its policy set) and
the same table (a user's override of the defaults, given once as a ``RewardConfig`` and held by the
kernel) must cost the same on the violation, its decision and audit record, in the violation and
check spans, in ``shape_reward``, in a ``GovernedEnvironment`` step (its reward, its ``info`` and
the spans it records to a store) and in a runner's rollout; a room holding a second, different
table is refused. The 1.0 gateway hooks' side is ``tests/lightning1/test_penalty_table.py``.
"""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest

from agentlightning.store.memory import InMemoryLightningStore

from agentlightning.contrib.env.agentos import EnvironmentConfig, GovernedEnvironment, record_episodes_to_store
from agentlightning.contrib.kernel.agentos import (
    GovernanceKernel,
    Policy,
    PolicyViolation,
    RewardConfig,
    SeverityTable,
    SQLPolicy,
    ViolationType,
)
from agentlightning.contrib.kernel.agentos.agl03.spans import (
    check_span_attributes,
    decision_core_fields,
    is_violation_span,
    violation_span_attributes,
    violation_span_name,
)
from agentlightning.contrib.kernel.agentos.reward.config import shape_reward
from agentlightning.contrib.kernel.agentos.semconv import AGENT_OS_TOTAL_PENALTY, AGENTOS_PENALTY, AGENTOS_TOTAL_PENALTY

#: The user's override of the default table (critical -100, high -50, medium -10, low -1), given once.
USER_CONFIG = RewardConfig(critical_penalty=-200.0, high_penalty=-80.0, medium_penalty=-15.0, low_penalty=-2.0)
USER_TABLE = USER_CONFIG.severity_penalties
#: The explicit penalty the policy below sets on its finding (it wins over any table).
EXPLICIT = -7.5


class FlagsUsers(Policy):
    """Warns about any statement naming ``users``, with an explicit penalty."""

    def evaluate(self, action, context):
        if "users" not in str(action.args.get("query", "")):
            return []
        return [PolicyViolation(ViolationType.WARNED, self.name, "touches users", "high", penalty=EXPLICIT)]


def kernel(**options):
    return GovernanceKernel([SQLPolicy(deny=["DROP"]), FlagsUsers()], **options)


def decision(penalties=None):
    return kernel(penalties=penalties).check("database_query", {"query": "DROP TABLE users"})


@pytest.mark.parametrize(
    "config, expected",
    [(RewardConfig(), [-100.0, EXPLICIT]), (USER_CONFIG, [-200.0, EXPLICIT])],
    ids=["default table", "user's table"],
)
def test_the_span_the_reward_and_the_environment_price_a_violation_alike(config, expected):
    table = config.severity_penalties
    found = decision(table)
    assert [v.severity.value for v in found.violations] == ["critical", "high"]
    assert [table.price(v) for v in found.violations] == expected

    spans = [violation_span_attributes(found, i, penalties=table)[AGENTOS_PENALTY] for i in range(2)]
    names = [violation_span_name(found, i, penalties=table) for i in range(2)]
    assert spans == expected
    assert [f"penalty {p}," in name for p, name in zip(expected, names)] == [True, True]
    assert check_span_attributes(found, penalties=table)[AGENTOS_TOTAL_PENALTY] == sum(expected)

    reward = shape_reward(0.0, found.violations, RewardConfig(**{**vars(config), "min_reward": None}))
    assert reward.policy_penalty == sum(expected)

    env = GovernedEnvironment(
        kernel(penalties=table), config=EnvironmentConfig(penalties=table, step_penalty=0.0), record_episodes=True
    )
    env.reset(seed=0)
    _, step_reward, _, _, info = env.step("DROP TABLE users")
    assert step_reward == sum(expected)
    assert [v["penalty"] for v in info["violations"]] == expected

    store = InMemoryLightningStore()
    (rollout_id,) = asyncio.run(record_episodes_to_store(store, env))
    stored = asyncio.run(store.query_spans(rollout_id))
    assert [s.attributes[AGENTOS_PENALTY] for s in stored if is_violation_span(s)] == expected


def test_the_spans_default_to_the_default_table():
    found = decision()
    default = SeverityTable.preset("penalties")
    assert [violation_span_attributes(found, i)[AGENTOS_PENALTY] for i in range(2)] == [
        default.price(v) for v in found.violations
    ]
    check, *_ = decision_core_fields(found)
    assert check.attributes[AGENTOS_TOTAL_PENALTY] == -100.0 + EXPLICIT


def test_only_a_penalty_table_prices_a_violation():
    with pytest.raises(ValueError, match="only a penalty table prices a violation"):
        SeverityTable.preset("costs").price(decision().violations[0])


def _runner_rollout(shop_db, governed=None, **runner_options):
    """One real AgentOSRunner rollout of the scripted SQL agent running ``DROP TABLE users`` (on
    ``governed``, default :func:`kernel`); the stored spans and the reward span's value."""
    import agentlightning as agl
    from agentlightning.emitter import find_final_reward

    from agentlightning.contrib.runner.agentos import AgentOSRunner

    from .runner_agents import SQLAgent

    async def run():
        runner = AgentOSRunner(governed if governed is not None else kernel(), log_violations=False, **runner_options)
        store = InMemoryLightningStore()
        await store.add_resources({"prompt": agl.PromptTemplate(template="{q}", engine="f-string")})
        runner.init(SQLAgent())
        runner.init_worker(0, store)
        try:
            rollout = await runner.step({"db": str(shop_db), "queries": ["DROP TABLE users"]})
            spans = await store.query_spans(rollout.rollout_id, "latest")
        finally:
            runner.teardown_worker(0)
            runner.teardown()
        return rollout, spans, find_final_reward(spans)

    return asyncio.run(run())


def test_the_runners_violation_spans_are_priced_by_its_reward_functions_table(shop_db):
    from agentlightning.contrib.reward.agentos import PolicyReward

    config = RewardConfig(**{**vars(USER_CONFIG), "min_reward": None})
    priced = kernel(penalties=config.severity_penalties)
    rollout, spans, final = _runner_rollout(shop_db, governed=priced, reward_fn=PolicyReward(priced, config=config))
    violations = [s for s in spans if is_violation_span(s)]
    assert [s.attributes[AGENTOS_PENALTY] for s in violations] == [-200.0, EXPLICIT]
    assert [f"penalty {p}," in s.name for p, s in zip([-200.0, EXPLICIT], violations)] == [True, True]
    (check,) = [s for s in spans if s.name.startswith("agentos.check")]
    assert check.attributes[AGENTOS_TOTAL_PENALTY] == rollout.governance.reward.policy_penalty == -200.0 + EXPLICIT
    assert final == rollout.governance.reward.final


def test_the_attempts_summary_totals_violations_by_the_runners_table(shop_db):
    rollout, spans, _ = _runner_rollout(shop_db, governed=kernel(penalties=USER_TABLE), penalties=USER_TABLE)
    summary = rollout.governance.summary()
    assert rollout.total_penalty == summary["total_penalty"] == -200.0 + EXPLICIT
    assert sum(s.attributes[AGENTOS_PENALTY] for s in spans if is_violation_span(s)) == summary["total_penalty"]


def test_a_table_given_to_the_runner_prices_the_kernel_it_builds_and_its_spans(shop_db):
    policies = [SQLPolicy(deny=["DROP"]), FlagsUsers()]
    _, spans, _ = _runner_rollout(shop_db, governed=policies, penalties=USER_TABLE, check_spans="all")
    assert [s.attributes[AGENTOS_PENALTY] for s in spans if is_violation_span(s)] == [-200.0, EXPLICIT]


@pytest.mark.parametrize("table", [SeverityTable.preset("costs"), {"critical": -200.0}, -200.0])
def test_the_runner_refuses_a_table_that_is_not_a_penalty_table(table):
    from agentlightning.contrib.runner.agentos import AgentOSRunner

    with pytest.raises(ValueError, match="penalties must be a penalty table"):
        AgentOSRunner(kernel(), penalties=table)


# ---------------------------------------------------------------------------------------------
# The kernel holds the one table: the violation, the decision and the audit record say
# the kernel's price, and a room holding a second, different table is refused.

USER_PRICES = [-200.0, EXPLICIT]


def test_a_kernel_prices_its_decisions_violations_and_their_audit_record_by_its_table(tmp_path):
    from agentlightning.contrib.kernel.agentos.audit.reader import RecorderReader
    from agentlightning.contrib.kernel.agentos.audit.record import violation_summary

    recorder = tmp_path / "audit.db"
    priced = kernel(penalties=USER_TABLE, recorder=str(recorder))
    found = priced.check("database_query", {"query": "DROP TABLE users"})
    priced.audit.close()
    assert priced.penalties is USER_TABLE
    assert [v.penalty for v in found.violations] == USER_PRICES
    assert found.total_penalty == sum(USER_PRICES)

    (record,) = RecorderReader(str(recorder)).records()
    assert [v["penalty"] for v in record.violations] == USER_PRICES
    assert violation_summary(record.violations)[AGENT_OS_TOTAL_PENALTY] == sum(USER_PRICES)
    read_back = [PolicyViolation.from_dict(v) for v in record.violations]
    assert read_back == list(found.violations)
    assert [USER_TABLE.price(v) for v in read_back] == USER_PRICES


def test_a_kernel_prices_by_the_preset_penalty_table_by_default():
    assert GovernanceKernel().penalties is SeverityTable.preset("penalties")


@pytest.mark.parametrize("table", [SeverityTable.preset("costs"), {"critical": -200.0}, -200.0])
def test_the_kernel_refuses_a_table_that_is_not_a_penalty_table(table):
    with pytest.raises(ValueError, match=r"penalties must be a penalty table.*severity_penalties"):
        GovernanceKernel(penalties=table)


def test_the_reward_refuses_violations_a_kernel_priced_by_another_table():
    found = kernel().check("database_query", {"query": "DROP TABLE users"})
    with pytest.raises(ValueError, match=r"GovernanceKernel\(penalties="):
        shape_reward(0.0, found.violations, USER_CONFIG)
    with pytest.raises(ValueError, match=r"GovernanceKernel\(penalties="):
        USER_TABLE.price(found.violations[0])


def test_a_runner_refuses_a_reward_table_its_kernel_does_not_price_by():
    from agentlightning.contrib.reward.agentos import PolicyReward
    from agentlightning.contrib.runner.agentos import AgentOSRunner

    with pytest.raises(ValueError, match=r"critical=-200.0.*critical=-100.0.*GovernanceKernel\(penalties="):
        AgentOSRunner(kernel(), reward_fn=PolicyReward(None, config=USER_CONFIG))
    with pytest.raises(ValueError, match=r"GovernanceKernel\(penalties="):
        AgentOSRunner(kernel(), penalties=USER_TABLE)


def test_a_runner_builds_its_kernel_with_its_reward_functions_table(shop_db):
    from agentlightning.contrib.reward.agentos import PolicyReward

    config = RewardConfig(**{**vars(USER_CONFIG), "min_reward": None})
    policies = [SQLPolicy(deny=["DROP"]), FlagsUsers()]
    rollout, spans, _ = _runner_rollout(shop_db, governed=policies, reward_fn=PolicyReward(None, config=config))
    assert [v.penalty for v in rollout.violations] == USER_PRICES
    assert rollout.total_penalty == rollout.governance.reward.policy_penalty == sum(USER_PRICES)
    assert [s.attributes[AGENTOS_PENALTY] for s in spans if is_violation_span(s)] == USER_PRICES


def test_an_environment_refuses_a_table_its_kernel_does_not_price_by():
    with pytest.raises(ValueError, match=r"GovernanceKernel\(penalties="):
        GovernedEnvironment(kernel(), config=EnvironmentConfig(penalties=USER_TABLE))


def test_an_environment_builds_its_kernel_with_its_table():
    env = GovernedEnvironment(
        [SQLPolicy(deny=["DROP"]), FlagsUsers()], config=EnvironmentConfig(penalties=USER_TABLE, step_penalty=0.0)
    )
    env.reset(seed=0)
    _, reward, _, _, info = env.step("DROP TABLE users")
    assert env.kernel.penalties is USER_TABLE
    assert [v.penalty for v in env.episode.steps[-1].decision.violations] == USER_PRICES
    assert [v["penalty"] for v in info["violations"]] == USER_PRICES
    assert reward == sum(USER_PRICES)


def test_a_reward_without_a_config_prices_by_its_kernels_table():
    from agentlightning.contrib.reward.agentos import PolicyReward

    priced = kernel(penalties=USER_TABLE)
    reward_fn = PolicyReward(priced)
    assert reward_fn.config.severity_penalties == USER_TABLE
    found = priced.check("database_query", {"query": "DROP TABLE users"})
    assert reward_fn.score(SimpleNamespace(success=False, violations=found.violations)).policy_penalty == sum(
        USER_PRICES
    )
    with pytest.raises(ValueError, match=r"critical=-200.0.*critical=-100.0.*GovernanceKernel\(penalties="):
        PolicyReward(kernel(), config=USER_CONFIG)
