"""The audit trail under real faults: every allowed action's record is committed before it runs.

Each test drives a real kernel whose "tool" runs only on an allowed decision and, before doing
anything, looks its own record up in the audit file through a separate read-only connection:
so an action that ran without a committed record fails the test where it happens. The faults
are real: a full 256 KiB tmpfs, an EXCLUSIVE lock held by a separate ``sqlite3`` process, a
read-only remount, the file deleted, replaced or cut under the running kernel, a second writer.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import shutil
import sqlite3
import subprocess
import time
from pathlib import Path
from typing import List, Tuple

import pytest

from agentlightning.contrib.kernel.agentos import Action, GovernanceKernel, SQLPolicy
from agentlightning.contrib.kernel.agentos.audit.seal import verify_file
from agentlightning.contrib.kernel.agentos.audit.trail import (
    OUTAGE_TOOL_NAME,
    AuditTrail,
    AuditWriterConflict,
    open_flight_recorder,
)

KEY = "k" * 64


def _run(*command: str) -> subprocess.CompletedProcess:
    return subprocess.run(list(command), capture_output=True, text=True)


@pytest.fixture
def small_fs(tmp_path: Path):
    """A real 256 KiB tmpfs (we are root in CI); a clear skip elsewhere, never a silent one."""
    mount_point = tmp_path / "fs"
    mount_point.mkdir()
    done = _run("mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mount_point))
    if done.returncode != 0:
        if os.environ.get("CI") == "true":
            pytest.fail(f"cannot mount a tmpfs in CI: {done.stderr.strip()}")
        pytest.skip(f"mounting a tmpfs is not permitted here ({done.stderr.strip()}); these fault tests need root")
    yield mount_point
    _run("mount", "-o", "remount,rw", str(mount_point))
    _run("umount", "-l", str(mount_point))


class Agent:
    """Checks actions; runs an allowed one only after finding its record in the file."""

    def __init__(self, kernel: GovernanceKernel, path: Path) -> None:
        self.kernel = kernel
        self.path = path
        self.ran: List[str] = []
        self.blocked_by_audit: List[str] = []
        self.decisions = []

    def _record_is_committed(self, decision_id: str) -> bool:
        conn = sqlite3.connect(f"{self.path.resolve().as_uri()}?mode=ro", uri=True, timeout=5)
        try:
            pattern = f'%"decision_id": "{decision_id}"%'
            return conn.execute("SELECT COUNT(*) FROM audit_log WHERE tool_args LIKE ?", (pattern,)).fetchone()[0] == 1
        finally:
            conn.close()

    def act(self, query: str, pad: str = "") -> object:
        decision = self.kernel.check(Action("database_query", {"query": query, "pad": pad}))
        self.decisions.append(decision)
        if decision.allowed:
            # The tool starts here: its record must already be in the file, committed.
            assert self._record_is_committed(decision.decision_id), f"{decision.decision_id} ran with no record"
            self.ran.append(decision.decision_id)
            self.kernel.record_outcome(decision, result="ok", execution_time_ms=0.1)
        elif "audit" in decision.reason and not any(v.policy_name == "SQLPolicy" for v in decision.violations):
            self.blocked_by_audit.append(decision.decision_id)
        return decision

    def until_allowed(self, seconds: float) -> bool:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if self.act("SELECT 1").allowed:
                return True
            time.sleep(0.05)
        return False


def kernel_and_agent(path: Path) -> Tuple[GovernanceKernel, Agent]:
    """A kernel that denies DROP and records to ``path``, and an agent acting through it."""
    kernel = GovernanceKernel([SQLPolicy(deny=["DROP"])], recorder=path)
    return kernel, Agent(kernel, path)


def _outage_records(path: Path) -> list:
    conn = sqlite3.connect(path)
    try:
        rows = conn.execute("SELECT tool_args FROM audit_log WHERE tool_name = ?", (OUTAGE_TOOL_NAME,)).fetchall()
    finally:
        conn.close()
    return [json.loads(row[0])["audit_outage"] for row in rows]


def _assert_outage_recorded(agent: Agent, path: Path) -> dict:
    (outage,) = _outage_records(path)
    assert outage["actions_blocked"] == len(agent.blocked_by_audit) > 0
    assert outage["allowed_unrecorded"] == 0 and outage["duration_s"] > 0
    return outage


def test_a_full_disk_blocks_the_actions_it_concerns_and_the_trail_recovers(small_fs, monkeypatch):
    monkeypatch.setenv("AGENTOS_AUDIT_KEY", KEY)
    path = small_fs / "audit.db"
    kernel, agent = kernel_and_agent(path)
    agent.act("SELECT 0")
    free = os.statvfs(small_fs)
    filler = small_fs / "filler"
    filler.write_bytes(b"\0" * max(0, free.f_bavail * free.f_frsize - 24 * 1024))
    for i in range(60):  # a mixed workload, each record about 2 KB, until the disk is full
        agent.act("DROP TABLE t" if i % 4 == 3 else f"SELECT {i}", pad="x" * 2000)
    assert agent.blocked_by_audit, "the disk never filled up"
    reason = next(d.reason for d in agent.decisions if "audit write failed" in d.reason)
    assert "database or disk is full" in reason and reason.count("audit write failed") == 1, reason
    assert kernel.audit.outage is not None
    filler.unlink()  # space again: the kernel recovers by itself
    assert agent.until_allowed(10), "the trail did not recover once the disk had space"
    outage = _assert_outage_recorded(agent, path)
    assert outage["error"].startswith("OperationalError: database or disk is full")
    result = kernel.verify_audit()
    assert result["valid"] and result["sealed"], result
    assert [o["actions_blocked"] for o in result["outages"]] == [outage["actions_blocked"]]
    kernel.close()


@pytest.mark.e2e  # a fault that lasts: another process holds the lock for 4 s
def test_a_lock_held_by_another_sqlite3_process_blocks_then_the_run_goes_on(tmp_path):
    path = tmp_path / "audit.db"
    kernel, agent = kernel_and_agent(path)
    agent.act("SELECT 0")
    holder = subprocess.Popen(["sqlite3", str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        kernel.audit.flush()  # the first action's outcome is committed: the lock is taken on an idle file
        holder.stdin.write(".timeout 5000\nBEGIN EXCLUSIVE;\nSELECT 'locked';\n")
        holder.stdin.flush()
        assert holder.stdout.readline().strip() == "locked"
        started = time.monotonic()
        while time.monotonic() - started < 4.0:  # a 4 s lock
            agent.act("SELECT 2")
            agent.act("DROP TABLE t")
        assert agent.blocked_by_audit, "no action was blocked while the lock was held"
        assert not any(d.allowed for d in agent.decisions[1:]), "an action was allowed under the lock"
        assert "database is locked" in kernel.audit.outage["error"]
    finally:
        holder.stdin.write("COMMIT;\n.quit\n")
        holder.stdin.flush()
        holder.wait(timeout=10)
    assert agent.until_allowed(5), "a transient lock ended the run"
    _assert_outage_recorded(agent, path)
    assert kernel.verify_audit()["valid"]
    kernel.close()


@pytest.fixture
def ext4_fs(tmp_path: Path):
    """A real ext4 file system (an 8 MiB loop image) mounted with ``errors=remount-ro``.

    A file system cannot be remounted read-only by hand while a file on it is open for writing
    (the kernel answers "busy"); it turns read-only by itself on an error. ``trigger_fs_error``
    raises a real ext4 error, and the kernel turns the file system read-only under the open file.
    """
    image, mount_point = tmp_path / "ext4.img", tmp_path / "ext4"
    mount_point.mkdir()
    image.write_bytes(b"")
    os.truncate(image, 8 * 1024 * 1024)
    made = _run("mkfs.ext4", "-q", "-F", str(image))
    done = _run("mount", "-o", "loop,errors=remount-ro", str(image), str(mount_point)) if made.returncode == 0 else made
    if done.returncode != 0:
        if os.environ.get("CI") == "true":
            pytest.fail(f"cannot mount an ext4 loop image in CI: {done.stderr.strip()}")
        pytest.skip(f"mounting an ext4 loop image is not permitted here ({done.stderr.strip()})")
    device = _run("findmnt", "-n", "-o", "SOURCE", str(mount_point)).stdout.strip()
    yield mount_point, Path("/sys/fs/ext4") / Path(device).name / "trigger_fs_error"
    _run("umount", "-l", str(mount_point))  # the loop device is released with it (autoclear)


def test_a_file_system_turned_read_only_blocks_every_action_and_keeps_the_trail(ext4_fs):
    mount_point, trigger = ext4_fs
    path = mount_point / "audit.db"
    kernel, agent = kernel_and_agent(path)
    agent.act("SELECT 0")
    agent.act("DROP TABLE t")
    trigger.write_text("agentos audit test\n")  # ext4 error -> errors=remount-ro
    assert "emergency_ro" in _run("findmnt", "-n", "-o", "OPTIONS", str(mount_point)).stdout
    for i in range(6):
        agent.act(f"SELECT {i}")
        agent.act("DROP TABLE t")
    assert len(agent.ran) == 1 and len(agent.blocked_by_audit) == 6
    outage = kernel.audit.outage
    assert outage["actions_blocked"] == 6 and outage["blocked_records_lost"] == 6
    assert "disk I/O error" in outage["error"] or "readonly" in outage["error"]
    result = verify_file(path)  # what was committed before is intact and readable
    assert result["valid"] and result["total_entries"] == 2
    kernel.close()


def _the_kernel_says_the_file_changed(agent: Agent, kernel: GovernanceKernel, why: str) -> None:
    decision = agent.act("SELECT 99")
    assert decision.blocked and why in decision.reason, decision.reason
    assert agent.act("SELECT 100").blocked  # for good: the evidence is gone
    result = kernel.verify_audit()
    assert result["valid"] is False and why in result["error"], result


def test_deleting_the_file_mid_run_is_detected_and_blocks(tmp_path):
    path = tmp_path / "audit.db"
    kernel, agent = kernel_and_agent(path)
    agent.act("SELECT 1")
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    _the_kernel_says_the_file_changed(agent, kernel, "deleted")
    kernel.attach_recorder(tmp_path / "next.db")  # a new file: the run can go on, with evidence
    agent.path = tmp_path / "next.db"
    assert agent.act("SELECT 2").allowed
    kernel.close()


def test_replacing_the_file_mid_run_is_detected_and_blocks(tmp_path):
    path = tmp_path / "audit.db"
    kernel, agent = kernel_and_agent(path)
    agent.act("SELECT 1")
    agent.act("DROP TABLE t")
    copy = tmp_path / "copy.db"
    source, target = sqlite3.connect(path), sqlite3.connect(copy)
    source.backup(target)  # a perfect, valid copy of the trail so far
    source.close()
    target.close()
    os.replace(copy, path)
    _the_kernel_says_the_file_changed(agent, kernel, "replaced")
    kernel.close()


@pytest.mark.parametrize("cut", ["last records deleted", "file truncated"])
def test_cutting_the_file_mid_run_is_detected_and_blocks(tmp_path, cut):
    path = tmp_path / "audit.db"
    kernel, agent = kernel_and_agent(path)
    for i in range(5):
        agent.act(f"SELECT {i}")
    if cut == "file truncated":
        conn = sqlite3.connect(path)
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # the rows are in the main file now
        conn.close()
        agent.act("SELECT 5")
        os.truncate(path, 4096)
        _the_kernel_says_the_file_changed(agent, kernel, "truncated")
    else:
        conn = sqlite3.connect(path)
        conn.execute("DELETE FROM audit_log WHERE id > 3")
        conn.commit()
        conn.close()
        _the_kernel_says_the_file_changed(agent, kernel, "records were removed")
    kernel.close()


def _open_in_another_process(path: Path) -> str:
    """What opening a kernel on ``path`` gives in a separate (forked) process: the error's type and message."""

    def open_kernel(conn) -> None:
        try:
            GovernanceKernel([SQLPolicy()], recorder=path).close()
            conn.send("opened")
        except Exception as err:
            conn.send(f"{type(err).__name__} {err}")

    receiver, sender = multiprocessing.get_context("fork").Pipe(duplex=False)
    child = multiprocessing.get_context("fork").Process(target=open_kernel, args=(sender,))
    child.start()
    try:
        assert receiver.poll(60), "the other process said nothing within 60 s"
        return receiver.recv()
    finally:
        child.join(timeout=60)
        assert child.exitcode == 0, child.exitcode


