"""The README as a newcomer reads it.

* Its first screen says what the project is, what it guarantees and what it does not, gives the
  two commands, an example to paste into a file, and where to go next; measurements live in docs.
* The example runs as a file, in a fresh interpreter, and prints what the README says it prints.
* Every figure the README quotes from a results file is generated from that file
  (docs/readme_figures.py), so it cannot drift.
* The install lines are the ones .ci/install_lines.py runs in CI, for both Agent Lightning lines.
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"


def load_script(path: Path):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def first_screen() -> str:
    """The README up to its ``<!-- end of the first screen -->`` marker."""
    text = README.read_text()
    assert "<!-- end of the first screen -->" in text
    return text.split("<!-- end of the first screen -->", 1)[0]


def example_block() -> str:
    text = README.read_text()
    match = re.search(r"<!-- example: .*? -->\n```python\n(.*?)```", text, re.DOTALL)
    assert match, "the README's example is marked <!-- example: ... --> before its ```python block"
    return match.group(1)


def test_first_screen_says_what_it_is_and_what_it_guarantees():
    screen = first_screen()
    lines = screen.splitlines()
    assert len(lines) <= 120, f"the first screen is {len(lines)} lines"
    for needed in ("## What it guarantees", "What it does not guarantee", "Where to go next", "asyncio.run("):
        assert needed in screen, needed
    (commands,) = re.findall(r"```bash\n(.*?)```", screen, re.DOTALL)[:1]
    assert len(commands.strip().splitlines()) == 2  # exactly the two commands for a fresh machine
    assert commands.strip().splitlines()[1] == ".venv/bin/python -m pytest"


def test_measurements_live_in_the_docs_not_the_readme():
    text = README.read_text()
    for internal in ("xdist", "--dist", "load average", "bytecode", "CPU time"):
        assert internal not in text, f"{internal!r} belongs in docs/testing.md"
    testing = (ROOT / "docs" / "testing.md").read_text()
    assert "--dist loadfile" in testing and "load average" in testing


def test_the_example_runs_as_a_file_in_a_fresh_interpreter(tmp_path):
    code = example_block()
    assert len([line for line in code.splitlines() if line.strip()]) <= 20
    assert "asyncio.run(" in code and "await" in code
    (tmp_path / "first.py").write_text(code)
    done = subprocess.run(
        [sys.executable, "first.py"], cwd=tmp_path, capture_output=True, text=True, timeout=600, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    printed = done.stdout.splitlines()
    expected = re.search(r"<!-- example output -->\n```text\n(.*?)```", README.read_text(), re.DOTALL).group(1)
    assert printed == expected.splitlines()
    assert (tmp_path / "runs" / "first" / "audit.db").exists()


def test_the_quoted_figures_equal_their_results_files():
    figures = load_script(ROOT / "docs" / "readme_figures.py")
    text = README.read_text()
    regions = figures.regions(text)
    assert set(regions) == set(figures.GENERATORS)  # every generated figure is quoted, and only those
    for name, quoted in regions.items():
        assert quoted == figures.GENERATORS[name](ROOT), f"README region {name!r}: run python docs/readme_figures.py"


def test_the_first_command_names_one_command():
    """The README said "the first command" of two different commands."""
    text = README.read_text()
    assert "(the first command" not in text and "the first command above" not in text


def test_install_lines_are_the_ones_ci_runs():
    install = load_script(ROOT / ".ci" / "install_lines.py")
    lines = install.install_lines(README.read_text())
    assert set(lines) == {"agl03", "agl10"}
    for line, commands in lines.items():
        kinds = {install.kind(command) for command in commands}
        assert kinds == {"clone", "wheel"}, (line, commands)
    for command in [c for commands in lines.values() for c in commands]:
        assert "agentlightning-contrib-agentos[" not in command.split("#")[0] or "@" in command  # not on an index
    ci = (ROOT / ".ci" / "run").read_text()
    assert "install_lines.py agl03" in ci and "install_lines.py agl10" in ci


@pytest.mark.parametrize("line", ["agl03", "agl10"])
def test_install_lines_parse_into_runnable_commands(line):
    install = load_script(ROOT / ".ci" / "install_lines.py")
    for command in install.install_lines(README.read_text())[line]:
        assert command.startswith("python -m pip install ") or command.startswith("python -m build")
