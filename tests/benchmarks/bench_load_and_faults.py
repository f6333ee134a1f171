"""Load and faults at full size: governed runner processes against one real `agl store` server, on loopback.

Run it on demand (pytest does not collect ``tests/benchmarks``; ``tests/test_load_and_faults.py``
runs the same scenarios at small size on every test run)::

    python tests/benchmarks/bench_load_and_faults.py            # 4 runner processes x 3000 rollouts, then the faults
    python tests/benchmarks/bench_load_and_faults.py --quick    # ~200 rollouts and small faults (about a minute)
    python tests/benchmarks/bench_load_and_faults.py --json runs/load_and_faults/report.json

What runs, top to bottom (everything on 127.0.0.1, bounded in time; the machinery is the package
``tests/load_harness``, whose docstring says more):

1. ``agl store`` (agentlightning 0.3's in-memory store server) as a subprocess on a free port.
2. LOAD: ``--workers`` runner processes, each an ``AgentOSRunner`` whose kernel is
   ``GovernanceKernel([SQLPolicy(deny=["DROP", "DELETE", "TRUNCATE"])], recorder=audit-<worker>.db)``
   (one Agent OS FlightRecorder file per process), connected to the server with a
   ``LightningStoreClient`` and dequeuing through the runner's normal ``iter()`` loop. The driver
   enqueues ``--rollouts`` tasks; ``--violating-fraction`` of them (exactly, positions shuffled by
   ``--seed``) contain one DROP or DELETE. Every task runs its SQL through a governed tool against
   the worker's own SQLite file. Ground truth is the enqueued task list; the run is checked against
   it: one violation span per violating rollout and none elsewhere (raw span attributes and
   ``governance_stats``), store totals, one blocked FlightRecorder record per violating task, every
   recorder file's hash chain, every database table and row, one executed INSERT per task. Each
   worker samples its RSS every ``--sample-every`` rollouts.
3. FAULTS, each with its own runner processes on the same server:
   a. ``sigkill``: a task writes a marker file in the middle of its first attempt and blocks; the
      driver SIGKILLs that runner process. The attempt's rollout has
      ``RolloutConfig(unresponsive_seconds=..., max_attempts=2, retry_condition=["unresponsive"])``.
   b. ``policies``: ``[SQLPolicy, HangingPolicy]`` with ``policy_timeout_s`` and
      ``[SQLPolicy, RaisingPolicy]``: every action must be blocked (fail closed), nothing executed.
   c. ``restart``: the ``agl store`` process is terminated mid-run and started again on the same
      port; then the FlightRecorder files are re-imported into the new store with the adapter.

Prints progress and a final report; ``--json PATH`` writes every figure. Linux only.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

# Before agentlightning is imported: litellm must not reach for the network.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("AGENTOPS_LOGGING_TO_FILE", "False")
os.environ.setdefault("AGENTOPS_LOG_LEVEL", "ERROR")
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root, for tests.load_harness

import portpicker  # noqa: E402
import psutil  # noqa: E402

from tests.load_harness import (  # noqa: E402
    StoreServer,
    WorkerPool,
    fault_policies,
    fault_sigkill,
    fault_store_restart,
    run_load,
    warm_up_forkserver,
)
from tests.load_harness.scenarios import fresh_dir  # noqa: E402

#: Marks a run directory this script made (and may delete on the next run).
RUN_DIR_MARKER = ".load_and_faults_run"


def fresh_run_dir(path: Path) -> Path:
    """Like :func:`fresh_dir`, but never deletes a non-empty directory this script did not create."""
    path = Path(path)
    if path.exists() and any(path.iterdir()) and not (path / RUN_DIR_MARKER).exists():
        raise SystemExit(f"--run-dir {str(path)!r} is not empty and was not made by this script; refusing to delete it")
    fresh_dir(path)
    (path / RUN_DIR_MARKER).write_text("made by bench_load_and_faults.py; deleted and rebuilt on every run\n")
    return path


def format_report(report: Dict[str, Any]) -> str:
    lines = [f"== load and faults ({report['machine']['cpus']} CPUs, {report['machine']['date']}) =="]
    load = report.get("load")
    if load:
        s, g, a = load["spans"], load["governance_stats"], load["audit"]
        whole = load["governance_stats_whole_store"]
        if whole is not None:
            whole = {
                k: whole[k]
                for k in ("total_rollouts", "total_violations", "rollouts_with_violations", "blocked_actions")
            }
        lines += [
            f"LOAD: {load['rollouts']} rollouts ({load['violating_tasks']} violating) on {load['workers']} "
            f"runner processes: {load['wall_s']} s wall, {load['throughput_rollouts_per_s']} rollouts/s "
            f"(enqueue {load['enqueue_s']} s, not counted)",
            f"  rollouts per worker: {s['rollouts_by_worker']}",
            f"  exactly once (raw spans vs tasks): {s['exactly_once']}  problems={s['problems']}",
            f"  violation spans {s['violation_spans']} / expected {s['expected_violations']}; "
            f"check spans {s['check_spans']} / {s['expected_checks']}; "
            f"blocked checks {s['blocked_check_spans']} / {s['expected_blocked']}",
            f"  governance_stats(store, ids): rollouts={g['total_rollouts']} violations={g['total_violations']} "
            f"rollouts_with_violations={g['rollouts_with_violations']} blocked={g['blocked_actions']} "
            f"checks={g['total_checks']} duplicates={g['duplicate_spans']}",
            f"  governance_stats(store) whole store: {whole}",
            f"  FlightRecorder files: {len(a['files'])}, all hash chains valid: {a['all_valid']}, "
            f"records {a['records']}, blocked {a['blocked']}, pending {a['pending']}; "
            f"one blocked record per violating task: {load['audit_one_blocked_record_per_violating_task']}",
            f"  databases intact: {load['world']['all_intact']}; "
            f"each task's INSERT executed exactly once: {load['insert_executed_once_per_task']}",
            "  memory per worker (MiB; slope after the first 20% of its rollouts, per 1000 rollouts):",
        ]
        for name, r in load["rss"].items():
            lines.append(
                f"    {name}: {r['rollouts']} rollouts, RSS first {r['rss_first_mib']} last {r['rss_last_mib']} "
                f"max {r['rss_max_mib']} slope {r['rss_slope_mib_per_1000_rollouts']}; "
                f"USS {r['uss_first_mib']} -> {r['uss_last_mib']} slope {r['uss_slope_mib_per_1000_rollouts']}; "
                f"FlightRecorder _trace_data {r['trace_data_entries_last']} entries {r['trace_data_mib_last']} MiB "
                f"(slope {r['trace_data_slope_mib_per_1000_rollouts']})"
            )
            lines.append(
                f"      native: SQLite {r['sqlite_mib_first']} -> {r['sqlite_mib_last']} MiB; "
                f"glibc heap in use {r['malloc_in_use_mib_first']} -> {r['malloc_in_use_mib_last']} MiB "
                f"(free in heap {r['malloc_free_mib_last']}); "
                f"Python blocks {r['python_blocks_first']} -> {r['python_blocks_last']}"
            )
            if "tracemalloc" in r:
                t = r["tracemalloc"]
                lines.append(f"      traced MiB by rollouts: {t['traced_mib_per_sample']}")
                lines.append(
                    f"      grew between rollout {t['baseline_at_rollouts']} and {t['last_at_rollouts']} "
                    "(site, bytes, objects):"
                )
                lines += [f"        {site} {size:+,} B {count:+,}" for site, size, count in t["top_growth_sites"][:5]]
        lines.append(
            f"  CPU seconds during the load: {load['cpu_seconds_during_load']}; "
            f"load average start/end {load['loadavg_start_end']}; "
            f"agl store RSS {load['server_rss_mib'][0]} -> {load['server_rss_mib'][1]} MiB "
            f"holding {load['store_statistics_end'].get('total_spans')} spans"
        )
        lines.append(f"  worker log lines: {load['worker_logs']['levels']}; workers stopped: {load['stopped']}")
    k = report.get("sigkill")
    if k:
        attempts = [(x["sequence_id"], x["status"], x["worker_id"]) for x in k["kill_rollout_attempts"]]
        victim = k["victim_recorder"]
        lines += [
            f"SIGKILL: killed {k['victim']} (exit code {k['victim_exitcode']}) mid-rollout; "
            f"attempts of that rollout: {attempts}, rollout {k['kill_rollout_status']}",
            f"  killed attempt marked after {k['killed_attempt_marked_after_s']} s "
            f"(unresponsive_seconds={k['unresponsive_seconds']}); all {k['rollouts']} rollouts finished "
            f"{k['all_finished_after_kill_s']} s after the kill; "
            f"surviving workers: {k['rollouts_by_surviving_workers']}",
            f"  exactly once on latest attempts: {k['spans']['exactly_once']}; "
            f"killed attempt spans in the store: {k['killed_attempt_spans_in_store']}",
            f"  victim FlightRecorder: valid={victim['valid']} records={victim['records']} "
            f"pending={victim['pending']}; killed attempt made {k['killed_attempt_decisions_made']} decisions, "
            f"on disk: {k['victim_recorder_kill_rollout_queries_on_disk']} (lost {k['victim_records_lost']}); "
            f"its blocked record: {k['victim_blocked_record_of_killed_attempt']}",
            f"  re-import of the victim's file: {k['reimport_of_victim_file']}; "
            f"governance_stats unchanged: {k['governance_stats_unchanged_by_import']}",
            f"  databases intact: {k['world']['all_intact']}; the killed task's INSERT ran "
            f"{k['kill_task_insert_executions']} times (killed attempt + retry); "
            f"every other INSERT once: {k['other_inserts_executed_once']}",
        ]
    p = report.get("policies")
    if p:
        for kind, r in p.items():
            spans, audit = r["spans"], r["audit"]
            lines += [
                f"POLICY {kind.upper()}: {r['kernel']}",
                f"  {r['rollouts']} rollouts, {r['actions']} actions: blocked checks {spans['blocked_check_spans']}, "
                f"violation spans {spans['violation_spans']} / expected {spans['expected_violations']}, "
                f"exactly once {spans['exactly_once']}, statements executed {r['statements_executed']}, "
                f"databases intact {r['world']['all_intact']}",
                f"  seconds per action: median {r['seconds_per_action_median']}, max {r['seconds_per_action_max']}; "
                f"violations: {r['fault_policy_violation_descriptions']}",
                f"  FlightRecorder: valid {audit['all_valid']}, records {audit['records']}, "
                f"blocked {audit['blocked']}; threads {r['threads']}; exit after SIGTERM: {r['exit']}",
            ]
    r = report.get("restart")
    if r:
        audit = r["audit"]
        lines += [
            f"RESTART: agl store terminated after {r['finished_before_stop']}/{r['batch_a']} rollouts of batch A; "
            f"back after {r['outage_s']} s (startup {r['server_startup_s']} s); "
            f"runners alive: {r['runners_alive_after_restart']}",
            f"  lost: {r['lost_on_restart']}",
            f"  runner log lines from the stop to the end of batch B: {r['runner_log_lines_after_stop']['levels']}; "
            f"new server's HTTP 500s for rollouts it never had: {r['new_server_errors_for_unknown_rollouts']}",
            f"  batch B ({r['batch_b']} rollouts) after the restart: exactly once "
            f"{r['batch_b_spans']['exactly_once']}, {r['batch_b_wall_s']} s, "
            f"by worker {r['batch_b_rollouts_by_worker']}",
            f"  FlightRecorder files: valid {audit['all_valid']}, records {audit['records']}, "
            f"blocked {audit['blocked']} "
            f"(batch A {r['blocked_records_batch_a']} of {r['batch_a_violating_tasks']} violating tasks)",
            f"  re-import: {r['reimport']}",
            f"  governance_stats unchanged by the import: {r['governance_stats_unchanged_by_import']}; "
            f"databases intact: {r['world']['all_intact']}",
        ]
    return "\n".join(lines)


def machine_info() -> Dict[str, Any]:
    return {
        "cpus": os.cpu_count(),
        "memory_gib": round(psutil.virtual_memory().total / 2**30, 1),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "date": datetime.datetime.now().strftime("%Y-%m-%d %H:%M"),
    }


#: The numeric options: flag, default (its type is the option's) and help.
NUMERIC_OPTIONS: Tuple[Tuple[str, float, str], ...] = (
    ("--workers", 4, "runner processes in the load run"),
    ("--rollouts", 3000, "tasks enqueued in the load run"),
    ("--violating-fraction", 0.1, "fraction of tasks with one DROP/DELETE (exact)"),
    ("--seed", 0, "seed of the task positions"),
    ("--sample-every", 250, "each worker samples its RSS every this many rollouts"),
    ("--poll-interval", 0.05, "runner poll interval when the queue is empty (s)"),
    ("--kill-workers", 3, "runner processes in the SIGKILL fault"),
    ("--kill-rollouts", 120, "ordinary tasks enqueued after the task that gets killed"),
    ("--unresponsive-seconds", 2.0, "the killed rollout's RolloutConfig.unresponsive_seconds (scanned every 10 s)"),
    ("--policy-rollouts", 10, "rollouts for each failing policy (hang, raise)"),
    ("--policy-timeout", 0.2, "GovernanceKernel policy_timeout_s in the policy fault"),
    ("--hang-seconds", 60.0, "how long the hanging policy hangs per call"),
    ("--restart-workers", 3, "runner processes in the store-restart fault"),
    ("--restart-before", 600, "tasks enqueued before the store is restarted (batch A)"),
    ("--restart-after", 150, "tasks enqueued after the restart (batch B)"),
    ("--restart-at", 0.3, "restart once this fraction of batch A has finished"),
    ("--port", 0, "port of agl store on 127.0.0.1 (0: a free one)"),
    ("--timeout", 900.0, "give up on a phase after this many seconds"),
)


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter
    )
    for flag, default, help_text in NUMERIC_OPTIONS:
        parser.add_argument(flag, type=type(default), default=default, help=help_text)
    parser.add_argument(
        "--trace-memory",
        action="store_true",
        help="trace Python allocations in each load worker (tracemalloc, slower) and report the code "
        "lines whose allocations grew after the first --sample-every rollouts",
    )
    parser.add_argument(
        "--faults",
        default="sigkill,policies,restart",
        help="comma-separated faults to run after the load: sigkill, policies, restart (or 'none')",
    )
    parser.add_argument("--skip-load", action="store_true", help="run only the faults")
    parser.add_argument(
        "--run-dir",
        type=Path,
        default=Path("runs/load_and_faults"),
        help="working directory (databases, audit files, logs)",
    )
    parser.add_argument("--json", type=Path, default=None, help="write every figure to this JSON file")
    parser.add_argument("--quick", action="store_true", help="small run: 3 workers x 200 rollouts, small faults")
    args = parser.parse_args(argv)
    if args.quick:
        args.workers, args.rollouts, args.sample_every = 3, 200, 25
        args.kill_rollouts, args.policy_rollouts = 30, 5
        args.restart_workers, args.restart_before, args.restart_after = 2, 80, 30
    faults = [f.strip() for f in args.faults.split(",") if f.strip() and f.strip() != "none"]
    unknown = set(faults) - set(FAULTS)
    if unknown:
        parser.error(f"unknown faults {sorted(unknown)}")
    args.fault_list = faults
    if min(args.workers, args.kill_workers, args.restart_workers) < 1 or args.rollouts < 1:
        parser.error("workers and rollouts must be >= 1")
    if args.kill_workers < 2:
        parser.error("--kill-workers must be >= 2 (one is killed, the others carry on)")
    return args


#: The options of the load run, each named as the keyword of run_load it sets.
LOAD_OPTIONS = (
    "workers",
    "rollouts",
    "violating_fraction",
    "seed",
    "sample_every",
    "poll_interval",
    "timeout",
    "trace_memory",
)

#: The faults in the order they run after the load, each with its function and, for each of its
#: keywords (besides the server, pool, run_dir, poll_interval and timeout every phase takes), the
#: option that sets it.
FAULTS: Dict[str, Tuple[Callable[..., Dict[str, Any]], Dict[str, str]]] = {
    "sigkill": (
        fault_sigkill,
        {
            "workers": "kill_workers",
            "rollouts": "kill_rollouts",
            "violating_fraction": "violating_fraction",
            "unresponsive_seconds": "unresponsive_seconds",
        },
    ),
    "policies": (
        fault_policies,
        {"rollouts": "policy_rollouts", "policy_timeout_s": "policy_timeout", "hang_s": "hang_seconds"},
    ),
    "restart": (
        fault_store_restart,
        {
            "workers": "restart_workers",
            "rollouts_before": "restart_before",
            "rollouts_after": "restart_after",
            "stop_at_fraction": "restart_at",
            "violating_fraction": "violating_fraction",
        },
    ),
}


def main(argv: Optional[List[str]] = None) -> Dict[str, Any]:
    args = parse_args(argv)
    run_dir = fresh_run_dir(args.run_dir)
    port = args.port or portpicker.pick_unused_port()
    server = StoreServer(port, run_dir / "agl-store.log")
    pool = WorkerPool()
    command = [Path(sys.argv[0]).name] + (argv if argv is not None else sys.argv[1:])
    report: Dict[str, Any] = {
        "machine": machine_info(),
        "command": " ".join(command),
        "args": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
    }
    t_start = time.monotonic()
    try:
        server.launch()
        warm_up_forkserver()
        report["store_startup_s"] = round(server.wait_healthy(), 1)
        print(f"agl store up on {server.url} after {report['store_startup_s']}s", flush=True)
        if not args.skip_load:
            settings = {option: getattr(args, option) for option in LOAD_OPTIONS}
            report["load"] = run_load(server, pool, run_dir, **settings)
        for fault, (run_fault, options) in FAULTS.items():
            if fault in args.fault_list:
                settings = {keyword: getattr(args, option) for keyword, option in options.items()}
                report[fault] = run_fault(
                    server, pool, run_dir, poll_interval=args.poll_interval, timeout=args.timeout, **settings
                )
    finally:
        pool.close()
        server.close()
    report["total_wall_s"] = round(time.monotonic() - t_start, 1)
    print(format_report(report), flush=True)
    print(f"total wall time {report['total_wall_s']} s", flush=True)
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=2, default=str))
        print(f"wrote {args.json}", flush=True)
    return report


if __name__ == "__main__":
    main()
