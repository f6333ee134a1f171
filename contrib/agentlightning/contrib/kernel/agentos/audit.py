"""Every kernel decision, written to a real Agent OS ``FlightRecorder`` (SQLite, SHA-256 chain).

One record per decision, in the format of :mod:`.audit_record` (the action's arguments and the
governance envelope in the hash-covered ``tool_args``). A writer thread does the recording, so
the check only pays for serialising the arguments; blocked decisions are on disk before the
kernel returns, allowed ones within moments (the writer commits whenever its queue runs dry).
"""

from __future__ import annotations

import atexit
import logging
import os
import queue
import sqlite3
import threading
import weakref
from collections import OrderedDict
from pathlib import Path
from typing import Any, Dict, List, Optional, Union

from agent_os import FlightRecorder

from .actions import Decision
from .audit_record import DEFAULT_MAX_ARGS_CHARS, build_tool_args, governance_envelope, serialize_args

__all__ = ["AuditTrail", "open_flight_recorder", "flush_recorder", "warn_if_default_recorder_path"]

logger = logging.getLogger(__name__)
#: The FlightRecorders of audit trails log here; errors only, unless the user set a level first.
RECORDER_LOGGER = logging.getLogger(__name__ + ".flight_recorder")

#: Records queued for the writer thread at most; beyond that, checks wait for the disk.
DEFAULT_MAX_QUEUED = 10_000
#: Allowed records kept open for their outcome (result or error) at most; older ones are closed.
DEFAULT_MAX_PENDING_OUTCOMES = 10_000


def open_flight_recorder(path: Union[str, Path], **kwargs: Any) -> FlightRecorder:
    """Open (or create) a FlightRecorder database at ``path``, with a clear error if it cannot.

    >>> import tempfile, os
    >>> rec = open_flight_recorder(os.path.join(tempfile.mkdtemp(), "audit.db"))
    >>> rec.verify_integrity()["valid"]
    True
    """
    path = file_path(path, "FlightRecorder path", "audit.db", ValueError)
    try:
        return FlightRecorder(db_path=str(path), **kwargs)
    except (OSError, sqlite3.Error) as err:
        raise ValueError(f"cannot open FlightRecorder at {str(path)!r}: {err}; pass a writable file path") from err


#: agent_os.FlightRecorder's default ``db_path``: a file in whatever the working directory is.
DEFAULT_RECORDER_FILE = "flight_recorder.db"
_WARNED_DEFAULT_PATHS: set = set()


def warn_if_default_recorder_path(recorder: Any) -> bool:
    """Log a warning (once per file) if ``recorder`` is an ``agent_os.FlightRecorder()`` created
    with its default path, ``./flight_recorder.db``; returns whether it is.

    The reference tutorial writes ``recorder = FlightRecorder()``, which puts the audit trail into
    the current working directory (every run appends to the same file there, and it is easily
    committed or deleted by mistake). Agent OS creates the file before we see the recorder, so the
    warning says where it is and how to choose the path.

    >>> import tempfile, os
    >>> warn_if_default_recorder_path(open_flight_recorder(os.path.join(tempfile.mkdtemp(), "audit.db")))
    False
    """
    raw = getattr(recorder, "db_path", None)
    if not isinstance(raw, (str, Path)) or str(raw) in ("", ":memory:"):
        return False
    path = Path(raw)
    if path.is_absolute() or path.name != DEFAULT_RECORDER_FILE or path.parent != Path("."):
        return False
    resolved = str(path.resolve())
    if resolved not in _WARNED_DEFAULT_PATHS:
        _WARNED_DEFAULT_PATHS.add(resolved)
        logger.warning(
            "agent_os.FlightRecorder() was created with its default path, so the audit trail is %s, in the current "
            "working directory (every run appends to that one file). Choose a file of the run instead: "
            "FlightRecorder(db_path='runs/<run>/audit.db'), GovernanceKernel(..., recorder='runs/<run>/audit.db') or "
            "AgentOSRunner(..., audit_dir='runs/<run>/audit').",
            resolved,
        )
    return True


