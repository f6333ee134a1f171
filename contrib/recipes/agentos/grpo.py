"""A small GRPO-style algorithm for the recipe, as a real agentlightning ``@algo``.

The policy is a table: for each training seed and task family, logits over the three SQL
strategies every task offers. Each epoch, for each seed, the algorithm picks one training task
per family and enqueues ``group_size`` rollouts of it (a *group*), all under the resources it
just published. When they finish it reads each rollout's final reward from the store with
``find_final_reward`` (in the governed arm that is ``PolicyReward``'s governed value; in the
ungoverned arm the agent's own task reward), computes group-relative advantages

    A_i = (r_i - mean(r_group)) / (std(r_group) + 1e-6)

and takes a policy-gradient step on the softmax: ``logits[f] += lr * mean_i(A_i * (onehot(a_i) - pi_f))``.
The new logits are published as the next ``main_llm`` resource. There is no value network, no
KL term and no clipping: with a tabular policy and on-policy groups, the group baseline is
enough. Held-out accuracy is measured before and after training by sampling the policy
``group_size`` times on every held-out task, through the same runners (``mode="val"``): the
expected accuracy of the stochastic policy (a greedy read-out of all-zero initial logits would
just report the tie-break).

Several seeds train side by side in one Trainer run (their tasks are interleaved in the queue);
their policies never share anything but the queue.
"""

from __future__ import annotations

import json
import math
import random
import statistics
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

import agentlightning as agl
from agentlightning.algorithm import algo
from agentlightning.emitter import find_final_reward
from common import (
    check_positive,
    config_record,
    enqueue_group,
    group_advantages,
    log,
    option,
    sql_kernel,
    wait_for_rollouts,
)
from sql_agent import (
    REPORT_BLOCKED,
    REPORT_CORRECT,
    REPORT_DESTRUCTIVE_EXECUTED,
    REPORT_ROWS_DESTROYED,
    REPORT_SQL,
    REPORT_STRATEGY,
    policy_resource,
    softmax,
)

from agentlightning.contrib.env.agentos.sql_world import FAMILIES, STRATEGIES, SQLWorld
from agentlightning.contrib.kernel.agentos import Action
from agentlightning.contrib.kernel.agentos.agl03.stats import governance_stats

#: The recipe's arms: the same agent and algorithm with and without the kernel.
ARMS = ("governed", "ungoverned")


@dataclass(frozen=True)
class TabularRecipeConfig:
    """Every setting of the tabular recipe, in one place: ``--help`` is generated from these fields,
    and the algorithm (``grpo.make_grpo_algorithm``) reads its hyperparameters from this object.

    >>> TabularRecipeConfig().epochs, TabularRecipeConfig(epochs=3).epochs
    (12, 3)
    """

    seeds: Tuple[int, ...] = option((0, 1, 2, 3, 4), "training seeds (one independent policy each)")
    epochs: int = option(12, "training epochs; each epoch is one group per task family per seed")
    group_size: int = option(4, "rollouts per group (same task), for group-relative advantages")
    learning_rate: float = option(5.0, "policy-gradient step size on the strategy logits")
    temperature: float = option(1.0, "softmax temperature when sampling strategies")
    rollout_timeout_s: float = option(120.0, "longest wait for one batch of rollouts (seconds)")
    runners: int = option(2, "runner processes per Trainer run")
    world_seed: int = option(0, "seed of the database and the task set")
    arms: Tuple[str, ...] = option(ARMS, "which arms to run", choices=ARMS)
    out: Path = option(Path("runs/sql_grpo"), "output directory (database, audit, results, plots)")
    plot: bool = option(True, "write training_curves.png (--no-plot: skip it, matplotlib not needed then)")
    store_url: Optional[str] = option(
        None,
        "use the `agl store` at this URL (e.g. http://127.0.0.1:4747, where its dashboard shows the run) "
        "instead of a private in-memory store on a free port; the Trainer then serves no store of its own, "
        "so nothing clashes with agl store's port",
    )

    def __post_init__(self) -> None:
        check_positive(self, ("epochs", "runners"))
        if self.group_size < 2:
            raise ValueError(f"--group-size must be >= 2 (advantages are relative to the group), got {self.group_size}")
        if not self.seeds or not self.arms:
            raise ValueError("--seeds and --arms need at least one value each")
        if self.store_url is not None:
            object.__setattr__(self, "store_url", self.store_url.rstrip("/"))
            if not self.store_url.startswith(("http://", "https://")):
                raise ValueError(
                    f"--store-url must be an http(s) URL such as http://127.0.0.1:4747, got {self.store_url!r}"
                )


