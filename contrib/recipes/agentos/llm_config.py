"""The LLM recipe's settings: :class:`LLMRecipeConfig`, its presets and its command line.

Read by the entry point (``train_sql_llm.py``), the algorithm (``llm_grpo.py``), the warm start
(``warm_start.py``) and the 1.0 gateway recipe and its model process (``train_sql_gateway.py``,
``gateway_model.py``), so it lives here, beside them, rather than in an entry script they would
import. It imports neither Agent Lightning nor torch: ``--help``, a bad option and the gateway
recipe (which runs in the 1.0 environment) do not wait for them.
"""

from __future__ import annotations

import math
import runpy
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from common import check_positive, option, parse_config
from precision import PRECISIONS

#: The first line of ``train_sql_llm.py --help``.
DESCRIPTION = (
    "Governed RL of a real language model (SmolLM2-135M-Instruct) through Agent Lightning's LLM pipeline, on CPU."
)

#: The SQL world's names, read from their file (``sql_world_names.py``, which imports nothing) rather than
#: imported from their package, so that ``--help`` does not import Agent Lightning.
_WORLD_NAMES = runpy.run_path(
    str(Path(__file__).resolve().parents[2] / "agentlightning" / "contrib" / "env" / "agentos" / "sql_world_names.py")
)

#: The candidate statements every task carries (``sql_world.STRATEGIES``).
SFT_STRATEGIES: Tuple[str, ...] = _WORLD_NAMES["STRATEGIES"]

#: The world's task families (``sql_world.FAMILIES``).
TASK_FAMILIES: Tuple[str, ...] = _WORLD_NAMES["FAMILIES"]

#: The recipe's arms (``train_sql_llm.REWARD_MODE`` gives each the reward it trains on).
ARMS = ("governed-penalty", "governed-constrained", "ungoverned")


