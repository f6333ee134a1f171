"""Every kernel decision, written to a real Agent OS ``FlightRecorder`` (SQLite, SHA-256 chain).

One record per decision. The FlightRecorder hashes ``tool_args`` into its chain, so the record's
``tool_args`` is an envelope holding the action's arguments *and* the governance verdict::

    {"args": {...}, "agentos": {"decision_id", "verdict", "rollout_id", "attempt_id",
                                "violations": [...], "signals": [...]}}

which makes severity, policy and verdict as tamper-evident as the rest of the row. Blocked
decisions are flushed to disk before the kernel returns; allowed ones ride the recorder's batch.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import sqlite3
import threading
from pathlib import Path
from typing import Any, Dict, Mapping, Optional, Union

from agent_os import FlightRecorder

from .actions import Decision

__all__ = ["AuditTrail", "open_flight_recorder", "decision_from_record"]

logger = logging.getLogger(__name__)
RECORDER_LOGGER = logging.getLogger(__name__ + ".flight_recorder")
RECORDER_LOGGER.setLevel(logging.ERROR)

#: Arguments longer than this (as JSON) are stored truncated, with the full payload's SHA-256.
DEFAULT_MAX_ARGS_CHARS = 65_536


def open_flight_recorder(path: Union[str, Path], **kwargs: Any) -> FlightRecorder:
    """Open (or create) a FlightRecorder database at ``path``, with a clear error if it cannot.

    >>> import tempfile, os
    >>> rec = open_flight_recorder(os.path.join(tempfile.mkdtemp(), "audit.db"))
    >>> rec.verify_integrity()["valid"]
    True
    """
    if not isinstance(path, (str, Path)) or not str(path):
        raise TypeError(f"FlightRecorder path must be a str or Path, got {path!r}")
    path = Path(path)
    if path.is_dir():
        raise ValueError(f"FlightRecorder path {str(path)!r} is a directory; pass a file path such as {str(path / 'audit.db')!r}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        return FlightRecorder(db_path=str(path), **kwargs)
    except (OSError, sqlite3.Error) as err:
        raise ValueError(f"cannot open FlightRecorder at {str(path)!r}: {err}; pass a writable file path") from err


def _jsonable_args(args: Mapping[str, Any], max_chars: int) -> Any:
    try:
        text = json.dumps(args, default=repr, sort_keys=True)
    except (TypeError, ValueError, RecursionError) as err:
        text = repr(args)
        return {"__unserializable__": f"{type(err).__name__}", "repr": text[:max_chars]}
    if len(text) <= max_chars:
        return json.loads(text) if text else {}
    return {
        "__truncated__": True,
        "chars": len(text),
        "sha256": hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest(),
        "head": text[:max_chars],
    }


class AuditTrail:
    """Writes decisions to a FlightRecorder; safe to share between threads.

    The recorder's hash chain lives in the recorder object, so each process must own its own
    database file (two processes appending to one file would fork the chain).
    """

    def __init__(self, recorder: FlightRecorder, *, max_args_chars: int = DEFAULT_MAX_ARGS_CHARS) -> None:
        if not isinstance(recorder, FlightRecorder):
            raise TypeError(
                f"recorder must be an agent_os.FlightRecorder, got {type(recorder).__name__}; "
                f"or pass a file path and the kernel opens one"
            )
        self.recorder = recorder
        # The FlightRecorder logs a WARNING per blocked action; in training that is one stderr line
        # per violation. Route this recorder's messages to a logger of ours that shows errors only
        # (lower its level to see them all).
        recorder.logger = RECORDER_LOGGER
        self.max_args_chars = max_args_chars
        self.pid = os.getpid()  # the process whose chain head this recorder holds
        self._lock = threading.Lock()

    @property
    def path(self) -> str:
        return str(self.recorder.db_path)

    def record(self, decision: Decision) -> str:
        """Write one decision; returns the record's ``trace_id``."""
        envelope = {
            "args": _jsonable_args(decision.action.args, self.max_args_chars),
            "agentos": {
                "decision_id": decision.decision_id,
                "verdict": decision.verdict.value,
                "rollout_id": decision.context.rollout_id,
                "attempt_id": decision.context.attempt_id,
                "violations": [v.to_dict() for v in decision.violations],
                "signals": list(decision.signals),
            },
        }
        if decision.original_action is not None:
            envelope["agentos"]["original_args"] = _jsonable_args(decision.original_action.args, self.max_args_chars)
        with self._lock:
            trace_id = self.recorder.start_trace(
                agent_id=decision.context.agent_id, tool_name=decision.action.tool_name, tool_args=envelope
            )
            if decision.blocked:
                self.recorder.log_violation(trace_id, decision.reason)
                self.recorder.flush()
            else:
                self.recorder.log_success(trace_id, result=None)
        return trace_id

    def record_outcome(
        self, audit_id: str, *, result: Any = None, error: Optional[str] = None, execution_time_ms: Optional[float] = None
    ) -> None:
        """Add what an allowed action returned (or the error it raised) to its record."""
        text = None if result is None else str(result)[: self.max_args_chars]
        with self._lock:
            if error is not None:
                self.recorder.log_error(audit_id, str(error)[: self.max_args_chars])
            else:
                self.recorder.log_success(audit_id, result=text, execution_time_ms=execution_time_ms)

    def flush(self) -> None:
        with self._lock:
            self.recorder.flush()

    def verify(self) -> Dict[str, Any]:
        """Agent OS's hash-chain and content-hash check over the whole file."""
        with self._lock:
            return self.recorder.verify_integrity()

    def records(self) -> list:
        """All records (flushes first), oldest first."""
        with self._lock:
            return self.recorder.get_log()

    def close(self) -> None:
        with self._lock:
            self.recorder.close()


def decision_from_record(record: Mapping[str, Any]) -> Optional[Dict[str, Any]]:
    """The governance envelope of a FlightRecorder row written by :class:`AuditTrail`, or None
    for rows written by something else."""
    raw = record.get("tool_args")
    if not raw:
        return None
    try:
        envelope = json.loads(raw)
    except (TypeError, ValueError):
        return None
    if not isinstance(envelope, dict) or not isinstance(envelope.get("agentos"), dict):
        return None
    return envelope