def test_a_second_writer_is_refused_with_the_file_and_the_fix(tmp_path):
    path = tmp_path / "audit.db"
    kernel = GovernanceKernel([SQLPolicy(deny=["DROP"])], recorder=path)
    kernel.check(Action.sql("SELECT 1"))
    with pytest.raises(AuditWriterConflict, match="already being written by another kernel or process") as err:
        GovernanceKernel([SQLPolicy()], recorder=path)
    assert str(path) in str(err.value) and "its own file" in str(err.value)
    # Another process: forked, so it has the plugin imported already (a fresh interpreter spends
    # seconds importing agentlightning); the lock it meets is the file's flock, held by this one.
    in_other_process = _open_in_another_process(path)
    assert in_other_process.startswith("AuditWriterConflict") and str(path) in in_other_process, in_other_process
    kernel.close()
    reopened = GovernanceKernel([SQLPolicy()], recorder=path)  # released on close
    assert reopened.check(Action.sql("SELECT 2")).allowed
    assert reopened.verify_audit()["valid"]
    reopened.close()


def test_group_commit_many_threads_one_record_each_all_committed_before_running(tmp_path):
    import threading

    path = tmp_path / "audit.db"
    kernel = GovernanceKernel([SQLPolicy(deny=["DROP"])], recorder=path)
    agents = [Agent(kernel, path) for _ in range(8)]

    def work(agent: Agent) -> None:
        for i in range(25):
            agent.act("DROP TABLE t" if i % 5 == 0 else f"SELECT {i}")

    threads = [threading.Thread(target=work, args=(a,)) for a in agents]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(len(a.ran) for a in agents) == 8 * 20
    result = kernel.verify_audit()
    assert result["valid"] and result["total_entries"] == 200
    kernel.close()


