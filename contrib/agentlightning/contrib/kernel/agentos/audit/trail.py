"""Every kernel decision, written to a real Agent OS ``FlightRecorder`` and committed before the action runs.

One record per decision, in the format of :mod:`.record` (the action's arguments and the
governance envelope in the hash-covered ``tool_args``), sealed with a key when one is set
(:mod:`.seal`). :class:`AuditTrail` says what is guaranteed: durable before it runs, group
commit, fail closed and recover, a file that cannot change unnoticed, one writer per file.
"""

from __future__ import annotations

import atexit
import fcntl
import itertools
import json
import logging
import operator
import os
import sqlite3
import sys
import threading
import time
import weakref
from collections import OrderedDict
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple, Union

from agent_os import FlightRecorder

from ..actions import Decision
from .record import DEFAULT_MAX_ARGS_CHARS, governance_envelope, serialize_args, tool_args_text
from .seal import (
    HEAD_COLUMNS,
    HEAD_SCHEMA,
    HEAD_UPSERT,
    KEY_ENV,
    KEY_FILE_ENV,
    RECORD_COLUMNS,
    AuditKey,
    AuditKeyError,
    content_hash_of,
    entry_hash_of,
    hashed_part,
    head_problem,
    load_audit_key,
    read_head,
    seal_metadata,
    sign_head,
    verify_file,
)
from .signing import (
    ROTATION_AGENT_ID,
    ROTATION_TOOL_NAME,
    SigningKey,
    SigningKeyError,
    load_signing_key,
    open_head_signer,
    rotation_problem,
)

__all__ = [
    "AuditTrail",
    "AuditWriteError",
    "AuditFileChangedError",
    "AuditWriterConflict",
    "DURABLE",
    "QUEUED",
    "open_flight_recorder",
    "flush_recorder",
    "warn_if_default_recorder_path",
]

logger = logging.getLogger(__name__)
#: The FlightRecorders of audit trails log here; errors only, unless the user set a level first. Named after
#: the audit package (not this module) so the name a user configures says what it is: the audit's recorders.
RECORDER_LOGGER = logging.getLogger(__package__ + ".flight_recorder")


#: Records queued at most (``durability="queued"``); beyond that, checks wait for the disk.
DEFAULT_MAX_QUEUED = 10_000
#: How long an action's outcome (result or error) waits for a decision to share its commit with.
OUTCOME_LINGER_S = 0.05
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


class AuditWriteError(RuntimeError):
    """A decision's record could not be committed; the kernel blocks the action it concerns."""


class AuditFileChangedError(AuditWriteError):
    """The audit file was deleted, replaced or truncated (or written by someone else) under the
    running kernel: every later action is blocked until a new file is attached."""


class AuditWriterConflict(ValueError):
    """Another kernel or process already writes this audit file."""


#: ``durability`` values: an allowed action runs only once its record is committed (the default),
#: or right away with its record still queued (the opt-out; see :class:`AuditTrail`).
DURABLE = "durable"
QUEUED = "queued"
#: How the outage record is named in the FlightRecorder.
OUTAGE_AGENT_ID = "agentos.audit"
OUTAGE_TOOL_NAME = "agentos.audit_outage"


class _Item:
    """One unit of work for a commit: a decision's record, an outcome, a rotation, or a sync marker."""

    __slots__ = ("kind", "payload", "blocked", "done", "error", "abandoned", "waited", "lead", "_lock")

    def __init__(self, kind: str, payload: Any = None, blocked: bool = False, waitable: bool = False) -> None:
        self.kind = kind
        self.payload = payload
        self.blocked = blocked
        self.done = False
        self.error: Optional[BaseException] = None
        self.abandoned = False
        self.waited = False  # the check waits for the answer (so its action cannot run before it)
        self.lead = False  # its check is handed the lead of the next commit
        self._lock: Optional[threading.Lock] = None
        if waitable:
            self._lock = threading.Lock()
            self._lock.acquire()

    def wait(self, timeout: float) -> bool:
        """Block until the item is answered or its check handed the lead (then the lock is held again)."""
        return self._lock is None or self._lock.acquire(timeout=timeout)

    def release(self) -> None:
        if self._lock is not None:
            self._lock.release()

    def rearm(self) -> None:
        """Hold the lock again after a release that the wait did not consume."""
        if self._lock is not None:
            self._lock.acquire(blocking=False)

    def finish(self, error: Optional[BaseException]) -> None:
        self.error = error
        self.done = True
        self.release()


#: What the committer thread is doing: committing or deciding, waiting for work, waiting for an
#: outcome's linger or an outage's retry to end.
_BUSY, _IDLE, _LINGERING = "busy", "idle", "lingering"


class _Outage:
    """Writes are failing: since when, why, and what it cost so far."""

    def __init__(self, error: BaseException) -> None:
        self.started = time.time()
        self.error = f"{type(error).__name__}: {error}"
        self.actions_blocked = 0  # would have been allowed; blocked because their record failed
        self.blocked_records_lost = 0  # blocked anyway; their record could not be written
        self.allowed_unrecorded = 0  # queued durability only: allowed actions that ran, record lost
        self.outcomes_lost = 0
        self.retries = 0
        self.next_retry = 0.0
        self.recovering = False

    def count(self, item: _Item, ran: bool = False) -> None:
        if item.kind == "outcome":
            self.outcomes_lost += 1
        elif item.kind == "decision":
            if item.blocked:
                self.blocked_records_lost += 1
            elif ran:
                self.allowed_unrecorded += 1
            else:
                self.actions_blocked += 1

    def facts(self, ended: float) -> Dict[str, Any]:
        return {
            "started": _iso(self.started),
            "ended": _iso(ended),
            "duration_s": round(ended - self.started, 3),
            "actions_blocked": self.actions_blocked,
            "blocked_records_lost": self.blocked_records_lost,
            "allowed_unrecorded": self.allowed_unrecorded,
            "outcomes_lost": self.outcomes_lost,
            "retries": self.retries,
            "error": self.error,
        }


def _iso(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, timezone.utc).isoformat()


