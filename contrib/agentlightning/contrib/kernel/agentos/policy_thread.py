"""A policy that does not run inline is asked on a daemon thread of its own, under a timeout.

A hung policy cannot be killed in Python, so its thread is left behind. It is a daemon thread: a
pool's worker threads are joined at interpreter exit, which kept a runner process whose policy
hung from ever exiting.
"""

from __future__ import annotations

import threading
from typing import Any, Callable, Dict

from .violations import PolicyViolation

__all__ = ["call_on_daemon_thread", "drained"]


def call_on_daemon_thread(fn: Callable[[], Any], timeout_s: float) -> Any:
    """``fn()`` on a thread of its own: its result, or what it raised; ``TimeoutError`` if it is
    not done in ``timeout_s`` seconds."""
    outcome: Dict[str, Any] = {}
    done = threading.Event()

    def call() -> None:
        try:
            outcome["result"] = fn()
        except BaseException as err:  # noqa: BLE001 - handed to the checking thread
            outcome["error"] = err
        finally:
            done.set()

    threading.Thread(target=call, name="agentos-policy", daemon=True).start()
    if not done.wait(timeout_s):
        raise TimeoutError
    if "error" in outcome:
        raise outcome["error"]
    return outcome["result"]


#: Answers whose items the checking thread reads itself: built-in types, whose iteration runs no
#: code of the policy's (a str or dict is named as what it is, not as the list of its items).
_READ_ON_THE_CHECKING_THREAD = frozenset({list, tuple, set, frozenset, str, bytes, dict})


def drained(result: Any) -> Any:
    """A generator's items as a list (so it runs to the end where it was called, on the policy's
    thread under the timeout: it can hang or raise mid-way), and so the items of any other
    iterable but a plain built-in one: a list subclass's own ``__iter__`` could hang or raise. What
    is not iterable is left as it is (the checking thread names it)."""
    if result is None or type(result) in _READ_ON_THE_CHECKING_THREAD or isinstance(result, PolicyViolation):
        return result
    try:
        return list(result)
    except TypeError:  # not iterable: the checking thread names what it is
        return result