def test_the_queued_opt_out_says_what_it_gave_up(tmp_path):
    """``durability="queued"``: allowed checks return before the commit (the old speed)."""
    path = tmp_path / "audit.db"
    trail = AuditTrail(open_flight_recorder(path), durability="queued")
    kernel = GovernanceKernel([SQLPolicy(deny=["DROP"])], recorder=trail)
    decisions = [kernel.check(Action.sql(f"SELECT {i}")) for i in range(50)]
    assert all(d.allowed for d in decisions)
    blocked = kernel.check(Action.sql("DROP TABLE t"))  # a blocked record is still committed first
    assert blocked.blocked and len(kernel.audit.records()) == 51
    kernel.close()
    assert verify_file(path)["valid"]


def test_an_old_unsealed_file_still_reads_and_says_so(tmp_path, monkeypatch):
    path = tmp_path / "audit.db"
    old = GovernanceKernel([SQLPolicy(deny=["DROP"])], recorder=path)  # no key: unsealed records
    old.check(Action.sql("SELECT 1"))
    old.close()
    monkeypatch.setenv("AGENTOS_AUDIT_KEY", KEY)
    kernel = GovernanceKernel([SQLPolicy(deny=["DROP"])], recorder=path)  # continued with a key
    kernel.check(Action.sql("DROP TABLE t"))
    result = kernel.verify_audit()
    assert result["valid"] and not result["sealed"] and result["unsealed_records"] == 1
    assert "written before records were sealed" in result["warning"]
    kernel.close()
    shutil.copy(path, tmp_path / "copy.db")
    monkeypatch.delenv("AGENTOS_AUDIT_KEY")
    unkeyed = verify_file(tmp_path / "copy.db")
    assert (
        unkeyed["valid"]
        and unkeyed["assurance"] == "unkeyed"
        and "only detects accidental damage" in (unkeyed["warning"])
    )
