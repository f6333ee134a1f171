"""What the driver asks the store: enqueue tasks, wait for them, read back their attempts and spans."""

from __future__ import annotations

import asyncio
import time
from typing import Any, Callable, Dict, List, Optional, Sequence

import agentlightning as agl
from agentlightning.store.client_server import LightningStoreClient

from agentlightning.contrib.adapter.agentos.spans import is_audit_span
from agentlightning.contrib.kernel.agentos import semconv
from agentlightning.contrib.kernel.agentos.agl03 import spans

#: Rollout statuses that end a rollout.
FINISHED = ("succeeded", "failed")


async def add_resources(store: LightningStoreClient) -> None:
    await store.add_resources({"prompt": agl.PromptTemplate(template="{task_index}", engine="f-string")})


async def enqueue_tasks(
    store: LightningStoreClient,
    tasks: Sequence[Dict[str, Any]],
    *,
    config: Optional[agl.RolloutConfig] = None,
    chunk: int = 500,
) -> List[str]:
    ids: List[str] = []
    for start in range(0, len(tasks), chunk):
        requests = [
            agl.EnqueueRolloutRequest(input=task, mode="train", config=config) for task in tasks[start : start + chunk]
        ]
        ids += [r.rollout_id for r in await store.enqueue_many_rollouts(requests)]
    return ids


async def count_finished(store: LightningStoreClient, ids: Sequence[str]) -> int:
    """How many of ``ids`` are succeeded or failed (exact; but agentlightning 0.3's in-memory store
    checks ``rollout_id_in`` by list membership per rollout, so with thousands of ids one call
    costs the server tens of milliseconds: poll with :func:`finished_in_store` instead)."""
    if not ids:
        return 0
    result = await store.query_rollouts(rollout_id_in=list(ids), status_in=list(FINISHED), limit=1)
    return result.total


async def finished_in_store(store: LightningStoreClient) -> int:
    """Succeeded or failed rollouts in the whole store (cheap: a status filter)."""
    return (await store.query_rollouts(status_in=list(FINISHED), limit=1)).total


async def wait_finished(
    store: LightningStoreClient,
    ids: Sequence[str],
    *,
    baseline: int,
    timeout: float,
    label: str,
    progress_every: float = 5.0,
    poll: float = 0.25,
    on_poll: Optional[Callable[[], Any]] = None,
) -> float:
    """Poll until every rollout in ``ids`` is succeeded or failed; returns the monotonic finish time.

    ``baseline`` is :func:`finished_in_store` before ``ids`` were enqueued: nothing else runs
    meanwhile, so finished rollouts beyond it are ours; the end is confirmed with the exact count.
    """
    t0 = last = time.monotonic()
    while True:
        done = await finished_in_store(store) - baseline
        now = time.monotonic()
        if on_poll is not None:
            await on_poll()
        if done >= len(ids):
            done = await count_finished(store, ids)
            if done >= len(ids):
                return now
        if now - last >= progress_every:
            print(f"[{label}] {done}/{len(ids)} rollouts finished, {done / (now - t0):.1f}/s", flush=True)
            last = now
        if now - t0 > timeout:
            raise TimeoutError(f"[{label}] only {done}/{len(ids)} rollouts finished after {timeout}s")
        await asyncio.sleep(poll)


def span_row(span: Any) -> Dict[str, Any]:
    a = span.attributes or {}
    return {
        "kind": a.get(semconv.AGENTOS_KIND),
        "is_check": spans.is_check_span(span),
        "is_violation": spans.is_violation_span(span),
        "attempt_id": span.attempt_id,
        "span_id": span.span_id,
        "verdict": a.get(semconv.AGENTOS_VERDICT),
        "policy": a.get(semconv.AGENTOS_POLICY_NAME),
        "severity": a.get(semconv.AGENTOS_SEVERITY),
        "description": a.get(semconv.AGENTOS_DESCRIPTION),
        "decision_id": a.get(semconv.AGENTOS_DECISION_ID),
        "index": a.get(semconv.AGENTOS_VIOLATION_INDEX),
        "audit": is_audit_span(span),
        "audit_blocked": a.get(semconv.AGENT_OS_BLOCKED),
    }


async def collect_rollouts(
    store: LightningStoreClient, ids: Sequence[str], *, concurrency: int = 8
) -> Dict[str, Dict[str, Any]]:
    """Each rollout's status, latest attempt and the spans of its latest attempt, from the store."""
    out: Dict[str, Dict[str, Any]] = {}
    for start in range(0, len(ids), 500):
        for rollout in await store.query_rollouts(rollout_id_in=list(ids[start : start + 500])):
            attempt = getattr(rollout, "attempt", None)
            out[rollout.rollout_id] = {
                "status": rollout.status,
                "attempt": None
                if attempt is None
                else {
                    "attempt_id": attempt.attempt_id,
                    "sequence_id": attempt.sequence_id,
                    "worker_id": attempt.worker_id,
                    "status": attempt.status,
                    "start_time": attempt.start_time,
                    "end_time": attempt.end_time,
                    "metadata": attempt.metadata,
                },
            }
    semaphore = asyncio.Semaphore(concurrency)

    async def spans_of(rollout_id: str) -> None:
        async with semaphore:
            out[rollout_id]["spans"] = [span_row(s) for s in await store.query_spans(rollout_id, "latest")]

    await asyncio.gather(*(spans_of(rid) for rid in out))
    return out
