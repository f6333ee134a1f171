"""The governance layer in front of Agent Lightning 1.0's proxy: an ASGI middleware around 1.0's own app.

1.0's proxy has no extension point: it forwards a chat completion upstream, records the
``model_request`` event and returns the upstream body unchanged. This layer wraps
``agentlightning.server.app.create_app`` and, for every proxied completion
(``/proxy/rollout/{rollout_id}/attempt/{attempt_id}/mode/{mode}/openai/v1/{path}``):

1. refuses a streaming request before anything is forwarded (a tool call must be judged whole
   before the harness sees any of it);
2. lets 1.0's proxy forward the request and record the model's original response;
3. judges every action in the response with the kernel, the rollout and attempt as context, in a
   thread pool (the gateway is one event loop and 1.0's store is plain dicts owned by it);
4. records one ``agentos.decision`` event per decision on the attempt, on the loop thread, with
   1.0's own ``record_event``;
5. returns the governed response (blocked calls replaced by refusals).

Fail closed: a response that cannot be read, a decision that cannot be recorded as an event, or
any error in the layer withholds the whole response (HTTP 502 with the reason); the harness never
receives an action that was not judged and recorded. Everything else (the store API, events,
models, health) passes through untouched.
"""

from __future__ import annotations

import asyncio
import json
import re
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Awaitable, Callable, Dict, List, MutableMapping, Optional, Tuple

import structlog

from agentlightning.server.routes.events import record_event

from agentlightning.contrib.kernel.agentos import ActionContext, GovernanceKernel

from .events import DECISION_EVENT, decision_event_data
from .govern import GatewayDecision, TextAction, govern_response

__all__ = ["GovernanceLayer", "PROXY_PATH"]

log = structlog.get_logger()

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

#: The route of 1.0's OpenAI-compatible proxy, read for its rollout and attempt ids.
PROXY_PATH = re.compile(
    r"^/proxy/rollout/(?P<rollout_id>[^/]+)/attempt/(?P<attempt_id>[^/]+)/mode/(?P<mode>[^/]+)/openai/v1/(?P<path>.+)$"
)


def _json_reply(status: int, payload: Dict[str, Any]) -> Tuple[int, List[Tuple[bytes, bytes]], bytes]:
    body = json.dumps(payload).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    return status, headers, body


class GovernanceLayer:
    """ASGI middleware: ``GovernanceLayer(create_app(server_config), kernel)`` (see the module docstring)."""

    def __init__(
        self,
        app: Callable[[Scope, Receive, Send], Awaitable[None]],
        kernel: GovernanceKernel,
        *,
        text_action: Optional[TextAction] = None,
        agent_id: str = "agentos-gateway",
        workers: int = 2,
    ) -> None:
        self.app = app
        self.kernel = kernel
        self.text_action = text_action
        self.agent_id = agent_id
        self.executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="agentos-gateway")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        match = PROXY_PATH.match(scope.get("path", "")) if scope["type"] == "http" else None
        if match is None or scope.get("method") != "POST":
            await self.app(scope, receive, send)
            return
        raw = await self._read_body(receive)
        try:
            status, headers, body = await self._governed(scope, receive, raw, match.groupdict())
        except Exception as error:  # fail closed: no response an action was not judged in
            log.exception("governance layer failed; response withheld", path=scope.get("path"))
            status, headers, body = _json_reply(
                502, {"error": "agentos governance failed; the model response was withheld", "reason": repr(error)}
            )
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    @staticmethod
    async def _read_body(receive: Receive) -> bytes:
        chunks = []
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                break
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                break
        return b"".join(chunks)

    async def _governed(
        self, scope: Scope, receive: Receive, raw: bytes, ids: Dict[str, str]
    ) -> Tuple[int, List[Tuple[bytes, bytes]], bytes]:
        try:
            request = json.loads(raw) if raw else {}
        except json.JSONDecodeError:
            request = None  # 1.0's proxy answers 400 for it; there is no model output to govern
        if isinstance(request, dict) and request.get("stream"):
            return _json_reply(
                400,
                {
                    "error": "streaming is not supported by the governed gateway: every tool call is judged whole "
                    "before the harness sees it; send the request with stream=false"
                },
            )
        status, headers, body = await self._forward(scope, receive, raw)
        content_type = dict(headers).get(b"content-type", b"")
        if not content_type.startswith(b"application/json"):
            if status < 400:
                raise ValueError(f"upstream answered {status} with content-type {content_type!r}, not JSON")
            return status, headers, body  # an error without a body to act on
        response = json.loads(body)
        if not isinstance(response, dict):
            raise ValueError(f"the model response is not a JSON object: {type(response).__name__}")
        context = ActionContext(agent_id=self.agent_id, rollout_id=ids["rollout_id"], attempt_id=ids["attempt_id"])
        loop = asyncio.get_running_loop()
        governed, decisions = await loop.run_in_executor(
            self.executor, govern_response, self.kernel, response, ids["path"], context, self.text_action
        )
        self._record(ids, decisions)
        new_body = json.dumps(governed).encode()
        kept = [(k, v) for k, v in headers if k.lower() != b"content-length"]
        return status, kept + [(b"content-length", str(len(new_body)).encode())], new_body

    def _record(self, ids: Dict[str, str], decisions: List[GatewayDecision]) -> None:
        """One decision event per decision on the attempt (on the loop thread, as 1.0's store requires)."""
        for judged in decisions:
            record_event(
                ids["rollout_id"],
                ids["attempt_id"],
                DECISION_EVENT,
                decision_event_data(
                    judged.decision,
                    choice_index=judged.choice_index,
                    tool_call_id=judged.tool_call_id,
                    source=judged.source,
                ),
            )

    async def _forward(
        self, scope: Scope, receive: Receive, raw: bytes
    ) -> Tuple[int, List[Tuple[bytes, bytes]], bytes]:
        """Run 1.0's app on the request and collect its whole response."""
        sent = False

        async def replay() -> Message:
            # The body once; after it, the client's own channel, so 1.0's proxy still notices
            # (and cancels on) a real disconnect of the agent.
            nonlocal sent
            if sent:
                return await receive()
            sent = True
            return {"type": "http.request", "body": raw, "more_body": False}

        start: Dict[str, Any] = {}
        chunks: List[bytes] = []

        async def collect(message: Message) -> None:
            if message["type"] == "http.response.start":
                start.update(message)
            elif message["type"] == "http.response.body":
                chunks.append(message.get("body", b""))

        await self.app(scope, replay, collect)
        return int(start["status"]), list(start.get("headers", [])), b"".join(chunks)

    def close(self) -> None:
        self.executor.shutdown(wait=True)
        self.kernel.close()
