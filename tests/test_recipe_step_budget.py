"""The demo's steps sized to a time budget (``--time-budget-minutes``): decided once, from the first
arm's measured first evaluation and first step, the same for every arm, within [--min-steps, --steps].

The real-model run with a budget too small for even the minimum is in test_recipe_llm_grpo.py (the
quick run takes the minimum, and its results say why).
"""

from __future__ import annotations

from pathlib import Path

import pytest

RECIPE_DIR = Path(__file__).resolve().parent.parent / "contrib" / "recipes" / "agentos"


@pytest.fixture
def common(monkeypatch):
    monkeypatch.syspath_prepend(str(RECIPE_DIR))
    import common

    return common


def _budget(common, budget_s, planned=5, minimum=3, arms=2, runs=None, now=200.0):
    return common.StepBudget(planned, minimum, budget_s, arms=arms, runs=runs, clock=iter([0.0, now]).__next__)


def test_a_budget_the_planned_steps_fit_keeps_them(common):
    budget = _budget(common, budget_s=3600)
    note = budget.decide(eval_s=40, step_s=60)
    assert budget.steps == 5 and note.startswith("5 GRPO steps per arm and seed fit the 60.0 min budget")


def test_the_steps_are_the_most_whose_projection_fits(common):
    # at 200 s the first arm has spent 100 s starting, 40 s evaluating, 60 s on its first step
    for budget_s in (600, 839, 840, 959, 960, 1079, 1080):
        budget = _budget(common, budget_s=budget_s)
        budget.decide(eval_s=40, step_s=60)
        projected = {s: budget.projected_s(s, 200, 40, 60) for s in range(3, 6)}
        assert projected == {3: 720, 4: 840, 5: 960}  # 360 s + 120 s a step (both arms)
        fitting = [s for s, t in projected.items() if t <= budget_s]
        assert budget.steps == (max(fitting) if fitting else 3), budget_s


def test_a_budget_too_small_for_the_minimum_runs_the_minimum_and_says_so(common):
    budget = _budget(common, budget_s=60)
    note = budget.decide(eval_s=40, step_s=60)
    assert budget.steps == 3
    assert "exceed the 60 s budget" in note and "--time-budget-minutes 0" in note
    assert budget.record() == {"planned": 5, "minimum": 3, "budget_s": 60, "steps": 3, "note": note}


def test_every_seed_of_every_arm_counts_in_the_projection(common):
    one = _budget(common, budget_s=10_000, arms=2, runs=2)
    four = _budget(common, budget_s=10_000, arms=2, runs=4)
    assert four.projected_s(5, 200, 40, 60) - one.projected_s(5, 200, 40, 60) == 2 * (5 * 60 + 2 * 40)


def test_it_decides_once_and_without_a_budget_never(common):
    budget = _budget(common, budget_s=60)
    budget.decide(eval_s=40, step_s=60)
    assert budget.decide(eval_s=0.001, step_s=0.001) is None and budget.steps == 3
    unbudgeted = common.StepBudget(5, 3, None, arms=2)
    assert unbudgeted.decide(eval_s=1000, step_s=1000) is None and unbudgeted.steps == 5


@pytest.mark.parametrize("kwargs", [{"budget_s": 0}, {"budget_s": -1.0}, {"planned": 0}, {"minimum": 0}])
def test_bad_settings_are_refused_at_the_boundary(common, kwargs):
    settings = {"planned": 5, "minimum": 3, "budget_s": 60.0, **kwargs}
    with pytest.raises(ValueError, match="must be"):
        common.StepBudget(settings["planned"], settings["minimum"], settings["budget_s"], arms=1)


def test_the_recipe_refuses_a_negative_budget_and_the_demo_preset_has_one(monkeypatch, capsys):
    monkeypatch.syspath_prepend(str(RECIPE_DIR))
    import train_sql_llm

    with pytest.raises(SystemExit):
        train_sql_llm.parse_args(["--time-budget-minutes", "-1"])
    assert "--time-budget-minutes must be >= 0 (0: no budget), got -1.0" in capsys.readouterr().err
    demo = train_sql_llm.parse_args(["--preset", "demo"])
    assert demo.time_budget_minutes > 0 and demo.min_steps <= demo.steps
