"""What a first-seen governed rollout does that a remembered one and a plain one do not, counted natively.

Run it on demand (pytest does not collect ``tests/benchmarks``)::

    python tests/benchmarks/bench_first_seen_counts.py
    python tests/benchmarks/bench_first_seen_counts.py --rollouts 60 --rounds 6
    python tests/benchmarks/bench_first_seen_counts.py --strace "governed first-seen"   # one arm's system calls

``bench_gpu_speed.py`` states governance CPU per rollout; callgrind (``bench_first_seen_parts.py``)
says where the instructions go. This script counts what instructions do not show. Four arms, each
with its own runner, ``InMemoryLightningStore`` and (governed) kernel with a durable audit trail,
on ``bench_gpu_speed.py``'s two workloads (``first-seen``: a new read query every rollout;
``remembered``: the same query every rollout): ``plain remembered``, ``plain first-seen``,
``governed remembered``, ``governed first-seen``. The arms run interleaved in rounds (order
rotating, an untimed garbage collection before each batch); per rollout, medians over rounds:

* process CPU, user and system (``getrusage``: every thread), voluntary and involuntary context
  switches, garbage collections;
* threads and processes started (``threading.Thread.start``, ``subprocess.Popen``,
  ``multiprocessing``): does a first-seen text start a reading worker or a thread?
* decisions and blocked decisions (``GovernanceKernel.check``): the arms must do the same work, so
  the plain arm must not run a statement the governed arm blocks;
* in place, the thread CPU of ``GovernanceKernel.check`` (the decision and its durable record) and
  of ``SQLPolicy.evaluate`` (the reading of the text: the parse and the walk) inside the rollout.

Then the parse and the check (no audit) alone, each text timed in thread CPU: back to back (the
caches warm, as a tight loop sees them) and with the CPU caches evicted between texts (32 MB
written), as a rollout sees them: between two checks the runner, agentlightning and the tool run.
``--tree DIR`` imports ``agentlightning.contrib`` from another checkout
(``git archive <commit> contrib | tar -x -C DIR``), for before and after on the same machine.
With ``--strace ARM`` the script attaches ``strace -f -c`` to itself for that arm's counted rounds
(every thread) and prints the system calls per rollout instead. Nothing is asserted.
"""

from __future__ import annotations

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("AGENTOPS_LOGGING_TO_FILE", "False")
os.environ.setdefault("AGENTOPS_LOG_LEVEL", "ERROR")

import argparse  # noqa: E402
import asyncio  # noqa: E402
import gc  # noqa: E402
import logging  # noqa: E402
import multiprocessing.process  # noqa: E402
import random  # noqa: E402
import re  # noqa: E402
import resource  # noqa: E402
import shutil  # noqa: E402
import signal  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
from collections import Counter  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any, Callable, Dict, List, Optional  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))


def tree_argument() -> Optional[Path]:
    """``--tree DIR`` (read before agentlightning.contrib is imported, so that checkout's is the one used)."""
    early = argparse.ArgumentParser(add_help=False)
    early.add_argument("--tree", type=Path, default=None)
    return early.parse_known_args()[0].tree


TREE = tree_argument()
if TREE is not None:
    from bench_runner_overhead import load_contrib

    load_contrib(TREE.resolve())

import sqlglot  # noqa: E402
from bench_common import print_table, require_at_least  # noqa: E402
from bench_gpu_speed import tasks_for  # noqa: E402
from bench_runner_throughput import TOOL, build_database, policy, read_query, run_sql, start_arm  # noqa: E402

import agentlightning as agl  # noqa: E402

from agentlightning.contrib.kernel.agentos import GovernanceKernel, SQLPolicy  # noqa: E402
from agentlightning.contrib.runner.agentos import AgentOSRunner, governed_tool  # noqa: E402

COUNTS: Counter = Counter()  # threads, processes, decisions, blocked; thread CPU in ns of check and evaluate
EVICTION = bytearray(32 << 20)  # larger than this machine's caches
ONE_PER_LINE = b"\1" * len(EVICTION[::64])  # a byte for every 64-byte cache line of EVICTION


