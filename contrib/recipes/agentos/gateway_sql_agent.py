"""A small SQL agent harness for Agent Lightning 1.0: an OpenAI client that executes every tool call it receives.

This is the "real harness, zero changes" side of 1.0: it knows nothing about governance. 1.0's
``agl-controller`` (local runner) starts it as ``GatewaySQLAgent().run()`` in a subprocess with
``AGL_OPENAI_BASE_URL`` (the gateway's proxy for this rollout and attempt), ``AGL_KEY`` and
``AGL_EVENT_URL``; the task arrives in ``AGENTOS_TASK`` (the rollout input, through the
controller's ``env_map``):

    {"question": "...", "db_path": "/path/world.db", "log_path": "/path/executed.jsonl",
     "expected_sql": "SELECT ..." (optional: the reward compares result rows),
     "reward": "executed" (optional: 1.0 when a statement ran without error), "max_turns": 2,
     "reward_url": "http://..." (optional: the task's own scorer decides the reward)}

It asks the model with one tool, ``run_sql(query)``, executes each tool call on the SQLite database
*as received* (a harness has no other defence; whatever reaches it runs), appends what it executed
to ``log_path``, sends the results back for one more turn, and posts its own reward event: 1.0 when
the rows of its last executed query equal those of ``expected_sql``, else 0.0 (with ``reward:
executed``, 1.0 when a statement ran without error; otherwise 1.0 when it finished). With a
``reward_url``, the harness posts what it executed there and posts the reward the scorer answers
(the text-to-SQL world's own task reward, as the 0.3 recipe's agent computes it). The governed
gateway in front of the model is what keeps a blocked call from ever reaching it.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from typing import Any, Dict, List, Optional

import httpx
from openai import OpenAI

RUN_SQL_TOOL = {
    "type": "function",
    "function": {
        "name": "run_sql",
        "description": "Run one SQL statement on the shop's SQLite database and return the rows.",
        "parameters": {
            "type": "object",
            "properties": {"query": {"type": "string", "description": "one SQL statement"}},
            "required": ["query"],
        },
    },
}
SYSTEM_PROMPT = "You answer questions about a SQLite database by calling run_sql with one SQL statement."
MAX_TURNS = 2


def rows_of(db_path: str, query: str) -> List[List[Any]]:
    """The rows ``query`` returns on a read-only connection (the reward's reference)."""
    conn = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    try:
        return [list(r) for r in conn.execute(query).fetchall()]
    finally:
        conn.close()


class GatewaySQLAgent:
    """The harness (see the module docstring). ``run()`` is what 1.0's local runner calls."""

    def __init__(self) -> None:
        self.task: Dict[str, Any] = json.loads(os.environ["AGENTOS_TASK"])
        self.client = OpenAI(base_url=os.environ["AGL_OPENAI_BASE_URL"], api_key=os.environ.get("AGL_KEY") or "none")
        self.event_url = os.environ["AGL_EVENT_URL"]
        self.key = os.environ.get("AGL_KEY") or ""

    def execute(self, query: str) -> Dict[str, Any]:
        """Run one statement exactly as received; log it first, so a test sees every execution."""
        with open(self.task["log_path"], "a", encoding="utf-8") as log:
            log.write(json.dumps({"time": time.time(), "query": query}) + "\n")
        conn = sqlite3.connect(self.task["db_path"])
        try:
            rows = [list(r) for r in conn.execute(query).fetchall()]
            conn.commit()
            return {"rows": rows[:50]}
        except sqlite3.Error as error:
            return {"error": str(error)}
        finally:
            conn.close()

    def run(self) -> None:
        messages: List[Dict[str, Any]] = [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": self.task["question"]},
        ]
        last_rows: Optional[List[List[Any]]] = None
        self.ran_without_error = False
        self.executed: List[str] = []
        for _ in range(int(self.task.get("max_turns", MAX_TURNS))):
            completion = self.client.chat.completions.create(
                model="policy", messages=messages, tools=[RUN_SQL_TOOL], max_tokens=96
            )
            message = completion.choices[0].message
            messages.append(message.model_dump(exclude_none=True))
            if not message.tool_calls:
                break
            for call in message.tool_calls:
                query = json.loads(call.function.arguments).get("query", "")
                result = self.execute(query)
                self.executed.append(query)
                last_rows = result.get("rows")
                self.ran_without_error = self.ran_without_error or "error" not in result
                messages.append({"role": "tool", "tool_call_id": call.id, "content": json.dumps(result)[:2000]})
        self.post_reward(self.reward(last_rows))

    def reward(self, last_rows: Optional[List[List[Any]]]) -> float:
        if self.task.get("reward_url"):
            response = httpx.post(
                self.task["reward_url"],
                json={"task_id": self.task.get("task_id"), "executed": self.executed},
                timeout=60,
            )
            response.raise_for_status()
            return float(response.json()["reward"])
        expected = self.task.get("expected_sql")
        if self.task.get("reward") == "executed":
            return 1.0 if self.ran_without_error else 0.0
        if not expected:
            return 1.0
        return 1.0 if last_rows is not None and last_rows == rows_of(self.task["db_path"], expected) else 0.0

    def post_reward(self, value: float) -> None:
        headers = {"authorization": f"Bearer {self.key}"} if self.key else {}
        response = httpx.post(
            self.event_url,
            json={"event_type": "reward", "data": {"value": value, "source": "agent"}},
            headers=headers,
            timeout=30,
        )
        response.raise_for_status()
