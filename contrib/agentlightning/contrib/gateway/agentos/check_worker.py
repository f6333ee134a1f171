"""One worker process of :class:`~.check_pool.CheckPool` (``python -m`` of this module with a socket's fd).

It receives the gateway's ``governance`` section, builds its kernel (its own trail file), says it is
ready with the file's path, then judges one response per request with :func:`~.govern.govern_response`
and replies with the governed response and each decision's event data, or why the response is
unreadable. Every decision is committed to its trail before the reply is sent. It exits when the
gateway closes the socket (or dies).
"""

from __future__ import annotations

import socket
import sys

from .check_pool import _receive, _send
from .events import decision_event_data
from .govern import GatewayDecision, UnreadableAction, govern_response


def _where(judged: GatewayDecision) -> dict:
    return {"choice_index": judged.choice_index, "tool_call_id": judged.tool_call_id, "source": judged.source}


def serve(sock: socket.socket) -> None:
    governance = _receive(sock, None)
    try:
        kernel = governance.build_kernel()
    except Exception as error:  # noqa: BLE001 - the gateway reports it and refuses to start
        _send(sock, ("failed", f"{type(error).__name__}: {error}"), None)
        return
    try:
        _send(sock, ("ready", str(kernel.audit.recorder.db_path)), None)
        while True:
            try:
                response, upstream_path, context, text = _receive(sock, None)
            except EOFError:
                return
            try:
                governed, decisions = govern_response(kernel, response, upstream_path, context, text)
            except UnreadableAction as error:
                _send(sock, ("unreadable", str(error)), None)
                continue
            events = [decision_event_data(d.decision, **_where(d)) for d in decisions]
            _send(sock, ("governed", governed, events), None)
    finally:
        kernel.close()


if __name__ == "__main__":
    serve(socket.socket(fileno=int(sys.argv[1])))
