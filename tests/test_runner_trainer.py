"""AgentOSRunner inside the real agentlightning Trainer: client-server strategy, two runner
processes, a real SQLite database, the real kernel, FlightRecorder files per process."""

from __future__ import annotations

import json
import sqlite3

import portpicker
import pytest

import agentlightning as agl

from agentlightning.contrib.kernel.agentos import GovernanceKernel, SQLPolicy
from agentlightning.contrib.reward.agentos import PolicyReward
from agentlightning.contrib.runner.agentos import AgentOSRunner
from agentlightning.contrib.runner.agentos.hosts import parse_audit_file_name

from .conftest import make_shop_db, table_counts, verified_blocked_records
from .runner_agents import SQLAgent, make_collecting_algorithm, mixed_sql_tasks

# End to end (the Trainer's server and two runner processes): minutes; `pytest -m "not e2e"` leaves it out.
pytestmark = pytest.mark.e2e

BAD = ["DROP TABLE users", "DELETE/**/FROM orders", "SELECT 1; DROP TABLE orders", "TRUNCATE users"]
GOOD = ["SELECT COUNT(*) FROM users", "SELECT 'DROP TABLE users'", "UPDATE users SET dropped_at = 'x' WHERE id = 1"]
N_ROLLOUTS = 24


@pytest.fixture(scope="module")
def trainer_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("trainer")
    db = tmp / "shop.db"
    make_shop_db(db)
    before = table_counts(db)
    tasks = mixed_sql_tasks(str(db), N_ROLLOUTS, GOOD, BAD, second_bad_every=8, sleep=0.1)
    result_path = tmp / "result.json"
    kernel = GovernanceKernel([SQLPolicy(deny=["DROP", "DELETE", "TRUNCATE"], dialect="sqlite")])
    runner = AgentOSRunner(
        kernel, audit_dir=tmp / "audit", poll_interval=0.1, log_violations=False, reward_fn=PolicyReward(kernel)
    )
    port = portpicker.pick_unused_port()
    trainer = agl.Trainer(
        algorithm=make_collecting_algorithm(tasks, str(result_path), port), runner=runner, n_runners=2, port=port
    )
    trainer.fit(SQLAgent())
    result = json.loads(result_path.read_text())
    return {"tasks": tasks, "result": result, "db": db, "before": before, "audit_dir": tmp / "audit"}


def _expected_violations(task) -> int:
    return sum(q in BAD for q in task["queries"])


def test_every_rollout_succeeded_on_both_runner_processes(trainer_run):
    rollouts = trainer_run["result"]["rollouts"].values()
    assert {r["status"] for r in rollouts} == {"succeeded"}
    assert len({r["worker_id"] for r in rollouts}) == 2


def test_each_violation_is_one_span_of_its_own_rollout_and_attempt(trainer_run):
    tasks = trainer_run["tasks"]
    for rollout_id, rollout in trainer_run["result"]["rollouts"].items():
        task = tasks[rollout["task_index"]]
        checks = [s for s in rollout["spans"] if s["attributes"].get("agentos.kind") == "check"]
        violations = [s for s in rollout["spans"] if s["attributes"].get("agentos.kind") == "violation"]
        # The store keeps the spans of the checks with a violation (check_spans="violations", the
        # default; the summary below counts every check, the audit trail records each one).
        assert len(checks) == _expected_violations(task)
        assert len(violations) == _expected_violations(task)
        keys = {
            (s["attributes"]["agentos.decision_id"], s["attributes"]["agentos.violation_index"]) for s in violations
        }
        assert len(keys) == len(violations)  # no duplicates
        for span in checks + violations:
            assert span["rollout_id"] == rollout_id and span["attempt_id"] == rollout["attempt_id"]
        for span in checks:  # named for the dashboard, whichever path wrote them (OTLP or the batch)
            assert span["name"] == f"agentos.check: {span['attributes']['agentos.verdict']} database_query"
        for span in violations:
            assert span["name"] == "agentos.violation: SQLPolicy (critical) penalty -100.0, blocked"
            assert span["attributes"]["agentos.policy_name"] == "SQLPolicy"
            assert span["attributes"]["agentos.severity"] == "critical"
            assert span["attributes"]["agentos.action_blocked"] is True
        summary = rollout["metadata"]["agentos"]
        assert summary["violations"] == _expected_violations(task) and summary["checks"] == len(task["queries"])


def test_the_stored_final_reward_is_the_governed_one(trainer_run):
    """find_final_reward(store.query_spans(rollout_id, "latest")) in the algorithm process is
    PolicyReward's value: the agent's own reward (fraction of its queries that ran) plus -100 per
    violation or +5 when clean, clamped at -100; the agent's unshaped float is never stored."""
    tasks = trainer_run["tasks"]
    finals = set()
    for rollout in trainer_run["result"]["rollouts"].values():
        task = tasks[rollout["task_index"]]
        violations = _expected_violations(task)
        base = 1 - violations / len(task["queries"])
        expected = max(-100.0, base - 100.0 * violations) if violations else base + 5.0
        assert rollout["final_reward"] == pytest.approx(expected)
        finals.add(round(expected, 6))
        reward_spans = [
            s for s in rollout["spans"] if any(k.startswith("agentlightning.reward") for k in s["attributes"])
        ]
        assert reward_spans == [rollout["spans"][-1]]  # one reward span, the last one
        assert reward_spans[0]["name"].startswith(f"agentos.reward: final {round(expected, 4)!r} (base ")
        attributes = reward_spans[0]["attributes"]
        assert attributes["agentos.cost"] == 10.0 * violations and attributes["agentos.violation_count"] == violations
        summary = rollout["metadata"]["agentos"]["reward"]
        assert summary["final"] == pytest.approx(expected) and summary["base"] == pytest.approx(base)
    assert len(finals) >= 3  # clean, one violation and a clamped rollout all occurred


def test_store_statistics_equal_ground_truth(trainer_run):
    tasks = trainer_run["tasks"]
    stats = trainer_run["result"]["stats"]
    expected = sum(_expected_violations(t) for t in tasks)
    assert expected > 0
    assert stats["total_rollouts"] == N_ROLLOUTS
    assert stats["total_violations"] == expected == stats["blocked_actions"]
    assert stats["total_checks"] == sum(len(t["queries"]) for t in tasks)
    assert stats["rollouts_with_violations"] == sum(_expected_violations(t) > 0 for t in tasks)
    assert stats["violation_rate"] == pytest.approx(stats["rollouts_with_violations"] / N_ROLLOUTS)
    assert stats["violations_per_rollout"] == pytest.approx(expected / N_ROLLOUTS)
    assert stats["duplicate_spans"] == 0
    assert trainer_run["result"]["client_stats"] == stats  # the same through an HTTP client of the store server


def test_no_blocked_statement_reached_the_database(trainer_run):
    assert table_counts(trainer_run["db"]) == trainer_run["before"]
    names = [
        r[0] for r in sqlite3.connect(trainer_run["db"]).execute("SELECT name FROM sqlite_master WHERE type='table'")
    ]
    assert sorted(names) == ["orders", "users"]


def test_each_runner_process_kept_its_own_verifiable_audit_file(trainer_run):
    names, blocked = verified_blocked_records(trainer_run["audit_dir"])
    assert sorted(parse_audit_file_name(n)[0] for n in names) == [0, 1]  # worker-<n>@<host>-<pid>.db
    assert blocked == sum(_expected_violations(t) for t in trainer_run["tasks"])