def file_path(path: Any, what: str, example_name: str, error: type = ValueError) -> Path:
    """``path`` as a file path whose directory exists (created if needed), or a clear error
    naming ``what`` it is: a ``TypeError`` for a non-path, ``error`` for a directory or a
    directory that cannot be created.

    >>> file_path(42, "export path", "audit.json")
    Traceback (most recent call last):
    ...
    TypeError: export path must be a str or Path, got 42
    """
    if not isinstance(path, (str, Path)) or not str(path):
        raise TypeError(f"{what} must be a str or Path, got {path!r}")
    target = Path(path)
    if target.is_dir():
        raise error(f"{what} {str(target)!r} is a directory; pass a file path such as {str(target / example_name)!r}")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise error(f"cannot create the directory of {what} {str(target)!r}: {err}") from err
    return target


class _Sync:
    """A marker the writer answers once everything queued before it is on disk."""

    __slots__ = ("done", "error")

    def __init__(self) -> None:
        self.done = threading.Event()
        self.error: Optional[BaseException] = None


class AuditTrail:
    """Writes decisions to a FlightRecorder from a background thread; safe to share between threads.

    The checking thread only serialises the action's arguments and queues the record, so audit
    writes stay off the hot path. Order is kept (one writer), the writer flushes to disk whenever
    it runs out of work, and a *blocked* decision is on disk before :meth:`record` returns (the
    caller waits for the writer). If a write fails, every later :meth:`record` raises, and the
    kernel blocks the action (fail closed). :meth:`flush`, :meth:`records` and :meth:`verify`
    first wait for everything queued.

    The recorder's hash chain lives in the recorder object, so each process must own its own
    database file (two processes appending to one file would fork the chain).

    ``audit_id`` of a recorded decision is its ``decision_id``, which the record's envelope holds.
    """

    def __init__(
        self,
        recorder: FlightRecorder,
        *,
        max_args_chars: int = DEFAULT_MAX_ARGS_CHARS,
        max_queued: int = DEFAULT_MAX_QUEUED,
        max_pending_outcomes: int = DEFAULT_MAX_PENDING_OUTCOMES,
        sync_timeout_s: float = 30.0,
    ) -> None:
        if not isinstance(recorder, FlightRecorder):
            raise TypeError(
                f"recorder must be an agent_os.FlightRecorder, got {type(recorder).__name__}; "
                f"or pass a file path and the kernel opens one"
            )
        for name, value in (
            ("max_args_chars", max_args_chars),
            ("max_queued", max_queued),
            ("max_pending_outcomes", max_pending_outcomes),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        warn_if_default_recorder_path(recorder)
        self.recorder = recorder
        # The FlightRecorder logs a WARNING per blocked action; in training that is one stderr line
        # per violation. Route this recorder's messages to a logger of ours that shows errors only
        # (lower its level to see them all).
        recorder.logger = RECORDER_LOGGER
        _configure_once()
        self.max_args_chars = max_args_chars
        self.sync_timeout_s = sync_timeout_s
        self.pid = os.getpid()  # the process whose chain head this recorder holds
        self._queue: "queue.SimpleQueue[Any]" = queue.SimpleQueue()
        self._max_queued = max_queued
        # decision_id -> FlightRecorder trace_id of allowed records still waiting for an outcome.
        self._awaiting_outcome: "OrderedDict[str, str]" = OrderedDict()
        self._max_pending_outcomes = max_pending_outcomes
        self._failure: Optional[BaseException] = None
        self._closed = False
        self._thread_lock = threading.Lock()
        self._thread: Optional[threading.Thread] = None
        _LIVE_TRAILS.add(self)

    @property
    def path(self) -> str:
        return str(self.recorder.db_path)

    @property
    def failure(self) -> Optional[BaseException]:
        """The error that stopped the writer, if any (then every record is refused)."""
        return self._failure

    # ----------------------------------------------------------------- the checking thread's side
    def record(self, decision: Decision) -> str:
        """Queue one decision (a blocked one is on disk when this returns); returns its audit id."""
        self._raise_if_unusable()
        original = None
        if decision.original_action is not None:
            original = serialize_args(decision.original_action.args, self.max_args_chars)
        item = (
            decision.decision_id,
            decision.context.agent_id,
            decision.action.tool_name,
            serialize_args(decision.action.args, self.max_args_chars),
            original,
            governance_envelope(decision),
            decision.reason if decision.blocked else None,
        )
        self._put(item)
        if decision.blocked:
            self._sync()  # a blocked action's record must survive the process dying next
        return decision.decision_id

    def record_outcome(
        self,
        audit_id: str,
        *,
        result: Any = None,
        error: Optional[str] = None,
        execution_time_ms: Optional[float] = None,
    ) -> None:
        """Add what an allowed action returned (or the error it raised) to its record."""
        if self._failure is not None or self._closed:
            return  # nothing more can be written; the failure was logged when it happened
        text = None if result is None else _safe_str(result)[: self.max_args_chars]
        self._put(
            ("outcome", audit_id, text, None if error is None else str(error)[: self.max_args_chars], execution_time_ms)
        )

    def flush(self) -> None:
        """Wait until everything queued so far is written and committed."""
        if self._closed:
            return
        if self._thread is not None:
            self._sync()
        else:
            self.recorder.flush()

    def verify(self) -> Dict[str, Any]:
        """Agent OS's hash-chain and content-hash check over the whole file."""
        self.flush()
        return self.recorder.verify_integrity()

    def records(self) -> list:
        """All records (flushes first), oldest first."""
        self.flush()
        return self.recorder.get_log()

    def close(self) -> None:
        """Write what is queued, stop the writer and close the recorder (idempotent)."""
        if self._closed:
            return
        try:
            if self._thread is not None and self._failure is None:
                self._sync()
        finally:
            self._closed = True
            if self._thread is not None:
                self._queue.put(_STOP)
                self._thread.join(timeout=self.sync_timeout_s)
            self.recorder.close()
            _LIVE_TRAILS.discard(self)

    def _raise_if_unusable(self) -> None:
        if self._failure is not None:
            raise RuntimeError(
                f"the audit trail stopped after a failed write ({type(self._failure).__name__}: {self._failure})"
            )
        if self._closed:
            raise RuntimeError(f"the audit trail {self.path!r} is closed")

    def _put(self, item: Any) -> None:
        if self._thread is None:
            self._start()
        self._queue.put(item)
        if self._queue.qsize() > self._max_queued and not isinstance(item, _Sync):
            # The disk fell behind: wait for it rather than let memory grow without end.
            self._sync()

    def _sync(self) -> None:
        marker = _Sync()
        self._put(marker)
        if not marker.done.wait(self.sync_timeout_s):
            raise TimeoutError(f"the audit writer did not finish within {self.sync_timeout_s}s")
        if marker.error is not None:
            raise marker.error

    def _start(self) -> None:
        with self._thread_lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._write_loop, name="agentos-audit-writer", daemon=True)
                self._thread.start()

    # ----------------------------------------------------------------- the writer thread
    def _write_loop(self) -> None:
        while True:
            item = self._queue.get()
            waiting: List[_Sync] = []
            stop = False
            while True:
                if item is _STOP:
                    stop = True
                elif isinstance(item, _Sync):
                    waiting.append(item)
                elif self._failure is None:
                    try:
                        self._write(item)
                    except Exception as err:  # noqa: BLE001 - remembered; later records are refused
                        logger.exception("audit write to %s failed; further actions will be blocked", self.path)
                        self._failure = err
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
            # Out of work: commit, so an idle recorder has nothing only in memory.
            if self._failure is None:
                try:
                    self.recorder.flush()
                except Exception as err:  # noqa: BLE001
                    logger.exception("audit flush to %s failed; further actions will be blocked", self.path)
                    self._failure = err
            for marker in waiting:
                marker.error = self._failure
                marker.done.set()
            if stop:
                return

    def _write(self, item: tuple) -> None:
        recorder = self.recorder
        if item[0] == "outcome":
            _, audit_id, result, error, execution_time_ms = item
            trace_id = self._awaiting_outcome.pop(audit_id, None)
            if trace_id is None:
                return  # not an allowed record of this trail, or its outcome came long after
            if error is not None:
                recorder.log_error(trace_id, _encodable(error))
            else:
                recorder.log_success(trace_id, result=_encodable(result), execution_time_ms=execution_time_ms)
            self._forget(trace_id)
            return
        decision_id, agent_id, tool_name, args_json, original_json, envelope, blocked_reason = item
        tool_args = build_tool_args(args_json, envelope, original_json)
        trace_id = recorder.start_trace(
            agent_id=_encodable(agent_id), tool_name=_encodable(tool_name), tool_args=tool_args
        )
        if blocked_reason is not None:
            recorder.log_violation(trace_id, _encodable(blocked_reason))
            self._forget(trace_id)
            return
        recorder.log_success(trace_id, result=None)
        self._awaiting_outcome[decision_id] = trace_id
        if len(self._awaiting_outcome) > self._max_pending_outcomes:
            _, oldest = self._awaiting_outcome.popitem(last=False)
            self._forget(oldest)

    def _forget(self, trace_id: str) -> None:
        # The FlightRecorder caches every record's fields in memory to re-hash later updates and
        # never drops them; a long run would grow without bound. Drop a record's entry once no
        # update to it can follow.
        getattr(self.recorder, "_trace_data", {}).pop(trace_id, None)


