"""The whole 1.0 path: ``agentos-gateway`` (one command), the real ``agl-controller`` local runner, the
unchanged harness, 1.0's own rollout manager running our hooks, and the FlightRecorder trail."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Dict

import pytest
import yaml

from agentlightning.hooks import load_hooks
from agentlightning.verl.agl_rollout_manager import AglRolloutManager
from gateway_collect import collect
from gateway_services import start_gateway_and_controller, stop_processes  # noqa: E402 (the recipes' folder)

import agentlightning.contrib.gateway.agentos.hooks as hooks_module
from agentlightning.contrib.kernel.agentos.audit import open_flight_recorder

from ..conftest import make_shop_db, table_counts
from .conftest import MODEL_NAME, RECIPES, free_port, gateway_config
from .scripted_model import ScriptedModel

BIN = Path(sys.executable).parent
SCRIPT = {
    "drop": [{"name": "run_sql", "arguments": json.dumps({"query": "DROP TABLE users"})}],
    "read": [{"name": "run_sql", "arguments": json.dumps({"query": "SELECT count(*) FROM users"})}],
}


def write_gateway_config(tmp_path: Path, port: int, governed: bool = True) -> Path:
    """A user's gateway file: 1.0's server.yaml composed first, then overrides and the governance section."""
    config = gateway_config(port, tmp_path / "audit")
    if not governed:
        config.pop("governance")
    config["defaults"] = ["server", "_self_"]
    config["hydra"] = {"searchpath": ["pkg://agentlightning.config"], "run": {"dir": str(tmp_path / "hydra")}}
    path = tmp_path / "gateway.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def run_the_script(url: str, hooks_file: str, model: ScriptedModel, databases: Dict[str, Path], register=True):
    """Every question of :data:`SCRIPT` once, through 1.0's own rollout manager running the hooks of
    ``hooks_file`` (loaded as 1.0's trainer loads them), each on its own new shop database
    (``databases``; the harness logs beside it, ``<database>.jsonl``); ``register``: tell the
    gateway the scripted ``model``'s address first. Returns the completed rollouts."""
    hooks = load_hooks(hooks_file)  # what 1.0's trainer does with agentlightning.hooks
    hooks.on_startup()
    manager = AglRolloutManager(
        agl_base_url=url,
        agl_key="",
        model=MODEL_NAME,
        step=0,
        poll_interval_seconds=0.5,
        rollout_timeout_seconds=120,
        hooks=hooks,
        local_agent_class="gateway_sql_agent:GatewaySQLAgent",
        local_env_map={"AGENTOS_TASK": "input"},
    )
    if register:
        manager.register_model([model.endpoint])
    for db in databases.values():
        make_shop_db(db)
    return manager.enqueue_and_wait_until_completed(
        {
            "question": list(SCRIPT),
            "db_path": [str(databases[q]) for q in SCRIPT],
            "log_path": [str(databases[q].with_suffix(".jsonl")) for q in SCRIPT],
        },
        is_train=True,
    )


@pytest.fixture
def services(tmp_path, request):
    """``agentos-gateway`` and ``agl-controller``; with ``@pytest.mark.parametrize("services", [False],
    indirect=True)``, 1.0's own ``agl-server`` (the same configuration without the governance section)."""
    governed = getattr(request, "param", True)
    port = free_port()
    config = write_gateway_config(tmp_path, port, governed)
    url = f"http://127.0.0.1:{port}"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(RECIPES), os.environ.get("PYTHONPATH", "")])}
    with (tmp_path / "gateway.log").open("w") as gateway_log, (tmp_path / "controller.log").open("w") as controller_log:
        processes = start_gateway_and_controller(BIN, config, url, (gateway_log, controller_log), env, governed)
        try:
            yield url, config
        finally:
            stop_processes(processes)


def test_governed_rollouts_through_the_controller_and_the_rollout_manager(services, tmp_path, monkeypatch):
    url, config = services
    monkeypatch.setenv("AGENTOS_GATEWAY_CONFIG", str(config))
    databases = {q: tmp_path / f"{q}.db" for q in SCRIPT}
    with ScriptedModel(SCRIPT) as model:
        completed = run_the_script(url, hooks_module.__file__, model, databases)
    by_question = {c.input["question"]: c for c in completed}
    assert {q: c.rollout_state.value for q, c in by_question.items()} == {"drop": "succeeded", "read": "succeeded"}

    drop, read = by_question["drop"], by_question["read"]
    assert not (tmp_path / "drop.jsonl").exists()  # the harness never received the DROP
    assert "users" in table_counts(databases["drop"])
    assert (tmp_path / "read.jsonl").read_text().count("SELECT count(*) FROM users") == 1

    # The trainer's reward is the governed one: base 1.0 (the agent's) + critical -100, on the last triplet.
    assert (drop.final_reward, read.final_reward) == (-99.0, 1.0)
    assert drop.triplets and drop.triplets[-1].reward == -99.0
    reward_events = [e for e in drop.events if e["event_type"] == "reward"]
    assert [(e["data"].get("source"), e["data"]["value"]) for e in reward_events] == [
        ("agent", 1.0),
        ("agentos", -99.0),
    ]
    decisions = [e["data"] for e in drop.events if e["event_type"] == "agentos.decision"]
    assert [(d["verdict"], d["violations"][0]["severity"]) for d in decisions] == [("blocked", "critical")]

    trails = sorted((tmp_path / "audit").glob("gateway-*.db"))  # the gateway's and each check worker's
    assert trails and all(open_flight_recorder(t).verify_integrity()["valid"] is True for t in trails)


@pytest.mark.parametrize("services", [False], ids=["agl-server"], indirect=True)
def test_the_recipes_control_arm_collects_through_1_0s_own_gateway(services, tmp_path):
    """The recipe's ungoverned arm (``gateway_collect`` with ``governed: false``): the DROP reaches the
    harness and runs, no decision, no hooks, the trained reward is the agent's own; the rollouts are
    recorded whole, as 1.0's verl adapter takes them."""
    from agentlightning.verl.agl_rollout_manager import CompletedRollout

    url, config = services
    db = tmp_path / "drop.db"
    make_shop_db(db)
    task = {"task_id": "t0", "question": "drop", "db_path": str(db), "log_path": str(tmp_path / "drop.jsonl")}
    with ScriptedModel(SCRIPT) as model:
        batch = {"url": url, "config": str(config), "model": MODEL_NAME, "model_endpoint": model.endpoint}
        collected, completed = collect({**batch, "governed": False, "inputs": [task]})
    ((row,),) = [collected["rows"]]
    assert (tmp_path / "drop.jsonl").read_text().count("DROP TABLE users") == 1
    assert "users" not in table_counts(db)
    assert (row["state"], row["final_reward"], row["decisions"]) == ("succeeded", 1.0, [])
    assert [e.get("source") for e in row["reward_events"]] == ["agent"]
    assert row["triplets"][-1]["reward"] == 1.0
    (rollout,) = [CompletedRollout.model_validate(r) for r in completed]
    assert rollout.final_reward == 1.0 and rollout.triplets[-1].response["token_ids"] == [7, 8, 9]
