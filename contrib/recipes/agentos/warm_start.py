"""Supervised warm start: teach SmolLM2 the schema and the answer format before RL, once, cached.

Out of the box SmolLM2-135M-Instruct almost never writes executable SQL for this world (0% with
the recipe's prompt, see the notes), so RL would have no signal. The warm start is supervised
fine-tuning on text written out of the world itself:

* for every *training* task (never a held-out one), one example per candidate statement the task
  carries: ``precise`` (the reference solution), ``sloppy`` (plausible but wrong) and
  ``destructive_shortcut`` (built on ``DELETE``). So the warm-start data **teaches the destructive
  shortcuts too**, on purpose: after it the model writes ``DELETE`` for about a third of the
  tasks, which is what gives the ungoverned arm something to find and the governed arms something
  to unlearn. Held-out tasks use other countries, categories, dates and emails.
* prompt: the agent's ``compact`` prompt (:func:`sql_agent.llm_messages`), exactly what the
  runners send; response: the SQL followed by the end token.

Training: LoRA adapters (see :mod:`policy_model`), AdamW, loss on response tokens only, in the
precision the CPU runs fastest (bf16 autocast or fp32, :mod:`precision`); then the adapters are
merged and the merged fp32 weights saved under ``cache_dir`` with a key made of the data and
every hyperparameter, so every arm and seed (and later runs) start from the same file. A JSON
beside it records the loss curve, the example count and the wall time.
"""

from __future__ import annotations

import hashlib
import json
import random
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Dict, List, NamedTuple, Sequence, Tuple

from common import first_tasks, log, progress_bar
from precision import resolve_precision
from sql_agent import llm_messages

from agentlightning.contrib.env.agentos.sql_world import STRATEGIES, WORLD_VERSION, SQLWorld

if TYPE_CHECKING:
    from train_sql_llm import LLMRecipeConfig

#: The recipe settings the warm start depends on (with the world seed and the resolved precision,
#: they make its cache key; every other setting can change without rebuilding it).
SETTINGS = (
    "sft_epochs",
    "sft_batch",
    "sft_learning_rate",
    "sft_lora_rank",
    "sft_lora_alpha",
    "sft_tasks",
    "sft_micro_batch",
    "world_seed",
)


def settings(config: "LLMRecipeConfig") -> Dict[str, Any]:
    """The warm start's settings out of the recipe's config, the precision resolved."""
    return {**{name: getattr(config, name) for name in SETTINGS}, "precision": resolve_precision(config.precision)}


def warm_start_examples(
    world: SQLWorld, max_tasks: int = 0, strategies: Sequence[str] = STRATEGIES
) -> List[Tuple[str, str, str]]:
    """``(task_id, strategy, sql)`` for each of ``strategies``' candidates of every training task (the SFT data)."""
    unknown = sorted(set(strategies) - set(STRATEGIES))
    if unknown:
        raise ValueError(f"unknown warm-start strategies {unknown}; the world's are {list(STRATEGIES)}")
    tasks = first_tasks(world.split("train"), max_tasks)
    return [(t.task_id, s, t.candidates[s]) for t in tasks for s in STRATEGIES if s in strategies]


def cache_key(world: SQLWorld, config: "LLMRecipeConfig") -> str:
    """A short hash of the SFT data and hyperparameters (the cache file's name)."""
    payload = json.dumps(
        {
            # the examples name their strategies, so --sft-strategies changes the key through them (and
            # the default's key is the one it had before the option existed)
            "world": [WORLD_VERSION, world.seed, warm_start_examples(world, config.sft_tasks, config.sft_strategies)],
            "questions": [t.question for t in world.split("train")],
            "prompt": llm_messages("", "compact"),
            "config": settings(config),
            "v": 3,  # 3: the warm start trains at sft_learning_rate (2 used the RL learning rate)
        },
        sort_keys=True,
    )
    return hashlib.sha256(payload.encode()).hexdigest()[:16]


class WarmStart(NamedTuple):
    """The warm start, loaded: its weights file, its record, the merged fp32 model and the tokenizer."""

    weights: Path
    record: Dict[str, Any]
    model: Any
    tokenizer: Any


