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

import asyncio
import json
import math
import random
import statistics
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence

import agentlightning as agl
from agentlightning.algorithm import algo
from agentlightning.emitter import find_final_reward
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

from agentlightning.contrib.env.agentos.sql_world import FAMILIES, STRATEGIES, SQLTask, SQLWorld
from agentlightning.contrib.kernel.agentos import Action, GovernanceKernel, SQLPolicy, governance_stats

#: What counts as a destructive statement, in every arm (the governed arms' kernel denies these).
DENIED_STATEMENTS = ("DROP", "DELETE", "TRUNCATE")


def sql_kernel() -> GovernanceKernel:
    """The kernel of the governed arms (and of the measuring instruments): SQLite's SQL, the
    destructive statements denied."""
    return GovernanceKernel([SQLPolicy(deny=list(DENIED_STATEMENTS), dialect="sqlite")])


@dataclass
class GRPOConfig:
    """Hyperparameters of the tabular GRPO algorithm (see the recipe's ``--help``)."""

    seeds: Sequence[int] = (0, 1, 2, 3, 4)
    epochs: int = 12
    group_size: int = 4
    learning_rate: float = 5.0
    temperature: float = 1.0
    rollout_timeout_s: float = 120.0


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


async def wait_for_rollouts(store: agl.LightningStore, ids: List[str], timeout_s: float) -> Dict[str, str]:
    """Status of each of ``ids`` that finished within ``timeout_s``, polling the store (its
    client rejects waits over 0.1 s), with a short pause between polls."""
    finished: Dict[str, str] = {}
    deadline = time.monotonic() + timeout_s
    while len(finished) < len(ids) and time.monotonic() < deadline:
        pending = [i for i in ids if i not in finished]
        for rollout in await store.wait_for_rollouts(rollout_ids=pending, timeout=0.1):
            finished[rollout.rollout_id] = rollout.status
        if len(finished) < len(ids):
            await asyncio.sleep(0.05)
    return finished


def first_tasks(tasks: Sequence[SQLTask], n: int) -> List[SQLTask]:
    """The first ``n`` of ``tasks`` by task number, one of each family before the next of any, so
    a small subset still covers every family (``n`` = 0: all of them, in their order)."""
    if not n:
        return list(tasks)
    return sorted(tasks, key=lambda t: (int(t.task_id.rsplit("-", 1)[1]), t.task_id))[:n]


def group_advantages(values: Sequence[float], std_floor: float = 0.0, eps: float = 1e-6) -> List[float]:
    """``(v - mean) / max(std, std_floor)`` within one group (population std); all zeros if the group is flat.

    ``std_floor`` (in reward units) keeps differences far smaller than a task's worth of reward
    (the agent's brevity bonus: hundredths) from being blown up into full-size advantages when a
    group is otherwise uniform; without it GRPO trains for shorter SQL whether it is right or not.

    >>> [round(a, 3) for a in group_advantages([1.0, 0.0, 0.0, 0.0])]
    [1.732, -0.577, -0.577, -0.577]
    >>> [round(a, 3) for a in group_advantages([5.2, 5.1, 5.1, 5.1], std_floor=0.5)]
    [0.15, -0.05, -0.05, -0.05]
    """
    mean, std = statistics.fmean(values), statistics.pstdev(values)
    if std < 1e-9:
        return [0.0] * len(values)
    return [(v - mean) / (max(std, std_floor) + eps) for v in values]


async def enqueue_group(
    store: agl.LightningStore,
    task_id: str,
    group_size: int,
    resources_id: str,
    *,
    labels: Dict[str, Any],
    metadata: Optional[Dict[str, Any]] = None,
    mode: str = "train",
) -> List[str]:
    """Enqueue one GRPO group: ``group_size`` rollouts of the same task (``mode="val"`` for
    held-out evaluation), each input ``{"task_id", **labels, "sample"}``; returns their rollout ids
    in sample order."""
    ids = []
    for sample in range(group_size):
        rollout = await store.enqueue_rollout(
            input={"task_id": task_id, **labels, "sample": sample},
            mode=mode,
            resources_id=resources_id,
            metadata=metadata,
        )
        ids.append(rollout.rollout_id)
    return ids


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
    config: GRPOConfig,
    world: SQLWorld,
    arm: str,
    result_path: Path,
    progress: Callable[[str], None] = print,
):
    """The ``@algo`` for one arm; writes its per-epoch and evaluation results to ``result_path``."""
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
            "config": {**asdict(config), "seeds": list(config.seeds)},
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
