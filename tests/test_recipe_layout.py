"""How the recipes are laid out: contrib/recipes/agentos/README.md names the three entry points with
commands that parse, and no recipe module imports an entry script (so none is in an import cycle)."""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
RECIPE_DIR = ROOT / "contrib" / "recipes" / "agentos"

#: A row of the README's table: the entry point, then its command (the interpreter, the script, its options).
ROW = re.compile(
    r"^\| `(?P<script>\w+\.py)` \|.*\| "
    r"`(?P<python>\.venv\d*)/bin/python contrib/recipes/agentos/(?P=script)(?P<args>[^`]*)` \|",
    re.M,
)


def readme_entry_points() -> list[tuple[str, str, list[str]]]:
    """``(script, environment, options)`` for each row of the README's table of entry points."""
    text = (RECIPE_DIR / "README.md").read_text(encoding="utf-8")
    return [(m["script"], m["python"], m["args"].split()) for m in ROW.finditer(text)]


def recipe_imports() -> dict[str, set[str]]:
    """Each recipe module's imports of other recipe modules (top level, inside functions, under TYPE_CHECKING)."""
    modules = {path.stem: path for path in RECIPE_DIR.glob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.add(node.module.split(".")[0])
            elif isinstance(node, ast.Import):
                found.update(alias.name.split(".")[0] for alias in node.names)
        graph[name] = (found & set(modules)) - {name}
    return graph


def test_the_readme_names_the_three_entry_points():
    assert [script for script, _, _ in readme_entry_points()] == [
        "train_sql_grpo.py",
        "train_sql_llm.py",
        "train_sql_gateway.py",
    ]


def test_no_recipe_module_imports_an_entry_script():
    entry = {script[: -len(".py")] for script, _, _ in readme_entry_points()}
    importers = {name: sorted(deps & entry) for name, deps in recipe_imports().items() if deps & entry}
    assert importers == {}, "a type or helper an entry script holds belongs beside the code that uses it"


def test_no_import_cycle_among_the_recipes():
    graph = recipe_imports()

    def reaches(start: str, goal: str, seen: set[str]) -> bool:
        return any(dep == goal or (dep not in seen and reaches(dep, goal, seen | {dep})) for dep in graph[start])

    assert sorted(name for name in graph if reaches(name, name, {name})) == []


@pytest.mark.parametrize("script,python,args", readme_entry_points(), ids=lambda v: v if isinstance(v, str) else None)
def test_each_readme_command_parses(script, python, args, monkeypatch):
    """The command's options are the script's (its own parser reads them); the 1.0 recipe's parser
    imports nothing of either Agent Lightning line, so it is read here too."""
    assert python in (".venv", ".venv312")
    monkeypatch.syspath_prepend(str(RECIPE_DIR))
    module = importlib.import_module(script[: -len(".py")])
    module.parse_args(args)
