"""The database-enforced envelope: a governed SQL executor whose second line is the database itself.

Static analysis reads the text; what a schema runs (a view's column that calls a deleting
function, a column ``DEFAULT`` or ``CHECK`` that does, a trigger in an attached SQLite file, an
FTS5 command insert) can stay out of its sight. :class:`SQLEnvelope` runs SQL on a DB-API
connection so that the database refuses what the policy denies even when the text hides it:

1. The kernel decides first (``kernel.check``, recorded before anything runs). A blocked call
   never reaches the database. What runs is the decision's frozen action: the text the kernel
   judged, statement by statement as the policy's reader split it.
2. The statements the guard reads as reads only (``SELECT``, ``EXPLAIN``, ``SHOW``, ``COPY ...
   TO``, cursors) run in a read-only transaction: PostgreSQL ``BEGIN READ ONLY``, MariaDB
   ``START TRANSACTION READ ONLY``, SQLite ``PRAGMA query_only``. A hidden write fails there.
3. Other statements run in a transaction the envelope checks before it commits:

   * SQLite: the connection's authorizer (``set_authorizer``) refuses every action of the
     compiled program that counts as a kind the policy denies (``DELETE``, ``DROP``, ...),
     triggers, views and virtual tables' own statements included (an FTS5 ``delete-all``
     command deletes from its shadow tables, and the authorizer sees that);
   * PostgreSQL: the transaction's own statistics (``pg_stat_xact_user_tables``: rows
     inserted, updated, deleted, by table) and the catalog (relations and routines created,
     dropped, altered or truncated) are read before ``COMMIT``; a denied effect rolls back;
   * MariaDB: the session's row handler counters (``Handler_delete``, ``Handler_update``,
     ``Handler_write``) are read before ``COMMIT``; a denied effect rolls back. MariaDB's DDL
     commits at once and cannot be rolled back: for it only the static check counts.

4. A refusal by the database is a blocked decision (``kernel.refuse``, by ``SQLEnvelope``, with
   the database's message), recorded once in the audit trail; the allowed decision before it
   gets that outcome. :class:`SQLRefused` is raised for it and for a blocked check alike.

The envelope owns the connection while it runs a call: the transaction (give PostgreSQL and
MariaDB connections in autocommit mode, so each call is its own transaction), SQLite's
authorizer and ``query_only``. Statements that would end or split its transaction (``BEGIN``,
``COMMIT``, ``ROLLBACK``, ``SAVEPOINT``, ``RELEASE``) are refused before anything runs.

For example (``tests/test_sql_envelope.py`` runs it, and each class of hidden effect, on the
three engines)::

    conn = sqlite3.connect(":memory:")
    conn.executescript("CREATE TABLE t (a); CREATE TABLE log (a); INSERT INTO log VALUES (1), (2);"
                       "CREATE TRIGGER purge AFTER INSERT ON t BEGIN DELETE FROM log; END;")
    envelope = SQLEnvelope(GovernanceKernel([SQLPolicy(deny=["DELETE"], dialect="sqlite")]), conn)
    envelope.execute("INSERT INTO t VALUES (1)")  # raises SQLRefused: the trigger's DELETE is denied
    envelope.execute("SELECT count(*) FROM log").rows  # ((2,),)
"""

from __future__ import annotations

import contextlib
import sqlite3
import time
from dataclasses import dataclass
from typing import Any, Callable, Dict, FrozenSet, Iterator, List, Mapping, Optional, Sequence, Tuple

from ..actions import NO_COST, Action, ActionContext, Decision
from ..violations import GovernanceConfigError
from .effects import SQLStatement
from .policy import SQLPolicy
from .schema import _autocommit, _database_of, _rows_of

__all__ = ["SQLEnvelope", "SQLRefused", "SQLEnvelopeResult", "ENVELOPE_NAME", "READ_KINDS", "TRANSACTION_KINDS"]

