"""FlightRecorderAdapter against real Agent OS FlightRecorder files and a real InMemoryLightningStore."""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import stat
from pathlib import Path

import pytest
from agent_os import FlightRecorder

from agentlightning.store.memory import InMemoryLightningStore
from agentlightning.types import Span

from agentlightning.contrib.adapter.agentos import (
    AuditError,
    ExportError,
    FlightRecorderAdapter,
    FlightRecorderEmitter,
    adapters_for_directory,
    create_emitter,
    read_export,
    verify_export,
)
from agentlightning.contrib.adapter.agentos.adapter import AUDIT_ROLLOUT_METADATA_KEY
from agentlightning.contrib.adapter.agentos.spans import is_audit_span
from agentlightning.contrib.kernel.agentos import (
    ActionContext,
    CostControlPolicy,
    GovernanceKernel,
    SQLPolicy,
    governance_context,
)
from agentlightning.contrib.kernel.agentos.agl03.spans import add_spans, decision_core_fields
from agentlightning.contrib.kernel.agentos.agl03.stats import governance_stats
from agentlightning.contrib.kernel.agentos.audit import open_flight_recorder
from agentlightning.contrib.kernel.agentos.audit.reader import RecorderFileError, RecordError

QUERIES = ["SELECT 1", "DROP TABLE users", "SELECT name FROM users", "DELETE/**/FROM orders", "SELECT 'DROP TABLE x'"]


def _kernel(path, **kw) -> GovernanceKernel:
    return GovernanceKernel(
        [SQLPolicy(deny=["DROP", "DELETE"]), CostControlPolicy(max_cost_usd=100)], recorder=path, **kw
    )


def _write(path, queries=QUERIES, context=None) -> GovernanceKernel:
    kernel = _kernel(path)
    with governance_context(context or ActionContext(agent_id="agent-1")):
        for q in queries:
            kernel.check("database_query", {"query": q})
    kernel.close()
    return kernel


def run(coro):
    return asyncio.run(coro)


# ---------------------------------------------------------------------------------- spans
def test_each_record_becomes_one_real_span_with_agent_os_attributes(tmp_path):
    path = tmp_path / "audit.db"
    _write(path)
    spans = FlightRecorderAdapter(path).get_spans()
    assert len(spans) == len(QUERIES) and all(isinstance(s, Span) for s in spans)
    by_kind = {}
    for span in spans:
        by_kind.setdefault(span.attributes["agent_os.entry_type"], []).append(span)
    assert len(by_kind["policy_check"]) == 2 and len(by_kind["tool_call"]) == 3
    blocked = by_kind["policy_check"][0]
    attrs = blocked.attributes
    assert blocked.name == "agent_os.policy_check: blocked by SQLPolicy (critical)"
    assert attrs["agent_os.policy_name"] == "SQLPolicy" and attrs["agent_os.policy_result"] == "blocked"
    assert attrs["agent_os.policy_violated"] is True and attrs["agent_os.blocked"] is True
    assert attrs["agent_os.severity"] == "critical" and attrs["agent_os.total_penalty"] == -100.0
    assert attrs["agent_os.agent_id"] == "agent-1" and attrs["agent_os.tool_name"] == "database_query"
    assert json.loads(attrs["agent_os.tool_args"]) == {"query": "DROP TABLE users"}
    assert attrs["agentos.kind"] == "audit" and is_audit_span(blocked)
    assert blocked.status.status_code == "ERROR"
    assert blocked.trace_id == "agentos-agent-1" and len(blocked.span_id) == 16
    clean = by_kind["tool_call"][0].attributes
    assert clean["agent_os.policy_violated"] is False and clean["agent_os.policy_result"] == "allowed"


def test_reference_names_and_entry_filters(tmp_path):
    path = tmp_path / "audit.db"
    _write(path)
    only_checks = create_emitter(path, include_tool_calls=False, readable_names=False, trace_id_prefix="run-7")
    spans = only_checks.get_spans()
    assert [s.name for s in spans] == ["agent_os.policy_check"] * 2
    assert {s.trace_id for s in spans} == {"run-7-agent-1"}
    assert FlightRecorderEmitter is FlightRecorderAdapter
    assert len(FlightRecorderAdapter(path, include_policy_checks=False).get_spans()) == 3