class AuditTrail:
    """Writes decisions to a FlightRecorder file, each one committed before the action it allows runs.

    **Durable before it runs** (``durability="durable"``, the default). :meth:`record` returns once
    the decision's record is committed to the file (allowed and blocked alike); until then the
    kernel has not answered, so the action cannot run.

    **Group commit, on the checking threads.** A check that finds no commit under way commits
    its record itself, on its own thread (no hand-off to another thread: with one checking thread
    each check costs one SQLite commit and its record's Python). A check that finds a commit
    under way waits; every record waiting when that commit ends goes into the next one, led by
    one of their checks. So a check waits for at most the commit under way and its own, never for
    a queue, and several waiting decisions share one transaction and one fsync.
    ``commit_timeout_s`` bounds a waiting check; past it the action is blocked (and its record, if
    committed later, gets the outcome ``not run``). A check that is committing waits for SQLite:
    a lock for at most ``lock_timeout_s``, a disk for as long as its fsync takes (no thread can
    interrupt a system call); its action is not run before the fsync returns either way.

    **Or by a writer thread** (``committer="thread"``): a check queues its record for the trail's
    writer thread, which commits everything queued in one transaction and answers it; the check
    waits for that commit just the same (durable before it runs). It costs a hand-off, two or more
    context switches and more CPU per decision on a quiet disk; with other processes' fsyncs on
    the same disk one writer's decisions were several times faster this way (measured in
    ``docs/performance.md``; the mechanism is not established), hence the choice.

    **Fail closed, then recover.** A failed commit (disk full, read-only file system, I/O error,
    a lock held past ``lock_timeout_s``) raises :class:`AuditWriteError` for exactly the decisions
    in it, and the kernel blocks those actions. The trail is then in an *outage*: checks are
    refused at once (blocked, counted) while the writer retries with exponential backoff
    (``retry_backoff_s``). The first write that succeeds is the **outage record** (a row with
    tool name ``agentos.audit_outage``: start, end, duration, actions blocked, records lost, the
    error), and actions are allowed again.

    **The file stays the file.** Each commit first checks that the path still names the file the
    trail opened (``st_dev``/``st_ino``, a size that never shrinks) and that the file's last
    record is the last one this trail committed. A file deleted, replaced or truncated, or
    written by someone else, raises :class:`AuditFileChangedError`: every later action is
    blocked until a new file is attached (``kernel.attach_recorder``).

    **One writer per file.** The trail holds an exclusive ``flock`` on the file; a second kernel
    or process opening it gets :class:`AuditWriterConflict` naming the file and the fix.

    **Outcomes** (what an allowed action returned, :meth:`record_outcome`) are queued: nothing
    waits for them. One shares the commit of the next decision, or is committed alone by the
    trail's committer thread after ``OUTCOME_LINGER_S`` (50 ms) when none comes; :meth:`flush`
    and :meth:`close` commit it at once. The committer thread, started with the first record no
    check waits for, also retries the writes of an outage after its backoff.

    **An outcome committed alone is not fsynced.** "Durable before it runs" is about decisions;
    an outcome is written after its action ran, and needs to survive the process's death, not a
    power loss at once. A transaction holding only outcomes (no decision, rotation or outage
    record, no "not run" of a check that gave up, no rows written through the recorder, not a
    :meth:`flush` or :meth:`close`) is committed at ``synchronous=NORMAL`` when the file is in
    WAL mode (the FlightRecorder's; set per transaction on the trail's connection): the commit reaches the
    operating system, survives the process being killed, and becomes power-loss durable with the
    next fsync of the WAL (the next commit at the configured level, a checkpoint, or
    :meth:`flush`, which fsyncs the WAL when nothing else is left to commit). A power loss before
    that loses those outcomes only: SQLite discards a WAL tail that never reached the disk whole,
    so every record keeps its decision and the chain verifies. Every other transaction is
    committed at the configured ``synchronous``.

    **Sealed** when a key is given or set in the environment (:mod:`.seal`): each record's
    HMAC and the signed chain head are written in the same transaction as the records.
    **Host-signed** when this host's Ed25519 key is given (``signing_key``) or named by
    ``AGENTOS_AUDIT_SIGNING_KEY_FILE`` (:mod:`.signing`): the host head, signed once per
    commit, in the same transaction; :meth:`rotate_signing_key` records a key rotation.

    **The opt-out** (``durability="queued"``): the previous design, for speed. Allowed decisions
    are queued for the committer thread and the check returns at once; blocked ones still wait
    for their commit. What is
    given up: an allowed action may run before its record exists, and if the write then fails
    those actions ran with no record (the outage record counts them as ``allowed_unrecorded``);
    later actions are blocked as soon as the failure is known. A check waits for its own record
    only when more than ``max_queued`` are queued.

    ``audit_id`` of a recorded decision is its ``decision_id``, which the record's envelope holds.
    """

    def __init__(
        self,
        recorder: FlightRecorder,
        *,
        key: Union[AuditKey, bytes, str, None] = None,
        signing_key: Union[SigningKey, str, Path, None] = None,
        durability: str = DURABLE,
        max_args_chars: int = DEFAULT_MAX_ARGS_CHARS,
        max_queued: int = DEFAULT_MAX_QUEUED,
        max_pending_outcomes: int = DEFAULT_MAX_PENDING_OUTCOMES,
        lock_timeout_s: float = 1.0,
        commit_timeout_s: float = 10.0,
        retry_backoff_s: Tuple[float, float] = (0.05, 2.0),
        synchronous: Optional[str] = None,
        committer: str = "checks",
    ) -> None:
        if not isinstance(recorder, FlightRecorder):
            raise TypeError(
                f"recorder must be an agent_os.FlightRecorder, got {type(recorder).__name__}; "
                f"or pass a file path and the kernel opens one"
            )
        if durability not in (DURABLE, QUEUED):
            raise ValueError(f"durability must be {DURABLE!r} or {QUEUED!r}, got {durability!r}")
        if committer not in ("checks", "thread"):
            raise ValueError(f"committer must be 'checks' or 'thread', got {committer!r}")
        self._thread_commits = committer == "thread"
        for name, value in (
            ("max_args_chars", max_args_chars),
            ("max_queued", max_queued),
            ("max_pending_outcomes", max_pending_outcomes),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        for name, seconds in (
            ("lock_timeout_s", lock_timeout_s),
            ("commit_timeout_s", commit_timeout_s),
            ("retry_backoff_s[0]", retry_backoff_s[0]),
            ("retry_backoff_s[1]", retry_backoff_s[1]),
        ):
            if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not seconds > 0:
                raise ValueError(f"{name} must be a positive number of seconds, got {seconds!r}")
        if synchronous is None:  # durable: survives a power loss; queued: the FlightRecorder's own setting
            synchronous = "FULL" if durability == DURABLE else "NORMAL"
        if not isinstance(synchronous, str) or synchronous.upper() not in ("FULL", "NORMAL", "EXTRA"):
            raise ValueError(f"synchronous must be 'FULL', 'EXTRA' or 'NORMAL', got {synchronous!r}")
        warn_if_default_recorder_path(recorder)
        self.recorder = recorder
        self.key = load_audit_key(key)
        self._signing_key = signing_key  # this host's Ed25519 key (a file path, or from the environment)
        self.durability = durability
        # The FlightRecorder logs a WARNING per blocked action; in training that is one stderr line
        # per violation. Route this recorder's messages to a logger of ours that shows errors only.
        recorder.logger = RECORDER_LOGGER
        _configure_once()
        self.max_args_chars = max_args_chars
        self.lock_timeout_s = float(lock_timeout_s)
        self.commit_timeout_s = float(commit_timeout_s)
        self.retry_backoff_s = (float(retry_backoff_s[0]), float(retry_backoff_s[1]))
        self.sync_timeout_s = self.commit_timeout_s + self.lock_timeout_s
        self.pid = os.getpid()  # the process whose chain head this recorder holds
        self._max_queued = max_queued
        # Records wait in ``_pending`` for the next commit. A check that waits for its record and
        # finds no commit under way leads the next one itself, on its own thread; one that finds
        # a commit under way waits, and is answered by the next commit or handed its lead.
        self._pending: List[_Item] = []
        self._pending_since = 0.0  # when the oldest pending item arrived (monotonic)
        self._leading = False  # a thread is committing (the lead is held)
        self._awaiting_outcome: "OrderedDict[str, Dict[str, Any]]" = OrderedDict()  # decision_id: its row
        self._max_pending_outcomes = max_pending_outcomes
        self._mutex = threading.Lock()
        self._failure: Optional[BaseException] = None
        self._outage: Optional[_Outage] = None
        self.outages: List[Dict[str, Any]] = []  # the facts of each recorded outage
        self._closed = False
        self._thread_lock = threading.Lock()
        self._thread: Optional[threading.Thread] = None  # the committer of what no check waits for
        self._committer_wakes = threading.Condition(self._mutex)
        self._committer_state = _BUSY
        self._stopping = False
        self._open_file(synchronous.upper())
        _LIVE_TRAILS.add(self)

    # ----------------------------------------------------------------- opening
    def _open_file(self, synchronous: str) -> None:
        path = Path(self.recorder.db_path).resolve()
        self._path = path
        self._path_text = str(path)  # what each commit's stat is given: a str, not a Path converted every time
        self._lock_fd = _lock_writer(path)
        try:
            info = os.fstat(self._lock_fd)
            self._identity = (info.st_dev, info.st_ino)
            self._size = info.st_size
            conn = sqlite3.connect(
                str(path), isolation_level=None, check_same_thread=False, timeout=self.lock_timeout_s
            )
            conn.execute(f"PRAGMA synchronous={synchronous}")
            self.synchronous = synchronous  # every transaction's level, but an outcome's committed alone
            self._connection_synchronous = synchronous  # the level set on the connection now
            # Only WAL keeps a commit that was not fsynced whole or not at all; with a rollback
            # journal, NORMAL risks the file itself on a power loss.
            self._outcomes_alone_unsynced = (
                synchronous != "NORMAL" and conn.execute("PRAGMA journal_mode").fetchone()[0].lower() == "wal"
            )
            self._unsynced = False  # a commit since the WAL's last fsync was not fsynced
            self._conn = conn
            self._cursor = conn.cursor()  # the commits' one cursor
            self.recorder.flush()  # whatever its owner wrote through it before us
            last = conn.execute("SELECT id, entry_hash FROM audit_log ORDER BY id DESC LIMIT 1").fetchone()
            self._head: Tuple[int, Optional[str]] = (last[0], last[1]) if last else (0, None)
            self._records = conn.execute("SELECT COUNT(*) FROM audit_log").fetchone()[0]
            self._sealed_from = self._head[0] + 1
            self.signer = open_head_signer(
                conn,
                path,
                self._signing_key,
                last_id=self._head[0],
                last_entry_hash=self._head[1],
                records=self._records,
            )
            stored_head = read_head(conn)
            if self.key is not None:
                conn.execute(HEAD_SCHEMA)
                self._check_stored_head(stored_head)
            elif stored_head is not None:
                raise AuditKeyError(
                    f"the audit file {str(path)!r} is sealed (it has a signed head), but no audit key is set: set "
                    f"{KEY_ENV} or {KEY_FILE_ENV} to the key it was written with, or write to a new file"
                )
        except BaseException:
            self._release_lock()
            if getattr(self, "_conn", None) is not None:
                self._conn.close()
            raise
        # The recorder's chain head must be the file's (the writer's rows continue it), and its own
        # buffer must never flush on its own: this trail commits, in its own transactions.
        self.recorder._last_hash = self._head[1]
        self.recorder.enable_batching = True
        self.recorder.batch_size = sys.maxsize
        self.recorder.flush_interval = float("inf")

    def _check_stored_head(self, head: Optional[Dict[str, Any]]) -> None:
        """Refuse to append to a file whose signed head does not match its end (cut or edited
        while no kernel wrote it) or was signed with another key."""
        if head is None:
            return
        assert self.key is not None
        problem = head_problem(head, self.key)
        if problem is None and (head["last_id"], head["last_entry_hash"], head["records"]) != (
            *self._head,
            self._records,
        ):
            problem = (
                f"its signed head names record {head['last_id']} ({head['records']} records) as the last, but the "
                f"file ends at record {self._head[0]} ({self._records} records): it was truncated or edited"
            )
        if problem:
            raise AuditFileChangedError(
                f"the audit file {str(self._path)!r} cannot be continued: {problem}. Keep it as evidence and write "
                "to a new file"
            )
        self._sealed_from = head["sealed_from"]

    @property
    def path(self) -> str:
        return str(self.recorder.db_path)

    @property
    def failure(self) -> Optional[BaseException]:
        """The error that stopped the trail for good (a changed file), if any."""
        return self._failure

    @property
    def outage(self) -> Optional[Dict[str, Any]]:
        """The facts of the outage under way (writes failing, retried with backoff), or None."""
        outage = self._outage
        return None if outage is None else outage.facts(time.time())

    # ----------------------------------------------------------------- the checking thread's side
    def record(self, decision: Decision) -> str:
        """Record one decision; returns its audit id once the record is committed (``durable``),
        or once queued (``queued``, allowed decisions only). Raises :class:`AuditWriteError` when
        it cannot be recorded: the kernel then blocks the action."""
        original = None
        if decision.original_action is not None:
            original = serialize_args(decision.original_action.args, self.max_args_chars)
        tool_args = tool_args_text(
            serialize_args(decision.action.args, self.max_args_chars), governance_envelope(decision), original
        )
        blocked = decision.blocked
        row = _draft_row(
            _encodable(decision.context.agent_id),
            _encodable(decision.action.tool_name),
            tool_args,
            "blocked" if blocked else "allowed",
            _encodable(decision.reason) if blocked else None,
        )
        payload = (decision.decision_id, row)
        item = _Item("decision", payload, blocked=blocked, waitable=True)
        with self._mutex:
            self._raise_if_unusable(item)
            item.waited = (
                self.durability == DURABLE
                or blocked
                or self._outage is not None
                or len(self._pending) >= self._max_queued
            )
            lead = self._enqueue(item)
        if item.waited:
            self._wait(item, lead, self.commit_timeout_s)
        return decision.decision_id

    def _enqueue(self, item: _Item) -> bool:
        """Add ``item`` to the next commit (the mutex held). True when the calling thread is to
        lead that commit: its check waits for it, and no other thread is committing."""
        if not self._pending:
            self._pending_since = time.monotonic()
        self._pending.append(item)
        if item.waited and not self._thread_commits:
            lead = not self._leading
            self._leading = True
            return lead  # else the leader answers it, or hands it the lead
        if self._thread is None:
            self._start()
        state = self._committer_state
        if state == _IDLE or (state == _LINGERING and item.kind != "outcome"):
            self._committer_wakes.notify()  # an outcome lingers first; anything else is committed now
        return False

    def _wait(self, item: _Item, lead: bool, timeout: float) -> None:
        """Return once the commit that holds ``item`` is done, leading commits when this thread is
        handed the lead; raise its error, or :class:`AuditWriteError` past ``timeout``."""
        if lead:
            self._lead()
        deadline = time.monotonic() + timeout
        while not item.done:
            if not item.wait(max(0.0, deadline - time.monotonic())):
                with self._mutex:
                    if item.lead:
                        item.rearm()  # handed the lead as the wait ended: it leads after all
                    elif not item.done:
                        item.abandoned = True  # written as "not run" if the commit still comes
                if item.abandoned:
                    if item.kind == "sync":
                        raise AuditWriteError(f"the audit writer did not finish within {timeout}s")
                    raise AuditWriteError(f"the audit record was not committed within commit_timeout_s={timeout}s")
            if item.lead and not item.done:
                item.lead = False
                self._lead()
        if item.error is not None:
            raise item.error

    def rotate_signing_key(self, new_key: Union[SigningKey, str, Path]) -> None:
        """Hand this trail's head signing over to ``new_key`` (a :class:`SigningKey` or its file):
        a rotation record, signed by the current key and naming the new one, is committed like a
        decision, and every head from that commit on is signed by ``new_key``
        (:mod:`.signing`)."""
        if self.signer is None:
            raise SigningKeyError(f"the audit trail {self.path!r} signs no heads (no signing key): nothing to rotate")
        new = load_signing_key(new_key, host=self.signer.key.host)
        problem = rotation_problem(self.signer.key, new)
        if problem:  # refused here: a bad argument must not reach the commit (it would count as a failed write)
            raise SigningKeyError(problem)
        item = _Item("rotation", new, waitable=True)
        item.waited = True
        with self._mutex:
            self._raise_if_unusable(item)
            lead = self._enqueue(item)
        self._wait(item, lead, self.commit_timeout_s)

    def record_outcome(
        self,
        audit_id: str,
        *,
        result: Any = None,
        error: Optional[str] = None,
        execution_time_ms: Optional[float] = None,
    ) -> None:
        """Add what an allowed action returned (or the error it raised) to its record (queued:
        the action has already run, nothing waits for this)."""
        if self._failure is not None or self._closed or os.getpid() != self.pid:
            return
        text = None if result is None else _safe_str(result)[: self.max_args_chars]
        payload = (audit_id, text, None if error is None else str(error)[: self.max_args_chars], execution_time_ms)
        with self._mutex:
            self._enqueue(_Item("outcome", payload))

    def flush(self) -> None:
        """Wait until everything queued so far is committed (or refused by an outage)."""
        if self._closed or os.getpid() != self.pid:
            return
        marker = _Item("sync", waitable=True)
        marker.waited = True
        with self._mutex:
            if not self._pending and not self._leading and not self._unsynced:
                return
            lead = self._enqueue(marker)
        self._wait(marker, lead, self.sync_timeout_s)

    def verify(self) -> Dict[str, Any]:
        """:func:`.seal.verify_file` over this trail's file, plus what only the running
        trail knows: the path still names the file it writes, which still ends at the last
        record it committed, and whether writes are failing."""
        self._try_flush()
        result = verify_file(self._path, key=self.key)
        problem = self._file_changed() or self._failure_text()
        if problem is None and result.get("valid") and result.get("head") != self._head[1]:
            problem = (
                f"the file ends at another record than the last one this kernel committed (record {self._head[0]}): "
                "records were removed or added by someone else"
            )
        if problem is not None and result.get("valid"):
            result.update(valid=False, error=problem, first_tampered_id=None, sealed=False)
        if self._outage is not None:
            result["outage"] = self.outage
        result["outages"] = list(self.outages)
        return result

    def records(self) -> list:
        """All records on disk, oldest first."""
        self._try_flush()
        return self.recorder.get_log()

    def close(self) -> None:
        """Commit what is queued (and the outage record, if writes work again), stop the
        committer thread, close the recorder and release the file (idempotent)."""
        if self._closed:
            return
        if os.getpid() != self.pid:
            self._closed = True  # a forked copy: the file and its connection belong to the parent
            self._release_lock()  # this process's copy of the descriptor, so the lock ends with the parent's
            return
        try:
            self._try_flush()
            with self._mutex:
                retry = self._outage is not None and self._failure is None
                if retry:
                    self._outage.recovering = True  # one last try to write the outage record
                    marker = _Item("sync", waitable=True)
                    marker.waited = True
                    lead = self._enqueue(marker)
            if retry:
                try:
                    self._wait(marker, lead, self.sync_timeout_s)
                except AuditWriteError:
                    pass
        finally:
            self._closed = True
            with self._mutex:
                self._stopping = True
                self._committer_wakes.notify()
            if self._thread is not None:
                self._thread.join(timeout=self.sync_timeout_s)
            if self._outage is not None:
                logger.error(
                    "the audit trail %s closed during an outage that could not be recorded: %s",
                    self.path,
                    self._outage.facts(time.time()),
                )
            self.recorder.close()
            self._conn.close()
            self._release_lock()
            _LIVE_TRAILS.discard(self)

    def _try_flush(self) -> None:
        try:
            self.flush()
        except AuditWriteError:
            logger.warning("audit trail %s: %s", self.path, "the writer did not finish in time")

    def _release_lock(self) -> None:
        fd, self._lock_fd = getattr(self, "_lock_fd", None), None
        if fd is not None:
            os.close(fd)  # releases the flock

    def _failure_text(self) -> Optional[str]:
        return None if self._failure is None else f"{type(self._failure).__name__}: {self._failure}"

    def _raise_if_unusable(self, item: _Item) -> None:
        if os.getpid() != self.pid:
            raise AuditWriteError(
                f"the audit file {self.path!r} was opened by process {self.pid}; this process ({os.getpid()}) must "
                "write its own file (kernel.attach_recorder(path), or AgentOSRunner(audit_dir=...))"
            )
        if self._closed:
            raise AuditWriteError(f"the audit trail {self.path!r} is closed")
        if self._failure is not None:
            raise AuditWriteError(f"the audit trail stopped: {self._failure}")
        outage = self._outage
        if outage is not None and not outage.recovering:
            outage.count(item)
            raise AuditWriteError(
                f"audit writes are failing since {_iso(outage.started)} ({outage.error}); retrying with backoff, "
                "actions are allowed again once a write succeeds"
            )

    def _start(self) -> None:
        with self._thread_lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._committer, name="agentos-audit-committer", daemon=True)
                self._thread.start()

    # ----------------------------------------------------------------- committing
    def _lead(self) -> None:
        """Commit everything pending in one transaction (this thread leads), answer the checks it
        holds, then hand the lead to a check whose record arrived meanwhile, or put it down."""
        with self._mutex:
            group, self._pending = self._pending, []
            outage = self._outage
            recovering = None if outage is None or not outage.recovering else outage.facts(time.time())
        try:
            if outage is not None and recovering is None:
                self._refuse(group, outage)
            else:
                self._process(group, recovering)
        finally:
            with self._mutex:
                successor = None
                if not self._thread_commits:
                    successor = next((item for item in self._pending if item.waited and not item.abandoned), None)
                if successor is not None:
                    successor.lead = True
                    successor.release()  # its check wakes and leads the next commit
                else:
                    self._leading = False
                    if self._pending or self._outage is not None:
                        if self._thread is None:
                            self._start()
                        if self._committer_state != _BUSY:
                            self._committer_wakes.notify()  # what is left, or the retry of an outage, is its work

    def _committer(self) -> None:
        """The thread that commits what no check waits for: outcomes with no decision to share a
        commit with after ``OUTCOME_LINGER_S``, queued-durability records at once, records whose
        checks gave up; during an outage, the retry after the backoff; at close, what is left."""
        while True:
            with self._mutex:
                while True:
                    now = time.monotonic()
                    outage = self._outage
                    timeout: Optional[float] = None
                    if self._leading:
                        pass  # the leader commits; it wakes this thread if it leaves records behind
                    elif outage is not None and not outage.recovering and self._failure is None:
                        timeout = outage.next_retry - now
                        if timeout <= 0:
                            outage.recovering = True
                            break
                    elif self._pending:
                        timeout = self._pending_since + OUTCOME_LINGER_S - now
                        if timeout <= 0 or self._stopping or any(item.kind != "outcome" for item in self._pending):
                            break
                    elif self._stopping:
                        self._committer_state = _BUSY
                        return
                    if self._stopping and not self._pending:
                        self._committer_state = _BUSY
                        return
                    self._committer_state = _IDLE if timeout is None else _LINGERING
                    self._committer_wakes.wait(timeout)
                    self._committer_state = _BUSY
                self._leading = True
            self._lead()

    def _refuse(self, group: List[_Item], outage: _Outage) -> None:
        """Answer what arrives during an outage without writing."""
        error = AuditWriteError(f"audit writes are failing since {_iso(outage.started)} ({outage.error}); retrying")
        with self._mutex:
            for item in group:
                if item.kind == "sync":
                    item.finish(None)
                else:
                    outage.count(item, ran=not item.waited)
                    item.finish(error)

    def _process(self, group: List[_Item], recovering: Optional[Dict[str, Any]]) -> None:
        """Commit ``group`` (after the outage record when recovering) and answer it."""
        work = [item for item in group if item.kind != "sync"]
        synced: Optional[BaseException] = None
        if self._failure is not None:
            self._finish(work, AuditWriteError(f"the audit trail stopped: {self._failure}"), None)
        elif work or recovering is not None:
            outcomes_alone = (
                recovering is None
                and len(work) == len(group)
                and all(item.kind == "outcome" and not item.blocked for item in work)
            )
            try:
                self._commit(work, recovering, outcomes_alone)
            except AuditFileChangedError as err:
                logger.error("%s; every further action is blocked", err)
                self._failure = err
                self._finish(work, err, self._outage)
            except Exception as err:  # noqa: BLE001 - the records' actions are blocked; the trail recovers
                self._enter_outage(err, work)
            else:
                late = self._finish(work, None, None)
                if recovering is not None:
                    with self._mutex:
                        self._outage = None
                    self.outages.append(recovering)
                    logger.warning("audit writes to %s work again; outage recorded: %s", self.path, recovering)
                if late:
                    with self._mutex:
                        for item in late:
                            if item.payload[0] in self._awaiting_outcome:  # ran? no: its check blocked it
                                # blocked: it says that an allowed record's action did not run,
                                # a correction of the decision, committed as decisions are
                                self._enqueue(_Item("outcome", (item.payload[0], None, _NOT_RUN, None), blocked=True))
        if self._unsynced and len(work) < len(group):
            synced = self._sync_wal()  # a flush or close: what was committed unsynced reaches the disk
        for item in group:
            if item.kind == "sync":
                item.finish(synced)

    def _sync_wal(self) -> Optional[BaseException]:
        """fsync the WAL (an fsync covers every earlier write of the file, whoever wrote it)."""
        try:
            fd = os.open(f"{self._path}-wal", os.O_RDONLY)
        except FileNotFoundError:  # checkpointed and removed: the checkpoint synced it
            self._unsynced = False
            return None
        except OSError as err:
            return AuditWriteError(f"the audit file's WAL could not be opened to fsync it: {err}")
        try:
            os.fsync(fd)
        except OSError as err:
            return AuditWriteError(f"the audit file's WAL could not be fsynced: {err}")
        finally:
            os.close(fd)
        self._unsynced = False
        return None

    def _enter_outage(self, err: BaseException, work: List[_Item]) -> None:
        with self._mutex:
            outage = self._outage
            if outage is None:
                outage = self._outage = _Outage(err)
                logger.error(
                    "audit write to %s failed (%s: %s); the actions concerned are blocked, further actions are "
                    "blocked until a write succeeds (retrying with backoff)",
                    self.path,
                    type(err).__name__,
                    err,
                )
            else:
                outage.retries += 1
            outage.recovering = False
            first, cap = self.retry_backoff_s
            outage.next_retry = time.monotonic() + min(cap, first * (2 ** min(outage.retries, 30)))
        error = AuditWriteError(f"{type(err).__name__}: {err}; retrying with backoff")
        error.__cause__ = err
        self._finish(work, error, outage)

    def _finish(self, work: List[_Item], error: Optional[BaseException], outage: Optional[_Outage]) -> List[_Item]:
        """Answer ``work``; returns the allowed items committed after their checks gave up waiting."""
        late: List[_Item] = []
        with self._mutex:
            for item in work:
                if error is not None and outage is not None:
                    outage.count(item, ran=not item.waited)
                elif item.abandoned and not item.blocked and item.kind == "decision":
                    late.append(item)
                item.finish(error)
        return late

    def _commit(self, work: List[_Item], outage_facts: Optional[Dict[str, Any]], outcomes_alone: bool) -> None:
        """Write ``work`` (after the outage record, when recovering) in one transaction, committed
        at the configured level, or at ``NORMAL`` when it holds ``outcomes_alone`` (see the class's
        docstring). On any failure nothing is committed and the chain head and the records awaiting
        an outcome stay as they were.

        Each record is written final, in one INSERT: the row Agent OS's ``start_trace`` followed by
        ``log_violation``/``log_success``/``log_error`` would leave, hashed with Agent OS's own
        formulas (:func:`.seal.entry_hash`, :func:`.seal.content_hash`) and sealed before
        it is written. Going through the recorder's methods encoded the arguments twice, wrote
        every row twice (a pending INSERT, then an UPDATE of it) and read each one back to seal it:
        most of a decision's CPU.
        """
        recorder = self.recorder
        with recorder._buffer_lock:  # rows written through the recorder itself go first, in this transaction
            foreign = list(recorder._write_buffer)
            recorder._write_buffer.clear()
        # Rows written through the recorder may be decisions: with them, the configured level.
        unsynced = outcomes_alone and not foreign and self._outcomes_alone_unsynced
        synchronous = "NORMAL" if unsynced else self.synchronous
        previous = recorder._last_hash
        new_rows: List[Tuple[Optional[str], Dict[str, Any]]] = []  # (decision_id awaiting its outcome, row)
        updates: List[Tuple[str, Dict[str, Any]]] = []  # (decision_id, row with its outcome)
        in_group: Dict[str, Dict[str, Any]] = {}
        try:
            if outage_facts is not None:
                row = self._chained(
                    previous,
                    OUTAGE_AGENT_ID,
                    OUTAGE_TOOL_NAME,
                    json.dumps({"audit_outage": outage_facts}),
                    "error",
                    f"audit trail unavailable for {outage_facts['duration_s']}s ({outage_facts['error']}): "
                    f"{outage_facts['actions_blocked']} action(s) blocked because of it",
                )
                new_rows.append((None, row))
                previous = row["entry_hash"]
            for item in work:
                if item.kind == "decision":
                    decision_id, row = item.payload
                    if item.abandoned and not item.blocked:
                        row["policy_verdict"], row["violation_reason"] = "error", _NOT_RUN
                        row["content_hash"] = content_hash_of(row["part"], row)
                    self._chain(row, previous)
                    new_rows.append((decision_id if row["policy_verdict"] == "allowed" else None, row))
                    in_group[decision_id] = row
                    previous = row["entry_hash"]
                elif item.kind == "rotation":
                    rotation = self.signer.rotation_args(item.payload, previous)
                    row = self._chained(
                        previous, ROTATION_AGENT_ID, ROTATION_TOOL_NAME, json.dumps(rotation), "allowed", None
                    )
                    new_rows.append((None, row))
                    previous = row["entry_hash"]
                else:
                    audit_id, result, error, execution_time_ms = item.payload
                    row = in_group.get(audit_id)  # queued durability: the record may be in this very group
                    if row is None:
                        stored = self._awaiting_outcome.get(audit_id)
                        if stored is None:
                            continue  # not an allowed record of this trail, or its outcome came long after
                        row = dict(stored)
                        updates.append((audit_id, row))
                    if error is not None:  # as log_error writes it: the verdict and the error only
                        row.update(policy_verdict="error", violation_reason=_encodable(error))
                        logger.info(
                            "the tool of audit record %s raised (its outcome; the exception went to its caller): %s",
                            row["trace_id"],
                            error,
                        )
                    else:  # as log_success writes it ("" is stored as NULL, as Agent OS does)
                        milliseconds = None if execution_time_ms is None else float(execution_time_ms)
                        row.update(policy_verdict="allowed", result=_encodable(result) or None)
                        row["execution_time_ms"] = milliseconds
                    self._finalize(row)
            head = self._transaction(foreign, [row for _, row in new_rows], [row for _, row in updates], synchronous)
        except BaseException:
            if self.signer is not None:
                self.signer.settle(committed=False)
            with recorder._buffer_lock:
                recorder._write_buffer.clear()
            raise
        if self.signer is not None:
            self.signer.settle(committed=True)
        recorder._last_hash = head[1]
        self._head = head
        self._records += len(new_rows)
        for audit_id, _ in updates:
            del self._awaiting_outcome[audit_id]  # its outcome is written: no later update follows
        for decision_id, row in new_rows:
            if decision_id is not None:
                self._awaiting_outcome[decision_id] = row
        while len(self._awaiting_outcome) > self._max_pending_outcomes:
            self._awaiting_outcome.popitem(last=False)

    def _chained(
        self,
        previous: Optional[str],
        agent_id: str,
        tool_name: str,
        tool_args_json: str,
        verdict: str,
        reason: Optional[str],
    ) -> Dict[str, Any]:
        """A new record's row, chained to ``previous``: hashed and (with a key) sealed."""
        row = _draft_row(agent_id, tool_name, tool_args_json, verdict, reason)
        self._chain(row, previous)
        return row

    def _chain(self, row: Dict[str, Any], previous: Optional[str]) -> None:
        """Link ``row`` (from :func:`_draft_row`) to ``previous`` (as Agent OS chains it: over the row as
        first inserted, pending) and seal it."""
        row["previous_hash"] = previous
        row["entry_hash"] = entry_hash_of(previous, row["part"])
        if self.key is not None:
            row["metadata"] = seal_metadata(row, self.key)

    def _finalize(self, row: Dict[str, Any]) -> None:
        row["content_hash"] = content_hash_of(row["part"], row)
        if self.key is not None:
            row["metadata"] = seal_metadata(row, self.key)

    def _transaction(
        self,
        foreign: List[Dict[str, Any]],
        new_rows: List[Dict[str, Any]],
        updates: List[Dict[str, Any]],
        synchronous: str,
    ) -> Tuple[int, Optional[str]]:
        """Commit the rows at ``synchronous``; the file's new last record (id, entry hash)."""
        cursor = self._cursor
        if synchronous != self._connection_synchronous:  # set for this transaction, kept until another needs another
            cursor.execute(f"PRAGMA synchronous={synchronous}")
            self._connection_synchronous = synchronous
        cursor.execute("BEGIN IMMEDIATE")
        try:
            # Another writer, or records removed: the file's last record is not the one this trail
            # committed last. (A file deleted or replaced is found after the commit, below: the
            # commit then went to a file that is no longer the path's, and its checks are blocked.)
            last = cursor.execute(_LAST_RECORD).fetchone()
            if (tuple(last) if last else (0, None)) != self._head:
                problem = (
                    f"its last record is {tuple(last) if last else 'none'}, not record {self._head[0]} that this "
                    "kernel committed last: records were removed, or another writer added some"
                )
                raise AuditFileChangedError(f"the audit file {self.path!r} changed under the running kernel: {problem}")
            for operation in foreign:
                cursor.execute(operation["sql"], operation["params"])
            for row in new_rows:
                cursor.execute(*_insert_statement(row))
                row["id"] = cursor.lastrowid
            for row in updates:
                cursor.execute(*_update_statement(row))
            if new_rows:
                last = (new_rows[-1]["id"], new_rows[-1]["entry_hash"])  # the rows just inserted are the last ones
            elif foreign:
                last = cursor.execute(_LAST_RECORD).fetchone()
            else:
                # Outcomes only: they fill in records already chained, so the chain's end and the signed
                # heads stored with it (records, last record, its entry hash) stay as committed.
                last = None
            if self.key is not None and last is not None:
                head = sign_head(
                    self.key,
                    records=self._records + len(new_rows),
                    last_id=last[0],
                    last_entry_hash=last[1],
                    sealed_from=self._sealed_from,
                )
                cursor.execute(HEAD_UPSERT, tuple(head[name] for name in HEAD_COLUMNS))
            if self.signer is not None and last is not None:
                self.signer.write_head(
                    cursor, records=self._records + len(new_rows), last_id=last[0], last_entry_hash=last[1]
                )
            cursor.execute("COMMIT")
            self._unsynced = synchronous == "NORMAL" and self.synchronous != "NORMAL"
        except BaseException:
            try:
                cursor.execute("ROLLBACK")
            except sqlite3.Error:
                pass
            raise
        problem = self._file_changed()  # deleted or replaced while committing: the records are not in the file
        if problem is not None:
            raise AuditFileChangedError(f"the audit file {self.path!r} changed under the running kernel: {problem}")
        return self._head if last is None else (last[0], last[1])

    def _file_changed(self) -> Optional[str]:
        """Why the path no longer names the file this trail writes (None while it does)."""
        try:
            info = os.stat(self._path_text)
        except FileNotFoundError:
            return "it was deleted"
        except OSError as err:
            return f"it cannot be examined ({err})"
        if (info.st_dev, info.st_ino) != self._identity:
            return "it was replaced by another file"
        if info.st_size < self._size:
            return f"it was truncated ({self._size} -> {info.st_size} bytes)"
        self._size = info.st_size
        return None