def count_calls(
    owner: Any, name: str, key: str, after: Optional[Callable[[Any], None]] = None, timed: bool = False
) -> None:
    """Count the calls of ``owner.name`` under ``key`` (and, ``timed``, their thread CPU under ``key + ' ns'``:
    reading a thread's CPU clock is a system call, so not while they are counted)."""
    original = getattr(owner, name)
    clock = time.thread_time_ns if timed else int

    def counted(*args: Any, **kwargs: Any) -> Any:
        started = clock()
        try:
            result = original(*args, **kwargs)
        finally:
            COUNTS[key + " ns"] += clock() - started
            COUNTS[key] += 1
        if after is not None:
            after(result)
        return result

    setattr(owner, name, counted)


def instrument(timed: bool) -> None:
    count_calls(threading.Thread, "start", "threads started")
    count_calls(subprocess.Popen, "__init__", "processes started")
    count_calls(multiprocessing.process.BaseProcess, "start", "processes started")
    count_calls(
        GovernanceKernel, "check", "check", lambda decision: COUNTS.update(blocked=int(decision.blocked)), timed
    )
    count_calls(SQLPolicy, "evaluate", "evaluate", timed=timed)


ARMS = ("plain remembered", "plain first-seen", "governed remembered", "governed first-seen")


async def measure(rounds: int, rollouts: int, tmp: Path, strace_arm: Optional[str]) -> Dict[str, Dict[str, float]]:
    db = tmp / "shop.db"
    build_database(db, 0)
    r = random.Random(0)
    arms = []
    for label in ARMS:
        governed, workload = label.split(" ")
        if governed == "governed":
            kernel = GovernanceKernel([policy()], recorder=tmp / f"audit-{workload}.db")
            runner = AgentOSRunner(kernel, log_violations=False)
            arm = await start_arm(label, runner, governed_tool(TOOL, run_sql), True, kernel)
        else:
            arm = await start_arm(label, agl.LitAgentRunner(agl.AgentOpsTracer()), run_sql, governed=False)
        arms.append((arm, workload))
    if strace_arm is not None:
        arms = [(arm, workload) for arm, workload in arms if arm.label == strace_arm]
    samples: Dict[str, List[Dict[str, float]]] = {arm.label: [] for arm, _ in arms}
    tracer = None
    try:
        for arm, workload in arms:
            await arm.run_batch(tasks_for(workload, r, 10, str(db)), counted=False)
        if strace_arm is not None:
            tracer = subprocess.Popen(
                ["strace", "-f", "-c", "-q", "-o", str(tmp / "strace.txt"), "-p", str(os.getpid())]
            )
            time.sleep(2)  # attached to every thread
        for index in range(rounds):
            for arm, workload in arms[index % len(arms) :] + arms[: index % len(arms)]:
                tasks = tasks_for(workload, r, rollouts, str(db))
                gc.collect()
                counts, usage, collections = Counter(COUNTS), resource.getrusage(resource.RUSAGE_SELF), gc_count()
                for pair in tasks:
                    rollout = await arm.runner.step(pair.governed if arm.governed else pair.plain)
                    arm.failed += rollout.status != "succeeded"
                after = resource.getrusage(resource.RUSAGE_SELF)
                done = Counter(COUNTS)
                done.subtract(counts)
                sample = {
                    "user ms": (after.ru_utime - usage.ru_utime) * 1e3,
                    "system ms": (after.ru_stime - usage.ru_stime) * 1e3,
                    "voluntary switches": after.ru_nvcsw - usage.ru_nvcsw,
                    "involuntary switches": after.ru_nivcsw - usage.ru_nivcsw,
                    "collections": gc_count() - collections,
                    **{key: done[key] for key in ("threads started", "processes started", "check", "blocked")},
                    "check ms": done["check ns"] / 1e6,
                    "evaluate ms": done["evaluate ns"] / 1e6,
                }
                samples[arm.label].append({key: value / rollouts for key, value in sample.items()})
    finally:
        if tracer is not None:
            tracer.send_signal(signal.SIGINT)
            tracer.wait()
        for arm, _ in arms:
            arm.runner.teardown_worker(0)
            arm.runner.teardown()
            if arm.kernel is not None:
                assert arm.kernel.verify_audit()["valid"], "the audit trail does not verify"
                arm.kernel.close()
    if tracer is not None:
        print_syscalls(tmp / "strace.txt", rounds * rollouts, strace_arm)
    failed = {arm.label: arm.failed for arm, _ in arms if arm.failed}
    assert not failed, f"rollouts failed: {failed}"
    return {label: {key: statistics.median(s[key] for s in rows) for key in rows[0]} for label, rows in samples.items()}


