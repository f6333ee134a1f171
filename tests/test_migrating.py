"""docs/migrating.md: every row of the reference-to-ours table has a block, and every block runs
as written (in order, one namespace, top-level await on one loop, as in IPython) and prints what
the reference promises, against the real kernel, runner, store, environment and Trainer."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from agentlightning.contrib.runner.agentos.hosts import parse_audit_file_name

from .test_docs_and_demo import python_blocks, run_blocks

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "migrating.md"


def _table_rows(text: str):
    return [line for line in text.splitlines() if line.startswith("| [")]


def test_every_row_links_to_its_block():
    text = DOC.read_text()
    rows = _table_rows(text)
    headings = re.findall(r"^## (\d+)\. ", text, re.M)
    assert len(rows) == len(headings) == len(python_blocks(DOC)) == 14
    for number, row in enumerate(rows, start=1):
        assert re.search(rf"\]\(#{number}-[a-z0-9-]+\)", row), row


@pytest.mark.e2e  # block 12 runs the Trainer with two runner processes
def test_every_block_runs_and_prints_what_the_reference_promises(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    out = {}
    namespace: dict = {"__name__": "doc_migrating"}
    for index, _ in run_blocks(python_blocks(DOC), DOC.name, namespace):
        out[index + 1] = capsys.readouterr().out
    for number, printed in out.items():
        print(f"--- block {number}\n{printed}")
    assert "kernel: ['SQLPolicy', 'CostControlPolicy']" in out[1]
    assert "runner: AgentOSRunner" in out[2]
    assert "clean: True 1.0 [] 0.0" in out[3]
    # The plain function's string task is checked before it runs: the DROP never reaches it.
    assert "drop: False val None -100.0 [] True [('SQLPolicy', 'critical')]" in out[3]
    assert "rows left: [(2,)]" in out[3]
    assert "'total_rollouts': 3" in out[4] and "'total_violations': 1" in out[4]
    assert "iter with nothing queued: runner.iter() runs the rollouts queued in the runner's st" in out[4]
    assert "iter as a task: succeeded" in out[4]
    assert "adopted: ['AgentOSPolicy']" in out[1]
    assert "store: 3 1 {'critical': 1}" in out[5]
    assert "violation: blocked critical -100.0 True True" in out[6]
    # The blocked task did not succeed, so the tutorial's task_reward gives it base 0.0.
    assert "rewards: 5.85 -100.0" in out[7]
    assert "decomposed: {'final': -100.0, 'base': 0.0, 'policy_penalty': -100.0, 'clean_bonus': 0.0}" in out[7]
    assert "config: -200.0 0.45" in out[8]
    assert "penalty: -200.0" in out[9] and "composite: 3.775" in out[9] and "factory: -200.0" in out[9]
    assert "env: [10.9, -100.1] True 1" in out[10]
    assert "added: 3" in out[11] and "exported: 3" in out[11] and "summary: 33.3% {'SQLPolicy': 1}" in out[11]
    # base = rows the query returned (2 and 1) + clean bonus 5; the DELETE was blocked: 0 - 100
    assert "trainer rewards: [7.0, -100.0, 6.0] advantages: [0.72, -1.41, 0.7]" in out[12]
    audit_files = (namespace["workdir"] / "audit").glob("*.db")
    assert sorted(parse_audit_file_name(p.name)[0] for p in audit_files) == [0, 1]  # worker-<n>@<host>-<pid>.db
    assert "span: entry-001 {'agent_os.policy_violated': True}" in out[13]
    assert "stream: 3 True agent_os." in out[13] and out[13].rstrip().endswith("True")
    assert "loop: [5.85, -100.0] 1" in out[14]
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # nothing written into the working directory