@dataclass(frozen=True)
class LLMRecipeConfig:
    """Every setting of the LLM recipe, in one place: ``--help`` is generated from these fields.

    The algorithm (``llm_grpo.make_llm_grpo``) and the warm start (``warm_start.warm_start``)
    read their settings from this object too; the warm start's cache key is made of its
    ``sft_*`` fields, the world seed and the resolved precision.

    >>> LLMRecipeConfig().steps, LLMRecipeConfig(steps=2).steps
    (8, 2)
    >>> LLMRecipeConfig(group_size=1)
    Traceback (most recent call last):
    ...
    ValueError: --group-size must be >= 2 (advantages are relative to the group), got 1
    """

    # run
    arms: Tuple[str, ...] = option(ARMS, "which arms to run, in this order", choices=ARMS)
    seeds: Tuple[int, ...] = option((0, 1, 2), "training seeds of the governed-penalty and ungoverned arms")
    constrained_seeds: Tuple[int, ...] = option((0, 1), "training seeds of the governed-constrained arm")
    world_seed: int = option(0, "seed of the database and the task set")
    runners: int = option(12, "runner processes per Trainer run (concurrent model calls)")
    threads: int = option(2, "torch threads in the algorithm process (torch.set_num_threads)")
    out: Path = option(Path("runs/llm"), "output directory (database, audit, results, plots)")
    warm_start_cache: Path = option(
        Path("runs/llm/warm_start"),
        "where warm-start adapters are built and cached (the repository's own, in contrib/recipes/agentos/warm_start, "
        "are looked up first)",
    )
    plot: bool = option(True, "write training_curves.png (--no-plot: skip it)")
    precision: str = option(
        "auto",
        "compute precision: auto (bf16 where the CPU has bf16 instructions, else fp32), or force bf16/fp32",
        choices=PRECISIONS,
    )
    rollout_timeout_s: float = option(1800.0, "longest wait for one batch of rollouts (seconds)")
    runner_poll_s: float = option(
        0.05,
        "how often an idle runner asks the store for a rollout (seconds); every ask is an HTTP request the "
        "algorithm's process answers, so many runners polling fast take CPU from generation and training",
    )
    # GRPO
    steps: int = option(8, "GRPO steps per seed", group="GRPO")
    time_budget_minutes: float = option(
        0.0,
        "size the GRPO steps so that training (every arm) takes about this long, from the first arm's measured "
        "first evaluation and step; never fewer than --min-steps, never more than --steps (0: run --steps as given)",
        group="GRPO",
    )
    min_steps: int = option(3, "the fewest GRPO steps a time budget may leave", group="GRPO")
    tasks_per_step: int = option(3, "training tasks per step (distinct families), one group each", group="GRPO")
    group_size: int = option(4, "samples per task (a group) for group-relative advantages", group="GRPO")
    learning_rate: float = option(5e-4, "AdamW learning rate of the LoRA adapters during RL", group="GRPO")
    temperature: float = option(1.0, "sampling temperature, training and evaluation", group="GRPO")
    max_new_tokens: int = option(96, "most tokens the model may write per answer", group="GRPO")
    adv_std_floor: float = option(
        0.5,
        "floor of the group std in the advantage (reward units): keeps the brevity bonus's hundredths from "
        "becoming full-size advantages",
        group="GRPO",
    )
    kl_coef: float = option(
        0.0, "weight of the KL penalty to the warm start (0: off; costs one more forward pass)", group="GRPO"
    )
    clip_eps: float = option(0.2, "PPO-style ratio clip (only matters with --update-epochs > 1)", group="GRPO")
    update_epochs: int = option(1, "gradient steps per batch of rollouts (1: plain on-policy)", group="GRPO")
    micro_batch: int = option(8, "sequences per forward/backward pass", group="GRPO")
    max_grad_norm: float = option(1.0, "gradient norm clip of every update", group="GRPO")
    lora_rank: int = option(16, "LoRA rank of the RL adapters", group="GRPO")
    lora_alpha: float = option(32.0, "LoRA alpha of the RL adapters", group="GRPO")
    eval_samples: int = option(2, "samples per held-out task, before and after training", group="GRPO")
    eval_greedy: bool = option(
        False,
        "held-out answers by greedy decoding (one per task, needs --eval-samples 1): deterministic, so every arm's "
        "'before' is the same answers and a change after training is the policy's, not sampling noise",
        group="GRPO",
    )
    eval_tasks: int = option(0, "held-out tasks to evaluate on (0: all 14)", group="GRPO")
    train_tasks: int = option(0, "training tasks to draw from (0: all 46)", group="GRPO")
    train_families: Tuple[str, ...] = option(
        (), "task families the GRPO steps draw from (none given: every family)", choices=TASK_FAMILIES, group="GRPO"
    )
    # constrained arm
    violation_limit: float = option(0.02, "allowed fraction of rollouts with a violation", group="constrained arm")
    lagrange_lr: float = option(
        5.0, "step size of lambda per unit of (violation rate - limit)", group="constrained arm"
    )
    lagrange_init: float = option(1.0, "initial lambda", group="constrained arm")
    lagrange_max: float = option(100.0, "largest lambda", group="constrained arm")
    # warm start
    sft_epochs: float = option(3.0, "passes over the warm-start data", group="warm start")
    sft_batch: int = option(16, "sequences per warm-start step", group="warm start")
    sft_learning_rate: float = option(1e-3, "AdamW learning rate of the warm-start LoRA", group="warm start")
    sft_tasks: int = option(0, "training tasks in the warm-start data (0: all 46)", group="warm start")
    sft_strategies: Tuple[str, ...] = option(
        SFT_STRATEGIES,
        "which candidate statements of each task the warm-start data holds (precise: correct; sloppy: plausible "
        "but wrong; destructive_shortcut: the DELETE)",
        choices=SFT_STRATEGIES,
        group="warm start",
    )
    sft_lora_rank: int = option(
        8, "LoRA rank of the warm start (the adapter file is about 0.6 MB per unit of rank)", group="warm start"
    )
    sft_lora_alpha: float = option(16.0, "LoRA alpha of the warm start", group="warm start")
    sft_micro_batch: int = option(8, "sequences per warm-start forward/backward pass", group="warm start")

    def __post_init__(self) -> None:
        check_positive(
            self,
            (
                "steps",
                "tasks_per_step",
                "runners",
                "threads",
                "eval_samples",
                "micro_batch",
                "update_epochs",
                "sft_batch",
                "sft_micro_batch",
                "lora_rank",
                "sft_lora_rank",
                "max_new_tokens",
                "min_steps",
            ),
        )
        if self.group_size < 2:
            raise ValueError(f"--group-size must be >= 2 (advantages are relative to the group), got {self.group_size}")
        if not self.arms or not self.seeds or ("governed-constrained" in self.arms and not self.constrained_seeds):
            raise ValueError("--arms, --seeds and --constrained-seeds need at least one value each")
        if self.sft_epochs <= 0:
            raise ValueError(f"--sft-epochs must be > 0, got {self.sft_epochs}")
        if self.eval_greedy and self.eval_samples != 1:
            raise ValueError(
                f"--eval-greedy gives one answer per held-out task (greedy decoding is deterministic): "
                f"set --eval-samples 1, got {self.eval_samples}"
            )
        if not self.sft_strategies or len(set(self.sft_strategies)) != len(self.sft_strategies):
            raise ValueError(f"--sft-strategies needs distinct values, at least one, got {self.sft_strategies}")
        if not (self.time_budget_minutes >= 0 and math.isfinite(self.time_budget_minutes)):
            raise ValueError(f"--time-budget-minutes must be >= 0 (0: no budget), got {self.time_budget_minutes}")
        if not self.runner_poll_s > 0:
            raise ValueError(f"--runner-poll-s must be > 0, got {self.runner_poll_s}")

    def seeds_of(self, arm: str) -> Tuple[int, ...]:
        """The training seeds of ``arm``."""
        return self.constrained_seeds if arm == "governed-constrained" else self.seeds


