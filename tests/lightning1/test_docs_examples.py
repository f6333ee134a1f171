"""docs/agentlightning-1.0.md's streaming harness and trail check, run as they are written there.

The streaming harness (a user's OpenAI client with ``stream=True``) runs against the real 1.0
gateway behind the governance layer, in front of a scripted model that answers with an allowed
SELECT and a DROP: the harness executes the SELECT only and reads the DROP's refusal in the text.
The trail check runs on the gateway's keyed trail (valid, keyed), then on the same trail with one
record's verdict edited (it fails, naming the record).
"""

from __future__ import annotations

import contextlib
import io
import re
import sqlite3
from pathlib import Path

import pytest

from agentlightning.contrib.gateway.agentos import DECISION_EVENT, create_governed_app

from .conftest import free_port, gateway_config
from .scripted_model import ScriptedModel
from .test_gateway import SCRIPT, of_type

DOCS = Path(__file__).resolve().parents[2] / "docs" / "agentlightning-1.0.md"
RUN_SQL = {
    "type": "function",
    "function": {
        "name": "run_sql",
        "parameters": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
    },
}


def documented(marker: str) -> str:
    """The code block that follows ``marker`` in docs/agentlightning-1.0.md."""
    match = re.search(re.escape(marker) + r"[^\n]*\n```\w*\n(.*?)```", DOCS.read_text(encoding="utf-8"), re.S)
    assert match, f"docs/agentlightning-1.0.md has no code block after {marker!r}"
    return match.group(1)


@pytest.fixture
def scripted_model():
    with ScriptedModel(SCRIPT) as model:
        yield model


def test_the_documented_streaming_harness_executes_only_what_was_allowed(start_gateway, scripted_model, monkeypatch):
    gateway = start_gateway()
    gateway.register_model(scripted_model.endpoint)
    rollout_id = gateway.new_rollout()
    monkeypatch.setenv("AGL_OPENAI_BASE_URL", gateway.proxy_url(rollout_id))
    monkeypatch.setenv("AGL_KEY", "")
    executed = []
    scope = {
        "messages": [{"role": "user", "content": "mixed"}],  # the model answers a SELECT and a DROP
        "RUN_SQL": RUN_SQL,
        "execute": lambda name, arguments: executed.append((name, arguments)),
    }
    exec(compile(documented("<!-- streaming-harness-py"), "streaming-harness", "exec"), scope)

    assert executed == [("run_sql", {"query": "SELECT count(*) FROM users"})]
    assert "[agentos] tool call run_sql was blocked and not executed" in "".join(scope["text"])
    assert scripted_model.requests[0]["stream"] is False  # the model was asked for the whole answer
    verdicts = [e["data"]["verdict"] for e in of_type(gateway.events(rollout_id), DECISION_EVENT)]
    assert verdicts == ["allowed", "blocked"]


def test_the_documented_trail_check_passes_on_a_keyed_trail_and_fails_on_an_edited_one(
    start_gateway, scripted_model, monkeypatch, tmp_path
):
    import httpx

    monkeypatch.setenv("AGENTOS_AUDIT_KEY", "5e" * 32)
    monkeypatch.delenv("AGENTOS_AUDIT_KEY_FILE", raising=False)
    gateway = start_gateway(create_governed_app(gateway_config(free_port(), tmp_path / "agentos_audit")))
    gateway.register_model(scripted_model.endpoint)
    for question in ("read", "drop"):
        body = {"model": "policy", "messages": [{"role": "user", "content": question}]}
        response = httpx.post(gateway.proxy_url(gateway.new_rollout()) + "/chat/completions", json=body, timeout=60)
        assert response.status_code == 200
    monkeypatch.chdir(tmp_path)
    check = compile(documented("<!-- verify-trail-py"), "check_trail", "exec")

    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(check, {})
    lines = printed.getvalue().splitlines()  # the gateway's own file and each check worker's
    assert lines and all(re.fullmatch(r"gateway-\d+-\d+\.db True keyed \d+", line) for line in lines), lines
    assert sum(int(line.rsplit(" ", 1)[1]) for line in lines) == 2

    for trail in (tmp_path / "agentos_audit").glob("gateway-*.db"):
        with sqlite3.connect(trail) as conn:  # someone without the key turns the blocked DROP into an allowed one
            conn.execute("UPDATE audit_log SET policy_verdict = 'allowed' WHERE policy_verdict != 'allowed'")
    with pytest.raises(AssertionError, match=r"entry \d: field tampering detected"):
        exec(check, {})
