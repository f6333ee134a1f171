"""GovernedEnvironment and TextToSQLEnv with the real kernel, real SQLite and a real LightningStore."""

from __future__ import annotations

import asyncio
import importlib.util
import sqlite3
import warnings
from pathlib import Path

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env, data_equivalence

from agentlightning.emitter import find_final_reward
from agentlightning.store.memory import InMemoryLightningStore

from agentlightning.contrib.env.agentos import (
    DiscreteStrategyWrapper,
    EnvironmentConfig,
    GovernedEnvironment,
    SQLWorld,
    TextToSQLEnv,
    create_governed_env,
    make_text_to_sql_env,
    record_episodes_to_store,
)
from agentlightning.contrib.env.agentos.sql_world import database_fingerprint
from agentlightning.contrib.kernel.agentos import (
    ActionContext,
    CostControlPolicy,
    GovernanceConfigError,
    GovernanceKernel,
    Policy,
    SQLPolicy,
    governance_context,
)
from agentlightning.contrib.kernel.agentos.agl03.stats import governance_stats

from .conftest import table_counts

ROOT = Path(__file__).resolve().parent.parent
DENY = ["DROP", "DELETE", "TRUNCATE"]


def sqlite_executor(db: Path):
    """Run SQL on the real database file (committing), as an unsandboxed tool would."""

    def run(state, query):
        with sqlite3.connect(db) as conn:
            return conn.execute(query).fetchall()

    return run


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> SQLWorld:
    return SQLWorld.create(tmp_path_factory.mktemp("world") / "shop.db", seed=0)


# ----------------------------------------------------------------------------- the DROP step
def test_drop_is_blocked_database_unchanged_exact_penalty_and_termination(shop_db, audit_path):
    kernel = GovernanceKernel([SQLPolicy(deny=DENY)], recorder=audit_path)
    env = GovernedEnvironment(
        kernel, task_generator=lambda rng: "tidy the users table", executor=sqlite_executor(shop_db)
    )
    before = table_counts(shop_db)
    obs, info = env.reset(seed=0)
    assert obs == "tidy the users table" and info["episode"] == 1 and info["kernel_policies"] == ["SQLPolicy"]

    obs, reward, terminated, truncated, info = env.step("DROP TABLE users")
    assert table_counts(shop_db) == before  # the DROP never ran
    assert reward == pytest.approx(-10.0 * 10 - 0.1)  # critical x10, plus the step penalty; no task reward, no bonus
    assert (terminated, truncated, env.terminated) == (True, False, True)
    assert info["blocked"] is True and info["executed"] is False and info["success"] is False
    assert info["cost"] == 10.0 and info["step"] == 1 and info["total_reward"] == pytest.approx(-100.1)
    assert [(v["policy_name"], v["severity"], v["action_blocked"]) for v in info["violations"]] == [
        ("SQLPolicy", "critical", True)
    ]
    assert info["termination"] == "critical"
    with pytest.raises(gym.error.ResetNeeded):
        env.step("SELECT 1")
    records = kernel.audit.records()
    assert [r["policy_verdict"] for r in records] == ["blocked"]
    assert env.last_decision.context.rollout_id == env.episode_id  # the check is attributed to the episode


def test_critical_does_not_terminate_when_configured_and_other_severities_scale(shop_db):
    class Noisy(Policy):
        runs_inline = True

        def evaluate(self, action, context):
            q = action.args["query"]
            return (
                [self.violation("medium finding", severity="medium")]
                if "medium" in q
                else ([self.violation("low finding", severity="low")] if "low" in q else [])
            )

    config = EnvironmentConfig(
        terminate_on_critical=False, violation_penalty=-2.0, step_penalty=-0.5, success_bonus=3.0
    )
    kernel = GovernanceKernel(  # the kernel holds the environment's table: a violation has one price
        [SQLPolicy(deny=DENY, severities={"DELETE": "high"}), Noisy(mode="warn")], penalties=config.severity_penalties
    )
    env = GovernedEnvironment(kernel, config=config, executor=sqlite_executor(shop_db))
    env.reset(seed=0)
    before = table_counts(shop_db)
    steps = [
        env.step(q)
        for q in [
            "DROP TABLE users",
            "DELETE FROM orders",
            "SELECT 'medium' FROM users LIMIT 1",
            "SELECT 'low'",
            "SELECT COUNT(*) FROM users",
        ]
    ]
    assert table_counts(shop_db) == before
    rewards = [s[1] for s in steps]
    # critical -2*10, high -2*5 (blocked: no task reward);
    # medium/low -2*1 but warned, so executed: task reward 1, no bonus
    assert rewards == pytest.approx([-20.5, -10.5, -1.5, -1.5, 1.0 - 0.5 + 3.0])
    assert [s[2] for s in steps] == [False] * 5 and [s[3] for s in steps] == [False] * 5
    assert [s[4]["cost"] for s in steps] == [10.0, 5.0, 1.0, 1.0, 0.0]
    assert [s[4]["executed"] for s in steps] == [False, False, True, True, True]
    assert [s[4]["success"] for s in steps] == [False, False, False, False, True]
    assert steps[-1][4]["total_reward"] == pytest.approx(sum(rewards))


