"""Reading and validating Agent OS ``FlightRecorder`` rows.

A FlightRecorder is a SQLite file with one ``audit_log`` table. This module opens such a file
*read-only* (it never creates, migrates or writes it), reads rows in insertion order (``id``, the
order of the SHA-256 chain) in chunks, and turns each row into a validated :class:`AuditRecord`.
Anything unexpected is an :class:`AuditError` that names the file, the row and the field:

* :class:`RecorderFileError`: the file is missing, a directory, not SQLite, or has no
  ``audit_log`` table with the FlightRecorder columns;
* :class:`RecordError`: a row has a field of the wrong type or value, an unknown column, or a
  governance envelope that is not as the kernel writes it (unknown keys, a violation without
  severity, ...; the format and its checks are
  :mod:`agentlightning.contrib.kernel.agentos.audit.record`). ``strict=False`` keeps unknown
  fields in :attr:`AuditRecord.extra` instead of failing.

>>> import os, tempfile
>>> from agentlightning.contrib.kernel.agentos import GovernanceKernel, SQLPolicy
>>> path = os.path.join(tempfile.mkdtemp(), "audit.db")
>>> kernel = GovernanceKernel([SQLPolicy(deny=["DROP"])], recorder=path)
>>> _ = kernel.check("database_query", {"query": "DROP TABLE t"}); kernel.close()
>>> with RecorderReader(path) as reader:
...     [(r.record_id, r.verdict, r.policy_names) for r in reader.records()]
[(1, 'blocked', ('SQLPolicy',))]
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Dict, Iterator, List, Mapping, Optional, Tuple, Union

from agent_os import FlightRecorder

from .record import RecordFormatError, read_tool_args
from .seal import RECORD_COLUMNS
from .trail import flush_recorder

__all__ = [
    "AuditError",
    "RecorderFileError",
    "RecordError",
    "AuditRecord",
    "RecorderReader",
    "RecorderLike",
    "parse_record",
    "RECORD_COLUMNS",
    "RECORD_VERDICTS",
]

RecorderLike = Union[FlightRecorder, str, Path]

_REQUIRED_COLUMNS = frozenset(RECORD_COLUMNS)
#: Values of ``policy_verdict`` the FlightRecorder writes (``pending`` until the outcome is logged).
RECORD_VERDICTS = frozenset({"pending", "allowed", "blocked", "error", "shadow"})


class AuditError(ValueError):
    """Base class of every audit-trail input/output error of this package."""


class RecorderFileError(AuditError):
    """The FlightRecorder file is missing, unreadable, corrupt or not a FlightRecorder file."""


class RecordError(AuditError):
    """One FlightRecorder row does not have the shape this package can export faithfully."""


@dataclass(frozen=True)
class AuditRecord:
    """One validated FlightRecorder row (raw fields kept as stored, so hashes can be recomputed).

    ``envelope`` is the ``agentos`` part of ``tool_args`` for rows written by the governance
    kernel (None for rows written by anything else); ``args`` is the action's arguments.
    """

    record_id: int
    trace_id: str
    timestamp: str
    agent_id: str
    tool_name: str
    tool_args: Optional[str]
    input_prompt: Optional[str]
    verdict: str
    violation_reason: Optional[str]
    result: Optional[str]
    execution_time_ms: Optional[float]
    metadata: Optional[str]
    entry_hash: Optional[str]
    previous_hash: Optional[str]
    content_hash: Optional[str]
    args: Any = None
    envelope: Optional[Dict[str, Any]] = None
    extra: Dict[str, Any] = field(default_factory=dict)
    source: str = ""

    # ------------------------------------------------------------------ derived views
    @property
    def time(self) -> float:
        """The record's timestamp as seconds since the epoch."""
        return _parse_time(self.timestamp).timestamp()

    @property
    def blocked(self) -> bool:
        """True when the FlightRecorder row says the action was blocked."""
        return self.verdict == "blocked"

    @property
    def pending(self) -> bool:
        """True until the writer logged an outcome (the row may still change)."""
        return self.verdict == "pending"

    @property
    def violations(self) -> List[Dict[str, Any]]:
        return list(self.envelope.get("violations", [])) if self.envelope else []

    @property
    def signals(self) -> List[str]:
        return list(self.envelope.get("signals", [])) if self.envelope else []

    @property
    def policy_names(self) -> Tuple[str, ...]:
        """Policies with a finding on this record, in order, without repeats."""
        return tuple(dict.fromkeys(v["policy_name"] for v in self.violations))

    @property
    def policy_verdict(self) -> str:
        """The kernel's verdict (allowed/blocked/modified/warned) or, for rows written without a
        governance envelope, the FlightRecorder's."""
        if self.envelope and self.envelope.get("verdict"):
            return str(self.envelope["verdict"])
        return self.verdict

    @property
    def policy_violated(self) -> bool:
        """A policy found something (blocked, warned or modified), or the row is blocked."""
        return bool(self.violations) or self.blocked

    @property
    def rollout_id(self) -> Optional[str]:
        return self.envelope.get("rollout_id") if self.envelope else None

    @property
    def attempt_id(self) -> Optional[str]:
        return self.envelope.get("attempt_id") if self.envelope else None

    def row(self) -> Dict[str, Any]:
        """The row exactly as stored (the input of Agent OS's hash computations)."""
        data = {name: getattr(self, _FIELD_OF_COLUMN.get(name, name)) for name in RECORD_COLUMNS}
        data.update(self.extra.get("columns", {}))
        return data


