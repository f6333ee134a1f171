"""Reading SQL in bounded time: a budget decided before parsing, and a deadline that holds.

Parsers are not linear on every input: sqlglot's tokenizer is quadratic in nested comment
openers (``SELECT 1 /*`` followed by many ``/*``), deep nesting runs parsers out of stack, and
inputs nobody has written down yet may find other slow paths. A guard that takes 12 s on one
argument lets one rollout hold a worker for 12 s, and a timeout measured after the fact bounds
nothing. So every text is read under a :class:`ReadingBudget`:

* before parsing, what is cheap to count is counted (comment openers, parenthesis depth): a text
  over a limit is not read at all, and is ``unknown`` with a reason that names the limit;
* a text longer than ``max_inline_chars`` is read in a worker process that is killed at
  ``deadline_s``: a text not read by then is ``unknown`` too. Shorter texts are read inline,
  where the counted limits keep them within the deadline (``tests/benchmarks/bench_reading_bound.py``
  measures the pathological families on both paths).

``unknown`` blocks on every path, including text found in another tool's arguments: a string the
guard cannot read to the end is never taken as harmless.

>>> budget = ReadingBudget()
>>> over_budget("SELECT 1 /*" + "/*" * 600, budget)  # doctest: +ELLIPSIS
'the text holds 601 comment openers (/*), over ReadingBudget.max_comment_openers=500...'
>>> over_budget("SELECT (((1)))", budget) is None
True
"""

from __future__ import annotations

import atexit
import os
import pickle
import re
import select
import struct
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, List, Optional

from ..violations import GovernanceConfigError

__all__ = ["ReadingBudget", "ReadingTimedOut", "over_budget", "read_in_worker", "warm_reading_worker"]

_PARENTHESES = re.compile(r"[()]")
_HOW_TO_RAISE = "SQLPolicy(reading_budget=ReadingBudget({field}=...))"


