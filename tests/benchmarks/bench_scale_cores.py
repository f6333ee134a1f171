"""Governance throughput on one core and on two: the gateway's checks and the runner's governed rollouts.

Run it on demand (pytest does not collect ``tests/benchmarks``), the gateway side in the 1.0
environment, the runner side in the 0.3 one::

    .venv312/bin/python tests/benchmarks/bench_scale_cores.py gateway --responses 300 --rounds 5
    .venv/bin/python tests/benchmarks/bench_scale_cores.py runner --rollouts 150 --rounds 5

Each arm is a process of its own pinned with ``os.sched_setaffinity`` (as ``taskset`` does) to one
core or to two, started once and then asked for one batch per round; the arms run one at a time,
interleaved (their order alternates), so both see the same machine. Throughput is wall clock (what
more cores buy); the ratio two cores / one core is printed per round and as the median. The load
averages before and after are printed: other work on the machine takes cores from the two-core arm
first, so a loaded machine understates the ratio.

* ``gateway``: the gateway built by ``create_governed_app`` from the packaged configuration's
  ``governance`` section (durable, keyed audit trail), with its check processes left to their
  default (one per core the process may run on: in the gateway's own process on one core, a pool of
  two worker processes on two). A batch is ``--responses`` model responses, each one ``run_sql``
  tool call with a first-seen query (realistic agent SQL from ``bench_text_to_sql.py``'s generators,
  each made unique), judged through ``GovernanceLayer.judge`` (the fair queue and the check path
  every proxied response takes) with ``--concurrency`` rollouts in flight. HTTP is not in the loop:
  on a two-core machine the client and the model server would take the cores being measured.
* ``runner``: ``AgentOSRunner`` governed rollouts (``bench_gpu_speed.py``'s arm: one first-seen SQL
  query per rollout through ``governed_tool``, durable audit, ``InMemoryLightningStore``): one runner
  process on one core against two runner processes (each with its own kernel, trail and store, as
  ``Trainer(n_runners=2)`` gives each runner process its own) on two cores, each doing ``--rollouts``;
  the two processes share both cores (left to the scheduler, the default) or, as workers 0 and 1
  of ``AgentOSRunner(pin_to_core=True)``, each runs on a core of its own.

Every trail is verified at the end. The target is a ratio >= 1.7 on two cores.
"""

from __future__ import annotations

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("AGENTOPS_LOGGING_TO_FILE", "False")
os.environ.setdefault("AGENTOPS_LOG_LEVEL", "ERROR")

import argparse  # noqa: E402
import json  # noqa: E402
import random  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any, Dict, List, Sequence  # noqa: E402

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parents[1]))

from bench_common import print_table, require_at_least  # noqa: E402

AUDIT_KEY = "5ca1e" * 13


def response(query: str, i: int) -> Dict[str, Any]:
    """A model response calling ``run_sql(query)`` once (the ``i``-th of a batch)."""
    call = {
        "id": f"c{i}",
        "type": "function",
        "function": {"name": "run_sql", "arguments": json.dumps({"query": query})},
    }
    message = {"role": "assistant", "content": None, "tool_calls": [call]}
    return {"id": f"r{i}", "choices": [{"index": 0, "finish_reason": "tool_calls", "message": message}]}


def first_seen_queries(rng: random.Random, count: int) -> List[str]:
    """``count`` realistic agent queries (joins, calls, aggregates), each never seen before."""
    from bench_text_to_sql import _generic_queries, call_and_join_queries

    generic = _generic_queries(random.Random(0))
    queries = []
    for i in range(count):
        query = call_and_join_queries(rng, 1)[0] if i % 2 else rng.choice(generic)
        queries.append(f"{query} -- {rng.getrandbits(48):x}")
    return queries


# ----------------------------------------------------------------------------- the arms (child processes)


