"""Governance CPU per governed rollout, against a given rate of model answers: how many cores it needs.

Run it on demand (pytest does not collect ``tests/benchmarks``)::

    python tests/benchmarks/bench_gpu_speed.py --answers-per-second 172 1000
    python tests/benchmarks/bench_gpu_speed.py --answers-per-second 172 1000 --rollouts 40 --rounds 6

A GPU serving the policy model produces answers at some rate (Hugging Face ``generate`` on an H200
gave 172 answers/s for a 135M model at batch 1,024; a serving engine gives several times more).
Each answer is one rollout with one governed tool call. This script measures what governance adds
to such a rollout on this machine's CPU, and states what that costs at the given rates.

Arms, each with its own runner and ``InMemoryLightningStore`` (the agent and tool of
``bench_runner_throughput.py``: one SQL query per rollout against a small SQLite database):

* ``plain LitAgentRunner`` -- the plain tool.
* ``AgentOSRunner + durable audit`` -- ``AgentOSRunner`` (default ``check_spans="violations"``)
  over a kernel with ``SQLPolicy`` and a durable audit trail (``recorder=``, the default
  ``synchronous=FULL``): every decision committed before its action runs.

Two workloads: ``first-seen`` (a new query every rollout: the SQL parse runs) and ``remembered``
(the same query every rollout: the kernel answers from its memory). The arms run interleaved in
rounds (order rotating); figures are medians over rounds of the process CPU time per rollout
(``time.process_time``: every thread, the audit writer's included). **Governance CPU per rollout**
is the governed arm's minus the plain arm's. At ``A`` answers/s, governance needs
``A x CPU per rollout`` cores (one core = one CPU-second per second); the table also gives the
share of the plain rollout worker's own CPU. With ``--base <commit>`` a third arm runs the same
governed runner with the ``AuditTrail`` of the audit at that commit (loaded from git), in the
same rounds: before and after side by side. Timing targets are not asserted.
"""

from __future__ import annotations

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("AGENTOPS_LOGGING_TO_FILE", "False")
os.environ.setdefault("AGENTOPS_LOG_LEVEL", "ERROR")

import argparse  # noqa: E402
import asyncio  # noqa: E402
import json  # noqa: E402
import logging  # noqa: E402
import random  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Dict, List, Optional  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_audit_durability import trail_before  # noqa: E402
from bench_common import print_table, require_at_least  # noqa: E402
from bench_runner_throughput import (  # noqa: E402
    TOOL,
    TaskPair,
    build_database,
    policy,
    read_query,
    run_sql,
    start_arm,
)

import agentlightning as agl  # noqa: E402

from agentlightning.contrib.kernel.agentos import GovernanceKernel  # noqa: E402
from agentlightning.contrib.kernel.agentos.audit import open_flight_recorder  # noqa: E402
from agentlightning.contrib.runner.agentos import AgentOSRunner, governed_tool  # noqa: E402


def tasks_for(workload: str, r: random.Random, count: int, db: str) -> List[TaskPair]:
    if workload == "remembered":
        query = "SELECT id, name, price FROM products WHERE category = 'books' ORDER BY price LIMIT 5"
        return [TaskPair({"db": db, "queries": [query]}, {"db": db, "queries": [query]}, False)] * count
    pairs = []
    for _ in range(count):
        query = f"{read_query(r)} -- {r.getrandbits(48):x}"  # never seen before, by the parse cache either
        pairs.append(TaskPair({"db": db, "queries": [query]}, {"db": db, "queries": [query]}, False))
    return pairs


