"""The same governed LLM training on a GPU: a bigger model, vLLM, and Agent Lightning's own VERL algorithm.

NOT RUN HERE: this repository's machines have no GPU, and VERL needs ``verl``, ``vllm`` and CUDA
(``pip install agentlightning[verl]`` on a CUDA machine). The CPU recipe ``train_sql_llm.py`` is
the measured one; this file is the configuration a GPU user runs instead:

    python contrib/recipes/agentos/train_sql_llm_gpu.py --model Qwen/Qwen2.5-Coder-1.5B-Instruct --gpus 1

What changes against the CPU recipe, and what does not:

* the model: any chat model VERL can load (the default, Qwen2.5-Coder-1.5B-Instruct, writes
  executable SQL cold, so no warm start is needed; with SmolLM2 keep the warm start and pass its
  merged weights as ``--model``);
* the endpoint: VERL serves the policy through vLLM and publishes it as the ``main_llm`` resource,
  replacing ``policy_server.py``; vLLM returns the token ids the adapter needs;
* the algorithm: ``agl.VERL(config)`` replaces ``llm_grpo.make_llm_grpo``: GRPO
  (``adv_estimator="grpo"``, ``rollout.n`` samples per task), full-weight FSDP training, the
  triplets from ``TracerTraceToTriplet`` over the same store spans, rewards from the same final
  reward span;
* unchanged: the world, ``SQLAgent`` (the ``compact`` prompt or the ``full`` one), ``AgentOSRunner``
  with ``PolicyReward`` and ``governed_tool``, the audit trail, the spans. The governed reward is
  the stored final reward, which is what VERL trains on. VERL knows one scalar reward, so this is
  the ``penalty`` arm; the ``constrained`` form (separate cost channel and multiplier) needs the
  custom algorithm of ``llm_grpo.py``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # before agentlightning is imported (by common)

from common import option, parse_config  # noqa: E402


@dataclass(frozen=True)
class GPURecipeConfig:
    """Every setting of the GPU recipe (``--help`` is generated from these fields).

    >>> GPURecipeConfig().group_size
    4
    """

    model: str = option("Qwen/Qwen2.5-Coder-1.5B-Instruct", "model VERL loads (a hub name or a local path)")
    gpus: int = option(1, "GPUs on this node")
    group_size: int = option(4, "samples per task (GRPO group)")
    epochs: int = option(4, "passes over the training tasks")
    runners: int = option(8, "runner processes")
    world_seed: int = option(0, "seed of the database and the task set")
    out: Path = option(Path("runs/verl"), "database, audit and checkpoints")


def verl_config(model: str, gpus: int, group_size: int, epochs: int, out: Path) -> Dict[str, Any]:
    """VERL overrides for GRPO on the text-to-SQL world (merged by ``agl.VERL`` over VERL's defaults).

    >>> verl_config("Qwen/Qwen2.5-Coder-1.5B-Instruct", 1, 4, 2, Path("runs/verl"))["algorithm"]["adv_estimator"]
    'grpo'
    """
    return {
        "algorithm": {"adv_estimator": "grpo", "use_kl_in_reward": False},
        "data": {"train_batch_size": 16, "max_prompt_length": 1024, "max_response_length": 256, "truncation": "error"},
        "actor_rollout_ref": {
            "rollout": {
                "name": "vllm",
                "n": group_size,
                "tensor_model_parallel_size": 1,
                "gpu_memory_utilization": 0.6,
                "log_prob_micro_batch_size_per_gpu": 8,
                "multi_turn": {"format": "hermes"},
            },
            "actor": {
                "ppo_mini_batch_size": 16,
                "ppo_micro_batch_size_per_gpu": 4,
                "optim": {"lr": 1e-6},
                "use_kl_loss": True,
                "kl_loss_coef": 0.001,
                "entropy_coeff": 0,
                "clip_ratio_low": 0.2,
                "clip_ratio_high": 0.28,
            },
            "ref": {"log_prob_micro_batch_size_per_gpu": 8},
            "model": {"path": model, "use_remove_padding": True, "enable_gradient_checkpointing": True},
        },
        "trainer": {
            "n_gpus_per_node": gpus,
            "nnodes": 1,
            "val_before_train": True,
            "critic_warmup": 0,
            "logger": ["console"],
            "project_name": "agentos-governed-sql",
            "experiment_name": Path(model).name,
            "test_freq": 8,
            "save_freq": -1,
            "total_epochs": epochs,
            "default_local_dir": str(out / "checkpoints"),
        },
    }


def main(argv: Optional[List[str]] = None) -> None:
    args = parse_config(GPURecipeConfig, argv, description=__doc__.split("\n\n")[0])

    import agentlightning as agl
    from common import sql_kernel
    from sql_agent import SQLAgent

    from agentlightning.contrib.env.agentos.sql_world import SQLWorld
    from agentlightning.contrib.reward.agentos import PolicyReward
    from agentlightning.contrib.runner.agentos import AgentOSRunner

    args.out.mkdir(parents=True, exist_ok=True)
    world = SQLWorld.create(args.out / "shop.db", args.world_seed)
    kernel = sql_kernel()
    trainer = agl.Trainer(
        algorithm=agl.VERL(verl_config(args.model, args.gpus, args.group_size, args.epochs, args.out)),
        runner=AgentOSRunner(
            kernel, reward_fn=PolicyReward(kernel), audit_dir=args.out / "audit", log_violations=False
        ),
        adapter=agl.TracerTraceToTriplet(),
        n_runners=args.runners,
    )
    trainer.fit(
        SQLAgent(str(world.db_path), args.world_seed, governed=True, prompt="compact"),
        train_dataset=[{"task_id": t.task_id, "seed": 0} for t in world.split("train")],
        val_dataset=[{"task_id": t.task_id, "seed": 0} for t in world.split("heldout")],
    )


if __name__ == "__main__":
    main()