#: The statements of the write path: a row is written in one INSERT, an outcome in one UPDATE.
#: A NULL is written as the literal ``NULL`` (an INSERT leaves the column out: no column of the
#: table has a default), never bound as a parameter: Python's sqlite3 binds ``None`` through its
#: adapter protocol, two failed attribute lookups per value, and a record has five or six of them.
#: One statement per pattern of NULL columns; SQLite's statement cache keeps each one compiled.
_INSERTED_COLUMNS = tuple(name for name in RECORD_COLUMNS if name != "id")
_UPDATED_COLUMNS = ("policy_verdict", "violation_reason", "result", "execution_time_ms", "metadata", "content_hash")
_STATEMENTS: Dict[Tuple[str, Tuple[Any, ...]], str] = {}


_inserted_values = operator.itemgetter(*_INSERTED_COLUMNS)
_NONES = itertools.repeat(None)


def _insert_statement(row: Dict[str, Any]) -> Tuple[str, Tuple[Any, ...]]:
    """The INSERT of ``row`` and its parameters: its columns that are not NULL."""
    values = _inserted_values(row)
    present = tuple(map(operator.is_not, values, _NONES))
    sql = _STATEMENTS.get(("insert", present))
    if sql is None:
        names = tuple(itertools.compress(_INSERTED_COLUMNS, present))
        sql = _STATEMENTS[("insert", present)] = (
            f"INSERT INTO audit_log ({', '.join(names)}) VALUES ({', '.join('?' * len(names))})"
        )
    return sql, tuple(itertools.compress(values, present))


