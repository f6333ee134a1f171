"""Load and faults at small scale, with the harness of tests/benchmarks/bench_load_and_faults.py (tests/load_harness).

One real `agl store` server subprocess for the module; runner processes (real ``AgentOSRunner``,
real Agent OS FlightRecorder files, real SQLite databases) are forked from a forkserver that has
imported agentlightning once. Each scenario starts its own runner processes; the fixture kills
whatever is left, even when a scenario fails. Scenarios run in file order: load, SIGKILL, failing
policies, store restart (the restart wipes the in-memory store, so it comes last).
"""

from __future__ import annotations

import sys
from pathlib import Path

import portpicker
import pytest

from agentlightning.contrib.runner.agentos.hosts import parse_audit_file_name, parse_worker_name

from . import load_harness as lf

RECIPE_DIR = Path(__file__).resolve().parents[1] / "contrib" / "recipes" / "agentos"

# forkserver runner processes, signal.sigtimedwait and /proc-based memory figures: Linux only.
# End to end (an `agl store` server, runner processes, faults): minutes; `pytest -m "not e2e"` leaves it out.
pytestmark = [
    pytest.mark.skipif(sys.platform != "linux", reason="the load-and-faults harness runs on Linux"),
    pytest.mark.e2e,
]

N_LOAD, LOAD_WORKERS, FRACTION = 200, 3, 0.1
N_VIOLATING = 20  # round(N_LOAD * FRACTION): the ground truth's violating tasks
N_KILL = 20
N_POLICY = 4
POLICY_TIMEOUT_S = 0.2


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("load_and_faults")
    server = lf.StoreServer(portpicker.pick_unused_port(), run_dir / "agl-store.log")
    pool = lf.WorkerPool()
    try:
        server.launch()
        lf.warm_up_forkserver()  # imports agentlightning while the server does the same
        server.wait_healthy(timeout=120)
        yield server, pool, run_dir  # what every scenario takes first
    finally:
        pool.close()
        server.close()


# ----------------------------------------------------------------------------- load
@pytest.fixture(scope="module")
def load(cluster):
    return lf.run_load(
        *cluster,
        workers=LOAD_WORKERS,
        rollouts=N_LOAD,
        violating_fraction=FRACTION,
        seed=0,
        sample_every=20,
        timeout=90,
    )


def test_load_tasks_are_the_ground_truth():
    tasks = lf.make_tasks(N_LOAD, FRACTION, seed=0)
    assert sum(t["violating"] for t in tasks) == round(N_LOAD * FRACTION) == N_VIOLATING
    for task in tasks:
        destructive = [q for q in task["queries"] if q in lf.VIOLATING_SQL]
        assert len(destructive) == task["violating"]
    assert len({t["task_index"] for t in tasks}) == N_LOAD


def test_load_every_violating_rollout_has_exactly_one_violation_span_and_no_other_has_any(load):
    spans = load["spans"]
    assert spans["rollouts"] == N_LOAD and spans["violating_rollouts"] == N_VIOLATING
    assert spans["problems"] == {k: 0 for k in spans["problems"]}, spans["problem_examples"]
    assert spans["exactly_once"] is True
    assert spans["violation_spans"] == spans["expected_violations"] == N_VIOLATING
    assert spans["blocked_check_spans"] == spans["check_spans"] == N_VIOLATING  # clean checks: no span
    assert (
        spans["summarised_checks"]
        == spans["expected_checks"]
        == sum(len(t["queries"]) for t in lf.make_tasks(N_LOAD, FRACTION, seed=0))
    )
    assert spans["violations_by_policy"] == {"SQLPolicy": N_VIOLATING}


def test_load_ran_on_every_runner_process(load):
    by_worker = load["spans"]["rollouts_by_worker"]
    assert sorted(parse_worker_name(name)[0] for name in by_worker) == list(
        range(LOAD_WORKERS)
    )  # Worker-<n>@<host>-<pid>
    assert all(n > 0 for n in by_worker.values()) and sum(by_worker.values()) == N_LOAD
    assert load["throughput_rollouts_per_s"] > 0 and load["wall_s"] > 0
    for name, stopped in load["stopped"].items():
        assert stopped["exited_after_sigterm"] and stopped["exitcode"] == 0 and stopped["error"] is None, (
            name,
            stopped,
        )


def test_load_governance_stats_equal_the_ground_truth(load):
    expected_checks = load["spans"]["expected_checks"]
    for stats in (load["governance_stats"], load["governance_stats_whole_store"]):
        assert stats is not None  # the load ran first, on an empty store
        assert stats["total_rollouts"] == N_LOAD
        assert stats["total_violations"] == stats["rollouts_with_violations"] == stats["blocked_actions"] == N_VIOLATING
        assert stats["total_checks"] == expected_checks
        assert stats["duplicate_spans"] == 0
    assert load["store_rollouts_before"] == 0


