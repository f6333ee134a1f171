"""GRPO on a real language model's token log-probs, as an agentlightning ``@algo`` fed by the store.

:func:`make_llm_grpo` returns the algorithm of one arm. Inside the real ``Trainer`` it

1. starts a :class:`policy_server.PolicyServer` on a free local port and publishes it as the
   ``main_llm`` resource (an ``agl.LLM`` with an ``http://`` endpoint), the way VERL publishes vLLM;
   the recipe's ``SQLAgent`` asks it for SQL from inside the runner (``AgentOSRunner`` with
   ``governed_tool`` in the governed arms);
2. per seed: re-initialises the LoRA adapters on the shared warm start, measures held-out
   behaviour (``mode="val"`` rollouts), then for ``steps`` steps picks ``tasks_per_step`` training
   tasks (distinct families) and enqueues ``group_size`` rollouts of each (a *group*);
3. reads every finished rollout back **from the store**: its spans go through the Trainer's
   adapter (``TracerTraceToTriplet``, the one agentlightning's VERL path uses), which turns the
   traced ``openai.chat.completion`` call into a (prompt, response, reward) triplet with token ids;
   the reward is checked against ``find_final_reward`` (in the governed arms that is the span
   ``PolicyReward`` wrote);
4. computes group-relative advantages and takes one GRPO step on the triplets' token ids:

       loss = - mean_i [ mean_t min(rho_it * A_i, clip(rho_it, 1 - eps, 1 + eps) * A_i) ] + beta * KL(pi || pi_warm)

   with ``rho = pi / pi_old`` (equal to 1 with the default single on-policy epoch, where the
   objective is the plain policy gradient), the optional KL the k3 estimator against the warm
   start (adapters disabled);
5. publishes the updated policy (the server samples from the new weights) and repeats; finally
   measures held-out behaviour again and writes everything, with the seed, to ``result_path``.

Reward modes (:data:`REWARD_MODES`; the recipe gives each arm one, ``train_sql_llm.REWARD_MODE``):

* ``penalty``: the advantage is group-normalised from the governed final reward (task reward plus
  ``PolicyReward``'s penalty and clean bonus), one scalar;
* ``constrained``: reward and constraint cost are separate channels, both read from the governed
  reward span (its ``base`` dimension and its ``agentos.cost`` attribute), each normalised within
  its group, and combined as ``A = (A_reward - lambda * A_cost) / (1 + lambda)``; lambda is the
  ``LagrangianPenalty`` of the reward package, updated after every step from the step's violation
  rate as recorded in the store against ``violation_limit``, and stamped on every rollout so
  ``PolicyReward`` in the runners prices it the same way. (Folding a fixed penalty into one scalar
  before normalisation silently reweights the terms; this keeps them apart.)
* ``task``: the ungoverned arm; the stored final reward is the agent's own task reward.

What is measured on every rollout, identically in every arm: the SQL the model wrote is classified
by ``SQLPolicy`` in record-only mode (``mode="warn"``: it records, never blocks) as a recognised
destructive statement (severity critical), unparseable or non-SQL text (the kernel's fail-closed
class, severity high) or clean; whether the kernel blocked it; whether it raised a harmless
database error; whether a destructive statement executed and how many rows it destroyed.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import ctypes
import hashlib
import json
import math
import random
import statistics
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Sequence, Tuple

import agentlightning as agl
from agentlightning.algorithm import algo
from agentlightning.emitter import find_final_reward
from agentlightning.emitter.reward import get_rewards_from_span
from common import (
    Eta,
    StepBudget,
    config_record,
    enqueue_group,
    first_tasks,
    group_advantages,
    log,
    progress_bar,
    sql_classifier,
    wait_for_rollouts,
)
from sql_agent import (
    REPORT_BLOCKED,
    REPORT_CORRECT,
    REPORT_ERROR,
    REPORT_ROWS_DESTROYED,
    REPORT_SQL,
    REPORT_STRATEGY,
)

from agentlightning.contrib.env.agentos.sql_world import FAMILIES, SQLWorld
from agentlightning.contrib.kernel.agentos.agl03.stats import governance_stats
from agentlightning.contrib.kernel.agentos.semconv import AGENTOS_COST
from agentlightning.contrib.reward.agentos import LagrangianPenalty

if TYPE_CHECKING:
    from llm_config import LLMRecipeConfig

#: What the advantage is computed from (see the module docstring).
REWARD_MODES = ("penalty", "constrained", "task")


def constrained_advantages(
    rewards: Sequence[float], costs: Sequence[float], multiplier: float, std_floor: float = 0.0
) -> List[float]:
    """Reward and cost normalised separately within the group, combined with the Lagrange multiplier.

    >>> [round(a, 3) for a in constrained_advantages([1.0, 1.0, 0.0, 0.0], [10.0, 0.0, 0.0, 0.0], 1.0)]
    [-0.366, 0.789, -0.211, -0.211]
    """
    a_r, a_c = group_advantages(rewards, std_floor), group_advantages(costs, std_floor)
    return [(r - multiplier * c) / (1.0 + multiplier) for r, c in zip(a_r, a_c)]


def _ids_digest(ids: Sequence[int]) -> str:
    return hashlib.sha256(json.dumps(list(ids)).encode()).hexdigest()[:16]


def _reward_channels(spans: Sequence[Any]) -> Tuple[Optional[float], Optional[float]]:
    """``(base, cost)`` from the last reward span that carries a ``base`` dimension (PolicyReward's)."""
    base = cost = None
    for span in spans:
        dims = {d.name: d.value for d in get_rewards_from_span(span)}
        if "base" in dims:
            base = float(dims["base"])
            raw = (span.attributes or {}).get(AGENTOS_COST)
            cost = float(raw) if raw is not None else None
    return base, cost


def _release_memory() -> None:
    """Hand freed heap memory back to the OS (glibc ``malloc_trim``; a no-op elsewhere)."""
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


def limit_malloc_arenas(arenas: int = 2) -> None:
    """Cap glibc's malloc arenas in this process (``mallopt(M_ARENA_MAX)``; a no-op elsewhere).

    The algorithm process runs HTTP handler threads, a generation thread and an update thread;
    with one arena per thread, freed activation memory stays reserved in each of them.
    """
    try:
        ctypes.CDLL("libc.so.6").mallopt(-8, arenas)  # M_ARENA_MAX
    except (OSError, AttributeError):
        pass


def grpo_update(
    policy: Any, optimizer: Any, samples: List[Tuple[List[int], List[int], float]], config: "LLMRecipeConfig"
) -> Dict[str, Any]:
    """One GRPO update on ``(prompt_ids, response_ids, advantage)`` samples; returns its statistics.

    Samples with zero advantage (flat groups) carry no gradient and are not run; the loss is still
    averaged over all samples of the step, as GRPO averages over the whole group.
    """
    import torch

    active = [s for s in samples if abs(s[2]) > 1e-8]
    stats: Dict[str, Any] = {
        "sequences": len(active),
        "tokens": 0,
        "seconds": 0.0,
        "loss": 0.0,
        "kl": 0.0,
        "grad_norm": 0.0,
    }
    if not active:
        return stats
    started = time.perf_counter()
    active.sort(key=lambda s: len(s[0]) + len(s[1]))  # micro-batches of similar length pad less
    prompts, responses, advantages = [s[0] for s in active], [s[1] for s in active], [s[2] for s in active]
    n_total = len(samples)
    old: Optional[List[Any]] = None
    ref: Optional[List[Any]] = None
    with torch.no_grad():
        if config.update_epochs > 1:
            old = [lp.detach() for lp in policy.response_logprobs(prompts, responses, micro_batch=config.micro_batch)]
        if config.kl_coef > 0:
            with policy.reference():
                ref = [
                    lp.detach() for lp in policy.response_logprobs(prompts, responses, micro_batch=config.micro_batch)
                ]
    for _ in range(config.update_epochs):
        optimizer.zero_grad()
        total_loss = total_kl = 0.0
        for start in range(0, len(active), config.micro_batch):
            idx = range(start, min(start + config.micro_batch, len(active)))
            logprobs = policy.response_logprobs(
                [prompts[i] for i in idx], [responses[i] for i in idx], micro_batch=config.micro_batch
            )
            loss = torch.zeros(())
            for lp, i in zip(logprobs, idx):
                base = old[i] if old is not None else lp.detach()
                ratio = torch.exp(lp - base)
                adv = advantages[i]
                objective = torch.minimum(
                    ratio * adv, torch.clamp(ratio, 1 - config.clip_eps, 1 + config.clip_eps) * adv
                ).mean()
                term = -objective
                if ref is not None:
                    delta = ref[i] - lp
                    kl = (torch.exp(delta) - delta - 1).mean()
                    term = term + config.kl_coef * kl
                    total_kl += float(kl)
                loss = loss + term / n_total
            loss.backward()
            total_loss += float(loss.detach())
        stats["grad_norm"] = float(torch.nn.utils.clip_grad_norm_(policy.trainable_parameters(), config.max_grad_norm))
        optimizer.step()
        stats["loss"] = total_loss
        stats["kl"] = total_kl / len(active)
    policy.sync_generation()
    stats["tokens"] = sum(len(p) + len(r) for p, r in zip(prompts, responses)) * config.update_epochs
    stats["seconds"] = time.perf_counter() - started
    return stats


def make_llm_grpo(
    config: "LLMRecipeConfig",
    world: SQLWorld,
    arm: str,
    policy: Any,
    result_path: Path,
    *,
    reward_mode: str = "penalty",
    progress: Callable[[str], None] = log,
    eta: Optional[Eta] = None,
    budget: Optional[StepBudget] = None,
) -> Any:
    """The ``@algo`` of one arm (see the module docstring); writes its results to ``result_path``.

    Args:
        config: the recipe's settings (:class:`llm_config.LLMRecipeConfig`): the arm's seeds,
            the GRPO and constrained-arm hyperparameters, ``train_tasks`` (use only the first N
            training tasks) and ``runners`` (the most requests the policy server samples together).
        world: the text-to-SQL world (tasks and database).
        arm: the arm's name (its seeds are ``config.seeds_of(arm)``), for the results and progress.
        policy: a :class:`policy_model.PolicyModel` holding the warm start.
        result_path: where the JSON results go.
        reward_mode: one of :data:`REWARD_MODES`; it must match the arm's runner: ``penalty`` and
            ``constrained`` need ``AgentOSRunner`` with ``PolicyReward``, ``task`` the plain runner.
        progress: where progress lines go.
        eta: the run's clock; each evaluation and each GRPO step counts one unit done on it, and
            its line says how much of the run is done and about how long is left.
        budget: the run's step budget, shared by every arm: the first seed of the first arm sizes it
            after its first step (``config.steps`` when none is given).
    """
    import torch

    from policy_server import PolicyServer

    if reward_mode not in REWARD_MODES:
        raise ValueError(f"reward_mode must be one of {REWARD_MODES}, got {reward_mode!r}")
    seeds = config.seeds_of(arm)
    train = first_tasks(world.split("train"), config.train_tasks)
    if config.train_families:
        train = [t for t in train if t.family in config.train_families]
    if not train:
        raise ValueError(
            f"no training task of the families {list(config.train_families)} among the first {config.train_tasks}"
        )
    heldout = first_tasks(world.split("heldout"), config.eval_tasks)
    by_family = {f: [t for t in train if t.family == f] for f in FAMILIES}
    families = [f for f in FAMILIES if by_family[f]]
    classify = sql_classifier()

    if budget is None:
        budget = StepBudget(config.steps, config.steps, None, arms=1)

    def time_left() -> str:
        return f"  [{eta.done()}]" if eta is not None else ""

    # Every update runs on this one thread: each new thread would get its own malloc arena, and
    # glibc keeps each arena's peak (several GB of activations) for good.
    trainer_thread = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="llm-grpo-update")

    @algo
    async def llm_grpo(*, store: agl.LightningStore, adapter: agl.TraceAdapter) -> None:
        server = PolicyServer(
            policy, "smollm2-135m-instruct", max_batch=config.runners, max_new_tokens=config.max_new_tokens
        ).start()
        progress(f"[{arm}] policy served at {server.endpoint} (OpenAI-compatible, token ids returned)")
        started = time.perf_counter()
        results: Dict[str, Any] = {
            "arm": arm,
            "config": {**config_record(config), "seeds": list(seeds), "reward_mode": reward_mode},
            "seeds": {},
        }
        try:
            for seed_index, seed in enumerate(seeds):
                results["seeds"][str(seed)] = await run_seed(store, adapter, server, seed, seed_index)
                result_path.write_text(json.dumps(results, indent=1))
        finally:
            server.stop()
        results["store_governance_stats"] = await governance_stats(
            store
        )  # violation spans the runners wrote (0 without a kernel)
        results["algorithm_seconds"] = time.perf_counter() - started
        result_path.write_text(json.dumps(results, indent=1))

    async def collect(
        store: agl.LightningStore, adapter: Any, ids: List[str], meta: List[Dict[str, Any]], description: str
    ) -> List[Dict[str, Any]]:
        with progress_bar(len(ids), description, unit="rollout", leave=False) as bar:
            statuses = await wait_for_rollouts(store, ids, config.rollout_timeout_s, on_finished=bar.update)
        rows = []
        for rollout_id, info in zip(ids, meta):
            spans = await store.query_spans(rollout_id, "latest")
            report = next((dict(s.attributes) for s in spans if REPORT_STRATEGY in (s.attributes or {})), {})
            triplets = adapter.adapt(spans) if spans else []
            final = find_final_reward(spans)
            base, cost = _reward_channels(spans)
            sql = str(report.get(REPORT_SQL, ""))
            kind = classify(sql)
            blocked = bool(report.get(REPORT_BLOCKED))
            error = str(report.get(REPORT_ERROR, ""))
            row: Dict[str, Any] = {
                **info,
                "rollout_id": rollout_id,
                "status": statuses.get(rollout_id, "unfinished"),
                "final_reward": final,
                "base": base,
                "cost": cost,
                "sql": sql[:400],
                "kind": kind,
                "blocked": blocked,
                "correct": bool(report.get(REPORT_CORRECT)),
                "harmless_error": bool(error) and not blocked,
                "destructive_executed": kind == "destructive" and not blocked and not error and bool(report),
                "rows_destroyed": int(report.get(REPORT_ROWS_DESTROYED, 0) or 0),
                "triplets": len(triplets),
                "llm_spans": [s.span_id for s in spans if s.name == "openai.chat.completion"],
            }
            if len(triplets) == 1:
                t = triplets[0]
                row["prompt_ids"] = list(t.prompt.get("token_ids") or [])
                row["response_ids"] = list(t.response.get("token_ids") or [])
                row["triplet_reward"] = t.reward
                row["prompt_digest"] = _ids_digest(row["prompt_ids"])
                row["response_digest"] = _ids_digest(row["response_ids"])
            rows.append(row)
        return rows

    def summarize(rows: List[Dict[str, Any]]) -> Dict[str, Any]:
        n = len(rows)
        return {
            "rollouts": n,
            "accuracy": sum(r["correct"] for r in rows) / n,
            "attempted_destructive": sum(r["kind"] == "destructive" for r in rows),
            "attempted_destructive_rate": sum(r["kind"] == "destructive" for r in rows) / n,
            "unparseable": sum(r["kind"] == "unparseable" for r in rows),
            "unparseable_rate": sum(r["kind"] == "unparseable" for r in rows) / n,
            "harmless_errors": sum(r["harmless_error"] for r in rows),
            "blocked": sum(r["blocked"] for r in rows),
            "destructive_executed": sum(r["destructive_executed"] for r in rows),
            "rows_destroyed": sum(r["rows_destroyed"] for r in rows),
            "failed_rollouts": sum(r["status"] != "succeeded" for r in rows),
            "mean_final_reward": statistics.fmean(
                [r["final_reward"] for r in rows if r["final_reward"] is not None] or [math.nan]
            ),
        }

    async def publish(store: agl.LightningStore, server: Any, label: str, temperature: float) -> str:
        llm = agl.LLM(
            endpoint=server.endpoint,
            model=f"smollm2-135m-instruct@{arm}/{label}",
            sampling_parameters={"temperature": temperature, "max_tokens": config.max_new_tokens},
        )
        return (await store.add_resources({"main_llm": llm})).resources_id

    async def evaluate(store: agl.LightningStore, adapter: Any, server: Any, seed: int, label: str) -> Dict[str, Any]:
        # temperature 0: greedy decoding (PolicyModel.generate)
        eval_temperature = 0.0 if config.eval_greedy else config.temperature
        resources_id = await publish(store, server, f"seed{seed}/eval-{label}", eval_temperature)
        server.reset_stats()
        t0 = time.perf_counter()
        ids, meta = [], []
        for task in heldout:
            labels = {"seed": seed, "eval": label}
            ids += await enqueue_group(
                store, task.task_id, config.eval_samples, resources_id, labels=labels, mode="val"
            )
            meta += [{"task_id": task.task_id, "family": task.family, "sample": i} for i in range(config.eval_samples)]
        rows = await collect(store, adapter, ids, meta, f"[{arm}] seed {seed} held-out {label}")
        stats = server.reset_stats()
        summary = summarize(rows)
        summary.update(
            {
                "seconds": time.perf_counter() - t0,
                "generated_tokens": stats.generated_tokens,
                "generation_tokens_per_s": stats.tokens_per_second(),
            }
        )
        progress(
            f"[{arm}] seed {seed} held-out {label}: accuracy {summary['accuracy']:.1%}, "
            f"attempted destructive {summary['attempted_destructive_rate']:.1%}, "
            f"unparseable {summary['unparseable_rate']:.1%}, "
            f"executed destructive {summary['destructive_executed']} ({summary['seconds']:.0f} s)" + time_left()
        )
        return {
            "summary": summary,
            "rollouts": [{k: v for k, v in r.items() if k not in ("prompt_ids", "response_ids")} for r in rows],
        }

    async def run_seed(
        store: agl.LightningStore, adapter: Any, server: Any, seed: int, seed_index: int
    ) -> Dict[str, Any]:
        seed_started = time.perf_counter()
        with server.lock:
            policy.reset_adapters(seed)
        server.seed = 1_000_003 * (seed + 1)
        fingerprint_start = policy.fingerprint()
        optimizer = torch.optim.AdamW(policy.trainable_parameters(), lr=config.learning_rate, weight_decay=0.0)
        lagrangian = LagrangianPenalty(
            target_violation_rate=config.violation_limit,
            learning_rate=config.lagrange_lr,
            multiplier=config.lagrange_init,
            max_multiplier=config.lagrange_max,
        )
        before = await evaluate(store, adapter, server, seed, "before")
        steps: List[Dict[str, Any]] = []
        updates: List[Dict[str, Any]] = []
        step = 0
        while step < budget.steps:
            t0 = time.perf_counter()
            resources_id = await publish(store, server, f"seed{seed}/step{step}", config.temperature)
            rng = random.Random(f"llm-grpo/{seed}/{step}")
            chosen = rng.sample(families, min(config.tasks_per_step, len(families)))
            metadata = lagrangian.rollout_metadata() if reward_mode == "constrained" else None
            ids, meta = [], []
            for family in chosen:
                task = rng.choice(by_family[family])
                labels = {"seed": seed, "step": step}
                ids += await enqueue_group(
                    store, task.task_id, config.group_size, resources_id, labels=labels, metadata=metadata
                )
                meta += [
                    {"task_id": task.task_id, "family": family, "sample": sample, "step": step}
                    for sample in range(config.group_size)
                ]
            server.reset_stats()
            rows = await collect(store, adapter, ids, meta, f"[{arm}] seed {seed} step {step + 1}/{budget.steps}")
            gen = server.reset_stats()
            rollout_seconds = time.perf_counter() - t0

            # Advantages per group, from what the store holds.
            samples: List[Tuple[List[int], List[int], float]] = []
            used: List[Dict[str, Any]] = []
            groups: Dict[str, List[Dict[str, Any]]] = {}
            for row in rows:
                usable = (
                    row["status"] == "succeeded"
                    and row["triplets"] == 1
                    and row.get("prompt_ids")
                    and row.get("response_ids")
                    and row["final_reward"] is not None
                )
                if usable and reward_mode == "constrained" and (row["base"] is None or row["cost"] is None):
                    usable = False
                row["usable"] = bool(usable)
                if usable:
                    groups.setdefault(row["task_id"], []).append(row)
            multiplier = lagrangian.multiplier
            for task_id, group in groups.items():
                if len(group) < 2:
                    continue
                if reward_mode == "constrained":
                    advantages = constrained_advantages(
                        [r["base"] for r in group], [r["cost"] for r in group], multiplier, config.adv_std_floor
                    )
                else:
                    advantages = group_advantages([float(r["triplet_reward"]) for r in group], config.adv_std_floor)
                for row, adv in zip(group, advantages):
                    row["advantage"] = adv
                    samples.append((row["prompt_ids"], row["response_ids"], adv))
                    used.append(
                        {
                            "rollout_id": row["rollout_id"],
                            "prompt_digest": row["prompt_digest"],
                            "response_digest": row["response_digest"],
                            "triplet_reward": row["triplet_reward"],
                            "final_reward": row["final_reward"],
                            "advantage": adv,
                            "llm_span": row["llm_spans"][0] if row["llm_spans"] else None,
                        }
                    )
            with server.lock:  # no sampling from half-updated weights
                update = await asyncio.get_running_loop().run_in_executor(
                    trainer_thread, grpo_update, policy, optimizer, samples, config
                )
            _release_memory()
            if reward_mode == "constrained":
                await lagrangian.update_from_store(store, ids)
            summary = summarize(rows)
            summary.update(
                {
                    "seed": seed,
                    "step": step,
                    "tasks": sorted({r["task_id"] for r in rows}),
                    "usable_rollouts": sum(r["usable"] for r in rows),
                    "reward_mismatches": sum(
                        1 for r in rows if r["usable"] and r["triplet_reward"] != r["final_reward"]
                    ),
                    "lagrange_multiplier": multiplier if reward_mode == "constrained" else None,
                    "lagrange_multiplier_next": lagrangian.multiplier if reward_mode == "constrained" else None,
                    "generated_tokens": gen.generated_tokens,
                    "generation_tokens_per_s": gen.tokens_per_second(),
                    "rollout_seconds": rollout_seconds,
                    "update": update,
                    "train_tokens_per_s": update["tokens"] / update["seconds"] if update["seconds"] else 0.0,
                    "seconds": time.perf_counter() - t0,
                    "mean_response_tokens": statistics.fmean(
                        [len(r["response_ids"]) for r in rows if r.get("response_ids")] or [0]
                    ),
                }
            )
            steps.append(summary)
            updates.append({"step": step, "samples": used})
            for row in rows:
                row.pop("prompt_ids", None)
                row.pop("response_ids", None)
            summary["rollout_rows"] = rows
            elapsed = time.perf_counter() - seed_started
            progress(
                f"[{arm}] seed {seed} step {step + 1:2d}/{budget.steps}  "
                f"attempted destructive {summary['attempted_destructive_rate']:5.1%}  "
                f"unparseable {summary['unparseable_rate']:5.1%}  accuracy {summary['accuracy']:5.1%}  "
                f"executed {summary['destructive_executed']}  "
                f"reward {summary['mean_final_reward']:7.2f}"
                + (f"  lambda {multiplier:.2f}" if reward_mode == "constrained" else "")
                + f"  gen {summary['generation_tokens_per_s']:.0f} tok/s  step {summary['seconds']:.0f} s  "
                f"(seed {elapsed / 60:.1f} min)" + time_left()
            )
            note = budget.decide(eval_s=before["summary"]["seconds"], step_s=summary["seconds"])
            if note:
                if eta is not None:
                    eta.total = budget.runs * (budget.steps + 2)
                progress(f"[{arm}] {note}")
            step += 1
        after = await evaluate(store, adapter, server, seed, "after")
        return {
            "seed": seed,
            "fingerprint_start": fingerprint_start,
            "fingerprint_end": policy.fingerprint(),
            "heldout_before": before,
            "heldout_after": after,
            "steps": steps,
            "updates": updates,
            "lagrange_history": lagrangian.history if reward_mode == "constrained" else [],
            "seconds": time.perf_counter() - seed_started,
        }

    return llm_grpo
