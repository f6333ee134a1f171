"""The audit trail writes each record final, in one INSERT, hashed and sealed before it is written.

The rows must be exactly the rows Agent OS's ``FlightRecorder`` leaves when a record is written
through its own methods (``start_trace`` with the ``tool_args`` of :mod:`.audit.record`, then
``log_violation``/``log_success``/``log_error``, then the seal over the row as stored): every
column, hash and seal, for every kind of record and outcome. Both writers run with the same trace
ids and clock, and the two files are compared row by row; Agent OS's own ``verify_integrity``
and :func:`verify_file` (with the key) accept the trail's file.
"""

from __future__ import annotations

import itertools
import json
import sqlite3
import threading
import time
import uuid
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Dict, List

import pytest
from agent_control_plane import flight_recorder as agent_os_recorder

from agentlightning.contrib.kernel.agentos import Action, GovernanceKernel, Policy, SQLPolicy
from agentlightning.contrib.kernel.agentos.audit import AuditTrail, open_flight_recorder
from agentlightning.contrib.kernel.agentos.audit import trail as audit_module
from agentlightning.contrib.kernel.agentos.audit.record import build_tool_args, governance_envelope, serialize_args
from agentlightning.contrib.kernel.agentos.audit.seal import AuditKey, seal_metadata, verify_file

KEY = "k" * 64
FIXED_TIME = datetime(2026, 11, 27, 12, 0, 0, tzinfo=timezone.utc)


class _Clock(datetime):
    @classmethod
    def now(cls, tz: Any = None) -> datetime:  # type: ignore[override]
        return FIXED_TIME


@pytest.fixture
def same_ids_and_clock(monkeypatch: pytest.MonkeyPatch):
    """Both writers draw trace ids from one sequence (restarted per writer) and read one clock."""
    state = {"ids": itertools.count()}

    def next_id() -> uuid.UUID:
        return uuid.UUID(int=next(state["ids"]) + 1)

    monkeypatch.setattr(uuid, "uuid4", next_id)
    monkeypatch.setattr(agent_os_recorder, "datetime", _Clock)
    # The trail draws its ids and times through its own functions (the same texts as uuid4 and
    # datetime.now, tested below), so those are what it reads here.
    monkeypatch.setattr(audit_module, "_uuid4_text", lambda: str(next_id()))
    monkeypatch.setattr(audit_module, "_utc_now_iso", lambda: FIXED_TIME.isoformat())

    def restart() -> None:
        state["ids"] = itertools.count()

    return restart


class Rewrite(Policy):
    """Rewrites one query (a modified decision: the record keeps the original arguments)."""

    def evaluate(self, action: Action, context: Any) -> list:
        return []

    def rewrite(self, action: Action, context: Any) -> Any:
        if action.args.get("query") == "SELECT * FROM t":
            return Action.of_call(action.tool_name, {**action.args, "query": "SELECT id FROM t"})
        return None


ARGS: List[Dict[str, Any]] = [
    {"query": "SELECT 1"},
    {"query": "DROP TABLE t"},
    {"query": "SELECT * FROM t"},
    {"query": "SELECT 'naïve ☃'", "params": [1, 2.5, None, True, {"b": 1, "a": [float("inf")]}]},
    {"query": "SELECT '\ud800'"},
    {"query": "SELECT '" + "x" * 300 + "'"},
    {"query": "SELECT 2", "blob": b"\x00\x01"},
]


def _rows(path: Path) -> List[Dict[str, Any]]:
    conn = sqlite3.connect(str(path))
    conn.row_factory = sqlite3.Row
    try:
        return [dict(row) for row in conn.execute("SELECT * FROM audit_log ORDER BY id")]
    finally:
        conn.close()


def _kernel() -> GovernanceKernel:
    return GovernanceKernel([SQLPolicy(deny=["DROP"]), Rewrite()])


def _outcome(index: int) -> Dict[str, Any]:
    """A different outcome per allowed decision: a result, an error, an empty result, an int time."""
    return [
        {"result": "3 rows", "execution_time_ms": 1.5},
        {"error": "no such table: t \ud800"},
        {"result": "", "execution_time_ms": 2},
        {"result": None},
    ][index % 4]


