"""A SQLite database's catalog for the schema-aware mode (see :mod:`.schema`).

Read from the ``sqlite_master`` of every database of the connection (``main``, ``temp`` and each
attached file, as ``PRAGMA database_list`` lists them): triggers, by table and event, their bodies
read by the sqlglot reader; full-text tables (``CREATE VIRTUAL TABLE ... USING fts3/fts4/fts5``);
and ``pragma_foreign_key_list`` (cascades: SQLite runs them when ``PRAGMA foreign_keys`` is on in
the writing connection, which the guard cannot see, so they are always counted). The change
detector is the database list with each one's ``PRAGMA schema_version``, which SQLite bumps on
every schema change.

Two constructs reach beyond what a statement's text names:

* an ``ATTACH`` in the agent's text brings in a file whose triggers the guard has not read (an
  ``INSERT INTO o.t`` can fire a trigger there that deletes): in schema-aware mode it is unknown
  (``allow_statements=["ATTACH"]`` trusts attached files);
* an ``INSERT`` into a full-text table that names the table's own hidden column is a command, not
  a row: ``INSERT INTO ft(ft) VALUES ('delete-all')`` empties the index. A command of
  :data:`FTS_COMMANDS_KEEPING_ROWS` counts as what its text says; any other (``delete-all``,
  ``delete``, one the guard cannot read) counts as DELETE.

>>> import sqlite3
>>> conn = sqlite3.connect(":memory:")
>>> _ = conn.executescript("CREATE TABLE t (a); CREATE TABLE log (a);"
...     "CREATE TRIGGER purge AFTER UPDATE ON t BEGIN DELETE FROM log; END;")
>>> [(c.what, sorted(c.body.kinds)) for c in SQLiteCatalog(conn).fired("t", "UPDATE")]
[('trigger purge on t', ['DELETE'])]
>>> _ = conn.execute("CREATE VIRTUAL TABLE ft USING fts5(body, content='')")
>>> [sorted(s.kinds) for s in SQLiteCatalog(conn).expand([SQLStatement(
...     "INSERT INTO ft(ft) VALUES ('delete-all')", frozenset({"INSERT"}), writes=("ft",))])]
[['DELETE', 'INSERT']]
"""

from __future__ import annotations

import dataclasses
import os
import re
import sqlite3
from typing import Any, Callable, FrozenSet, List, Optional, Sequence, Set

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

from .effects import SQLStatement, Unknown
from .generic import read_generic
from .schema import Catalog, Consequence, body_of

__all__ = ["SQLiteCatalog", "FTS_COMMANDS_KEEPING_ROWS"]

_TRIGGER_EVENT = re.compile(r"\b(INSERT|UPDATE|DELETE)\b", re.IGNORECASE)
_HEADER_END = re.compile(r"\bON\b", re.IGNORECASE)
_FULL_TEXT = re.compile(r"^\s*CREATE\s+VIRTUAL\s+TABLE\b.*?\bUSING\s+fts[345]\b", re.IGNORECASE | re.DOTALL)
#: Full-text commands (the value inserted into the table's own hidden column, before any ``=``)
#: that keep every document: each with why (SQLite's FTS3/4 and FTS5 manuals).
FTS_COMMANDS_KEEPING_ROWS = {
    "optimize": "merges the index's segments into one",
    "merge": "merges some of the index's segments",
    "rebuild": "rebuilds the index from the content table",
    "integrity-check": "reads the index",
    "automerge": "a setting: when segments are merged",
    "crisismerge": "a setting: when segments are merged",
    "usermerge": "a setting: how many segments a merge takes",
    "deletemerge": "a setting: when deleted entries are merged away",
    "pgsz": "a setting: the index's page size",
    "rank": "a setting: the default ranking function",
    "secure-delete": "a setting: how deleted entries are overwritten",
}
_FTS_COMMAND_DELETES = (
    "an INSERT naming a full-text table's own column is a command; {command} removes documents from its index"
)


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
        #: full-text tables (lower case), whose INSERT naming the table's own column is a command
        self._full_text: Set[str] = set()

    def _fingerprint(self) -> Any:
        return tuple(
            (name, path, self._rows(f"PRAGMA {_quoted(name)}.schema_version")[0][0]) for name, path in self._schemas()
        )

    def _schemas(self) -> List[Any]:
        """(name, file) of every database of the connection: main, temp and the attached ones."""
        return [(str(row[1]), str(row[2] or "")) for row in self._rows("PRAGMA database_list")]

    def _read(self) -> None:
        self._full_text = set()
        rows = []
        for schema, _ in self._schemas():
            master = f"{_quoted(schema)}.sqlite_master"
            rows += self._rows(f"SELECT name, tbl_name, sql FROM {master} WHERE type = 'trigger'")
            for table, sql in self._rows(f"SELECT name, sql FROM {master} WHERE type = 'table'"):
                if _FULL_TEXT.match(sql or ""):
                    self._full_text.add(str(table).lower())
        for name, table, sql in rows:
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

    def expand(self, statements: Sequence[SQLStatement]) -> List[SQLStatement]:
        return super().expand([_attach_unknown(s) if "ATTACH" in s.kinds else s for s in statements])

    def _expand(self, statement: SQLStatement) -> SQLStatement:
        full_text = [t for t in statement.writes if t in self._full_text]
        if full_text and "INSERT" in statement.kinds:
            command = _deleting_fts_command(statement.text, set(full_text))
            if command is not None:
                because = dict(statement.because)
                because.setdefault("DELETE", _FTS_COMMAND_DELETES.format(command=command))
                statement = dataclasses.replace(
                    statement, kinds=statement.kinds | {"DELETE"}, because=tuple(sorted(because.items()))
                )
        return super()._expand(statement)


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _attach_unknown(statement: SQLStatement) -> SQLStatement:
    """An ATTACH in schema-aware mode: the attached file's triggers are outside the catalog read."""
    why = "ATTACH (the attached file's triggers, which a write there fires, are not in the catalog the guard read)"
    return dataclasses.replace(statement, unknown=statement.unknown + (Unknown("statement", "ATTACH", why),))


def _deleting_fts_command(text: str, full_text: Set[str]) -> Optional[str]:
    """The first full-text command in ``text`` that may remove documents (``'delete-all'``, or
    ``a command the guard cannot read``), None when every command keeps them or there is none."""
    try:
        trees = [t for t in sqlglot.parse(text, read="sqlite") if t is not None]
    except SqlglotError:
        return "a command the guard cannot read"
    for tree in trees:
        for insert in tree.find_all(exp.Insert):
            target = insert.this
            if not isinstance(target, exp.Schema) or not isinstance(target.this, exp.Table):
                continue
            table = target.this.name.lower()
            columns = [c.name.lower() for c in target.expressions]
            if table not in full_text or table not in columns:
                continue
            at = columns.index(table)
            rows = insert.expression.expressions if isinstance(insert.expression, exp.Values) else None
            for row in rows or [None]:
                values = row.expressions if isinstance(row, exp.Tuple) else []
                value = values[at] if at < len(values) else None
                if not (isinstance(value, exp.Literal) and value.is_string):
                    return "a command the guard cannot read"
                command = value.this.strip().lower().split("=", 1)[0].strip()
                if command not in FTS_COMMANDS_KEEPING_ROWS:
                    return repr(value.this)
    return None
