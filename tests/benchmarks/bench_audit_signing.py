"""CPU per decision of the durable audit trail with per-host signing off and on, side by side.

Run it on demand (pytest does not collect ``tests/benchmarks``)::

    python tests/benchmarks/bench_audit_signing.py                    # 2000 decisions per row, 3 rounds
    python tests/benchmarks/bench_audit_signing.py --n 5000 --rounds 5 --threads 8

Each row is one audited kernel (``SQLPolicy(deny=["DROP"])``, the parse cache warm, one decision
in ten blocked, every allowed one given an outcome) writing ``--n`` decisions to a fresh
FlightRecorder file with the default durability (each record committed before ``check`` returns,
``synchronous=FULL``) from ``--threads`` threads. The process's CPU time (``time.process_time``:
every thread, the writer's included) and the wall time are taken around the decisions and the
final flush. Rows: no key; the host's Ed25519 key (one signature per commit); the shared audit
key (an HMAC seal per record and per head); both. The configurations run interleaved in rounds
(``--rounds``), so a noisy shared machine slows them alike; figures are medians over the rounds.
The last column is the verifier's time for the file with the keyring (``verify_file``).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_common import print_table  # noqa: E402

from agentlightning.contrib.kernel.agentos import Action, GovernanceKernel, SQLPolicy  # noqa: E402
from agentlightning.contrib.kernel.agentos.audit import AuditTrail, open_flight_recorder  # noqa: E402
from agentlightning.contrib.kernel.agentos.audit.seal import verify_file  # noqa: E402
from agentlightning.contrib.kernel.agentos.audit.signing import Keyring, SigningKey  # noqa: E402

AUDIT_KEY = "k" * 64


def run(path: Path, n: int, threads: int, key: Optional[str], signing_key: Optional[SigningKey]) -> Dict[str, float]:
    trail = AuditTrail(open_flight_recorder(path), key=key, signing_key=signing_key)
    kernel = GovernanceKernel([SQLPolicy(deny=["DROP"])], recorder=trail)
    actions = [Action.sql("DROP TABLE t" if i % 10 == 0 else f"SELECT {i % 50} FROM users") for i in range(n)]
    for action in actions[:50]:
        kernel.check(action)  # the parse cache warm, the writer thread started
    trail.flush()
    share = [actions[i::threads] for i in range(threads)]

    def work(mine: List[Any]) -> None:
        for action in mine:
            decision = kernel.check(action)
            if decision.allowed:
                kernel.record_outcome(decision, result="1 row", execution_time_ms=0.1)

    workers = [threading.Thread(target=work, args=(mine,)) for mine in share]
    cpu, wall = time.process_time(), time.perf_counter()
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    trail.flush()
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    kernel.close()
    keyring = Keyring.of(signing_key) if signing_key is not None else None
    started = time.perf_counter()
    result = verify_file(path, key=key, keyring=keyring)
    verify_s = time.perf_counter() - started
    assert result["valid"] and result["signed"] == (signing_key is not None), result
    return {"cpu_us": cpu / n * 1e6, "wall_us": wall / n * 1e6, "verify_s": verify_s}


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=2000, help="decisions per row")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--dir", default=None, help="where the audit files go (default: a temporary directory)")
    args = parser.parse_args(argv)
    host_key = SigningKey.generate("bench-host")
    configs = {
        "no key (durable, FULL)": (None, None),
        "host-signed head (Ed25519)": (None, host_key),
        "shared audit key (HMAC seals)": (AUDIT_KEY, None),
        "both": (AUDIT_KEY, host_key),
    }
    figures: Dict[str, List[Dict[str, float]]] = {name: [] for name in configs}
    with tempfile.TemporaryDirectory(dir=args.dir) as workdir:
        for round_number in range(args.rounds):
            for index, (name, (key, signing_key)) in enumerate(configs.items()):
                path = Path(workdir) / f"r{round_number}-{index}.db"
                figures[name].append(run(path, args.n, args.threads, key, signing_key))
    rows = []
    base = statistics.median(f["cpu_us"] for f in figures["no key (durable, FULL)"])
    for name, runs in figures.items():
        cpu = statistics.median(f["cpu_us"] for f in runs)
        rows.append(
            [
                name,
                f"{cpu:,.0f} us",
                f"{cpu - base:+,.0f} us",
                f"{statistics.median(f['wall_us'] for f in runs):,.0f} us",
                f"{statistics.median(f['verify_s'] for f in runs) * 1e3:,.0f} ms",
            ]
        )
    print(f"{args.n} decisions per row, {args.threads} thread(s), {args.rounds} round(s), medians")
    print_table(["audit trail", "CPU per decision", "vs no key", "wall per decision", "verify_file"], rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