def test_load_flight_recorders_hold_one_blocked_record_per_violating_task(load):
    audit = load["audit"]
    assert sorted(audit["files"]) == [f"audit-load-{i}.db" for i in range(LOAD_WORKERS)]
    assert audit["all_valid"] is True and all(f["valid"] for f in audit["files"].values())
    assert audit["blocked"] == N_VIOLATING
    assert load["audit_one_blocked_record_per_violating_task"] is True
    assert load["audit_records_equal_checks"] is True  # every allowed record reached disk by shutdown


def test_load_no_blocked_action_executed_and_every_allowed_one_exactly_once(load):
    world = load["world"]
    assert world["all_intact"] is True
    for counts in world["databases"].values():
        assert counts["users"] == lf.N_USERS and counts["orders"] == lf.N_ORDERS
    assert sum(c["events"] for c in world["databases"].values()) == N_LOAD
    assert load["insert_executed_once_per_task"] is True


def test_load_memory_is_sampled_and_the_recorder_cache_stays_small(load):
    rss = load["rss"]
    assert sorted(rss) == [f"load-{i}" for i in range(LOAD_WORKERS)]
    for name, r in rss.items():
        assert r["samples"] >= 3 and r["rss_first_mib"] > 0 and r["rss_max_mib"] >= r["rss_last_mib"] > 0, (name, r)
        # Agent OS's FlightRecorder caches every record in _trace_data; the audit trail must drop
        # entries once their record is final, or memory grows with every decision.
        assert r["trace_data_entries_last"] < 20, (name, r)


# ----------------------------------------------------------------------------- SIGKILL
@pytest.fixture(scope="module")
def sigkill(cluster):
    return lf.fault_sigkill(
        *cluster,
        workers=3,
        rollouts=N_KILL,
        violating_fraction=FRACTION,
        unresponsive_seconds=1.0,
        timeout=60,
    )


def test_sigkill_lands_mid_rollout_and_the_attempt_ends_unresponsive_then_retried(sigkill):
    assert sigkill["victim_exitcode"] == -9
    attempts = sigkill["kill_rollout_attempts"]
    victim_worker = 100 + int(sigkill["victim"].split("-")[1])
    assert [(a["sequence_id"], a["status"]) for a in attempts] == [(1, "unresponsive"), (2, "succeeded")]
    workers = [parse_worker_name(a["worker_id"])[0] for a in attempts]
    assert workers[0] == victim_worker and workers[1] != victim_worker
    assert sigkill["kill_rollout_status"] == "succeeded"


def test_sigkill_other_runners_finish_everything(sigkill):
    spans = sigkill["spans"]
    assert spans["problems"] == {k: 0 for k in spans["problems"]}, spans["problem_examples"]
    victim_worker = 100 + int(sigkill["victim"].split("-")[1])
    assert victim_worker not in [parse_worker_name(name)[0] for name in sigkill["rollouts_by_surviving_workers"]]
    assert sum(sigkill["rollouts_by_surviving_workers"].values()) == N_KILL
    assert all(s["exited_after_sigterm"] and s["exitcode"] == 0 for s in sigkill["survivors_stopped"].values())


def test_sigkill_victim_recorder_verifies_and_kept_the_blocked_record(sigkill):
    assert sigkill["victim_recorder"]["valid"] is True
    assert sigkill["victim_blocked_record_of_killed_attempt"] == 1
    on_disk = sigkill["victim_recorder_kill_rollout_queries_on_disk"]
    made = [
        "SELECT COUNT(*) FROM users",
        "INSERT INTO events (task_index) VALUES (0)",
        "DROP TABLE users",
        "SELECT SUM(total) FROM orders",
    ]
    # In order, nothing invented; at least everything up to the blocked DROP (flushed before the check returned).
    assert on_disk == made[: len(on_disk)] and len(on_disk) >= 3
    assert sigkill["victim_records_lost"] == len(made) - len(on_disk)


def test_sigkill_reimport_keeps_the_lost_violation_and_leaves_the_killed_attempt_unresponsive(sigkill):
    """The killed attempt's lost violation is imported from the victim's file; the attempt is
    unresponsive, and a span would turn it back into running, so the span goes to the
    audit rollout, marked with the killed attempt, and the attempt stays as the store left it."""
    reimport = sigkill["reimport_of_victim_file"]
    assert reimport["added"] == len(sigkill["victim_recorder_kill_rollout_queries_on_disk"])
    assert reimport["added_again"] == 0
    assert reimport["audit_rollout_blocked_spans_of_killed_attempt"] == 1
    assert reimport["killed_attempt_audit_blocked_spans"] == 0
    assert reimport["killed_attempt_status_after_import"] == "unresponsive"
    assert sigkill["governance_stats_unchanged_by_import"] is True


def test_sigkill_nothing_destroyed_but_the_retry_repeats_side_effects(sigkill):
    assert sigkill["world"]["all_intact"] is True
    assert sigkill["kill_task_insert_executions"] == 2  # killed attempt and its retry both ran the INSERT
    assert sigkill["other_inserts_executed_once"] is True


