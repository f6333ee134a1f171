"""Fixtures shared by the tests: a real SQLite database and audit paths in a temp directory.

Nothing here imports agentlightning or Agent OS at module level: pytest loads this file in every
process, pytest-xdist's controller included, which runs no test and would otherwise spend seconds
importing agentlightning before it starts the workers. ``CommitFails`` is in ``failing_policies``.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Iterator

import pytest


def make_shop_db(path: Path) -> None:
    """A small but real database: users and orders with a foreign key."""
    conn = sqlite3.connect(path)
    conn.executescript(
        """
        CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT NOT NULL, note TEXT, dropped_at TEXT);
        CREATE TABLE orders (id INTEGER PRIMARY KEY, user_id INTEGER REFERENCES users(id), total REAL);
        """
    )
    conn.executemany(
        "INSERT INTO users (name, note) VALUES (?, ?)",
        [(f"user{i}", "delete from me" if i % 7 == 0 else None) for i in range(50)],
    )
    conn.executemany("INSERT INTO orders (user_id, total) VALUES (?, ?)", [(1 + i % 50, 10.0 * i) for i in range(200)])
    conn.commit()
    conn.close()


def table_counts(path: Path) -> dict:
    conn = sqlite3.connect(path)
    try:
        names = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table' ORDER BY name")]
        return {n: conn.execute(f'SELECT COUNT(*) FROM "{n}"').fetchone()[0] for n in names}
    finally:
        conn.close()


@pytest.fixture
def shop_db(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "shop.db"
    make_shop_db(path)
    yield path


@pytest.fixture
def audit_path(tmp_path: Path) -> Path:
    (tmp_path / "audit").mkdir()
    return tmp_path / "audit" / "flight_recorder.db"


def verified_blocked_records(audit_dir: Path) -> tuple:
    """(file names, blocked records) of the per-worker FlightRecorder files in ``audit_dir``,
    after asserting each file's hash chain verifies."""
    from agent_os import FlightRecorder

    files = sorted(audit_dir.glob("worker-*.db"))
    blocked = 0
    for path in files:
        recorder = FlightRecorder(db_path=str(path))
        try:
            assert recorder.verify_integrity()["valid"] is True, path
            blocked += sum(row["policy_verdict"] == "blocked" for row in recorder.get_log())
        finally:
            recorder.close()
    return [f.name for f in files], blocked


def host_signing_key(path: Path, host: str) -> str:
    """A host's own signing key written to ``path`` by the ``keygen`` command; returns its keyring line."""
    import contextlib
    import io

    from agentlightning.contrib.kernel.agentos.audit.signing import main

    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert main(["keygen", "--out", str(path), "--host", host]) == 0
    return printed.getvalue().strip()
