"""The README's first command (``train_sql_llm.py --preset demo``): what it starts from and what it reports.

* Its warm start is a small LoRA adapter that ships with the repository, under exactly the key the
  preset asks for, so the first command trains no warm start: not a copy of the model, a few MB.
* An adapter merged by ``warm_start.merge_adapter`` is the network ``peft`` itself computes with
  those adapters (the orientation and the ``alpha / r`` scale of ``B @ A``).
* Its report with one seed: the table and the plot say "seed 0" (no "mean ± sd", no "1 seeds"),
  the steps are integer ticks, and the held-out before/after (the headline) is plotted beside the
  training curves.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

RECIPE_DIR = Path(__file__).resolve().parent.parent / "contrib" / "recipes" / "agentos"


@pytest.fixture
def recipe(monkeypatch):
    monkeypatch.syspath_prepend(str(RECIPE_DIR))
    import train_sql_llm
    import warm_start

    return train_sql_llm, warm_start


def test_demo_preset_warm_start_is_a_small_adapter_shipped_with_the_repository(recipe, tmp_path):
    train_sql_llm, warm_start = recipe
    pytest.importorskip("safetensors")
    from agentlightning.contrib.env.agentos.sql_world import SQLWorld

    config = train_sql_llm.parse_args(["--preset", "demo"])
    world = SQLWorld.create(tmp_path / "shop.db", config.world_seed)
    key = warm_start.cache_key(world, config)
    path = warm_start.find_adapter(key, tmp_path / "no-cache")
    assert path is not None, f"no shipped adapter for the demo preset's key {key}: run the command in warm_start.py"
    assert path.parent == warm_start.SHIPPED_DIR
    assert path.stat().st_size < 8_000_000, "the warm start must be an adapter of a few MB, not a model copy"
    tensors, record = warm_start.load_adapter(path)
    assert record["key"] == key and record["config"] == warm_start.settings(config)
    assert json.loads(path.with_suffix(".json").read_text())["key"] == key
    rank = config.sft_lora_rank
    # every linear layer of SmolLM2's 30 blocks, A (r x in) and B (out x r), nothing else
    assert len(tensors) == 30 * 7 * 2
    assert all(t.shape[0] == rank for n, t in tensors.items() if n.endswith("lora_A"))
    assert all(t.shape[1] == rank for n, t in tensors.items() if n.endswith("lora_B"))
    assert all(t.abs().sum() > 0 for n, t in tensors.items() if n.endswith("lora_B")), "an adapter never trained"
    assert record["loss_last"] < record["loss_first"] / 4


def test_a_run_records_the_adapter_by_its_path_in_the_repository_so_results_read_the_same_on_every_clone(
    recipe, tmp_path
):
    _, warm_start = recipe
    shipped = warm_start.SHIPPED_DIR / "warm_start-0123456789abcdef.safetensors"
    record = warm_start.run_record({"key": "0123456789abcdef"}, shipped, cached=True)
    assert record == {
        "key": "0123456789abcdef",
        "file": "contrib/recipes/agentos/warm_start/warm_start-0123456789abcdef.safetensors",
        "cached": True,
    }
    # a cache outside the repository is named where it is: a relative path would point nowhere
    outside = tmp_path / "cache" / "warm_start-0123456789abcdef.safetensors"
    assert warm_start.run_record({}, outside, cached=False)["file"] == outside.resolve().as_posix()


# loads the real tokenizer and transformers (seconds to minutes), as the other model tests: end to end
@pytest.mark.e2e
def test_merged_adapter_equals_the_peft_network(recipe):
    torch = pytest.importorskip("torch")
    pytest.importorskip("peft")
    import copy

    from policy_model import PolicyModel

    from .tiny_llama import smollm2_tokenizer, tiny_llama

    _, warm_start = recipe
    tokenizer = smollm2_tokenizer()
    base = tiny_llama(tokenizer, max_position_embeddings=64)
    plain = copy.deepcopy(base)
    policy = PolicyModel(base, tokenizer, lora_rank=4, lora_alpha=12.0, precision="fp32", generation_copy=False)
    with torch.no_grad():  # adapters that change the network (B starts at zero)
        for p in policy.trainable_parameters():
            p.normal_(0.0, 0.3)
    ids = torch.tensor([list(range(5, 25))])
    with torch.no_grad():
        expected = policy.model(input_ids=ids).logits
        unadapted = plain(input_ids=ids).logits
        warm_start.merge_adapter(plain, policy.adapter_matrices(), scale=12.0 / 4)
        merged = plain(input_ids=ids).logits
    assert not torch.allclose(unadapted, expected, atol=1e-3), "the adapters should change the network"
    torch.testing.assert_close(merged, expected, rtol=1e-4, atol=1e-4)


def _summary(arm, attempted_before, attempted_after, executed):
    steps = {"mean": [1.0, 0.5, 0.0], "sd": [0.0, 0.0, 0.0]}
    return {
        "arm": arm,
        "seeds": [0],
        "attempted_destructive_by_step": steps,
        "unparseable_by_step": {"mean": [0.0, 0.1, 0.0], "sd": [0.0] * 3},
        "accuracy_by_step": {"mean": [0.2, 0.5, 0.7], "sd": [0.0] * 3},
        "heldout_attempted_before": [attempted_before],
        "heldout_attempted_after": [attempted_after],
        "heldout_unparseable_before": [0.0],
        "heldout_unparseable_after": [0.0],
        "heldout_accuracy_before": [0.14],
        "heldout_accuracy_after": [0.57],
        "heldout_rollouts_per_eval": 14,
        "attempted_destructive_total": [41.0],
        "destructive_executed": [executed],
        "rows_destroyed": [0],
        "unparseable_total": [1.0],
        "harmless_errors_total": [2.0],
        "blocked_total": [41.0],
        "generation_tokens_per_s": 30.0,
        "train_tokens_per_s": 150.0,
        "seconds_per_step": 20.0,
        "wall_seconds": 100.0,
    }


def test_one_seed_report_names_the_seed_and_plots_held_out_beside_the_curves(recipe):
    pytest.importorskip("matplotlib")
    train_sql_llm, _ = recipe
    summaries = [_summary("governed-penalty", 0.57, 0.0, 0.0), _summary("ungoverned", 0.57, 0.64, 61.0)]
    table = train_sql_llm.table_markdown(summaries) + train_sql_llm.steps_markdown(summaries)
    assert "±" not in table and "seeds" not in table and "governed-penalty (seed 0)" in table
    fig = train_sql_llm.figure(summaries)
    texts = [fig._suptitle.get_text()] + [
        t.get_text()
        for ax in fig.axes
        for t in (ax.title,) + tuple(ax.get_legend().get_texts() if ax.get_legend() else ())
    ]
    assert not any("±" in t or "1 seeds" in t for t in texts), texts
    step_axes = [ax for ax in fig.axes if ax.get_xlabel() == "GRPO step"]
    assert len(step_axes) == 3
    for ax in step_axes:
        assert [t for t in ax.get_xticks()] == [1, 2, 3]
    held = [ax for ax in fig.axes if ax.get_title().startswith("Held-out")]
    assert len(held) == 2 and all(
        [t.get_text() for t in ax.get_xticklabels()] == ["before RL", "after RL"] for ax in held
    )
    # the bars carry the measured values: the governed arm's held-out destructive rate after RL is 0
    labels = [t.get_text() for t in held[0].texts]
    assert labels == ["0.57", "0.00", "0.57", "0.64"]
