"""Judge the actions in one model response and rewrite it so that only allowed actions reach the harness.

A chat-completion response acts through ``tool_calls``. Each call goes through the kernel with the
rollout and attempt as context:

* allowed (or warned, or modified by a policy): the call stays, its ``arguments`` re-serialised
  from the arguments the kernel judged (what was checked is what runs: a duplicated key or any
  other text two JSON readers could read differently never reaches the harness);
* blocked: the call is removed and a refusal the harness can read is appended to the message's
  ``content``; with no call left, ``finish_reason`` becomes ``"stop"``;
* unreadable (not a function call, a name that is not a string, arguments that are not a JSON
  object, a duplicated key): refused by the kernel (``kernel.refuse``), recorded and removed.

Text is not an action unless the configuration says which tool it stands for (``text_action``):
then a choice's text (``message.content`` without tool calls, or a legacy completion's ``text``)
is judged as that tool's argument and replaced by the refusal when blocked.

>>> from agentlightning.contrib.kernel.agentos import ActionContext, GovernanceKernel, SQLPolicy
>>> kernel = GovernanceKernel([SQLPolicy(deny=["DROP"], tools=["run_sql"], detect=False)])
>>> call = {"id": "c1", "type": "function", "function": {"name": "run_sql", "arguments": '{"query": "DROP TABLE t"}'}}
>>> response = {"choices": [{"index": 0, "finish_reason": "tool_calls",
...                          "message": {"role": "assistant", "content": None, "tool_calls": [call]}}]}
>>> governed, decisions = govern_response(kernel, response, "chat/completions", ActionContext(rollout_id="r1"))
>>> message = governed["choices"][0]["message"]
>>> "tool_calls" in message, governed["choices"][0]["finish_reason"], decisions[0].decision.blocked
(False, 'stop', True)
>>> message["content"].startswith("[agentos] tool call run_sql was blocked and not executed")
True
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Tuple

from agentlightning.contrib.kernel.agentos import Action, ActionContext, Decision, GovernanceKernel
from agentlightning.contrib.kernel.agentos.actions import not_a_tool_name

__all__ = [
    "GATEWAY_POLICY_NAME",
    "GatewayDecision",
    "TextAction",
    "UnreadableAction",
    "govern_response",
    "refusal_text",
]

#: ``policy_name`` of the violation recorded for an action the gateway could not read.
GATEWAY_POLICY_NAME = "AgentOSGateway"
#: Tool name under which an unreadable call is recorded when it has no readable name.
UNREADABLE_TOOL = "unreadable_tool_call"


class UnreadableAction(ValueError):
    """A tool call the gateway cannot read as an action (it is refused, never forwarded)."""


@dataclass(frozen=True)
class TextAction:
    """Which tool a choice's text stands for, for harnesses that act through text."""

    tool: str
    argument: str


@dataclass(frozen=True)
class GatewayDecision:
    """One judged action of a response: where it was and what the kernel decided."""

    decision: Decision
    choice_index: int
    tool_call_id: Optional[str]
    source: str  #: "tool_call" or "text"


def refusal_text(decision: Decision) -> str:
    """What the harness reads instead of a blocked action.

    >>> from agentlightning.contrib.kernel.agentos import GovernanceKernel, SQLPolicy
    >>> refusal_text(GovernanceKernel([SQLPolicy(deny=["DROP"])]).check("run_sql", {"query": "DROP TABLE t"}))
    '[agentos] tool call run_sql was blocked and not executed: SQLPolicy[critical]: DROP statement denied: DROP TABLE t'
    """
    return f"[agentos] tool call {decision.action.tool_name} was blocked and not executed: {decision.reason}"


def _no_duplicate_keys(pairs: List[Tuple[str, Any]]) -> Dict[str, Any]:
    seen: Dict[str, Any] = {}
    for key, value in pairs:
        if key in seen:
            raise UnreadableAction(f"the arguments repeat the key {key!r} (two readers could disagree on its value)")
        seen[key] = value
    return seen


def read_tool_call(call: Any) -> Tuple[str, Dict[str, Any]]:
    """``(name, arguments)`` of an OpenAI function tool call, or :class:`UnreadableAction` saying why not.

    >>> read_tool_call({"type": "function", "function": {"name": "f", "arguments": '{"a": 1}'}})
    ('f', {'a': 1})
    >>> try:
    ...     read_tool_call({"type": "function", "function": {"name": "f", "arguments": '{"a": 1, "a": 2}'}})
    ... except UnreadableAction as error:
    ...     print(error)
    the arguments repeat the key 'a' (two readers could disagree on its value)
    """
    if not isinstance(call, Mapping) or call.get("type", "function") != "function":
        raise UnreadableAction(f"not a function tool call: {str(call)[:200]!r}")
    function = call.get("function")
    if not isinstance(function, Mapping):
        raise UnreadableAction("the tool call has no 'function' object")
    name, arguments = function.get("name"), function.get("arguments")
    if not isinstance(name, str) or not name.strip():
        raise UnreadableAction(f"the tool call's name is not a non-empty string: {name!r}")
    if not_a_tool_name(name):  # code or prose where the name goes: refused like any unreadable call
        raise UnreadableAction(f"the tool call's name is not a tool name: {name[:200]!r}")
    if not isinstance(arguments, str):
        raise UnreadableAction(f"the tool call's arguments are not a JSON string: {type(arguments).__name__}")
    try:
        parsed = json.loads(arguments or "{}", object_pairs_hook=_no_duplicate_keys)
    except json.JSONDecodeError as error:
        raise UnreadableAction(f"the tool call's arguments are not JSON ({error.msg} at {error.pos})") from None
    if not isinstance(parsed, dict):
        raise UnreadableAction(f"the tool call's arguments are not a JSON object: {type(parsed).__name__}")
    return name, parsed


