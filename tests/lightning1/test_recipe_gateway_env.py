"""The 1.0 recipe's side runs in a 1.0-only Python 3.12 environment: its command line, its
orchestration's imports (nothing of the 0.3 line, no torch) and its report with its plot; the
extra the README names for it holds everything it needs (matplotlib included)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import tomllib

from .conftest import RECIPES

ROOT = RECIPES.parents[2]
RECIPE = RECIPES / "train_sql_gateway.py"
#: Modules of the 0.3 line (and torch), which the 1.0 side of the recipe must not import.
NOT_ON_THE_1_0_SIDE = (
    "agentlightning.algorithm",
    "agentlightning.emitter",
    "agentlightning.store",
    "agentlightning.runner",
    "agentlightning.trainer",
    "agentlightning.litagent",
    "agentlightning.contrib.env",
    "agentlightning.contrib.runner",
    "agentlightning.contrib.reward",
    "agentlightning.contrib.adapter",
    "torch",
    "transformers",
)


def run_python(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=cwd, capture_output=True, text=True, timeout=300)


def test_help_runs_in_the_1_0_environment():
    result = run_python(str(RECIPE), "--help")
    assert result.returncode == 0, result.stderr
    assert "--model-python" in result.stdout  # the environment the model's own process runs in


def test_the_orchestration_imports_nothing_of_the_0_3_line():
    probe = (
        f"import sys; sys.path.insert(0, {str(RECIPES)!r}); import train_sql_gateway; "
        f"print([m for m in sys.modules if m.startswith({NOT_ON_THE_1_0_SIDE!r})])"
    )
    result = run_python("-c", probe)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_the_report_and_its_plot_run_in_the_1_0_environment(tmp_path):
    results = tmp_path / "results.json"
    shutil.copy(ROOT / "docs" / "results_gateway" / "demo" / "results.json", results)
    result = run_python(str(RECIPE), "--report", str(results))
    assert result.returncode == 0, result.stderr
    assert "| attempted destructive (parsed or not) |" in result.stdout
    assert (tmp_path / "attempted_destructive.png").stat().st_size > 1000
    assert json.loads(results.read_text())["arms"]


def extra_packages(extras: dict, name: str) -> set:
    """An extra's requirements' names, the extras it names of this project included."""
    names = set()
    for requirement in extras[name]:
        nested = re.fullmatch(r"agentlightning-contrib-agentos\[([\w,-]+)\]", requirement)
        if nested:
            for inner in nested.group(1).split(","):
                names |= extra_packages(extras, inner)
        else:
            names.add(re.split(r"[<>=\[ ;]", requirement, maxsplit=1)[0].lower())
    return names


def test_the_extra_the_readme_names_for_the_recipe_holds_what_it_needs():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    # The README's bullet for the recipe names the install line of its environment.
    match = re.search(r"train_sql_gateway\.py[^*]*?\.venv312/bin/pip install -e '\.\[([\w-]+)\]'", readme)
    assert match, "the README names no .venv312 install line for the 1.0 recipe"
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    needed = extra_packages(extras, match.group(1))
    assert {"agentlightning", "matplotlib", "openai", "numpy"} <= needed
    assert "torch" not in needed  # no torch in the 1.0 environment: the model's process has its own