def test_signals_and_long_fields_are_truncated(tmp_path):
    path = tmp_path / "audit.db"
    kernel = GovernanceKernel([SQLPolicy(deny=["DROP"])], recorder=path, signals={"critical": "SIGSTOP"})
    kernel.check("database_query", {"query": "DROP TABLE t -- " + "x" * 5000})
    allowed = kernel.check("database_query", {"query": "SELECT 1"})
    kernel.record_outcome(allowed, result="r" * 3000)
    kernel.close()
    blocked, ok = FlightRecorderAdapter(path).get_spans()
    assert (
        blocked.attributes["agent_os.signal_type"] == "SIGSTOP"
        and blocked.attributes["agent_os.signal_target"] == "agent"
    )
    assert (
        len(blocked.attributes["agent_os.tool_args"]) == 1000
        and blocked.attributes["agent_os.tool_args_truncated"] is True
    )
    assert (
        len(ok.attributes["agent_os.tool_result"]) == 1000 and ok.attributes["agent_os.tool_result_truncated"] is True
    )
    no_signals = FlightRecorderAdapter(path, include_signals=False).get_spans()[0]
    assert "agent_os.signal_type" not in no_signals.attributes


def test_raw_agent_os_records_without_envelope(tmp_path):
    path = tmp_path / "raw.db"
    recorder = FlightRecorder(db_path=str(path))
    t = recorder.start_trace(agent_id="a", tool_name="file_write", tool_args={"path": "/etc/passwd"})
    recorder.log_violation(t, "path not allowed")
    t = recorder.start_trace(agent_id="kernel", tool_name="kernel_panic", tool_args={"reason": "x"})
    recorder.log_error(t, "KERNEL PANIC: x")
    recorder.close()
    check, signal = FlightRecorderAdapter(path).get_spans()
    assert check.name == "agent_os.policy_check: blocked by Agent OS"
    assert check.attributes["agent_os.violation_reason"] == "path not allowed"
    assert (
        signal.attributes["agent_os.entry_type"] == "signal" and signal.attributes["agent_os.signal_type"] == "SIGKILL"
    )
    assert FlightRecorderAdapter(path).get_violation_summary()["policies_violated"] == {"unknown": 1}


# ---------------------------------------------------------------------------------- incremental
def test_get_new_spans_exports_each_record_once(tmp_path):
    path = tmp_path / "audit.db"
    kernel = _kernel(path)
    adapter = FlightRecorderAdapter(kernel.recorder)  # the open recorder: flushed before each read
    kernel.check("database_query", {"query": "SELECT 1"})
    kernel.check("database_query", {"query": "DROP TABLE t"})
    first = adapter.get_new_spans()
    assert len(first) == 2 and adapter.get_new_spans() == []
    kernel.check("database_query", {"query": "SELECT 2"})
    second = adapter.get_new_spans()
    assert [s.attributes["agent_os.record_id"] for s in second] == [3]
    kernel.close()


def test_nothing_lost_while_the_recorder_batches(tmp_path):
    """A path-based adapter sees only what the writer flushed; pending rows wait; nothing is
    lost or duplicated once the writer flushes."""
    path = tmp_path / "audit.db"
    recorder = open_flight_recorder(path, batch_size=7, flush_interval_seconds=3600)
    kernel = _kernel(recorder)
    adapter = FlightRecorderAdapter(path)
    seen = []
    for i in range(40):
        kernel.check("database_query", {"query": "DROP TABLE t" if i % 4 == 0 else f"SELECT {i}"})
        seen += adapter.get_new_spans()
    kernel.audit.flush()  # nothing of the trail is pending before we write to its recorder
    # A row flushed by start_trace before its outcome is 'pending' on disk: not exported yet.
    trace = recorder.start_trace(agent_id="a", tool_name="t", tool_args={"x": 1})
    recorder.flush()
    seen += adapter.get_new_spans()
    assert adapter.get_violation_summary()["pending_entries"] == 1
    recorder.log_success(trace, result="done")
    kernel.close()
    seen += adapter.get_new_spans()
    ids = [s.attributes["agent_os.record_id"] for s in seen]
    assert sorted(ids) == list(range(1, 42)) and len(ids) == len(set(ids))
    assert seen[-1].attributes["agent_os.tool_result"] == "done"


def test_stream_yields_new_records_and_stops_without_busy_looping(tmp_path):
    path = tmp_path / "audit.db"
    kernel = _kernel(path)
    adapter = FlightRecorderAdapter(kernel.recorder)

    async def scenario():
        got = []
        stop = asyncio.Event()

        async def consume():
            async for span in adapter.stream(poll_interval=0.05, stop_event=stop):
                got.append(span.attributes["agent_os.record_id"])
                if len(got) == 2:
                    kernel.check("database_query", {"query": "SELECT 3"})
                    stop.set()  # the record just written is still drained

        kernel.check("database_query", {"query": "SELECT 1"})
        kernel.check("database_query", {"query": "DROP TABLE t"})
        await asyncio.wait_for(consume(), timeout=10)
        return got

    assert run(scenario()) == [1, 2, 3]

    async def stopped_by_method():
        task = asyncio.ensure_future(_collect(adapter.stream(poll_interval=60)))
        await asyncio.sleep(0)  # let the stream start and block on its stop event
        adapter.stop()
        return await asyncio.wait_for(task, timeout=5)  # returns long before the 60 s poll

    assert run(stopped_by_method()) == []
    kernel.close()


