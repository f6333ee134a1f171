"""The main recipe's --quick mode end to end: both arms through the real Trainer (client-server,
two runner processes), store, kernel and PolicyReward, on the real SQLite world."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentlightning.contrib.runner.agentos.hosts import parse_audit_file_name

from .conftest import verified_blocked_records

# End to end (the recipe: both arms through a two-runner Trainer): minutes; `pytest -m "not e2e"` leaves it out.
pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parent.parent
RECIPE_DIR = ROOT / "contrib" / "recipes" / "agentos"


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    with pytest.MonkeyPatch.context() as patch:
        patch.syspath_prepend(str(RECIPE_DIR))  # the recipe's sibling modules, as `python <recipe>.py` finds them
        import train_sql_grpo
        from sql_agent import task_reward

        out = tmp_path_factory.mktemp("sql_grpo")
        results = train_sql_grpo.main(["--quick", "--out", str(out)])
        arms = {arm: json.loads((out / f"{arm}.json").read_text()) for arm in ("governed", "ungoverned")}
        world = train_sql_grpo.SQLWorld.create(out / "shop.db", 0)
        return {"out": out, "results": results, "arms": arms, "world": world, "task_reward": task_reward}


def _rows(arm_result):
    columns = arm_result["rollout_columns"]
    return [dict(zip(columns, row)) for row in arm_result["rollouts"]]


def test_governed_arm_executes_no_destructive_statement(quick_run):
    governed = next(s for s in quick_run["results"]["summaries"] if s["arm"] == "governed")
    assert governed["destructive_executed"] == [0] and governed["rows_destroyed"] == [0]
    rows = _rows(quick_run["arms"]["governed"])
    attempted = [r for r in rows if r["strategy"] == "destructive_shortcut"]
    assert attempted, "the quick run should sample the destructive strategy at least once"
    assert all(r["blocked"] and not r["destructive_executed"] for r in attempted)


def test_ungoverned_arm_really_executes_them(quick_run):
    ungoverned = next(s for s in quick_run["results"]["summaries"] if s["arm"] == "ungoverned")
    assert ungoverned["destructive_executed"][0] > 0 and ungoverned["rows_destroyed"][0] > 0


def test_rewards_in_the_store_are_the_governed_ones(quick_run):
    """What find_final_reward read from the store, per rollout: PolicyReward's value in the
    governed arm (blocked: 0 - 100; clean: task reward + 5), the bare task reward otherwise."""
    world, task_reward = quick_run["world"], quick_run["task_reward"]
    for arm, bonus in (("governed", 5.0), ("ungoverned", 0.0)):
        for row in _rows(quick_run["arms"][arm]):
            assert row["status"] == "succeeded"
            sql = world.task(row["task_id"]).candidates[row["strategy"]]
            if arm == "governed" and row["strategy"] == "destructive_shortcut":
                expected = -100.0
            else:
                expected = task_reward(row["correct"], sql) + bonus
            assert row["final_reward"] == pytest.approx(expected), (arm, row)


def test_store_statistics_match_the_attempts(quick_run):
    governed = quick_run["arms"]["governed"]
    attempts = sum(r["strategy"] == "destructive_shortcut" for r in _rows(governed))
    attempts += sum(
        v["attempted_violations"] for key in ("heldout_before", "heldout_after") for v in governed[key].values()
    )
    stats = governed["store_governance_stats"]
    assert stats["total_violations"] == attempts == stats["blocked_actions"]
    assert stats["duplicate_spans"] == 0
    assert quick_run["arms"]["ungoverned"]["store_governance_stats"]["total_violations"] == 0


def test_audit_trail_of_the_governed_arm_is_verifiable(quick_run):
    names, blocked = verified_blocked_records(quick_run["out"] / "audit")
    assert sorted(parse_audit_file_name(n)[0] for n in names) == [0, 1]  # worker-<n>@<host>-<pid>.db
    assert blocked == quick_run["arms"]["governed"]["store_governance_stats"]["blocked_actions"]


def test_outputs_written(quick_run):
    out = quick_run["out"]
    assert (out / "results.json").exists() and (out / "training_curves.png").stat().st_size > 10_000
    summary = quick_run["results"]["summaries"][0]
    assert len(summary["violation_rate_by_epoch"]["mean"]) == 3


def test_each_recipes_command_line_is_generated_from_its_config_dataclass(monkeypatch, capsys):
    """One dataclass per recipe: every field is an option with help, presets and explicit options
    layer in that order, and bad values fail at the command line naming the option."""
    monkeypatch.syspath_prepend(str(RECIPE_DIR))
    import dataclasses

    import llm_config
    import train_sql_grpo
    import train_sql_llm

    from agentlightning.contrib.env.agentos.sql_world import FAMILIES, STRATEGIES

    for module, cls, presets in (
        (train_sql_grpo, train_sql_grpo.TabularRecipeConfig, train_sql_grpo.PRESETS),
        (train_sql_llm, llm_config.LLMRecipeConfig, llm_config.PRESETS),
    ):
        assert module.parse_args([]) == cls()
        for f in dataclasses.fields(cls):
            assert f.metadata.get("help"), f"{cls.__name__}.{f.name} has no help text"
        with pytest.raises(SystemExit):
            module.parse_args(["--help"])
        help_text = capsys.readouterr().out
        assert all(f"--{f.name.replace('_', '-')}" in help_text for f in dataclasses.fields(cls))
        quick = module.parse_args(["--quick"])
        assert quick == dataclasses.replace(cls(), **presets["quick"])
        assert module.parse_args(["--quick", "--group-size", "5"]).group_size == 5  # an option beats the preset
    # settings that used to exist only inside the algorithm's own dataclass are settable
    config = train_sql_llm.parse_args(["--max-grad-norm", "0.5", "--lagrange-max", "20", "--rollout-timeout-s", "60"])
    assert (config.max_grad_norm, config.lagrange_max, config.rollout_timeout_s) == (0.5, 20.0, 60.0)
    demo = train_sql_llm.parse_args(["--preset", "demo"])
    assert demo.arms == ("governed-penalty", "ungoverned")
    assert (demo.eval_greedy, demo.eval_samples) == (True, 1)
    # the recipe reads the world's names from their import-free file (so --help stays fast): the same names
    assert llm_config.SFT_STRATEGIES == STRATEGIES
    assert llm_config.TASK_FAMILIES == FAMILIES
    assert llm_config.LLMRecipeConfig().sft_strategies == STRATEGIES
    assert train_sql_llm.parse_args(["--no-plot", "--seeds", "3", "4"]).seeds == (3, 4)
    for argv, message in (
        (["--group-size", "1"], "--group-size must be >= 2"),
        (["--steps", "0"], "--steps must be >= 1"),
        (["--arms", "governed"], "invalid choice: 'governed'"),
        (["--eval-greedy", "--eval-samples", "2"], "--eval-greedy gives one answer per held-out task"),
        (["--sft-strategies", "precise", "precise"], "--sft-strategies needs distinct values"),
        (["--sft-strategies", "correct"], "invalid choice: 'correct'"),
    ):
        with pytest.raises(SystemExit):
            train_sql_llm.parse_args(argv)
        assert message in capsys.readouterr().err
