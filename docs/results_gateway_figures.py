"""The measured figures of docs/results_gateway.md and docs/agentlightning-1.0.md, generated from their results files.

Each figure sits between ``<!-- figures: NAME -->`` and ``<!-- /figures -->`` and is the text
``GENERATORS[NAME]`` writes from a results file (copied into ``docs/results_gateway/`` from the
run's folder under ``runs/``), so a figure cannot drift from its file:
``tests/lightning1/test_results_gateway_figures.py`` fails when they differ. Run it in the 1.0
environment (the tables are the recipe's own ``--report`` tables)::

    .venv312/bin/python docs/results_gateway_figures.py          # rewrite the figures from the results files
    .venv312/bin/python docs/results_gateway_figures.py --check  # exit 1 (and say which) when a figure differs
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Callable, Dict, List

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "docs"))
import figure_regions  # noqa: E402
from figure_regions import load_results, regions  # noqa: E402,F401  (regions: the tests read a page through it)

sys.path.insert(0, str(ROOT / "contrib" / "recipes" / "agentos"))
DOCS = [ROOT / "docs" / "results_gateway.md", ROOT / "docs" / "agentlightning-1.0.md"]
#: The two-arm demo run: `train_sql_gateway.py --preset demo`.
DEMO_RESULTS = Path("docs/results_gateway/demo/results.json")
#: The demo's control arm run again on its own (`--preset demo --arms ungoverned`), when the first one was killed.
DEMO_CONTROL_RESULTS = Path("docs/results_gateway/demo/control/results.json")
#: The first invocation's control arm as far as it got: the steps.json the recipe writes after each step.
DEMO_KILLED_CONTROL_STEPS = Path("docs/results_gateway/demo/ungoverned/steps.json")
#: The quick run tests/lightning1 runs: `train_sql_gateway.py --quick --arms governed`.
QUICK_RESULTS = Path("docs/results_gateway/quick/results.json")
#: Time to first token: `tests/benchmarks/bench_gateway_streaming.py`.
STREAMING_RESULTS = Path("docs/results_gateway/streaming.json")


def _run(results: dict) -> List[str]:
    """What every run's figures start with: its command, when it started, its wall time and the machine's load."""
    from train_sql_gateway import arms_of

    parts = [f"`{results['command']}`"]
    if "started_at" in results:
        parts.append(f"started {results['started_at']}")
    if "total_seconds" in results:
        minutes, seconds = divmod(round(results["total_seconds"]), 60)
        parts.append(f"**{minutes} min {seconds} s** wall")
    loads = [results["load_average_start"]] + [s["load_average"] for a in arms_of(results).values() for s in a["steps"]]
    loads += [results["load_average_end"]] if "load_average_end" in results else []
    parts.append(
        f"load average (1 min) {min(x[0] for x in loads):.1f} to {max(x[0] for x in loads):.1f} at its start, "
        "after each step and at its end"
    )
    return [", ".join(parts) + ".", ""]


def _arm_tables(results: dict) -> List[str]:
    from train_sql_gateway import arms_of, heldout_table, step_table

    lines: List[str] = []
    arms = arms_of(results)
    for arm, record in arms.items():
        steps = record["steps"]
        table = step_table(steps).replace("| metric |", f"| {arm} |", 1)
        lines += [table, ""]
        blocked = sum(round(s["blocked_at_gateway"] * s["rollouts"]) for s in steps)
        executed = sum(s["destructive_executed"] for s in steps)
        rollouts = sum(s["rollouts"] for s in steps)
        trails = ", ".join(
            f"{t['total_entries']} records, {'valid' if t['valid'] else 'INVALID'}, {t.get('assurance', '?')}"
            for t in record.get("audit") or []
        )
        lines += [
            f"{arm}: {rollouts} rollouts, {blocked} blocked at the gateway, {executed} destructive statements "
            f"executed; trail: {trails or 'none (no governed gateway)'}.",
            "",
        ]
    held = heldout_table(arms)
    if held:
        lines += ["Held-out tasks, greedy, one answer each:", "", held, ""]
    return lines


def gateway_demo(root: Path = ROOT) -> str:
    from train_sql_gateway import step_table

    results = load_results(root, DEMO_RESULTS)
    lines = _run(results) + _arm_tables(results)
    if (root / DEMO_KILLED_CONTROL_STEPS).exists():
        steps = load_results(root, DEMO_KILLED_CONTROL_STEPS)
        executed = sum(s["destructive_executed"] for s in steps)
        lines += [
            f"The same invocation's control arm, until it was killed in its step {len(steps) + 1} (its `steps.json`):",
            "",
            step_table(steps).replace("| metric |", "| ungoverned |", 1),
            "",
            f"ungoverned: {sum(s['rollouts'] for s in steps)} rollouts, {executed} destructive statements executed.",
            "",
        ]
    if (root / DEMO_CONTROL_RESULTS).exists():
        control = load_results(root, DEMO_CONTROL_RESULTS)
        lines += ["The control arm, run again on its own:", ""] + _run(control) + _arm_tables(control)
    return "\n".join(lines).rstrip()


def gateway_quick(root: Path = ROOT) -> str:
    results = load_results(root, QUICK_RESULTS)
    return "\n".join(_run(results) + _arm_tables(results)).rstrip()


def _spread(figure: Dict[str, float]) -> str:
    return f"{figure['median']:.2f} [{figure['min']:.2f}-{figure['max']:.2f}]"


def streaming(root: Path = ROOT) -> str:
    results = load_results(root, STREAMING_RESULTS)
    before, after = results["load_average_before"], results["load_average_after"]
    lines = [
        f"`{results['command']}`: {results['rounds']} rounds, {results['cpu']}, {results['environment']['cpus']} "
        f"CPUs, model on {results['threads']} torch thread(s), greedy, at most {results['max_tokens']} tokens; load "
        f"average {before[0]:.1f} before, {after[0]:.1f} after. Seconds, median [min-max]:",
        "",
        "| answer | path | first token | total |",
        "|---|---|---|---|",
    ]
    for kind, paths in results["figures"].items():
        tokens = ", ".join(str(t) for t in paths["completion_tokens"])
        for path, figure in paths.items():
            if isinstance(figure, dict):
                lines.append(
                    f"| {kind} ({tokens} tokens) | {path} | {_spread(figure['ttft_s'])} "
                    f"| {_spread(figure['total_s'])} |"
                )
    same = all(paths["same_answer_on_every_path"] for paths in results["figures"].values())
    trails = ", ".join(
        f"{t['total_entries']} records, {t.get('assurance')}, valid {t['valid']}" for t in results["trails"]
    )
    lines += [
        "",
        f"Every path received the same answer: {'yes' if same else 'NO'}. 1.0's own gateway asked to stream: HTTP "
        f"{results['agl_server_stream_refused']}. The governed gateway's trail: {trails}.",
    ]
    return "\n".join(lines)


GENERATORS: Dict[str, Callable[[Path], str]] = {
    "gateway_demo": gateway_demo,
    "gateway_quick": gateway_quick,
    "streaming": streaming,
}


def main(argv=None) -> int:
    return figure_regions.main(DOCS, GENERATORS, ROOT, "docs/results_gateway_figures.py", argv)


if __name__ == "__main__":
    sys.exit(main())
