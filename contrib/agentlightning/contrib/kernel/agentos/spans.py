"""Governance spans as agentlightning ``Span`` objects, built without an active tracer.

Inside a runner, spans are emitted into the active trace. Everything else (a reward computed
after the rollout, a Gymnasium episode, an imported audit trail) builds the same spans here and
adds them to a ``LightningStore`` under a rollout and attempt of its choice.

>>> import asyncio
>>> from agentlightning.emitter import find_final_reward
>>> from agentlightning.store.memory import InMemoryLightningStore
>>> from agentlightning.contrib.kernel.agentos.semconv import GovernedReward
>>> async def demo():
...     store = InMemoryLightningStore()
...     attempted = await store.start_rollout("task")
...     reward = GovernedReward(final=6.0, base=1.0, policy_penalty=0.0, clean_bonus=5.0, cost=0.0, violation_count=0)
...     await add_spans(store, attempted.rollout_id, attempted.attempt.attempt_id, [reward_core_fields(reward)])
...     return find_final_reward(await store.query_spans(attempted.rollout_id, "latest"))
>>> asyncio.run(demo())
6.0
"""

from __future__ import annotations

from typing import List, Sequence

from agentlightning.emitter import emit_annotation, emit_reward
from agentlightning.store.base import LightningStore
from agentlightning.types import Span
from agentlightning.types.tracer import SpanCoreFields

from .actions import Decision
from .semconv import REWARD_FINAL, GovernedReward, check_span_attributes, violation_span_attributes

__all__ = ["decision_core_fields", "reward_core_fields", "add_spans"]


def decision_core_fields(decision: Decision) -> List[SpanCoreFields]:
    """The check span and one span per violation of ``decision`` (as the runner emits them)."""
    fields = [emit_annotation(check_span_attributes(decision), propagate=False)]
    fields += [emit_annotation(violation_span_attributes(decision, i), propagate=False) for i in range(len(decision.violations))]
    return fields


def reward_core_fields(reward: GovernedReward) -> SpanCoreFields:
    """The multi-dimensional reward span of ``reward`` (primary dimension ``final``)."""
    return emit_reward(reward.dimensions(), primary_key=REWARD_FINAL, attributes=reward.span_attributes(), propagate=False)


async def add_spans(store: LightningStore, rollout_id: str, attempt_id: str, fields: Sequence[SpanCoreFields]) -> List[Span]:
    """Add ``fields`` to ``store`` as spans of the attempt, in order, after any span already there."""
    if not fields:
        return []
    sequence_ids = await store.get_many_span_sequence_ids([(rollout_id, attempt_id)] * len(fields))
    spans = [
        Span.from_core_fields(core, rollout_id=rollout_id, attempt_id=attempt_id, sequence_id=sequence_id)
        for core, sequence_id in zip(fields, sequence_ids)
    ]
    await store.add_many_spans(spans)
    return spans
