"""Throughput of the trail shipper to a store over HTTP: ``agl store`` on loopback, or at ``--store-url``.

Writes N real kernel decisions (one in four blocked) to a real FlightRecorder file, spread over R
rollouts started in a real ``agl store`` (their attempts marked running, as a runner's are), then
ships the file with ``python -m agentlightning.contrib.adapter.agentos ship``'s own function
(``ship_files`` through a ``LightningStoreClient``): the first round sends every record, the
second finds them all acknowledged and sends none. Reports records/s of each round and whether
the store then holds every blocked decision of the file.

Run:  python tests/benchmarks/bench_trail_shipper.py [--records 5000] [--rollouts 50] [--store-url URL]
      python tests/netns_topology.py bench [--records 1000] [--rollouts 20]   (as root: the store on
      another host, a network namespace, and this script on a runner host; see that file)
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from agentlightning.store.client_server import LightningStoreClient  # noqa: E402

from agentlightning.contrib.adapter.agentos.shipper import (  # noqa: E402
    ship_files,
    store_blocked_decisions,
    trail_blocked_decisions,
)
from agentlightning.contrib.kernel.agentos import ActionContext, GovernanceKernel, SQLPolicy  # noqa: E402

RECIPE_DIR = Path(__file__).resolve().parents[2] / "contrib" / "recipes" / "agentos"
sys.path.insert(0, str(RECIPE_DIR))
from agl_store_server import agl_store_server  # noqa: E402


async def _rollouts(client: LightningStoreClient, n: int):
    started = []
    for i in range(n):
        attempted = await client.start_rollout(input={"bench": i})
        await client.update_attempt(attempted.rollout_id, attempted.attempt.attempt_id, status="running")
        started.append(attempted)
    return started


def _trail(path: Path, rollouts, records: int) -> None:
    kernel = GovernanceKernel([SQLPolicy(deny=["DROP"])], recorder=path)
    for i in range(records):
        attempted = rollouts[i % len(rollouts)]
        context = ActionContext(
            agent_id="Worker-0@bench-1", rollout_id=attempted.rollout_id, attempt_id=attempted.attempt.attempt_id
        )
        query = "DROP TABLE users" if i % 4 == 0 else f"SELECT {i}"
        kernel.check("database_query", {"query": query}, context=context)
    kernel.close()


async def _ship(url: str, path: Path):
    client = LightningStoreClient(url)
    try:
        started, cpu = time.perf_counter(), time.process_time()
        first = await ship_files(client, [path])
        first_s, first_cpu = time.perf_counter() - started, time.process_time() - cpu
        started, cpu = time.perf_counter(), time.process_time()
        second = await ship_files(client, [path])
        second_s, second_cpu = time.perf_counter() - started, time.process_time() - cpu
        stored = await store_blocked_decisions(client)
        return first[str(path)], (first_s, first_cpu), second[str(path)], (second_s, second_cpu), stored
    finally:
        await client.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=5000)
    parser.add_argument("--rollouts", type=int, default=50)
    parser.add_argument("--store-url", help="a running agl store to ship to (default: start one on loopback)")
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="bench_trail_shipper_"))
    server = contextlib.nullcontext(args.store_url) if args.store_url else agl_store_server(workdir / "agl-store.log")
    with server as url:

        async def setup():
            client = LightningStoreClient(url)
            try:
                return await _rollouts(client, args.rollouts)
            finally:
                await client.close()

        rollouts = asyncio.run(setup())
        path = workdir / "worker-0@bench-1.db"
        _trail(path, rollouts, args.records)
        added, first_s, again, second_s, stored = asyncio.run(_ship(url, path))
    trail = trail_blocked_decisions([path])
    where = f"at {url}" if args.store_url else f"on loopback ({url})"
    print(f"agl store {where}; {args.records} records over {args.rollouts} running attempts")
    print(f"  load average while it ran: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print(
        f"  first round:  {added} spans added in {first_s[0]:.2f} s = {added / first_s[0]:,.0f} records/s "
        f"(shipper's own CPU {first_s[1]:.2f} s = {added / first_s[1]:,.0f} records per CPU second)"
    )
    print(
        f"  second round: {again} spans added in {second_s[0]:.2f} s, shipper's CPU {second_s[1]:.2f} s "
        f"(every record already acknowledged: verification and the look-up only)"
    )
    print(f"  blocked decisions: {len(trail)} in the file, {len(trail & stored)} in the store")


if __name__ == "__main__":
    main()