# ----------------------------------------------------------------------------- failing policies
@pytest.fixture(scope="module")
def policies(cluster):
    return lf.fault_policies(
        *cluster,
        rollouts=N_POLICY,
        policy_timeout_s=POLICY_TIMEOUT_S,
        hang_s=20.0,
        exit_timeout=3.0,
        timeout=60,
    )


@pytest.mark.parametrize("kind", ["hang", "raise"])
def test_failing_policy_blocks_every_action_and_nothing_runs(policies, kind):
    r = policies[kind]
    spans = r["spans"]
    assert spans["problems"] == {k: 0 for k in spans["problems"]}, spans["problem_examples"]
    assert spans["blocked_check_spans"] == spans["check_spans"] == r["actions"] > 0
    assert spans["violation_spans"] == r["actions"] + spans["violating_rollouts"]
    assert r["statements_executed"] == 0 and r["world"]["all_intact"] is True
    assert r["governance_stats"]["blocked_actions"] == r["actions"]
    assert r["audit"]["all_valid"] is True and r["audit"]["records"] == r["audit"]["blocked"] == r["actions"]
    fault = "timed out after 0.2s" if kind == "hang" else "raised ConnectionError"
    assert sum(r["fault_policy_violation_descriptions"].values()) == r["actions"]
    assert all(fault in d and "failing closed" in d for d in r["fault_policy_violation_descriptions"])


def test_hanging_policy_blocks_within_about_the_timeout(policies):
    r = policies["hang"]
    assert r["seconds_per_action_median"] >= POLICY_TIMEOUT_S
    assert r["seconds_per_action_max"] < POLICY_TIMEOUT_S + 1.0
    # The hung policy threads are daemons: they do not keep the runner process from exiting.
    assert r["exit"]["exited_after_sigterm"] is True


def test_raising_policy_blocks_at_once(policies):
    assert policies["raise"]["seconds_per_action_max"] < 1.0
    assert policies["raise"]["exit"]["exited_after_sigterm"] is True


# ----------------------------------------------------------------------------- store restart (last: it wipes the store)
@pytest.fixture(scope="module")
def restart(cluster):
    return lf.fault_store_restart(
        *cluster,
        workers=2,
        rollouts_before=60,
        rollouts_after=20,
        stop_at_fraction=0.3,
        violating_fraction=FRACTION,
        timeout=90,
    )


def test_restart_loses_the_in_memory_store_but_runners_reconnect(restart):
    lost = restart["lost_on_restart"]
    assert lost["rollouts_in_new_store"] == 0 and lost["resources_in_new_store"] is False
    assert (
        lost["store_before_stop"]["total_rollouts"] >= restart["batch_a"]
        and lost["store_after_restart"]["total_spans"] == 0
    )
    assert all(restart["runners_alive_after_restart"].values())
    spans = restart["batch_b_spans"]
    assert spans["problems"] == {k: 0 for k in spans["problems"]}, spans["problem_examples"]
    assert sum(restart["batch_b_rollouts_by_worker"].values()) == restart["batch_b"]
    assert all(s["exitcode"] == 0 and s["error"] is None for s in restart["stopped"].values())


def test_restart_trail_reimported_from_the_flight_recorders_exactly_once(restart):
    reimport = restart["reimport"]
    assert restart["audit"]["all_valid"] is True
    assert reimport["audit_blocked_spans"] == restart["audit"]["blocked"] > 0
    assert reimport["equals_blocked_records_on_disk"] and reimport["equals_final_records_on_disk"]
    assert set(reimport["added_second"].values()) == {0} and set(reimport["added_by_fresh_adapters"].values()) == {0}
    assert restart["blocked_records_batch_b_exact"] is True
    assert restart["blocked_records_batch_a_only_violating_at_most_once"] is True
    assert restart["governance_stats_unchanged_by_import"] is True
    assert restart["world"]["all_intact"] is True


# ----------------------------------------------------------------------------- the recipe a user runs
def test_governed_load_recipe_finds_every_violation_and_nothing_destructive_runs(tmp_path):
    sys.path.insert(0, str(RECIPE_DIR))
    try:
        import governed_load
    finally:
        sys.path.remove(str(RECIPE_DIR))
    figures = governed_load.main(["--quick", "--workdir", str(tmp_path)])  # 2 runner processes, 60 rollouts
    assert figures["succeeded"] == figures["rollouts"] == 60
    assert figures["violations_found"] == figures["violating_tasks"] == 6
    assert figures["violations_where_expected"] is True
    stats = figures["governance_stats"]
    assert stats["total_rollouts"] == 60 and stats["total_violations"] == stats["blocked_actions"] == 6
    recorders = figures["flight_recorders"]
    assert sorted(parse_audit_file_name(name)[0] for name in recorders) == [0, 1]
    assert all(r["valid"] for r in recorders.values())
    assert sum(r["blocked"] for r in recorders.values()) == 6
    assert figures["rows_destroyed"] == 0 and figures["inserts_executed"] == 60