def _update_statement(row: Dict[str, Any]) -> Tuple[str, Tuple[Any, ...]]:
    """The UPDATE that writes ``row``'s outcome columns (its id's row) and its parameters."""
    names = tuple(name for name in _UPDATED_COLUMNS if row[name] is not None)
    sql = _STATEMENTS.get(("update", names))
    if sql is None:
        assignments = ", ".join(f"{name} = ?" if name in names else f"{name} = NULL" for name in _UPDATED_COLUMNS)
        sql = _STATEMENTS[("update", names)] = f"UPDATE audit_log SET {assignments} WHERE id = ?"
    return sql, (*(row[name] for name in names), row["id"])


_LAST_RECORD = "SELECT id, entry_hash FROM audit_log ORDER BY id DESC LIMIT 1"


def _utc_now_iso() -> str:
    """``datetime.now(timezone.utc).isoformat()``, the same text (microseconds rounded down, none
    shown when zero), with the date and time of day formatted once a second instead of per record."""
    global _this_second
    seconds, nanoseconds = divmod(time.time_ns(), 1_000_000_000)
    second = _this_second
    if second[0] != seconds:
        second = _this_second = (seconds, datetime.fromtimestamp(seconds, timezone.utc).isoformat()[: -len("+00:00")])
    microseconds = nanoseconds // 1000
    return f"{second[1]}.{microseconds:06d}+00:00" if microseconds else f"{second[1]}+00:00"