def flush_recorder(recorder: FlightRecorder) -> None:
    """Write out what any :class:`AuditTrail` of this process has queued for ``recorder``, then
    flush the recorder itself. Readers of an open recorder call this before reading.

    >>> import tempfile, os
    >>> flush_recorder(open_flight_recorder(os.path.join(tempfile.mkdtemp(), "audit.db")))
    """
    for trail in list(_LIVE_TRAILS):
        if trail.recorder is recorder:
            trail.flush()
    recorder.flush()


def _encodable(text: Optional[str]) -> Optional[str]:
    """``text`` as the FlightRecorder can hash it: a lone surrogate (which an agent can put in
    any string) would make its UTF-8 encoding fail and stop the trail, so it is escaped
    (``"\\ud800"``, as ``backslashreplace`` writes it).
    """
    if text is None or text.isascii():
        return text
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _safe_str(value: Any) -> str:
    try:
        return str(value)
    except Exception as err:  # noqa: BLE001
        return f"<unprintable {type(value).__name__}: {type(err).__name__}>"


_STOP = object()
_LIVE_TRAILS: "weakref.WeakSet[AuditTrail]" = weakref.WeakSet()
_CONFIGURED = threading.Lock()
_configured = False


def _configure_once() -> None:
    """What the first audit trail of a process sets up (done here, not at import, so importing the
    kernel changes nothing): the recorder logger's level, and the exit hook that drains trails."""
    global _configured
    with _CONFIGURED:
        if _configured:
            return
        if RECORDER_LOGGER.level == logging.NOTSET:
            RECORDER_LOGGER.setLevel(logging.ERROR)
        atexit.register(_drain_live_trails)
        _configured = True


def _drain_live_trails() -> None:
    """At interpreter exit, write what is still queued (the writer threads are daemons)."""
    for trail in list(_LIVE_TRAILS):
        try:
            trail.close()
        except Exception:  # noqa: BLE001
            logger.exception("could not close the audit trail %s at exit", trail.path)
