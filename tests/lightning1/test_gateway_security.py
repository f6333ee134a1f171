"""The governed 1.0 gateway's security and fairness: who may call it, which rollout a decision is charged to,
routes and responses the layer cannot place, and one rollout's slow check beside another's.

Against 1.0's real app and proxy, the real kernel and FlightRecorder; only the model's words are scripted.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest
from fastapi import Request

from agentlightning.server.app import create_app

import agentlightning.contrib.gateway.agentos as gateway_package
from agentlightning.contrib.gateway.agentos import DECISION_EVENT, GovernanceLayer, create_governed_app
from agentlightning.contrib.gateway.agentos.govern import UnreadableAction, govern_response
from agentlightning.contrib.kernel.agentos import (
    ActionContext,
    GovernanceConfigError,
    GovernanceKernel,
    Policy,
    SQLPolicy,
)
from agentlightning.contrib.kernel.agentos.audit import open_flight_recorder
from agentlightning.contrib.kernel.agentos.audit.record import decision_from_record

from .conftest import MODEL_NAME, free_port, gateway_config
from .scripted_model import ScriptedModel
from .test_gateway import SCRIPT, of_type

BIN = Path(sys.executable).parent
KEY = "k3y-" + "x" * 40
DROP_CALL = {
    "id": "call_drop",
    "type": "function",
    "function": {"name": "run_sql", "arguments": json.dumps({"query": "DROP TABLE users"})},
}
READ_CALL = {
    "id": "call_read",
    "type": "function",
    "function": {"name": "run_sql", "arguments": json.dumps({"query": "SELECT 1"})},
}


def chat(question: str) -> dict:
    return {"model": MODEL_NAME, "messages": [{"role": "user", "content": question}]}


def audit_records(tmp_path: Path) -> list:
    """The records of every trail file of the gateway (its own, and each check worker's)."""
    return [
        {**decided["agentos"], "tool_name": row["tool_name"]}
        for audit_file in sorted((tmp_path / "audit").glob("gateway-*.db"))
        for row in open_flight_recorder(audit_file).get_log()
        if (decided := decision_from_record(row))
    ]


@pytest.fixture
def scripted_model():
    with ScriptedModel(SCRIPT) as model:
        yield model


# -- 1. who may call the gateway ---------------------------------------------------------------------------


def test_the_packaged_configuration_binds_loopback():
    from hydra import compose, initialize_config_dir

    with initialize_config_dir(config_dir=str(Path(gateway_package.__file__).parent / "configs"), version_base=None):
        config = compose(config_name="agentos_gateway")
    assert config.host == "127.0.0.1"


def test_the_command_finds_its_packaged_configuration_from_any_folder(tmp_path):
    """``agentos-gateway`` with no ``--config-dir`` starts from the packaged file (the folder once
    shared its name with the ``config`` module, and Hydra looked in the module)."""
    done = subprocess.run(
        [str(BIN / "agentos-gateway"), "--cfg", "job"], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "host: 127.0.0.1" in done.stdout and "governance:" in done.stdout


def test_a_gateway_bound_elsewhere_without_a_key_does_not_start(tmp_path):
    config = gateway_config(free_port(), tmp_path / "audit")
    config.update(host="0.0.0.0", key="")
    with pytest.raises(GovernanceConfigError, match="AGL_KEY"):
        create_governed_app(config)
    config["key"] = "short"
    with pytest.raises(GovernanceConfigError, match="at least"):
        create_governed_app(config)

    # The command a user runs says the same, and exits.
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k != "AGL_KEY"}
    command = [str(BIN / "agentos-gateway")]  # the packaged configuration, found by the command itself
    command += ["host=0.0.0.0", f"port={port}", f"hydra.run.dir={tmp_path / 'hydra'}"]
    process = subprocess.Popen(command, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 120
        while process.poll() is None and time.monotonic() < deadline:
            try:
                served = httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200
            except httpx.HTTPError:
                served = False
            assert not served, "agentos-gateway serves on 0.0.0.0 without a key"
            time.sleep(0.2)
    finally:
        if process.poll() is None:
            process.kill()
        output = process.communicate()[0].decode()
    assert process.returncode not in (0, None)
    assert "AGL_KEY" in output and "0.0.0.0" in output


def test_with_a_key_every_route_but_health_needs_it(start_gateway, scripted_model):
    gateway = start_gateway(key=KEY, host="0.0.0.0")
    gateway.register_model(scripted_model.endpoint)
    rollout_id = gateway.new_rollout()
    calls = [
        ("POST", "/api/rollouts", [{"input": {}}]),
        ("POST", "/api/models", [{"model": MODEL_NAME, "endpoint": "http://127.0.0.1:1/v1"}]),
        ("POST", f"/api/rollouts/{rollout_id}/attempt/0/events", {"event_type": "reward", "data": {"value": 1e9}}),
        ("GET", f"/api/rollouts/{rollout_id}/events", None),
        ("POST", f"/proxy/rollout/{rollout_id}/attempt/0/mode/train/openai/v1/chat/completions", chat("read")),
        ("POST", "/proxy/pause", {}),
        ("GET", "/openapi.json", None),
        ("GET", "/docs", None),
    ]
    wrong = "k3y-" + "y" * 40  # the same length: a compare that stops early would tell the difference
    for method, path, body in calls:
        for headers in ({}, {"authorization": f"Bearer {wrong}"}, {"x-api-key": wrong}, {"authorization": KEY}):
            response = httpx.request(method, gateway.url + path, json=body, headers=headers)
            assert response.status_code == 401, (method, path, headers, response.text)
            assert "key" in response.json()["detail"]
    assert scripted_model.requests == []
    assert of_type(gateway.events(rollout_id), "reward") == []
    assert httpx.get(f"{gateway.url}/healthz").status_code == 200
    for headers in ({"authorization": f"Bearer {KEY}"}, {"x-api-key": KEY}):
        assert httpx.get(f"{gateway.url}/openapi.json", headers=headers).status_code == 200
        assert httpx.post(f"{gateway.url}/api/rollouts", json=[{"input": {}}], headers=headers).status_code == 201


def test_without_a_key_only_loopback_names_are_served(gateway_without_key):
    gateway = gateway_without_key
    for host in ("evil.example", "evil.example:80", "127.0.0.1.evil.example"):
        response = httpx.post(f"{gateway.url}/api/rollouts", json=[{"input": {}}], headers={"host": host})
        assert response.status_code == 403, host
        assert "loopback" in response.json()["detail"]
    port = gateway.url.rsplit(":", 1)[1]
    for host in (f"127.0.0.1:{port}", f"localhost:{port}", "localhost", f"[::1]:{port}"):
        response = httpx.post(f"{gateway.url}/api/rollouts", json=[{"input": {}}], headers={"host": host})
        assert response.status_code == 201, host


@pytest.fixture
def gateway_without_key(start_gateway, scripted_model):
    gateway = start_gateway()
    gateway.register_model(scripted_model.endpoint)
    return gateway


# -- 2. decisions are bound to rollouts the store knows as running -------------------------------------------


def test_a_model_call_needs_a_running_rollout_and_its_attempt(gateway_without_key, scripted_model, tmp_path):
    gateway = gateway_without_key
    gateway.app.start_grace_s = 0.5  # how long a queued rollout may take to be marked running
    queued = gateway.new_rollout(running=False)
    running = gateway.new_rollout()
    ended = gateway.new_rollout()
    gateway.set_state(ended, "succeeded")
    refused = [
        (queued, "0", 409, "not running"),
        (running, "7", 409, "attempt"),
        (ended, "0", 409, "not running"),
        ("no-such-rollout", "0", 404, "not found"),
    ]
    for rollout_id, attempt_id, status, reason in refused:
        response = httpx.post(gateway.proxy_url(rollout_id, attempt_id) + "/chat/completions", json=chat("drop"))
        assert response.status_code == status, (rollout_id, attempt_id, response.text)
        assert reason in response.json()["detail"]
    assert scripted_model.requests == []  # refused before the model was asked
    for rollout_id in (queued, running, ended):
        assert of_type(gateway.events(rollout_id), DECISION_EVENT) == []
    # Recorded in the audit trail, charged to no rollout: the ids are only what the caller claimed.
    refusals = [r for r in audit_records(tmp_path) if r["tool_name"] == "gateway_request"]
    assert len(refusals) == 3  # the unknown rollout is 1.0's own 404: there is nothing it could be charged to
    assert {r["rollout_id"] for r in refusals} == {None}
    assert all(r["verdict"] == "blocked" for r in refusals)

    response = httpx.post(gateway.proxy_url(running, "0") + "/chat/completions", json=chat("drop"))
    assert response.status_code == 200 and len(of_type(gateway.events(running), DECISION_EVENT)) == 1

    # A rollout its controller marks running within the grace is served (the harness may start first).
    starting = gateway.new_rollout(running=False)
    gateway.app.start_grace_s = 30
    marker = threading.Timer(0.5, gateway.set_state, (starting, "running"), {"last_attempt_id": "0"})
    marker.start()
    response = httpx.post(gateway.proxy_url(starting) + "/chat/completions", json=chat("read"), timeout=60)
    marker.join()
    assert response.status_code == 200, response.text
    assert len(of_type(gateway.events(starting), DECISION_EVENT)) == 1


def test_a_client_cannot_charge_another_rollouts_reward(gateway_without_key, scripted_model):
    gateway = gateway_without_key
    victim = gateway.new_rollout()
    gateway.set_state(victim, "succeeded")
    events_url = f"{gateway.url}/api/rollouts/{victim}/attempt/0/events"

    # After the victim's attempt ended, a DROP in its name is refused, never judged and charged.
    response = httpx.post(gateway.proxy_url(victim) + "/chat/completions", json=chat("drop"))
    assert response.status_code == 409
    # A decision event is the gateway's own: nobody posts one through the API.
    forged = {"event_type": DECISION_EVENT, "data": {"blocked": True, "violations": []}}
    response = httpx.post(events_url, json=forged)
    assert response.status_code == 403 and DECISION_EVENT in response.json()["detail"]
    # Events go to the rollout's current attempt only (1.0's trainer posts the reward there after the end).
    response = httpx.post(events_url.replace("/attempt/0/", "/attempt/9/"), json={"event_type": "reward", "data": {}})
    assert response.status_code == 409 and "attempt" in response.json()["detail"]
    assert httpx.post(events_url, json={"event_type": "reward", "data": {"value": 1.0}}).status_code == 200
    assert of_type(gateway.events(victim), DECISION_EVENT) == []


# -- 3. default deny for routes -----------------------------------------------------------------------------


def test_under_a_path_prefix_a_drop_is_still_blocked(start_gateway, scripted_model):
    gateway = start_gateway(root_path="/agl")
    gateway.register_model(scripted_model.endpoint)
    rollout_id = gateway.new_rollout()
    response = httpx.post(gateway.proxy_url(rollout_id) + "/chat/completions", json=chat("drop"))
    assert response.status_code == 200, response.text
    message = response.json()["choices"][0]["message"]
    assert "tool_calls" not in message
    assert message["content"].startswith("[agentos] tool call run_sql was blocked")
    (decision,) = of_type(gateway.events(rollout_id), DECISION_EVENT)
    assert decision["data"]["blocked"] is True


def test_a_route_the_layer_cannot_place_is_not_served(start_gateway, scripted_model, tmp_path):
    """A later 1.0 adding a route that returns model output (say, the Responses API) gets no unjudged pass."""
    port = free_port()
    server_config = gateway_config(port, tmp_path / "audit")
    server_config.pop("governance")
    app = create_app(server_config)

    @app.post("/proxy/v2/rollout/{rollout_id}/responses")
    async def responses(rollout_id: str, request: Request) -> dict:
        async with httpx.AsyncClient() as client:
            answer = await client.post(f"{scripted_model.endpoint}/chat/completions", json=await request.json())
        return {"output": [answer.json()["choices"][0]["message"]]}

    kernel = GovernanceKernel([SQLPolicy(deny=["DROP"], tools=["run_sql"])], recorder=tmp_path / "audit.db")
    gateway = start_gateway(GovernanceLayer(app, kernel))
    gateway.register_model(scripted_model.endpoint)
    rollout_id = gateway.new_rollout()
    response = httpx.post(f"{gateway.url}/proxy/v2/rollout/{rollout_id}/responses", json=chat("drop"))
    assert response.status_code == 404, response.text
    assert "DROP" not in response.text and "cannot place" in response.json()["detail"]
    assert scripted_model.requests == []


def test_an_upstream_path_the_layer_cannot_read_is_withheld():
    kernel = GovernanceKernel([SQLPolicy(deny=["DROP"])])
    response = {"object": "response", "output": [{"type": "function_call", "name": "run_sql", "arguments": "{}"}]}
    with pytest.raises(UnreadableAction, match="responses"):
        govern_response(kernel, response, "responses", ActionContext(rollout_id="r1"))
    with pytest.raises(UnreadableAction, match="choices"):
        govern_response(kernel, {"object": "chat.completion"}, "chat/completions", ActionContext(rollout_id="r1"))


# -- 4. with text_action, every text part and every tool call of every choice is judged ---------------------


class ShapedModel(ScriptedModel):
    """Answers each question with a fixed list of choices' messages, as a model server could shape them."""

    def answer(self, body):
        question = body["messages"][-1]["content"]
        messages = SHAPES[question]
        return {
            "id": "cmpl-shaped",
            "object": "chat.completion",
            "choices": [
                {"index": i, "message": {"role": "assistant", **m}, "finish_reason": "stop"}
                for i, m in enumerate(messages)
            ],
        }


SHAPES = {
    "text beside a call": [{"content": "DROP TABLE users", "tool_calls": [READ_CALL]}],
    "parts": [{"content": [{"type": "text", "text": "SELECT 1"}, {"type": "text", "text": "DROP TABLE users"}]}],
    "second choice": [{"content": "SELECT 1"}, {"content": "DROP TABLE users"}],
    "unplaceable part": [{"content": [{"type": "sql", "sql": "DROP TABLE users"}]}],
    "unplaceable content": [{"content": {"sql": "DROP TABLE users"}}],
}


@pytest.fixture
def text_gateway(start_gateway):
    with ShapedModel({}) as model:
        gateway = start_gateway(text_action={"tool": "run_sql", "argument": "query"})
        gateway.register_model(model.endpoint)
        yield gateway


def ask(gateway, question: str):
    rollout_id = gateway.new_rollout()
    response = httpx.post(gateway.proxy_url(rollout_id) + "/chat/completions", json=chat(question))
    events = of_type(gateway.events(rollout_id), DECISION_EVENT)
    decisions = [(d["data"]["source"], d["data"]["verdict"]) for d in events]
    return response, decisions


def test_every_text_part_and_call_of_every_choice_is_judged(text_gateway):
    response, decisions = ask(text_gateway, "text beside a call")
    message = response.json()["choices"][0]["message"]
    assert message["content"].startswith("[agentos] tool call run_sql was blocked")
    assert [c["id"] for c in message["tool_calls"]] == ["call_read"]
    assert sorted(decisions) == [("text", "blocked"), ("tool_call", "allowed")]

    response, decisions = ask(text_gateway, "parts")
    parts = response.json()["choices"][0]["message"]["content"]
    assert parts[0] == {"type": "text", "text": "SELECT 1"}
    assert parts[1]["type"] == "text" and parts[1]["text"].startswith("[agentos] tool call run_sql was blocked")
    assert decisions == [("text", "allowed"), ("text", "blocked")]

    response, decisions = ask(text_gateway, "second choice")
    choices = response.json()["choices"]
    assert choices[0]["message"]["content"] == "SELECT 1"
    assert choices[1]["message"]["content"].startswith("[agentos] tool call run_sql was blocked")
    assert decisions == [("text", "allowed"), ("text", "blocked")]


def test_a_response_the_layer_cannot_place_is_withheld_and_recorded(text_gateway, tmp_path):
    for question in ("unplaceable part", "unplaceable content"):
        response, decisions = ask(text_gateway, question)
        assert response.status_code == 502, response.text
        assert "DROP" not in response.text
        assert "withheld" in response.json()["error"]
        assert decisions == [("response", "blocked")]
    withheld = [r for r in audit_records(tmp_path) if r["tool_name"] == "unplaceable_response"]
    assert len(withheld) == 2 and all(r["rollout_id"] for r in withheld)


# -- 5. one rollout's slow input does not delay another rollout's check ----------------------------------------


class SlowOnRequest(Policy):
    """Takes ``seconds`` for a query that asks for it (a stand-in for a pathological input's parse time)."""

    runs_inline = True
    seconds = 6.0

    def __init__(self) -> None:
        super().__init__()
        self.started: list = []

    def evaluate(self, action, context):
        if "slow" in str(action.args.get("query", "")):
            self.started.append(context.rollout_id)
            time.sleep(self.seconds)
        return []


def test_one_rollouts_slow_checks_do_not_delay_another_rollouts_check(start_gateway, tmp_path):
    slow_query = [{"name": "run_sql", "arguments": json.dumps({"query": "SELECT 'slow'"})}]
    fast_query = [{"name": "run_sql", "arguments": json.dumps({"query": "SELECT 1"})}]
    port = free_port()
    server_config = gateway_config(port, tmp_path / "audit")
    server_config.pop("governance")
    policy = SlowOnRequest()
    kernel = GovernanceKernel([policy, SQLPolicy(deny=["DROP"])], recorder=tmp_path / "audit.db", policy_timeout_s=30)
    with ScriptedModel({"slow": slow_query, "fast": fast_query}) as model:
        gateway = start_gateway(GovernanceLayer(create_app(server_config), kernel, workers=2))
        gateway.register_model(model.endpoint)
        busy, other = gateway.new_rollout(), gateway.new_rollout()
        url = gateway.proxy_url(busy) + "/chat/completions"
        slow = [
            threading.Thread(target=httpx.post, args=(url,), kwargs={"json": chat("slow"), "timeout": 60})
            for _ in range(2)
        ]
        for thread in slow:
            thread.start()
        deadline = time.monotonic() + 30
        while not policy.started and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.5)  # both slow requests are in the layer: checked, or waiting for a worker
        started = time.perf_counter()
        response = httpx.post(gateway.proxy_url(other) + "/chat/completions", json=chat("fast"), timeout=60)
        latency = time.perf_counter() - started
        for thread in slow:
            thread.join()
    assert response.status_code == 200
    assert policy.started[0] == busy
    # Served beside the slow checks, not after one (6 s); 3 s leaves room for a loaded 2-core machine.
    assert latency < 3.0, f"another rollout's SELECT 1 waited {latency:.2f} s behind a slow rollout"
    assert len(of_type(gateway.events(other), DECISION_EVENT)) == 1
    assert len(of_type(gateway.events(busy), DECISION_EVENT)) == 2


# -- an unkeyed audit trail is said at start -----------------------------------------------


def test_the_gateway_warns_when_its_audit_trail_is_unkeyed(tmp_path, monkeypatch):
    from structlog.testing import capture_logs

    monkeypatch.delenv("AGENTOS_AUDIT_KEY", raising=False)
    monkeypatch.delenv("AGENTOS_AUDIT_KEY_FILE", raising=False)
    with capture_logs() as logs:
        create_governed_app(gateway_config(free_port(), tmp_path / "unkeyed")).close()
    (warning,) = [entry for entry in logs if "unkeyed" in entry["event"]]
    assert warning["log_level"] == "warning" and "AGENTOS_AUDIT_KEY" in warning["event"]
    assert warning["recorder"].startswith(str(tmp_path / "unkeyed"))

    monkeypatch.setenv("AGENTOS_AUDIT_KEY", "0123456789abcdef" * 4)
    with capture_logs() as logs:
        create_governed_app(gateway_config(free_port(), tmp_path / "keyed")).close()
    assert [entry for entry in logs if "unkeyed" in entry["event"]] == []


# -- a stream is judged whole, then re-emitted ---------------------------------------------


@pytest.mark.parametrize("include_usage", [False, True])
def test_a_stream_is_judged_whole_and_re_emitted(gateway_without_key, scripted_model, include_usage):
    import openai

    gateway = gateway_without_key
    rollout_id = gateway.new_rollout()
    client = openai.OpenAI(base_url=gateway.proxy_url(rollout_id), api_key="none")
    options = {"stream_options": {"include_usage": True}} if include_usage else {}
    stream = client.chat.completions.create(
        model=MODEL_NAME, messages=[{"role": "user", "content": "mixed"}], stream=True, **options
    )
    chunks = list(stream)
    deltas = [choice.delta for chunk in chunks for choice in chunk.choices]
    calls = [call for delta in deltas for call in delta.tool_calls or []]
    assert [(c.index, c.function.name, json.loads(c.function.arguments)) for c in calls] == [
        (0, "run_sql", {"query": "SELECT count(*) FROM users"})
    ]
    text = "".join(delta.content or "" for delta in deltas)
    assert text.startswith("[agentos] tool call run_sql was blocked and not executed") and "DROP" in text
    assert [c.finish_reason for chunk in chunks for c in chunk.choices if c.finish_reason] == ["tool_calls"]
    assert (chunks[-1].usage is not None) is include_usage
    # The model was asked for the whole answer; the harness got it as a stream after it was judged.
    assert scripted_model.requests[0].get("stream") is False
    verdicts = [d["data"]["verdict"] for d in of_type(gateway.events(rollout_id), DECISION_EVENT)]
    assert verdicts == ["allowed", "blocked"]


# -- the SQL a text carries is judged; prose is speech ----------------------------------------

CARRIED = {
    "fenced drop": [{"content": "Let me look.\n```sql\nDROP TABLE users\n```\nDone."}],
    "fenced read": [{"content": "Counting:\n```sql\nSELECT count(*) FROM users\n```"}],
    "unterminated fence": [{"content": "Here:\n```sql\nDROP TABLE users"}],
    "prose": [{"content": "There are 3 users, and I will not drop anything."}],
    "prefixed drop": [{"content": "Thought: the table is in the way\nSQL: DROP TABLE users"}],
    "prefixed prose": [{"content": "Thought: I am done; no SQL needed."}],
}


@pytest.fixture
def shaped_model():
    SHAPES.update(CARRIED)
    with ShapedModel({}) as model:
        yield model


def test_the_sql_a_text_carries_is_judged_and_prose_is_speech(start_gateway, shaped_model):
    fenced = start_gateway(text_action={"tool": "run_sql", "argument": "query", "fenced": True})
    prefixed = start_gateway(text_action={"tool": "run_sql", "argument": "query", "prefix": "SQL:"})
    for gateway in (fenced, prefixed):
        gateway.register_model(shaped_model.endpoint)

    def content(gateway, question):
        response, decisions = ask(gateway, question)
        assert response.status_code == 200, response.text
        return response.json()["choices"][0]["message"]["content"], decisions

    text, decisions = content(fenced, "fenced drop")
    assert text.startswith("[agentos] tool call run_sql was blocked") and decisions == [("text", "blocked")]
    text, decisions = content(fenced, "unterminated fence")
    assert text.startswith("[agentos] tool call run_sql was blocked") and decisions == [("text", "blocked")]
    assert content(fenced, "fenced read") == (CARRIED["fenced read"][0]["content"], [("text", "allowed")])
    assert content(fenced, "prose") == (CARRIED["prose"][0]["content"], [])
    text, decisions = content(prefixed, "prefixed drop")
    assert text.startswith("[agentos] tool call run_sql was blocked") and decisions == [("text", "blocked")]
    assert content(prefixed, "prefixed prose") == (CARRIED["prefixed prose"][0]["content"], [])


def test_a_text_action_reads_one_way_and_says_so(tmp_path):
    from agentlightning.contrib.gateway.agentos import GovernanceConfig

    base = gateway_config(0, tmp_path / "audit")["governance"]
    action = {"tool": "run_sql", "argument": "query"}
    assert GovernanceConfig.from_mapping({**base, "text_action": {**action, "fenced": True}}).text_action.fenced
    for bad in ({"fenced": "yes"}, {"prefix": ""}, {"fenced": True, "prefix": "SQL:"}, {"fence": True}):
        with pytest.raises(GovernanceConfigError, match="text_action"):
            GovernanceConfig.from_mapping({**base, "text_action": {**action, **bad}})


# -- the kernel's fail-closed paths, through the gateway -----------------------------------------------------

#: A DROP inside JSON text nested past what Python's JSON reader can read (3.12's reader goes deeper
#: than 3.11's 1,000 levels; 5,000 is past both).
DEEP_JSON_DROP = "[" * 5000 + json.dumps("DROP TABLE users") + "]" * 5000
DEEP_SCRIPT = {
    "deep note": [{"name": "notes", "arguments": json.dumps({"text": DEEP_JSON_DROP})}],
    "deep params": [{"name": "run_sql", "arguments": json.dumps({"query": "SELECT 1", "params": DEEP_JSON_DROP})}],
}


@pytest.mark.parametrize("question", sorted(DEEP_SCRIPT))
def test_a_drop_in_json_nested_past_the_recursion_limit_is_blocked_at_the_gateway(start_gateway, question):
    with ScriptedModel(DEEP_SCRIPT) as model:
        gateway = start_gateway()
        gateway.register_model(model.endpoint)
        rollout_id = gateway.new_rollout()
        response = httpx.post(gateway.proxy_url(rollout_id) + "/chat/completions", json=chat(question), timeout=60)
    assert response.status_code == 200, response.text
    message = response.json()["choices"][0]["message"]
    assert "tool_calls" not in message and "was blocked" in message["content"]
    (decision,) = of_type(gateway.events(rollout_id), DECISION_EVENT)
    assert decision["data"]["blocked"] is True
    # Read to the end (3.12's JSON reader goes deeper than 3.11's), the DROP is denied; not read
    # to the end, the text is unknown: either way the SQL guard itself blocks it.
    (sql_violation,) = [v for v in decision["data"]["violations"] if v["policy_name"] == "SQLPolicy"]
    assert (
        "DROP statement denied" in sql_violation["description"] or "nested too deeply" in sql_violation["description"]
    )


class ExitingPolicy(Policy):
    """A careless policy: it calls ``sys.exit`` instead of answering."""

    runs_inline = True

    def evaluate(self, action, context):
        raise SystemExit(2)


def test_a_policy_calling_sys_exit_is_a_blocked_decision_at_the_gateway_not_a_500(start_gateway, tmp_path):
    port = free_port()
    server_config = gateway_config(port, tmp_path / "audit")
    server_config.pop("governance")
    kernel = GovernanceKernel([ExitingPolicy(), SQLPolicy(deny=["DROP"])], recorder=tmp_path / "exit.db")
    with ScriptedModel(SCRIPT) as model:
        gateway = start_gateway(GovernanceLayer(create_app(server_config), kernel))
        gateway.register_model(model.endpoint)
        rollout_id = gateway.new_rollout()
        response = httpx.post(gateway.proxy_url(rollout_id) + "/chat/completions", json=chat("read"), timeout=60)
    assert response.status_code == 200, response.text
    assert "was blocked" in response.json()["choices"][0]["message"]["content"]
    (decision,) = of_type(gateway.events(rollout_id), DECISION_EVENT)
    assert decision["data"]["blocked"] is True
    assert "SystemExit" in json.dumps(decision["data"]["violations"])
