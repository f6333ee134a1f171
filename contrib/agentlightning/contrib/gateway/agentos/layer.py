"""The governance layer in front of Agent Lightning 1.0's proxy: an ASGI middleware around 1.0's own app.

1.0's proxy has no extension point: it forwards a chat completion upstream, records the
``model_request`` event and returns the upstream body unchanged. This layer wraps
``agentlightning.server.app.create_app`` and, for every request:

1. **who**: with a key, every route but ``/healthz`` needs it (``Authorization: Bearer <key>`` or
   ``X-API-Key: <key>``, compared in constant time); without one the gateway is loopback only
   (:func:`~.config.gateway_key` refuses to start elsewhere) and answers only requests whose
   ``Host`` is a loopback name (a web page cannot reach it by DNS rebinding);
2. **which route**: the route is the one 1.0's own router selects (the endpoint it put in the
   scope, whatever path form or ``root_path`` led there), looked up in :data:`ROUTES`: 1.0's
   proxy is governed, its store, event, model and pause routes are served as they are, and any
   other endpoint (a route a later 1.0 adds, such as the Responses API) is refused before it reads
   the request and its response is never passed;
3. **which rollout**: a proxied call must name a rollout 1.0's store holds as ``running`` and its
   current attempt (a short grace covers a controller that starts the harness before it marks the
   rollout running); a posted event must name the rollout's current attempt, and
   ``agentos.decision`` events are the gateway's own. Refusals are recorded in the audit trail,
   charged to no rollout (the ids are only what the caller claimed);
4. **governed**: a streaming request is asked of the model whole (``stream`` false: a tool call is
   judged whole before the harness sees any of it) and the governed response is re-emitted as a
   stream of chunks (:func:`~.govern.as_stream_events`); 1.0's proxy forwards the request and records the
   model's original response; every action in it is judged with the kernel, the rollout and attempt
   as context, on a :class:`~.fair_queue.FairQueue` (worker threads, at most one per rollout at a
   time, rollouts served in turn, so one rollout's slow input does not delay another's check),
   each thread handing its response to a :class:`~.check_pool.CheckPool` worker process when the
   gateway has one (checks then scale with cores; a worker that dies, hangs or answers nonsense
   fails the check: the response is withheld and the failure recorded by the gateway's own kernel);
   one ``agentos.decision`` event per decision is recorded on the attempt (on the loop thread, with
   1.0's own ``record_event``); the governed response is returned (blocked calls replaced by
   refusals).

Fail closed: a response that cannot be read is withheld (HTTP 502) and recorded as a blocked
decision on its attempt; a decision that cannot be recorded, or any other error in the layer,
withholds the whole response. The harness never receives an action that was not judged and recorded.
"""

from __future__ import annotations

import asyncio
import hmac
import ipaddress
import json
import time
from typing import Any, Awaitable, Callable, Dict, List, MutableMapping, NoReturn, Optional, Tuple

import structlog
from starlette._utils import get_route_path

from agentlightning.schemas import DEFAULT_ATTEMPT_ID, RolloutState
from agentlightning.server.routes.events import record_event
from agentlightning.server.routes.rollouts import get_rollout

from agentlightning.contrib.kernel.agentos import Action, ActionContext, GovernanceKernel

from .check_pool import CheckFailed, CheckPool
from .events import DECISION_EVENT, decision_event_data
from .fair_queue import FairQueue
from .govern import (
    GATEWAY_POLICY_NAME,
    GatewayDecision,
    TextAction,
    UnreadableAction,
    as_stream_events,
    govern_response,
)

__all__ = ["GovernanceLayer", "ROUTES"]

log = structlog.get_logger()

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
Reply = Tuple[int, List[Tuple[bytes, bytes]], bytes]

PUBLIC, SERVED, EVENTS, GOVERNED = "public", "served", "events", "governed"

