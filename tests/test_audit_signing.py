"""Per-host signing: each host signs its audit file's chain head with its own Ed25519 key, and the
one verifier checks it against a keyring of public keys, so no host can pass off records as
another host's.

Real kernels write real FlightRecorder files, each as one host (``AGENTOS_HOST_NAME``) with that
host's key file (``AGENTOS_AUDIT_SIGNING_KEY_FILE``); keys and the keyring are made with the
module's own ``keygen`` command. Each forgery edits a copy with plain SQL and signs with whatever
key the forger holds (their own host's, an unknown one, a retired one), recomputing every hash
Agent OS uses where the attack calls for it.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import sqlite3
from pathlib import Path
from typing import Dict

import pytest

from agentlightning.contrib.kernel.agentos import Action, GovernanceKernel, SQLPolicy, governance_context

from .conftest import host_signing_key

QUERIES = ["SELECT 1", "DROP TABLE users", "SELECT 2", "SELECT 3"]
BLOCKED_ID = 2  # the DROP


def _keygen(tmp_path: Path, host: str, name: str) -> Dict[str, str]:
    """A host's private key file and keyring line, made with the module's own command."""
    path = tmp_path / f"{name}.key"
    line = host_signing_key(path, host)
    assert line.split()[0] == host and oct(path.stat().st_mode & 0o777) == "0o600"
    return {"path": str(path), "line": line, "key_id": line.split()[1]}


@pytest.fixture(scope="module")
def keys(tmp_path_factory) -> Dict[str, Dict[str, str]]:
    tmp_path = tmp_path_factory.mktemp("keys")
    made = {
        "a": _keygen(tmp_path, "runner-a", "a"),
        "a2": _keygen(tmp_path, "runner-a", "a2"),
        "b": _keygen(tmp_path, "runner-b", "b"),
        "unknown": _keygen(tmp_path, "runner-a", "unknown"),
    }
    ring = tmp_path / "keyring"
    ring.write_text(f"# the hosts allowed to sign\n{made['a']['line']}\n{made['b']['line']}\n")
    made["keyring"] = {"path": str(ring)}
    return made


def _write_trail(path: Path, monkeypatch, key_file: str, host: str, queries=QUERIES) -> GovernanceKernel:
    monkeypatch.setenv("AGENTOS_HOST_NAME", host)
    monkeypatch.setenv("AGENTOS_AUDIT_SIGNING_KEY_FILE", key_file)
    kernel = GovernanceKernel([SQLPolicy(deny=["DROP"])], recorder=path)
    with governance_context(agent_id=f"Worker-0@{host}-123", rollout_id="ro-1", attempt_id="at-1"):
        for query in queries:
            decision = kernel.check(Action.sql(query))
            if decision.allowed:
                kernel.record_outcome(decision, result=f"rows for {query}", execution_time_ms=1.0)
    return kernel


@pytest.fixture()
def trail_a(tmp_path, monkeypatch, keys) -> Path:
    """Host A's file, named as a runner names it."""
    path = tmp_path / "worker-0@runner-a-123.db"
    _write_trail(path, monkeypatch, keys["a"]["path"], "runner-a").close()
    for name in ("AGENTOS_HOST_NAME", "AGENTOS_AUDIT_SIGNING_KEY_FILE"):
        monkeypatch.delenv(name)
    return path


def _verify(path: Path, keys, **options):
    from agentlightning.contrib.kernel.agentos.audit.seal import verify_file

    return verify_file(path, keyring=keys["keyring"]["path"], **options)


def _load(key_file: str, host: str):
    from agentlightning.contrib.kernel.agentos.audit.signing import load_signing_key

    return load_signing_key(key_file, host=host)


def _resign(path: Path, key, **changes) -> None:
    """Rewrite the file's host head as someone holding ``key`` would, matching the file's end."""
    from agentlightning.contrib.kernel.agentos.audit.signing import HOST_HEAD_COLUMNS, HOST_HEAD_UPSERT, host_head

    with _edit(path) as conn:
        last_id, last_hash = conn.execute("SELECT id, entry_hash FROM audit_log ORDER BY id DESC LIMIT 1").fetchone()
        records = conn.execute("SELECT COUNT(*) FROM audit_log").fetchone()[0]
        head = host_head(key, records=records, last_id=last_id, last_entry_hash=last_hash, signed_from=1)
        if changes:
            head = dict(head, **changes)
        conn.execute(HOST_HEAD_UPSERT, tuple(head[name] for name in HOST_HEAD_COLUMNS))