def _judge_call(kernel: GovernanceKernel, call: Any, context: ActionContext) -> Decision:
    try:
        name, arguments = read_tool_call(call)
    except UnreadableAction as error:
        function = call.get("function") if isinstance(call, Mapping) else None
        name = function.get("name") if isinstance(function, Mapping) else None
        tool = name if isinstance(name, str) and name.strip() and not not_a_tool_name(name) else UNREADABLE_TOOL
        raw = function.get("arguments") if isinstance(function, Mapping) else call
        action = Action(tool, {"unreadable": str(raw)[:2000]})
        return kernel.refuse(action, f"unreadable tool call: {error}", context=context, refused_by=GATEWAY_POLICY_NAME)
    return kernel.check(Action(name, arguments), context=context)


def _append_refusals(content: Any, refusals: List[str]) -> str:
    parts = [content] if isinstance(content, str) and content else []
    return "\n".join(parts + refusals)


def _govern_message(
    kernel: GovernanceKernel, choice: Dict[str, Any], index: int, context: ActionContext, text: Optional[TextAction]
) -> List[GatewayDecision]:
    message = choice.get("message")
    if not isinstance(message, dict):
        raise UnreadableAction(f"choice {index} has no message object")
    judged: List[GatewayDecision] = []
    calls = message.get("tool_calls")
    legacy = message.get("function_call")
    if legacy is not None:  # the pre-tools OpenAI format acts the same way: judge it as one more call
        calls = list(calls or []) + [{"id": None, "type": "function", "function": legacy}]
    if calls is not None and not isinstance(calls, list):
        raise UnreadableAction(f"choice {index}: tool_calls is not a list")
    if calls:
        kept, refusals = [], []
        for call in calls:
            decision = _judge_call(kernel, call, context)
            call_id = call.get("id") if isinstance(call, Mapping) else None
            judged.append(GatewayDecision(decision, index, call_id if isinstance(call_id, str) else None, "tool_call"))
            if decision.blocked:
                refusals.append(refusal_text(decision))
                continue
            # What runs is what was checked: the (possibly rewritten) action the kernel decided on.
            allowed = copy.deepcopy(call)
            allowed["function"] = {"name": decision.action.tool_name, "arguments": json.dumps(decision.action.args)}
            kept.append(allowed)
        message.pop("function_call", None)
        if kept:
            message["tool_calls"] = kept
        else:
            message.pop("tool_calls", None)
            choice["finish_reason"] = "stop"
        if refusals:
            message["content"] = _append_refusals(message.get("content"), refusals)
    elif text is not None and isinstance(message.get("content"), str) and message["content"]:
        decision = kernel.check(Action(text.tool, {text.argument: message["content"]}), context=context)
        judged.append(GatewayDecision(decision, index, None, "text"))
        if decision.blocked:
            message["content"] = refusal_text(decision)
    return judged


def govern_response(
    kernel: GovernanceKernel,
    response: Mapping[str, Any],
    upstream_path: str,
    context: ActionContext,
    text: Optional[TextAction] = None,
) -> Tuple[Dict[str, Any], List[GatewayDecision]]:
    """The response the harness may see, and every decision taken on the way (see the module docstring).

    The input is not changed (1.0's proxy has already recorded it as the ``model_request`` event,
    so training sees what the model emitted). Anything that cannot be read raises
    :class:`UnreadableAction`; the caller then withholds the whole response.
    """
    governed = copy.deepcopy(dict(response))
    choices = governed.get("choices")
    if choices is None:
        return governed, []  # an error body: no model output, nothing to act on
    if not isinstance(choices, list):
        raise UnreadableAction("'choices' is not a list")
    decisions: List[GatewayDecision] = []
    for position, choice in enumerate(choices):
        if not isinstance(choice, dict):
            raise UnreadableAction(f"choice {position} is not an object")
        index = choice.get("index", position)
        index = index if isinstance(index, int) else position
        if upstream_path == "chat/completions":
            decisions.extend(_govern_message(kernel, choice, index, context, text))
        elif text is not None and isinstance(choice.get("text"), str) and choice["text"]:
            decision = kernel.check(Action(text.tool, {text.argument: choice["text"]}), context=context)
            decisions.append(GatewayDecision(decision, index, None, "text"))
            if decision.blocked:
                choice["text"] = refusal_text(decision)
    return governed, decisions
