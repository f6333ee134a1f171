"""The project speaks of itself only: no tracked text cites what a reader cannot open.

Comments, docstrings and docs state facts; they do not point at files outside the repository (a
notes file under a machine's work folder, a shared reference folder) or at issue numbers of a
tracker the reader does not have. The scan reads every file git tracks (text files only).
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: What a reader of the repository cannot follow, each with what to write instead.
FORBIDDEN = {
    re.compile(r"\bissues?\s*#?\d+", re.IGNORECASE): "an issue number: state the fact or the target itself",
    re.compile(r"\b(?:the|this) issue's\b|\bthis issue\b", re.IGNORECASE): "an issue: name what it asked for",
    re.compile(r"/work/"): "a path outside the repository: state the fact it stands for",
    re.compile(r"\.\./shared\b"): "a path outside the repository: state the fact it stands for",
    re.compile(r"\breference/README\b"): "a file outside the repository: state the fact it stands for",
}


def tracked_text_files():
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True)
    for name in listed.stdout.decode().split("\0"):
        path = ROOT / name
        if not name or path == Path(__file__).resolve() or not path.is_file():
            continue
        data = path.read_bytes()
        if b"\0" in data:
            continue  # binary (images)
        try:
            yield name, data.decode("utf-8")
        except UnicodeDecodeError:
            continue


def test_the_scan_sees_the_repository():
    names = {name for name, _ in tracked_text_files()}
    assert {"README.md", "pyproject.toml", "conftest.py", "docs/architecture.md"} <= names


def test_no_text_cites_what_a_reader_cannot_open():
    found = []
    for name, text in tracked_text_files():
        for number, line in enumerate(text.splitlines(), 1):
            for pattern, instead in FORBIDDEN.items():
                if pattern.search(line):
                    found.append(f"{name}:{number}: {line.strip()[:100]}  <- {instead}")
    assert not found, "\n".join(found)


def test_each_pattern_catches_what_it_is_for():
    samples = [
        "see issue 14",
        "(issues 7 and 13)",
        "Issue #16: the check",
        "the issue's deny list",
        "Before this issue the benchmark",
        "from /work/shared/notes/real-llm-on-cpu.md",
        "in ../shared/notes",
        "see reference/README.md",
    ]
    for sample in samples:
        assert any(pattern.search(sample) for pattern in FORBIDDEN), sample
    fine = ["issue a clear error", "an idempotency key", "the reference tutorial", "docs/migrating.md"]
    for sample in fine:
        assert not any(pattern.search(sample) for pattern in FORBIDDEN), sample
