"""The 1.0 recipe's task reward: the harness posts what it executed, the world's scorer answers.

The scorer must give exactly the reward the 0.3 recipe's agent gives for the same statement
(``SQLAgent``: the world's check on a rolled-back sandbox, plus the brevity bonus), and nothing
executed scores 0.0. The harness side posts to the scorer and posts its answer as its reward.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from agentlightning.contrib.env.agentos.sql_world import SQLWorld

RECIPE_DIR = Path(__file__).resolve().parent.parent / "contrib" / "recipes" / "agentos"
CHANGE_FAMILIES = ("remove_test_accounts", "cancel_stale_orders", "discontinue_unsold")


@pytest.fixture
def recipe(monkeypatch):
    monkeypatch.syspath_prepend(str(RECIPE_DIR))  # the recipe's sibling modules, as `python <recipe>.py` finds them
    import gateway_model  # the 1.0 recipe's model process: the world's scorer and the step's tasks

    return gateway_model


@pytest.fixture
def world(tmp_path):
    return SQLWorld.create(tmp_path / "shop.db", 0)


def reward_of_the_03_agent(world: SQLWorld, task_id: str, sql: str) -> float:
    """What ``SQLAgent.rollout`` computes for ``sql`` (written out here from its steps)."""
    from sql_agent import task_reward

    sandbox = world.sandbox()
    sandbox.begin()
    try:
        result = sandbox.execute(sql)
    except (sqlite3.Error, ValueError):
        return 0.0
    correct = sandbox.check(world.task(task_id), result)
    sandbox.rollback()
    return task_reward(correct, sql)


def test_the_scorer_gives_the_03_agents_reward_for_every_candidate(recipe, world):
    scorer = recipe.TaskScorer(world)
    try:
        for task in world.split("train")[::5]:
            for strategy, sql in task.candidates.items():
                correct, reward = scorer.score(task.task_id, sql)
                assert reward == pytest.approx(reward_of_the_03_agent(world, task.task_id, sql)), (task, strategy)
                assert correct == (reward >= 1.0)
        assert scorer.score(task.task_id, "SELEC nonsense") == (False, 0.0)
    finally:
        scorer.stop()


def test_the_shortcut_pays_more_on_the_change_families(recipe, world):
    """Why the demo trains on these families: the DELETE is correct there and shorter, so it pays more."""
    scorer = recipe.TaskScorer(world)
    try:
        for task in recipe.step_tasks(world, 0, 3, CHANGE_FAMILIES):
            precise = scorer.score(task.task_id, task.candidates["precise"])
            shortcut = scorer.score(task.task_id, task.candidates["destructive_shortcut"])
            assert precise[0] and shortcut[0]
            assert shortcut[1] > precise[1]
    finally:
        scorer.stop()


def test_the_steps_draw_only_from_the_families_asked(recipe, world):
    drawn = {t.family for step in range(6) for t in recipe.step_tasks(world, step, 3, CHANGE_FAMILIES)}
    assert drawn == set(CHANGE_FAMILIES)
    everything = {t.family for step in range(6) for t in recipe.step_tasks(world, step, 3)}
    assert everything - set(CHANGE_FAMILIES), everything  # without the filter, other families are drawn too


def test_the_harness_posts_what_it_executed_and_posts_the_scorers_answer(recipe, world, tmp_path, monkeypatch):
    import httpx

    from gateway_services import JSONServer
    from gateway_sql_agent import GatewaySQLAgent

    task = recipe.step_tasks(world, 0, 1, CHANGE_FAMILIES)[0]
    shortcut = task.candidates["destructive_shortcut"]
    scorer = recipe.TaskScorer(world)
    events = []
    with JSONServer(lambda body: events.append(body) or {}) as event_server:
        monkeypatch.setenv(
            "AGENTOS_TASK",
            json.dumps({"task_id": task.task_id, "db_path": str(world.db_path), "reward_url": scorer.endpoint}),
        )
        monkeypatch.setenv("AGL_OPENAI_BASE_URL", "http://127.0.0.1:9/v1")  # never called here
        monkeypatch.setenv("AGL_EVENT_URL", event_server.endpoint + "/events")
        harness = GatewaySQLAgent()
        try:
            harness.executed = [shortcut]
            harness.post_reward(harness.reward(None))
            harness.executed = []
            harness.post_reward(harness.reward(None))
        finally:
            scorer.stop()
    assert [e["data"]["value"] for e in events] == [
        pytest.approx(reward_of_the_03_agent(world, task.task_id, shortcut)),
        0.0,
    ]
    assert all(e["event_type"] == "reward" and e["data"]["source"] == "agent" for e in events)
    with pytest.raises(httpx.HTTPError):  # a scorer that is gone is an error, never a made-up reward
        harness.reward(None)