@contextlib.contextmanager
def _edit(path: Path):
    """A plain SQL connection to ``path``, committed and closed at the end (nothing left in a WAL)."""
    conn = sqlite3.connect(path)
    try:
        with conn:
            yield conn
    finally:
        conn.close()


def _rows(conn):
    cursor = conn.execute("SELECT * FROM audit_log ORDER BY id")
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, values)) for values in cursor.fetchall()]


def _rehash_from(conn, first_id: int) -> None:
    from agentlightning.contrib.kernel.agentos.audit.seal import content_hash, entry_hash

    previous = None
    for row in _rows(conn):
        if row["id"] >= first_id:
            row["previous_hash"] = previous["entry_hash"] if previous else None
            row["entry_hash"] = entry_hash(row)
            row["content_hash"] = content_hash(row)
            conn.execute(
                "UPDATE audit_log SET previous_hash = ?, entry_hash = ?, content_hash = ? WHERE id = ?",
                (row["previous_hash"], row["entry_hash"], row["content_hash"], row["id"]),
            )
        previous = row


def _unblock(conn) -> None:
    """Host B's forgery of host A's record: the blocked DROP becomes an allowed one."""
    (tool_args,) = conn.execute("SELECT tool_args FROM audit_log WHERE id = ?", (BLOCKED_ID,)).fetchone()
    decoded = json.loads(tool_args)
    decoded["agentos"].update(verdict="allowed", violations=[])
    conn.execute(
        "UPDATE audit_log SET tool_args = ?, policy_verdict = 'allowed', violation_reason = NULL WHERE id = ?",
        (json.dumps(decoded), BLOCKED_ID),
    )
    _rehash_from(conn, BLOCKED_ID)


def test_a_hosts_trail_verifies_with_the_keyring(trail_a, keys, monkeypatch):
    result = _verify(trail_a, keys)
    assert result["valid"] is True, result
    assert result["signed"] is True and result["total_entries"] == len(QUERIES)
    assert result["signed_by"] == {"host": "runner-a", "key_id": keys["a"]["key_id"], "signed_from": 1, "checked": True}
    assert _verify(trail_a, keys, host="runner-a")["valid"] is True
    # no keyring: the head is reported as it is, not checked, and the result says so
    from agentlightning.contrib.kernel.agentos.audit.seal import verify_file

    unchecked = verify_file(trail_a)
    assert unchecked["valid"] is True and unchecked["signed"] is False
    assert unchecked["signed_by"]["checked"] is False and "accidental damage" in unchecked["warning"]
    # the keyring from the environment, as the kernel's own verify_audit and the adapter use it
    monkeypatch.setenv("AGENTOS_AUDIT_KEYRING", keys["keyring"]["path"])
    assert verify_file(trail_a)["signed"] is True


def test_host_b_cannot_produce_a_head_accepted_for_host_a(trail_a, keys, tmp_path):
    key_b = _load(keys["b"]["path"], "runner-b")
    forged = tmp_path / "forged" / trail_a.name
    forged.parent.mkdir()
    shutil.copy(trail_a, forged)
    with _edit(forged) as conn:
        _unblock(conn)
    # B signs the edited file naming host A: its key is registered to B
    _resign(forged, key_b, host="runner-a")
    result = _verify(forged, keys)
    assert result["valid"] is False
    assert "registered to host 'runner-b'" in result["error"], result["error"]
    # B signs in its own name: the file is not host A's any more
    _resign(forged, key_b)
    assert _verify(forged, keys)["signed_by"]["host"] == "runner-b"
    refused = _verify(forged, keys, host="runner-a")
    assert refused["valid"] is False and "not by host 'runner-a'" in refused["error"]
    # the command takes the host from a runner's file name, so it refuses the file without --host
    from agentlightning.contrib.kernel.agentos.audit.signing import main

    assert main(["verify", "--keyring", keys["keyring"]["path"], str(forged)]) == 1
    assert main(["verify", "--keyring", keys["keyring"]["path"], str(trail_a)]) == 0
    # B cannot reuse A's signature either: the edit changed the chain's end that A signed
    unsigned_edit = tmp_path / "unsigned-edit.db"
    shutil.copy(trail_a, unsigned_edit)
    with _edit(unsigned_edit) as conn:
        _unblock(conn)
    result = _verify(unsigned_edit, keys)
    assert result["valid"] is False and "names record" in result["error"]