_FIELD_OF_COLUMN = {"id": "record_id", "policy_verdict": "verdict"}


def _parse_time(value: str) -> datetime:
    parsed = datetime.fromisoformat(value)
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc)


def _fail(source: str, record_id: Any, what: str) -> RecordError:
    return RecordError(f"{source}: record id={record_id}: {what}")


def _check_str(
    row: Mapping[str, Any], name: str, source: str, *, optional: bool, nonempty: bool = False
) -> Optional[str]:
    value = row.get(name)
    if value is None and optional:
        return None
    if not isinstance(value, str) or (nonempty and not value):
        kind = "a non-empty string" if nonempty else "a string"
        raise _fail(
            source, row.get("id"), f"field {name!r} must be {kind}{' or NULL' if optional else ''}, got {value!r}"
        )
    return value


def parse_record(row: Mapping[str, Any], *, source: str = "<row>", strict: bool = True) -> AuditRecord:
    """Validate one ``audit_log`` row (a mapping of column to value) into an :class:`AuditRecord`.

    >>> parse_record({"id": 1, "trace_id": "t", "timestamp": "2026-01-01T00:00:00+00:00", "agent_id": "a",
    ...               "tool_name": "x", "policy_verdict": "allowed", "tool_args": "{\\"q\\": 1}"}).args
    {'q': 1}
    >>> try:
    ...     parse_record({"id": 1, "trace_id": "t", "timestamp": "yesterday", "agent_id": "a", "tool_name": "x",
    ...                   "policy_verdict": "allowed"})
    ... except RecordError as err:
    ...     print(err)
    <row>: record id=1: field 'timestamp' is not an ISO-8601 time: 'yesterday'
    """
    extra: Dict[str, Any] = {}
    unknown_columns = sorted(set(row) - _REQUIRED_COLUMNS)
    if unknown_columns:
        if strict:
            raise _fail(
                source,
                row.get("id"),
                f"unexpected column(s) {unknown_columns} (not in Agent OS 3.7's audit_log; "
                "pass strict=False to keep them as extra fields)",
            )
        extra["columns"] = {k: row[k] for k in unknown_columns}
    record_id = row.get("id")
    if isinstance(record_id, bool) or not isinstance(record_id, int) or record_id < 1:
        raise _fail(source, record_id, f"field 'id' must be a positive integer, got {record_id!r}")
    trace_id = _check_str(row, "trace_id", source, optional=False, nonempty=True)
    timestamp = _check_str(row, "timestamp", source, optional=False, nonempty=True)
    try:
        _parse_time(timestamp)  # type: ignore[arg-type]
    except ValueError:
        raise _fail(source, record_id, f"field 'timestamp' is not an ISO-8601 time: {timestamp!r}") from None
    agent_id = _check_str(row, "agent_id", source, optional=False)
    tool_name = _check_str(row, "tool_name", source, optional=False)
    verdict = row.get("policy_verdict")
    if verdict not in RECORD_VERDICTS:
        raise _fail(
            source, record_id, f"field 'policy_verdict' must be one of {sorted(RECORD_VERDICTS)}, got {verdict!r}"
        )
    tool_args = _check_str(row, "tool_args", source, optional=True)
    for name in (
        "input_prompt",
        "violation_reason",
        "result",
        "metadata",
        "entry_hash",
        "previous_hash",
        "content_hash",
    ):
        _check_str(row, name, source, optional=True)
    elapsed = row.get("execution_time_ms")
    if elapsed is not None and (isinstance(elapsed, bool) or not isinstance(elapsed, (int, float))):
        raise _fail(source, record_id, f"field 'execution_time_ms' must be a number or NULL, got {elapsed!r}")
    args: Any = None
    envelope: Optional[Dict[str, Any]] = None
    if tool_args is not None:
        try:
            args, envelope, unknown_fields = read_tool_args(tool_args, strict=strict)
        except RecordFormatError as err:
            raise _fail(source, record_id, str(err)) from None
        extra.update(unknown_fields)
    return AuditRecord(
        record_id=record_id,
        trace_id=trace_id,  # type: ignore[arg-type]
        timestamp=timestamp,  # type: ignore[arg-type]
        agent_id=agent_id,  # type: ignore[arg-type]
        tool_name=tool_name,  # type: ignore[arg-type]
        tool_args=tool_args,
        input_prompt=row.get("input_prompt"),
        verdict=verdict,
        violation_reason=row.get("violation_reason"),
        result=row.get("result"),
        execution_time_ms=None if elapsed is None else float(elapsed),
        metadata=row.get("metadata"),
        entry_hash=row.get("entry_hash"),
        previous_hash=row.get("previous_hash"),
        content_hash=row.get("content_hash"),
        args=args,
        envelope=envelope,
        extra=extra,
        source=source,
    )