#: The name a database's refusal is recorded under (``refused_by`` of the blocked decision).
ENVELOPE_NAME = "SQLEnvelope"
#: A statement whose kinds are all among these is a read: it runs in a read-only transaction.
READ_KINDS: FrozenSet[str] = frozenset({"SELECT", "EXPLAIN", "SHOW", "DESCRIBE", "COPY", "DECLARE", "FETCH", "CLOSE"})
#: Statements that would end or split the envelope's own transaction: refused before anything runs.
TRANSACTION_KINDS: FrozenSet[str] = frozenset({"BEGIN", "COMMIT", "ROLLBACK", "SAVEPOINT", "RELEASE"})
#: The savepoint a SQLite call runs in (a transaction of its own, or nested in the caller's).
_SAVEPOINT = "agentos_envelope"

# ------------------------------------------------------------------------------------ SQLite
#: What each SQLite authorizer action counts as (the kinds of a deny or allow list).
_SQLITE_ACTION_KINDS: Dict[int, str] = {
    **{
        code: "CREATE"
        for code in (
            sqlite3.SQLITE_CREATE_INDEX,
            sqlite3.SQLITE_CREATE_TABLE,
            sqlite3.SQLITE_CREATE_TEMP_INDEX,
            sqlite3.SQLITE_CREATE_TEMP_TABLE,
            sqlite3.SQLITE_CREATE_TEMP_TRIGGER,
            sqlite3.SQLITE_CREATE_TEMP_VIEW,
            sqlite3.SQLITE_CREATE_TRIGGER,
            sqlite3.SQLITE_CREATE_VIEW,
            sqlite3.SQLITE_CREATE_VTABLE,
        )
    },
    **{
        code: "DROP"
        for code in (
            sqlite3.SQLITE_DROP_INDEX,
            sqlite3.SQLITE_DROP_TABLE,
            sqlite3.SQLITE_DROP_TEMP_INDEX,
            sqlite3.SQLITE_DROP_TEMP_TABLE,
            sqlite3.SQLITE_DROP_TEMP_TRIGGER,
            sqlite3.SQLITE_DROP_TEMP_VIEW,
            sqlite3.SQLITE_DROP_TRIGGER,
            sqlite3.SQLITE_DROP_VIEW,
            sqlite3.SQLITE_DROP_VTABLE,
        )
    },
    sqlite3.SQLITE_DELETE: "DELETE",
    sqlite3.SQLITE_INSERT: "INSERT",
    sqlite3.SQLITE_UPDATE: "UPDATE",
    sqlite3.SQLITE_ALTER_TABLE: "ALTER",
    sqlite3.SQLITE_ATTACH: "ATTACH",
    sqlite3.SQLITE_DETACH: "DETACH",
    sqlite3.SQLITE_REINDEX: "REINDEX",
    sqlite3.SQLITE_ANALYZE: "ANALYZE",
}
#: Authorizer actions that would end or split the envelope's transaction: always refused.
_SQLITE_TRANSACTION_ACTIONS = frozenset({sqlite3.SQLITE_TRANSACTION, sqlite3.SQLITE_SAVEPOINT})
#: SQLite's own tables, written by CREATE/DROP/ALTER/ANALYZE and AUTOINCREMENT (whose own
#: authorizer actions are judged): their row writes are bookkeeping, not the agent's rows.
#: ``writable_schema`` (the one way to write sqlite_master as rows) is refused below.
_SQLITE_BOOKKEEPING = ("sqlite_master", "sqlite_schema", "sqlite_temp_master", "sqlite_temp_schema", "sqlite_sequence")
#: PRAGMAs the envelope's guarantee rests on: setting them is always refused.
_SQLITE_GUARDED_PRAGMAS = frozenset({"query_only", "writable_schema", "trusted_schema"})