def test_a_head_signed_by_a_key_not_in_the_keyring_is_rejected(trail_a, keys):
    _resign(trail_a, _load(keys["unknown"]["path"], "runner-a"))
    result = _verify(trail_a, keys)
    assert result["valid"] is False
    assert f"key {keys['unknown']['key_id']}" in result["error"] and "not in the keyring" in result["error"]


def test_an_unsigned_file_or_a_removed_head_fails_with_a_keyring(trail_a, keys, tmp_path, monkeypatch):
    with _edit(trail_a) as conn:
        conn.execute("DROP TABLE agentos_audit_host_head")
    result = _verify(trail_a, keys)
    assert result["valid"] is False and "no host-signed head" in result["error"]
    assert "AGENTOS_AUDIT_SIGNING_KEY_FILE" in result["error"]


def test_an_edited_or_truncated_trail_is_detected(trail_a, keys, tmp_path):
    cases = {}
    for name in ("edited_head", "rehashed", "truncated", "truncated_head_rewritten", "signature"):
        cases[name] = tmp_path / f"{name}.db"
        shutil.copy(trail_a, cases[name])
    with _edit(cases["edited_head"]) as conn:  # someone without the key moves the head
        conn.execute("UPDATE agentos_audit_host_head SET records = records + 1")
    with _edit(cases["rehashed"]) as conn:  # every Agent OS hash recomputed
        _unblock(conn)
    with _edit(cases["truncated"]) as conn:
        conn.execute("DELETE FROM audit_log WHERE id > 2")
    with _edit(cases["truncated_head_rewritten"]) as conn:
        conn.execute("DELETE FROM audit_log WHERE id > 2")
        last_hash = conn.execute("SELECT entry_hash FROM audit_log WHERE id = 2").fetchone()[0]
        conn.execute("UPDATE agentos_audit_host_head SET records = 2, last_id = 2, last_entry_hash = ?", (last_hash,))
    with _edit(cases["signature"]) as conn:
        conn.execute("UPDATE agentos_audit_host_head SET signature = 'AAAA'")
    errors = {name: _verify(path, keys).get("error") for name, path in cases.items()}
    assert "does not match its signature" in errors["edited_head"]
    assert "names record 4 as the last" in errors["rehashed"]
    assert "names record 4 as the last, but the file ends at record 2" in errors["truncated"]
    assert "does not match its signature" in errors["truncated_head_rewritten"]
    assert "does not match its signature" in errors["signature"]


def test_the_stated_limit_outcome_columns_need_the_audit_key(tmp_path, keys, monkeypatch):
    """A result text of an allowed action, rewritten with its content hash recomputed, is not
    covered by the host signature alone (docs/audit.md says so); the audit key's seals cover it."""
    from agentlightning.contrib.kernel.agentos.audit.seal import content_hash

    def edit_result(path: Path) -> None:
        with _edit(path) as conn:
            row = _rows(conn)[0]
            row["result"] = "rows for something else"
            conn.execute(
                "UPDATE audit_log SET result = ?, content_hash = ? WHERE id = 1", (row["result"], content_hash(row))
            )

    signed_only = tmp_path / "signed.db"
    _write_trail(signed_only, monkeypatch, keys["a"]["path"], "runner-a").close()
    edit_result(signed_only)
    result = _verify(signed_only, keys, key=None)
    assert result["valid"] is True and "result, execution_time_ms" in result["warning"]

    monkeypatch.setenv("AGENTOS_AUDIT_KEY", "k" * 64)  # both on together
    both = tmp_path / "both.db"
    _write_trail(both, monkeypatch, keys["a"]["path"], "runner-a").close()
    clean = _verify(both, keys)
    assert clean["valid"] and clean["sealed"] and clean["signed"]
    edit_result(both)
    assert "seal does not match" in _verify(both, keys)["error"]


