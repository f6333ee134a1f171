"""A MariaDB (or MySQL) server's catalog for the schema-aware mode (see :mod:`.schema`).

Read from ``information_schema``, in every schema the guard's user can see except the server's
own (``mysql``, ``sys``, ``information_schema``, ``performance_schema``), because a statement
may name a table of another database and the readers keep table names without their schema:

* ``TRIGGERS``: each trigger's ``ACTION_STATEMENT``, by ``EVENT_MANIPULATION``;
* ``ROUTINES``: procedures and functions by name, judged by ``ROUTINE_DEFINITION`` (NULL when
  the user lacks the privilege to see it: that routine stays unknown);
* ``REFERENTIAL_CONSTRAINTS``: ``ON DELETE/UPDATE CASCADE/SET NULL/SET DEFAULT``. InnoDB does not
  fire triggers for the rows a cascade changes, so a cascade's writes are followed to further
  cascades only;
* ``VIEWS``: a write to a view also writes the tables its definition names (every table, when
  the definition cannot be read); and every statement, reads too, that names a view also counts
  as what the routines its definition calls run (a column calling a ``MODIFIES SQL DATA``
  function that deletes), through the views it reads in turn. A view whose definition cannot be
  read is unknown there.

Bodies are read by the sqlglot reader as a MariaDB compound statement (``BEGIN NOT ATOMIC``),
from their words: every statement word counts, ``REPLACE`` as a delete, every unknown call and
``CALL`` is looked up in turn, and ``PREPARE``/``EXECUTE`` cannot be checked.

Change detector: the rows read above, hashed (SHA-256) each check; the bodies are read again
only when the hash changes. ``information_schema`` is built from the server's data dictionary,
not from a transaction's snapshot, so each check sees what is committed.
"""

from __future__ import annotations

import functools
import hashlib
from typing import Any, Dict, List, Optional, Tuple

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

from .effects import SQLStatement, Unknown
from .generic import read_generic
from .schema import ANY_TABLE, Catalog, CatalogUnreadable, Consequence, any_of, body_of

__all__ = ["MariaDBCatalog"]

_SERVER_SCHEMAS = "('mysql', 'sys', 'information_schema', 'performance_schema')"
_TRIGGERS = (
    "SELECT TRIGGER_SCHEMA, TRIGGER_NAME, EVENT_MANIPULATION, EVENT_OBJECT_TABLE, ACTION_STATEMENT "
    f"FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA NOT IN {_SERVER_SCHEMAS} "
    "ORDER BY TRIGGER_SCHEMA, TRIGGER_NAME"
)
_ROUTINES = (
    "SELECT ROUTINE_SCHEMA, ROUTINE_NAME, ROUTINE_TYPE, ROUTINE_DEFINITION "
    f"FROM information_schema.ROUTINES WHERE ROUTINE_SCHEMA NOT IN {_SERVER_SCHEMAS} "
    "ORDER BY ROUTINE_SCHEMA, ROUTINE_NAME, ROUTINE_TYPE"
)
_FOREIGN_KEYS = (
    "SELECT CONSTRAINT_SCHEMA, CONSTRAINT_NAME, TABLE_NAME, REFERENCED_TABLE_NAME, DELETE_RULE, UPDATE_RULE "
    f"FROM information_schema.REFERENTIAL_CONSTRAINTS WHERE CONSTRAINT_SCHEMA NOT IN {_SERVER_SCHEMAS} "
    "ORDER BY CONSTRAINT_SCHEMA, CONSTRAINT_NAME"
)
_VIEWS = (
    "SELECT TABLE_SCHEMA, TABLE_NAME, VIEW_DEFINITION "
    f"FROM information_schema.VIEWS WHERE TABLE_SCHEMA NOT IN {_SERVER_SCHEMAS} ORDER BY TABLE_SCHEMA, TABLE_NAME"
)
#: information_schema shows a table's triggers only to a user with the TRIGGER privilege on it, and
#: other rows only for what the user may see: without these globally, a catalog read is partial.
_REQUIRED_PRIVILEGES = frozenset({"SELECT", "TRIGGER"})
_GLOBAL_PRIVILEGES = (
    "SELECT PRIVILEGE_TYPE FROM information_schema.USER_PRIVILEGES "
    "WHERE GRANTEE = CONCAT(CHAR(39), REPLACE(CURRENT_USER(), '@', CONCAT(CHAR(39), '@', CHAR(39))), CHAR(39))"
)
#: The compound statement a body is read inside adds BEGIN; a body's own transaction words
#: (``START TRANSACTION``) are not among what a deny list can mean to stop.
_WRAPPER_KINDS = frozenset({"BEGIN"})


def read_body(body: str, name: str) -> SQLStatement:
    """What a trigger's or routine's body counts as.

    >>> sorted(read_body("BEGIN REPLACE INTO t VALUES (1); END", "p").kinds)
    ['DELETE', 'INSERT', 'REPLACE']
    """
    return body_of(read_generic(f"BEGIN NOT ATOMIC {body}; END", "mariadb"), name, drop=_WRAPPER_KINDS)