_ROLLOUTS = "agentlightning.server.routes.rollouts"
_PROXY = "agentlightning.server.routes.proxy"
#: 1.0's endpoints by (module, qualified name), and what the layer does with each. An endpoint not
#: listed is refused: a route the layer cannot place might return model output it never judged.
ROUTES: Dict[Tuple[str, str], str] = {
    ("agentlightning.server.app", "create_app.<locals>.healthz"): PUBLIC,  # liveness, no data
    **{
        (_ROLLOUTS, name): SERVED
        for name in (
            "enqueue_rollouts",
            "list_rollouts",
            "list_terminal_rollouts",
            "get_rollout",
            "patch_rollout",
            "delete_rollout",
        )
    },
    ("agentlightning.server.routes.events", "query_events"): SERVED,
    ("agentlightning.server.routes.events", "post_event"): EVENTS,  # bound to the rollout's current attempt
    ("agentlightning.server.routes.models", "register_models"): SERVED,
    ("agentlightning.server.routes.models", "delete_all_models"): SERVED,
    **{(_PROXY, name): SERVED for name in ("pause_proxy", "resume_proxy", "proxy_state")},
    (_PROXY, "llm_proxy"): GOVERNED,  # the model's output: judged before the harness sees it
    # FastAPI's own API description and its viewers (behind the key like everything else).
    **{
        ("fastapi.applications", f"FastAPI.setup.<locals>.{name}"): SERVED
        for name in ("openapi", "swagger_ui_html", "swagger_ui_redirect", "redoc_html")
    },
}

#: How long a proxied call waits for its queued rollout to be marked running: 1.0's controllers start
#: the harness first (the Kubernetes one marks the rollout on its next pass).
START_GRACE_S = 10.0


class _Refused(Exception):
    """A request the layer answers itself instead of letting 1.0 serve it."""

    def __init__(self, status: int, detail: str) -> None:
        super().__init__(detail)
        self.status, self.detail = status, detail


def _json_reply(status: int, payload: Dict[str, Any]) -> Reply:
    body = json.dumps(payload).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    return status, headers, body


def _endpoint_kind(scope: Scope) -> Tuple[Optional[str], str]:
    """What :data:`ROUTES` says of the endpoint 1.0's router selected for ``scope`` (None: not listed)."""
    endpoint = scope.get("endpoint")
    if endpoint is None:
        return None, "no route"
    name = (getattr(endpoint, "__module__", "?"), getattr(endpoint, "__qualname__", repr(endpoint)))
    return ROUTES.get(name), f"{name[0]}.{name[1]}"


