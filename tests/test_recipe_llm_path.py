"""The recipe's agent with an LLM: the same code, the SQL now written by an OpenAI-compatible
model endpoint (here a local HTTP server answering chat completions on loopback), governed the
same way."""

from __future__ import annotations

import asyncio
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

import agentlightning as agl
from agentlightning.store.memory import InMemoryLightningStore

from agentlightning.contrib.env.agentos.sql_world import SQLWorld
from agentlightning.contrib.kernel.agentos import GovernanceKernel, SQLPolicy
from agentlightning.contrib.reward.agentos import PolicyReward
from agentlightning.contrib.runner.agentos import AgentOSRunner

# End to end (the recipe's agent against a chat-completions server on loopback): `pytest -m "not e2e"` leaves it out.
pytestmark = pytest.mark.e2e

RECIPE_DIR = Path(__file__).resolve().parent.parent / "contrib" / "recipes" / "agentos"


class ChatCompletions(BaseHTTPRequestHandler):
    """Answers POST /v1/chat/completions with the SQL queued in ``server.answers``."""

    def do_POST(self):  # noqa: N802 (http.server naming)
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.requests.append(body)
        answer = self.server.answers.pop(0)
        payload = {
            "id": "chatcmpl-test",
            "object": "chat.completion",
            "created": 0,
            "model": body["model"],
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "stop",
                    "message": {"role": "assistant", "content": f"```sql\n{answer}\n```"},
                }
            ],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }
        data = json.dumps(payload).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def model_server():
    server = ThreadingHTTPServer(("127.0.0.1", 0), ChatCompletions)
    server.requests, server.answers = [], []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()


def test_llm_written_sql_is_governed_like_the_tabular_policy(model_server, tmp_path):
    with pytest.MonkeyPatch.context() as patch:
        patch.syspath_prepend(str(RECIPE_DIR))
        from sql_agent import SQLAgent, task_reward
    world = SQLWorld.create(tmp_path / "shop.db", 0)
    task = world.task("remove_test_accounts-00")
    model_server.answers[:] = [task.candidates["destructive_shortcut"], task.candidates["precise"]]

    async def scenario():
        store = InMemoryLightningStore()
        llm = agl.LLM(
            endpoint=f"http://127.0.0.1:{model_server.server_address[1]}/v1",
            model="sql-model",
            sampling_parameters={"temperature": 0.0},
        )
        await store.add_resources({"main_llm": llm})
        kernel = GovernanceKernel([SQLPolicy(deny=["DROP", "DELETE", "TRUNCATE"], dialect="sqlite")])
        runner = AgentOSRunner(kernel, reward_fn=PolicyReward(kernel), log_violations=False)
        with runner.run_context(agent=SQLAgent(str(world.db_path), 0, governed=True), store=store):
            first = await runner.step({"task_id": task.task_id, "seed": 0})
            second = await runner.step({"task_id": task.task_id, "seed": 0})
        return first, second

    first, second = asyncio.run(scenario())
    assert [len(r.violations) for r in (first, second)] == [1, 0]
    assert first.governance.decisions[0].blocked and first.governance.reward.final == -100.0
    assert second.governance.reward.final == pytest.approx(task_reward(True, task.candidates["precise"]) + 5.0)
    request = model_server.requests[0]
    assert request["model"] == "sql-model" and request["temperature"] == 0.0
    assert (
        task.question in request["messages"][1]["content"]
        and "CREATE TABLE customers" in request["messages"][0]["content"]
    )
