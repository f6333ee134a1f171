"""Group commit keeps the guarantee: a check returns only after the commit that holds its record.

The trail commits on the checking threads: a check that finds no commit under way leads the next
one, with every record waiting at that moment; one that finds a commit under way waits and is
answered by the next commit (or handed its lead). These tests hold it to what it promises:

* a process killed with SIGKILL at any moment has, in its file, every decision a check of it had
  returned (one thread and eight);
* eight threads' records are all in the file, each exactly once, and the file verifies with the
  project's verifier (``verify_file``);
* several waiting records share one transaction, and a record is in the commit under way when it
  arrived plus at most one: no check waits for a queue of other records.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Dict, List

import pytest

from agentlightning.contrib.kernel.agentos import Action, GovernanceKernel, SQLPolicy
from agentlightning.contrib.kernel.agentos.audit import AuditTrail, open_flight_recorder
from agentlightning.contrib.kernel.agentos.audit.seal import verify_file

#: The child: checks in ``threads`` threads forever; each thread prints a decision's id the moment
#: its check returns (allowed: the action could run now), so the parent knows what was answered.
_CHILD = textwrap.dedent(
    """
    import sys, threading
    from agentlightning.contrib.kernel.agentos import Action, GovernanceKernel, SQLPolicy
    from agentlightning.contrib.kernel.agentos.audit import AuditTrail, open_flight_recorder
    path, threads, committer = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    trail = AuditTrail(open_flight_recorder(path), committer=committer)
    kernel = GovernanceKernel([SQLPolicy(deny=["DROP"])], recorder=trail)
    out = sys.stdout
    lock = threading.Lock()

    def work(index):
        i = 0
        while True:
            decision = kernel.check(Action.sql("DROP TABLE t" if i % 7 == 6 else f"SELECT {index}, {i}"))
            with lock:
                out.write(f"{decision.verdict.value} {decision.decision_id}\\n")
                out.flush()
            if decision.allowed:
                kernel.record_outcome(decision, result="ok", execution_time_ms=0.1)
            i += 1

    for index in range(threads):
        threading.Thread(target=work, args=(index,), daemon=True).start()
    threading.Event().wait()
    """
)


def _decision_ids_in(path: Path) -> List[str]:
    conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    try:
        rows = conn.execute("SELECT tool_args FROM audit_log ORDER BY id").fetchall()
    finally:
        conn.close()
    import json

    return [json.loads(text)["agentos"]["decision_id"] for (text,) in rows]


#: Where commits are made: on the checking threads (the default) or by the trail's writer thread.
COMMITTERS = ["checks", "thread"]


@pytest.mark.parametrize("committer", COMMITTERS)
@pytest.mark.parametrize("threads", [1, 8])
def test_every_answered_decision_survives_a_kill_9_right_after_its_check(
    tmp_path: Path, threads: int, committer: str
) -> None:
    for attempt, answers_before_kill in enumerate((3, 60)):
        path = tmp_path / f"audit-{attempt}.db"
        child = subprocess.Popen(
            [sys.executable, "-c", _CHILD, str(path), str(threads), committer],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env=dict(os.environ, LITELLM_LOCAL_MODEL_COST_MAP="True"),
        )
        answered: List[str] = []
        try:
            assert child.stdout is not None
            while len(answered) < answers_before_kill:
                line = child.stdout.readline()
                assert line, "the checking process ended by itself"
                answered.append(line.split()[1])
            os.kill(child.pid, signal.SIGKILL)  # mid-run: other checks are in flight, commits under way
        finally:
            child.kill()
            child.wait(timeout=30)
        in_file = set(_decision_ids_in(path))
        missing = [decision_id for decision_id in answered if decision_id not in in_file]
        assert not missing, f"answered but not in the file after kill -9: {missing}"
        assert verify_file(path)["valid"]


class _CountingTrail(AuditTrail):
    """The trail, noting for each record how many groups were committed when it arrived and
    which group holds it (groups are taken and committed one at a time: one leader)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.groups = 0
        self.arrived_after: Dict[str, int] = {}  # decision id: groups committed when it was queued
        self.committed_in: Dict[str, int] = {}  # decision id: the group that holds it
        self.group_sizes: List[int] = []

    def _enqueue(self, item) -> bool:
        if item.kind == "decision":
            self.arrived_after[item.payload[0]] = self.groups
        return super()._enqueue(item)

    def _commit(self, work, *rest) -> None:
        super()._commit(work, *rest)
        self.groups += 1
        decisions = [item.payload[0] for item in work if item.kind == "decision"]
        self.group_sizes.append(len(decisions))
        for decision_id in decisions:
            self.committed_in[decision_id] = self.groups


