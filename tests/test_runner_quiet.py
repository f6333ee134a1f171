"""A second governed runner in one process prints no upstream warning that reads as a failure.

Agent Lightning's AgentOps tracer warns when the process already has AgentOps patched and a
Lightning span processor installed ("AgentOps already patched", "You might have called
init_worker() multiple times"): what a second runner in one process (an evaluation after
training, a notebook re-run) always finds. The runner reuses what is there, and
``refuse_double_instrumentation`` (run by every ``init_worker``) refuses the one state that is
actually wrong (model calls recorded twice), so the runner keeps those two expected warnings out
of the log while its ``init_worker`` runs, and nothing else.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sqlite3
import subprocess
import sys

import pytest

from agentlightning.contrib.kernel.agentos import GovernanceKernel, SQLPolicy
from agentlightning.contrib.kernel.agentos.audit.trail import RECORDER_LOGGER
from agentlightning.contrib.runner.agentos import AgentOSRunner, governed_tool

EXPECTED_REUSE = ("AgentOps already patched", "init_worker() multiple times", "AgentOps client was already initialized")


def test_a_second_runner_in_one_process_warns_of_nothing_expected(caplog):
    def run_once() -> bool:
        runner = AgentOSRunner([SQLPolicy(deny=["DROP"])], log_violations=False)
        runner.init(lambda task: 1.0)
        return asyncio.run(runner.step("SELECT 1")).success

    with caplog.at_level(logging.INFO):
        assert run_once() and run_once()
    noise = [r.getMessage() for r in caplog.records if any(e in r.getMessage() for e in EXPECTED_REUSE)]
    assert noise == []


def test_the_same_warnings_outside_init_worker_still_show(caplog):
    """The filter lives only while the runner's init_worker runs."""
    runner = AgentOSRunner(GovernanceKernel([SQLPolicy(deny=["DROP"])]), log_violations=False)
    runner.init(lambda task: 1.0)
    with caplog.at_level(logging.INFO):
        assert asyncio.run(runner.step("SELECT 1")).success
        upstream = logging.getLogger("agentlightning.tracer.agentops")
        upstream.warning("You might have called init_worker() multiple times")
    assert any("init_worker() multiple times" in r.getMessage() for r in caplog.records)


# ----------------------------------------------------------------------------- a model's wrong SQL
# A governed tool that raises (the model wrote SQL naming a column that does not exist) is the
# action's outcome: the exception goes to the agent, and the audit trail records it as the
# action's result. Agent OS's FlightRecorder logs every such outcome at ERROR ("ERROR: <trace id> -
# OperationalError: no such column ..."), which a run with no logging configured (a Trainer's runner
# process) prints through Python's last-resort handler: one line that reads as a failure per wrong
# answer of the model. The trail keeps that line out and says it at INFO instead; every other ERROR
# of the recorder still shows.
WRONG_SQL_RUN = """
import asyncio, os, sqlite3, sys
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
from agentlightning.contrib.kernel.agentos import SQLPolicy
from agentlightning.contrib.runner.agentos import AgentOSRunner, governed_tool

db = sqlite3.connect(":memory:", check_same_thread=False)
db.executescript("CREATE TABLE order_items (order_id INTEGER, qty INTEGER);")

def database_query(query):
    return db.execute(query).fetchall()

def agent(task):
    try:
        governed_tool("database_query", database_query)(task)
    except sqlite3.OperationalError as exc:
        print("observation:", exc, flush=True)
        return 0.0
    return 1.0

runner = AgentOSRunner([SQLPolicy(deny=["DROP"])], audit_dir=sys.argv[1])
runner.init(agent)
print("reward", asyncio.run(runner.step("SELECT oi.quantity FROM order_items oi")).governance.task_output, flush=True)
runner.kernel.audit.flush()
"""


def _audit_outcomes(audit_dir) -> list:
    rows = []
    for path in sorted(audit_dir.glob("*.db")):
        with sqlite3.connect(path) as db:
            rows += db.execute("SELECT policy_verdict, violation_reason FROM audit_log").fetchall()
    return rows


@pytest.mark.e2e
def test_a_wrong_sql_answer_prints_no_error_line_and_is_recorded_as_its_outcome(tmp_path):
    script = tmp_path / "wrong_sql.py"
    script.write_text(WRONG_SQL_RUN)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONWARNINGS"}
    done = subprocess.run(
        [sys.executable, str(script), str(tmp_path / "audit")],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert "observation: no such column: oi.quantity" in done.stdout and "reward 0.0" in done.stdout
    printed = done.stdout + done.stderr
    assert [line for line in printed.splitlines() if "ERROR" in line] == []
    outcomes = _audit_outcomes(tmp_path / "audit")
    assert ("error", "OperationalError: no such column: oi.quantity") in outcomes, outcomes


def test_a_tool_that_raised_is_logged_at_info_and_other_recorder_errors_still_show(tmp_path, caplog):
    db = sqlite3.connect(":memory:", check_same_thread=False)

    def database_query(query):
        return db.execute(query).fetchall()

    def agent(task):
        with pytest.raises(sqlite3.OperationalError):
            governed_tool("database_query", database_query)(task)
        return 0.0

    runner = AgentOSRunner([SQLPolicy(deny=["DROP"])], audit_dir=str(tmp_path / "audit"), log_violations=False)
    runner.init(agent)
    with caplog.at_level(logging.INFO):
        assert asyncio.run(runner.step("SELECT quantity FROM nowhere")).success
        runner.kernel.audit.flush()
        # A failure of the recorder itself is an error and shows, through the same logger.
        RECORDER_LOGGER.error("Failed to flush buffer: disk I/O error")
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert errors == ["Failed to flush buffer: disk I/O error"]
    said = [
        r.getMessage()
        for r in caplog.records
        if r.levelno == logging.INFO and "no such table: nowhere" in r.getMessage()
    ]
    assert len(said) == 1 and "raised" in said[0], said
    assert ("error", "OperationalError: no such table: nowhere") in _audit_outcomes(tmp_path / "audit")
