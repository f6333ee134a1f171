"""One worker process of :class:`~.check_pool.CheckPool` (``python -m`` of this module with a socket's fd,
its number of places and its core).

It moves its threads to its core (the threads it starts later inherit it), receives the gateway's
``governance`` section, builds its kernel (its own trail file), says it is ready with the file's
path, then judges each response it is sent with :func:`~.govern.govern_response`
(``per_worker`` at once, on threads: one computes while another waits for its commit) and replies,
tagged with the request's id, with the governed response and each decision's event data, or why the
response is unreadable. Every decision is committed to its trail before the reply is sent. It exits when the
gateway closes the socket (or dies).
"""

from __future__ import annotations

import os
import socket
import sys
import threading
import traceback
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Optional

from agentlightning.contrib.kernel.agentos.cores import run_on_core

from .check_pool import _receive, _send
from .events import decision_event_data
from .govern import GatewayDecision, UnreadableAction, govern_response


def _where(judged: GatewayDecision) -> dict:
    return {"choice_index": judged.choice_index, "tool_call_id": judged.tool_call_id, "source": judged.source}


def serve(sock: socket.socket, per_worker: int, core: Optional[int] = None) -> None:
    if core is not None:
        run_on_core(core)  # refused (a cpuset changed): the worker runs where the system places it
    governance = _receive(sock, None)
    try:
        kernel = governance.build_kernel()
    except Exception as error:  # noqa: BLE001 - the gateway reports it and refuses to start
        _send(sock, ("failed", f"{type(error).__name__}: {error}"), None)
        return
    sending = threading.Lock()

    def judge(request_id: int, response: Any, upstream_path: str, context: Any, text: Any) -> None:
        try:
            governed, decisions = govern_response(kernel, response, upstream_path, context, text)
            reply: Any = ("governed", governed, [decision_event_data(d.decision, **_where(d)) for d in decisions])
        except UnreadableAction as error:
            reply = ("unreadable", str(error))
        with sending:
            _send(sock, (request_id, reply), None)

    try:
        try:
            _send(sock, ("ready", str(kernel.audit.recorder.db_path)), None)
        except OSError:  # the gateway gave up on this worker (or stopped) before it was ready
            return
        with ThreadPoolExecutor(max_workers=per_worker, thread_name_prefix="agentos-check") as checks:
            while True:
                try:
                    request = _receive(sock, None)
                except EOFError:
                    return
                checks.submit(_or_exit, judge, *request)
    finally:
        kernel.close()


def _or_exit(function: Any, *args: Any) -> None:
    """A check that raised (anything but an unreadable response) ends the worker: the gateway sees it go,
    fails its checks in flight and starts another."""
    try:
        function(*args)
    except BaseException:
        traceback.print_exc()
        os._exit(70)


if __name__ == "__main__":
    serve(socket.socket(fileno=int(sys.argv[1])), int(sys.argv[2]), int(sys.argv[3]) if sys.argv[3] else None)