async def measure(workload: str, rounds: int, rollouts: int, tmp: Path, base: Optional[str]) -> Dict[str, float]:
    db = tmp / f"shop-{workload}.db"
    build_database(db, 0)
    r = random.Random(0)
    kernel = GovernanceKernel([policy()], recorder=tmp / f"audit-{workload}.db")

    async def governed_arm(name: str, arm_kernel: GovernanceKernel):
        return await start_arm(
            name, AgentOSRunner(arm_kernel, log_violations=False), governed_tool(TOOL, run_sql), True, arm_kernel
        )

    arms = [
        await start_arm("plain", agl.LitAgentRunner(agl.AgentOpsTracer()), run_sql, governed=False),
        await governed_arm("governed", kernel),
    ]
    if base is not None:  # the same runner and kernel, with the AuditTrail of the audit at commit ``base``
        before = GovernanceKernel([policy()])
        before.audit = trail_before(base)(open_flight_recorder(tmp / f"audit-{workload}-before.db"))
        arms.append(await governed_arm("governed, audit before", before))
    try:
        warmup = tasks_for(workload, r, 10, str(db))
        for arm in arms:
            await arm.run_batch(warmup, counted=False)
        for index in range(rounds):
            tasks = tasks_for(workload, r, rollouts, str(db))
            shift = index % len(arms)
            for arm in arms[shift:] + arms[:shift]:
                await arm.run_batch(tasks, counted=True)
    finally:
        for arm in arms:
            arm.runner.teardown_worker(0)
            arm.runner.teardown()
    assert kernel.verify_audit()["valid"], "the audit trail does not verify"
    kernel.close()
    plain, governed, *before_ms = (statistics.median(arm.cpu_ms_per_rollout) for arm in arms)
    figures = {"plain_ms": plain, "governed_ms": governed, "governance_ms": governed - plain}
    if before_ms:
        arms[2].kernel.close()
        figures.update(before_governed_ms=before_ms[0], before_governance_ms=before_ms[0] - plain)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--answers-per-second",
        type=float,
        nargs="+",
        default=[172.0, 1000.0],
        metavar="A",
        help="model answers (governed rollouts) per second to state the cost at (default: 172 1000)",
    )
    parser.add_argument("--rollouts", type=int, default=30, help="rollouts per arm per round (default: 30)")
    parser.add_argument("--rounds", type=int, default=6, help="counted rounds, arms interleaved (default: 6)")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures to this file")
    parser.add_argument(
        "--base", default=None, help="also a governed arm whose AuditTrail is the audit's at this commit (from git)"
    )
    args = parser.parse_args()
    require_at_least(parser, args, rollouts=1, rounds=1)
    if any(not rate > 0 for rate in args.answers_per_second):
        parser.error("--answers-per-second must be positive numbers of answers per second")
    logging.getLogger("agentlightning").setLevel(logging.ERROR)
    figures: Dict[str, Dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-gpu-speed-", dir=".") as tmp:
        for workload in ("remembered", "first-seen"):
            figures[workload] = asyncio.run(measure(workload, args.rounds, args.rollouts, Path(tmp), args.base))
    print(
        f"\nCPU per rollout, one governed call, durable audit ({args.rounds} rounds x {args.rollouts} rollouts; "
        f"load {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs)"
    )
    print_table(
        ["check", "plain ms", "governed ms", "governance ms", "plain / governed"],
        [
            [w, f["plain_ms"], f["governed_ms"], f["governance_ms"], f["plain_ms"] / f["governed_ms"]]
            for w, f in figures.items()
        ]
        + [
            [
                f"{w}, audit {args.base}",
                f["plain_ms"],
                f["before_governed_ms"],
                f["before_governance_ms"],
                f["plain_ms"] / f["before_governed_ms"],
            ]
            for w, f in figures.items()
            if "before_governed_ms" in f
        ],
        float_format=",.3f",
    )
    rows = []
    for rate in args.answers_per_second:
        for workload, f in figures.items():
            cores = rate * f["governance_ms"] / 1000
            rows.append([f"{rate:,.0f} answers/s", workload, cores, cores / (rate * f["plain_ms"] / 1000)])
    print(
        "\ncores governance needs (answers/s x governance CPU per rollout), and its share of the rollout worker's CPU"
    )
    print_table(["rate", "check", "cores", "vs plain worker CPU"], rows, float_format=",.2f")
    if args.json:
        args.json.write_text(json.dumps({"figures": figures, "answers_per_second": args.answers_per_second}, indent=1))


if __name__ == "__main__":
    main()
