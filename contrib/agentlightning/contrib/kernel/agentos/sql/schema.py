"""Schema-aware judging: what the target database itself runs when a statement writes a table.

Text alone cannot show that ``UPDATE orders SET ...`` is safe when ``orders`` has a trigger that
deletes rows, nor what ``CALL archive()`` or ``SELECT purge(1)`` run. With
``SQLPolicy(database=...)`` the policy reads the database's catalog, keeps it current (each
database has a change detector, checked before every decision; the catalog is read again only
when it says something changed), and counts each statement as what it sets off there:

* a write (``INSERT``, ``UPDATE``, ``DELETE``, ``REPLACE``, ``MERGE``) to a table also counts as
  what that table's **triggers** for those events run, its **rules** (PostgreSQL) run, and what
  its **foreign-key cascades** do to the tables that reference it (``ON DELETE CASCADE``
  deletes their rows, ``ON DELETE/UPDATE SET NULL/SET DEFAULT`` and ``ON UPDATE CASCADE``
  update them), followed to the tables those write in turn. A write to a view also writes the
  tables it reads; a write to a partitioned or inherited table also writes its children. A
  write whose table the reader cannot name (``COPY ... FROM``, ``LOAD DATA``, ``MERGE``, a
  statement in a compound body read from its words) counts as a write to every table.
* a call no curated list places (``CALL p()``, ``SELECT f(x)``) is judged by the **routine's
  body** when the database has it, bodies called from bodies too; a PostgreSQL routine whose
  body cannot be read (``LANGUAGE c``, ``internal``, ...) is placed when ``pg_proc`` declares
  it ``IMMUTABLE`` or ``STABLE`` and stays ``unknown`` when it is ``VOLATILE``. A call of a
  routine the database does not have stays ``unknown``.

Each thing the database runs is a :class:`Consequence` (effects as data): who runs it, and what
it counts as, read by the same readers as the agent's text. A catalog that cannot be read (the
connection is down, a permission is missing) raises :class:`CatalogUnreadable`: the policy
blocks the action with that reason (fail closed), and tries again on the next check.

The readers are :mod:`.schema_sqlite`, :mod:`.schema_postgres` and :mod:`.schema_mariadb`;
:func:`open_schema` picks one by the connection's driver.

>>> import sqlite3
>>> conn = sqlite3.connect(":memory:")
>>> _ = conn.executescript("CREATE TABLE t (a); CREATE TABLE log (a);"
...     "CREATE TRIGGER purge AFTER UPDATE ON t BEGIN DELETE FROM log; END;")
>>> [s.kinds for s in open_schema(conn).expand([SQLStatement("UPDATE t SET a = 1", frozenset({"UPDATE"}),
...     writes=("t",))])] == [{"UPDATE", "DELETE"}]
True
"""

from __future__ import annotations

import os
import sqlite3
import threading
from dataclasses import dataclass
from typing import Any, Callable, Dict, FrozenSet, Iterable, List, Optional, Sequence, Set, Tuple

from ..violations import GovernanceConfigError
from .effects import SQLStatement, Unknown

__all__ = ["Consequence", "Catalog", "CatalogUnreadable", "Unjudged", "open_schema", "write_events", "ANY_TABLE"]

#: The written-table name that stands for "every table" (a write whose table cannot be named).
ANY_TABLE = "*"
_ROW_EVENTS = ("INSERT", "UPDATE", "DELETE")
#: The event of a statement that defines objects (PostgreSQL's event triggers fire on it), and
#: the kinds that fire it; kept under no table.
DDL_EVENT = "DDL"
DDL_KINDS = frozenset({"CREATE", "ALTER", "DROP", "GRANT", "REVOKE", "COMMENT"})
#: What a foreign key's referential action does to the referencing rows, by the event on the
#: referenced table; an action not here (``NO ACTION``, ``RESTRICT``) writes nothing.
_CASCADES = {
    ("DELETE", "CASCADE"): "DELETE",
    ("DELETE", "SET NULL"): "UPDATE",
    ("DELETE", "SET DEFAULT"): "UPDATE",
    ("UPDATE", "CASCADE"): "UPDATE",
    ("UPDATE", "SET NULL"): "UPDATE",
    ("UPDATE", "SET DEFAULT"): "UPDATE",
}


