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
then every text of every choice is judged as that tool's argument and replaced by the refusal when
blocked: ``message.content`` as a string or each ``text`` part of a list of parts, beside tool calls
or without them, and a legacy completion's ``text``. Content the layer cannot read as text (a part
of another type, an object) is unreadable: the whole response is withheld.

Only the two upstream paths 1.0 proxies are read (``chat/completions``, ``completions``), and a
response to them must carry ``choices``: any other path or shape is unreadable, never passed.

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
    "as_stream_events",
    "govern_response",
    "refusal_text",
]

#: ``policy_name`` of the violation recorded for an action the gateway could not read.
GATEWAY_POLICY_NAME = "AgentOSGateway"
#: Tool name under which an unreadable call is recorded when it has no readable name.
UNREADABLE_TOOL = "unreadable_tool_call"
#: Info strings after an opening fence that name the block's language (not code) for ``TextAction.fenced``.
FENCE_LANGUAGES = frozenset(
    {"", "sql", "sqlite", "postgres", "postgresql", "psql", "mysql", "mariadb", "bash", "sh", "shell", "python", "py"}
)
#: The upstream paths whose responses the gateway reads (1.0's proxy serves these two).
READABLE_PATHS = ("chat/completions", "completions")


class UnreadableAction(ValueError):
    """A tool call the gateway cannot read as an action (it is refused, never forwarded)."""


@dataclass(frozen=True)
class TextAction:
    """Which tool a choice's text stands for, for harnesses that act through text, and what of it they run.

    By default the whole text is the tool's argument. A harness that runs only the code a text
    carries says where it is: ``fenced`` (each fenced code block; an unterminated fence runs to the
    end of the text) or ``prefix`` (the rest of each line that starts with it, as a ReAct
    ``Action Input:``). Then each carried piece is judged, and prose that carries none is speech: it
    is delivered as it is, with no decision.

    >>> TextAction("run_sql", "query", fenced=True).carried("Here:\\n```sql\\nSELECT 1\\n```\\nand ```DROP TABLE t")
    ['SELECT 1', 'DROP TABLE t']
    >>> TextAction("run_sql", "query", prefix="SQL:").carried("Thought: count them\\nSQL: SELECT count(*) FROM t")
    ['SELECT count(*) FROM t']
    >>> TextAction("run_sql", "query", fenced=True).carried("```DROP\\nTABLE t```")
    ['DROP\\nTABLE t']
    >>> TextAction("run_sql", "query").carried("any text at all")
    ['any text at all']
    """

    tool: str
    argument: str
    fenced: bool = False
    prefix: Optional[str] = None

    def carried(self, text: str) -> List[str]:
        """The pieces of ``text`` the harness would run (see the class docstring)."""
        if self.fenced:
            pieces = []
            for block in text.split("```")[1::2]:  # inside the fences; a last, unterminated one included
                first, _, rest = block.partition("\n")
                # A known language tag after the opening fence (```sql) is not code; any other first
                # line is judged with the rest (```DROP + a new line + TABLE t reads as DROP TABLE t).
                code = rest if first.strip().lower() in FENCE_LANGUAGES else block
                pieces.append(code.strip())
            return [piece for piece in pieces if piece]
        if self.prefix:
            lines = (line.strip() for line in text.splitlines())
            return [line[len(self.prefix) :].strip() for line in lines if line.startswith(self.prefix)]
        return [text]


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


def _append_refusals(content: Any, refusals: List[str]) -> Any:
    if isinstance(content, list):  # a list of parts stays one: the refusals are text parts after it
        return content + [{"type": "text", "text": refusal} for refusal in refusals]
    parts = [content] if isinstance(content, str) and content else []
    return "\n".join(parts + refusals)


def _judge_text(
    kernel: GovernanceKernel, text: str, index: int, context: ActionContext, action: TextAction
) -> Tuple[str, List[GatewayDecision]]:
    """The text the harness may see (the refusals when a piece it carries is blocked) and the decisions on it."""
    decisions = [
        kernel.check(Action(action.tool, {action.argument: piece}), context=context) for piece in action.carried(text)
    ]
    refusals = [refusal_text(decision) for decision in decisions if decision.blocked]
    judged = [GatewayDecision(decision, index, None, "text") for decision in decisions]
    return ("\n".join(refusals) if refusals else text), judged