def gateway_arm(cpus: List[int], workdir: Path, concurrency: int, per_core: int) -> None:
    import asyncio

    from omegaconf import OmegaConf

    from agentlightning.contrib.gateway.agentos import create_governed_app
    from agentlightning.contrib.gateway.agentos.configs import __file__ as configs_init
    from agentlightning.contrib.kernel.agentos import ActionContext
    from agentlightning.contrib.kernel.agentos.audit.seal import verify_file

    packaged = OmegaConf.to_container(OmegaConf.load(Path(configs_init).parent / "agentos_gateway.yaml"))
    governance = {**packaged["governance"], "recorder_dir": str(workdir / "audit")}
    if per_core > 1 and len(cpus) > 1:
        governance["check_processes"] = per_core * len(cpus)
    sys.path.insert(0, str(HERE.parents[1] / "contrib" / "recipes" / "agentos"))
    from gateway_services import server_config  # the 1.0 recipe's server keys, as the tests build them

    layer = create_governed_app(server_config(0, "policy", governance=governance))
    pool = layer.checks
    rng = random.Random(len(cpus))

    async def batch(count: int) -> float:
        responses = [response(q, i) for i, q in enumerate(first_seen_queries(rng, count))]
        pending = list(enumerate(responses))

        async def rollout(slot: int) -> None:
            while pending:
                i, body = pending.pop()
                context = ActionContext(agent_id="bench", rollout_id=f"ro-{slot}", attempt_id="0")
                governed, events = await layer.judge(body, "chat/completions", context)
                assert len(events) == 1 and not events[0]["blocked"], events

        started, cpu, workers = time.perf_counter(), time.process_time(), workers_cpu()
        await asyncio.gather(*(rollout(slot) for slot in range(concurrency)))
        return {
            "seconds": time.perf_counter() - started,
            "gateway_cpu_ms": (time.process_time() - cpu) * 1e3 / count,
            "workers_cpu_ms": (workers_cpu() - workers) * 1e3 / count,
        }

    def workers_cpu() -> float:
        """CPU seconds the pool's worker processes have used (``/proc``: they are not reaped until they end)."""
        ticks = 0
        for worker in pool._live if pool else []:
            fields = Path(f"/proc/{worker.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
            ticks += int(fields[11]) + int(fields[12])  # utime, stime
        return ticks / os.sysconf("SC_CLK_TCK")

    async def serve() -> None:  # one event loop for every batch, as the gateway has (the pool is bound to it)
        await batch(10 * concurrency)  # warm-up: every worker's first checks
        reply({"ready": True, "check_processes": pool.processes if pool else 1})
        while True:
            command = json.loads(await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline))
            if command["run"] == 0:
                break
            reply(await batch(command["run"]))

    asyncio.run(serve())
    layer.close()
    trails = sorted((workdir / "audit").glob("gateway-*.db"))
    verified = [verify_file(t, key=AUDIT_KEY) for t in trails]
    reply({"trails": len(trails), "all_valid": all(v["valid"] for v in verified)})


def runner_arm(cpus: List[int], workdir: Path, worker_id: int, pin_to_core: bool) -> None:
    import asyncio
    import logging

    from bench_gpu_speed import tasks_for
    from bench_runner_throughput import TOOL, build_database, policy, run_sql, start_arm

    from agentlightning.contrib.kernel.agentos import GovernanceKernel
    from agentlightning.contrib.runner.agentos import AgentOSRunner, governed_tool

    logging.getLogger("agentlightning").setLevel(logging.ERROR)
    db = workdir / "shop.db"
    if not db.exists():
        build_database(db, 0)
    kernel = GovernanceKernel([policy()], recorder=workdir / f"runner-{os.getpid()}.db")
    rng = random.Random(os.getpid())

    async def main() -> None:
        arm = await start_arm(
            "governed",
            AgentOSRunner(kernel, log_violations=False, pin_to_core=pin_to_core),
            governed_tool(TOOL, run_sql),
            True,
            kernel,
            worker_id=worker_id,
        )
        await arm.run_batch(tasks_for("first-seen", rng, 10, str(db)), counted=False)
        reply({"ready": True})
        for line in sys.stdin:
            command = json.loads(line)
            if command["run"] == 0:
                break
            tasks = tasks_for("first-seen", rng, command["run"], str(db))
            started, cpu = time.perf_counter(), time.process_time()
            await arm.run_batch(tasks, counted=True)
            seconds, cpu_ms = time.perf_counter() - started, (time.process_time() - cpu) * 1e3 / len(tasks)
            reply({"seconds": seconds, "failed": arm.failed, "runner_cpu_ms": cpu_ms})
        arm.runner.teardown_worker(worker_id)
        arm.runner.teardown()

    asyncio.run(main())
    valid = kernel.verify_audit()["valid"]
    kernel.close()
    reply({"trails": 1, "all_valid": valid})


