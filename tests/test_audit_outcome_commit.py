"""An outcome committed alone is committed at ``synchronous=NORMAL``; everything else at the configured level.

"Durable before it runs" is about decisions. An outcome (what an allowed action returned) is
written after its action ran; when no decision comes to share its commit, the trail's committer
thread commits it alone. That transaction needs to survive the process's death, not a power loss
at once: it is committed with ``PRAGMA synchronous=NORMAL`` (in WAL mode the commit reaches the
operating system and is not fsynced) and becomes power-loss durable with the next fsync of the WAL.
A transaction that holds a decision (also one carrying earlier outcomes), and the commits of
``flush()`` and ``close()``, stay at the configured level.

The tests watch the trail's own connection with ``set_trace_callback``: each ``COMMIT`` is paired
with the synchronous level in force for it and the statements of its transaction.
"""

from __future__ import annotations

import os
import sqlite3
import time
from pathlib import Path
from typing import List, Tuple

import pytest

from agentlightning.contrib.kernel.agentos import Action, GovernanceKernel, SQLPolicy
from agentlightning.contrib.kernel.agentos.audit import AuditTrail, open_flight_recorder
from agentlightning.contrib.kernel.agentos.audit.seal import verify_file

from .conftest import host_signing_key

_LEVELS = {"0": "OFF", "1": "NORMAL", "2": "FULL", "3": "EXTRA"}