def _decisions() -> list:
    kernel = _kernel()  # no audit trail: the decisions only, written below both ways
    return [kernel.check(Action.of_call("database_query", args)) for args in ARGS]


def _through_the_trail(path: Path, decisions: list, key: Any, restart_ids: Any) -> None:
    trail = AuditTrail(open_flight_recorder(path), key=key, max_args_chars=200)
    restart_ids()
    allowed = 0
    for decision in decisions:
        trail.record(decision)
        if decision.allowed:
            trail.record_outcome(decision.decision_id, **_outcome(allowed))
            allowed += 1
            trail.flush()  # each outcome its own transaction, as the reference below writes it
    trail.close()


def _through_agent_os(path: Path, decisions: list, key: Any, restart_ids: Any) -> None:
    """The records written with the FlightRecorder's own methods, sealed over the stored rows."""
    recorder = open_flight_recorder(path)
    recorder.logger.disabled = True
    restart_ids()
    encodable = audit_module._encodable
    allowed = 0
    for decision in decisions:
        original = None
        if decision.original_action is not None:
            original = serialize_args(decision.original_action.args, 200)
        tool_args = build_tool_args(serialize_args(decision.action.args, 200), governance_envelope(decision), original)
        trace = recorder.start_trace(
            agent_id=encodable(decision.context.agent_id), tool_name="database_query", tool_args=tool_args
        )
        if decision.blocked:
            recorder.log_violation(trace, encodable(decision.reason))
            continue
        recorder.log_success(trace, result=None)
        outcome = _outcome(allowed)
        allowed += 1
        if "error" in outcome:
            recorder.log_error(trace, encodable(outcome["error"]))
        else:
            # As a float: SQLite stores 2 as 2.0 in the REAL column, and Agent OS would hash "2",
            # a row its own verify_integrity then rejects; the trail hashes what is stored.
            milliseconds = outcome.get("execution_time_ms")
            recorder.log_success(
                trace,
                result=encodable(outcome["result"]),
                execution_time_ms=None if milliseconds is None else float(milliseconds),
            )
    recorder.flush()
    if key is not None:
        conn = sqlite3.connect(str(path))
        conn.row_factory = sqlite3.Row
        for row in [dict(row) for row in conn.execute("SELECT * FROM audit_log")]:
            seal = seal_metadata(row, AuditKey(key))
            conn.execute("UPDATE audit_log SET metadata = ? WHERE id = ?", (seal, row["id"]))
        conn.commit()
        conn.close()
    recorder.close()


@pytest.mark.parametrize("key", [None, KEY], ids=["unsealed", "sealed"])
def test_the_trail_writes_the_rows_agent_os_writes(tmp_path: Path, same_ids_and_clock, key) -> None:
    decisions = _decisions()
    _through_the_trail(tmp_path / "trail.db", decisions, key, same_ids_and_clock)
    _through_agent_os(tmp_path / "agent_os.db", decisions, key, same_ids_and_clock)
    written, reference = _rows(tmp_path / "trail.db"), _rows(tmp_path / "agent_os.db")
    assert len(written) == len(ARGS)
    assert {row["policy_verdict"] for row in written} == {"allowed", "blocked", "error"}  # every kind of row
    for mine, theirs in zip(written, reference, strict=True):
        assert mine == theirs
    envelopes = [json.loads(row["tool_args"])["agentos"] for row in written]
    assert [e["verdict"] for e in envelopes][:3] == ["allowed", "blocked", "modified"]
    assert envelopes[2]["original_args"] == {"query": "SELECT * FROM t"}
    assert json.loads(written[5]["tool_args"])["args"]["__truncated__"] is True
    assert verify_file(tmp_path / "trail.db", key=None if key is None else AuditKey(key))["valid"]
    assert open_flight_recorder(tmp_path / "trail.db").verify_integrity()["valid"]


def test_an_outcome_in_the_same_group_as_its_record_lands(tmp_path: Path) -> None:
    """Queued durability: the action may run, and its outcome be queued, before the writer has
    committed its record; both land in the same transaction and the outcome is not lost."""
    trail = AuditTrail(open_flight_recorder(tmp_path / "a.db"), durability="queued", key=KEY)
    kernel = GovernanceKernel([SQLPolicy(deny=["DROP"])])
    kernel.audit = trail
    decisions = [kernel.check(Action.sql(f"SELECT {i}")) for i in range(50)]
    for decision in decisions:
        trail.record_outcome(decision.audit_id, result=f"row {decision.action.args['query']}", execution_time_ms=1.0)
    kernel.close()
    rows = _rows(tmp_path / "a.db")
    assert [row["result"] for row in rows] == [f"row SELECT {i}" for i in range(50)]
    assert verify_file(tmp_path / "a.db", key=AuditKey(KEY))["valid"]


