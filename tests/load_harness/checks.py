"""Checks against the ground truth: spans per rollout, FlightRecorder files, runner logs and CPU."""

from __future__ import annotations

import contextlib
from collections import Counter
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, List, Optional

import psutil

from agentlightning.contrib.adapter.agentos import adapters_for_directory


def expect_sql_only(task: Dict[str, Any]) -> Dict[str, int]:
    """What the SQL-only kernel must record for ``task``: one check per statement, one blocked
    statement and one violation if the task is violating."""
    return {"checks": len(task["queries"]), "violations": task["violating"], "blocked": task["violating"]}


def verify_rollouts(
    tasks_by_id: Dict[str, Dict[str, Any]],
    collected: Dict[str, Dict[str, Any]],
    expect: Callable[[Dict[str, Any]], Dict[str, int]] = expect_sql_only,
) -> Dict[str, Any]:
    """Compare the spans of each rollout's latest attempt with the ground truth (raw span attributes)."""
    problems: Dict[str, List[str]] = {
        k: []
        for k in (
            "missing",
            "not_succeeded",
            "violating_without_exactly_one_violation_span",
            "clean_with_violation_span",
            "wrong_violation_count",
            "wrong_check_count",
            "wrong_blocked_count",
            "span_in_wrong_attempt",
            "duplicate_violation_span",
        )
    }
    violation_spans = check_spans = blocked_checks = summarised_checks = 0
    per_worker: Counter = Counter()
    policies: Counter = Counter()
    for rollout_id, task in tasks_by_id.items():
        info = collected.get(rollout_id)
        if info is None or info.get("attempt") is None:
            problems["missing"].append(rollout_id)
            continue
        if info["status"] != "succeeded":
            problems["not_succeeded"].append(rollout_id)
        per_worker[info["attempt"]["worker_id"]] += 1
        spans = info.get("spans", [])
        checks = [s for s in spans if s["is_check"]]
        violations = [s for s in spans if s["is_violation"]]
        raw_violations = [s for s in spans if s["kind"] == "violation"]
        assert len(raw_violations) == len(violations)  # is_violation_span and the raw attribute agree
        expected = expect(task)
        violation_spans += len(violations)
        check_spans += len(checks)
        blocked = sum(s["verdict"] == "blocked" for s in checks)
        blocked_checks += blocked
        policies.update(s["policy"] for s in violations)
        if task.get("violating") and expected["violations"] == 1 and len(violations) != 1:
            problems["violating_without_exactly_one_violation_span"].append(rollout_id)
        if not task.get("violating") and expected["violations"] == 0 and violations:
            problems["clean_with_violation_span"].append(rollout_id)
        if len(violations) != expected["violations"]:
            problems["wrong_violation_count"].append(rollout_id)
        # The store keeps a check span per check with a violation (AgentOSRunner's default,
        # check_spans="violations": here every violation blocks); the attempt's governance summary
        # counts every check.
        summary = ((info["attempt"].get("metadata") or {}).get("agentos")) or {}
        if len(checks) != expected["blocked"] or summary.get("checks") != expected["checks"]:
            problems["wrong_check_count"].append(rollout_id)
        summarised_checks += summary.get("checks") or 0
        if blocked != expected["blocked"]:
            problems["wrong_blocked_count"].append(rollout_id)
        if any(s["attempt_id"] != info["attempt"]["attempt_id"] for s in checks + violations):
            problems["span_in_wrong_attempt"].append(rollout_id)
        keys = [(s["decision_id"], s["index"]) for s in violations]
        if len(keys) != len(set(keys)):
            problems["duplicate_violation_span"].append(rollout_id)
    expected_totals = [expect(t) for t in tasks_by_id.values()]
    return {
        "rollouts": len(tasks_by_id),
        "expected_violations": sum(e["violations"] for e in expected_totals),
        "expected_checks": sum(e["checks"] for e in expected_totals),
        "expected_blocked": sum(e["blocked"] for e in expected_totals),
        "violating_rollouts": sum(bool(t.get("violating")) for t in tasks_by_id.values()),
        "violation_spans": violation_spans,
        "check_spans": check_spans,
        "summarised_checks": summarised_checks,
        "blocked_check_spans": blocked_checks,
        "violations_by_policy": dict(policies),
        "rollouts_by_worker": dict(sorted(per_worker.items())),
        "problems": {k: len(v) for k, v in problems.items()},
        "problem_examples": {k: v[:5] for k, v in problems.items() if v},
        "exactly_once": not any(problems.values()),
    }


def audit_summary(audit_dir: Path, pattern: str = "audit-*.db") -> Dict[str, Any]:
    """Every FlightRecorder file in ``audit_dir``: hash-chain check, records, blocked records per rollout."""
    files: Dict[str, Any] = {}
    blocked_by_rollout: Counter = Counter()
    blocked_by_attempt: Counter = Counter()
    for adapter in adapters_for_directory(audit_dir, pattern=pattern):
        integrity = adapter.verify_integrity()
        records = adapter.records()
        summary = adapter.get_violation_summary()
        for record in records:
            if record.blocked:
                blocked_by_rollout[record.rollout_id] += 1
                blocked_by_attempt[(record.rollout_id, record.attempt_id)] += 1
        files[adapter.path.name] = {
            "valid": bool(integrity.get("valid")),
            "records": len(records),
            "blocked": sum(r.blocked for r in records),
            "pending": sum(r.pending for r in records),
            "verdicts": dict(Counter(r.verdict for r in records)),
            "policies_violated": summary["policies_violated"],
        }
        adapter.close()
    return {
        "files": files,
        "all_valid": all(f["valid"] for f in files.values()) and bool(files),
        "records": sum(f["records"] for f in files.values()),
        "blocked": sum(f["blocked"] for f in files.values()),
        "pending": sum(f["pending"] for f in files.values()),
        "blocked_by_rollout": dict(blocked_by_rollout),
        "blocked_by_attempt": {f"{r}/{a}": n for (r, a), n in blocked_by_attempt.items()},
    }


def log_lines(paths: Iterable[Path], offsets: Optional[Dict[str, int]] = None) -> Dict[str, Any]:
    """WARNING / ERROR lines (and tracebacks) written to worker logs after ``offsets``."""
    levels: Counter = Counter()
    messages: Counter = Counter()
    for path in paths:
        if not path.exists():
            continue
        with open(path, "rb") as f:
            f.seek((offsets or {}).get(str(path), 0))
            text = f.read().decode("utf-8", "replace")
        for line in text.splitlines():
            for level in ("WARNING", "ERROR", "CRITICAL"):
                if f" {level} " in line:
                    levels[level] += 1
                    messages[line.split(f" {level} ", 1)[1][:160]] += 1
            if line.startswith("Traceback"):
                levels["Traceback"] += 1
    return {"levels": dict(levels), "top_messages": messages.most_common(5)}


def cpu_seconds(pids: Dict[str, int]) -> Dict[str, float]:
    """User + system CPU seconds each process has used so far."""
    out = {}
    for name, pid in pids.items():
        with contextlib.suppress(psutil.Error):
            times = psutil.Process(pid).cpu_times()
            out[name] = times.user + times.system
    return out


def file_sizes(paths: Iterable[Path]) -> Dict[str, int]:
    return {str(p): p.stat().st_size for p in paths if p.exists()}
