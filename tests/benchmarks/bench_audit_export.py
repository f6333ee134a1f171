"""Cost of exporting a large Agent OS audit trail: 100k FlightRecorder records -> spans.

Writes N real kernel decisions (one in five blocked) to a real FlightRecorder file, spread over
rollouts of a real InMemoryLightningStore, then measures, each in a fresh measurement:

* ``get_spans``: reading + validating the records and building ``Span`` objects;
* ``export_to_file`` as JSON Lines (streamed, atomic);
* ``emit_to_store`` into the InMemoryLightningStore (awaited, idempotency checks included);
* ``verify_export`` of the JSON Lines file (hash recomputation for every record).

Reports records/s (timed without tracemalloc) and memory: the peak Python allocation of a second,
untimed run under tracemalloc, and the process RSS growth during the timed run (for the store,
which keeps every span, RSS growth is the memory the exported spans take).

Run:  python tests/benchmarks/bench_audit_export.py [--records 100000]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("AGENTOPS_LOGGING_TO_FILE", "False")
os.environ.setdefault("AGENTOPS_LOG_LEVEL", "ERROR")

import psutil  # noqa: E402

from agentlightning.store.memory import InMemoryLightningStore  # noqa: E402

from agentlightning.contrib.adapter.agentos import FlightRecorderAdapter, verify_export  # noqa: E402
from agentlightning.contrib.kernel.agentos import ActionContext, GovernanceKernel, SQLPolicy, governance_context
from agentlightning.contrib.kernel.agentos.audit import open_flight_recorder

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_common import environment, print_table  # noqa: E402


async def _make_rollouts(store: InMemoryLightningStore, n: int):
    return [(a.rollout_id, a.attempt.attempt_id) for a in [await store.start_rollout(f"task-{i}") for i in range(n)]]


def write_records(path: Path, targets, n: int) -> float:
    kernel = GovernanceKernel(
        [SQLPolicy(deny=["DROP", "DELETE"])], recorder=open_flight_recorder(path, batch_size=1000)
    )
    per_rollout = max(1, n // len(targets))
    started = time.perf_counter()
    for i in range(n):
        rollout_id, attempt_id = targets[min(i // per_rollout, len(targets) - 1)]
        with governance_context(
            ActionContext(agent_id=f"worker-{i % 4}", rollout_id=rollout_id, attempt_id=attempt_id)
        ):
            kernel.check(
                "database_query", {"query": "DROP TABLE t" if i % 5 == 0 else f"SELECT * FROM users WHERE id = {i}"}
            )
    kernel.close()
    return time.perf_counter() - started


def measure(label: str, fn, n: int, *, memory: bool = True):
    """Time ``fn`` (no tracer attached), then, if ``memory``, run it again under tracemalloc for
    its peak Python allocation (tracemalloc slows the code, so it is not timed)."""
    rss_before = psutil.Process().memory_info().rss
    started = time.perf_counter()
    result = fn()
    elapsed = time.perf_counter() - started
    rss_growth = (psutil.Process().memory_info().rss - rss_before) / 2**20
    peak = float("nan")
    if memory:
        tracemalloc.start()
        fn()
        peak = tracemalloc.get_traced_memory()[1] / 2**20
        tracemalloc.stop()
    return [label, n / elapsed, elapsed, peak, rss_growth], result


def main(argv=None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--rollouts", type=int, default=1000)
    args = parser.parse_args(argv)
    n = args.records
    workdir = Path(tempfile.mkdtemp(prefix="bench-audit-"))
    store = InMemoryLightningStore()
    targets = asyncio.run(_make_rollouts(store, args.rollouts))
    write_s = write_records(workdir / "audit.db", targets, n)
    print(environment("agentlightning", "agent-os-kernel"))
    print(
        f"records: {n:,} in {len(targets)} rollouts, written in {write_s:.1f} s ({n / write_s:,.0f} decisions/s); "
        f"file {os.path.getsize(workdir / 'audit.db') / 2**20:.1f} MiB"
    )
    adapter = FlightRecorderAdapter(workdir / "audit.db")
    rows = []
    row, spans = measure("get_spans (read+validate+Span)", adapter.get_spans, n)
    rows.append(row)
    assert len(spans) == n
    del spans
    out = workdir / "trail.jsonl"
    row, count = measure("export_to_file (JSON Lines)", lambda: adapter.export_to_file(out), n)
    rows.append(row)
    assert count == n
    # The store keeps what it is given, so its step is measured once: RSS growth is the memory it takes.
    row, added = measure(
        "emit_to_store (InMemoryLightningStore)", lambda: asyncio.run(adapter.emit_to_store(store)), n, memory=False
    )
    rows.append(row)
    assert added == n, added
    row, again = measure(
        "emit_to_store again (nothing new)", lambda: asyncio.run(adapter.emit_to_store(store)), n, memory=False
    )
    rows.append(row)
    assert again == 0
    row, verdict = measure("verify_export (JSON Lines)", lambda: verify_export(out), n)
    rows.append(row)
    assert verdict["valid"], verdict
    print(f"JSON Lines file: {out.stat().st_size / 2**20:.1f} MiB")
    print_table(["step", "records/s", "seconds", "peak MiB (tracemalloc)", "RSS growth MiB"], rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
