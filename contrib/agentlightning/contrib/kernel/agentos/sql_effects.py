"""What a SQL statement does, in the vocabulary ``SQLPolicy(deny=[...], allow=[...])`` uses.

A statement has one or more *kinds*: its own keyword (``DELETE``) plus the kinds of what it
causes. Most statements are what their keyword says; the forms below destroy or change data
without the keyword, or do not run what their text contains. This table is the one place
that says how they count; the readers (``sql_generic`` for sqlglot, ``sql_postgres`` for
PostgreSQL's own parser) apply it, and a violation's reason quotes the ``why``.

=====================================  ==========================  =========================================
form                                   counts as                   why
=====================================  ==========================  =========================================
``REPLACE INTO``, ``INSERT OR          REPLACE, INSERT, DELETE     a conflicting row is deleted, then the new
REPLACE``, ``ON CONFLICT REPLACE``                                 one inserted
``INSERT ... ON CONFLICT DO UPDATE``,  INSERT, UPDATE              existing rows are updated
``ON DUPLICATE KEY UPDATE``
``CREATE OR REPLACE TABLE``            CREATE, DROP                the existing table and its rows are dropped
``CREATE OR REPLACE`` view, routine    CREATE, ALTER               an existing definition is replaced
``ALTER IGNORE ... ADD UNIQUE|PRIMARY``ALTER, DELETE               rows with duplicate keys are deleted
``ALTER ... DISCARD TABLESPACE``       ALTER, DROP                 the table's data file is deleted
``ALTER ... DROP`` column, constraint  ALTER, DROP                 the column (and its data) is removed
``ALTER ... TRUNCATE PARTITION``       ALTER, TRUNCATE             the partition's rows are deleted
write to ``sqlite_master``/``_schema`` its kind, DROP              editing SQLite's schema table can remove
                                                                   tables (``PRAGMA writable_schema``)
``SELECT ... INTO table``              SELECT, CREATE              a table is created
``COPY table FROM ...``                COPY, INSERT                rows are loaded
routine, trigger, rule or ``DO`` body  CREATE (DO), body's kinds   the body runs later (or now, for DO)
``EXPLAIN ANALYZE stmt``, MariaDB's    EXPLAIN, stmt's kinds       the statement is executed
``ANALYZE stmt``
``EXPLAIN stmt`` (no ANALYZE)          EXPLAIN                     the statement is only planned
``CREATE TEMP TABLE ... ON COMMIT      CREATE                      drops only the table it creates
DROP``
static ``PREPARE s FROM 'text'``,      PREPARE, text's kinds       the text is known now
``EXECUTE 'text'``
=====================================  ==========================  =========================================

Some text cannot be verified at all and is always blocked, whatever the lists say: SQL built
from strings at run time (``EXECUTE`` of an expression, ``PREPARE s FROM @var``, ``EXECUTE s`` of
a statement prepared elsewhere, dynamic ``EXECUTE`` in a PL/pgSQL body), a routine body in a
language other than SQL or PL/pgSQL, and ``COPY ... TO/FROM PROGRAM`` (a shell command on the
database server).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import FrozenSet, Iterable, Mapping, Optional, Tuple

__all__ = [
    "SQL_KEYWORDS",
    "Effect",
    "SQLStatement",
    "SQLAnalysis",
    "Unverifiable",
    "REPLACES_ROWS",
    "UPSERT",
    "REPLACES_TABLE",
    "REPLACES_DEFINITION",
    "IGNORE_UNIQUE",
    "DISCARDS_TABLESPACE",
    "ALTER_DROPS",
    "ALTER_TRUNCATES",
    "SCHEMA_TABLE_WRITE",
    "SELECT_INTO",
    "COPY_FROM",
    "EXPLAIN_ANALYZE",
    "ROUTINE_BODY",
    "STATIC_PREPARE",
    "SQLITE_SCHEMA_TABLES",
    "EMPTY_SQL",
    "snippet",
]

#: Every kind a deny or allow list may name.
SQL_KEYWORDS: FrozenSet[str] = frozenset(
    """SELECT INSERT UPDATE DELETE MERGE DROP TRUNCATE ALTER CREATE GRANT REVOKE ATTACH DETACH PRAGMA
    BEGIN COMMIT ROLLBACK COPY DESCRIBE SHOW USE SET ANALYZE COMMENT REPLACE VACUUM EXPLAIN REINDEX
    EXECUTE EXEC CALL LOAD CHECKPOINT DO PREPARE DEALLOCATE LOCK NOTIFY LISTEN UNLISTEN REFRESH CLUSTER
    DISCARD RESET HANDLER SAVEPOINT RELEASE FETCH CLOSE DECLARE""".split()
)


@dataclass(frozen=True)
class Effect:
    """Kinds a form counts as beyond its keyword, and why (quoted in violation reasons)."""

    kinds: FrozenSet[str]
    why: str


def _effect(kinds: str, why: str) -> Effect:
    return Effect(frozenset(kinds.split()), why)


REPLACES_ROWS = _effect(
    "REPLACE INSERT DELETE", "REPLACE deletes the conflicting row before inserting: counts as DELETE"
)
UPSERT = _effect("INSERT UPDATE", "a conflict clause that updates existing rows counts as UPDATE")
REPLACES_TABLE = _effect("CREATE DROP", "CREATE OR REPLACE TABLE drops the existing table and its rows: counts as DROP")
REPLACES_DEFINITION = _effect("CREATE ALTER", "CREATE OR REPLACE redefines an existing object: counts as ALTER")
IGNORE_UNIQUE = _effect("ALTER DELETE", "ALTER IGNORE adding a unique key deletes duplicate rows: counts as DELETE")
DISCARDS_TABLESPACE = _effect("ALTER DROP", "DISCARD TABLESPACE deletes the table's data file: counts as DROP")
ALTER_DROPS = _effect("ALTER DROP", "ALTER ... DROP removes a column, key or partition: counts as DROP")
ALTER_TRUNCATES = _effect("ALTER TRUNCATE", "ALTER ... TRUNCATE PARTITION deletes its rows: counts as TRUNCATE")
SCHEMA_TABLE_WRITE = _effect("DROP", "writing SQLite's schema table can remove tables: counts as DROP")
SELECT_INTO = _effect("CREATE", "SELECT ... INTO creates a table: counts as CREATE")
COPY_FROM = _effect("INSERT", "COPY ... FROM loads rows: counts as INSERT")
EXPLAIN_ANALYZE = "EXPLAIN ANALYZE (MariaDB: ANALYZE) executes the statement it explains"
ROUTINE_BODY = "a routine, trigger, rule or DO body runs its statements"
STATIC_PREPARE = "the prepared text runs when executed"

#: The error of a text with no statement in it (only comments, whitespace or semicolons).
EMPTY_SQL = "empty SQL: no statement to run"

SQLITE_SCHEMA_TABLES = frozenset({"sqlite_master", "sqlite_schema", "sqlite_temp_master", "sqlite_temp_schema"})


def snippet(text: str, limit: int = 120) -> str:
    """``text`` on one line, cut to ``limit`` characters, for reasons and messages.

    >>> snippet("DELETE  FROM \t users")
    'DELETE FROM users'
    """
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


class Unverifiable(Exception):
    """The text is SQL, but what it would run cannot be known from it (always blocked)."""


@dataclass(frozen=True)
class SQLStatement:
    """One statement: its text (may be empty when not needed), its kinds, and why each kind
    beyond the statement's own keyword is there (``{kind: why}``)."""

    text: str
    kinds: FrozenSet[str]
    because: Tuple[Tuple[str, str], ...] = ()

    def why(self, kind: str) -> Optional[str]:
        """The reason ``kind`` is among this statement's kinds, when it is implied by an effect."""
        return next((why for k, why in self.because if k == kind), None)