def gc_count() -> int:
    return sum(stats["collections"] for stats in gc.get_stats())


def print_syscalls(path: Path, rollouts: int, arm: str) -> None:
    calls = {}
    for line in path.read_text().splitlines():
        match = re.match(r"\s*[\d.]+\s+[\d.]+\s+\d+\s+(\d+)\s+(?:\d+\s+)?(\w+)\s*$", line)
        if match and match.group(2) != "total":
            calls[match.group(2)] = int(match.group(1)) / rollouts
    print(f"\nsystem calls per rollout, {arm} (strace -f -c, every thread, {rollouts} rollouts)")
    print_table(["system call", "per rollout"], sorted(calls.items(), key=lambda item: -item[1]), float_format=",.2f")
    print_table(["all", ""], [["total", sum(calls.values())]], float_format=",.2f")


def warm_and_cold(texts: int) -> List[List[Any]]:
    """Thread CPU per text of the parse and the check (no audit), back to back and caches evicted."""
    r = random.Random(1)
    kernel = GovernanceKernel([policy()])
    steps: Dict[str, Callable[[str], Any]] = {
        "sqlglot.parse (sqlite)": lambda text: sqlglot.parse(text, read="sqlite"),
        "kernel.check, no audit": lambda text: kernel.check(TOOL, {"query": text, "db": "shop.db"}),
    }
    rows = []
    for name, step in steps.items():
        row: List[Any] = [name]
        for evict in (False, True):
            per_round = []
            for _ in range(3):
                batch = [f"{read_query(r)} -- {r.getrandbits(48):x}" for _ in range(texts)]
                gc.collect()
                spent = 0
                for text in batch:
                    if evict:
                        EVICTION[::64] = ONE_PER_LINE
                    started = time.thread_time_ns()
                    step(text)
                    spent += time.thread_time_ns() - started
                per_round.append(spent / texts / 1e6)
            row.append(statistics.median(per_round))
        rows.append(row + [row[2] / row[1]])
    kernel.close()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rollouts", type=int, default=60, help="rollouts per arm per round (default: 60)")
    parser.add_argument("--rounds", type=int, default=6, help="counted rounds, arms interleaved (default: 6)")
    parser.add_argument("--texts", type=int, default=200, help="texts per round, parse warm and cold (default: 200)")
    parser.add_argument(
        "--tree", type=Path, default=None, help="import agentlightning.contrib from this checkout (default: this one)"
    )
    parser.add_argument("--strace", choices=ARMS, default=None, help="count this arm's system calls instead")
    args = parser.parse_args()
    require_at_least(parser, args, rollouts=1, rounds=1, texts=1)
    if args.strace is not None and shutil.which("strace") is None:
        parser.error("--strace needs strace on the PATH (Debian: apt-get install strace)")
    logging.getLogger("agentlightning").setLevel(logging.ERROR)
    instrument(timed=args.strace is None)
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="bench-first-seen-counts-", dir=".") as tmp:
        figures = asyncio.run(measure(args.rounds, args.rollouts, Path(tmp), args.strace))
    if args.strace is not None:
        return
    keys = list(next(iter(figures.values())))
    print(
        f"\nper rollout, median of {args.rounds} rounds x {args.rollouts} rollouts, contrib of {TREE or 'this tree'} "
        f"(load {load:.1f} -> {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs)"
    )
    print_table(["per rollout", *figures], [[key, *(f[key] for f in figures.values())] for key in keys], ",.3f")
    rows = []
    for workload in ("remembered", "first-seen"):
        governed, plain = figures[f"governed {workload}"], figures[f"plain {workload}"]
        user, system = (governed[k] - plain[k] for k in ("user ms", "system ms"))
        rows.append([workload, user, system, user + system])
    print_table(["governance CPU ms per rollout", "user", "system", "total"], rows, ",.3f")
    print(f"\nthread CPU per text, ms ({args.texts} new texts a round, median of 3 rounds)")
    print_table(["step", "back to back", "caches evicted", "cold / warm"], warm_and_cold(args.texts), ",.3f")


if __name__ == "__main__":
    main()
