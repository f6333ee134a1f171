"""What a first-seen response costs the gateway in one process and with its check pool: CPU and instructions.

Run it on demand in the 1.0 environment (pytest does not collect ``tests/benchmarks``)::

    .venv312/bin/python tests/benchmarks/bench_check_pool_cost.py inline --responses 1000
    .venv312/bin/python tests/benchmarks/bench_check_pool_cost.py pool --responses 1000
    PYTHONHASHSEED=0 valgrind --tool=callgrind --instr-atstart=no --collect-atstart=yes \\
        --callgrind-out-file=runs/cg/callgrind.out.%p \\
        .venv312/bin/python tests/benchmarks/bench_check_pool_cost.py pool --responses 200 --callgrind runs/cg

The gateway of ``bench_scale_cores.py``'s gateway arm (``create_governed_app`` with the packaged
policies, a durable keyed trail, ``run_sql`` responses with unique agent SQL, 8 rollouts in flight
through ``GovernanceLayer.judge``) judges a warm-up batch, then ``--responses`` more; ``inline``
checks in the gateway's process (``check_processes: 1``), ``pool`` in two worker processes. Printed
per response, for the measured batch only: CPU (user and system) of the gateway's process and of
the workers (``/proc``), their context switches (every thread), and the wall clock with the load
average beside it (wall clock is not evidence on a shared machine; CPU is steadier, instructions
steadier still).

``--callgrind DIR``: the process runs under callgrind as above (instrumentation off until the
measured batch) and so does each worker (its callgrind files in ``DIR``); the measured batch is a
region in the gateway and in each worker (``callgrind_regions.py``: every thread counted), and the
instructions per response are printed for the gateway and for the workers together. Deadlines are
raised (600 s) so callgrind's slowness fails no check.
"""

from __future__ import annotations

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("AGENTOS_AUDIT_KEY", "5ca1e" * 13)

import argparse  # noqa: E402
import asyncio  # noqa: E402
import random  # noqa: E402
import shutil  # noqa: E402
import signal  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any, List, Optional, Tuple  # noqa: E402

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parents[1]), str(HERE.parents[1] / "contrib" / "recipes" / "agentos")]

from bench_common import require_at_least  # noqa: E402
from bench_scale_cores import first_seen_queries, response  # noqa: E402

#: Run in each worker under callgrind: SIGUSR1 opens the measured region, SIGUSR2 closes it.
WORKER_REGIONS = """
import os, signal, sys
sys.path.insert(0, {benchmarks!r})
import callgrind_regions
library = callgrind_regions._library()
signal.signal(signal.SIGUSR1, lambda *_: (library.instrument(), library.region_begin()))
signal.signal(signal.SIGUSR2, lambda *_: library.region_end(f"worker-{{os.getpid()}}".encode()))
import socket
from agentlightning.contrib.gateway.agentos.check_worker import serve
serve(socket.socket(fileno=int(sys.argv[1])), int(sys.argv[2]), int(sys.argv[3]) if sys.argv[3] else None)
"""


