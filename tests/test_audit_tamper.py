"""Every edit of the audit file is detected: by the one verifier the kernel, the adapter and the
export checks share.

A real kernel writes a real FlightRecorder file (sealed with a key); each tamper then edits a
copy of it with plain SQL, recomputing every hash Agent OS would check where the attack calls for
it (an attacker who can write the file can). With the key every edit is detected, by
``kernel``'s verifier (``verify_file``), by the adapter before an import (refused unless forced,
and then marked) and by ``verify_export(against=...)``. Without the key, the tests state what
is and is not detected: the limit the docs describe.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path
from typing import Callable, Dict

import pytest
from agent_os import FlightRecorder

from agentlightning.store.memory import InMemoryLightningStore

from agentlightning.contrib.adapter.agentos import AuditError, FlightRecorderAdapter, verify_export
from agentlightning.contrib.kernel.agentos import Action, GovernanceKernel, SQLPolicy, governance_context
from agentlightning.contrib.kernel.agentos.audit.seal import HEAD_TABLE, content_hash, entry_hash, verify_file

KEY = "s" * 64
BLOCKED_ID = 3  # the DROP below


def _write_trail(path: Path) -> None:
    kernel = GovernanceKernel([SQLPolicy(deny=["DROP", "DELETE"])], recorder=path)
    with governance_context(agent_id="agent-1", rollout_id="ro-1", attempt_id="at-1"):
        for query in ["SELECT 1", "SELECT 2", "DROP TABLE users", "SELECT 3", "DELETE FROM t", "SELECT 4"]:
            decision = kernel.check(Action.sql(query))
            if decision.allowed:
                kernel.record_outcome(decision, result=f"rows for {query}", execution_time_ms=1.5)
    assert kernel.verify_audit()["sealed"] is True
    kernel.close()


@pytest.fixture(scope="module")
def sealed_trail(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("sealed") / "audit.db"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("AGENTOS_AUDIT_KEY", KEY)
        _write_trail(path)
    return path


def _rows(conn: sqlite3.Connection) -> list:
    cursor = conn.execute("SELECT * FROM audit_log ORDER BY id")
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, values)) for values in cursor.fetchall()]


def _rehash_from(conn: sqlite3.Connection, first_id: int) -> None:
    """Recompute every content hash, entry hash and link from ``first_id`` on, as an attacker would."""
    previous = None
    for row in _rows(conn):
        if row["id"] >= first_id:
            row["previous_hash"] = previous["entry_hash"] if previous else None
            row["entry_hash"] = entry_hash(row)
            row["content_hash"] = content_hash(row) if row["content_hash"] is not None else None
            conn.execute(
                "UPDATE audit_log SET previous_hash = ?, entry_hash = ?, content_hash = ? WHERE id = ?",
                (row["previous_hash"], row["entry_hash"], row["content_hash"], row["id"]),
            )
        previous = row


def _unblock(tool_args: str) -> str:
    decoded = json.loads(tool_args)
    decoded["agentos"]["verdict"] = "allowed"
    decoded["agentos"]["violations"] = []
    return json.dumps(decoded)


def blocked_turned_allowed_content_rehashed(conn):
    conn.execute(f"UPDATE audit_log SET policy_verdict = 'allowed', violation_reason = NULL WHERE id = {BLOCKED_ID}")
    _rehash_from(conn, BLOCKED_ID + 1)  # only its content hash changes; later rows untouched...
    row = _rows(conn)[BLOCKED_ID - 1]
    conn.execute("UPDATE audit_log SET content_hash = ? WHERE id = ?", (content_hash(row), BLOCKED_ID))


def blocked_turned_allowed_content_hash_null(conn):
    conn.execute(
        f"UPDATE audit_log SET policy_verdict = 'allowed', violation_reason = NULL, content_hash = NULL "
        f"WHERE id = {BLOCKED_ID}"
    )


def blocked_turned_allowed_everywhere_chain_recomputed(conn):
    (tool_args,) = conn.execute(f"SELECT tool_args FROM audit_log WHERE id = {BLOCKED_ID}").fetchone()
    conn.execute(
        "UPDATE audit_log SET policy_verdict = 'allowed', violation_reason = NULL, tool_args = ? WHERE id = ?",
        (_unblock(tool_args), BLOCKED_ID),
    )
    _rehash_from(conn, BLOCKED_ID)


def recorded_sql_edited_and_rehashed(conn):
    (tool_args,) = conn.execute("SELECT tool_args FROM audit_log WHERE id = 2").fetchone()
    conn.execute("UPDATE audit_log SET tool_args = ? WHERE id = 2", (tool_args.replace("SELECT 2", "SELECT 20"),))
    _rehash_from(conn, 2)


def blocked_row_deleted_and_next_relinked(conn):
    conn.execute(f"DELETE FROM audit_log WHERE id = {BLOCKED_ID}")
    conn.execute(f"UPDATE audit_log SET id = id - 1 WHERE id > {BLOCKED_ID}")  # no gap left either
    _rehash_from(conn, BLOCKED_ID)


def first_row_deleted(conn):
    conn.execute("DELETE FROM audit_log WHERE id = 1")
    conn.execute("UPDATE audit_log SET id = id - 1")
    _rehash_from(conn, 1)


def end_truncated(conn):
    conn.execute("DELETE FROM audit_log WHERE id > 4")


def verdict_edited_without_rehash(conn):  # what the existing tests covered
    conn.execute(f"UPDATE audit_log SET policy_verdict = 'allowed' WHERE id = {BLOCKED_ID}")


def result_edited_and_rehashed(conn):
    conn.execute("UPDATE audit_log SET result = 'nothing' WHERE id = 1")
    _rehash_from(conn, 1)


def seal_removed(conn):
    conn.execute(f"UPDATE audit_log SET metadata = NULL WHERE id = {BLOCKED_ID}")


def signed_head_removed(conn):
    conn.execute(f"DROP TABLE {HEAD_TABLE}")


def row_added_at_the_end(conn):
    last = _rows(conn)[-1]
    fake = dict(last, id=last["id"] + 1, trace_id="forged", previous_hash=last["entry_hash"], metadata=None)
    fake["entry_hash"] = entry_hash(fake)
    fake["content_hash"] = content_hash(fake)
    names = ", ".join(fake)
    conn.execute(f"INSERT INTO audit_log ({names}) VALUES ({', '.join('?' * len(fake))})", tuple(fake.values()))


TAMPERS: Dict[str, Callable[[sqlite3.Connection], None]] = {
    f.__name__: f
    for f in (
        blocked_turned_allowed_content_rehashed,
        blocked_turned_allowed_content_hash_null,
        blocked_turned_allowed_everywhere_chain_recomputed,
        recorded_sql_edited_and_rehashed,
        blocked_row_deleted_and_next_relinked,
        first_row_deleted,
        end_truncated,
        verdict_edited_without_rehash,
        result_edited_and_rehashed,
        seal_removed,
        signed_head_removed,
        row_added_at_the_end,
    )
}
#: Detected even without the key: they leave a recomputed hash, a link, the first row or the
#: envelope's verdict wrong. The others recompute everything Agent OS hashes: only the key (or
#: a chain head kept elsewhere) shows them.
DETECTED_WITHOUT_KEY = {
    "blocked_turned_allowed_content_rehashed",
    "blocked_turned_allowed_content_hash_null",
    "verdict_edited_without_rehash",
}


def _copy(source: Path, target: Path) -> None:
    """A consistent copy of a SQLite file, what its WAL holds included (a plain file copy is not)."""
    origin, copy = sqlite3.connect(source), sqlite3.connect(target)
    origin.backup(copy)
    origin.close()
    copy.close()


def _tampered(sealed_trail: Path, tmp_path: Path, name: str) -> Path:
    path = tmp_path / "tampered.db"
    _copy(sealed_trail, path)
    conn = sqlite3.connect(path)
    TAMPERS[name](conn)
    conn.commit()
    conn.close()
    return path


@pytest.mark.parametrize("name", sorted(TAMPERS))
def test_every_edit_is_detected_with_the_key(sealed_trail, tmp_path, name):
    path = _tampered(sealed_trail, tmp_path, name)
    result = verify_file(path, key=KEY)
    assert result["valid"] is False and result["error"], result
    # The adapter refuses to import it...
    store = InMemoryLightningStore()
    with pytest.raises(AuditError, match="failed verification"):
        asyncio.run(FlightRecorderAdapter(path, key=KEY).emit_to_store(store))
    with pytest.raises(AuditError, match="failed verification"):
        FlightRecorderAdapter(path, key=KEY).export_to_file(tmp_path / "out.json")
    assert list(asyncio.run(store.query_rollouts())) == []
    # ...unless forced, and then every span says so.
    added = asyncio.run(FlightRecorderAdapter(path, key=KEY).emit_to_store(store, force=True))
    spans = [s for r in asyncio.run(store.query_rollouts()) for s in asyncio.run(store.query_spans(r.rollout_id))]
    assert added == len(spans) > 0 and all(s.attributes["agent_os.unverified"] == result["error"] for s in spans)


@pytest.mark.parametrize("name", sorted(TAMPERS))
def test_without_the_key_what_is_detected_is_stated(sealed_trail, tmp_path, name):
    path = _tampered(sealed_trail, tmp_path, name)
    result = verify_file(path, key=None)
    assert result["assurance"] == "unkeyed"
    assert result["valid"] is (name not in DETECTED_WITHOUT_KEY), result
    if result["valid"]:
        assert "only detects accidental damage" in result["warning"] and result["sealed"] is False
    # Agent OS's own check misses every one of the edits the old verifier missed.
    if name.startswith("blocked_turned_allowed_content"):
        recorder = FlightRecorder(db_path=str(path))
        assert recorder.verify_integrity()["valid"] is True
        recorder.close()


@pytest.mark.parametrize("name", sorted(TAMPERS))
def test_an_export_checked_against_the_edited_file_fails(sealed_trail, tmp_path, monkeypatch, name):
    monkeypatch.setenv("AGENTOS_AUDIT_KEY", KEY)
    adapter = FlightRecorderAdapter(sealed_trail)
    out = tmp_path / "trail.json"
    adapter.export_to_file(out)
    head = adapter.chain_head()
    assert verify_export(out, expected_head=head, against=sealed_trail)["valid"] is True
    assert verify_export(out, expected_head=head, against=_tampered(sealed_trail, tmp_path, name))["valid"] is False


def test_an_edited_export_is_detected_with_the_key_or_an_anchor(sealed_trail, tmp_path, monkeypatch):
    """The export itself edited: a blocked record turned allowed, every hash and link after it
    recomputed and every span rebuilt from the edited records (all public functions)."""
    from agentlightning.contrib.adapter.agentos.spans import record_to_span
    from agentlightning.contrib.kernel.agentos.audit.reader import parse_record

    monkeypatch.setenv("AGENTOS_AUDIT_KEY", KEY)
    adapter = FlightRecorderAdapter(sealed_trail)
    out = tmp_path / "trail.json"
    adapter.export_to_file(out)
    head = adapter.chain_head()
    entries = json.loads(out.read_text())
    previous = None
    for entry in entries:
        row = entry["agent_os_record"]
        if row["id"] == BLOCKED_ID:
            row.update(policy_verdict="allowed", violation_reason=None, tool_args=_unblock(row["tool_args"]))
        if row["id"] >= BLOCKED_ID:
            row["previous_hash"] = previous["entry_hash"]
            row["entry_hash"] = entry_hash(row)
            row["content_hash"] = content_hash(row)
        rebuilt = record_to_span(
            parse_record(row),
            rollout_id=entry["rollout_id"],
            attempt_id=entry["attempt_id"],
            sequence_id=entry["sequence_id"],
        ).model_dump(mode="json")
        entry.update({k: rebuilt[k] for k in ("name", "span_id", "trace_id", "attributes", "status")})
        entry["attributes"]["agent_os.recorder"] = str(sealed_trail)
        previous = row
    out.write_text(json.dumps(entries))
    assert "seal does not match" in verify_export(out)["error"]  # the key (from the environment)
    monkeypatch.delenv("AGENTOS_AUDIT_KEY")
    assert verify_export(out)["valid"] is True  # no key, no anchor: the stated limit
    assert verify_export(out, expected_head=head)["valid"] is False  # an anchor kept elsewhere
    assert verify_export(out, against=sealed_trail)["valid"] is False  # or the recorder file


def test_the_key_comes_from_the_environment_or_a_private_file_with_clear_errors(tmp_path):
    from agentlightning.contrib.kernel.agentos.audit.seal import AuditKeyError, load_audit_key

    key_file = tmp_path / "audit.key"
    key_file.write_text(KEY + "\n")
    key_file.chmod(0o600)
    from_file = load_audit_key(environ={"AGENTOS_AUDIT_KEY_FILE": str(key_file)})
    assert from_file.key_id == load_audit_key(environ={"AGENTOS_AUDIT_KEY": KEY}).key_id
    assert KEY not in repr(from_file)
    key_file.chmod(0o644)
    with pytest.raises(AuditKeyError, match="readable by others.*chmod 600"):
        load_audit_key(environ={"AGENTOS_AUDIT_KEY_FILE": str(key_file)})
    with pytest.raises(AuditKeyError, match="set only one"):
        load_audit_key(environ={"AGENTOS_AUDIT_KEY_FILE": str(key_file), "AGENTOS_AUDIT_KEY": KEY})
    with pytest.raises(AuditKeyError, match="at least 32"):
        load_audit_key(environ={"AGENTOS_AUDIT_KEY": "short"})
    with pytest.raises(AuditKeyError, match="cannot read the audit key file"):
        load_audit_key(environ={"AGENTOS_AUDIT_KEY_FILE": str(tmp_path / "missing.key")})


def test_a_sealed_file_is_continued_only_with_its_key(sealed_trail, tmp_path, monkeypatch):
    from agentlightning.contrib.kernel.agentos.audit import AuditFileChangedError
    from agentlightning.contrib.kernel.agentos.audit.seal import AuditKeyError

    path = tmp_path / "continued.db"
    _copy(sealed_trail, path)
    monkeypatch.delenv("AGENTOS_AUDIT_KEY", raising=False)
    with pytest.raises(AuditKeyError, match="is sealed"):
        GovernanceKernel([SQLPolicy()], recorder=path)
    monkeypatch.setenv("AGENTOS_AUDIT_KEY", "o" * 64)
    with pytest.raises(AuditFileChangedError, match="another key"):
        GovernanceKernel([SQLPolicy()], recorder=path)
    monkeypatch.setenv("AGENTOS_AUDIT_KEY", KEY)
    kernel = GovernanceKernel([SQLPolicy()], recorder=path)
    assert kernel.check(Action.sql("SELECT 5")).allowed
    result = kernel.verify_audit()
    assert result["valid"] and result["sealed"] and result["total_entries"] == 7
    kernel.close()
    cut = tmp_path / "cut.db"
    _copy(path, cut)
    conn = sqlite3.connect(cut)
    conn.execute("DELETE FROM audit_log WHERE id = 7")
    conn.commit()
    conn.close()
    with pytest.raises(AuditFileChangedError, match="truncated or edited"):
        GovernanceKernel([SQLPolicy()], recorder=cut)