_this_second: Tuple[int, str] = (-1, "")


#: The hex digit that begins a UUID's variant field: the random digit's two low bits under the RFC 4122 variant (10).
_RFC4122_VARIANT_DIGIT = {digit: "89ab"[int(digit, 16) & 0x3] for digit in "0123456789abcdef"}


def _uuid4_text() -> str:
    """``str(uuid.uuid4())``, the same random UUID text, without building a ``UUID`` object: the version
    and variant bits are set on the hex text (digit 12 is the version, digit 16 begins the variant).

    >>> import uuid
    >>> parsed = uuid.UUID(_uuid4_text())
    >>> parsed.version, parsed.variant == uuid.RFC_4122
    (4, True)
    """
    text = os.urandom(16).hex()
    return f"{text[:8]}-{text[8:12]}-4{text[13:16]}-{_RFC4122_VARIANT_DIGIT[text[16]]}{text[17:20]}-{text[20:]}"


def _draft_row(
    agent_id: str, tool_name: str, tool_args_json: str, verdict: str, reason: Optional[str]
) -> Dict[str, Any]:
    """A new record's row as far as it does not depend on the chain (built by the check, before
    its commit): its id, time and content hash. ``part`` (not a column) is the text both of Agent
    OS's hashes begin with, encoded once; :meth:`AuditTrail._chain` adds the links and the seal."""
    row = {
        "trace_id": _uuid4_text(),
        "timestamp": _utc_now_iso(),
        "agent_id": agent_id,
        "tool_name": tool_name,
        "tool_args": tool_args_json,
        "input_prompt": None,
        "policy_verdict": verdict,
        "violation_reason": reason,
        "result": None,
        "execution_time_ms": None,
        "metadata": None,
        "entry_hash": None,
        "previous_hash": None,
        "content_hash": None,
    }
    part = row["part"] = hashed_part(row)
    row["content_hash"] = content_hash_of(part, row)
    return row


