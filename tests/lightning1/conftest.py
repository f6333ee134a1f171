"""A real Agent Lightning 1.0 gateway, governed, served by uvicorn on a free local port."""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path
from typing import Any, Dict, Iterator

import httpx
import pytest
import uvicorn

from agentlightning.contrib.gateway.agentos import GovernanceLayer, create_governed_app

# The 1.0 recipe's modules (the harness, the gateway's configuration and processes) are what these tests run.
RECIPES = Path(__file__).resolve().parents[2] / "contrib" / "recipes" / "agentos"
sys.path.insert(0, str(RECIPES))
from gateway_services import free_port, server_config  # noqa: E402

MODEL_NAME = "policy"
__all__ = ["MODEL_NAME", "RECIPES", "RunningGateway", "free_port", "gateway_config"]


def gateway_config(port: int, recorder_dir: Path, **governance: Any) -> Dict[str, Any]:
    """1.0's server keys plus the governance section, as the gateway's YAML would give them."""
    return server_config(
        port,
        MODEL_NAME,
        governance={
            "recorder_dir": str(recorder_dir),
            "policies": [
                {"sql": {"deny": ["DROP", "DELETE", "TRUNCATE", "ALTER"], "tools": ["run_sql"], "dialect": "sqlite"}},
                {"tool_allow_list": {"allowed_tools": ["run_sql"]}},
            ],
            "penalties": {"clean_bonus": 0.0},
            **governance,
        },
    )


class RunningGateway:
    """A gateway served by uvicorn in this process; ``key`` is sent as a bearer credential on every call,
    ``root_path`` serves it under a path prefix (behind a reverse proxy that strips it)."""

    def __init__(self, app: GovernanceLayer, port: int, *, key: str = "", root_path: str = "") -> None:
        self.app = app
        self.url = f"http://127.0.0.1:{port}"  # uvicorn prepends root_path, as a reverse proxy strips it
        self.headers = {"authorization": f"Bearer {key}"} if key else {}
        self.server = uvicorn.Server(
            uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", root_path=root_path)
        )
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def start(self) -> "RunningGateway":
        self.thread.start()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{self.url}/healthz", timeout=1).status_code == 200:
                    return self
            except httpx.HTTPError:
                time.sleep(0.05)
        raise RuntimeError("the gateway did not start")

    def stop(self) -> None:
        # 1.0's store is module-level state of this process: forget this test's model servers.
        httpx.delete(f"{self.url}/api/models", headers=self.headers).raise_for_status()
        self.server.should_exit = True
        self.thread.join(timeout=10)
        self.app.close()

    def register_model(self, endpoint: str) -> None:
        models = [{"model": MODEL_NAME, "endpoint": endpoint}]
        httpx.post(f"{self.url}/api/models", json=models, headers=self.headers).raise_for_status()

    def new_rollout(self, task: Any = None, *, running: bool = True, attempt_id: str = "0") -> str:
        """A new rollout; ``running`` marks it as 1.0's controller does when it starts the harness."""
        response = httpx.post(f"{self.url}/api/rollouts", json=[{"input": task or {}}], headers=self.headers)
        response.raise_for_status()
        rollout_id = response.json()[0]["rollout_id"]
        if running:
            self.set_state(rollout_id, "running", last_attempt_id=attempt_id)
        return rollout_id

    def set_state(self, rollout_id: str, state: str, **status: Any) -> None:
        response = httpx.patch(
            f"{self.url}/api/rollouts/{rollout_id}", json={"status": {"state": state, **status}}, headers=self.headers
        )
        response.raise_for_status()

    def proxy_url(self, rollout_id: str, attempt_id: str = "0") -> str:
        return f"{self.url}/proxy/rollout/{rollout_id}/attempt/{attempt_id}/mode/train/openai/v1"

    def events(self, rollout_id: str) -> list:
        response = httpx.get(f"{self.url}/api/rollouts/{rollout_id}/events", headers=self.headers)
        response.raise_for_status()
        return response.json()


@pytest.fixture
def start_gateway(tmp_path) -> Iterator[Any]:
    started = []

    def start(
        app: Any = None, *, key: str = "", host: str = "127.0.0.1", root_path: str = "", **governance: Any
    ) -> RunningGateway:
        """A governed gateway served on loopback; ``host`` and ``key`` are the configuration's (what the layer
        decides on), whatever address uvicorn binds here."""
        port = free_port()
        if app is None:
            config = gateway_config(port, tmp_path / "audit", **governance)
            config.update(host=host, key=key)
            app = create_governed_app(config)
        gateway = RunningGateway(app, port, key=key, root_path=root_path).start()
        started.append(gateway)
        return gateway

    yield start
    for gateway in started:
        gateway.stop()