class CatalogUnreadable(Exception):
    """The database's catalog could not be read: what a statement sets off there is not known."""


@dataclass(frozen=True)
class Consequence:
    """One thing the database runs when a table is written: a trigger, a rule or a cascade.

    ``what`` names it in reasons (``trigger purge on orders``); ``body`` is what it counts as,
    its ``writes`` followed in turn; ``fires_triggers`` is False where the database does not
    fire triggers for what it writes (MariaDB's foreign-key cascades)."""

    what: str
    body: SQLStatement
    fires_triggers: bool = True
    #: ``trigger``, ``rule`` or ``cascade``
    source: str = "trigger"
    #: The reason given for a kind it adds (default: ``<what> runs it when this statement fires it``).
    why: str = ""

    def reason(self) -> str:
        return self.why or f"{self.what} runs it when this statement fires it"


def write_events(kinds: Iterable[str]) -> FrozenSet[str]:
    """The row events a statement of ``kinds`` fires (``REPLACE`` deletes, then inserts).

    >>> sorted(write_events({"REPLACE", "SELECT"}))
    ['DELETE', 'INSERT']
    """
    kinds = set(kinds)
    events = kinds.intersection(_ROW_EVENTS)
    if "REPLACE" in kinds:
        events |= {"INSERT", "DELETE"}
    return frozenset(events)


class Unjudged(Unknown):
    """A routine the catalog has but whose body cannot be judged: final, never looked up again
    (``allow_functions=[name]`` places it, as any unknown function)."""


def unreadable_body(name: str, why: str) -> Unknown:
    """The unknown a routine becomes when its body cannot be judged."""
    return Unjudged("function", name, f"{name}() ({why})")


def body_of(analysis: Any, name: str, drop: FrozenSet[str] = frozenset()) -> SQLStatement:
    """What a body read as ``analysis`` counts as (its kinds less ``drop``, the wrapper's own);
    a body that cannot be read or verified is unknown under ``name``."""
    if analysis.problem is not None:
        why = f"its body cannot be checked: {analysis.problem}"
        return SQLStatement("", frozenset(), unknown=(unreadable_body(name, why),))
    kinds: Set[str] = set()
    because: Dict[str, str] = {}
    unknown: Dict[Unknown, None] = {}
    writes: Dict[str, None] = {}
    for statement in analysis.statements:
        kinds |= statement.kinds
        because.update((k, w) for k, w in statement.because if k not in because)
        unknown.update(dict.fromkeys(statement.unknown))
        writes.update(dict.fromkeys(statement.writes))
    kinds -= drop
    return SQLStatement(
        "",
        frozenset(kinds),
        tuple(sorted((k, w) for k, w in because.items() if k in kinds)),
        tuple(unknown),
        tuple(writes),
    )


def any_of(bodies: Sequence[SQLStatement]) -> SQLStatement:
    """What a call counts as when any of ``bodies`` may be the one that runs (overloads, or one
    name in several schemas): all their kinds, reasons, unknown constructs and written tables."""
    return SQLStatement(
        "",
        frozenset().union(*(b.kinds for b in bodies)),
        tuple(dict.fromkeys(w for b in bodies for w in b.because)),
        tuple(dict.fromkeys(u for b in bodies for u in b.unknown)),
        tuple(dict.fromkeys(t for b in bodies for t in b.writes)),
    )


def _sets_off(statement: SQLStatement) -> bool:
    """Whether ``statement`` may set something off in the database (a write, a definition, a call
    no list places); a plain read of known functions does not."""
    return bool(
        write_events(statement.kinds)
        or statement.kinds & DDL_KINDS
        or any(u.category == "function" for u in statement.unknown)
    )


