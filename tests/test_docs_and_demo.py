"""The README quick start, every Python block in docs/, and the demo recipe run as written."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOC_FILES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
PYTHON_BLOCK = re.compile(r"```python\n(.*?)```", re.DOTALL)


@pytest.mark.parametrize("doc", DOC_FILES, ids=lambda p: p.name)
def test_python_blocks_run(doc, tmp_path, monkeypatch, capsys):
    blocks = PYTHON_BLOCK.findall(doc.read_text())
    if not blocks:
        pytest.skip(f"{doc.name} has no python blocks")
    monkeypatch.chdir(tmp_path)  # examples that write files write them here
    namespace: dict = {"__name__": f"doc_{doc.stem}"}
    for i, block in enumerate(blocks):
        exec(compile(block, f"{doc.name}[block {i}]", "exec"), namespace)
    assert capsys.readouterr().out  # the examples print what they show


def test_readme_quick_start_output(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (block,) = PYTHON_BLOCK.findall((ROOT / "README.md").read_text())[:1]
    exec(compile(block, "README quick start", "exec"), {"__name__": "readme"})
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines[:3]] == ["allowed", "blocked", "allowed"]
    assert "penalty= -100.0" in lines[1]
    assert "'valid': True" in lines[3] and "'total_entries': 3" in lines[3]
    assert (tmp_path / "runs" / "quickstart" / "audit.db").exists()


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
