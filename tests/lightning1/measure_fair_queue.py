"""How long another rollout's ``SELECT 1`` waits at the governed 1.0 gateway while slow inputs are checked.

The slow input is the review's: a 98 KB ``SELECT 1 /*`` followed by ``/*`` openers,
emitted as a ``run_sql`` tool call, under the packaged policies (``sql`` with no dialect). The
gateway is the real one (``create_governed_app``, two workers) in front of a scripted model::

    .venv312/bin/python tests/lightning1/measure_fair_queue.py            # two slow calls of one rollout
    .venv312/bin/python tests/lightning1/measure_fair_queue.py --spread   # one slow call in each of two rollouts

Prints one line: the scenario, the slow checks' size, and the other rollout's latency in seconds.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parents[1] / "contrib" / "recipes" / "agentos"), str(HERE)]

from scripted_model import ScriptedModel  # noqa: E402

from gateway_services import free_port, server_config  # noqa: E402

from agentlightning.contrib.gateway.agentos import create_governed_app  # noqa: E402

SLOW_QUERY = "SELECT 1 " + "/*" * 49_000  # 98 KB


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spread", action="store_true", help="the two slow calls in two rollouts, not one")
    args = parser.parse_args()
    import uvicorn

    script = {
        "slow": [{"name": "run_sql", "arguments": json.dumps({"query": SLOW_QUERY})}],
        "fast": [{"name": "run_sql", "arguments": json.dumps({"query": "SELECT 1"})}],
    }
    port = free_port()
    with tempfile.TemporaryDirectory() as audit, ScriptedModel(script) as model:
        governance = {"recorder_dir": audit, "policies": [{"sql": {"deny": ["DROP", "DELETE", "TRUNCATE", "ALTER"]}}]}
        app = create_governed_app(server_config(port, "policy", governance={**governance, "workers": 2}))
        server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
        threading.Thread(target=server.run, daemon=True).start()
        url = f"http://127.0.0.1:{port}"
        while True:
            try:
                if httpx.get(f"{url}/healthz").status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.1)
        httpx.post(f"{url}/api/models", json=[{"model": "policy", "endpoint": model.endpoint}]).raise_for_status()

        def rollout() -> str:
            rollout_id = httpx.post(f"{url}/api/rollouts", json=[{"input": {}}]).json()[0]["rollout_id"]
            running = {"status": {"state": "running", "last_attempt_id": "0"}}
            httpx.patch(f"{url}/api/rollouts/{rollout_id}", json=running).raise_for_status()
            return rollout_id

        def ask(rollout_id: str, question: str) -> httpx.Response:
            body = {"model": "policy", "messages": [{"role": "user", "content": question}]}
            proxy = f"{url}/proxy/rollout/{rollout_id}/attempt/0/mode/train/openai/v1/chat/completions"
            return httpx.post(proxy, json=body, timeout=600)

        busy = [rollout(), rollout()] if args.spread else [rollout()] * 2
        slow = [threading.Thread(target=ask, args=(rollout_id, "slow")) for rollout_id in busy]
        for thread in slow:
            thread.start()
        time.sleep(2.0)  # both slow responses are at the layer: in a check, or waiting for a worker
        started = time.perf_counter()
        response = ask(rollout(), "fast")
        latency = time.perf_counter() - started
        assert response.status_code == 200, response.text
        for thread in slow:
            thread.join()
        server.should_exit = True
        app.close()
    scenario = "two rollouts, one slow call each" if args.spread else "one rollout, two slow calls"
    print(f"{scenario}: {len(SLOW_QUERY):,} characters each; another rollout's SELECT 1 took {latency:.2f} s")


if __name__ == "__main__":
    main()
