"""One worker process of :class:`~.check_pool.CheckPool` (``python -m`` of this module with a socket's fd).

It receives the gateway's ``governance`` section, builds its kernel (its own trail file), says it is
ready with the file's path, then judges each response it is sent with :func:`~.govern.govern_response`
and replies, tagged with the request's id, with the governed response and each decision's event
data, or why the response is unreadable. Every decision is committed to its trail before the reply
is sent. It exits when the gateway closes the socket (or dies).

``per_worker`` threads each read a request, judge it and reply, then read the next (one at a time
on each side of the socket): one computes while another waits for its record's commit, and no
request passes from a reading thread to a checking one.
"""

from __future__ import annotations

import os
import socket
import sys
import threading
import traceback
from typing import Any

from .check_pool import _LENGTH, MAX_MESSAGE_BYTES, _decode, _Malformed, _receive, _send
from .events import decision_event_data
from .govern import GatewayDecision, UnreadableAction, govern_response


def _where(judged: GatewayDecision) -> dict:
    return {"choice_index": judged.choice_index, "tool_call_id": judged.tool_call_id, "source": judged.source}


def serve(sock: socket.socket, per_worker: int) -> None:
    governance = _receive(sock, None)
    try:
        kernel = governance.build_kernel()
    except Exception as error:  # noqa: BLE001 - the gateway reports it and refuses to start
        _send(sock, ("failed", f"{type(error).__name__}: {error}"), None)
        return
    reading, sending = threading.Lock(), threading.Lock()
    incoming = sock.makefile("rb")  # buffered: a request's length and body in one read of the socket

    def judge(request_id: int, response: Any, upstream_path: str, context: Any, text: Any) -> None:
        try:
            governed, decisions = govern_response(kernel, response, upstream_path, context, text)
            reply: Any = ("governed", governed, [decision_event_data(d.decision, **_where(d)) for d in decisions])
        except UnreadableAction as error:
            reply = ("unreadable", str(error))
        with sending:
            _send(sock, (request_id, reply), None)

    def checks() -> None:
        while True:
            with reading:
                try:
                    request = _next_request(incoming)
                except (EOFError, ConnectionResetError):  # the gateway closed the socket (or is gone)
                    return
            judge(*request)

    try:
        try:
            _send(sock, ("ready", str(kernel.audit.recorder.db_path)), None)
        except OSError:  # the gateway gave up on this worker (or stopped) before it was ready
            return
        threads = [
            threading.Thread(target=_or_exit, args=(checks,), name=f"agentos-check-{n}", daemon=True)
            for n in range(per_worker)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        kernel.close()


def _next_request(incoming: Any) -> Any:
    size = int.from_bytes(_read_exactly(incoming, _LENGTH), "big")
    if size > MAX_MESSAGE_BYTES:
        raise _Malformed(f"a request of {size} bytes (at most {MAX_MESSAGE_BYTES})")
    return _decode(_read_exactly(incoming, size))


def _read_exactly(incoming: Any, size: int) -> bytes:
    data = incoming.read(size)
    if len(data) < size:
        raise EOFError
    return data


def _or_exit(function: Any, *args: Any) -> None:
    """A check that raised (anything but an unreadable response) ends the worker: the gateway sees it go,
    fails its checks in flight and starts another."""
    try:
        function(*args)
    except BaseException:
        traceback.print_exc()
        os._exit(70)


if __name__ == "__main__":
    serve(socket.socket(fileno=int(sys.argv[1])), int(sys.argv[2]))