@pytest.mark.parametrize("committer", COMMITTERS)
def test_eight_threads_share_commits_and_wait_for_one_commit_at_most(tmp_path: Path, committer: str) -> None:
    path = tmp_path / "audit.db"
    trail = _CountingTrail(open_flight_recorder(path), committer=committer)
    kernel = GovernanceKernel([SQLPolicy(deny=["DROP"])], recorder=trail)
    returned: Dict[str, List[str]] = {}
    unanswered: List[str] = []

    def work(index: int) -> None:
        mine = returned.setdefault(str(index), [])
        for i in range(60):
            decision = kernel.check(Action.sql("DROP TABLE t" if i % 6 == 5 else f"SELECT {index}, {i}"))
            if decision.audit_id is None or decision.decision_id not in trail.committed_in:
                unanswered.append(decision.decision_id)  # returned before the commit that holds it
            mine.append(decision.decision_id)
            if decision.allowed:
                kernel.record_outcome(decision, result="ok", execution_time_ms=0.1)

    workers = [threading.Thread(target=work, args=(index,)) for index in range(8)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    kernel.close()

    assert not unanswered, f"{len(unanswered)} checks returned before their record was committed"
    every = [decision_id for ids in returned.values() for decision_id in ids]
    in_file = _decision_ids_in(path)
    assert sorted(in_file) == sorted(every) and len(set(in_file)) == 480
    result = verify_file(path)
    assert result["valid"] and result["total_entries"] == 480, result
    assert max(trail.group_sizes) > 1, "no two waiting records ever shared a commit"
    assert len(trail.group_sizes) < 480
    late = {
        decision_id: (trail.arrived_after[decision_id], group)
        for decision_id, group in trail.committed_in.items()
        if group > trail.arrived_after[decision_id] + 2
    }
    assert not late, f"records committed later than the commit under way plus one: {late}"


def test_the_writer_thread_commits_every_record_of_one_checking_thread(tmp_path: Path) -> None:
    """``committer="thread"``: the check hands its record to the trail's writer thread and waits
    for that commit; the checking thread itself commits nothing."""
    path = tmp_path / "audit.db"
    trail = _CountingTrail(open_flight_recorder(path), committer="thread")
    committing: List[str] = []
    commit = trail._commit

    def noting_commit(work, *rest) -> None:
        committing.append(threading.current_thread().name)
        commit(work, *rest)

    trail._commit = noting_commit  # type: ignore[method-assign]
    kernel = GovernanceKernel([SQLPolicy(deny=["DROP"])], recorder=trail)
    for i in range(20):
        decision = kernel.check(Action.sql("DROP TABLE t" if i % 5 == 4 else f"SELECT {i}"))
        assert decision.decision_id in trail.committed_in  # committed before the check returned
    assert set(committing) == {"agentos-audit-committer"} and len(committing) == 20
    kernel.close()
    assert verify_file(path)["valid"] and len(_decision_ids_in(path)) == 20


def test_a_committer_that_is_neither_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="committer must be 'checks' or 'thread', got 'disk'"):
        AuditTrail(open_flight_recorder(tmp_path / "audit.db"), committer="disk")


def test_one_thread_commits_on_its_own_thread(tmp_path: Path) -> None:
    """With one checking thread there is nobody to share with: each check leads its own commit,
    and no thread is started for it (outcomes, which nobody waits for, start the committer)."""
    path = tmp_path / "audit.db"
    kernel = GovernanceKernel([SQLPolicy(deny=["DROP"])], recorder=path)
    before = {thread.name for thread in threading.enumerate()}
    for i in range(20):
        assert kernel.check(Action.sql(f"SELECT {i}")).allowed
    started = {thread.name for thread in threading.enumerate()} - before
    assert "agentos-audit-committer" not in started
    assert len(_decision_ids_in(path)) == 20
    kernel.close()


def test_an_outcome_with_no_decision_after_it_is_committed_by_itself(tmp_path: Path) -> None:
    """Nothing waits for an outcome; with no later decision to share a commit with, the trail's
    committer thread commits it alone once it has lingered (no flush, no close)."""
    import time

    path = tmp_path / "audit.db"
    kernel = GovernanceKernel([SQLPolicy()], recorder=path)
    decision = kernel.check(Action.sql("SELECT 1"))
    kernel.record_outcome(decision, result="one row", execution_time_ms=0.5)
    deadline = time.monotonic() + 10
    result = None
    while time.monotonic() < deadline and result is None:
        time.sleep(0.05)
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
        try:
            result = conn.execute("SELECT result FROM audit_log").fetchone()[0]
        finally:
            conn.close()
    assert result == "one row"
    assert verify_file(path)["valid"]
    kernel.close()
