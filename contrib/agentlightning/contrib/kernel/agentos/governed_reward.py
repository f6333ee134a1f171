"""The governed reward of a rollout (or of one environment step): its type and its span.

:class:`GovernedReward` is what the reward package's ``shape_reward`` returns and what the runner
and the environment write: ``final = clamp(base + policy_penalty + clean_bonus)``, decomposed,
with the constraint ``cost`` kept beside it (never folded into ``final``). It lives in the kernel
so that every room above it (runner, reward, environment) can write and read the same reward
span without importing each other.

The span is one multi-dimensional agentlightning reward span (primary dimension ``final``, then
``base``, ``policy_penalty``, ``clean_bonus``), built by agentlightning's own ``emit_reward``,
tagged ``agentos.reward`` and named for people (``agentos.reward: final 6.0 (base 1.0, ...)``).
Attribute and dimension names are constants in :mod:`.semconv`.

>>> import asyncio
>>> from agentlightning.emitter import find_final_reward
>>> from agentlightning.store.memory import InMemoryLightningStore
>>> from agentlightning.contrib.kernel.agentos.spans import add_spans
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

from dataclasses import dataclass
from typing import Any, Dict, Optional

from agentlightning.emitter import emit_reward
from agentlightning.types.tracer import SpanCoreFields
from agentlightning.utils.otel import make_tag_attributes

from .semconv import (
    AGENTOS_COST,
    AGENTOS_KIND,
    AGENTOS_LAGRANGE_MULTIPLIER,
    AGENTOS_REWARD_CLAMPED,
    AGENTOS_REWARD_TAG,
    AGENTOS_VIOLATION_COUNT,
    KIND_REWARD,
    REWARD_BASE,
    REWARD_CLEAN_BONUS,
    REWARD_FINAL,
    REWARD_POLICY_PENALTY,
    REWARD_SPAN_NAME,
)
from .spans import annotation_span, readable_number

__all__ = ["GovernedReward", "reward_span_name", "reward_core_fields", "emit_reward_span", "is_governed_reward_span"]


@dataclass(frozen=True)
class GovernedReward:
    """One rollout's (or one step's) governed reward, decomposed.

    ``final = clamp(base + policy_penalty + clean_bonus)``; ``cost`` is the constraint cost kept
    separate from the reward, ``clamped`` says whether a bound was hit.

    >>> r = GovernedReward(final=-100.0, base=1.0, policy_penalty=-200.0, clean_bonus=0.0, cost=20.0,
    ...                    violation_count=2, clamped=True)
    >>> r.dimensions()
    {'final': -100.0, 'base': 1.0, 'policy_penalty': -200.0, 'clean_bonus': 0.0}
    >>> r.span_attributes()[AGENTOS_COST], r.span_attributes()[AGENTOS_VIOLATION_COUNT]
    (20.0, 2)
    """

    final: float
    base: float
    policy_penalty: float
    clean_bonus: float
    cost: float
    violation_count: int
    clamped: bool = False
    lagrange_multiplier: Optional[float] = None

    def dimensions(self) -> Dict[str, float]:
        """The reward dimensions, ``final`` first (agentlightning's primary dimension)."""
        return {
            REWARD_FINAL: self.final,
            REWARD_BASE: self.base,
            REWARD_POLICY_PENALTY: self.policy_penalty,
            REWARD_CLEAN_BONUS: self.clean_bonus,
        }

    def span_attributes(self) -> Dict[str, Any]:
        """Attributes of the reward span besides the reward dimensions."""
        attributes: Dict[str, Any] = {
            AGENTOS_KIND: KIND_REWARD,
            AGENTOS_COST: self.cost,
            AGENTOS_VIOLATION_COUNT: self.violation_count,
            AGENTOS_REWARD_CLAMPED: self.clamped,
            **make_tag_attributes([AGENTOS_REWARD_TAG]),
        }
        if self.lagrange_multiplier is not None:
            attributes[AGENTOS_LAGRANGE_MULTIPLIER] = self.lagrange_multiplier
        return attributes

    def to_dict(self) -> Dict[str, Any]:
        """JSON-ready form (stored in the attempt's metadata)."""
        data = {
            **self.dimensions(),
            "cost": self.cost,
            "violation_count": self.violation_count,
            "clamped": self.clamped,
        }
        if self.lagrange_multiplier is not None:
            data["lagrange_multiplier"] = self.lagrange_multiplier
        return data


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
    with :func:`~agentlightning.contrib.kernel.agentos.spans.add_spans`."""
    fields = emit_reward(reward.dimensions(), primary_key=REWARD_FINAL, attributes=reward.span_attributes(), propagate=False)
    return fields.model_copy(update={"name": reward_span_name(reward)})


def emit_reward_span(reward: GovernedReward) -> SpanCoreFields:
    """Send the reward span of ``reward`` to the active tracer (inside a rollout)."""
    fields = emit_reward(reward.dimensions(), primary_key=REWARD_FINAL, attributes=reward.span_attributes(), propagate=False)
    return annotation_span(reward_span_name(reward), dict(fields.attributes))


def is_governed_reward_span(span: Any) -> bool:
    """True for the reward span written from a :class:`GovernedReward`.

    >>> from types import SimpleNamespace
    >>> is_governed_reward_span(SimpleNamespace(attributes={"agentos.kind": "reward"}))
    True
    """
    return (getattr(span, "attributes", None) or {}).get(AGENTOS_KIND) == KIND_REWARD