class Catalog:
    """A database's triggers, rules, cascades and routines, kept current with its catalog.

    A subclass reads one database: :meth:`_fingerprint` (cheap; it changes whenever anything
    read changes), :meth:`_read` (fills :attr:`_on_write` and :attr:`_also_written`) and
    :meth:`_routine` (a routine's body by name, or None when the database has none of that
    name). All reads happen under one lock, with the connection given (or made by the factory
    given); any error while reading is :class:`CatalogUnreadable`."""

    database = "the database"

    def __init__(self, connection: Any, owned: bool = False, factory: Optional[Callable[[], Any]] = None) -> None:
        self._conn = connection
        self._owned = owned or factory is not None
        self._factory = factory
        self._lock = threading.RLock()
        self._seen_fingerprint: Any = None
        #: (table, event) -> what writing it runs; table ``*``: a write to any table
        self._on_write: Dict[Tuple[str, str], List[Consequence]] = {}
        #: table -> tables written with it (a view's base tables, a parent's children)
        self._also_written: Dict[str, Tuple[str, ...]] = {}
        self._routines: Dict[str, Optional[SQLStatement]] = {}

    # ------------------------------------------------------------------ subclass hooks
    def _fingerprint(self) -> Any:
        raise NotImplementedError

    def _read(self) -> None:
        raise NotImplementedError

    def _routine(self, name: str) -> Optional[SQLStatement]:
        return None

    def _needs_catalog(self, statement: SQLStatement) -> bool:
        """Whether a statement that writes nothing and calls nothing unknown can still set something
        off here (PostgreSQL: a view's columns, a domain's CHECK, an operator, a shadowing function)."""
        return False

    def _reached(self, statement: SQLStatement) -> List[Tuple[SQLStatement, str]]:
        """What else ``statement`` runs through the schema, beyond triggers, rules and cascades:
        (body, why), each followed like a trigger's body."""
        return []

    # ------------------------------------------------------------------ reading
    def _rows(self, query: str) -> List[Tuple[Any, ...]]:
        return _rows_of(self._conn, query)

    def _add(self, table: str, event: str, consequence: Consequence) -> None:
        self._on_write.setdefault((table.lower(), event), []).append(consequence)

    def _add_cascade(
        self, key: Any, child: Any, parent: Any, event: str, action: Any, fires_triggers: bool = True
    ) -> None:
        """Foreign key ``key`` of ``child`` writes the referencing rows when ``parent`` sees ``event``
        with referential ``action`` (``CASCADE``, ``SET NULL``, ...); an action that writes nothing adds nothing."""
        action = str(action).upper()
        effect = _CASCADES.get((event, action))
        if effect is None:
            return
        what = f"foreign key {key} of {child} (ON {event} {action})"
        verb = "deletes" if effect == "DELETE" else "updates"
        self._add(
            str(parent),
            event,
            Consequence(
                what,
                SQLStatement("", frozenset({effect}), writes=(str(child).lower(),)),
                fires_triggers=fires_triggers,
                source="cascade",
                why=f"{what} {verb} the referencing rows of {child}",
            ),
        )

    def _refresh(self) -> None:
        if self._conn is None and self._factory is not None:
            self._conn = self._factory()
            if _database_of(self._conn) not in (None, "sqlite") and _autocommit(self._conn) is not True:
                self._close_quietly()
                raise CatalogUnreadable(
                    f"cannot read {self.database}'s catalog: the factory's connection is not in autocommit mode"
                )
        fingerprint = self._fingerprint()
        if fingerprint == self._seen_fingerprint:
            return
        self._on_write, self._also_written, self._routines = {}, {}, {}
        self._seen_fingerprint = None
        self._read()
        self._seen_fingerprint = fingerprint

    def routine(self, name: str) -> Optional[SQLStatement]:
        """What calling routine ``name`` (lower case, maybe schema-qualified) counts as."""
        if name not in self._routines:
            self._routines[name] = self._routine(name)
        return self._routines[name]

    def _targets(self, table: str) -> List[str]:
        """``table`` and every table a write to it also writes (views' bases, children)."""
        found, pending = [], [table]
        while pending:
            name = pending.pop()
            if name in found:
                continue
            found.append(name)
            pending.extend(self._also_written.get(name, ()))
        return found

    def _fired(self, table: str, event: str, triggers: bool) -> List[Consequence]:
        if table == ANY_TABLE:
            hits = [c for (_, e), cs in sorted(self._on_write.items()) if e == event for c in cs]
        else:
            hits = list(self._on_write.get((table, event), ()))
        return [c for c in hits if triggers or c.source == "cascade"]

    def fired(self, table: str, event: str) -> List[Consequence]:
        """What writing ``table`` (lower case) with ``event`` sets off directly, read now."""
        with self._lock:
            self._refresh()
            return self._fired(table, event, True)

    # ------------------------------------------------------------------ judging
    def expand(self, statements: Sequence[SQLStatement]) -> List[SQLStatement]:
        """Each statement with what it sets off in the database added (see the module doc).
        Statements that write nothing, call nothing unknown and (PostgreSQL) name no object that
        can run something set nothing off: for them the catalog is not consulted."""
        if not any(_sets_off(s) or self._needs_catalog(s) for s in statements):
            return list(statements)
        with self._lock:
            try:
                self._refresh()
                return [self._expand(s) for s in statements]
            except CatalogUnreadable:
                raise
            except Exception as err:  # any driver's error: the catalog is not known, so nothing is
                self._seen_fingerprint = None
                if self._factory is not None:  # a fresh connection on the next check
                    self._close_quietly()
                raise CatalogUnreadable(
                    f"cannot read {self.database}'s catalog ({type(err).__name__}: {' '.join(str(err).split())})"
                ) from err

    def _expand(self, statement: SQLStatement) -> SQLStatement:
        kinds = set(statement.kinds)
        because = dict(statement.because)
        unknown: Dict[Unknown, None] = {}
        seen: Set[str] = set()
        # (part, why its kinds count (None: the statement itself), whether its writes fire triggers)
        pending: List[Tuple[SQLStatement, Optional[str], bool]] = [(statement, None, True)]
        pending.extend((body, why, True) for body, why in self._reached(statement))
        while pending:
            part, why, triggers = pending.pop(0)
            if why is not None:
                for kind in sorted(part.kinds):
                    if kind not in kinds:
                        because[kind] = why
                    elif kind not in because:  # the statement's own kind: say what else it does
                        because[kind] = f"also: {why}"
                    kinds.add(kind)
            for u in part.unknown:
                body = None if isinstance(u, Unjudged) or u.category != "function" else self.routine(u.name)
                if body is None:
                    unknown[u] = None
                elif f"routine {u.name}" not in seen:
                    seen.add(f"routine {u.name}")
                    pending.append((body, f"routine {u.name}'s body runs it", True))
            events = write_events(part.kinds)
            if part.kinds & DDL_KINDS:
                for consequence in self._on_write.get(("", DDL_EVENT), ()):
                    if consequence.what not in seen:
                        seen.add(consequence.what)
                        pending.append((consequence.body, consequence.reason(), True))
            tables = part.writes or ((ANY_TABLE,) if events else ())
            for table in tables:
                for target in self._targets(table):
                    for event in sorted(events):
                        for consequence in self._fired(target, event, triggers):
                            if consequence.what not in seen:
                                seen.add(consequence.what)
                                pending.append((consequence.body, consequence.reason(), consequence.fires_triggers))
        return SQLStatement(
            statement.text,
            frozenset(kinds),
            tuple(sorted(because.items())),
            tuple(unknown),
            statement.writes,
        )

    def _close_quietly(self) -> None:
        try:
            if self._conn is not None:
                self._conn.close()
        except Exception:  # closing a broken connection may fail too; it is dropped either way
            pass
        self._conn = None

    def close(self) -> None:
        with self._lock:
            if self._owned:
                self._close_quietly()


