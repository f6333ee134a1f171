"""The README quick start, every Python block in docs/, and the demo recipe run as written.

Blocks run in order in one namespace per file, as a reader pastes them into IPython or
`python -m asyncio`: top-level `await` is allowed, on one event loop per file.
(docs/migrating.md is run, with its own assertions, by tests/test_migrating.py.)
"""

from __future__ import annotations

import ast
import asyncio
import inspect
import re
import sys
from pathlib import Path
from typing import Iterator, Tuple

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOC_FILES = [ROOT / "README.md", *sorted(p for p in (ROOT / "docs").glob("*.md") if p.name != "migrating.md")]
#: Documents whose examples start the Trainer's runner processes: end to end (`pytest -m "not e2e"`
#: leaves them out; plain `pytest` runs them).
TRAINER_DOCS = {"runner.md"}
DOC_PARAMS = [pytest.param(p, marks=pytest.mark.e2e) if p.name in TRAINER_DOCS else p for p in DOC_FILES]
PYTHON_BLOCK = re.compile(r"```python\n(.*?)```", re.DOTALL)


def python_blocks(doc: Path):
    return PYTHON_BLOCK.findall(doc.read_text())


def run_blocks(blocks, name: str, namespace: dict) -> Iterator[Tuple[int, object]]:
    """Run each block in ``namespace``; a block with top-level ``await`` runs on one loop shared
    by all blocks (as in IPython). Yields (index, value of the block's coroutine or None)."""
    loop = asyncio.new_event_loop()
    try:
        for index, block in enumerate(blocks):
            code = compile(block, f"{name}[block {index}]", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
            result = eval(code, namespace)  # noqa: S307 - the repository's own documentation
            if inspect.iscoroutine(result):
                result = loop.run_until_complete(result)
            yield index, result
    finally:
        loop.close()


@pytest.mark.parametrize("doc", DOC_PARAMS, ids=lambda p: p.name)
def test_python_blocks_run(doc, tmp_path, monkeypatch, capsys):
    blocks = python_blocks(doc)
    if not blocks:
        pytest.skip(f"{doc.name} has no python blocks")
    monkeypatch.chdir(tmp_path)  # examples that write files write them here
    for _ in run_blocks(blocks, doc.name, {"__name__": f"doc_{doc.stem}"}):
        pass
    assert capsys.readouterr().out  # the examples print what they show


def test_readme_quick_start_output(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    quick_start = (ROOT / "README.md").read_text().split("\n## Quick start\n", 1)[1]
    blocks = PYTHON_BLOCK.findall(quick_start)[:3]
    outputs = []
    for _ in run_blocks(blocks, "README quick start", {"__name__": "readme"}):
        outputs.append(capsys.readouterr().out.splitlines())
    select, drop, kernel_only = outputs
    assert select == ["Success: True", "Violations: 0", "Penalty: 0.0", "Reward: 6.0"]
    assert drop == ["False [('SQLPolicy', 'critical')] -100.0 -100.0"]
    assert [line.split()[0] for line in kernel_only[:3]] == ["allowed", "blocked", "allowed"]
    assert "penalty= -100.0" in kernel_only[1]
    assert "'valid': True" in kernel_only[3] and "'total_entries': 3" in kernel_only[3]
    assert (tmp_path / "runs" / "quickstart" / "audit.db").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["runs"]  # nothing else written into the working directory


def test_governance_demo_runs_clean(tmp_path, capsys):
    sys.path.insert(0, str(ROOT / "contrib" / "recipes" / "agentos"))
    try:
        import governance_demo
    finally:
        sys.path.pop(0)
    assert governance_demo.main(["--out", str(tmp_path), "--users", "50"]) == 0
    out = capsys.readouterr().out
    assert "actions: 11  executed: 4  blocked: 7" in out
    assert "rows before: {'users': 50, 'orders': 200}  after: {'users': 50, 'orders': 200}" in out
    assert "integrity valid" in out