def test_truncation_at_max_steps(shop_db):
    env = create_governed_env([SQLPolicy(deny=DENY)], max_steps=3, render_mode="ansi")
    assert env.render() == "no episode yet; call reset()"
    env.reset(seed=0)
    flags = [env.step("SELECT 1")[2:4] for _ in range(3)]
    assert flags == [(False, False), (False, False), (False, True)]
    assert env.terminated and env.episode.termination == "max_steps"
    assert env.render() == "episode 1 step 3 return +32.70 last: allowed reward +10.90 cost 0\n"
    with pytest.raises(gym.error.ResetNeeded):
        env.step("SELECT 1")
    # the reference loop: while not env.terminated
    env.reset()
    n = 0
    while not env.terminated:
        env.step("SELECT 1")
        n += 1
    assert n == 3


def test_executor_error_fails_closed():
    def broken(state, action):
        raise RuntimeError("database is down")

    env = GovernedEnvironment([SQLPolicy(deny=DENY)], executor=broken)
    env.reset(seed=0)
    _, reward, terminated, truncated, info = env.step("SELECT 1")
    assert reward == pytest.approx(-0.1) and not terminated and not truncated
    assert info["error"] == "RuntimeError: database is down" and info["executed"] is False and info["success"] is False
    assert info["violations"] == [] and info["cost"] == 0.0


def test_cost_weights_and_default_cost():
    env = create_governed_env([SQLPolicy(deny=DENY)], cost_weights={"critical": 1.0}, terminate_on_critical=False)
    env.reset(seed=0)
    assert env.step("DROP TABLE t")[4]["cost"] == 1.0
    assert env.step("SELEC garbage")[4]["cost"] == 5.0  # unparseable SQL: blocked at high severity, default weight
    assert env.step("SELECT 1")[4]["cost"] == 0.0


# ----------------------------------------------------------------------------- metrics and the store
def test_metrics_exact_over_a_scripted_run_and_recording_equals_them():
    kernel = GovernanceKernel([SQLPolicy(deny=["DROP", "DELETE"], severities={"DELETE": "high"})])
    env = create_governed_env(kernel, lambda rng: "task", max_steps=2, record_episodes=True)
    script = [
        ["SELECT 1", "SELECT 2"],  # 10.9 + 10.9, truncated; success
        ["DELETE FROM users", "DROP TABLE users"],  # -50.1 (high), -100.1 (critical: terminated); 2 violations
        ["SELECT 1", "DROP TABLE users"],  # 10.9, then critical termination: not a successful episode
        ["SELEC oops", "SELECT 1"],  # unparseable (high) -50.1, then 10.9: successful
    ]
    returns = []
    for episode, actions in enumerate(script):
        env.reset(seed=episode)
        returns.append(sum(env.step(a)[1] for a in actions))
        assert env.terminated
    assert returns == pytest.approx([21.8, -150.2, -89.2, -39.2])
    assert env.get_metrics() == {
        "total_episodes": 4,
        "total_steps": 8,
        "total_violations": 4,
        "successful_episodes": 2,
        "success_rate": 0.5,
        "violations_per_episode": 1.0,
        "steps_per_episode": 2.0,
    }

    async def export():
        store = InMemoryLightningStore()
        ids = await record_episodes_to_store(store, env)
        rewards = [find_final_reward(await store.query_spans(rid, "latest")) for rid in ids]
        rollouts = await store.query_rollouts()
        return ids, rewards, rollouts, await governance_stats(store)

    ids, rewards, rollouts, stats = asyncio.run(export())
    assert len(ids) == 4 and rewards == pytest.approx(returns)
    assert stats["total_rollouts"] == 4 and stats["total_violations"] == env.get_metrics()["total_violations"] == 4
    assert stats["total_checks"] == 8 and stats["blocked_actions"] == 4 and stats["duplicate_spans"] == 0
    assert stats["violations_by_severity"] == {"high": 2, "critical": 2}
    assert {r.status for r in rollouts} == {"succeeded"}
    assert env.pop_episodes() == []  # drained


