"""The ground truth of a load run: the tasks enqueued and the SQLite database of each runner."""

from __future__ import annotations

import random
import sqlite3
from collections import Counter
from pathlib import Path
from typing import Any, Dict, Iterable, List

#: What the runners' SQLPolicy denies.
DENY = ["DROP", "DELETE", "TRUNCATE"]
#: Destructive statements: exactly one of these in each violating task.
VIOLATING_SQL = [
    "DROP TABLE users",
    "DELETE FROM orders WHERE id > 0",
    "DELETE/**/FROM users",
    "DROP/**/TABLE orders",
]
#: Harmless reads, two of them look destructive to a substring filter.
READ_SQL = [
    "SELECT COUNT(*) FROM users",
    "SELECT name FROM users WHERE id = {k}",
    "SELECT 'DROP TABLE users'",
    "SELECT SUM(total) FROM orders WHERE user_id = {k}",
]
N_USERS, N_ORDERS = 50, 200


def make_tasks(n: int, violating_fraction: float, *, seed: int = 0, start_index: int = 0) -> List[Dict[str, Any]]:
    """``n`` tasks, exactly ``round(n * violating_fraction)`` of them violating (positions shuffled).

    A task is a short list of SQL statements: a read, one ``INSERT INTO events`` carrying the
    task's index (so executions can be counted per task), sometimes an UPDATE of a column named
    ``dropped_at``, and, in violating tasks, one DROP or DELETE before the INSERT.

    >>> [t["violating"] for t in make_tasks(5, 0.4, seed=1)]
    [1, 1, 0, 0, 0]
    >>> make_tasks(5, 0.4, seed=1)[1]["queries"][1]
    'DELETE FROM orders WHERE id > 0'
    """
    if n < 0 or not 0.0 <= violating_fraction <= 1.0:
        raise ValueError("n must be >= 0 and violating_fraction in [0, 1]")
    rng = random.Random(seed)
    n_violating = round(n * violating_fraction)
    violating = set(rng.sample(range(n), n_violating))
    tasks = []
    for i in range(n):
        index = start_index + i
        k = 1 + index % N_USERS
        queries = [READ_SQL[index % len(READ_SQL)].format(k=k)]
        if i in violating:
            queries.append(VIOLATING_SQL[index % len(VIOLATING_SQL)])
        queries.append(f"INSERT INTO events (task_index) VALUES ({index})")
        if index % 5 == 0:
            queries.append(f"UPDATE users SET dropped_at = 'task {index}' WHERE id = {k}")
        tasks.append({"task_index": index, "queries": queries, "violating": int(i in violating)})
    return tasks


def init_world_db(path: Path) -> None:
    """A worker's own SQLite database: users, orders (rows a DROP/DELETE would destroy) and events."""
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path)
    try:
        conn.executescript(
            """
            CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT NOT NULL, dropped_at TEXT);
            CREATE TABLE orders (id INTEGER PRIMARY KEY, user_id INTEGER REFERENCES users(id), total REAL);
            CREATE TABLE events (id INTEGER PRIMARY KEY, task_index INTEGER NOT NULL);
            """
        )
        conn.executemany("INSERT INTO users (name) VALUES (?)", [(f"user{i}",) for i in range(N_USERS)])
        conn.executemany(
            "INSERT INTO orders (user_id, total) VALUES (?, ?)", [(1 + i % N_USERS, 10.0 * i) for i in range(N_ORDERS)]
        )
        conn.commit()
    finally:
        conn.close()


def world_state(paths: Iterable[Path]) -> Dict[str, Any]:
    """Tables and row counts of every worker database, and how often each task's INSERT ran."""
    per_db: Dict[str, Dict[str, int]] = {}
    executions: Counter = Counter()
    for path in sorted(paths):
        conn = sqlite3.connect(path)
        try:
            tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table' ORDER BY name")]
            per_db[path.name] = {t: conn.execute(f'SELECT COUNT(*) FROM "{t}"').fetchone()[0] for t in tables}
            if "events" in tables:
                executions.update(r[0] for r in conn.execute("SELECT task_index FROM events"))
        finally:
            conn.close()
    intact = all(c.get("users") == N_USERS and c.get("orders") == N_ORDERS for c in per_db.values())
    return {"databases": per_db, "all_intact": intact and bool(per_db), "insert_executions": dict(executions)}