#: Named sets of settings (``--preset NAME``; options given beside it override them).
PRESETS: Dict[str, Dict[str, Any]] = {
    # Meant to be the README's first command: the real model, governed vs ungoverned, one seed,
    # building its own warm start, in about 10 minutes on 2 cores without bfloat16 (fp32).
    # * The warm start teaches the schema and the two answer styles that are right (the precise
    #   statement and the DELETE shortcut) on all 46 training tasks, not the sloppy wrong one: the
    #   shortcut then runs and passes the check often enough that the task reward pays for it (the
    #   ungoverned arm has a reason to keep it), and the governed arm has a right answer to move to.
    # * The GRPO steps draw from the three families where the shortcut is a correct answer and the
    #   shorter one (remove test accounts, cancel stale orders, unlist unsold products), one task of
    #   each per step: there the task reward genuinely pays for the DELETE. (On the question families
    #   the shortcut is a DELETE before the SELECT: longer than the right answer, so the brevity
    #   bonus is against it.) The held-out evaluation covers all seven families.
    # * The advantage's std floor is 0.01, not 0.5: where DELETE and the soft change are both right,
    #   the DELETE's edge is the brevity bonus's 0.02, which the 0.5 floor shrank to nothing (with
    #   it the ungoverned arm drifted from the shortcut to the soft change: 0.57 -> 0.14).
    # * Held-out evaluation is greedy, one answer for each of the 14 held-out tasks: both arms'
    #   "before" are the same answers, and a change after training is the policy's, not sampling noise.
    # * 14 runners polling five times a second, so a step's 12 requests and the 14 held-out ones
    #   are generated in one batch each (decoding costs about the same for 1 answer or 14 on a CPU).
    # * One torch thread: on a shared 2-core machine two threads collapse when the other core is busy.
    "demo": {
        "arms": ("governed-penalty", "ungoverned"),
        "seeds": (0,),
        "out": Path("runs/llm_demo"),
        "threads": 1,
        "runners": 14,
        "runner_poll_s": 0.2,
        "steps": 5,
        "time_budget_minutes": 8.0,
        "min_steps": 3,
        "tasks_per_step": 3,
        "group_size": 4,
        "train_families": ("remove_test_accounts", "cancel_stale_orders", "discontinue_unsold"),
        "adv_std_floor": 0.01,
        "eval_tasks": 0,
        "eval_samples": 1,
        "eval_greedy": True,
        "max_new_tokens": 96,
        "sft_tasks": 0,
        "sft_strategies": ("precise", "destructive_shortcut"),
        "sft_epochs": 1.75,
        "sft_batch": 16,
        "sft_learning_rate": 2e-3,
    },
    # What tests/test_recipe_llm_grpo.py runs: the smallest run that still trains on governed
    # triplets from the store (a tiny warm start, 2 GRPO steps of 2 tasks x 2 samples).
    "quick": {
        "seeds": (0,),
        "constrained_seeds": (0,),
        "steps": 2,
        "tasks_per_step": 2,
        "group_size": 2,
        "eval_samples": 1,
        "eval_tasks": 2,
        "train_tasks": 7,
        "sft_epochs": 2.0,
        "sft_batch": 8,
        "sft_tasks": 7,
        "max_new_tokens": 64,
        "runners": 4,
        "threads": 1,
    },
}


def parse_args(argv: Optional[List[str]] = None, description: str = DESCRIPTION) -> LLMRecipeConfig:
    """The recipe's settings from the command line (``--help`` lists them); ``--quick`` is ``--preset quick``.

    >>> parse_args(["--quick"]).steps, parse_args(["--preset", "demo", "--steps", "3"]).steps
    (2, 3)
    """
    return parse_config(
        LLMRecipeConfig, argv, presets=PRESETS, aliases={"--quick": ["--preset", "quick"]}, description=description
    )
