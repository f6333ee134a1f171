"""An OpenAI-compatible model server whose answers are scripted per question (a test double of the model only).

The gateway, the controller, the hooks and the harness under test are the real ones; what the
model says is fixed so that each test knows which tool call the gateway receives. Responses carry
token ids the way vLLM's ``return_token_ids`` does (top-level ``prompt_token_ids``,
``choices[0].token_ids``), so 1.0's trainer side builds triplets from them.
"""

from __future__ import annotations

import json
from typing import Any, Dict, List, Mapping

from gateway_services import JSONServer  # the recipes' folder, which this folder's conftest puts on sys.path


class ScriptedModel:
    """``script`` maps a user question to what the model emits for it: a list of tool calls
    (``{"name": ..., "arguments": <raw string>}``) or a text answer (a str)."""

    def __init__(self, script: Mapping[str, List[Dict[str, Any]]]) -> None:
        self.script = dict(script)
        self.requests: List[Dict[str, Any]] = []
        self.server = JSONServer(self._record_and_answer)

    @property
    def endpoint(self) -> str:
        return self.server.endpoint

    def __enter__(self) -> "ScriptedModel":
        self.server.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.stop()

    def _record_and_answer(self, body: Dict[str, Any]) -> Dict[str, Any]:
        self.requests.append(body)
        return self.answer(body)

    def answer(self, body: Dict[str, Any]) -> Dict[str, Any]:
        messages = body.get("messages", [])
        prompt_ids = [1 + (ord(c) % 200) for c in json.dumps(messages)][:64]
        question = next((m["content"] for m in messages if m.get("role") == "user"), "")
        message: Dict[str, Any] = {"role": "assistant", "content": None}
        if any(m.get("role") == "tool" for m in messages) or question not in self.script:
            message["content"] = "done"
            finish = "stop"
        elif isinstance(self.script[question], str):
            message["content"] = self.script[question]
            finish = "stop"
        else:
            message["tool_calls"] = [
                {"id": f"call_{i}", "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}}
                for i, c in enumerate(self.script[question])
            ]
            finish = "tool_calls"
        return {
            "id": "cmpl-scripted",
            "object": "chat.completion",
            "model": body.get("model", "scripted"),
            "prompt_token_ids": prompt_ids,
            "choices": [{"index": 0, "message": message, "finish_reason": finish, "token_ids": [7, 8, 9]}],
            "usage": {"prompt_tokens": len(prompt_ids), "completion_tokens": 3, "total_tokens": len(prompt_ids) + 3},
        }
