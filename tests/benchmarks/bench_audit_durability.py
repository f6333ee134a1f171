"""Allowed-decision latency and throughput of the audit trail: durable (group commit) next to queued.

Run it on demand (pytest does not collect ``tests/benchmarks``)::

    python tests/benchmarks/bench_audit_durability.py                 # 3000 decisions per row
    python tests/benchmarks/bench_audit_durability.py --n 5000 --threads 1 8 32 --dir /tmp

Each row is one audited kernel (``SQLPolicy(deny=["DROP"])``, the parse cache warm, one decision
in ten blocked) writing ``--n`` decisions to a fresh FlightRecorder file from ``T`` threads at
once. Per check: ``time.perf_counter_ns`` around ``kernel.check``; the table gives the median and
p99 of the *allowed* checks and the throughput (decisions / wall time, all threads). Rows:

* ``before (queued writer at the base commit)`` -- the audit trail as it was before this design,
  loaded from git (``--base``): allowed records queued, committed when the writer's queue runs dry.
* ``queued (opt-out)`` -- ``AuditTrail(..., durability="queued")``: the same promise, this writer.
* ``durable synchronous=FULL`` (the default) / ``durable synchronous=NORMAL`` -- every record
  committed before ``check`` returns; FULL fsyncs the WAL at each commit (a group shares one),
  NORMAL survives a process crash but not a power loss.
* ``durable synchronous=FULL, sealed (key)`` -- the default with an audit key: each record's
  seal and the signed head are written in the same transaction.

The configurations of one thread count run interleaved in rounds (``--rounds``), so a noisy
shared machine slows them alike; figures are over all rounds. Timing targets are not asserted.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import types
from pathlib import Path
from typing import Any, Callable, Dict, List

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_common import print_table  # noqa: E402

from agentlightning.contrib.kernel.agentos import Action, GovernanceKernel, SQLPolicy  # noqa: E402
from agentlightning.contrib.kernel.agentos.audit import AuditTrail, open_flight_recorder  # noqa: E402

BASE = "734b4a3"
AUDIT_MODULE = "contrib/agentlightning/contrib/kernel/agentos/audit.py"


def trail_before(base: str) -> Callable[[Any], Any]:
    """The ``AuditTrail`` class of ``audit.py`` at commit ``base``."""
    root = Path(__file__).resolve().parents[2]
    source = subprocess.run(
        ["git", "show", f"{base}:{AUDIT_MODULE}"], cwd=root, capture_output=True, text=True, check=True
    ).stdout
    module = types.ModuleType("agentlightning.contrib.kernel.agentos._audit_before")
    module.__package__ = "agentlightning.contrib.kernel.agentos"
    exec(compile(source, f"audit.py@{base}", "exec"), module.__dict__)
    return module.AuditTrail


def run_row(make_trail: Callable[[Path], Any], directory: Path, n: int, threads: int) -> Dict[str, Any]:
    path = directory / f"audit-{time.monotonic_ns()}.db"
    policy = SQLPolicy(deny=["DROP"])
    kernel = GovernanceKernel([policy])
    kernel.audit = make_trail(path)
    queries = [Action.sql("DROP TABLE t" if i % 10 == 9 else f"SELECT {i % 10} FROM t") for i in range(10)]
    for action in queries:
        GovernanceKernel([policy]).check(action)  # warm the parse cache
    per_thread = n // threads
    latencies: List[List[int]] = [[] for _ in range(threads)]
    start = threading.Barrier(threads + 1)

    def work(index: int) -> None:
        out = latencies[index]
        start.wait()
        for i in range(per_thread):
            action = queries[i % 10]
            began = time.perf_counter_ns()
            decision = kernel.check(action)
            took = time.perf_counter_ns() - began
            if decision.allowed:
                out.append(took)

    workers = [threading.Thread(target=work, args=(i,)) for i in range(threads)]
    for worker in workers:
        worker.start()
    start.wait()
    began = time.perf_counter()
    for worker in workers:
        worker.join()
    wall = time.perf_counter() - began
    kernel.audit.flush()
    records = len(kernel.audit.recorder.get_log())
    kernel.audit.close()
    allowed = sorted(x for out in latencies for x in out)
    return {"allowed": allowed, "decisions": per_thread * threads, "wall": wall, "records": records}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=3000, help="decisions per row and round")
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 8])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--dir", default=None, help="where the recorder files go (default: a temp dir)")
    parser.add_argument("--base", default=BASE, help="the commit whose queued writer is 'before'")
    args = parser.parse_args()
    directory = Path(args.dir or tempfile.mkdtemp(prefix="bench-audit-"))
    before = trail_before(args.base)
    configs = {
        f"before (queued writer at {args.base})": lambda p: before(open_flight_recorder(p)),
        "queued (opt-out)": lambda p: AuditTrail(open_flight_recorder(p), durability="queued"),
        "durable synchronous=FULL (default)": lambda p: AuditTrail(open_flight_recorder(p)),
        "durable synchronous=NORMAL": lambda p: AuditTrail(open_flight_recorder(p), synchronous="NORMAL"),
        "durable synchronous=FULL, sealed (key)": lambda p: AuditTrail(open_flight_recorder(p), key="k" * 64),
    }
    df = subprocess.run(["df", "-T", str(directory)], capture_output=True, text=True).stdout.splitlines()
    print(f"recorder files in {directory} ({df[-1].split()[1] if df else 'file system unknown'})")
    for threads in args.threads:
        results: Dict[str, List[Dict[str, Any]]] = {name: [] for name in configs}
        for _ in range(args.rounds):
            for name, make in configs.items():
                results[name].append(run_row(make, directory, args.n, threads))
        rows = []
        for name, runs in results.items():
            allowed = sorted(x for r in runs for x in r["allowed"])
            decisions = sum(r["decisions"] for r in runs)
            wall = sum(r["wall"] for r in runs)
            assert all(r["records"] == r["decisions"] for r in runs), f"{name}: records missing"
            rows.append(
                [
                    name,
                    statistics.median(allowed) / 1000,
                    allowed[int(len(allowed) * 0.99)] / 1000,
                    decisions / wall,
                ]
            )
        print(f"\n{threads} thread(s), {args.n} decisions x {args.rounds} rounds per row (1 in 10 blocked)")
        print_table(["audit trail", "allowed median us", "allowed p99 us", "decisions/s"], rows)


if __name__ == "__main__":
    main()