# ---------------------------------------------------------------------- choosing a reader

_DRIVER_DATABASES = {
    "sqlite3": "sqlite",
    "psycopg": "postgres",
    "psycopg2": "postgres",
    "pymysql": "mariadb",
    "MySQLdb": "mariadb",
    "mysql": "mariadb",
    "mariadb": "mariadb",
}
#: The dialects a database's catalog fits (None: no dialect named).
_FITTING_DIALECTS = {
    "sqlite": {None, "sqlite"},
    "postgres": {None, "postgres"},
    "mariadb": {None, "mysql", "mariadb"},
}


def _database_of(connection: Any) -> Optional[str]:
    if isinstance(connection, sqlite3.Connection):
        return "sqlite"
    return _DRIVER_DATABASES.get(type(connection).__module__.split(".", 1)[0])


def _rows_of(connection: Any, query: str) -> List[Tuple[Any, ...]]:
    """Every row ``query`` returns on a DB-API ``connection``, each a tuple (its cursor closed)."""
    cursor = connection.cursor()
    try:
        cursor.execute(query)
        return [tuple(row) for row in cursor.fetchall()]
    finally:
        cursor.close()


def _autocommit(connection: Any) -> Optional[bool]:
    value = getattr(connection, "autocommit", None)
    if isinstance(value, bool):
        return value
    getter = getattr(connection, "get_autocommit", None)
    return bool(getter()) if callable(getter) else None