def _recorder_path(recorder: RecorderLike) -> Path:
    if isinstance(recorder, FlightRecorder):
        return Path(recorder.db_path)
    if isinstance(recorder, (str, Path)) and str(recorder):
        return Path(recorder)
    raise TypeError(
        "recorder must be an agent_os.FlightRecorder or the path of its file, "
        f"got {type(recorder).__name__}: {recorder!r}"
    )


class RecorderReader:
    """Read-only access to the rows of one FlightRecorder file, oldest (chain order) first.

    ``recorder`` is an open ``agent_os.FlightRecorder`` (its write buffer is flushed before each
    read, so batched records are not missed) or the path of a FlightRecorder file written by
    another process (only what that process has flushed is visible; later reads see the rest).
    The file must exist: this class never creates one.

    >>> try:  # doctest: +NORMALIZE_WHITESPACE
    ...     RecorderReader("/nonexistent/audit.db")
    ... except RecorderFileError as err:
    ...     print(err)
    FlightRecorder file '/nonexistent/audit.db' does not exist;
    pass the path of an existing Agent OS FlightRecorder database
    """

    def __init__(self, recorder: RecorderLike, *, strict: bool = True, chunk_size: int = 2000) -> None:
        self.recorder = recorder if isinstance(recorder, FlightRecorder) else None
        self.path = _recorder_path(recorder)
        self.strict = strict
        if isinstance(chunk_size, bool) or not isinstance(chunk_size, int) or chunk_size < 1:
            raise ValueError(f"chunk_size must be a positive integer, got {chunk_size!r}")
        self.chunk_size = chunk_size
        self._conn: Optional[sqlite3.Connection] = None
        self._open()

    def _open(self) -> None:
        path = self.path
        if not path.exists():
            raise RecorderFileError(
                f"FlightRecorder file {str(path)!r} does not exist; "
                "pass the path of an existing Agent OS FlightRecorder database"
            )
        if path.is_dir():
            raise RecorderFileError(
                f"FlightRecorder path {str(path)!r} is a directory; pass the path of the database file inside it"
            )
        try:
            conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, check_same_thread=False)
            conn.row_factory = sqlite3.Row
            columns = [r[1] for r in conn.execute("PRAGMA table_info(audit_log)")]
        except sqlite3.DatabaseError as err:
            raise RecorderFileError(
                f"{str(path)!r} is not a readable FlightRecorder database ({err}); "
                "is the file corrupt or of another kind?"
            ) from err
        if not columns:
            conn.close()
            raise RecorderFileError(
                f"{str(path)!r} is a SQLite file but has no 'audit_log' table: not an Agent OS FlightRecorder file"
            )
        missing = [c for c in RECORD_COLUMNS if c not in columns]
        if missing:
            conn.close()
            raise RecorderFileError(
                f"{str(path)!r}: table 'audit_log' lacks FlightRecorder column(s) {missing}; "
                "written by an incompatible Agent OS version?"
            )
        self._conn = conn

    @property
    def source(self) -> str:
        return str(self.path)

    def flush(self) -> None:
        """Flush the attached FlightRecorder's write buffer and what the kernel's audit writer
        still holds for it (no-op for a path)."""
        if self.recorder is not None:
            flush_recorder(self.recorder)

    def _query(self, sql: str, params: Tuple[Any, ...] = ()) -> List[sqlite3.Row]:
        if self._conn is None:
            raise RecorderFileError(f"reader of {self.source!r} is closed")
        try:
            return self._conn.execute(sql, params).fetchall()
        except sqlite3.DatabaseError as err:
            raise RecorderFileError(
                f"cannot read FlightRecorder file {self.source!r} ({err}); is the file corrupt?"
            ) from err

    def rows(self, after_id: int = 0, upto_id: Optional[int] = None) -> Iterator[Dict[str, Any]]:
        """Raw rows with ``after_id < id <= upto_id``, in id order, read in chunks."""
        self.flush()
        last = after_id
        upto = (1 << 62) if upto_id is None else upto_id
        while True:
            chunk = self._query(
                "SELECT * FROM audit_log WHERE id > ? AND id <= ? ORDER BY id LIMIT ?", (last, upto, self.chunk_size)
            )
            for row in chunk:
                yield dict(row)
            if len(chunk) < self.chunk_size:
                return
            last = chunk[-1]["id"]

    def records(self, after_id: int = 0, upto_id: Optional[int] = None) -> Iterator[AuditRecord]:
        """Validated records with ``after_id < id <= upto_id`` (an invalid row raises :class:`RecordError`)."""
        for row in self.rows(after_id, upto_id):
            yield parse_record(row, source=self.source, strict=self.strict)

    def count(self) -> int:
        self.flush()
        return int(self._query("SELECT COUNT(*) FROM audit_log")[0][0])

    def head(self) -> Optional[str]:
        """The ``entry_hash`` of the newest record: the chain head, an anchor for exports."""
        self.flush()
        rows = self._query("SELECT entry_hash FROM audit_log ORDER BY id DESC LIMIT 1")
        return rows[0][0] if rows else None

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def __enter__(self) -> "RecorderReader":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