async def _collect(agen):
    return [span async for span in agen]


# ---------------------------------------------------------------------------------- store
def test_emit_to_store_places_spans_in_their_rollout_idempotently(tmp_path):
    path = tmp_path / "audit.db"

    async def scenario():
        store = InMemoryLightningStore()
        attempted = await store.start_rollout("task")
        rollout_id, attempt_id = attempted.rollout_id, attempted.attempt.attempt_id
        kernel = _kernel(path)
        with governance_context(ActionContext(agent_id="w", rollout_id=rollout_id, attempt_id=attempt_id)):
            decisions = [kernel.check("database_query", {"query": q}) for q in QUERIES]
        # what the runner writes: check + violation annotation spans
        await add_spans(store, rollout_id, attempt_id, [f for d in decisions for f in decision_core_fields(d)])
        kernel.check("database_query", {"query": "DROP TABLE outside"})  # no rollout
        kernel.close()
        before = await governance_stats(store, [rollout_id])
        adapter = FlightRecorderAdapter(path)
        added = await adapter.emit_to_store(store)
        again = await adapter.emit_to_store(store)
        other_process = await FlightRecorderAdapter(path).emit_to_store(store)  # fresh cursor: store-side dedupe
        after = await governance_stats(store, [rollout_id])
        spans = await store.query_spans(rollout_id, attempt_id)
        rollouts = await store.query_rollouts()
        return added, again, other_process, before, after, spans, rollouts

    added, again, other_process, before, after, spans, rollouts = run(scenario())
    assert (added, again, other_process) == (6, 0, 0)
    assert before["total_violations"] == after["total_violations"] == 2  # audit spans are not counted again
    audit = [s for s in spans if is_audit_span(s)]
    assert len(audit) == 5 and sum(s.attributes["agent_os.blocked"] for s in audit) == 2
    assert max(s.sequence_id for s in spans) == len(spans)  # store-issued sequence ids, after the runner's
    audit_rollouts = [r for r in rollouts if (r.metadata or {}).get(AUDIT_ROLLOUT_METADATA_KEY) == "agentos"]
    assert len(audit_rollouts) == 1 and audit_rollouts[0].status == "succeeded"


def test_records_without_a_store_rollout_land_in_one_audit_rollout(tmp_path):
    path = tmp_path / "audit.db"
    _write(path, context=ActionContext(agent_id="a", rollout_id="ro-not-in-this-store", attempt_id="at-1"))

    async def scenario():
        store = InMemoryLightningStore()
        await FlightRecorderAdapter(path).emit_to_store(store)
        _write(tmp_path / "second.db")
        await FlightRecorderAdapter(tmp_path / "second.db").emit_to_store(store)  # finds the same audit rollout
        rollouts = await store.query_rollouts()
        spans = await store.query_spans(rollouts[0].rollout_id)
        return rollouts, spans

    rollouts, spans = run(scenario())
    assert len(rollouts) == 1 and rollouts[0].metadata == {AUDIT_ROLLOUT_METADATA_KEY: "agentos"}
    assert len(spans) == 2 * len(QUERIES)
    assert {s.attributes.get("agent_os.rollout_id") for s in spans} == {"ro-not-in-this-store", None}


def test_placement_audit_leaves_training_rollouts_untouched(tmp_path):
    path = tmp_path / "audit.db"

    async def scenario():
        store = InMemoryLightningStore()
        attempted = await store.start_rollout("task")
        _write(
            path,
            context=ActionContext(
                agent_id="a", rollout_id=attempted.rollout_id, attempt_id=attempted.attempt.attempt_id
            ),
        )
        await FlightRecorderAdapter(path, placement="audit").emit_to_store(store)
        return await store.query_spans(attempted.rollout_id)

    assert list(run(scenario())) == []


def test_emit_requires_a_store():
    with pytest.raises(TypeError, match="LightningStore"):
        run(FlightRecorderAdapter.__new__(FlightRecorderAdapter).emit_to_store({}))  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------- files