def test_rotation_is_a_recorded_event_and_retires_the_old_key(tmp_path, keys, monkeypatch):
    from agentlightning.contrib.kernel.agentos.audit.signing import ROTATION_TOOL_NAME

    path = tmp_path / "worker-0@runner-a-123.db"
    kernel = _write_trail(path, monkeypatch, keys["a"]["path"], "runner-a")
    kernel.audit.rotate_signing_key(keys["a2"]["path"])
    with governance_context(agent_id="Worker-0@runner-a-123"):
        kernel.check(Action.sql("DROP TABLE after_rotation"))
    kernel.close()
    result = _verify(path, keys)  # the keyring lists A's first key only; the record hands over to the second
    assert result["valid"] is True, result
    assert result["signed_by"]["key_id"] == keys["a2"]["key_id"]
    assert result["rotations"] == [
        {"record": 5, "host": "runner-a", "old_key_id": keys["a"]["key_id"], "new_key_id": keys["a2"]["key_id"]}
    ]
    with _edit(path) as conn:
        assert conn.execute("SELECT tool_name FROM audit_log WHERE id = 5").fetchone()[0] == ROTATION_TOOL_NAME

    # whoever still holds the old key cannot sign the file's head after the rotation
    old_key = tmp_path / "old.db"
    shutil.copy(path, old_key)
    _resign(old_key, _load(keys["a"]["path"], "runner-a"))
    result = _verify(old_key, keys)
    assert result["valid"] is False and "retired at record 5" in result["error"]

    # a rotation to a key the keyring registers to another host is refused
    ring = tmp_path / "ring"
    ring.write_text(f"{keys['a']['line']}\nrunner-b {keys['a2']['line'].split(None, 1)[1]}\n")
    from agentlightning.contrib.kernel.agentos.audit.seal import verify_file

    result = verify_file(path, keyring=str(ring))
    assert result["valid"] is False and "registers to host 'runner-b'" in result["error"]

    # the rotation record itself cannot be edited (here: handing over to the forger's key)
    forged = tmp_path / "forged-rotation.db"
    shutil.copy(path, forged)
    with _edit(forged) as conn:
        (tool_args,) = conn.execute("SELECT tool_args FROM audit_log WHERE id = 5").fetchone()
        decoded = json.loads(tool_args)
        unknown = _load(keys["unknown"]["path"], "runner-a")
        decoded["audit_key_rotation"].update(new_key_id=unknown.key_id, new_public_key=unknown.public_key)
        conn.execute("UPDATE audit_log SET tool_args = ? WHERE id = 5", (json.dumps(decoded),))
        _rehash_from(conn, 5)
    _resign(forged, unknown)
    result = _verify(forged, keys)
    assert result["valid"] is False and "does not match the old key's signature" in result["error"]


def test_rotations_follow_one_another_and_a_bad_one_is_refused_before_the_writer(tmp_path, keys, monkeypatch):
    from agentlightning.contrib.kernel.agentos.audit.signing import SigningKey, SigningKeyError

    path = tmp_path / "audit.db"
    kernel = _write_trail(path, monkeypatch, keys["a"]["path"], "runner-a")
    with pytest.raises(SigningKeyError, match="keeps the host"):
        kernel.audit.rotate_signing_key(SigningKey.generate("runner-b"))
    with pytest.raises(SigningKeyError, match="is the current one"):
        kernel.audit.rotate_signing_key(keys["a"]["path"])
    assert kernel.audit.outage is None and kernel.check(Action.sql("SELECT 5")).allowed  # the trail goes on
    kernel.audit.rotate_signing_key(keys["a2"]["path"])
    third = SigningKey.generate("runner-a")
    kernel.audit.rotate_signing_key(third)  # signed by the second key, which the keyring does not list
    kernel.check(Action.sql("SELECT 6"))
    kernel.close()
    result = _verify(path, keys)
    assert result["valid"] is True, result
    assert [r["new_key_id"] for r in result["rotations"]] == [keys["a2"]["key_id"], third.key_id]
    assert result["signed_by"]["key_id"] == third.key_id


