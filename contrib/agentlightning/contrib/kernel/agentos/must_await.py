"""Coroutines a newcomer cannot drop or misuse silently: :class:`MustAwait`.

A coroutine function called without ``await`` does nothing, and Python says only
``RuntimeWarning: coroutine ... was never awaited`` (or, when the result is used at once,
``'coroutine' object is not subscriptable``). The package's coroutines that a reader is likely to
call without ``await`` (``governance_stats(store)``, ``adapter.emit_to_store(store)``, an async
:func:`governed_tool`) return a :class:`MustAwait` instead, which says what did not happen and
how to write the call.
"""

from __future__ import annotations

import collections.abc
import logging
from typing import Any, Coroutine, Generator, NoReturn

__all__ = ["MustAwait"]

logger = logging.getLogger(__name__)


class MustAwait(collections.abc.Coroutine):
    """A coroutine that cannot be dropped silently: garbage-collected without ever being awaited,
    it logs an ERROR saying that nothing happened (``missed``) and how to call it; used as its
    result (subscripted, ``.get``, ``.items()``...), it raises a ``TypeError`` saying the same.
    Otherwise it is the wrapped coroutine: ``await`` it, or pass it to ``asyncio.run`` or
    ``asyncio.create_task``.

    >>> import asyncio
    >>> async def total():
    ...     return {"total": 3}
    >>> asyncio.run(MustAwait(total(), "total()"))["total"]
    3
    >>> MustAwait(total(), "total()")["total"]  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    TypeError: total() is a coroutine, not its result: write `await total()` in async code, or ...
    """

    __slots__ = ("_coro", "_started", "_call", "_missed")

    def __init__(self, coro: Coroutine[Any, Any, Any], call: str, missed: str = "nothing was done") -> None:
        self._coro = coro
        self._started = False
        self._call = call
        self._missed = missed

    def send(self, value: Any) -> Any:
        self._started = True
        return self._coro.send(value)

    def throw(self, typ: Any, val: Any = None, tb: Any = None) -> Any:
        self._started = True
        if val is None and tb is None:
            return self._coro.throw(typ)
        return self._coro.throw(typ, val, tb)  # pragma: no cover - the deprecated three-argument form

    def close(self) -> None:
        self._started = True
        self._coro.close()

    def __await__(self) -> Generator[Any, None, Any]:
        self._started = True
        return self._coro.__await__()

    def __repr__(self) -> str:
        return f"<{self._call}: a coroutine, nothing happens until it is awaited>"

    def _used_as_result(self, *args: Any, **kwargs: Any) -> NoReturn:
        if not self._started:
            self.close()  # it will never run now: no second report when it is collected
        raise TypeError(
            f"{self._call} is a coroutine, not its result: write `await {self._call}` in async code, "
            f"or `asyncio.run({self._call})` in a script"
        )

    # A result's mapping operations only: generic machinery (asyncio's task repr, reprlib) probes
    # ``len`` and iteration on the coroutines it runs, which must keep working.
    __getitem__ = __contains__ = get = keys = items = values = _used_as_result

    def __del__(self) -> None:
        if self._started:
            return
        try:
            self._coro.close()  # no second, vaguer "never awaited" warning from Python
            logger.error(
                "%s was never awaited, so %s. It is a coroutine: write `await %s` in async code, "
                "or `asyncio.run(%s)` in a script.",
                self._call,
                self._missed,
                self._call,
                self._call,
            )
        except Exception:  # noqa: BLE001 - interpreter shutdown: nowhere left to report
            pass