@pytest.mark.parametrize("name", ["trail.json", "trail.jsonl"])
def test_export_to_file_and_verify(tmp_path, name):
    path = tmp_path / "audit.db"
    _write(path)
    adapter = FlightRecorderAdapter(path)
    out = tmp_path / "exports" / name
    assert adapter.export_to_file(out) == len(QUERIES)
    text = out.read_text()
    if name.endswith(".json"):
        data = json.loads(text)
        assert isinstance(data, list) and len(data) == len(QUERIES)
    else:
        assert len(text.splitlines()) == len(QUERIES)
    entries = list(read_export(out))
    assert Span.model_validate({k: v for k, v in entries[1].items() if k != "agent_os_record"}).name.startswith(
        "agent_os.policy_check"
    )
    assert adapter.verify_integrity()["valid"] is True
    result = verify_export(out, against=path, expected_head=adapter.chain_head())
    assert result["valid"] is True and result["total_entries"] == len(QUERIES)
    assert [f.name for f in out.parent.iterdir()] == [name]  # no temp files left


def _edit_export(out: Path, index: int, edit) -> None:
    entries = json.loads(out.read_text())
    edit(entries[index])
    out.write_text(json.dumps(entries))


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda e: e["agent_os_record"].__setitem__("policy_verdict", "allowed"), "Content hash mismatch at entry 2"),
        (lambda e: e["agent_os_record"].__setitem__("agent_id", "someone-else"), "Content hash mismatch at entry 2"),
        (lambda e: e["attributes"].__setitem__("agent_os.severity", "low"), "span 'attributes' of record 2"),
        (lambda e: e.__setitem__("name", "agent_os.tool_call: database_query"), "span 'name' of record 2"),
    ],
)
def test_an_edited_export_is_detected(tmp_path, edit, message):
    path = tmp_path / "audit.db"
    _write(path)
    out = tmp_path / "trail.json"
    FlightRecorderAdapter(path).export_to_file(out)
    _edit_export(out, 1, edit)
    result = verify_export(out)
    assert result["valid"] is False and message in result["error"] and result["first_tampered_id"] == 2


def test_removed_records_are_detected(tmp_path):
    path = tmp_path / "audit.db"
    _write(path)
    adapter = FlightRecorderAdapter(path)
    out = tmp_path / "trail.json"
    adapter.export_to_file(out)
    entries = json.loads(out.read_text())
    out.write_text(json.dumps(entries[:2] + entries[3:]))
    assert "missing" in verify_export(out)["error"]
    out.write_text(json.dumps(entries[:-1]))
    assert verify_export(out)["valid"] is True  # a cut tail needs an anchor...
    assert verify_export(out, expected_head=adapter.chain_head())["valid"] is False  # ...such as the chain head
    assert verify_export(out, against=path)["valid"] is True  # the file's rows it holds are genuine


def test_an_edited_recorder_file_is_detected(tmp_path):
    path = tmp_path / "audit.db"
    _write(path)
    conn = sqlite3.connect(path)
    conn.execute("UPDATE audit_log SET policy_verdict = 'allowed' WHERE id = 2")
    conn.commit()
    conn.close()
    result = FlightRecorderAdapter(path).verify_integrity()
    assert result["valid"] is False and result["first_tampered_id"] == 2


# ---------------------------------------------------------------------------------- bad input
def test_missing_directory_and_corrupt_recorder_files(tmp_path):
    with pytest.raises(RecorderFileError, match="does not exist"):
        FlightRecorderAdapter(tmp_path / "nope.db")
    assert not (tmp_path / "nope.db").exists()  # never created
    with pytest.raises(RecorderFileError, match="is a directory"):
        FlightRecorderAdapter(tmp_path)
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"this is not sqlite at all" * 100)
    with pytest.raises(RecorderFileError, match="not a readable FlightRecorder database"):
        FlightRecorderAdapter(junk)
    other = tmp_path / "other.db"
    sqlite3.connect(other).execute("CREATE TABLE t (x)").connection.close()
    with pytest.raises(RecorderFileError, match="no 'audit_log' table"):
        FlightRecorderAdapter(other)
    with pytest.raises(TypeError):
        FlightRecorderAdapter(42)  # type: ignore[arg-type]
    (tmp_path / "empty").mkdir()
    with pytest.raises(RecorderFileError, match="no FlightRecorder files"):
        adapters_for_directory(tmp_path / "empty")


def _corrupt_row(path: Path, sql: str) -> None:
    conn = sqlite3.connect(path)
    conn.execute(sql)
    conn.commit()
    conn.close()


