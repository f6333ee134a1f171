"""Schema-aware judging: what the target database itself runs when a statement writes a table.

Text alone cannot show that ``UPDATE orders SET ...`` is safe when ``orders`` has a trigger that
deletes rows. With ``SQLPolicy(database=...)`` the policy reads the database's catalog once, and
again whenever its schema changes, and a statement that inserts, updates or deletes rows of a
table also counts as what that table's triggers for those events run.

Supported: SQLite, given as a path or a ``sqlite3.Connection`` (its triggers, read from
``sqlite_master``, re-read when ``PRAGMA schema_version`` changes). Other databases' catalogs
(PostgreSQL's triggers, rules, routines and ``pg_proc`` volatility, MariaDB's triggers and
routines) are not read yet: naming one is a configuration error, not a silent no-op.

>>> import sqlite3
>>> conn = sqlite3.connect(":memory:")
>>> _ = conn.executescript("CREATE TABLE t (a); CREATE TABLE log (a);"
...     "CREATE TRIGGER purge AFTER UPDATE ON t BEGIN DELETE FROM log; END;")
>>> schema = SQLiteSchema(conn)
>>> [(name, sorted(body.kinds)) for name, body in schema.fired("t", {"UPDATE"})]
[('purge', ['DELETE'])]
"""

from __future__ import annotations

import os
import re
import sqlite3
import threading
from typing import Any, Dict, FrozenSet, List, Optional, Set, Tuple

from .effects import SQLStatement, Unknown
from .generic import read_generic

__all__ = ["SQLiteSchema", "open_schema"]

_TRIGGER_EVENT = re.compile(r"\b(INSERT|UPDATE|DELETE)\b", re.IGNORECASE)
_HEADER_END = re.compile(r"\bON\b", re.IGNORECASE)


class SQLiteSchema:
    """A SQLite database's triggers, by table and event, kept current with its schema version."""

    def __init__(self, database: Any) -> None:
        if isinstance(database, sqlite3.Connection):
            self._conn, self._owned = database, False
        elif isinstance(database, (str, os.PathLike)):
            path = os.fspath(database)
            if not os.path.exists(path):
                raise FileNotFoundError(f"database={path!r}: no such SQLite file")
            self._conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False)
            self._owned = True
        else:
            raise TypeError(
                "database must be a path to a SQLite file or a sqlite3.Connection "
                f"(other databases' catalogs are not read yet), got {type(database).__name__}"
            )
        self._lock = threading.Lock()
        self._version: Optional[int] = None
        self._triggers: Dict[Tuple[str, str], List[Tuple[str, SQLStatement]]] = {}

    def _refresh(self) -> None:
        version = self._conn.execute("PRAGMA schema_version").fetchone()[0]
        if version == self._version:
            return
        triggers: Dict[Tuple[str, str], List[Tuple[str, SQLStatement]]] = {}
        rows = self._conn.execute("SELECT name, tbl_name, sql FROM sqlite_master WHERE type = 'trigger'").fetchall()
        for name, table, sql in rows:
            analysis = read_generic(sql or "", "sqlite")
            header = (sql or "")[: _HEADER_END.search(sql or "").start()] if _HEADER_END.search(sql or "") else ""
            event = _TRIGGER_EVENT.search(header)
            if analysis.problem is not None or event is None or len(analysis.statements) != 1:
                # A trigger the guard cannot read: every write to its table is unknown.
                body = SQLStatement("", frozenset(), unknown=(Unknown("statement", f"TRIGGER {name}"),))
                events: FrozenSet[str] = frozenset({"INSERT", "UPDATE", "DELETE"})
            else:
                created = analysis.statements[0]
                kinds = created.kinds - {"CREATE"}
                body = SQLStatement("", kinds, created.because, created.unknown)
                events = frozenset({event.group(1).upper()})
            for one in events:
                triggers.setdefault((str(table).lower(), one), []).append((str(name), body))
        self._triggers, self._version = triggers, version

    def fired(self, table: str, events: Set[str]) -> List[Tuple[str, SQLStatement]]:
        """The triggers (name, what the body counts as) that a write of ``events`` to ``table`` fires."""
        with self._lock:
            self._refresh()
            return [t for event in sorted(events) for t in self._triggers.get((table, event), [])]

    def close(self) -> None:
        if self._owned:
            self._conn.close()


def open_schema(database: Any) -> SQLiteSchema:
    """The schema reader for ``database`` (see the module doc for what is supported)."""
    return SQLiteSchema(database)