def reply(message: Dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


# ----------------------------------------------------------------------------- the driver


class Child:
    """One arm process, pinned to ``cpus``, asked for batches over its stdin."""

    def __init__(self, side: str, cpus: List[int], workdir: Path, extra: Sequence[str]) -> None:
        workdir.mkdir(parents=True, exist_ok=True)
        command = [
            sys.executable,
            __file__,
            "--arm",
            side,
            "--cpus",
            ",".join(map(str, cpus)),
            "--workdir",
            str(workdir),
        ]
        env = {**os.environ, "AGENTOS_AUDIT_KEY": AUDIT_KEY}
        env.pop("AGENTOS_AUDIT_KEY_FILE", None)
        self.process = subprocess.Popen(
            [*command, *extra], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env
        )
        self.ready = self.read()

    def read(self) -> Dict[str, Any]:
        for line in self.process.stdout:
            if line.startswith("{"):
                return json.loads(line)
        raise RuntimeError(f"the arm process ended (exit {self.process.wait()})")

    def send(self, count: int) -> None:
        self.process.stdin.write(json.dumps({"run": count}) + "\n")
        self.process.stdin.flush()

    def finish(self) -> Dict[str, Any]:
        self.send(0)
        result = self.read()
        self.process.wait()
        return result


def drive(side: str, count: int, rounds: int, extra: Sequence[str]) -> None:
    cores = sorted(os.sched_getaffinity(0))
    if len(cores) < 2:
        sys.exit(f"this process may run on {len(cores)} core(s); the comparison needs two")
    one, two = cores[:1], cores[:2]
    print(f"{side}: load averages before {tuple(round(x, 2) for x in os.getloadavg())}, cores available {cores}")
    with tempfile.TemporaryDirectory(prefix="bench-scale-cores-", dir=".") as tmp:
        if side == "gateway":
            arms = {
                "1 core": [Child(side, one, Path(tmp) / "one", extra)],
                "2 cores": [Child(side, two, Path(tmp) / "two", extra)],
            }
            print({label: children[0].ready for label, children in arms.items()})
        else:  # one runner process on one core; two runner processes on two cores, left to the scheduler or pinned

            def worker(i: int, *more: str) -> List[str]:
                return [*extra, "--worker-id", str(i), *more]

            arms = {
                "1 core": [Child(side, one, Path(tmp) / "one", extra)],
                "2 cores": [Child(side, two, Path(tmp) / f"two-{i}", worker(i)) for i in range(2)],
                "2 cores, pin_to_core": [
                    Child(side, two, Path(tmp) / f"pinned-{i}", worker(i, "--pin-to-core")) for i in range(2)
                ],
            }
        rates: Dict[str, List[float]] = {label: [] for label in arms}
        two_core_arms = list(arms)[1:]
        cpu: Dict[tuple, List[float]] = {}
        for index in range(rounds):
            order = list(arms) if index % 2 == 0 else list(arms)[::-1]
            for label in order:
                children = arms[label]
                started = time.perf_counter()
                for child in children:
                    child.send(count)
                results = [child.read() for child in children]
                wall = time.perf_counter() - started
                assert all(r.get("failed", 0) == 0 for r in results), results
                rates[label].append(count * len(children) / wall)
                for key in ("gateway_cpu_ms", "workers_cpu_ms", "runner_cpu_ms"):
                    if key in results[0]:
                        cpu.setdefault((label, key), []).append(results[0][key])
            print(
                f"round {index + 1}: "
                + ", ".join(f"{label} {rates[label][-1]:,.1f}/s" for label in arms)
                + "".join(f", {label} / 1 core {rates[label][-1] / rates['1 core'][-1]:.2f}" for label in two_core_arms)
            )
        finished = [child.finish() for children in arms.values() for child in children]
    unit = "responses" if side == "gateway" else "rollouts"
    print(f"\n{side}: {unit}/s, median of {rounds} interleaved rounds ({count} {unit} per process per round)")
    print_table(
        ["arm", f"{unit}/s", "min", "max"],
        [[label, statistics.median(r), min(r), max(r)] for label, r in rates.items()],
    )
    if cpu:
        print(
            f"CPU ms per {unit[:-1]} (median, first process of the arm): "
            + ", ".join(f"{a} {k[:-3]} {statistics.median(v):.3f}" for (a, k), v in cpu.items())
        )
    for label in two_core_arms:
        ratios = [b / a for a, b in zip(rates["1 core"], rates[label])]
        per_round = ", ".join(f"{r:.2f}" for r in ratios)
        print(f"ratio {label} / 1 core: median {statistics.median(ratios):.2f} (per round {per_round})")
    print(f"trails verified: {sum(f['trails'] for f in finished)}, all valid: {all(f['all_valid'] for f in finished)}")
    print(f"load averages after {tuple(round(x, 2) for x in os.getloadavg())}")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("side", nargs="?", choices=("gateway", "runner"))
    parser.add_argument("--responses", type=int, default=300, help="gateway: responses per round (default: 300)")
    parser.add_argument("--concurrency", type=int, default=8, help="gateway: rollouts in flight (default: 8)")
    parser.add_argument(
        "--per-core",
        type=int,
        default=1,
        help="gateway: check processes per core on two cores (default: 1, the gateway's default)",
    )
    parser.add_argument(
        "--rollouts", type=int, default=150, help="runner: rollouts per process per round (default: 150)"
    )
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds (default: 5)")
    parser.add_argument("--arm", choices=("gateway", "runner"), help=argparse.SUPPRESS)
    parser.add_argument("--cpus", help=argparse.SUPPRESS)
    parser.add_argument("--workdir", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--worker-id", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--pin-to-core", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.arm:
        cpus = [int(c) for c in args.cpus.split(",")]
        os.sched_setaffinity(0, cpus)  # before anything starts: the gateway's check workers inherit it
        if args.arm == "gateway":
            gateway_arm(cpus, args.workdir, args.concurrency, args.per_core)
        else:
            runner_arm(cpus, args.workdir, args.worker_id, args.pin_to_core)
        return
    if args.side is None:
        parser.error("say which side to measure: gateway or runner")
    require_at_least(parser, args, responses=1, concurrency=1, rollouts=1, rounds=1)
    if args.side == "gateway":
        drive(
            "gateway",
            args.responses,
            args.rounds,
            ["--concurrency", str(args.concurrency), "--per-core", str(args.per_core)],
        )
    else:
        drive("runner", args.rollouts, args.rounds, [])


if __name__ == "__main__":
    main()