def _govern_content(
    kernel: GovernanceKernel, content: Any, index: int, context: ActionContext, action: TextAction
) -> Tuple[Any, List[GatewayDecision]]:
    """Every text of a message's ``content`` judged as ``action``: a string, or each text part of a list."""
    if content is None or content == "":
        return content, []
    if isinstance(content, str):
        return _judge_text(kernel, content, index, context, action)
    if not isinstance(content, list):
        raise UnreadableAction(f"choice {index}: content is neither text nor a list of parts: {type(content).__name__}")
    parts, judged = [], []
    for position, part in enumerate(content):
        if not isinstance(part, Mapping) or part.get("type") != "text" or not isinstance(part.get("text"), str):
            raise UnreadableAction(
                f"choice {index}: content part {position} is not a text part the gateway can judge: {str(part)[:200]!r}"
            )
        governed, decisions = _judge_text(kernel, part["text"], index, context, action)
        parts.append({**part, "text": governed})
        judged.extend(decisions)
    return parts, judged


def _govern_message(
    kernel: GovernanceKernel, choice: Dict[str, Any], index: int, context: ActionContext, text: Optional[TextAction]
) -> List[GatewayDecision]:
    message = choice.get("message")
    if not isinstance(message, dict):
        raise UnreadableAction(f"choice {index} has no message object")
    judged: List[GatewayDecision] = []
    if text is not None:
        message["content"], judged = _govern_content(kernel, message.get("content"), index, context, text)
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
    :class:`UnreadableAction`; the caller then withholds the whole response. An error body (no
    ``choices``, status >= 400) is the caller's to pass: it carries no model output.
    """
    if upstream_path not in READABLE_PATHS:
        raise UnreadableAction(
            f"the gateway cannot read responses of upstream path {upstream_path!r} (it reads {list(READABLE_PATHS)})"
        )
    governed = copy.deepcopy(dict(response))
    choices = governed.get("choices")
    if not isinstance(choices, list):
        raise UnreadableAction(f"the response has no 'choices' list to judge: {str(choices)[:200]!r}")
    decisions: List[GatewayDecision] = []
    for position, choice in enumerate(choices):
        if not isinstance(choice, dict):
            raise UnreadableAction(f"choice {position} is not an object")
        index = choice.get("index", position)
        index = index if isinstance(index, int) else position
        if upstream_path == "chat/completions":
            decisions.extend(_govern_message(kernel, choice, index, context, text))
        elif text is not None:
            if not isinstance(choice.get("text"), str):
                raise UnreadableAction(f"choice {position}: a completion's text is not a string")
            if choice["text"]:
                choice["text"], judged = _judge_text(kernel, choice["text"], index, context, text)
                decisions.extend(judged)
    return governed, decisions


def _stream_text(content: Any, index: int) -> Optional[str]:
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list) and all(isinstance(p, Mapping) and p.get("type") == "text" for p in content):
        return "".join(str(p.get("text", "")) for p in content)
    raise UnreadableAction(f"choice {index}: content the gateway cannot send as a stream: {str(content)[:200]!r}")


def as_stream_events(governed: Mapping[str, Any], upstream_path: str, *, include_usage: bool) -> List[Dict[str, Any]]:
    """A governed response as the chunks a streaming client reads (each one ``data:`` line of the stream).

    The model was asked for the whole answer and it has been judged: the stream is the governed
    response, each choice's message as one delta, then its ``finish_reason``, then (when asked for
    with ``stream_options.include_usage``) the usage.

    >>> response = {"id": "c1", "created": 1, "model": "m", "usage": {"total_tokens": 3}, "choices": [
    ...     {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "hi"}}]}
    >>> [e["choices"] for e in as_stream_events(response, "chat/completions", include_usage=True)]
    [[{'index': 0, 'delta': {'role': 'assistant', 'content': 'hi'}, 'finish_reason': None, 'logprobs': None}], \
[{'index': 0, 'delta': {}, 'finish_reason': 'stop', 'logprobs': None}], []]
    """
    chat = upstream_path == "chat/completions"
    base = {
        "id": governed.get("id"),
        "object": "chat.completion.chunk" if chat else "text_completion",
        "created": governed.get("created", 0),
        "model": governed.get("model"),
    }
    events: List[Dict[str, Any]] = []
    for position, choice in enumerate(governed["choices"]):
        index = choice.get("index", position)
        if chat:
            message = choice.get("message") or {}
            delta: Dict[str, Any] = {"role": message.get("role", "assistant")}
            text = _stream_text(message.get("content"), index)
            if text is not None:
                delta["content"] = text
            if message.get("tool_calls"):
                delta["tool_calls"] = [{"index": i, **call} for i, call in enumerate(message["tool_calls"])]
            first: Dict[str, Any] = {"index": index, "delta": delta}
            last: Dict[str, Any] = {"index": index, "delta": {}}
        else:
            first = {"index": index, "text": choice.get("text", "")}
            last = {"index": index, "text": ""}
        events.append({**base, "choices": [{**first, "finish_reason": None, "logprobs": None}]})
        events.append({**base, "choices": [{**last, "finish_reason": choice.get("finish_reason"), "logprobs": None}]})
    if include_usage:
        events.append({**base, "choices": [], "usage": governed.get("usage")})
    return events