@dataclass(frozen=True, eq=False)  # one budget object is one cache key: equal budgets need not share entries
class ReadingBudget:
    """How much work reading one text may take (see the module doc).

    ``max_comment_openers``: ``/*`` in one text; ``max_nesting``: parenthesis depth;
    ``max_inline_chars``: longer texts are read in a worker process, killed at ``deadline_s``
    seconds. Raise a limit only for inputs you trust to be well formed.

    >>> try:
    ...     ReadingBudget(deadline_s=0)
    ... except GovernanceConfigError as err:
    ...     print(err)
    ReadingBudget.deadline_s must be a positive number of seconds, got 0
    """

    max_comment_openers: int = 500
    max_nesting: int = 1_000
    max_inline_chars: int = 4_000
    deadline_s: float = 1.0

    def __post_init__(self) -> None:
        for name in ("max_comment_openers", "max_nesting", "max_inline_chars"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise GovernanceConfigError(f"ReadingBudget.{name} must be an int >= 0, got {value!r}")
        deadline = self.deadline_s
        if isinstance(deadline, bool) or not isinstance(deadline, (int, float)) or not deadline > 0:
            raise GovernanceConfigError(
                f"ReadingBudget.deadline_s must be a positive number of seconds, got {deadline!r}"
            )


def _nesting(text: str, limit: int) -> int:
    """The deepest parenthesis nesting of ``text``, counted up to ``limit + 1`` (quotes are not
    told apart: a parenthesis inside a string literal counts too, which only over-counts)."""
    depth = deepest = 0
    for match in _PARENTHESES.finditer(text):
        if match.group() == "(":
            depth += 1
            if depth > deepest:
                deepest = depth
                if deepest > limit:
                    break
        elif depth:
            depth -= 1
    return deepest


def over_budget(text: str, budget: ReadingBudget) -> Optional[str]:
    """Why ``text`` is not read at all under ``budget`` (counted before parsing), or None."""
    openers = text.count("/*")
    if openers > budget.max_comment_openers:
        return (
            f"the text holds {openers:,} comment openers (/*), over ReadingBudget.max_comment_openers="
            f"{budget.max_comment_openers:,}: it was not read (parsers slow down on many nested comments); "
            f"remove the comments, or raise the limit with {_HOW_TO_RAISE.format(field='max_comment_openers')}"
        )
    if text.count("(") > budget.max_nesting and _nesting(text, budget.max_nesting) > budget.max_nesting:
        return (
            f"the text nests parentheses deeper than ReadingBudget.max_nesting={budget.max_nesting:,} levels: it was "
            f"not read; flatten it, or raise the limit with {_HOW_TO_RAISE.format(field='max_nesting')}"
        )
    return None


class ReadingTimedOut(Exception):
    """A text was not read within the deadline (the worker reading it was killed)."""

    def __init__(self, chars: int, deadline_s: float) -> None:
        super().__init__(
            f"reading the text ({chars:,} characters) took longer than ReadingBudget.deadline_s={deadline_s:g}s, "
            "so it was stopped and the text was not judged; shorten it, or raise the deadline with "
            f"{_HOW_TO_RAISE.format(field='deadline_s')}"
        )


class ReadingFailed(Exception):
    """The worker could not read a text (it died, or answered something unreadable)."""


# ---------------------------------------------------------------------------------------------
# The worker processes.
#
# A worker is a fresh interpreter (not a fork: a fork of a threaded process can inherit a held
# lock) running ``_reading_worker.py``, which imports the SQL readers without agentlightning's
# own package (whose import costs seconds) and answers one request at a time over its pipes:
# a length-prefixed pickle of (function name, arguments) in, of (ok, value) out. A worker that
# misses the deadline is killed; idle ones are kept for the next long text.

_HEADER = struct.Struct("!Q")
#: What a worker writes once its readers are imported.
_READY = b"R"
_WORKER_SCRIPT = Path(__file__).with_name("_reading_worker.py")
_KERNEL_ROOT = Path(__file__).resolve().parent.parent
#: How long a new worker may take to start (importing the readers: 0.4 s on an idle 2-core machine
#: here), outside the deadline; a worker that takes longer fails the check (closed).
_START_TIMEOUT_S = 10.0


class _Worker:
    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-I", "-S", str(_WORKER_SCRIPT), str(_KERNEL_ROOT), os.pathsep.join(sys.path)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        self.started = False

    def ask(self, function: str, args: tuple, deadline_s: float) -> Any:
        if not self.started:  # the interpreter's start and imports: bounded, but not the text's time
            try:
                ready = self._read(1, time.monotonic() + _START_TIMEOUT_S)
            except TimeoutError:
                ready = b""
            if ready != _READY:
                raise ReadingFailed(f"the reading worker did not start within {_START_TIMEOUT_S:g}s")
            self.started = True
        payload = pickle.dumps((function, args), protocol=pickle.HIGHEST_PROTOCOL)
        stdin = self.process.stdin
        assert stdin is not None
        stdin.write(_HEADER.pack(len(payload)) + payload)
        stdin.flush()
        ends = time.monotonic() + deadline_s
        (length,) = _HEADER.unpack(self._read(_HEADER.size, ends))
        ok, value = pickle.loads(self._read(length, ends))
        if not ok:
            raise ReadingFailed(value)
        return value

    def _read(self, size: int, ends: float) -> bytes:
        stdout = self.process.stdout
        assert stdout is not None
        chunks: List[bytes] = []
        while size:
            left = ends - time.monotonic()
            if left <= 0 or not select.select([stdout], [], [], left)[0]:
                raise TimeoutError
            chunk = os.read(stdout.fileno(), size)
            if not chunk:
                raise ReadingFailed("the reading worker exited")
            chunks.append(chunk)
            size -= len(chunk)
        return b"".join(chunks)

    def kill(self) -> None:
        try:
            self.process.kill()
            self.process.wait(5)
        except (OSError, subprocess.TimeoutExpired):
            pass


class _Workers:
    """Idle workers of this process (a forked child starts with none of its parent's)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.idle: List[_Worker] = []
        self.pid = os.getpid()
        self.warmed_in = 0  # the process id that started its first worker

    def take(self) -> _Worker:
        with self.lock:
            if self.pid != os.getpid():  # inherited over a fork: those pipes are the parent's
                self.idle, self.pid = [], os.getpid()
            if self.idle:
                return self.idle.pop()
        return _Worker()

    def warm(self) -> None:
        """Start one worker in this process if none was started yet, so the first long text does
        not wait for an interpreter's start (which a loaded machine stretches past a second)."""
        if self.warmed_in == os.getpid():
            return
        with self.lock:
            if self.warmed_in == os.getpid():
                return
            first = self.warmed_in == 0
            self.warmed_in = os.getpid()
        if first:  # registered on first use: importing the kernel changes nothing
            atexit.register(self.close)
        self.give_back(_Worker())

    def give_back(self, worker: _Worker) -> None:
        with self.lock:
            if self.pid == os.getpid() and len(self.idle) < max(2, os.cpu_count() or 1):
                self.idle.append(worker)
                return
        worker.kill()

    def close(self) -> None:
        with self.lock:
            idle, self.idle = self.idle, []
        for worker in idle:
            worker.kill()


_WORKERS = _Workers()


def warm_reading_worker() -> None:
    """Start this process's first reading worker now (in the background: returns at once)."""
    _WORKERS.warm()


def read_in_worker(function: Callable[..., Any], args: tuple, chars: int, deadline_s: float) -> Any:
    """``function(*args)`` (a module-level function of the SQL package) run in a worker process;
    :class:`ReadingTimedOut` if it is not done within ``deadline_s``, :class:`ReadingFailed` if
    the worker failed."""
    worker = _WORKERS.take()
    try:
        value = worker.ask(f"{function.__module__}:{function.__qualname__}", args, deadline_s)
    except TimeoutError:
        worker.kill()
        _WORKERS.give_back(_Worker())  # its replacement starts now, not in the next check
        raise ReadingTimedOut(chars, deadline_s) from None
    except BaseException:
        worker.kill()
        raise
    _WORKERS.give_back(worker)
    return value