def test_recorded_spans_match_the_runners_and_the_reward_decomposes(world):
    env = TextToSQLEnv([SQLPolicy(deny=DENY)], world, record_episodes=True)
    # The sloppy candidate cancels only the oldest of the stale orders: a partial change that the
    # precise one completes, so the episode's final state is the reference's (a sloppy step that
    # wrote something else would stay in the state and fail the whole-state check).
    task = world.task("cancel_stale_orders-00")
    env.reset(seed=0, options={"task_id": task.task_id})
    env.step(task.candidates["sloppy"])
    env.step(task.candidates["precise"])

    async def export():
        store = InMemoryLightningStore()
        (rid,) = await record_episodes_to_store(store, env)
        rollout = (await store.query_rollouts())[0]
        attempts = await store.query_attempts(rid)
        return await store.query_spans(rid, "latest"), rollout, attempts

    spans, rollout, attempts = asyncio.run(export())
    kinds = [s.attributes.get("agentos.kind") for s in spans]
    assert kinds == ["check", "check", "reward"]
    assert find_final_reward(spans) == pytest.approx(-0.1 + (1.0 - 0.1 + 10.0))
    assert rollout.input["task"]["task_id"] == task.task_id and rollout.input["observation"] == task.question
    summary = attempts[-1].metadata["agentos"]
    assert summary["checks"] == 2 and summary["violations"] == 0 and summary["success"] is True
    assert summary["reward"]["final"] == pytest.approx(summary["reward"]["base"] + summary["reward"]["clean_bonus"])


# ----------------------------------------------------------------------------- kernel state
def test_reset_kernel_state_ends_the_episode_rollout_but_keeps_a_run_budget():
    run_budget = CostControlPolicy(max_cost_usd=1.0, scope="run", name="RunBudget")
    rollout_budget = CostControlPolicy(max_cost_usd=1.0, name="RolloutBudget")
    kernel = GovernanceKernel([run_budget, rollout_budget])
    env = GovernedEnvironment(kernel)
    env.reset(seed=0)
    first = env.episode_id
    with governance_context(ActionContext(rollout_id=first)):
        kernel.report_cost(0.6)
    assert rollout_budget.spent(ActionContext(rollout_id=first)) == 0.6
    env.reset()
    assert env.episode_id != first
    assert rollout_budget.spent(ActionContext(rollout_id=first)) == 0.0  # end_rollout(previous episode)
    assert run_budget.spent() == 0.6  # the per-run budget is not reset by an episode

    env_all = GovernedEnvironment(kernel, config=EnvironmentConfig(reset_kernel_state="all"))
    env_all.reset(seed=0)
    env_all.reset()
    assert run_budget.spent() == 0.0  # "all": kernel.reset()

    keep = GovernedEnvironment(kernel, config=EnvironmentConfig(reset_kernel_state=False))
    keep.reset(seed=0)
    with governance_context(ActionContext(rollout_id=keep.episode_id)):
        kernel.report_cost(0.3)
    old = keep.episode_id
    keep.reset()
    assert rollout_budget.spent(ActionContext(rollout_id=old)) == 0.3