@dataclass(frozen=True)
class SQLAnalysis:
    """What a piece of SQL text contains.

    ``error`` is set when the text could not be read as statements (a parse failure);
    ``unverifiable`` when it was read but what it runs cannot be known (dynamic SQL, a program,
    a body in another language). Either blocks.

    >>> SQLAnalysis((SQLStatement("DELETE FROM t", frozenset({"DELETE"})),)).kinds
    frozenset({'DELETE'})
    """

    statements: Tuple[SQLStatement, ...]
    error: Optional[str] = None
    unverifiable: Optional[str] = None

    @property
    def kinds(self) -> FrozenSet[str]:
        return frozenset().union(*(s.kinds for s in self.statements))

    @property
    def problem(self) -> Optional[str]:
        """Why this text must be blocked whatever the lists say, or None."""
        return self.error or self.unverifiable


class KindSet:
    """Kinds being collected for one statement, with the reasons of implied ones.

    >>> k = KindSet(); k.add("INSERT"); k.apply(REPLACES_ROWS); sorted(k.kinds)
    ['DELETE', 'INSERT', 'REPLACE']
    """

    __slots__ = ("kinds", "because")

    def __init__(self) -> None:
        self.kinds: set = set()
        self.because: dict = {}

    def add(self, kind: str, why: Optional[str] = None) -> None:
        if why is not None and kind not in self.kinds:
            self.because.setdefault(kind, why)
        self.kinds.add(kind)

    def apply(self, effect: Effect) -> None:
        for kind in effect.kinds:
            self.add(kind, effect.why)

    def update(self, kinds: Iterable[str], why: Optional[str] = None) -> None:
        for kind in kinds:
            self.add(kind, why)

    def merge(self, statements: Iterable[SQLStatement], why: str) -> None:
        """Add the kinds of nested statements (a body, a prepared text) as effects of this one."""
        for statement in statements:
            for kind in statement.kinds:
                self.add(kind, statement.why(kind) or why)

    def statement(self, text: str) -> SQLStatement:
        because: Mapping[str, str] = self.because
        return SQLStatement(text, frozenset(self.kinds), tuple(sorted(because.items())))