def test_an_empty_file_has_nothing_to_sign(tmp_path, keys, monkeypatch):
    path = tmp_path / "audit.db"
    _write_trail(path, monkeypatch, keys["a"]["path"], "runner-a", queries=[]).close()
    result = _verify(path, keys)
    assert result["valid"] is True and result["total_entries"] == 0 and result["signed"] is False


def test_a_signed_file_is_continued_only_by_its_host_and_key(trail_a, keys, monkeypatch):
    from agentlightning.contrib.kernel.agentos.audit.signing import SigningKeyError

    monkeypatch.setenv("AGENTOS_HOST_NAME", "runner-b")
    monkeypatch.setenv("AGENTOS_AUDIT_SIGNING_KEY_FILE", keys["b"]["path"])
    with pytest.raises(SigningKeyError, match="signed by host 'runner-a'.*signs for host 'runner-b'"):
        GovernanceKernel([SQLPolicy(deny=["DROP"])], recorder=trail_a)
    monkeypatch.delenv("AGENTOS_AUDIT_SIGNING_KEY_FILE")
    with pytest.raises(SigningKeyError, match="no signing key is set: set AGENTOS_AUDIT_SIGNING_KEY_FILE"):
        GovernanceKernel([SQLPolicy(deny=["DROP"])], recorder=trail_a)
    kernel = _write_trail(trail_a, monkeypatch, keys["a"]["path"], "runner-a", queries=["SELECT 9"])
    kernel.close()
    result = _verify(trail_a, keys)
    assert result["valid"] and result["signed"] and result["total_entries"] == len(QUERIES) + 1


def test_missing_or_unreadable_keys_give_clear_errors_naming_the_fix(tmp_path, keys, monkeypatch):
    from agentlightning.contrib.kernel.agentos.audit.signing import (
        KeyringError,
        SigningKeyError,
        load_keyring,
        load_signing_key,
    )

    missing = tmp_path / "missing.key"
    with pytest.raises(SigningKeyError, match="cannot read the signing key file .*missing.key.*keygen --out"):
        load_signing_key(environ={"AGENTOS_AUDIT_SIGNING_KEY_FILE": str(missing)})
    monkeypatch.setenv("AGENTOS_AUDIT_SIGNING_KEY_FILE", str(missing))
    with pytest.raises(SigningKeyError, match="AGENTOS_AUDIT_SIGNING_KEY_FILE"):  # the kernel refuses to start
        GovernanceKernel([SQLPolicy(deny=["DROP"])], recorder=tmp_path / "audit.db")
    shared = tmp_path / "shared.key"
    shutil.copy(keys["a"]["path"], shared)
    shared.chmod(0o640)
    with pytest.raises(SigningKeyError, match=f"readable by others.*chmod 600 {shared}"):
        load_signing_key(str(shared), host="runner-a")
    junk = tmp_path / "junk.key"
    junk.write_bytes(b"not a key")
    junk.chmod(0o600)
    with pytest.raises(SigningKeyError, match="not an Ed25519 private key.*keygen"):
        load_signing_key(str(junk), host="runner-a")
    raw = tmp_path / "raw.key"  # the raw 32 bytes are a key too
    raw.write_bytes(bytes(range(32)))
    raw.chmod(0o600)
    assert load_signing_key(str(raw), host="runner-a").host == "runner-a"
    with pytest.raises(KeyringError, match="cannot read the keyring"):
        load_keyring(str(tmp_path / "no-keyring"))
    bad = tmp_path / "bad-keyring"
    bad.write_text(keys["a"]["line"] + "\nrunner-b only-two-fields\n")
    with pytest.raises(KeyringError, match="line 2: expected 'host key_id base64-public-key'"):
        load_keyring(str(bad))
    twice = tmp_path / "twice-keyring"
    twice.write_text(keys["a"]["line"] + "\nrunner-b " + keys["a"]["line"].split(None, 1)[1] + "\n")
    with pytest.raises(KeyringError, match="listed for 'runner-a' and 'runner-b'"):
        load_keyring(str(twice))
