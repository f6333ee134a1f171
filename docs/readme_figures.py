"""The README's figures, generated from the results files they come from.

The README quotes a few measured figures. Each sits between ``<!-- figures: NAME -->`` and
``<!-- /figures -->`` and is the text ``GENERATORS[NAME]`` writes from a results file, so a figure
cannot drift from its file: ``tests/test_readme.py`` fails when they differ.

    python docs/readme_figures.py          # rewrite the README's figures from the results files
    python docs/readme_figures.py --check  # exit 1 (and say which) when a figure differs

A re-run that writes a new results file changes the README by this script, never by hand. Which
file each figure comes from is named in its generator below (one constant per file).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Callable, Dict

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "docs"))
import figure_regions  # noqa: E402
from figure_regions import load_results, regions  # noqa: E402,F401  (regions: the tests read a page through it)

README = ROOT / "README.md"
#: The language-model demo on a fresh clone beside a parallel test run: the README's first command.
DEMO_RESULTS = Path("docs/results_demo/first_command_fresh_machine_under_load/results.json")
#: How long that command took, timed with /usr/bin/time -v on fresh clones (docs/results_demo.md).
DEMO_TIMES = Path("docs/results_demo/first_command.json")
#: The tabular recipe: `train_sql_grpo.py`, 5 seeds.
TABULAR_RESULTS = Path("docs/results/results.json")
#: The Agent Lightning 1.0 recipe: `train_sql_gateway.py`.
GATEWAY_RESULTS = Path("docs/results_gateway/results.json")


def _arm(results: dict, name: str) -> dict:
    (summary,) = [s for s in results["summaries"] if s["arm"] == name]
    return summary


def _only(values: list) -> float:
    """The value of a one-seed run (the demo has one seed; a second would need a mean ± sd here)."""
    if len(values) != 1:
        raise ValueError(f"expected one seed, got {len(values)}: quote a mean and sd instead")
    return values[0]


def demo(root: Path = ROOT) -> str:
    results = load_results(root, DEMO_RESULTS)
    governed, ungoverned = _arm(results, "governed-penalty"), _arm(results, "ungoverned")
    heldout = governed["heldout_rollouts_per_eval"]

    def answers(rate: float) -> int:
        return round(rate * heldout)

    attempted = int(_only(governed["attempted_destructive_total"]))
    blocked_note = "all blocked" if int(_only(governed["destructive_executed"])) == 0 else "not all blocked"
    return (
        f"In the demo's run on a fresh clone ([{DEMO_RESULTS.parent.as_posix()}]({DEMO_RESULTS.parent.as_posix()})), "
        f"both arms started from {heldout} held-out answers, "
        f"{answers(_only(governed['heldout_attempted_before']))} of them destructive; after training the governed "
        f"arm wrote {answers(_only(governed['heldout_attempted_after']))} destructive answers and the ungoverned arm "
        f"{answers(_only(ungoverned['heldout_attempted_after']))}. Under governance "
        f"{int(_only(governed['destructive_executed']))} destructive statements ran ({attempted} attempted, "
        f"{blocked_note}); the ungoverned arm ran {int(_only(ungoverned['destructive_executed']))}."
    )


def demo_time(root: Path = ROOT) -> str:
    times = load_results(root, DEMO_TIMES)
    fresh, loaded, cpus = times["fresh_machine"], times["fresh_machine_under_load"], times["summary"]["cpus"]
    steps = loaded["grpo_steps"]
    return (
        f"On a fresh clone of the {cpus}-core machine with nothing installed, the whole command, install "
        f"included, took {fresh['wall_minutes']:g} minutes ({fresh['cpu_minutes']:g} CPU minutes, "
        f"{fresh['max_resident_mb'] / 1000:.1f} GB peak memory, a mean 1-minute load of "
        f"{fresh['load_average_1min_mean']:g}), and {loaded['wall_minutes']:g} minutes ({loaded['cpu_minutes']:g} CPU "
        f"minutes) beside a parallel run of the test suite (a mean 1-minute load of "
        f"{loaded['load_average_1min_mean']:g}; its {steps['budget_minutes']:g}-minute step budget "
        + (
            f"kept all {steps['planned']} GRPO steps"
            if steps["run"] == steps["planned"]
            else f"left {steps['run']} of the {steps['planned']} GRPO steps"
        )
        + f") ([{DEMO_TIMES.as_posix()}]({DEMO_TIMES.as_posix()}))."
    )


def tabular(root: Path = ROOT) -> str:
    results = load_results(root, TABULAR_RESULTS)
    governed, ungoverned = _arm(results, "governed"), _arm(results, "ungoverned")
    seeds = len(governed["seeds"])
    return (
        f"The tabular recipe ({seeds} seeds per arm, [{TABULAR_RESULTS.as_posix()}]({TABULAR_RESULTS.as_posix()})): "
        f"{sum(governed['destructive_executed'])} destructive statements executed under governance, "
        f"{sum(ungoverned['destructive_executed'])} without; final-epoch violation rate "
        f"{sum(governed['final_epoch_violation_rate']) / seeds:.3f} governed, "
        f"{sum(ungoverned['final_epoch_violation_rate']) / seeds:.3f} ungoverned."
    )


GENERATORS: Dict[str, Callable[[Path], str]] = {"demo": demo, "demo_time": demo_time, "tabular": tabular}


def main(argv=None) -> int:
    return figure_regions.main([README], GENERATORS, ROOT, "docs/readme_figures.py", argv)


if __name__ == "__main__":
    sys.exit(main())
