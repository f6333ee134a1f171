"""A SQLite database's catalog for the schema-aware mode (see :mod:`.schema`).

Read from ``sqlite_master`` (triggers, by table and event, their bodies read by the sqlglot
reader) and ``pragma_foreign_key_list`` (cascades: SQLite runs them when ``PRAGMA foreign_keys``
is on in the writing connection, which the guard cannot see, so they are always counted). The
change detector is ``PRAGMA schema_version``, which SQLite bumps on every schema change.

>>> import sqlite3
>>> conn = sqlite3.connect(":memory:")
>>> _ = conn.executescript("CREATE TABLE t (a); CREATE TABLE log (a);"
...     "CREATE TRIGGER purge AFTER UPDATE ON t BEGIN DELETE FROM log; END;")
>>> [(c.what, sorted(c.body.kinds)) for c in SQLiteCatalog(conn).fired("t", "UPDATE")]
[('trigger purge on t', ['DELETE'])]
"""

from __future__ import annotations

import os
import re
import sqlite3
from typing import Any, Callable, FrozenSet, Optional

from .effects import SQLStatement, Unknown
from .generic import read_generic
from .schema import Catalog, Consequence, body_of

__all__ = ["SQLiteCatalog"]

_TRIGGER_EVENT = re.compile(r"\b(INSERT|UPDATE|DELETE)\b", re.IGNORECASE)
_HEADER_END = re.compile(r"\bON\b", re.IGNORECASE)


class SQLiteCatalog(Catalog):
    """A SQLite database's triggers and foreign-key cascades, current with its schema version."""

    database = "the SQLite database"

    @classmethod
    def from_path(cls, database: Any) -> "SQLiteCatalog":
        path = os.fspath(database)
        if not os.path.exists(path):
            raise FileNotFoundError(f"database={path!r}: no such SQLite file")
        return cls(sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False), owned=True)

    def __init__(self, connection: Any, owned: bool = False, factory: Optional[Callable[[], Any]] = None) -> None:
        super().__init__(connection, owned, factory)

    def _fingerprint(self) -> Any:
        return self._rows("PRAGMA schema_version")[0][0]

    def _read(self) -> None:
        for name, table, sql in self._rows("SELECT name, tbl_name, sql FROM sqlite_master WHERE type = 'trigger'"):
            analysis = read_generic(sql or "", "sqlite")
            header_end = _HEADER_END.search(sql or "")
            event = _TRIGGER_EVENT.search((sql or "")[: header_end.start()]) if header_end else None
            what = f"trigger {name} on {table}"
            if analysis.problem is not None or event is None or len(analysis.statements) != 1:
                # A trigger the guard cannot read: every write to its table is unknown.
                body = SQLStatement("", frozenset(), unknown=(Unknown("statement", f"TRIGGER {name}"),))
                events: FrozenSet[str] = frozenset({"INSERT", "UPDATE", "DELETE"})
            else:
                body = body_of(analysis, str(name), drop=frozenset({"CREATE"}))  # a trigger body holds no DDL
                events = frozenset({event.group(1).upper()})
            for one in events:
                self._add(str(table), one, Consequence(what, body))
        rows = self._rows(
            'SELECT m.name, f.id, f."table", f.on_delete, f.on_update FROM sqlite_master AS m, '
            "pragma_foreign_key_list(m.name) AS f WHERE m.type = 'table'"
        )
        for child, key, parent, on_delete, on_update in rows:
            self._add_cascade(key, child, parent, "DELETE", on_delete)
            self._add_cascade(key, child, parent, "UPDATE", on_update)
