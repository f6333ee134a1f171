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

from typing import Any, Dict, List, Sequence

from agentlightning.emitter import emit_reward
from agentlightning.store.base import LightningStore
from agentlightning.tracer.base import get_active_tracer
from agentlightning.tracer.dummy import DummyTracer
from agentlightning.types import Span, TraceStatus
from agentlightning.types.tracer import SpanCoreFields
from agentlightning.utils.otel import check_attributes_sanity, flatten_attributes, sanitize_attributes

from .actions import Decision
from .semconv import (
    REWARD_FINAL,
    GovernedReward,
    check_span_attributes,
    check_span_name,
    reward_span_name,
    violation_span_attributes,
    violation_span_name,
)

__all__ = ["annotation_span", "decision_core_fields", "emit_decision_spans", "emit_reward_span", "reward_core_fields", "add_spans"]


def annotation_span(name: str, annotation: Dict[str, Any], *, propagate: bool = True) -> SpanCoreFields:
    """An annotation span called ``name``: agentlightning's ``emit_annotation`` with a name.

    The attributes are flattened, checked and sanitised by agentlightning's own helpers, exactly
    as ``emit_annotation`` does; only the span name differs (``emit_annotation`` always writes
    ``agentlightning.annotation``, which the dashboard cannot tell apart). With ``propagate`` the
    span goes to the active tracer (inside a rollout); without, it is only built, to be added to a
    store with :func:`add_spans`.

    >>> annotation_span("agentos.check: allowed t", {"agentos.kind": "check"}, propagate=False).name
    'agentos.check: allowed t'
    """
    attributes = flatten_attributes(annotation, expand_leaf_lists=False)
    check_attributes_sanity(attributes)
    attributes = sanitize_attributes(attributes)
    tracer = get_active_tracer() if propagate else DummyTracer()
    if tracer is None:
        raise RuntimeError(f"No active tracer found. Cannot emit the span {name!r} outside a rollout; build it with propagate=False.")
    return tracer.create_span(name=name, attributes=attributes, status=TraceStatus(status_code="OK"))


def decision_core_fields(decision: Decision) -> List[SpanCoreFields]:
    """The check span and one span per violation of ``decision`` (as the runner emits them)."""
    fields = [annotation_span(check_span_name(decision), check_span_attributes(decision), propagate=False)]
    fields += [
        annotation_span(violation_span_name(decision, i), violation_span_attributes(decision, i), propagate=False)
        for i in range(len(decision.violations))
    ]
    return fields


def emit_decision_spans(decision: Decision) -> None:
    """Send the check span and one span per violation of ``decision`` to the active tracer."""
    annotation_span(check_span_name(decision), check_span_attributes(decision))
    for index in range(len(decision.violations)):
        annotation_span(violation_span_name(decision, index), violation_span_attributes(decision, index))


def reward_core_fields(reward: GovernedReward) -> SpanCoreFields:
    """The multi-dimensional reward span of ``reward`` (primary dimension ``final``), built by
    agentlightning's ``emit_reward`` and named :func:`reward_span_name`."""
    fields = emit_reward(reward.dimensions(), primary_key=REWARD_FINAL, attributes=reward.span_attributes(), propagate=False)
    return fields.model_copy(update={"name": reward_span_name(reward)})


def emit_reward_span(reward: GovernedReward) -> SpanCoreFields:
    """Send the reward span of ``reward`` to the active tracer (inside a rollout)."""
    fields = emit_reward(reward.dimensions(), primary_key=REWARD_FINAL, attributes=reward.span_attributes(), propagate=False)
    return annotation_span(reward_span_name(reward), dict(fields.attributes))


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