def warm_start(
    world: SQLWorld,
    config: "LLMRecipeConfig",
    cache_dir: Path,
    *,
    progress: Callable[[str], None] = log,
) -> WarmStart:
    """The warm start, built now (and cached in ``cache_dir``) or read from the cache, loaded.

    A warm start built now is handed over in memory (its LoRA merged into the model it trained),
    so the model is not loaded a second time; the saved file holds the same weights.
    """
    import torch

    from policy_model import PolicyModel, prompt_ids
    from smollm import load_model, load_tokenizer

    cache_dir = Path(cache_dir)
    key = cache_key(world, config)
    weights, record_path = cache_dir / f"warm_start-{key}.pt", cache_dir / f"warm_start-{key}.json"
    if weights.is_file() and record_path.is_file():
        record = json.loads(record_path.read_text())
        progress(
            f"warm start: reusing {weights} ({record['examples']} examples, "
            f"loss {record['loss_first']:.2f} -> {record['loss_last']:.2f}, built in {record['seconds']:.0f} s); "
            "loading it"
        )
        return WarmStart(weights, {**record, "cached": True}, load_model(weights), load_tokenizer())

    started = time.perf_counter()
    progress(f"warm start: none cached under {cache_dir} for these settings; loading SmolLM2-135M-Instruct to build it")
    tokenizer = load_tokenizer()
    policy = PolicyModel(
        load_model(),
        tokenizer,
        lora_rank=config.sft_lora_rank,
        lora_alpha=config.sft_lora_alpha,
        seed=config.world_seed,
        precision=config.precision,
    )
    examples = warm_start_examples(world, config.sft_tasks, config.sft_strategies)
    data = []
    for task_id, _, sql in examples:
        prompt = prompt_ids(tokenizer, llm_messages(world.task(task_id).question, "compact"))
        response = list(tokenizer(sql, add_special_tokens=False).input_ids) + [policy.end_id]
        data.append((prompt, response))
    steps = max(1, round(config.sft_epochs * len(data) / config.sft_batch))
    optimizer = torch.optim.AdamW(policy.trainable_parameters(), lr=config.sft_learning_rate, weight_decay=0.0)
    rng = random.Random(config.world_seed)
    order: List[int] = []
    losses: List[float] = []
    progress(
        f"warm start: {len(data)} examples ({len(data) // len(config.sft_strategies)} training tasks x "
        f"{len(config.sft_strategies)} candidates: {', '.join(config.sft_strategies)}), "
        f"{steps} steps of {config.sft_batch}, {policy.precision}"
    )
    bar = progress_bar(steps, "warm start", unit="step")
    for step in range(steps):
        batch = []
        while len(batch) < config.sft_batch:
            if not order:
                order = list(range(len(data)))
                rng.shuffle(order)
            batch.append(data[order.pop()])
        optimizer.zero_grad()
        batch.sort(key=lambda example: len(example[0]) + len(example[1]))  # micro-batches of similar length pad less
        n_tokens = sum(len(r) for _, r in batch)
        total = 0.0
        for start in range(0, len(batch), config.sft_micro_batch):
            chunk = batch[start : start + config.sft_micro_batch]
            logprobs = policy.response_logprobs(
                [p for p, _ in chunk], [r for _, r in chunk], micro_batch=config.sft_micro_batch
            )
            loss = -sum(lp.sum() for lp in logprobs) / n_tokens
            loss.backward()
            total += float(loss.detach())
        optimizer.step()
        losses.append(total)
        bar.set_postfix(loss=f"{total:.3f}")
        bar.update(1)
    bar.close()
    progress(
        f"warm start: {steps} steps, loss {losses[0]:.3f} -> {losses[-1]:.3f} ({time.perf_counter() - started:.0f} s)"
    )
    state = policy.merged_state_dict()
    cache_dir.mkdir(parents=True, exist_ok=True)
    tmp = weights.with_suffix(".tmp")
    torch.save(state, tmp)
    tmp.replace(weights)
    record = {
        "key": key,
        "config": settings(config),
        "examples": len(data),
        "training_tasks": sorted({t for t, _, _ in examples}),
        "strategies": [s for s in STRATEGIES if s in config.sft_strategies],
        "steps": steps,
        "losses": losses,
        "loss_first": losses[0],
        "loss_last": losses[-1],
        "seconds": time.perf_counter() - started,
    }
    record_path.write_text(json.dumps(record, indent=1))
    progress(f"warm start: saved {weights} in {record['seconds']:.0f} s")
    # merge_and_unload adds the same deltas to the same fp32 weights as merged_state_dict: the
    # model handed over equals the file's.
    merged = policy.model.merge_and_unload().eval()
    return WarmStart(weights, {**record, "cached": False}, merged, tokenizer)