class MariaDBCatalog(Catalog):
    """A MariaDB server's triggers, cascades, views and routines (see the module doc)."""

    database = "the MariaDB database"
    _QUERIES = (_TRIGGERS, _ROUTINES, _FOREIGN_KEYS, _VIEWS)

    def __init__(self, connection: Any, owned: bool = False, factory: Any = None) -> None:
        super().__init__(connection, owned, factory)
        self._read_rows: Tuple[List[Tuple[Any, ...]], ...] = ()
        self._definitions: Dict[str, List[Tuple[str, Optional[str]]]] = {}
        #: view -> (the tables it reads, the routines it calls), None when its definition cannot be read
        self._views: Dict[str, Optional[Tuple[Tuple[str, ...], Tuple[str, ...]]]] = {}

    def _fingerprint(self) -> Any:
        missing = _REQUIRED_PRIVILEGES - {str(p).upper() for (p,) in self._rows(_GLOBAL_PRIVILEGES)}
        if missing:
            raise CatalogUnreadable(
                f"cannot read {self.database}'s catalog: the guard's user lacks the global "
                f"{'/'.join(sorted(missing))} privilege, and information_schema hides the triggers, routines and keys "
                "of what a user may not see; grant it (GRANT SELECT, TRIGGER ON *.* TO ...) or connect as a user "
                "that has it"
            )
        self._read_rows = tuple(self._rows(query) for query in self._QUERIES)
        return hashlib.sha256(repr(self._read_rows).encode("utf-8", "surrogatepass")).hexdigest()

    def _read(self) -> None:
        triggers, routines, foreign_keys, views = self._read_rows
        for _schema, name, event, table, statement in triggers:
            what = f"trigger {name} on {table}"
            self._add(str(table), str(event).upper(), Consequence(what, read_body(str(statement), str(name).lower())))
        self._definitions = {}
        for schema, name, _type, definition in routines:
            entry = (str(schema).lower(), None if definition is None else str(definition))
            self._definitions.setdefault(str(name).lower(), []).append(entry)
        for _schema, name, child, parent, on_delete, on_update in foreign_keys:
            # MariaDB does not fire triggers for what a foreign-key cascade writes.
            self._add_cascade(name, child, parent, "DELETE", on_delete, fires_triggers=False)
            self._add_cascade(name, child, parent, "UPDATE", on_update, fires_triggers=False)
        also: Dict[str, List[str]] = {}
        self._views = {}
        for _schema, name, definition in views:
            also.setdefault(str(name).lower(), []).extend(_view_tables(definition))
            self._views[str(name).lower()] = _view_reads(definition)
        self._also_written = {name: tuple(dict.fromkeys(tables)) for name, tables in also.items()}

    def _needs_catalog(self, statement: SQLStatement) -> bool:
        return bool(_statement_tables(statement.text))

    def _reached(self, statement: SQLStatement) -> List[Tuple[SQLStatement, str]]:
        found: List[Tuple[SQLStatement, str]] = []
        seen: set = set()
        pending = list(_statement_tables(statement.text))
        while pending:
            view = pending.pop()
            if view in seen or view not in self._views:
                continue
            seen.add(view)
            reads = self._views[view]
            if reads is None:
                why = f"VIEW {view} (its definition cannot be read)"
                found.append((SQLStatement("", frozenset(), unknown=(Unknown("statement", view, why),)), why))
                continue
            tables, routines = reads
            pending.extend(tables)
            for routine in routines:
                body = self.routine(routine)
                if body is not None:
                    found.append((body, f"view {view} calls {routine}(), whose body runs it"))
        return found

    def _routine(self, name: str) -> Optional[SQLStatement]:
        schema, _, bare = name.rpartition(".")
        found = [d for s, d in self._definitions.get(bare, ()) if not schema or s == schema]
        if not found:
            return None
        bodies = [
            read_body(d, name) if d is not None else body_of(_NoDefinition(), name)  # the user may not see it: unknown
            for d in found
        ]
        return any_of(bodies)


class _NoDefinition:
    """An analysis of a body ``information_schema`` does not show."""

    problem = "ROUTINE_DEFINITION is NULL: the guard's user may not see this routine's body"
    statements = ()


def _view_tables(definition: Any) -> List[str]:
    """The tables a view's definition names; every table when it cannot be read."""
    if definition is None:
        return [ANY_TABLE]
    try:
        tree = sqlglot.parse_one(str(definition), read="mysql")
    except SqlglotError:
        return [ANY_TABLE]
    ctes = {c.alias_or_name.lower() for c in tree.find_all(exp.CTE)}
    return [t.name.lower() for t in tree.find_all(exp.Table) if t.name and t.name.lower() not in ctes] or []


def _parsed(text: Any) -> Optional[Any]:
    try:
        return sqlglot.parse(str(text), read="mysql")
    except SqlglotError:
        return None


@functools.lru_cache(maxsize=1024)
def _statement_tables(text: str) -> Tuple[str, ...]:
    """The table names ``text`` reads or writes (lower case, no schema); none when it cannot be read."""
    trees = _parsed(text) if text else None
    return tuple(
        dict.fromkeys(t.name.lower() for tree in trees or () if tree is not None for t in tree.find_all(exp.Table))
    )


def _view_reads(definition: Any) -> Optional[Tuple[Tuple[str, ...], Tuple[str, ...]]]:
    """(tables, routine calls) of a view's definition; None when it cannot be read."""
    trees = None if definition is None else _parsed(definition)
    if not trees:
        return None
    tables = tuple(dict.fromkeys(t.name.lower() for tree in trees if tree for t in tree.find_all(exp.Table)))
    calls = tuple(dict.fromkeys(f.name.lower() for tree in trees if tree for f in tree.find_all(exp.Anonymous)))
    return tables, calls