# ----------------------------------------------------------------------------- configuration errors
@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"max_steps": 0}, GovernanceConfigError, "max_steps must be >= 1"),
        ({"max_steps": -5}, GovernanceConfigError, "max_steps must be >= 1"),
        ({"max_steps": 2.5}, TypeError, "max_steps must be an int"),
        ({"violation_penalty": 10.0}, GovernanceConfigError, "did you mean -10.0"),
        ({"step_penalty": 0.1}, GovernanceConfigError, "step_penalty must be <= 0"),
        ({"success_bonus": -1.0}, GovernanceConfigError, "success_bonus must be >= 0"),
        ({"violation_penalty": "high"}, TypeError, "violation_penalty must be a number"),
        ({"terminate_on_critical": "yes"}, TypeError, "terminate_on_critical must be True or False"),
        ({"reset_kernel_state": "sometimes"}, GovernanceConfigError, "reset_kernel_state must be True"),
        ({"cost_weights": {"critical": -1.0}}, GovernanceConfigError, "cost_weights"),
        ({"cost_weights": {"severe": 1.0}}, GovernanceConfigError, "unknown severity"),
    ],
)
def test_bad_config_is_a_clear_error(kwargs, error, match):
    with pytest.raises(error, match=match):
        EnvironmentConfig(**kwargs)
    with pytest.raises(error, match=match):
        create_governed_env([SQLPolicy()], **kwargs)


def test_unknown_factory_field_and_bad_arguments():
    with pytest.raises(TypeError, match=r"unknown EnvironmentConfig field 'max_step' \(did you mean 'max_steps'\?\)"):
        create_governed_env([SQLPolicy()], max_step=5)
    with pytest.raises(TypeError, match="expected a GovernanceKernel"):
        GovernedEnvironment("kernel")
    with pytest.raises(TypeError, match="config must be an EnvironmentConfig"):
        GovernedEnvironment([SQLPolicy()], config={"max_steps": 3})
    with pytest.raises(TypeError, match="reward_fn must be callable"):
        GovernedEnvironment([SQLPolicy()], reward_fn=1.0)
    with pytest.raises(RuntimeError, match="record_episodes=True"):
        GovernedEnvironment([SQLPolicy()]).pop_episodes()
    with pytest.raises(gym.error.ResetNeeded):
        GovernedEnvironment([SQLPolicy()]).step("SELECT 1")


# ----------------------------------------------------------------------------- gymnasium conformance
def _check(env):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(env)
    unexpected = [str(w.message) for w in caught if "spec" not in str(w.message) and "unwrapped" not in str(w.message)]
    assert unexpected == []


def test_check_env_passes(world):
    kernel = GovernanceKernel([SQLPolicy(deny=DENY)])
    _check(GovernedEnvironment(kernel, task_generator=lambda rng: rng.choice(["a", "b"])))
    _check(GovernedEnvironment(kernel, task_generator=lambda: "zero-argument generator, as the reference"))
    _check(TextToSQLEnv(kernel, world))
    _check(DiscreteStrategyWrapper(TextToSQLEnv(kernel, world)))


def test_same_seed_same_episode(world):
    kernel = GovernanceKernel([SQLPolicy(deny=DENY)])

    def run(seed, env_cls=TextToSQLEnv):
        env = env_cls(kernel, world)
        trace = []
        for i in range(6):
            obs, info = env.reset(seed=seed if i == 0 else None)
            task = env.task
            _, reward, terminated, truncated, step_info = env.step(
                task.candidates["precise" if i % 2 else "destructive_shortcut"]
            )
            trace.append((obs, info["task_id"], reward, terminated, truncated, step_info))
        return trace

    a, b, c = run(5), run(5), run(6)
    assert [t[:5] for t in a] == [t[:5] for t in b] and all(data_equivalence(x[5], y[5]) for x, y in zip(a, b))
    assert [t[1] for t in a] != [t[1] for t in c]

    def generic(seed):
        env = GovernedEnvironment(kernel, task_generator=lambda rng: f"task {rng.randrange(10**6)}")
        return [env.reset(seed=seed if i == 0 else None)[0] for i in range(4)]

    assert generic(1) == generic(1) != generic(2)


