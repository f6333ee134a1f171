"""Governance statistics computed from the store: the single source of truth across workers."""

from __future__ import annotations

from collections import Counter
from typing import Any, Dict, Iterable, List, Mapping, NamedTuple, Optional, Sequence

from agentlightning.store.base import LightningStore

from ..must_await import MustAwait
from ..semconv import (
    AGENTOS_DECISION_ID,
    AGENTOS_POLICY_NAME,
    AGENTOS_SEVERITY,
    AGENTOS_VERDICT,
    AGENTOS_VIOLATION_INDEX,
)
from .spans import is_check_span, is_violation_span

__all__ = ["governance_stats", "governance_spans", "GovernanceSpans"]


class GovernanceSpans(NamedTuple):
    """The governance spans among some spans, as attribute mappings."""

    checks: List[Mapping[str, Any]]  #: one per kernel check
    violations: List[Mapping[str, Any]]  #: one per violation (a span written twice counts once)
    duplicates: int  #: violation spans seen more than once (it should be 0)


def governance_spans(spans: Iterable[Any]) -> GovernanceSpans:
    """Sort ``spans`` into check and violation spans; a violation is identified by its attempt,
    decision and index, so a span written twice is counted once (and reported in ``duplicates``).

    >>> from types import SimpleNamespace
    >>> v = SimpleNamespace(attempt_id="a", attributes={"agentos.kind": "violation", "agentos.decision_id": "d"})
    >>> found = governance_spans([v, v, SimpleNamespace(attempt_id="a", attributes={"agentos.kind": "check"})])
    >>> len(found.checks), len(found.violations), found.duplicates
    (1, 1, 1)
    """
    checks: List[Mapping[str, Any]] = []
    violations: List[Mapping[str, Any]] = []
    seen = set()
    duplicates = 0
    for span in spans:
        attributes = span.attributes or {}
        if is_check_span(span):
            checks.append(attributes)
        elif is_violation_span(span):
            key = (span.attempt_id, attributes.get(AGENTOS_DECISION_ID), attributes.get(AGENTOS_VIOLATION_INDEX))
            if key in seen:
                duplicates += 1
            else:
                seen.add(key)
                violations.append(attributes)
    return GovernanceSpans(checks, violations, duplicates)


def governance_stats(
    store: LightningStore, rollout_ids: Optional[Sequence[str]] = None, *, attempt: str = "latest"
) -> "MustAwait":
    """Totals and rates of governance spans in ``store`` (in-memory, or a client of ``agl store``).

    Counts the latest attempt of each rollout by default (``attempt="all"`` for every attempt).
    The keys mean what they mean in every statistics of the package (``runner.get_stats()``,
    ``PolicyReward.get_stats()``): ``violation_rate`` is the fraction of rollouts with at least
    one violation, ``violations_per_rollout`` the mean number of violations per rollout.
    ``duplicate_spans`` counts violation spans seen more than once (it should be 0).

    >>> import asyncio
    >>> from agentlightning.store.memory import InMemoryLightningStore
    >>> asyncio.run(governance_stats(InMemoryLightningStore()))["total_rollouts"]
    0

    It is a coroutine (:class:`.must_await.MustAwait`): ``await governance_stats(store)``; used
    without ``await`` it says so instead of ``'coroutine' object is not subscriptable``.
    """
    return MustAwait(_governance_stats(store, rollout_ids, attempt), "governance_stats(store)", "nothing was counted")


async def _summarised_checks(store: LightningStore, rollout_id: str, attempt: str) -> Optional[int]:
    """The checks the attempts' governance summaries count (``metadata["agentos"]["checks"]``), or
    None when an attempt has none: a runner that stores spans for the decisions with violations only
    (``AgentOSRunner(check_spans="violations")``, the default) leaves the count of all its checks
    there, not in the spans."""
    if attempt == "latest":
        latest = await store.get_latest_attempt(rollout_id)
        attempts = [] if latest is None else [latest]
    else:
        attempts = list(await store.query_attempts(rollout_id))
    counts = [((a.metadata or {}).get("agentos") or {}).get("checks") for a in attempts]
    if not counts or not all(isinstance(count, int) for count in counts):
        return None
    return sum(counts)


async def _governance_stats(
    store: LightningStore, rollout_ids: Optional[Sequence[str]], attempt: str
) -> Dict[str, Any]:
    if attempt not in ("latest", "all"):
        raise ValueError(f"attempt must be 'latest' or 'all', got {attempt!r}")
    if rollout_ids is None:
        rollouts = await store.query_rollouts()
        rollout_ids = [r.rollout_id for r in rollouts]
    checks = violations = blocked = rollouts_with_violations = duplicates = 0
    by_policy: Counter = Counter()
    by_severity: Counter = Counter()
    for rollout_id in rollout_ids:
        spans = await store.query_spans(rollout_id, "latest" if attempt == "latest" else None)
        found = governance_spans(spans)
        summarised = await _summarised_checks(store, rollout_id, attempt)
        checks += len(found.checks) if summarised is None else summarised
        blocked += sum(attributes.get(AGENTOS_VERDICT) == "blocked" for attributes in found.checks)
        duplicates += found.duplicates
        for attributes in found.violations:
            by_policy[attributes.get(AGENTOS_POLICY_NAME)] += 1
            by_severity[attributes.get(AGENTOS_SEVERITY)] += 1
        violations += len(found.violations)
        rollouts_with_violations += bool(found.violations)
    total = len(rollout_ids)
    return {
        "total_rollouts": total,
        "total_checks": checks,
        "total_violations": violations,
        "blocked_actions": blocked,
        "rollouts_with_violations": rollouts_with_violations,
        "violation_rate": rollouts_with_violations / total if total else 0.0,
        "violations_per_rollout": violations / total if total else 0.0,
        "violations_by_policy": dict(by_policy),
        "violations_by_severity": dict(by_severity),
        "duplicate_spans": duplicates,
    }
