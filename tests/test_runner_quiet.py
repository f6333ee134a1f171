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

from agentlightning.contrib.kernel.agentos import GovernanceKernel, SQLPolicy
from agentlightning.contrib.runner.agentos import AgentOSRunner

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
