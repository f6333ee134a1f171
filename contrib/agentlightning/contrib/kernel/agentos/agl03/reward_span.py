"""The governed reward as an agentlightning 0.3 span (the 0.3 side of ``reward.formula``).

One multi-dimensional agentlightning reward span (primary dimension ``final``, then ``base``,
``policy_penalty``, ``clean_bonus``), built by agentlightning's own ``emit_reward``, tagged
``agentos.reward`` and named for people (``agentos.reward: final 6.0 (base 1.0, ...)``). Attribute
and dimension names are constants in the kernel's ``semconv``. Like :mod:`.spans` and :mod:`.stats`, this
module needs agentlightning 0.3 and is imported only by the 0.3 rooms (runner, reward, env).

>>> import asyncio
>>> from agentlightning.emitter import find_final_reward
>>> from agentlightning.store.memory import InMemoryLightningStore
>>> from agentlightning.contrib.kernel.agentos.agl03.spans import add_spans
>>> reward = GovernedReward(final=6.0, base=1.0, policy_penalty=0.0, clean_bonus=5.0, cost=0.0, violation_count=0)
>>> async def demo():
...     store = InMemoryLightningStore()
...     attempted = await store.start_rollout("task")
...     await add_spans(store, attempted.rollout_id, attempted.attempt.attempt_id, [reward_core_fields(reward)])
...     return find_final_reward(await store.query_spans(attempted.rollout_id, "latest"))
>>> asyncio.run(demo())
6.0
"""

from __future__ import annotations

from typing import Any, Dict

from agentlightning.emitter import emit_reward
from agentlightning.types.tracer import SpanCoreFields
from agentlightning.utils.otel import make_tag_attributes

from ..reward.formula import GovernedReward
from ..semconv import (
    AGENTOS_COST,
    AGENTOS_KIND,
    AGENTOS_LAGRANGE_MULTIPLIER,
    AGENTOS_REWARD_CLAMPED,
    AGENTOS_REWARD_TAG,
    AGENTOS_VIOLATION_COUNT,
    KIND_REWARD,
    REWARD_FINAL,
    REWARD_SPAN_NAME,
)
from .spans import annotation_span, readable_number, span_kind

__all__ = [
    "emit_reward_span",
    "is_governed_reward_span",
    "reward_core_fields",
    "reward_span_attributes",
    "reward_span_name",
]


def reward_span_attributes(reward: GovernedReward) -> Dict[str, Any]:
    """Attributes of the reward span besides the reward dimensions.

    >>> r = GovernedReward(final=-100.0, base=1.0, policy_penalty=-200.0, clean_bonus=0.0, cost=20.0,
    ...                    violation_count=2, clamped=True)
    >>> reward_span_attributes(r)[AGENTOS_COST], reward_span_attributes(r)[AGENTOS_VIOLATION_COUNT]
    (20.0, 2)
    """
    attributes: Dict[str, Any] = {
        AGENTOS_KIND: KIND_REWARD,
        AGENTOS_COST: reward.cost,
        AGENTOS_VIOLATION_COUNT: reward.violation_count,
        AGENTOS_REWARD_CLAMPED: reward.clamped,
        **make_tag_attributes([AGENTOS_REWARD_TAG]),
    }
    if reward.lagrange_multiplier is not None:
        attributes[AGENTOS_LAGRANGE_MULTIPLIER] = reward.lagrange_multiplier
    return attributes


def reward_span_name(reward: GovernedReward) -> str:
    """``agentos.reward: final <f> (base <b>, penalty <p>, bonus <c>[, clamped])``.

    >>> reward_span_name(GovernedReward(final=6.0, base=1.0, policy_penalty=0.0, clean_bonus=5.0, cost=0.0,
    ...                                 violation_count=0))
    'agentos.reward: final 6.0 (base 1.0, penalty 0.0, bonus 5.0)'
    """
    clamped = ", clamped" if reward.clamped else ""
    return (
        f"{REWARD_SPAN_NAME}: final {readable_number(reward.final)} (base {readable_number(reward.base)}, "
        f"penalty {readable_number(reward.policy_penalty)}, bonus {readable_number(reward.clean_bonus)}{clamped})"
    )


def reward_core_fields(reward: GovernedReward) -> SpanCoreFields:
    """The multi-dimensional reward span of ``reward`` (primary dimension ``final``), built by
    agentlightning's ``emit_reward`` and named :func:`reward_span_name`, to be added to a store
    with :func:`~agentlightning.contrib.kernel.agentos.agl03.spans.add_spans`."""
    fields = emit_reward(
        reward.dimensions(), primary_key=REWARD_FINAL, attributes=reward_span_attributes(reward), propagate=False
    )
    return fields.model_copy(update={"name": reward_span_name(reward)})


def emit_reward_span(reward: GovernedReward) -> SpanCoreFields:
    """Send the reward span of ``reward`` (:func:`reward_core_fields`) to the active tracer (inside a rollout)."""
    fields = reward_core_fields(reward)
    return annotation_span(fields.name, dict(fields.attributes))


def is_governed_reward_span(span: Any) -> bool:
    """True for the reward span written from a :class:`GovernedReward`.

    >>> from types import SimpleNamespace
    >>> is_governed_reward_span(SimpleNamespace(attributes={"agentos.kind": "reward"}))
    True
    """
    return span_kind(span) == KIND_REWARD