def cpu_and_switches(pid: int) -> Tuple[float, float, int, int, float]:
    """User and system CPU seconds of ``pid`` (every thread), its context switches, its threads' moves from one
    core to another (``se.nr_migrations`` in ``/proc/PID/task/TID/sched``, where the kernel has it, else 0) and
    the seconds its threads were ready to run but waited for a core (``schedstat``'s run delay)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    switches = migrations = 0
    waited = 0.0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            waited += int((task / "schedstat").read_text().split()[1]) / 1e9
        except (OSError, IndexError):  # a thread that ended meanwhile, a kernel without schedstat
            pass
        for line in (task / "status").read_text().splitlines():
            if "ctxt_switches" in line:
                switches += int(line.split()[1])
        try:
            scheduling = (task / "sched").read_text()
        except OSError:  # a kernel without scheduler statistics
            continue
        migrations += sum(int(line.split()[-1]) for line in scheduling.splitlines() if line.startswith("se.nr_migr"))
    return int(fields[11]) / ticks, int(fields[12]) / ticks, switches, migrations, waited


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("mode", choices=("inline", "pool"))
    parser.add_argument("--responses", type=int, default=1000, help="responses in the measured batch (default: 1000)")
    parser.add_argument("--concurrency", type=int, default=8, help="rollouts in flight (default: 8)")
    parser.add_argument("--callgrind", type=Path, help="count instructions (run under callgrind, see above)")
    args = parser.parse_args()
    require_at_least(parser, args, responses=1, concurrency=1)

    from omegaconf import OmegaConf

    from gateway_services import server_config

    from agentlightning.contrib.gateway.agentos import check_pool, create_governed_app
    from agentlightning.contrib.gateway.agentos.configs import __file__ as configs_init
    from agentlightning.contrib.kernel.agentos import ActionContext

    work = Path(tempfile.mkdtemp(prefix="bench-check-pool-cost-"))
    packaged = OmegaConf.to_container(OmegaConf.load(Path(configs_init).parent / "agentos_gateway.yaml"))
    governance = {
        **packaged["governance"],
        "recorder_dir": str(work / "audit"),
        "check_processes": 2 if args.mode == "pool" else 1,
    }
    regions: Optional[Any] = None
    if args.callgrind:
        import callgrind_regions as regions

        args.callgrind.mkdir(parents=True, exist_ok=True)
        governance.update(check_deadline_s=600.0, policy_timeout_s=600.0)
        popen = subprocess.Popen

        def under_callgrind(argv: List[str], **kwargs: Any) -> subprocess.Popen:
            if argv[1:3] == ["-m", f"{check_pool.__package__}.check_worker"]:  # a worker: under callgrind
                code = WORKER_REGIONS.format(benchmarks=str(HERE))
                argv = [*regions.valgrind_command(args.callgrind), argv[0], "-c", code, *argv[3:]]
            return popen(argv, **kwargs)

        check_pool.subprocess.Popen = under_callgrind

    layer = create_governed_app(server_config(0, "policy", governance=governance))
    workers = [w.process.pid for w in layer.checks._live] if layer.checks else []
    rng = random.Random(1)

    async def batch(count: int, measured: bool) -> None:
        pending = list(enumerate(response(q, i) for i, q in enumerate(first_seen_queries(rng, count))))

        async def rollout(slot: int) -> None:
            while pending:
                i, body = pending.pop()
                context = ActionContext(agent_id="bench", rollout_id=f"ro-{slot}", attempt_id="0")
                _, events = await layer.judge(body, "chat/completions", context)
                assert len(events) == 1 and not events[0]["blocked"], events

        if not measured:
            await asyncio.gather(*(rollout(slot) for slot in range(args.concurrency)))
            return
        if regions is not None:
            for pid in workers:
                os.kill(pid, signal.SIGUSR1)
            time.sleep(1)  # each worker's handler runs before the batch
            regions.instrument()
        before = [cpu_and_switches(pid) for pid in [os.getpid(), *workers]]
        started = time.perf_counter()
        if regions is not None:  # the region holds the batch only, not the reading of /proc around it
            regions._library().region_begin()
        await asyncio.gather(*(rollout(slot) for slot in range(args.concurrency)))
        if regions is not None:
            regions._library().region_end(b"gateway")
        seconds = time.perf_counter() - started
        after = [cpu_and_switches(pid) for pid in [os.getpid(), *workers]]
        if regions is not None:
            for pid in workers:
                os.kill(pid, signal.SIGUSR2)
        per = [[(b - a) / count for a, b in zip(x, y)] for x, y in zip(before, after)]
        gateway, pooled = per[0], [sum(column) for column in zip(*per[1:])] if workers else [0.0] * 5
        print(
            f"{args.mode}: CPU ms per response: gateway {gateway[0] * 1e3:.3f} user + {gateway[1] * 1e3:.3f} system, "
            f"workers {pooled[0] * 1e3:.3f} user + {pooled[1] * 1e3:.3f} system, "
            f"total {(sum(gateway[:2]) + sum(pooled[:2])) * 1e3:.3f}; context switches per response: gateway "
            f"{gateway[2]:.1f}, workers {pooled[2]:.1f}; moves between cores per response: gateway {gateway[3]:.2f}, "
            f"workers {pooled[3]:.2f}; ready but waiting for a core, ms per response: gateway {gateway[4] * 1e3:.3f}, "
            f"workers {pooled[4] * 1e3:.3f}; {count / seconds:,.0f} responses/s wall clock at load "
            f"{os.getloadavg()[0]:.2f}"
        )

    async def serve() -> None:
        await batch(10 * args.concurrency, measured=False)
        await batch(args.responses, measured=True)

    asyncio.run(serve())
    layer.close()
    shutil.rmtree(work, ignore_errors=True)  # the trails of a measurement are not kept
    if regions is not None:
        time.sleep(1)  # the workers' last dumps
        counted = regions.read_regions(args.callgrind)  # this process's too, with its --callgrind-out-file there
        gateway_count = counted.pop("gateway", 0)
        print(
            f"instructions per response: gateway {gateway_count / args.responses:,.0f}, "
            f"workers {sum(counted.values()) / args.responses:,.0f}"
        )


if __name__ == "__main__":
    main()