class _Commits:
    """The trail connection's transactions, each as (synchronous level at its COMMIT, its statements)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.level = _LEVELS[str(conn.execute("PRAGMA synchronous").fetchone()[0])]
        self.done: List[Tuple[str, List[str]]] = []
        self._open: List[str] = []
        conn.set_trace_callback(self._statement)

    def _statement(self, sql: str) -> None:
        text = " ".join(sql.split()).upper()
        if text.startswith("PRAGMA SYNCHRONOUS="):
            value = text.split("=", 1)[1].strip()
            self.level = _LEVELS.get(value, value)
        elif text.startswith("BEGIN"):
            self._open = []
        elif text == "COMMIT":
            self.done.append((self.level, self._open))
            self._open = []
        else:
            self._open.append(text)

    @staticmethod
    def holds_decision(statements: List[str]) -> bool:
        return any(s.startswith("INSERT INTO AUDIT_LOG") for s in statements)

    @staticmethod
    def holds_outcome(statements: List[str]) -> bool:
        return any(s.startswith("UPDATE AUDIT_LOG") for s in statements)


def _wait_for(condition, seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


@pytest.mark.parametrize("key", [None, "k" * 32], ids=["plain", "sealed"])
def test_an_outcome_committed_alone_runs_at_normal_and_decisions_at_full(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, key
) -> None:
    if key is not None:
        monkeypatch.setenv("AGENTOS_AUDIT_KEY", key)
    else:
        monkeypatch.delenv("AGENTOS_AUDIT_KEY", raising=False)
    path = tmp_path / "audit.db"
    kernel = GovernanceKernel([SQLPolicy(deny=["DROP"])], recorder=path)
    commits = _Commits(kernel.audit._conn)
    assert commits.level == "FULL"

    first = kernel.check(Action.sql("SELECT 1"))
    kernel.record_outcome(first, result="one row", execution_time_ms=0.5)
    _wait_for(lambda: len(commits.done) == 2)  # the decision, then its outcome alone after the linger
    (decision_level, decision), (outcome_level, outcome) = commits.done
    assert _Commits.holds_decision(decision) and decision_level == "FULL"
    assert _Commits.holds_outcome(outcome) and not _Commits.holds_decision(outcome)
    assert outcome_level == "NORMAL"

    # An outcome that shares the commit of the next decision is committed at the configured level.
    second = kernel.check(Action.sql("SELECT 2"))
    kernel.record_outcome(second, result="two rows", execution_time_ms=0.5)
    assert kernel.check(Action.sql("SELECT 3")).allowed
    level, shared = commits.done[-1]
    assert _Commits.holds_decision(shared) and _Commits.holds_outcome(shared)
    assert level == "FULL"

    # A blocked decision: the configured level.
    assert not kernel.check(Action.sql("DROP TABLE t")).allowed
    assert commits.done[-1][0] == "FULL" and _Commits.holds_decision(commits.done[-1][1])
    kernel.close()
    result = verify_file(path, key=key)
    assert result["valid"], result


def test_flush_commits_an_outcome_at_full(tmp_path: Path) -> None:
    kernel = GovernanceKernel([SQLPolicy()], recorder=tmp_path / "audit.db")
    commits = _Commits(kernel.audit._conn)
    decision = kernel.check(Action.sql("SELECT 1"))
    kernel.record_outcome(decision, result="one row")
    kernel.audit.flush()
    level, statements = commits.done[-1]
    assert _Commits.holds_outcome(statements) and level == "FULL"
    kernel.close()


def test_flush_after_an_outcome_committed_alone_fsyncs_the_wal(tmp_path: Path, monkeypatch) -> None:
    """A caller who flushes asks for durability: an outcome already committed alone (not fsynced)
    is made power-loss durable by the flush, even though nothing is left to commit."""
    kernel = GovernanceKernel([SQLPolicy()], recorder=tmp_path / "audit.db")
    commits = _Commits(kernel.audit._conn)
    decision = kernel.check(Action.sql("SELECT 1"))
    kernel.record_outcome(decision, result="one row")
    _wait_for(lambda: len(commits.done) == 2)
    assert commits.done[-1][0] == "NORMAL"
    synced: List[str] = []
    real_fsync = os.fsync

    def counting_fsync(fd: int) -> None:
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", counting_fsync)
    kernel.audit.flush()
    assert any(name.endswith("audit.db-wal") for name in synced), synced
    synced.clear()
    kernel.audit.flush()  # nothing unsynced now: no work
    assert synced == []
    kernel.close()


def test_queued_durability_keeps_normal_for_every_commit(tmp_path: Path) -> None:
    trail = AuditTrail(open_flight_recorder(tmp_path / "audit.db"), durability="queued")
    kernel = GovernanceKernel([SQLPolicy()], recorder=trail)
    commits = _Commits(trail._conn)
    assert commits.level == "NORMAL"
    decision = kernel.check(Action.sql("SELECT 1"))
    kernel.record_outcome(decision, result="one row")
    kernel.audit.flush()
    assert commits.done and all(level == "NORMAL" for level, _ in commits.done)
    kernel.close()


def test_extra_stays_extra_for_decisions(tmp_path: Path) -> None:
    trail = AuditTrail(open_flight_recorder(tmp_path / "audit.db"), synchronous="EXTRA")
    kernel = GovernanceKernel([SQLPolicy()], recorder=trail)
    commits = _Commits(trail._conn)
    first = kernel.check(Action.sql("SELECT 1"))
    kernel.record_outcome(first, result="one row")
    _wait_for(lambda: len(commits.done) == 2)
    assert [level for level, _ in commits.done] == ["EXTRA", "NORMAL"]
    assert kernel.check(Action.sql("SELECT 2")).allowed
    assert commits.done[-1][0] == "EXTRA"
    kernel.close()


@pytest.mark.parametrize("signing", ["sealed", "host-signed"])
def test_an_outcome_committed_alone_leaves_the_signed_head_as_it_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, signing: str
) -> None:
    """An outcome fills in a record already in the chain: the chain's end, and so its signed head
    (records, last record, its entry hash), is unchanged. Its lone commit writes no head (no HMAC, no
    Ed25519 signature for a head already stored), and the file verifies with the outcome in it."""
    monkeypatch.delenv("AGENTOS_AUDIT_KEY", raising=False)
    keyring = None
    if signing == "sealed":
        monkeypatch.setenv("AGENTOS_AUDIT_KEY", "k" * 32)
        head_table = "AGENTOS_AUDIT_HEAD"
    else:
        key_file = tmp_path / "host.key"
        keyring = tmp_path / "keyring"
        keyring.write_text(host_signing_key(key_file, "runner-a") + "\n")
        monkeypatch.setenv("AGENTOS_HOST_NAME", "runner-a")
        monkeypatch.setenv("AGENTOS_AUDIT_SIGNING_KEY_FILE", str(key_file))
        head_table = "AGENTOS_AUDIT_HOST_HEAD"
    path = tmp_path / "audit.db"
    kernel = GovernanceKernel([SQLPolicy(deny=["DROP"])], recorder=path)
    commits = _Commits(kernel.audit._conn)

    decision = kernel.check(Action.sql("SELECT 1"))
    kernel.record_outcome(decision, result="one row", execution_time_ms=0.5)
    _wait_for(lambda: len(commits.done) == 2)
    (_, with_decision), (_, outcome_alone) = commits.done
    assert any(head_table in s for s in with_decision), with_decision
    assert _Commits.holds_outcome(outcome_alone)
    assert not any(head_table in s for s in outcome_alone), outcome_alone

    assert kernel.check(Action.sql("SELECT 2")).allowed  # the next record moves the head on
    assert any(head_table in s for s in commits.done[-1][1])
    kernel.close()
    options = {"key": "k" * 32} if keyring is None else {"keyring": str(keyring)}
    result = verify_file(path, **options)
    assert result["valid"] and result["total_entries"] == 2, result
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT result FROM audit_log WHERE id = 1").fetchone()[0] == "one row"


def test_a_not_run_correction_is_committed_at_the_configured_level(tmp_path: Path) -> None:
    """A check that gave up waiting for its record's commit blocked its action. When the commit comes
    after all, the record says "allowed" and a correction follows ("not run", an outcome written as
    a decision is): it corrects the evidence of a decision, so it is committed at the configured
    level, never at the NORMAL of outcomes alone, and the file verifies."""
    trail = AuditTrail(open_flight_recorder(tmp_path / "audit.db"), committer="thread", commit_timeout_s=0.2)
    kernel = GovernanceKernel([SQLPolicy()], recorder=trail)
    commits = _Commits(trail._conn)
    slow_once = [True]
    transaction = trail._transaction

    def slow_first_commit(*args, **kwargs):
        if slow_once.pop() if slow_once else False:
            time.sleep(1.5)  # well past the check's commit_timeout_s: the check gives up and blocks
        return transaction(*args, **kwargs)

    trail._transaction = slow_first_commit
    decision = kernel.check(Action.sql("SELECT 1"))
    assert decision.blocked and "audit" in str(decision.reason).lower(), decision.reason
    _wait_for(lambda: len(commits.done) == 2)
    (first_level, first), (correction_level, correction) = commits.done
    assert _Commits.holds_decision(first) and first_level == "FULL"
    assert _Commits.holds_outcome(correction) and not _Commits.holds_decision(correction)
    assert correction_level == "FULL"
    del trail._transaction
    kernel.close()
    with sqlite3.connect(tmp_path / "audit.db") as conn:
        verdict, reason = conn.execute("SELECT policy_verdict, violation_reason FROM audit_log WHERE id = 1").fetchone()
    assert verdict == "error" and reason.startswith("not run"), (verdict, reason)
    assert verify_file(tmp_path / "audit.db")["valid"]