# ------------------------------------------------------------------------------------ PostgreSQL
_PG_ROW_EFFECTS = """
SELECT relname, n_tup_ins, n_tup_upd, n_tup_del FROM pg_catalog.pg_stat_xact_user_tables
WHERE n_tup_ins > 0 OR n_tup_upd > 0 OR n_tup_del > 0 ORDER BY relname
"""
#: The user objects a transaction can create, drop, truncate (a new relfilenode) or alter (a new
#: column list), one row each: (class, oid, name, storage, shape).
_PG_OBJECTS = """
SELECT 'relation', c.oid::bigint, n.nspname || '.' || c.relname, c.relfilenode::bigint,
       coalesce((SELECT string_agg(a.attname || ':' || a.atttypid::text || ':' || a.attnotnull::text
                                   || ':' || a.attisdropped::text, ',' ORDER BY a.attnum)
                 FROM pg_catalog.pg_attribute a WHERE a.attrelid = c.oid AND a.attnum > 0), '')
FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg\\_toast%'
UNION ALL
SELECT 'routine', p.oid::bigint, n.nspname || '.' || p.proname, 0, md5(p.prosrc || p.provolatile::text)
FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace
WHERE n.nspname NOT IN ('pg_catalog', 'information_schema')
UNION ALL
SELECT 'schema', n.oid::bigint, n.nspname, 0, ''
FROM pg_catalog.pg_namespace n WHERE n.nspname NOT IN ('pg_catalog', 'information_schema')
"""

# ------------------------------------------------------------------------------------ MariaDB
_MARIADB_HANDLERS = "SHOW SESSION STATUS WHERE Variable_name IN ('Handler_write', 'Handler_update', 'Handler_delete')"
_MARIADB_HANDLER_KINDS = {"Handler_write": "INSERT", "Handler_update": "UPDATE", "Handler_delete": "DELETE"}
_MARIADB_HANDLER_WORDS = {"Handler_write": "written", "Handler_update": "updated", "Handler_delete": "deleted"}


class SQLRefused(Exception):
    """A call the envelope did not complete: ``decision`` is the blocked decision (the policy's,
    the database's refusal, or the envelope's own before running it, both recorded by the
    envelope); ``by_database`` says whether the database refused it. Nothing it tried to change is
    left in the database (but see the docs for MariaDB's DDL)."""

    def __init__(self, decision: Decision, by_database: bool) -> None:
        self.decision = decision
        self.by_database = by_database
        super().__init__(f"SQL call {decision.action.tool_name!r} refused: {decision.reason}")


@dataclass(frozen=True)
class SQLEnvelopeResult:
    """What a completed call returned: the last statement's rows that return rows (``columns``
    None when none did), the rows the statements changed as the driver counts them, the allowed
    decision, and whether it ran read-only."""

    decision: Decision
    columns: Optional[Tuple[str, ...]]
    rows: Optional[Tuple[Tuple[Any, ...], ...]]
    rows_changed: int
    read_only: bool


class _DatabaseRefusal(Exception):
    """The database (or the envelope's check of what the transaction did) refused the call."""


def _message(err: BaseException) -> str:
    return " ".join(str(err).split()) or type(err).__name__


