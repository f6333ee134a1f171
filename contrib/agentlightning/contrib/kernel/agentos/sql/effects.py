"""What SQL does, as data: the closed set of effects ``SQLPolicy`` knows, one row each.

The guard allows what it can show is safe. Every statement, every function call and every body
(routine, trigger, event, ``DO``, prepared text) is placed in one of the rows of :data:`EFFECTS`;
a construct no row places is ``unknown``, and ``unknown`` blocks, with a reason naming the
construct and the opt-in that allows it (``SQLPolicy(allow_statements=[...])``,
``SQLPolicy(allow_functions=[...])``). Each row says which words of a deny or allow list it
counts as (``kinds``): ``deny=["DELETE"]`` blocks every row that counts as DELETE, ``REPLACE``
among them.

A row has one predicate per reader: which sqlglot nodes it matches (``generic``), which command
words (``generic``, for statements sqlglot keeps as a ``Command``), which PostgreSQL parse-tree
nodes (``postgres``). The readers only walk and look rows up; the predicates themselves live
beside the readers (:mod:`.rules`), keyed by the row's ``name``. The table in ``docs/kernel.md``
is generated from these rows (:func:`effects_table`) and a test checks it matches.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, FrozenSet, Iterable, Mapping, Optional, Tuple

__all__ = [
    "SQL_KEYWORDS",
    "Effect",
    "EFFECTS",
    "EFFECT_BY_NAME",
    "UNKNOWN",
    "Unknown",
    "SQLStatement",
    "SQLAnalysis",
    "Unverifiable",
    "KindSet",
    "EMPTY_SQL",
    "SQLITE_SCHEMA_TABLES",
    "snippet",
    "effects_table",
]

#: Every kind a deny or allow list may name.
SQL_KEYWORDS: FrozenSet[str] = frozenset(
    """SELECT INSERT UPDATE DELETE MERGE DROP TRUNCATE ALTER CREATE GRANT REVOKE ATTACH DETACH PRAGMA
    BEGIN COMMIT ROLLBACK COPY DESCRIBE SHOW USE SET ANALYZE COMMENT REPLACE VACUUM EXPLAIN REINDEX
    EXECUTE EXEC CALL LOAD CHECKPOINT DO PREPARE DEALLOCATE LOCK NOTIFY LISTEN UNLISTEN REFRESH CLUSTER
    DISCARD RESET HANDLER SAVEPOINT RELEASE FETCH CLOSE DECLARE FLUSH OPTIMIZE""".split()
)


@dataclass(frozen=True)
class Effect:
    """One row: an effect, what it counts as, the forms it covers, and why (quoted in reasons
    when a kind is implied rather than the statement's own keyword)."""

    name: str
    kinds: FrozenSet[str]
    forms: str
    why: str
    #: A group of statements that each count as their own keyword (one of ``kinds``) only.
    group: bool = False


def _row(name: str, kinds: str, forms: str, why: str, group: bool = False) -> Effect:
    return Effect(name, frozenset(kinds.split()), forms, why, group)


#: The closed set. Order is the docs table's order.
EFFECTS: Tuple[Effect, ...] = (
    _row("read", "SELECT", "`SELECT`, `VALUES`, `TABLE t`, read-only `WITH`", "reads rows"),
    _row("insert rows", "INSERT", "`INSERT`, `INSERT IGNORE`, SQLite `INSERT OR IGNORE/ABORT/FAIL`", "adds rows"),
    _row(
        "update rows",
        "UPDATE",
        "`UPDATE`, SQLite `UPDATE OR IGNORE/ABORT/FAIL/ROLLBACK`",
        "changes rows",
    ),
    _row("delete rows", "DELETE", "`DELETE`", "deletes rows"),
    _row(
        "replace rows",
        "REPLACE INSERT DELETE",
        "`REPLACE INTO`, `INSERT/UPDATE OR REPLACE`, `ON CONFLICT REPLACE`, `LOAD DATA ... REPLACE`",
        "REPLACE deletes the conflicting row before inserting: counts as DELETE",
    ),
    _row(
        "upsert",
        "INSERT UPDATE",
        "`ON CONFLICT DO UPDATE`, `ON DUPLICATE KEY UPDATE`",
        "a conflict clause that updates existing rows counts as UPDATE",
    ),
    _row("merge", "MERGE", "`MERGE` (and the kinds of its branches)", "a MERGE branch runs it"),
    _row("truncate", "TRUNCATE", "`TRUNCATE`", "deletes every row"),
    _row("drop object", "DROP", "`DROP ...`, PostgreSQL `DROP OWNED`", "removes an object and its rows"),
    _row(
        "create object",
        "CREATE",
        "`CREATE TABLE/VIEW/INDEX/SCHEMA/SEQUENCE/...`, `CREATE TEMP TABLE ... ON COMMIT DROP`",
        "creates an object",
    ),
    _row(
        "replace object",
        "CREATE DROP",
        "`CREATE OR REPLACE TABLE/DATABASE/SCHEMA`",
        "CREATE OR REPLACE of a table or database drops the existing one and its rows: counts as DROP",
    ),
    _row(
        "redefine object",
        "CREATE ALTER",
        "`CREATE OR REPLACE VIEW/FUNCTION/PROCEDURE/TRIGGER`",
        "CREATE OR REPLACE redefines an existing object: counts as ALTER",
    ),
    _row(
        "alter object",
        "ALTER",
        "`ALTER ... ADD/RENAME/MODIFY/ALTER COLUMN` (incl. `DROP NOT NULL`, `DROP DEFAULT`), `RENAME`, "
        "PostgreSQL `REASSIGN OWNED`, ownership, comments",
        "changes an object's definition; no rows are removed",
    ),
    _row(
        "alter dropping a part",
        "ALTER DROP",
        "`ALTER ... DROP COLUMN/CONSTRAINT/INDEX/PARTITION`, `DISCARD TABLESPACE`",
        "ALTER ... DROP removes a column, key or partition (and its data): counts as DROP",
    ),
    _row(
        "alter truncating a part",
        "ALTER TRUNCATE",
        "`ALTER ... TRUNCATE PARTITION`",
        "ALTER ... TRUNCATE PARTITION deletes its rows: counts as TRUNCATE",
    ),
    _row(
        "alter deleting duplicates",
        "ALTER DELETE",
        "`ALTER IGNORE TABLE ...`",
        "ALTER IGNORE deletes the rows that conflict with a unique key while it rebuilds: counts as DELETE",
    ),
    _row(
        "schema table write",
        "DROP",
        "`INSERT/UPDATE/DELETE` on `sqlite_master`/`sqlite_schema`",
        "writing SQLite's schema table can remove tables: counts as DROP",
    ),
    _row("select into", "SELECT CREATE", "`SELECT ... INTO t`", "SELECT ... INTO creates a table: counts as CREATE"),
    _row(
        "load rows",
        "INSERT",
        "`COPY t FROM ...`, `LOAD DATA/XML ... INTO TABLE` (without `REPLACE`)",
        "COPY ... FROM or LOAD DATA loads rows: counts as INSERT",
    ),
    _row(
        "export rows",
        "COPY",
        "`COPY t TO STDOUT/file`",
        "copies rows out",
    ),
    _row(
        "privileges",
        "GRANT REVOKE",
        "`GRANT`, `REVOKE` (privilege names such as DELETE are no statement)",
        "changes privileges",
        group=True,
    ),
    _row(
        "attach database",
        "ATTACH DETACH",
        "SQLite `ATTACH/DETACH DATABASE`",
        "opens or closes another database file",
        group=True,
    ),
    _row(
        "describe",
        "SHOW DESCRIBE EXPLAIN HANDLER",
        "`SHOW`, `DESCRIBE`, `EXPLAIN` without ANALYZE, `HELP`, `CHECK/CHECKSUM TABLE`, MariaDB `HANDLER`",
        "reads metadata or a plan",
        group=True,
    ),
    _row(
        "run a statement",
        "EXPLAIN ANALYZE DO PREPARE EXECUTE",
        "`EXPLAIN ANALYZE stmt`, MariaDB `ANALYZE stmt`, static `PREPARE`/`EXECUTE` of text, SQL routine/trigger/"
        "event/`DO` bodies",
        "the statement or body runs: counts as what it contains",
        group=True,
    ),
    _row(
        "session settings",
        "SET USE RESET DISCARD",
        "`SET` of a setting that does not change how text is read, `USE`, PostgreSQL `RESET`/`DISCARD`",
        "changes this session only",
        group=True,
    ),
    _row(
        "non-strict sql_mode",
        "SET UPDATE",
        "MariaDB/MySQL `SET [STATEMENT] sql_mode` to modes without `STRICT_TRANS_TABLES`, `STRICT_ALL_TABLES` "
        "or `TRADITIONAL`",
        "without a strict mode, later writes silently truncate, clip or zero the values they store: counts as UPDATE",
    ),
    _row(
        "transaction control",
        "BEGIN COMMIT ROLLBACK SAVEPOINT RELEASE",
        "`BEGIN`, `START TRANSACTION`, `COMMIT`, `ROLLBACK`, `SAVEPOINT`, `RELEASE`",
        "delimits a transaction",
        group=True,
    ),
    _row("locks", "LOCK", "`LOCK TABLE(S)`, `UNLOCK TABLES`", "takes or releases locks", group=True),
    _row(
        "maintenance",
        "ANALYZE VACUUM REINDEX CHECKPOINT CLUSTER REFRESH FLUSH OPTIMIZE",
        "`ANALYZE TABLE`, `VACUUM`, `REINDEX`, `CHECKPOINT`, `CLUSTER`, `REFRESH MATERIALIZED VIEW`, `FLUSH`, "
        "`OPTIMIZE TABLE`",
        "rebuilds statistics, indexes or files; no rows change",
        group=True,
    ),
    _row(
        "notifications",
        "NOTIFY LISTEN UNLISTEN",
        "`NOTIFY`, `LISTEN`, `UNLISTEN`",
        "sends or awaits a message",
        group=True,
    ),
    _row(
        "cursors and prepared statements",
        "DECLARE FETCH CLOSE PREPARE EXECUTE DEALLOCATE",
        "`DECLARE ... CURSOR`, `FETCH`, `CLOSE`, `DEALLOCATE`",
        "reads through a cursor, or frees a statement",
        group=True,
    ),
    _row("comment", "COMMENT", "`COMMENT ON`", "sets an object's comment"),
    _row(
        "pragma",
        "PRAGMA",
        "SQLite `PRAGMA` of a known name (`table_info`, `foreign_keys = ON`, `user_version`, ...)",
        "reads or sets a database option",
    ),
    _row(
        "pure function",
        "",
        "a built-in its engine declares free of effects (PostgreSQL IMMUTABLE/STABLE, SQLite innocuous, "
        "a MariaDB section that computes values), or curated as harmless with a reason",
        "computes a value",
    ),
    _row(
        "unknown",
        "",
        "anything no other row places: other statements (`CALL`, `KILL`, `INSTALL`, `BINLOG`, ...), other "
        "`ALTER` actions (`ENGINE=`, partition surgery, `DETACH PARTITION`), settings that change how text is "
        "read (`sql_mode`, `standard_conforming_strings`, ...), unknown pragmas, every other function",
        "blocked: the guard cannot show it is safe; allow it with allow_statements=[...] or allow_functions=[...]",
    ),
)
EFFECT_BY_NAME: Mapping[str, Effect] = {row.name: row for row in EFFECTS}
UNKNOWN = EFFECT_BY_NAME["unknown"]


def effects_table() -> str:
    """The effects table of ``docs/kernel.md``, as Markdown, from :data:`EFFECTS`.

    >>> effects_table().splitlines()[0]
    '| effect | counts as | forms | why |'
    """
    lines = ["| effect | counts as | forms | why |", "| --- | --- | --- | --- |"]
    for row in EFFECTS:
        kinds = ", ".join(sorted(row.kinds)) if row.kinds else "(nothing)"
        if row.group:
            kinds = f"its keyword: {kinds}"
        if row is UNKNOWN:
            kinds = "**unknown: blocked**"
        lines.append(f"| {row.name} | {kinds} | {row.forms} | {row.why} |")
    return "\n".join(lines) + "\n"


#: The error of a text with no statement in it (only comments, whitespace or semicolons).
EMPTY_SQL = "empty SQL: no statement to run"
#: Text nested too deeply for a reader to reach its end: not read, so unverifiable (it blocks on every
#: path, text found in another tool's arguments included).
NESTED_TOO_DEEPLY = "nested too deeply to be read to the end (the reader ran out of stack)"

SQLITE_SCHEMA_TABLES = frozenset({"sqlite_master", "sqlite_schema", "sqlite_temp_master", "sqlite_temp_schema"})


def snippet(text: str, limit: int = 120) -> str:
    """``text`` on one line, cut to ``limit`` characters, for reasons and messages.

    >>> snippet("DELETE  FROM \t users")
    'DELETE FROM users'
    """
    if not _on_one_line(text):
        text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _on_one_line(text: str) -> bool:
    """Whether ``" ".join(text.split())`` is ``text`` itself, told without splitting: ASCII
    text whose only whitespace is single spaces between words. Every ASCII whitespace character
    but the space is a control character, which ``str.isprintable`` refuses (so does it other
    control characters: such text is split, which gives the same value)."""
    return text.isascii() and text.isprintable() and "  " not in text and text[:1] != " " and text[-1:] != " "


class Unverifiable(Exception):
    """The text is SQL, but what it would run cannot be known from it (always blocked)."""


@dataclass(frozen=True)
class Unknown:
    """A construct no row places. ``category`` is ``statement`` (allowed by
    ``allow_statements=[name]``) or ``function`` (a function or routine, allowed by
    ``allow_functions=[name]``)."""

    category: str
    name: str
    construct: str
    #: What else the reason says of it (which engines declare a call safe when none was named).
    hint: str = field(default="", compare=False)

    def reason(self) -> str:
        option = "allow_statements" if self.category == "statement" else "allow_functions"
        what = "function or routine" if self.category == "function" else "statement"
        hint = f"; it is {self.hint}" if self.hint else ""
        return (
            f"unknown effect: {what} {self.construct} is not one the guard knows to be safe{hint}; "
            f"if it is, allow it with SQLPolicy({option}=[{self.name!r}])"
        )


@dataclass(frozen=True)
class SQLStatement:
    """One statement: its text (may be empty when not needed), its kinds, why each kind beyond
    the statement's own keyword is there (``{kind: why}``), and its unknown constructs."""

    text: str
    kinds: FrozenSet[str]
    because: Tuple[Tuple[str, str], ...] = ()
    unknown: Tuple[Unknown, ...] = ()
    #: Tables whose rows it inserts, updates or deletes (lower case, no schema): what a
    #: schema-aware policy looks up triggers for.
    writes: Tuple[str, ...] = ()

    def why(self, kind: str) -> Optional[str]:
        """The reason ``kind`` is among this statement's kinds, when it is implied by an effect."""
        return next((why for k, why in self.because if k == kind), None)


@dataclass(frozen=True)
class SQLAnalysis:
    """What a piece of SQL text contains.

    ``error`` is set when the text could not be read as statements (a parse failure);
    ``unverifiable`` when it was read but what it runs cannot be known (dynamic SQL, a program,
    a body in another language). Either blocks. ``unknown`` lists the constructs no effect row
    places: they block unless a policy's opt-ins name them.

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
    def unknown(self) -> Tuple[Unknown, ...]:
        return tuple(dict.fromkeys(u for s in self.statements for u in s.unknown))

    @property
    def problem(self) -> Optional[str]:
        """Why this text must be blocked whatever the lists say, or None."""
        return self.error or self.unverifiable


class KindSet:
    """Kinds being collected for one statement, with the reasons of implied ones and the
    constructs found unknown.

    >>> k = KindSet(); k.add("INSERT"); k.apply(EFFECT_BY_NAME["replace rows"]); sorted(k.kinds)
    ['DELETE', 'INSERT', 'REPLACE']
    """

    __slots__ = ("kinds", "because", "unknown", "writes")

    def __init__(self) -> None:
        self.kinds: set = set()
        self.because: Dict[str, str] = {}
        self.unknown: Dict[Unknown, None] = {}
        self.writes: Dict[str, None] = {}

    def add(self, kind: str, why: Optional[str] = None) -> None:
        if why is not None and kind not in self.kinds:
            self.because.setdefault(kind, why)
        self.kinds.add(kind)

    def apply(self, effect: Effect, keyword: Optional[str] = None) -> None:
        """Count ``effect`` for a statement whose own keyword is ``keyword``: a group row adds
        the keyword only; another row adds its kinds too, each with the row's reason."""
        if keyword is not None and keyword in SQL_KEYWORDS:
            self.add(keyword)
        if effect.group:
            return
        for kind in effect.kinds:
            self.add(kind, None if kind == keyword else effect.why)

    def update(self, kinds: Iterable[str], why: Optional[str] = None) -> None:
        for kind in kinds:
            self.add(kind, why)

    def not_placed(self, category: str, name: str, construct: Optional[str] = None, hint: str = "") -> None:
        """Record a construct no row places (``unknown``)."""
        self.unknown[Unknown(category, name, construct or name, hint)] = None

    def merge(self, statements: Iterable[SQLStatement], why: str) -> None:
        """Add the kinds of nested statements (a body, a prepared text) as effects of this one."""
        for statement in statements:
            for kind in statement.kinds:
                self.add(kind, statement.why(kind) or why)
            for unknown in statement.unknown:
                self.unknown[unknown] = None
            for table in statement.writes:
                self.writes[table] = None

    def statement(self, text: str) -> SQLStatement:
        # SQLStatement(text, kinds, because, unknown, writes), built with its fields' dict at once:
        # the same values the frozen dataclass's __init__ would set one field (and one call) at a time.
        statement = _new_object(SQLStatement)
        _set_attribute(
            statement,
            "__dict__",
            {
                "text": text,
                "kinds": frozenset(self.kinds),
                "because": tuple(sorted(self.because.items())) if self.because else (),
                "unknown": tuple(self.unknown) if self.unknown else (),
                "writes": tuple(self.writes) if self.writes else (),
            },
        )
        return statement


_new_object = object.__new__
_set_attribute = object.__setattr__
