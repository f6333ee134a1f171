"""Train a tabular policy on the governed text-to-SQL environment and watch violations fall.

The environment is `make_text_to_sql_env(..., discrete=True)`: each episode is one task of a real
SQLite shop database; the observation is the task's family, the action one of three strategies
(`precise`, `sloppy`, `destructive_shortcut`). On most tasks the destructive shortcut (a DELETE)
would satisfy the task checker, but the Agent OS kernel blocks it: no rows are destroyed, the
step costs `violation_penalty x 10` and ends the episode. The learner is a softmax policy per
family trained with REINFORCE (a contextual bandit); it starts uniform, so about a third of its
first actions are destructive, and it learns to stop.

    python examples/train_governed_sql_env.py --epochs 10 --seed 0

Runs offline in a few seconds (CPU, numpy only).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
import time
from pathlib import Path
from typing import Dict, List, Optional, Sequence

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # agentlightning imports litellm: keep it offline

import numpy as np

from agentlightning.contrib.env.agentos import make_text_to_sql_env, record_episodes_to_store
from agentlightning.contrib.env.agentos.sql_world import STRATEGIES
from agentlightning.contrib.kernel.agentos import GovernanceKernel, SQLPolicy
from agentlightning.contrib.kernel.agentos.agl03.stats import governance_stats


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0, help="seed of the learner and of the episodes")
    parser.add_argument("--world-seed", type=int, default=0, help="seed of the database and its tasks")
    parser.add_argument("--db", type=str, default=None, help="database path (default: a temporary directory)")
    parser.add_argument("--epochs", type=int, default=10, help="training epochs")
    parser.add_argument("--episodes-per-epoch", type=int, default=50, help="episodes per epoch")
    parser.add_argument("--lr", type=float, default=0.003, help="policy-gradient learning rate")
    parser.add_argument("--max-steps", type=int, default=3, help="attempts per task before the episode is truncated")
    parser.add_argument("--no-store", action="store_true", help="skip exporting the episodes to a LightningStore")
    return parser.parse_args(argv)


def softmax(logits: np.ndarray) -> np.ndarray:
    z = np.exp(logits - logits.max())
    return z / z.sum()


def main(argv: Optional[Sequence[str]] = None) -> Dict[str, List[float]]:
    args = parse_args(argv)
    rng = np.random.default_rng(args.seed)
    db_path = Path(args.db) if args.db else Path(tempfile.mkdtemp()) / "shop.db"

    # 1. The governed environment: the kernel denies destructive SQL (critical severity).
    kernel = GovernanceKernel([SQLPolicy(deny=["DROP", "DELETE", "TRUNCATE"])])
    env = make_text_to_sql_env(
        kernel,
        db_path,
        split="train",
        seed=args.world_seed,
        discrete=True,
        record_episodes=not args.no_store,
        max_steps=args.max_steps,
    )
    n_families, n_actions = env.observation_space.n, env.action_space.n

    # 2. The learner: one softmax policy per task family, REINFORCE with a per-family baseline.
    logits = np.zeros((n_families, n_actions))
    baseline = np.zeros(n_families)

    # 3. Training.
    history: Dict[str, List[float]] = {"violation_rate": [], "success_rate": [], "mean_return": []}
    started = time.perf_counter()
    episode_seed = args.seed
    for epoch in range(1, args.epochs + 1):
        steps = violations = successes = 0
        returns = []
        for _ in range(args.episodes_per_epoch):
            family, info = env.reset(seed=episode_seed)
            episode_seed += 1
            done, episode_return = False, 0.0
            while not done:
                probs = softmax(logits[family])
                action = int(rng.choice(n_actions, p=probs))
                family, reward, terminated, truncated, info = env.step(action)
                grad = -probs
                grad[action] += 1.0
                logits[family] += args.lr * (reward - baseline[family]) * grad
                baseline[family] += 0.1 * (reward - baseline[family])
                steps += 1
                violations += len(info["violations"])
                episode_return += reward
                done = terminated or truncated
            successes += info["episode_success"]
            returns.append(episode_return)
        rate = violations / steps
        history["violation_rate"].append(rate)
        history["success_rate"].append(successes / args.episodes_per_epoch)
        history["mean_return"].append(float(np.mean(returns)))
        print(
            f"epoch {epoch:2d}  violation_rate={rate:.3f}  success_rate={successes / args.episodes_per_epoch:.2f}  "
            f"mean_return={np.mean(returns):+8.2f}"
        )

    # 4. What the policy learned, per family.
    print(f"trained in {time.perf_counter() - started:.1f}s; greedy strategy per family:")
    for name, row in zip(env.unwrapped.world.families, logits):
        print(f"  {name:22s} {STRATEGIES[int(np.argmax(row))]:22s} p={softmax(row).round(2).tolist()}")
    metrics = env.unwrapped.get_metrics()
    print("env metrics:", metrics)
    print(
        f"violation rate: first epoch {history['violation_rate'][0]:.3f} -> "
        f"last epoch {history['violation_rate'][-1]:.3f}"
    )

    # 5. The greedy policy on held-out tasks (same families, other countries/categories/dates).
    heldout = make_text_to_sql_env(
        kernel, db_path, split="heldout", seed=args.world_seed, discrete=True, max_steps=args.max_steps
    )
    for i in range(len(heldout.unwrapped.tasks)):
        family, _ = heldout.reset(seed=10_000 + i, options={"task_id": heldout.unwrapped.tasks[i].task_id})
        done = False
        while not done:
            family, _, terminated, truncated, _ = heldout.step(int(np.argmax(logits[family])))
            done = terminated or truncated
    held = heldout.unwrapped.get_metrics()
    history["heldout_success_rate"] = [held["success_rate"]]
    history["heldout_violations"] = [held["total_violations"]]
    print(
        f"held-out ({held['total_episodes']} tasks, greedy): success_rate={held['success_rate']:.2f}  "
        f"violations={held['total_violations']}"
    )
    heldout.close()

    # 6. The same episodes in a LightningStore, as the runner's rollouts (dashboard, statistics).
    if not args.no_store:
        from agentlightning.store.memory import InMemoryLightningStore

        async def export() -> dict:
            store = InMemoryLightningStore()
            await record_episodes_to_store(store, env.unwrapped, include_current=True)
            return await governance_stats(store)

        stats = asyncio.run(export())
        print(
            f"store: {stats['total_rollouts']} rollouts, {stats['total_violations']} violations "
            f"(env counted {metrics['total_violations']})"
        )
    env.close()
    return history


if __name__ == "__main__":
    main()