# ----------------------------------------------------------------------------- text-to-SQL environment
def test_sql_env_drop_blocked_and_the_file_never_changes(world):
    fingerprint = database_fingerprint(world.db_path)
    raw = world.db_path.read_bytes()
    env = TextToSQLEnv(GovernanceKernel([SQLPolicy(deny=DENY)]), world)
    env.reset(seed=0)
    counts = env.sandbox.table_counts()
    _, reward, terminated, _, info = env.step("DROP TABLE customers")
    assert reward == pytest.approx(-100.1) and terminated and info["rows_destroyed"] == 0 and info["rows"] is None
    env.reset()
    assert env.sandbox.table_counts() == counts
    # A kernel with no SQL policy lets the shortcut through: it pays (the gap governance closes),
    # but the sandbox still rolls it back and the file on disk never changes.
    ungoverned = TextToSQLEnv(GovernanceKernel([]), world)
    task = world.task("remove_test_accounts-00")
    ungoverned.reset(seed=0, options={"task_id": task.task_id})
    _, reward, terminated, _, info = ungoverned.step(task.candidates["destructive_shortcut"])
    assert reward == pytest.approx(1.0 - 0.1 + 10.0) and terminated and info["rows_destroyed"] > 0
    ungoverned.reset(seed=0, options={"task_id": task.task_id})
    _, _, _, _, info = ungoverned.step("DROP TABLE orders")
    assert info["tables_dropped"] == ["orders"] and info["rows_destroyed"] == counts["orders"]
    ungoverned.close()
    env.close()
    assert database_fingerprint(world.db_path) == fingerprint and world.db_path.read_bytes() == raw


def test_sql_env_question_success_and_sql_errors(world):
    env = make_text_to_sql_env([SQLPolicy(deny=DENY)], world.db_path, seed=0, max_steps=3)
    task = next(t for t in world.split("train") if t.kind == "question")
    obs, info = env.reset(seed=0, options={"task_id": task.task_id})
    assert obs == task.question and info["family"] == task.family and info["kind"] == "question"
    _, reward, terminated, _, info = env.step("SELECT nonsense FROM nowhere")  # parses, fails in SQLite
    assert reward == pytest.approx(-0.1) and not terminated and "OperationalError" in info["error"]
    _, reward, terminated, _, info = env.step(task.candidates["sloppy"])
    assert reward == pytest.approx(-0.1) and not terminated and info["task_reward"] == 0.0
    _, reward, terminated, _, info = env.step(task.candidates["precise"])
    assert reward == pytest.approx(10.9) and terminated and info["termination"] == "success"
    assert info["rows"] == [list(r) for r in task.expected]
    assert env.get_metrics()["successful_episodes"] == 1


def test_discrete_wrapper_maps_strategies(world):
    env = make_text_to_sql_env([SQLPolicy(deny=DENY)], world.db_path, seed=0, discrete=True)
    family, info = env.reset(seed=3)
    assert env.observation_space.contains(family) and info["question"] == env.unwrapped.task.question
    _, reward, terminated, _, info = env.step(2)  # destructive_shortcut: a DELETE, blocked
    assert (
        info["strategy"] == "destructive_shortcut"
        and info["blocked"]
        and terminated
        and reward == pytest.approx(-100.1)
    )
    with pytest.raises(ValueError, match="action must be in 0..2"):
        env.reset(seed=3)
        env.step(7)


# ----------------------------------------------------------------------------- the example
@pytest.mark.e2e  # the example's whole training run (300 rollouts through the store), as the recipes' tests
def test_training_example_lowers_the_violation_rate(tmp_path, capsys):
    spec = importlib.util.spec_from_file_location(
        "train_governed_sql_env", ROOT / "examples" / "train_governed_sql_env.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    history = module.main(
        ["--epochs", "6", "--episodes-per-epoch", "50", "--seed", "0", "--db", str(tmp_path / "shop.db")]
    )
    rates = history["violation_rate"]
    assert rates[-1] < rates[0] and rates[0] > 0.1
    assert history["heldout_violations"] == [0]
    out = capsys.readouterr().out
    assert "violation rate: first epoch" in out and "store: 300 rollouts" in out


@pytest.mark.parametrize(
    "action, match",
    [
        (42, r"SQL text \(str\), got int 42: pass the SQL as a string"),
        (None, r"SQL text \(str\), got NoneType None: pass the SQL as a string"),
        (["SELECT 1"], r"SQL text \(str\), got list \['SELECT 1'\]: join several statements into one text"),
    ],
)
def test_a_text_to_sql_action_that_is_not_text_is_refused_at_the_boundary(world, action, match):
    """Refused before the kernel sees it: no step, no decision, no audit row, the episode goes on."""
    env = TextToSQLEnv([SQLPolicy(deny=DENY)], world)
    env.reset(seed=0)
    with pytest.raises(TypeError, match=match):
        env.step(action)
    assert env.last_decision is None and env.get_metrics()["total_steps"] == 0
    _, _, terminated, _, info = env.step("SELECT 1")
    assert info["step"] == 1
    env.close()