def _loopback_host_header(value: str) -> bool:
    if value.startswith("["):
        name = value[1 : value.find("]")]
    else:
        name = value.rsplit(":", 1)[0] if value.count(":") == 1 else value
    name = name.lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


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
        key: str = "",
        checks: Optional[CheckPool] = None,
    ) -> None:
        self.app = app
        self.kernel = kernel
        self.checks = checks
        self.text_action = text_action
        self.agent_id = agent_id
        self.key = key.encode()
        self.queue = FairQueue(workers, per_rollout=1)
        self.start_grace_s = START_GRACE_S

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self.app(scope, receive, send)
            return
        if scope["type"] != "http":  # 1.0 serves no websocket: nothing unplaced is passed
            await receive()
            await send({"type": "websocket.close", "code": 1008})
            return
        try:
            status, headers, body = await self._serve(scope, receive)
        except _Refused as refused:
            status, headers, body = _json_reply(refused.status, {"detail": refused.detail})
        except Exception as error:  # fail closed: no response an action was not judged in
            log.exception("governance layer failed; response withheld", path=scope.get("path"))
            status, headers, body = _json_reply(
                502, {"error": "agentos governance failed; the model response was withheld", "reason": repr(error)}
            )
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    # -- who ------------------------------------------------------------------------------------

    def _authorize(self, scope: Scope) -> None:
        headers = {k.decode("latin-1").lower(): v for k, v in scope.get("headers", [])}
        if not self.key:
            host = headers.get("host", b"").decode("latin-1")
            if host and not _loopback_host_header(host):
                raise _Refused(
                    403,
                    f"this gateway has no key and serves loopback only; Host {host!r} is not a loopback name "
                    "(set a key to serve other hosts)",
                )
            return
        authorization = headers.get("authorization", b"")
        offered = [headers.get("x-api-key", b"")]
        if authorization[:7].lower() == b"bearer ":
            offered.append(authorization[7:])
        # Both compared, in constant time: a wrong key takes as long as a right one.
        if not any([hmac.compare_digest(candidate, self.key) for candidate in offered]):
            raise _Refused(401, "missing or invalid key: send Authorization: Bearer <key> or X-API-Key: <key>")

    # -- which route, which rollout ---------------------------------------------------------------

    async def _serve(self, scope: Scope, receive: Receive) -> Reply:
        # Only what 1.0's router can send to its health check skips the key here (checked again once placed).
        key_checked = not (get_route_path(scope) == "/healthz" and scope.get("method") in ("GET", "HEAD"))
        if key_checked:
            self._authorize(scope)
        raw = await self._read_body(receive)
        gate: Dict[str, Any] = {}

        async def gated_receive() -> Message:
            # 1.0's router has chosen the endpoint by the time it reads the request: place it there,
            # before the endpoint has the body (and before the proxy asks the model).
            if "kind" in gate:
                return await receive()  # the client's own channel: 1.0's proxy notices a disconnect
            gate["kind"], gate["name"] = _endpoint_kind(scope)
            try:
                body = await self._admit(scope, gate, raw)
            except _Refused as refused:
                gate["refused"] = refused
                return {"type": "http.disconnect"}
            return {"type": "http.request", "body": body, "more_body": False}

        try:
            status, headers, body = await self._forward(scope, gated_receive)
        finally:
            if "refused" in gate:  # whatever 1.0 made of the disconnect it was given, the refusal is the answer
                raise gate["refused"]
        kind, name = _endpoint_kind(scope)  # endpoints that never read the request are placed here
        if kind != PUBLIC and not key_checked:
            self._authorize(scope)
        if kind in (PUBLIC, SERVED, EVENTS):
            return status, headers, body
        if kind == GOVERNED:
            return await self._governed(scope, status, headers, body, gate.get("stream"))
        if name == "no route" and status >= 400:
            return status, headers, body  # 1.0's router answered 404/405 itself: no endpoint ran
        await self._refuse_unplaced(scope, name, {})  # an endpoint that never read the request: withheld

    async def _admit(self, scope: Scope, gate: Dict[str, Any], raw: bytes) -> bytes:
        """The request body 1.0 is given, or :class:`_Refused` for a request its route or rollout does not
        allow, before 1.0 serves it. A streaming model call is asked of the model whole (``stream`` false,
        noted in ``gate``) and re-emitted as a stream once judged."""
        kind, name = gate["kind"], gate["name"]
        params = scope.get("path_params") or {}
        if kind is None:
            await self._refuse_unplaced(scope, name, params)
        if kind == EVENTS:
            await self._admit_event(scope, params, raw)
        elif kind == GOVERNED:
            await self._admit_model_call(scope, params)
            request = _json_or_none(raw)
            if isinstance(request, dict) and request.get("stream"):
                options = request.pop("stream_options", None)
                gate["stream"] = {"include_usage": isinstance(options, dict) and bool(options.get("include_usage"))}
                request["stream"] = False  # judged whole: no part of a tool call reaches the harness unjudged
                return json.dumps(request).encode()
        return raw

    async def _refuse_unplaced(self, scope: Scope, name: str, params: Dict[str, Any]) -> NoReturn:
        await self._refuse_request(scope, f"route not placed: {name}", params)
        raise _Refused(
            404,
            f"the governed gateway cannot place {scope.get('method')} {scope.get('path')} (endpoint {name}): "
            "it serves only the 1.0 routes it knows, and never passes a response it cannot judge",
        )

    async def _admit_event(self, scope: Scope, params: Dict[str, Any], raw: bytes) -> None:
        event = _json_or_none(raw)
        if isinstance(event, dict) and event.get("event_type") == DECISION_EVENT:
            await self._refuse_request(scope, f"{DECISION_EVENT} posted through the API", params)
            raise _Refused(403, f"{DECISION_EVENT} events are written by the gateway only, never posted")
        rollout = await _rollout_or_none(params["rollout_id"])
        if rollout is None:
            return  # 1.0 answers 404 for it
        current = rollout.status.last_attempt_id or DEFAULT_ATTEMPT_ID
        if params["attempt_id"] != current:
            await self._refuse_request(scope, f"event for attempt {params['attempt_id']!r}", params)
            raise _Refused(
                409,
                f"rollout {params['rollout_id']}'s current attempt is {current!r}, not {params['attempt_id']!r}: "
                "events go to the current attempt",
            )

    async def _admit_model_call(self, scope: Scope, params: Dict[str, Any]) -> None:
        rollout_id, attempt_id = params["rollout_id"], params["attempt_id"]
        deadline = time.monotonic() + self.start_grace_s
        while True:
            rollout = await _rollout_or_none(rollout_id)
            if rollout is None:
                return  # 1.0 answers 404 for it
            state = rollout.status.state
            if state != RolloutState.QUEUING or time.monotonic() >= deadline:
                break
            await asyncio.sleep(0.1)  # its controller has started the harness and is about to mark it running
        if state != RolloutState.RUNNING:
            await self._refuse_request(scope, f"model call on a {state} rollout", params)
            raise _Refused(
                409,
                f"rollout {rollout_id} is {state}, not running: a model call is judged and charged only on a "
                "rollout its controller runs",
            )
        current = rollout.status.last_attempt_id or DEFAULT_ATTEMPT_ID
        if attempt_id != current:
            await self._refuse_request(scope, f"model call on attempt {attempt_id!r}", params)
            raise _Refused(
                409, f"rollout {rollout_id}'s current attempt is {current!r}, not {attempt_id!r}: call on that attempt"
            )

    async def _refuse_request(self, scope: Scope, reason: str, params: Dict[str, Any]) -> None:
        """A refused request in the audit trail, charged to no rollout: its ids are only what the caller claimed."""
        log.warning("request refused", path=scope.get("path"), reason=reason)
        action = Action(
            "gateway_request",
            {"method": scope.get("method"), "path": scope.get("path"), "claimed": dict(params), "reason": reason},
        )
        await self.queue.run(
            "",
            lambda: self.kernel.refuse(
                action,
                f"request refused: {reason}",
                context=ActionContext(agent_id=self.agent_id),
                refused_by=GATEWAY_POLICY_NAME,
            ),
        )

    # -- governed ---------------------------------------------------------------------------------

    async def _governed(
        self,
        scope: Scope,
        status: int,
        headers: List[Tuple[bytes, bytes]],
        body: bytes,
        stream: Optional[Dict[str, Any]] = None,
    ) -> Reply:
        params = scope["path_params"]
        content_type = dict(headers).get(b"content-type", b"")
        response = _json_or_none(body) if content_type.startswith(b"application/json") else None
        if status >= 400 and not (isinstance(response, dict) and "choices" in response):
            return status, headers, body  # an error without model output to act on
        context = ActionContext(
            agent_id=self.agent_id, rollout_id=params["rollout_id"], attempt_id=params["attempt_id"]
        )
        try:
            if not isinstance(response, dict):
                raise UnreadableAction(
                    f"upstream answered {status} with content-type {content_type!r}, not a JSON object"
                )
            governed, decisions = await self.judge(response, params["upstream_path"], context)
            events = as_stream_events(governed, params["upstream_path"], **stream) if stream else None
        except (UnreadableAction, CheckFailed) as error:
            unreadable = isinstance(error, UnreadableAction)
            reason = f"unreadable model response: {error}" if unreadable else str(error)
            decision_id = await self._withhold(params, context, body, reason)
            # The reason (which may quote the response) is in the decision, not in what the harness reads.
            what = "could not read the model response" if unreadable else "could not judge the model response"
            return _json_reply(
                502,
                {
                    "error": f"agentos {what}; the model response was withheld",
                    "reason": f"see the {DECISION_EVENT} event {decision_id} on the attempt",
                },
            )
        self._record(params, decisions)
        if events is not None:
            new_body = "".join([f"data: {json.dumps(event)}\n\n" for event in events] + ["data: [DONE]\n\n"]).encode()
            kept = [(b"content-type", b"text/event-stream; charset=utf-8"), (b"cache-control", b"no-cache")]
        else:
            new_body = json.dumps(governed).encode()
            kept = [(k, v) for k, v in headers if k.lower() != b"content-length"]
        return status, kept + [(b"content-length", str(len(new_body)).encode())], new_body

    async def judge(
        self, response: Dict[str, Any], upstream_path: str, context: ActionContext
    ) -> Tuple[Dict[str, Any], List[Dict[str, Any]]]:
        """The governed response and each decision's event data, judged on the fair queue (``context``'s
        rollout is its key): in a worker process of the pool when the gateway has one, else with the
        gateway's own kernel. Raises :class:`~.govern.UnreadableAction` and :class:`~.check_pool.CheckFailed`."""
        key = context.rollout_id or ""
        if self.checks is not None:
            return await self.queue.run(key, self.checks.govern, response, upstream_path, context, self.text_action)
        return await self.queue.run(key, self._judge_here, response, upstream_path, context)

    def _judge_here(
        self, response: Dict[str, Any], upstream_path: str, context: ActionContext
    ) -> Tuple[Dict[str, Any], List[Dict[str, Any]]]:
        governed, decisions = govern_response(self.kernel, response, upstream_path, context, self.text_action)
        return governed, [_event_data(judged) for judged in decisions]

    async def _withhold(self, params: Dict[str, Any], context: ActionContext, body: bytes, reason: str) -> str:
        """A response the layer cannot read or judge: refused by the gateway's kernel (its audit trail) and
        recorded on its attempt."""
        action = Action("unplaceable_response", {"reason": reason, "response": body[:2000].decode("utf-8", "replace")})
        decision = await self.queue.run(
            params["rollout_id"],
            lambda: self.kernel.refuse(action, reason, context=context, refused_by=GATEWAY_POLICY_NAME),
        )
        self._record(params, [_event_data(GatewayDecision(decision, None, None, "response"))])
        return decision.decision_id

    def _record(self, params: Dict[str, Any], events: List[Dict[str, Any]]) -> None:
        """One decision event per decision on the attempt (on the loop thread, as 1.0's store requires)."""
        for data in events:
            record_event(params["rollout_id"], params["attempt_id"], DECISION_EVENT, data)

    # -- plumbing ---------------------------------------------------------------------------------

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

    async def _forward(self, scope: Scope, receive: Receive) -> Reply:
        """Run 1.0's app on the request and collect its whole response."""
        start: Dict[str, Any] = {}
        chunks: List[bytes] = []

        async def collect(message: Message) -> None:
            if message["type"] == "http.response.start":
                start.update(message)
            elif message["type"] == "http.response.body":
                chunks.append(message.get("body", b""))

        try:
            await self.app(scope, receive, collect)
        except Exception:
            if not start:
                raise
        if not start:
            raise RuntimeError(f"1.0's app sent no response for {scope.get('method')} {scope.get('path')}")
        return int(start["status"]), list(start.get("headers", [])), b"".join(chunks)

    def close(self) -> None:
        self.queue.shutdown()
        if self.checks is not None:
            self.checks.close()
        self.kernel.close()


def _event_data(judged: GatewayDecision) -> Dict[str, Any]:
    return decision_event_data(
        judged.decision, choice_index=judged.choice_index, tool_call_id=judged.tool_call_id, source=judged.source
    )


async def _rollout_or_none(rollout_id: str) -> Any:
    from fastapi.exceptions import HTTPException

    try:
        return (await get_rollout(rollout_id)).rollout
    except HTTPException:
        return None


def _json_or_none(raw: bytes) -> Any:
    try:
        return json.loads(raw) if raw else None
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None
