"""Which rollouts had violations: read from a store (in-memory, or an ``agl store`` by URL).

The ``agl store`` dashboard's rollouts table shows ids, input, status, mode, resources, times and
worker: nothing a runner can set says "this rollout had a violation" (see docs/audit.md). This
module lists them, with a link to each rollout's traces view, where the violation spans are::

    python -m agentlightning.contrib.runner.agentos violations --store-url http://127.0.0.1:4747
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any, Dict, List, Optional, Sequence

from agentlightning.emitter import find_final_reward
from agentlightning.store.base import LightningStore

from agentlightning.contrib.kernel.agentos.agl03.stats import governance_spans
from agentlightning.contrib.kernel.agentos.agl03.store_errors import unreachable_store
from agentlightning.contrib.kernel.agentos.semconv import (
    AGENTOS_PENALTY,
    AGENTOS_POLICY_NAME,
    AGENTOS_SEVERITY,
)

__all__ = ["RolloutViolations", "rollout_violations_report", "main"]


@dataclass
class RolloutViolations:
    """One rollout's governance, from the spans of its latest attempt."""

    rollout_id: str
    attempt_id: Optional[str]
    status: str
    mode: Optional[str]
    checks: int
    violations: int
    total_penalty: float
    final_reward: Optional[float]
    by_policy: Dict[str, int] = field(default_factory=dict)

    def traces_url(self, store_url: str) -> str:
        """This rollout's traces view in the ``agl store`` dashboard served at ``store_url``."""
        return f"{store_url.rstrip('/')}/traces?rolloutId={self.rollout_id}"


async def rollout_violations_report(
    store: LightningStore, rollout_ids: Optional[Sequence[str]] = None, *, only_violating: bool = True
) -> List[RolloutViolations]:
    """The governance of each rollout in ``store`` (or of ``rollout_ids``), newest first; by default
    only the rollouts whose latest attempt has at least one violation span.

    >>> import asyncio
    >>> from agentlightning.store.memory import InMemoryLightningStore
    >>> asyncio.run(rollout_violations_report(InMemoryLightningStore()))
    []
    """
    rollouts = (
        await store.query_rollouts(rollout_id_in=list(rollout_ids))
        if rollout_ids is not None
        else await store.query_rollouts()
    )
    return await _rows(store, rollouts, only_violating)


async def _rows(store: LightningStore, rollouts: Sequence[Any], only_violating: bool) -> List[RolloutViolations]:
    rows: List[RolloutViolations] = []
    for rollout in sorted(rollouts, key=lambda r: (r.start_time or 0.0, r.rollout_id), reverse=True):
        spans = await store.query_spans(rollout.rollout_id, "latest")
        found = governance_spans(spans)
        if only_violating and not found.violations:
            continue
        by_policy = Counter(
            f"{attributes.get(AGENTOS_POLICY_NAME)} ({attributes.get(AGENTOS_SEVERITY)})"
            for attributes in found.violations
        )
        rows.append(
            RolloutViolations(
                rollout_id=rollout.rollout_id,
                attempt_id=spans[-1].attempt_id if spans else None,
                status=str(rollout.status),
                mode=rollout.mode,
                checks=len(found.checks),
                violations=len(found.violations),
                total_penalty=sum(float(attributes.get(AGENTOS_PENALTY) or 0.0) for attributes in found.violations),
                final_reward=find_final_reward(spans),
                by_policy=dict(by_policy),
            )
        )
    return rows


def _format(rows: List[RolloutViolations], store_url: str, total: int) -> str:
    lines = [f"{len(rows)} of {total} rollouts had violations"]
    if rows:
        lines.append(
            f"{'rollout':18} {'status':10} {'checks':>6} {'violations':>10} {'penalty':>9} {'reward':>8}  policies"
        )
        for row in rows:
            reward = "-" if row.final_reward is None else f"{row.final_reward:.2f}"
            policies = ", ".join(f"{name} x{count}" for name, count in row.by_policy.items())
            lines.append(
                f"{row.rollout_id:18} {row.status:10} {row.checks:>6} {row.violations:>10} "
                f"{row.total_penalty:>9.1f} {reward:>8}  {policies}"
            )
            lines.append(f"  {row.traces_url(store_url)}")
    return "\n".join(lines)


async def _report(store_url: str, show_all: bool) -> tuple:
    from agentlightning.store.client_server import LightningStoreClient

    client = LightningStoreClient(store_url)
    try:
        rollouts = await client.query_rollouts()
        return await _rows(client, rollouts, only_violating=not show_all), len(rollouts)
    finally:
        await client.close()


def main(argv: Optional[List[str]] = None) -> int:
    """``python -m agentlightning.contrib.runner.agentos violations --store-url URL``."""
    parser = argparse.ArgumentParser(
        prog="python -m agentlightning.contrib.runner.agentos",
        description=(
            "Governance of the rollouts in an agl store: which had violations, with links to their traces view."
        ),
    )
    commands = parser.add_subparsers(dest="command", required=True)
    violations = commands.add_parser("violations", help="list the rollouts whose latest attempt has violation spans")
    violations.add_argument("--store-url", required=True, help="URL of the agl store, e.g. http://127.0.0.1:4747")
    violations.add_argument("--all", action="store_true", help="list every rollout, with or without violations")
    violations.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = parser.parse_args(argv)
    try:
        rows, total = asyncio.run(_report(args.store_url, args.all))
    except Exception as err:  # noqa: BLE001 - one clear line instead of a client traceback
        print(unreachable_store("read", args.store_url, err), file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps([{**asdict(row), "traces_url": row.traces_url(args.store_url)} for row in rows], indent=1))
    else:
        print(_format(rows, args.store_url, total))
    return 0
