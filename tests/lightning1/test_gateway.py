"""The governed 1.0 gateway: 1.0's real app and proxy, the real kernel and FlightRecorder, a real harness.

Only the model's words are scripted (``ScriptedModel``); everything between the model and the
harness's database is the code a user runs.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time

import httpx
import openai
import pytest

from agentlightning.server.app import create_app
from gateway_sql_agent import GatewaySQLAgent  # noqa: E402 (the recipes' folder, which conftest puts on sys.path)

from agentlightning.contrib.gateway.agentos import DECISION_EVENT, GovernanceLayer
from agentlightning.contrib.kernel.agentos import GovernanceKernel, Policy, SQLPolicy
from agentlightning.contrib.kernel.agentos.audit import open_flight_recorder
from agentlightning.contrib.kernel.agentos.audit.record import decision_from_record

from ..conftest import make_shop_db, table_counts
from .conftest import free_port, gateway_config
from .scripted_model import ScriptedModel

DROP = [{"name": "run_sql", "arguments": json.dumps({"query": "DROP TABLE users"})}]
READ = [{"name": "run_sql", "arguments": json.dumps({"query": "SELECT count(*) FROM users"})}]
SCRIPT = {
    "drop": DROP,
    "read": READ,
    "twice": [{"name": "run_sql", "arguments": '{"query": "SELECT 1", "query": "DROP TABLE users"}'}],
    "other tool": [{"name": "send_email", "arguments": json.dumps({"to": "a@b.c"})}],
    "mixed": READ + DROP,
    "text drop": "DROP TABLE users",
}


@pytest.fixture
def scripted_model():
    with ScriptedModel(SCRIPT) as model:
        yield model


@pytest.fixture
def gateway(start_gateway, scripted_model):
    """The governed gateway (the test configuration's policies) in front of the scripted model."""
    gateway = start_gateway()
    gateway.register_model(scripted_model.endpoint)
    return gateway


def run_harness(monkeypatch, gateway, tmp_path, question: str) -> tuple:
    """The harness, as 1.0's local runner would start it, for one new rollout; returns its id, log, db."""
    db, log = tmp_path / "shop.db", tmp_path / "executed.jsonl"
    if not db.exists():
        make_shop_db(db)
    task = {"question": question, "db_path": str(db), "log_path": str(log)}
    rollout_id = gateway.new_rollout(task)
    monkeypatch.setenv("AGENTOS_TASK", json.dumps(task))
    monkeypatch.setenv("AGL_OPENAI_BASE_URL", gateway.proxy_url(rollout_id))
    monkeypatch.setenv("AGL_EVENT_URL", f"{gateway.url}/api/rollouts/{rollout_id}/attempt/0/events")
    monkeypatch.setenv("AGL_KEY", "")
    agent = GatewaySQLAgent()
    replies = []
    original = agent.client.chat.completions.create

    def spy(**kwargs):
        completion = original(**kwargs)
        replies.append(completion.choices[0].message)
        return completion

    agent.client.chat.completions.create = spy
    agent.run()
    executed = [json.loads(line)["query"] for line in log.read_text().splitlines()] if log.exists() else []
    return rollout_id, executed, db, replies


def of_type(events, event_type):
    return [e for e in events if e["event_type"] == event_type]


def test_a_blocked_drop_never_executes_and_every_decision_is_recorded(gateway, monkeypatch, tmp_path):
    rollout_id, executed, db, replies = run_harness(monkeypatch, gateway, tmp_path, "drop")

    assert executed == []  # the harness executes whatever it receives: it received no DROP
    assert "users" in table_counts(db)
    assert replies[0].tool_calls is None
    assert replies[0].content.startswith(
        "[agentos] tool call run_sql was blocked and not executed: SQLPolicy[critical]"
    )

    events = gateway.events(rollout_id)
    (model_request,) = of_type(events, "model_request")[:1]
    emitted = model_request["data"]["response"]["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"]
    assert json.loads(emitted) == {"query": "DROP TABLE users"}  # training sees what the model emitted
    (decision,) = of_type(events, DECISION_EVENT)
    assert (decision["rollout_id"], decision["attempt_id"]) == (rollout_id, "0")
    assert decision["data"]["blocked"] is True
    assert [v["severity"] for v in decision["data"]["violations"]] == ["critical"]
    assert [e["data"]["value"] for e in of_type(events, "reward")] == [1.0]  # the agent's own reward

    recorded = []  # the gateway's own file and each check worker's (one per core by default)
    for audit_file in sorted((tmp_path / "audit").glob("gateway-*.db")):
        recorder = open_flight_recorder(audit_file)
        assert recorder.verify_integrity()["valid"] is True
        recorded += [decision_from_record(r)["agentos"] for r in recorder.get_log() if decision_from_record(r)]
    assert [(r["decision_id"], r["verdict"], r["rollout_id"], r["attempt_id"]) for r in recorded] == [
        (decision["data"]["decision_id"], "blocked", rollout_id, "0")
    ]


def test_an_allowed_call_runs_as_judged(gateway, monkeypatch, tmp_path):
    rollout_id, executed, _, replies = run_harness(monkeypatch, gateway, tmp_path, "read")
    assert executed == ["SELECT count(*) FROM users"]
    (decision,) = of_type(gateway.events(rollout_id), DECISION_EVENT)
    assert (decision["data"]["verdict"], decision["data"]["violations"]) == ("allowed", [])


def test_of_two_calls_only_the_blocked_one_is_withheld(gateway, monkeypatch, tmp_path):
    rollout_id, executed, db, replies = run_harness(monkeypatch, gateway, tmp_path, "mixed")
    assert executed == ["SELECT count(*) FROM users"]
    assert [c.function.name for c in replies[0].tool_calls] == ["run_sql"]
    assert "blocked and not executed" in replies[0].content
    assert [d["data"]["verdict"] for d in of_type(gateway.events(rollout_id), DECISION_EVENT)] == ["allowed", "blocked"]


@pytest.mark.parametrize(
    "question, policy",
    [("twice", "AgentOSGateway"), ("other tool", "ToolAllowListPolicy")],
    ids=["duplicated-key-unreadable", "tool-not-allowed"],
)
def test_unreadable_or_unlisted_calls_are_refused_and_recorded(gateway, monkeypatch, tmp_path, question, policy):
    rollout_id, executed, db, replies = run_harness(monkeypatch, gateway, tmp_path, question)
    assert executed == [] and "users" in table_counts(db)
    (decision,) = of_type(gateway.events(rollout_id), DECISION_EVENT)
    assert decision["data"]["blocked"] is True
    assert decision["data"]["violations"][0]["policy_name"] == policy


def test_text_is_an_action_only_when_configured(start_gateway, monkeypatch, tmp_path):
    with ScriptedModel(SCRIPT) as model:
        plain = start_gateway()
        plain.register_model(model.endpoint)
        governed_text = start_gateway(text_action={"tool": "run_sql", "argument": "query"})
        governed_text.register_model(model.endpoint)
        question = [{"role": "user", "content": "text drop"}]

        def ask(gateway):
            rollout_id = gateway.new_rollout()
            client = openai.OpenAI(base_url=gateway.proxy_url(rollout_id), api_key="none")
            reply = client.chat.completions.create(model="policy", messages=question).choices[0].message.content
            return reply, of_type(gateway.events(rollout_id), DECISION_EVENT)

        assert ask(plain) == ("DROP TABLE users", [])
        reply, decisions = ask(governed_text)
    assert reply.startswith("[agentos] tool call run_sql was blocked")
    assert [(d["data"]["source"], d["data"]["blocked"]) for d in decisions] == [("text", True)]


class SlowPolicy(Policy):
    """Takes 3 s per check and notes the thread it ran on (inline: on the thread that called the kernel)."""

    runs_inline = True
    threads: list = []

    def evaluate(self, action, context):
        SlowPolicy.threads.append(threading.current_thread().name)
        time.sleep(3.0)
        return []


def test_kernel_checks_run_off_the_event_loop(start_gateway, tmp_path):
    port = free_port()
    server_config = gateway_config(port, tmp_path / "audit")
    server_config.pop("governance")
    kernel = GovernanceKernel(
        [SlowPolicy(), SQLPolicy(deny=["DROP"])], recorder=tmp_path / "slow.db", policy_timeout_s=5
    )
    with ScriptedModel(SCRIPT) as model:
        gateway = start_gateway(GovernanceLayer(create_app(server_config), kernel))
        gateway.register_model(model.endpoint)
        rollout_id = gateway.new_rollout()
        body = {"model": "policy", "messages": [{"role": "user", "content": "read"}]}
        slow = threading.Thread(
            target=httpx.post,
            args=(gateway.proxy_url(rollout_id) + "/chat/completions",),
            kwargs={"json": body, "timeout": 30},
        )
        slow.start()
        while not SlowPolicy.threads:
            time.sleep(0.01)
        started = time.perf_counter()
        assert httpx.get(f"{gateway.url}/healthz").status_code == 200
        health_latency = time.perf_counter() - started
        slow.join()
    # A check on the event loop would hold /healthz for the policy's 3 s; 1.5 s leaves room for a
    # loaded machine (at load 14 an answer took 0.45 s even with the check off the loop).
    assert health_latency < 1.5, f"the event loop waited {health_latency:.2f} s for a kernel check"
    assert SlowPolicy.threads[0].startswith("agentos-gateway")  # the layer's pool, not uvicorn's loop thread
    assert len(of_type(gateway.events(rollout_id), DECISION_EVENT)) == 1


def test_a_response_the_layer_cannot_read_is_withheld(start_gateway, tmp_path):
    class Broken(ScriptedModel):
        def answer(self, body):
            return {"choices": [{"index": 0, "message": {"role": "assistant", "tool_calls": {"not": "a list"}}}]}

    with Broken({}) as model:
        gateway = start_gateway()
        gateway.register_model(model.endpoint)
        response = httpx.post(
            gateway.proxy_url(gateway.new_rollout()) + "/chat/completions",
            json={"model": "policy", "messages": [{"role": "user", "content": "x"}]},
        )
    assert response.status_code == 502
    assert "the model response was withheld" in response.json()["error"]


def test_the_database_is_untouched_by_a_blocked_call_but_changed_by_an_ungoverned_gateway(monkeypatch, tmp_path):
    """The control: 1.0's own gateway without the layer hands the DROP to the harness, which runs it."""
    from .conftest import RunningGateway

    port = free_port()
    server_config = gateway_config(port, tmp_path / "audit")
    server_config.pop("governance")

    class Plain:
        def __init__(self, app):
            self.app = app

        async def __call__(self, scope, receive, send):
            await self.app(scope, receive, send)

        def close(self):
            pass

    with ScriptedModel(SCRIPT) as model:
        gateway = RunningGateway(Plain(create_app(server_config)), port).start()
        try:
            gateway.register_model(model.endpoint)
            _, executed, db, _ = run_harness(monkeypatch, gateway, tmp_path, "drop")
        finally:
            gateway.stop()
    assert executed == ["DROP TABLE users"]
    assert "users" not in table_counts(db)
    with pytest.raises(sqlite3.OperationalError):
        sqlite3.connect(db).execute("SELECT 1 FROM users")


def test_a_failed_rollout_is_still_priced_from_the_gateways_events(gateway, monkeypatch, tmp_path):
    """1.0 gives on_failed no events: the hooks read them from the gateway, so a blocked call is penalised."""
    from types import SimpleNamespace

    from agentlightning.contrib.gateway.agentos import GovernanceConfig
    from agentlightning.contrib.gateway.agentos.hooks import GovernanceHooks

    rollout_id = gateway.new_rollout()
    client = openai.OpenAI(base_url=gateway.proxy_url(rollout_id), api_key="none")
    client.chat.completions.create(model="policy", messages=[{"role": "user", "content": "drop"}])
    # the agent crashed before posting a reward: the rollout fails
    config = GovernanceConfig.from_mapping(gateway_config(0, tmp_path / "unused")["governance"])
    hooks = GovernanceHooks(config, gateway_url=gateway.url)
    written = []
    rollout = SimpleNamespace(rollout_id=rollout_id, status=SimpleNamespace(last_attempt_id="0"))
    hooks.on_failed(rollout, SimpleNamespace(add_event=lambda *event: written.append(event)))
    ((_, attempt_id, event_type, data),) = written
    assert (attempt_id, event_type, data["reason"], data["value"]) == ("0", "reward", "agentos.governed", -100.0)