def open_schema(database: Any, dialect: Optional[str] = None) -> Catalog:
    """The catalog reader for ``database``: a path to a SQLite file, a DB-API connection
    (``sqlite3``, ``psycopg``/``psycopg2`` for PostgreSQL, ``pymysql``/``MySQLdb``/``mariadb``/
    ``mysql.connector`` for MariaDB and MySQL), or a function of no arguments that returns one
    (called again after the connection fails, so the guard recovers when the database does).
    A PostgreSQL or MariaDB connection must be the guard's own, in autocommit mode."""
    factory: Optional[Callable[[], Any]] = None
    if isinstance(database, (str, os.PathLike)):
        from .schema_sqlite import SQLiteCatalog

        catalog: Catalog = SQLiteCatalog.from_path(database)
        kind = "sqlite"
    else:
        connection = database
        if _database_of(connection) is None and callable(database):
            factory = database
            try:
                connection = factory()
            except Exception as err:
                raise GovernanceConfigError(f"database=: the connection factory failed ({err})") from err
        kind = _database_of(connection)
        if kind is None:
            raise TypeError(
                "database must be a path to a SQLite file, a DB-API connection (sqlite3, psycopg, pymysql, ...) "
                f"or a function returning one, got {type(connection).__name__}"
            )
        if kind != "sqlite" and _autocommit(connection) is not True:
            raise GovernanceConfigError(
                "database=: give the guard a connection of its own in autocommit mode (for example "
                "psycopg.connect(..., autocommit=True) or pymysql.connect(..., autocommit=True)); inside an open "
                "transaction it could read a stale catalog"
            )
        if kind == "sqlite":
            from .schema_sqlite import SQLiteCatalog

            catalog = SQLiteCatalog(connection, factory=factory)
        elif kind == "postgres":
            from .schema_postgres import PostgresCatalog

            catalog = PostgresCatalog(connection, factory=factory)
        else:
            from .schema_mariadb import MariaDBCatalog

            catalog = MariaDBCatalog(connection, factory=factory)
    if dialect not in _FITTING_DIALECTS[kind]:
        catalog.close()
        raise GovernanceConfigError(
            f"database= is a {kind} database but dialect={dialect!r} names another; name "
            f"{sorted(d for d in _FITTING_DIALECTS[kind] if d)} or no dialect"
        )
    return catalog