class SQLEnvelope:
    """A governed SQL executor over one DB-API connection (``sqlite3``, ``psycopg`` or
    ``pymysql``/``MySQLdb``; see the module doc).

    ``kernel`` is the :class:`~agentlightning.contrib.kernel.agentos.GovernanceKernel` that
    decides; it must hold a :class:`SQLPolicy` for ``tool_name``, whose deny and allow lists the
    database enforces (several: every deny list, and only what every allow list allows).
    ``check(tool_name, args, context, cost_usd)`` and ``refuse(action, reason, context)`` default to the
    kernel's own; a runner passes its rollout's (so the decisions also land in the rollout).
    """

    def __init__(
        self,
        kernel: Any,
        connection: Any,
        *,
        tool_name: str = "database_query",
        arg: str = "query",
        check: Optional[Callable[[str, Mapping[str, Any], Optional[ActionContext], float], Decision]] = None,
        refuse: Optional[Callable[[Action, str, ActionContext], Decision]] = None,
    ) -> None:
        policies = [p for p in getattr(kernel, "policies", ()) if isinstance(p, SQLPolicy) and p.applies_to(tool_name)]
        if not policies:
            raise GovernanceConfigError(
                f"SQLEnvelope: the kernel has no SQLPolicy for tool {tool_name!r}, so there is no deny or allow list "
                "for the database to enforce; add SQLPolicy(deny=[...]) (or pass tool_name= of the tool it governs)"
            )
        self.engine = _database_of(connection)
        if self.engine is None:
            raise GovernanceConfigError(
                "SQLEnvelope: connection must be a DB-API connection of sqlite3, psycopg or pymysql/MySQLdb, "
                f"got {type(connection).__name__}"
            )
        if self.engine != "sqlite" and _autocommit(connection) is not True:
            raise GovernanceConfigError(
                "SQLEnvelope: give it a connection in autocommit mode (psycopg.connect(..., autocommit=True), "
                "pymysql.connect(..., autocommit=True)): the envelope opens each call's transaction itself, "
                "read-only for reads, and one already open would not be"
            )
        self.kernel = kernel
        self.connection = connection
        self.tool_name = tool_name
        self.arg = arg
        self._policy = policies[0]  # its reading (the one the kernel judged) splits and classifies the text
        self.deny: FrozenSet[str] = frozenset().union(*(p.deny for p in policies))
        allows = [p.allow for p in policies if p.allow is not None]
        self.allow: Optional[FrozenSet[str]] = frozenset.intersection(*allows) if allows else None
        self._check = check or (
            lambda name, args, context, cost_usd: kernel.check(name, args, context=context, cost_usd=cost_usd)
        )
        self._refuse = refuse or (
            lambda action, reason, context: kernel.refuse(action, reason, context=context, refused_by=ENVELOPE_NAME)
        )

    # ------------------------------------------------------------------ policy
    def denies(self, kind: str) -> bool:
        """Whether the policy's lists forbid ``kind`` (``DELETE``, ``DROP``, ...)."""
        return kind in self.deny or (self.allow is not None and kind not in self.allow)

    # ------------------------------------------------------------------ the call
    def execute(
        self, query: str, *, context: Optional[ActionContext] = None, cost_usd: float = NO_COST
    ) -> SQLEnvelopeResult:
        """Check ``query`` (and its ``cost_usd``, for a cost budget) with the kernel, then run what was
        judged inside the database's envelope.
        Raises :class:`SQLRefused` when the kernel blocks it or the database refuses it; any other
        error of the database (a syntax error, a missing table) is raised as the driver raised it,
        after rolling back, and recorded as the call's outcome."""
        if self.engine != "sqlite" and _autocommit(self.connection) is not True:
            raise GovernanceConfigError(
                "SQLEnvelope: the connection left autocommit mode; the envelope opens each call's transaction "
                "itself and cannot run inside one already open: set it back (connection.autocommit = True)"
            )
        if self.engine == "postgres" and getattr(getattr(self.connection, "info", None), "transaction_status", 0) != 0:
            # BEGIN inside an open transaction is only a warning: the call would run in that
            # transaction, read-write, and its COMMIT would commit what came before.
            raise GovernanceConfigError(
                "SQLEnvelope: the PostgreSQL connection has a transaction open (someone ran BEGIN on it); the "
                "envelope runs each call in a transaction of its own: end that one first, or give the envelope a "
                "connection of its own"
            )
        decision = self._check(self.tool_name, {self.arg: query}, context, cost_usd)
        if decision.blocked:
            raise SQLRefused(decision, by_database=False)
        text = decision.action.args.get(self.arg)
        statements = self._statements(decision, text)
        read_only = all(s.kinds <= READ_KINDS for s in statements)
        started = time.perf_counter()
        try:
            run = {"sqlite": self._run_sqlite, "postgres": self._run_postgres}.get(self.engine, self._run_mariadb)
            columns, rows, changed = run(statements, read_only)
        except _DatabaseRefusal as refusal:
            self._refused(decision, str(refusal), started)
        except Exception as err:
            self.kernel.record_outcome(decision, error=err, execution_time_ms=(time.perf_counter() - started) * 1e3)
            raise
        self.kernel.record_outcome(
            decision,
            result={"rows": None if rows is None else len(rows), "rows_changed": changed, "read_only": read_only},
            execution_time_ms=(time.perf_counter() - started) * 1e3,
        )
        return SQLEnvelopeResult(decision, columns, rows, changed, read_only)

    def _statements(self, decision: Decision, text: Any) -> Sequence[SQLStatement]:
        """The statements the kernel judged, as the policy's reader split them; a text the envelope
        cannot run as judged is refused (recorded as a blocked decision)."""
        problem = None
        statements: Sequence[SQLStatement] = ()
        if not isinstance(text, str):
            problem = f"argument {self.arg!r} is not a string of SQL"
        else:
            analysis = self._policy._analyze(text).analysis
            statements = analysis.statements
            if analysis.error is not None or analysis.unverifiable is not None:
                problem = f"its SQL cannot be read as statements ({analysis.error or analysis.unverifiable})"
            elif not statements:
                problem = "it holds no statement to run"
            else:
                ending = sorted(set().union(*(s.kinds for s in statements)) & TRANSACTION_KINDS)
                if ending:
                    problem = (
                        f"{'/'.join(ending)} would end or split the transaction the envelope runs the call in; "
                        "each call is one transaction of its own: leave transaction control out of the SQL"
                    )
        if problem is not None:
            self._refused(decision, f"the envelope cannot run it: {problem}", time.perf_counter(), by_database=False)
        return statements

    def _refused(self, decision: Decision, reason: str, started: float, by_database: bool = True) -> None:
        """Record the refusal as one blocked decision, its allowed check's outcome pointing to it."""
        blocked = self._refuse(decision.action, reason, decision.context)
        by = "the database" if by_database else "the envelope, before running it"
        self.kernel.record_outcome(
            decision,
            error=f"not completed: refused by {by} (decision {blocked.decision_id})",
            execution_time_ms=(time.perf_counter() - started) * 1e3,
        )
        raise SQLRefused(blocked, by_database=by_database)

    # ------------------------------------------------------------------ SQLite
    def _run_sqlite(self, statements: Sequence[SQLStatement], read_only: bool) -> Tuple[Any, Any, int]:
        conn = self.connection
        refused: List[str] = []

        def authorize(action: int, arg1: Any, arg2: Any, database: Any, trigger: Any) -> int:
            what = None
            if action in _SQLITE_TRANSACTION_ACTIONS:
                what = "transaction control inside the envelope's transaction"
            elif action == sqlite3.SQLITE_PRAGMA:
                if arg2 is not None and str(arg1).lower() in _SQLITE_GUARDED_PRAGMAS:
                    what = f"PRAGMA {arg1} = ... (the envelope's guarantee rests on it)"
                elif arg2 is not None and self.denies("PRAGMA"):
                    what = f"PRAGMA {arg1} = ... (PRAGMA denied)"
            else:
                kind = _SQLITE_ACTION_KINDS.get(action)
                bookkeeping = action in (sqlite3.SQLITE_INSERT, sqlite3.SQLITE_UPDATE, sqlite3.SQLITE_DELETE) and (
                    str(arg1).lower() in _SQLITE_BOOKKEEPING or str(arg1).lower().startswith("sqlite_stat")
                )
                if kind is not None and not bookkeeping and self.denies(kind):
                    where = f" {database}.{arg1}" if database and arg1 else f" {arg1}" if arg1 else ""
                    by = f" (run by trigger {trigger})" if trigger else ""
                    what = f"{kind}{where}{by}"
            if what is None:
                return sqlite3.SQLITE_OK
            refused.append(what)
            return sqlite3.SQLITE_DENY

        was_query_only = bool(conn.execute("PRAGMA query_only").fetchone()[0])
        conn.execute(f"SAVEPOINT {_SAVEPOINT}")
        try:
            if read_only:
                conn.execute("PRAGMA query_only = ON")
            conn.set_authorizer(authorize)
            try:
                result = self._run_each(statements, conn.cursor)
            finally:
                conn.set_authorizer(None)
                if read_only and not was_query_only:
                    conn.execute("PRAGMA query_only = OFF")
        except sqlite3.DatabaseError as err:
            conn.execute(f"ROLLBACK TO {_SAVEPOINT}")
            conn.execute(f"RELEASE {_SAVEPOINT}")
            if refused:
                raise _DatabaseRefusal(
                    f"SQLite's authorizer refused {'; '.join(dict.fromkeys(refused))}, which the policy denies "
                    f"({_message(err)}); nothing was changed"
                ) from err
            if read_only and "readonly" in _message(err).replace(" ", "").lower():
                raise _DatabaseRefusal(
                    f"the statements read as reads but wrote, and SQLite refused it (PRAGMA query_only: "
                    f"{_message(err)}); nothing was changed"
                ) from err
            raise
        except BaseException:
            conn.execute(f"ROLLBACK TO {_SAVEPOINT}")
            conn.execute(f"RELEASE {_SAVEPOINT}")
            raise
        conn.execute(f"RELEASE {_SAVEPOINT}")
        return result

    def _run_each(self, statements: Sequence[SQLStatement], cursor_of: Callable[[], Any]) -> Tuple[Any, Any, int]:
        """Run the statements one by one on fresh cursors; the last rows any returned, and the changed count."""
        columns = rows = None
        changed = 0
        for statement in statements:
            cursor = cursor_of()
            try:
                if self.engine == "postgres" and "COPY" in statement.kinds and hasattr(cursor, "copy"):
                    with cursor.copy(statement.text) as copy:  # psycopg runs COPY only through copy()
                        data = b"".join(bytes(chunk) for chunk in copy)
                    columns, rows = ("copy",), tuple((line,) for line in data.decode("utf-8").splitlines())
                    continue
                cursor.execute(statement.text)
                if cursor.description is not None:
                    columns = tuple(d[0] for d in cursor.description)
                    rows = tuple(tuple(r) for r in cursor.fetchall())
                elif cursor.rowcount is not None and cursor.rowcount > 0:
                    changed += cursor.rowcount
            finally:
                cursor.close()
        return columns, rows, changed

    # ------------------------------------------------------------------ PostgreSQL
    def _rows(self, query: str) -> List[Tuple[Any, ...]]:
        return _rows_of(self.connection, query)

    @contextlib.contextmanager
    def _transaction(self, begin: str) -> Iterator[None]:
        """``begin`` (a PostgreSQL or MariaDB transaction start); COMMIT when the block ends
        normally, ROLLBACK when it raises or the COMMIT fails."""
        cursor = self.connection.cursor()
        cursor.execute(begin)
        cursor.close()
        committed = False
        try:
            yield
            self.connection.cursor().execute("COMMIT")
            committed = True
        finally:
            if not committed:
                try:
                    self.connection.cursor().execute("ROLLBACK")
                except Exception:  # the connection is broken: its transaction ends with it
                    pass

    def _run_postgres(self, statements: Sequence[SQLStatement], read_only: bool) -> Tuple[Any, Any, int]:
        conn = self.connection
        with self._transaction("BEGIN READ ONLY" if read_only else "BEGIN"):
            if read_only and self._rows("SHOW transaction_read_only") != [("on",)]:
                raise _DatabaseRefusal("PostgreSQL did not start a read-only transaction; nothing was run")
            before = None if read_only else self._pg_objects()
            try:
                result = self._run_each(statements, conn.cursor)
            except Exception as err:
                if read_only and getattr(err, "sqlstate", None) == "25006":  # read_only_sql_transaction
                    raise _DatabaseRefusal(
                        f"the statements read as reads but write, and PostgreSQL refused it in a read-only "
                        f"transaction ({_message(err)}); nothing was changed"
                    ) from err
                raise
            if before is not None:
                found = self._pg_denied_effects(before)
                if found:
                    raise _DatabaseRefusal(
                        f"the transaction's own statistics show {'; '.join(found)}, which the policy denies; "
                        "rolled back, nothing was changed"
                    )
            return result

    def _pg_objects(self) -> Dict[Tuple[str, int], Tuple[str, int, str]]:
        return {(str(k), int(o)): (str(n), int(s), str(shape)) for k, o, n, s, shape in self._rows(_PG_OBJECTS)}

    def _pg_denied_effects(self, before: Dict[Tuple[str, int], Tuple[str, int, str]]) -> List[str]:
        """What the open transaction did that the policy denies, from its statistics and the catalog."""
        found: List[str] = []
        for table, inserted, updated, deleted in self._rows(_PG_ROW_EFFECTS):
            for kind, count, word in (("INSERT", inserted, "inserted"), ("UPDATE", updated, "updated")):
                if count and self.denies(kind):
                    found.append(f"{count} rows {word} in {table} ({kind} denied)")
            if deleted and self.denies("DELETE"):
                found.append(f"{deleted} rows deleted from {table} (DELETE denied)")
        after = self._pg_objects()
        for key, (name, storage, shape) in sorted(before.items()):
            if key not in after:
                if self.denies("DROP"):
                    found.append(f"{key[0]} {name} dropped (DROP denied)")
                continue
            _, new_storage, new_shape = after[key]
            if key[0] == "relation" and storage and new_storage != storage and self.denies("TRUNCATE"):
                found.append(f"relation {name} emptied or rewritten: a new relfilenode (TRUNCATE denied)")
            if new_shape != shape and self.denies("ALTER"):
                found.append(f"{key[0]} {name} altered (ALTER denied)")
        for key, (name, _, _) in sorted(after.items()):
            if key not in before and self.denies("CREATE"):
                found.append(f"{key[0]} {name} created (CREATE denied)")
        return found

    # ------------------------------------------------------------------ MariaDB
    def _run_mariadb(self, statements: Sequence[SQLStatement], read_only: bool) -> Tuple[Any, Any, int]:
        conn = self.connection
        before = None if read_only else self._mariadb_handlers()
        with self._transaction("START TRANSACTION READ ONLY" if read_only else "START TRANSACTION"):
            try:
                result = self._run_each(statements, conn.cursor)
            except Exception as err:
                code = err.args[0] if getattr(err, "args", None) else None
                if read_only and code == 1792:  # ER_CANT_EXECUTE_IN_READ_ONLY_TRANSACTION
                    raise _DatabaseRefusal(
                        f"the statements read as reads but write, and MariaDB refused it in a read-only "
                        f"transaction ({_message(err)}); nothing was changed"
                    ) from err
                raise
            if before is not None:
                after = self._mariadb_handlers()
                found = [
                    f"{after[name] - before.get(name, 0)} rows {_MARIADB_HANDLER_WORDS[name]} "
                    f"({_MARIADB_HANDLER_KINDS[name]} denied)"
                    for name in sorted(after)
                    if after[name] > before.get(name, 0) and self.denies(_MARIADB_HANDLER_KINDS[name])
                ]
                if found:
                    still_open = bool(self._rows("SELECT @@in_transaction")[0][0])
                    undone = (
                        "rolled back (transactional tables keep their rows)"
                        if still_open
                        else "NOT undone: an implicit commit (DDL) inside the call had already committed them, and "
                        "MariaDB's DDL is not transactional"
                    )
                    raise _DatabaseRefusal(
                        f"the session's row handler counters show {'; '.join(found)}, which the policy denies; {undone}"
                    )
            return result

    def _mariadb_handlers(self) -> Dict[str, int]:
        return {str(name): int(value) for name, value in self._rows(_MARIADB_HANDLERS)}