@dataclass
class EpochMetrics:
    seed: int
    epoch: int
    rollouts: int
    attempted_violation_rate: float
    destructive_executed: int
    rows_destroyed: int
    accuracy: float
    mean_reward: float
    failed_rollouts: int
    probabilities: Dict[str, List[float]] = field(default_factory=dict)


def violation_classifier() -> Callable[[str], bool]:
    """The measuring instrument for attempted violations, identical for both arms: the kernel's
    SQLPolicy used offline (it decides nothing about the run; it only classifies the SQL the
    agent reported having attempted)."""
    kernel = sql_kernel()
    return lambda sql: kernel.check(Action.sql(sql)).blocked


async def _outcomes(store: agl.LightningStore, ids: List[str], statuses: Dict[str, str]) -> List[Dict[str, Any]]:
    rows = []
    for rollout_id in ids:
        spans = await store.query_spans(rollout_id, "latest")
        report = next((dict(s.attributes) for s in spans if REPORT_STRATEGY in (s.attributes or {})), {})
        rows.append(
            {
                "rollout_id": rollout_id,
                "status": statuses.get(rollout_id, "unfinished"),
                "reward": find_final_reward(spans),
                **report,
            }
        )
    return rows


def make_grpo_algorithm(
    config: TabularRecipeConfig,
    world: SQLWorld,
    arm: str,
    result_path: Path,
    progress: Callable[[str], None] = log,
):
    """The ``@algo`` for one arm; writes its per-epoch and evaluation results to ``result_path``.

    ``config`` is the recipe's (:class:`TabularRecipeConfig`): seeds, epochs,
    group size, learning rate, temperature and the rollout timeout."""
    train = [t for t in world.split("train")]
    heldout = list(world.split("heldout"))
    by_family = {f: [t for t in train if t.family == f] for f in FAMILIES}
    is_violation = violation_classifier()

    def evaluate_rows(rows: List[Dict[str, Any]]) -> Dict[str, Any]:
        return {
            "accuracy": sum(bool(r.get(REPORT_CORRECT)) for r in rows) / len(rows),
            "attempted_violations": sum(is_violation(r.get(REPORT_SQL, "")) for r in rows),
            "destructive_executed": sum(bool(r.get(REPORT_DESTRUCTIVE_EXECUTED)) for r in rows),
            "rows_destroyed": sum(int(r.get(REPORT_ROWS_DESTROYED, 0)) for r in rows),
            "failed_rollouts": sum(r["status"] != "succeeded" for r in rows),
        }

    @algo
    async def grpo(*, store: agl.LightningStore) -> None:
        logits = {str(s): {f: [0.0] * len(STRATEGIES) for f in FAMILIES} for s in config.seeds}
        started = time.perf_counter()
        all_ids: List[str] = []  # this run's rollouts: an external agl store (--store-url) may hold other runs too

        async def publish(version: str) -> str:
            update = await store.add_resources(
                {"main_llm": policy_resource(json.loads(json.dumps(logits)), version, config.temperature)}
            )
            return update.resources_id

        async def evaluate(label: str) -> Dict[str, Any]:
            resources_id = await publish(f"eval-{label}")
            ids, owners = [], []
            for seed in config.seeds:
                for task in heldout:
                    labels = {"seed": seed, "epoch": f"eval-{label}"}
                    ids += await enqueue_group(
                        store, task.task_id, config.group_size, resources_id, labels=labels, mode="val"
                    )
                    owners += [seed] * config.group_size
            all_ids.extend(ids)
            rows = await _outcomes(store, ids, await wait_for_rollouts(store, ids, config.rollout_timeout_s))
            per_seed = {str(s): evaluate_rows([r for r, o in zip(rows, owners) if o == s]) for s in config.seeds}
            progress(
                f"[{arm}] held-out {label}: accuracy " + " ".join(f"{v['accuracy']:.2f}" for v in per_seed.values())
            )
            return per_seed

        before = await evaluate("before")
        epochs: List[Dict[str, Any]] = []
        rollout_log: List[list] = []  # one row per training rollout: what was tried and the reward the store holds
        for epoch in range(config.epochs):
            resources_id = await publish(f"epoch{epoch}")
            ids, meta = [], []
            for seed in config.seeds:
                rng = random.Random(f"grpo/{seed}/{epoch}")
                for family in FAMILIES:
                    task = rng.choice(by_family[family])
                    labels = {"seed": seed, "epoch": epoch}
                    ids += await enqueue_group(store, task.task_id, config.group_size, resources_id, labels=labels)
                    meta += [(seed, family, task.task_id)] * config.group_size
            all_ids.extend(ids)
            rows = await _outcomes(store, ids, await wait_for_rollouts(store, ids, config.rollout_timeout_s))

            groups: Dict[tuple, List[Dict[str, Any]]] = {}
            for row, (seed, family, task_id) in zip(rows, meta):
                groups.setdefault((seed, family, task_id), []).append(row)
                rollout_log.append(
                    [
                        seed,
                        epoch,
                        task_id,
                        row.get(REPORT_STRATEGY),
                        row["reward"],
                        bool(row.get(REPORT_BLOCKED)),
                        bool(row.get(REPORT_CORRECT)),
                        bool(row.get(REPORT_DESTRUCTIVE_EXECUTED)),
                        row["status"],
                    ]
                )
            for (seed, family, _), group in groups.items():
                usable = [r for r in group if r["reward"] is not None and r.get(REPORT_STRATEGY) in STRATEGIES]
                if len(usable) < 2:
                    continue
                advantages = group_advantages([float(r["reward"]) for r in usable])
                probs = softmax(logits[str(seed)][family], config.temperature)
                grad = [0.0] * len(STRATEGIES)
                for row, advantage in zip(usable, advantages):
                    chosen = STRATEGIES.index(row[REPORT_STRATEGY])
                    for i in range(len(STRATEGIES)):
                        grad[i] += advantage * ((i == chosen) - probs[i]) / len(usable)
                logits[str(seed)][family] = [
                    v + config.learning_rate * g for v, g in zip(logits[str(seed)][family], grad)
                ]

            for seed in config.seeds:
                seed_rows = [r for r, m in zip(rows, meta) if m[0] == seed]
                stats = evaluate_rows(seed_rows)
                rewards = [r["reward"] for r in seed_rows if r["reward"] is not None]
                epochs.append(
                    asdict(
                        EpochMetrics(
                            seed=seed,
                            epoch=epoch,
                            rollouts=len(seed_rows),
                            attempted_violation_rate=stats["attempted_violations"] / len(seed_rows),
                            destructive_executed=stats["destructive_executed"],
                            rows_destroyed=stats["rows_destroyed"],
                            accuracy=stats["accuracy"],
                            mean_reward=statistics.fmean(rewards) if rewards else math.nan,
                            failed_rollouts=stats["failed_rollouts"],
                            probabilities={
                                f: [round(p, 4) for p in softmax(logits[str(seed)][f], config.temperature)]
                                for f in FAMILIES
                            },
                        )
                    )
                )
            latest = epochs[-len(config.seeds) :]
            progress(
                f"[{arm}] epoch {epoch + 1:2d}/{config.epochs}  "
                f"attempted violations {statistics.fmean(m['attempted_violation_rate'] for m in latest):6.1%}  "
                f"executed {sum(m['destructive_executed'] for m in latest):3d}  "
                f"accuracy {statistics.fmean(m['accuracy'] for m in latest):6.1%}  "
                f"({time.perf_counter() - started:5.1f} s)"
            )

        after = await evaluate("after")
        store_stats = await governance_stats(store, all_ids)  # violation spans the runners wrote (0 without a kernel)
        result = {
            "arm": arm,
            "config": config_record(config),
            "heldout_before": before,
            "heldout_after": after,
            "epochs": epochs,
            "final_logits": logits,
            "rollout_columns": [
                "seed",
                "epoch",
                "task_id",
                "strategy",
                "final_reward",
                "blocked",
                "correct",
                "destructive_executed",
                "status",
            ],
            "rollouts": rollout_log,
            "store_governance_stats": store_stats,
            "algorithm_seconds": time.perf_counter() - started,
        }
        result_path.write_text(json.dumps(result, indent=1))

    return grpo
