"""A model's tool call whose name is not a tool name (SQL or prose where the name goes) is refused
as unreadable, with a record, like any other call the gateway cannot read: never an exception
out of the gateway, never a check of a tool named by the text."""

from __future__ import annotations

import json

from agentlightning.contrib.gateway.agentos.govern import govern_response
from agentlightning.contrib.kernel.agentos import ActionContext, GovernanceKernel, SQLPolicy


def test_a_tool_call_named_by_sql_is_refused_as_unreadable():
    kernel = GovernanceKernel([SQLPolicy(deny=["DROP"])])
    call = {"id": "c1", "type": "function", "function": {"name": "DROP TABLE users", "arguments": json.dumps({})}}
    response = {
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "tool_calls": [call]}}]
    }
    governed, decisions = govern_response(kernel, response, "chat/completions", ActionContext(rollout_id="r1"))
    (decision,) = [d.decision for d in decisions]
    assert decision.blocked and "is not a tool name" in decision.reason
    assert decision.action.tool_name == "unreadable_tool_call"
    assert "tool_calls" not in governed["choices"][0]["message"]