_NOT_RUN = "not run: the check gave up waiting for this record's commit (commit_timeout_s) and blocked the action"


def _lock_writer(path: Path) -> int:
    """An exclusive ``flock`` on ``path`` held by a descriptor of ours; a clear error if another
    writer holds it. (SQLite itself locks with ``fcntl`` byte ranges, which do not conflict with this.)"""
    fd = os.open(str(path), os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise AuditWriterConflict(
            f"the audit file {str(path)!r} is already being written by another kernel or process; a FlightRecorder "
            "file has one writer (its hash chain lives in the writer): give each kernel and each process its own "
            "file, e.g. AgentOSRunner(audit_dir=...) writes worker-<id>.db per runner process"
        ) from None
    except BaseException:
        os.close(fd)
        raise
    return fd


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


_LIVE_TRAILS: "weakref.WeakSet[AuditTrail]" = weakref.WeakSet()
_CONFIGURED = threading.Lock()
_configured = False


def _configure_once() -> None:
    """What the first audit trail of a process sets up (done here, not at import, so importing the
    kernel changes nothing): the recorder logger's level and filter, and the exit hook that drains trails."""
    global _configured
    with _CONFIGURED:
        if _configured:
            return
        if RECORDER_LOGGER.level == logging.NOTSET:
            RECORDER_LOGGER.setLevel(logging.ERROR)
        atexit.register(_drain_live_trails)
        _configured = True


def _drain_live_trails() -> None:
    """At interpreter exit, write what is still queued (committer threads are daemons)."""
    for trail in list(_LIVE_TRAILS):
        try:
            trail.close()
        except Exception:  # noqa: BLE001
            logger.exception("could not close the audit trail %s at exit", trail.path)