def test_a_blocked_row_has_its_reason_and_a_warned_one_its_violation(tmp_path: Path) -> None:
    class Warn(Policy):
        def evaluate(self, action: Action, context: Any) -> list:
            return [self.violation("noted")]

    kernel = GovernanceKernel([Warn(mode="warn"), SQLPolicy(deny=["DROP"])], recorder=tmp_path / "a.db")
    kernel.check(Action.sql("SELECT 1"))
    kernel.check(Action.sql("DROP TABLE t"))
    kernel.close()
    rows = _rows(tmp_path / "a.db")
    assert [row["policy_verdict"] for row in rows] == ["allowed", "blocked"]
    assert rows[1]["violation_reason"] and "DROP" in rows[1]["violation_reason"]
    assert json.loads(rows[0]["tool_args"])["agentos"]["violations"][0]["policy_name"] == "Warn"


def test_the_trails_ids_and_times_are_uuid4_and_datetime_now_texts() -> None:
    for _ in range(2000):
        text = audit_module._uuid4_text()
        parsed = uuid.UUID(text)
        assert str(parsed) == text and parsed.version == 4 and parsed.variant == uuid.RFC_4122
    for _ in range(2000):
        before = datetime.now(timezone.utc)
        text = audit_module._utc_now_iso()
        after = datetime.now(timezone.utc)
        assert before <= datetime.fromisoformat(text) <= after
        assert text == datetime.fromisoformat(text).isoformat()  # the same text isoformat gives that time


def test_the_trails_time_of_a_whole_second_has_no_fraction(monkeypatch: pytest.MonkeyPatch) -> None:
    for nanoseconds in (1_790_000_000_000_000_000, 1_790_000_000_000_001_000, 1_790_000_000_999_999_999):
        monkeypatch.setattr(audit_module.time, "time_ns", lambda: nanoseconds)
        expected = datetime.fromtimestamp(nanoseconds // 1000 / 1e6, timezone.utc)
        expected = expected.replace(microsecond=nanoseconds // 1000 % 1_000_000)  # rounded down, as datetime.now
        assert audit_module._utc_now_iso() == expected.isoformat()


@pytest.mark.parametrize("args", [*ARGS, {"b": 1, "a": {"d": [1, {"c": None}]}}, {"x": object()}, {1: "a", "b": 2}])
def test_the_prebuilt_encoder_writes_what_json_dumps_writes(args: Dict[str, Any]) -> None:
    try:
        expected = json.dumps(args, default=repr, sort_keys=True)
    except TypeError:
        expected = None
    text = serialize_args(args)
    if expected is None:
        assert json.loads(text)["__unserializable__"] == "TypeError"
    else:
        assert text == expected


class _Yielding:
    """An argument JSON cannot encode whose ``repr`` lets other threads run (mid-encoding)."""

    def __init__(self, number: int) -> None:
        self.number = number

    def __repr__(self) -> str:
        time.sleep(0)
        return f"<yielding {self.number}>"


def test_the_prebuilt_encoder_recovers_after_a_circular_argument_and_serves_threads_at_once() -> None:
    circular: Dict[str, Any] = {}
    circular["self"] = circular
    assert json.loads(serialize_args(circular))["__unserializable__"] == "ValueError"
    shared = {"query": "SELECT 1", "params": [[i, {"k": _Yielding(i)}] for i in range(50)]}
    expected = json.dumps(shared, sort_keys=True, default=repr)
    assert serialize_args({"a": 1}) == '{"a": 1}'  # the encoder that saw the circular reference was dropped
    outputs: List[str] = []

    def encode() -> None:
        outputs.extend(serialize_args(shared) for _ in range(30))

    threads = [threading.Thread(target=encode) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert outputs == [expected] * 120  # one action's arguments encoded on several threads at once