@pytest.mark.parametrize(
    "sql, message",
    [
        ("UPDATE audit_log SET tool_args = '{not json' WHERE id = 3", "record id=3: field 'tool_args' is not JSON"),
        ("UPDATE audit_log SET policy_verdict = 'maybe' WHERE id = 3", "field 'policy_verdict' must be one of"),
        ("UPDATE audit_log SET timestamp = 'soon' WHERE id = 3", "not an ISO-8601 time"),
        (
            """UPDATE audit_log SET tool_args = json_set(tool_args, '$.agentos.colour', 'red') WHERE id = 3""",
            "unexpected field(s) ['colour'] in tool_args.agentos",
        ),
        (
            (
                """UPDATE audit_log SET tool_args = json_set(tool_args, '$.agentos.violations', """
                """json('[{"policy_name": "P"}]')) WHERE id = 3"""
            ),
            "is missing field(s)",
        ),
        ("ALTER TABLE audit_log ADD COLUMN tenant TEXT", "unexpected column(s) ['tenant']"),
    ],
)
def test_bad_records_fail_clearly_with_no_partial_output(tmp_path, sql, message):
    path = tmp_path / "audit.db"
    _write(path)
    _corrupt_row(path, sql)
    adapter = FlightRecorderAdapter(path)
    out = tmp_path / "trail.jsonl"
    if not sql.startswith("ALTER"):  # an edited row fails verification before it is read...
        with pytest.raises(AuditError, match="failed verification"):
            adapter.export_to_file(out)
    # ...and, forced past verification, fails as a record, clearly and with no partial output.
    with pytest.raises(RecordError, match=__import__("re").escape(message)):
        adapter.export_to_file(out, force=True)
    assert not out.exists() and not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    store = InMemoryLightningStore()
    with pytest.raises(RecordError):
        run(adapter.emit_to_store(store, force=True))
    assert list(run(store.query_rollouts())) == []  # nothing was added
    with pytest.raises(RecordError):
        adapter.get_new_spans()
    with pytest.raises(RecordError):
        adapter.get_new_spans()  # the cursor did not move past the bad batch


def test_non_strict_keeps_unexpected_fields(tmp_path):
    path = tmp_path / "audit.db"
    _write(path)
    _corrupt_row(path, "ALTER TABLE audit_log ADD COLUMN tenant TEXT")
    _corrupt_row(path, "UPDATE audit_log SET tenant = 'acme'")
    span = FlightRecorderAdapter(path, strict=False).get_spans()[0]
    assert json.loads(span.attributes["agent_os.extra.columns"]) == {"tenant": "acme"}


@pytest.mark.skipif(os.geteuid() == 0, reason="root can write to read-only directories")
def test_unwritable_export_path_nonroot(tmp_path):  # pragma: no cover - CI runs as root
    path = tmp_path / "audit.db"
    _write(path)
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(stat.S_IRUSR | stat.S_IXUSR)
    with pytest.raises(ExportError, match="cannot write export file"):
        FlightRecorderAdapter(path).export_to_file(locked / "trail.json")


def test_unwritable_export_paths(tmp_path):
    path = tmp_path / "audit.db"
    _write(path)
    adapter = FlightRecorderAdapter(path)
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    with pytest.raises(ExportError, match="cannot create the directory"):
        adapter.export_to_file(blocker / "sub" / "trail.json")
    with pytest.raises(ExportError, match="is a directory"):
        adapter.export_to_file(tmp_path)
    with pytest.raises(ExportError, match="FlightRecorder file itself"):
        adapter.export_to_file(path)
    with pytest.raises(ExportError, match="cannot write export file"):
        adapter.export_to_file("/proc/agentos-trail.json")
    existing = tmp_path / "keep.json"
    existing.write_text("previous export")
    _corrupt_row(path, "UPDATE audit_log SET tool_args = '{' WHERE id = 2")
    with pytest.raises(AuditError):  # it fails verification (and, forced, as a record)
        adapter.export_to_file(existing)
    with pytest.raises(RecordError):
        adapter.export_to_file(existing, force=True)
    assert existing.read_text() == "previous export"  # the old file is untouched


def test_violation_summary(tmp_path):
    path = tmp_path / "audit.db"
    _write(path)
    summary = FlightRecorderAdapter(path).get_violation_summary()
    assert summary["total_entries"] == 5 and summary["total_violations"] == 2 and summary["blocked_entries"] == 2
    assert summary["violation_rate"] == pytest.approx(0.4)
    assert summary["policies_violated"] == {"SQLPolicy": 2} and summary["violations_by_severity"] == {"critical": 2}
