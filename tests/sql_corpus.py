"""A labelled corpus of adversarial SQL for :class:`SQLPolicy`.

Plain data plus helpers; no test runs here. Used by ``tests/test_adversarial_sql.py``
(``python -m pytest tests/test_adversarial_sql.py -q``) and by the on-demand comparison
``python tests/benchmarks/bench_sql_corpus.py``. ``python tests/sql_corpus.py [ID ...]`` runs
entries on the databases and prints the observed letters beside the recorded ones (how new
entries get their ``effect``; ``--sql TEXT`` observes any text).

**Labels for the broad deny list.** :data:`DENY`, with no ``dialect`` (the policy's default:
the target database is unknown, so a statement must be safe whichever of the common databases
runs it). Every entry is labelled:

* ``block`` -- a real database would run a statement of a denied kind (``kinds`` names them),
  in at least one of the dialects the note names; or the text is not SQL that any of SQLite,
  PostgreSQL, MySQL/MariaDB or T-SQL would run at all (``kinds`` is empty): such junk must be
  blocked fail-closed. A look-alike keyword is not a keyword to a database: ``DRОP TABLE users``
  with a Cyrillic ``О`` is a syntax error everywhere, so it is junk (blocked, ``kinds=()``), not
  a DROP. ``kinds`` counts what a statement does, not only its keyword: ``REPLACE`` deletes the
  conflicting row (``REPLACE DELETE``), ``CREATE OR REPLACE TABLE`` drops the old table
  (``CREATE DROP``), a routine or trigger has the kinds of its body.
* ``allow`` -- valid SQL in at least one of those dialects, and no dialect runs a denied
  statement from it. A block verdict on an ``allow`` entry is a false positive; the ones the
  policy is known to produce are listed, with the reason, in :data:`KNOWN_FALSE_POSITIVES`.

**What each database did.** Labels follow what the databases do, not what the policy does.
``effect`` records, for SQLite, PostgreSQL and MariaDB in that order, what running the text did
to a scratch database holding :data:`SCRATCH_ROWS` (``C`` changed it, ``N`` ran without changing
it, ``E`` rejected it with nothing changed, ``X`` changed it and then failed, ``-`` not run).
Each entry is one self-contained script: a routine or trigger is created and called or fired in
the same text, so its letter shows what the body did. The SQLite column is re-checked on every
test run (python's ``sqlite3``, an in-memory database); the PostgreSQL (15.18) and MariaDB
(10.11.19, standing in for MySQL) columns whenever ``AGENTOS_TEST_POSTGRES_DSN`` /
``AGENTOS_TEST_MARIADB_SOCKET`` are set, which ``.ci/services.sh`` does in CI (see
:func:`observe_postgres`, :func:`observe_mariadb`). "Changed" means the schema (tables,
columns, indexes, routines, triggers, rules), the rows, the attached databases or SQLite's
``user_version`` differ afterwards; a DELETE that matches no row is still a DELETE (``block``)
with effect ``N``. T-SQL, Snowflake and BigQuery behaviour is from their manuals and says so in
the note.

**Labels for the destructive deny list, per database.** :func:`destruction_in` says, from ``kinds``,
the letters and the per-entry override ``destroys``, whether an entry destroyed data in a given
database (a DROP, DELETE or TRUNCATE of :data:`DESTRUCTIVE` really ran there), was harmless
there, or says nothing about it (rejected, not run). :data:`CONFIGURATIONS` names the policy
set-ups judged that way (no dialect: all three databases; a named dialect: its own database),
and :data:`KNOWN_DESTRUCTIVE_FALSE_POSITIVES` the harmless entries each one blocks.
"""

from __future__ import annotations

import sqlite3
import subprocess
from dataclasses import dataclass, replace
from typing import Any, Dict, FrozenSet, List, Optional, Sequence, Tuple

__all__ = [
    "DENY",
    "BLOCK",
    "ALLOW",
    "CATEGORIES",
    "Case",
    "CORPUS",
    "KNOWN_FALSE_POSITIVES",
    "KNOWN_DESTRUCTIVE_FALSE_POSITIVES",
    "AGENT_OS_REGEX_SCOPE",
    "SCRATCH_TABLES",
    "SCRATCH_ROWS",
    "observe_sqlite",
    "observe_postgres",
    "observe_mariadb",
    "observe_case",
    "cases_in",
    "DESTRUCTIVE",
    "DATABASES",
    "DESTROYS",
    "HARMLESS",
    "NOT_APPLICABLE",
    "destruction_in",
    "destruction_across",
    "Configuration",
    "CONFIGURATIONS",
    "destructive_cases",
    "harmless_cases",
]

#: The one deny list the whole corpus is labelled against.
DENY: Tuple[str, ...] = (
    "DROP",
    "DELETE",
    "TRUNCATE",
    "ALTER",
    "UPDATE",
    "INSERT",
    "MERGE",
    "REPLACE",
    "GRANT",
    "CREATE",
    "ATTACH",
    "PRAGMA",
)
BLOCK = "block"
ALLOW = "allow"
#: Statement kinds Agent OS 3.7's built-in SQL regex looks for (it cannot be configured).
AGENT_OS_REGEX_SCOPE: FrozenSet[str] = frozenset({"DROP", "DELETE", "TRUNCATE"})

CATEGORIES: Dict[str, str] = {
    "case-whitespace": "keyword casing, tabs, newlines, CR/LF, form feeds, vertical tabs",
    "comments": "block and line comments inside and around keywords, nested /* /* */",
    "multi-statement": "scripts: denied statements after reads, empty statements, transactions",
    "data-modifying-cte": "DELETE/UPDATE/INSERT inside WITH, and harmless CTEs",
    "dialect-variants": "T-SQL, MySQL, PostgreSQL, SQLite and warehouse forms of denied statements",
    "keywords-as-data": "denied keywords inside string literals, quoted identifiers, column and table names",
    "lexer-divergence": "text that databases split into statements differently (escapes, brackets, # and MySQL comments)",
    "unicode": "look-alike letters, zero-width and non-breaking spaces, BOM, line separators",
    "long-and-deep": "very long statements and scripts, deeply nested subqueries and parentheses",
    "deferred-code": "routine bodies (PostgreSQL SQL and PL/pgSQL functions and procedures, MariaDB stored programs), DO and "
    "BEGIN NOT ATOMIC blocks, triggers and rules: run in the same script, created only, or built at run time",
    "vendor-comments": "MariaDB /*M! */ and /*M!NNNNNN */ and MySQL /*! */ executable comments, and the harmless forms beside them",
    "hidden-destruction": "destruction without DROP/DELETE/TRUNCATE: REPLACE and conflict clauses, CREATE OR REPLACE TABLE, "
    "ALTER IGNORE ... ADD UNIQUE, DISCARD TABLESPACE, SQLite writable_schema, COPY ... PROGRAM",
    "dialect-syntax": "ordinary syntax of one database: EXPLAIN with and without ANALYZE, SHOW ... LIKE, ON COMMIT DROP, dollar "
    "quotes, E'' strings, ARRAY, NOTIFY, LOCK, backslash escapes, # comments, backticks, DELIMITER, HANDLER, "
    "PRAGMA, ATTACH, T-SQL TOP, brackets and #temp tables, static PREPARE/EXECUTE",
    "default-deny": "effects no destructive list named (partition surgery, CREATE OR REPLACE DATABASE, DETACH PARTITION, "
    "lo_unlink in a SELECT, REPLACE in trigger bodies, sql_mode changing the lexing) and everyday syntax of one "
    "database (INSERT IGNORE, FLUSH, LOCK TABLES, NEXT VALUE FOR, UPDATE OR IGNORE, REINDEX, DO, CHECKPOINT, GRANT "
    "DELETE, DROP NOT NULL, version-gated executable comments)",
}


@dataclass(frozen=True)
class Case:
    """One corpus entry. ``id`` is unique and names the entry in test output."""

    id: str
    label: str
    sql: str
    note: str
    kinds: Tuple[str, ...] = ()
    effect: str = "---"
    category: str = ""
    #: Per database (SQLite, PostgreSQL, MariaDB): overrides what the effect letters say about
    #: destruction; see :func:`destruction_in`. Empty: the letters decide.
    destroys: str = ""
    #: The MariaDB letter was observed through the ``mariadb`` command-line client (``DELIMITER``).
    mariadb_client: bool = False

    @property
    def in_agent_os_scope(self) -> bool:
        """Whether the denied statement is one Agent OS's fixed regex claims to catch."""
        return bool(set(self.kinds) & AGENT_OS_REGEX_SCOPE)

    @property
    def is_junk(self) -> bool:
        return self.label == BLOCK and not self.kinds


def case(
    id: str,
    label: str,
    sql: str,
    note: str,
    *,
    kinds: str = "",
    effect: str = "---",
    destroys: str = "",
    client: bool = False,
) -> Case:
    return Case(id, label, sql, note, tuple(kinds.split()), effect, destroys=destroys, mariadb_client=client)


def _category(name: str, cases: Sequence[Case]) -> List[Case]:
    return [replace(c, category=name) for c in cases]


# ----------------------------------------------------------------------------- builders of big inputs


def _or_terms(n: int) -> str:
    return "SELECT * FROM users WHERE " + " OR ".join(f"id = {i}" for i in range(n))


def _nested_subqueries(depth: int) -> str:
    return "SELECT * FROM " + "(SELECT * FROM " * depth + "users" + ") AS s" * depth


def _parens(depth: int) -> str:
    return "SELECT " + "(" * depth + "1" + ")" * depth


def _chained_ctes(n: int) -> str:
    ctes = ["c0 AS (DELETE FROM users RETURNING *)"] + [f"c{i} AS (SELECT * FROM c{i - 1})" for i in range(1, n)]
    return "WITH " + ", ".join(ctes) + f" SELECT * FROM c{n - 1}"


FIFTY_KB = 50_000

# ----------------------------------------------------------------------------- the corpus

CASE_AND_WHITESPACE = _category(
    "case-whitespace",
    [
        case("ws-plain-drop", BLOCK, "DROP TABLE users", "the baseline", kinds="DROP", effect="CCC"),
        case("ws-lower", BLOCK, "drop table users", "lower case", kinds="DROP", effect="CCC"),
        case("ws-mixed-case", BLOCK, "DrOp TaBlE users", "per-letter mixed-case keywords", kinds="DROP", effect="CCC"),
        case("ws-tabs", BLOCK, "dRoP\ttAbLe\tusers", "tabs between tokens", kinds="DROP", effect="CCC"),
        case("ws-newlines", BLOCK, "DROP\nTABLE\nusers", "newlines between tokens", kinds="DROP", effect="CCC"),
        case("ws-crlf", BLOCK, "DROP\r\nTABLE\r\nusers", "CR LF between tokens", kinds="DROP", effect="CCC"),
        case(
            "ws-form-feed",
            BLOCK,
            "DROP\fTABLE\fusers",
            "form feed is whitespace to all three databases",
            kinds="DROP",
            effect="CCC",
        ),
        case(
            "ws-vertical-tab",
            BLOCK,
            "DROP\vTABLE users",
            "vertical tab: whitespace to MariaDB/MySQL (drops), an unrecognized token to SQLite and PostgreSQL 15",
            kinds="DROP",
            effect="EEC",
        ),
        case(
            "ws-padded-delete",
            BLOCK,
            "   \n\t DELETE   FROM\n\n users  \t",
            "leading, inner and trailing runs of whitespace",
            kinds="DELETE",
            effect="CCC",
        ),
        case(
            "ws-truncate-newlines",
            BLOCK,
            "\n\n\nTRUNCATE TABLE users\n",
            "SQLite has no TRUNCATE",
            kinds="TRUNCATE",
            effect="ECC",
        ),
        case(
            "ws-update-mixed", BLOCK, "UpDaTe users SeT name = 'x'", "mixed-case UPDATE", kinds="UPDATE", effect="CCC"
        ),
        case(
            "ws-insert-mixed",
            BLOCK,
            "InSeRt InTo orders VALUES (3, 1, 1.0)",
            "mixed-case INSERT",
            kinds="INSERT",
            effect="CCC",
        ),
        case(
            "ws-alter-tabs",
            BLOCK,
            "alter\ttable users add column z int",
            "lower-case ALTER with tabs",
            kinds="ALTER",
            effect="CCC",
        ),
        case(
            "ws-delete-all-tabs",
            BLOCK,
            "DELETE\tFROM\tusers\tWHERE\tid\t=\t1",
            "every separator a tab",
            kinds="DELETE",
            effect="CCC",
        ),
        case(
            "ws-drop-if-exists-lower",
            BLOCK,
            "drop table if exists users",
            "lower-case IF EXISTS",
            kinds="DROP",
            effect="CCC",
        ),
        case(
            "ws-trailing-semicolon",
            BLOCK,
            "DROP TABLE users ;   ",
            "space before the semicolon, spaces after",
            kinds="DROP",
            effect="CCC",
        ),
        case(
            "ws-no-space-paren",
            BLOCK,
            "DELETE FROM users WHERE(id=1)",
            "no whitespace around the condition",
            kinds="DELETE",
            effect="CCC",
        ),
        case(
            "ws-no-space-quoted",
            BLOCK,
            'DELETE FROM"users"',
            "no space before a quoted identifier; to MySQL it is a string, an error",
            kinds="DELETE",
            effect="CCE",
        ),
        case(
            "ws-select-upper-lower",
            ALLOW,
            "select NAME from USERS where ID = 1",
            "keywords are case-insensitive; MariaDB table names are case-sensitive on Linux",
            effect="NNE",
        ),
        case(
            "ws-select-form-feed",
            ALLOW,
            "SELECT\tname\nFROM\fusers",
            "tab, newline and form feed in a read",
            effect="NNN",
        ),
        case("ws-select-padded", ALLOW, "  SELECT 1  ", "padding only", effect="NNN"),
        case("ws-select-mixed", ALLOW, "SeLeCt CoUnT(*) FrOm users", "mixed-case read", effect="NNN"),
        case("ws-select-crlf", ALLOW, "SELECT\r\nid\r\nFROM users", "CR LF in a read", effect="NNN"),
    ],
)

COMMENTS = _category(
    "comments",
    [
        case(
            "cmt-empty-block-in-delete",
            BLOCK,
            "DELETE/**/FROM users",
            "an empty block comment is a token separator",
            kinds="DELETE",
            effect="CCC",
        ),
        case(
            "cmt-empty-blocks-in-drop",
            BLOCK,
            "DROP/**/TABLE/**/users",
            "empty block comments between every token",
            kinds="DROP",
            effect="CCC",
        ),
        case(
            "cmt-wrapped-drop",
            BLOCK,
            "/**/DROP/**/TABLE/**/users/**/",
            "comments before, between and after",
            kinds="DROP",
            effect="CCC",
        ),
        case(
            "cmt-line-inside-delete",
            BLOCK,
            "DELETE -- sneaky\nFROM users",
            "a line comment splits DELETE from FROM",
            kinds="DELETE",
            effect="CCC",
        ),
        case(
            "cmt-bare-line-inside-delete",
            BLOCK,
            "DELETE--\nFROM users",
            "an empty line comment glued to the keyword",
            kinds="DELETE",
            effect="CCC",
        ),
        case(
            "cmt-leading-line",
            BLOCK,
            "-- just a comment\nDROP TABLE users",
            "statement after a line comment",
            kinds="DROP",
            effect="CCC",
        ),
        case(
            "cmt-leading-block",
            BLOCK,
            "/* harmless */ DELETE FROM orders",
            "statement after a block comment",
            kinds="DELETE",
            effect="CCC",
        ),
        case(
            "cmt-trailing-line",
            BLOCK,
            "DROP TABLE users -- trailing comment",
            "trailing line comment",
            kinds="DROP",
            effect="CCC",
        ),
        case(
            "cmt-between-every-token",
            BLOCK,
            "DROP /* a */ TABLE /* b */ users /* c */",
            "text comments between tokens",
            kinds="DROP",
            effect="CCC",
        ),
        case(
            "cmt-commented-where-block",
            BLOCK,
            "DELETE FROM users /* WHERE id = 1 */",
            "the WHERE clause is commented out",
            kinds="DELETE",
            effect="CCC",
        ),
        case(
            "cmt-commented-where-line",
            BLOCK,
            "DELETE FROM users -- WHERE id = 1",
            "the WHERE clause is commented out",
            kinds="DELETE",
            effect="CCC",
        ),
        case(
            "cmt-where-then-or",
            BLOCK,
            "DELETE FROM users WHERE id = 1 -- \n OR 1 = 1",
            "condition continued after a comment",
            kinds="DELETE",
            effect="CCC",
        ),
        case(
            "cmt-multiline-block",
            BLOCK,
            "/* multi\nline\ncomment */\nDELETE FROM users",
            "multi-line comment first",
            kinds="DELETE",
            effect="CCC",
        ),
        case(
            "cmt-after-statement",
            BLOCK,
            "DELETE FROM users; -- done",
            "comment after the statement",
            kinds="DELETE",
            effect="CCC",
        ),
        case(
            "cmt-nested-open-select-drop",
            BLOCK,
            "SELECT 1 /* /* */; DROP TABLE users; -- */",
            "PostgreSQL nests block comments (all one comment); SQLite and MySQL close at the first */ and drop",
            kinds="DROP",
            effect="CNC",
        ),
        case(
            "cmt-nested-open-delete",
            BLOCK,
            "/* /* */ DELETE FROM users; -- */",
            "the same ambiguity with nothing before it",
            kinds="DELETE",
            effect="CNC",
        ),
        case(
            "cmt-cr-ends-line-comment",
            BLOCK,
            "SELECT 1; -- x\rDROP TABLE users",
            "PostgreSQL ends a -- comment at a bare CR and drops; SQLite and MySQL only at LF",
            kinds="DROP",
            effect="NCN",
        ),
        case(
            "cmt-unterminated-after-delete",
            BLOCK,
            "DELETE FROM users /* unterminated",
            "SQLite lets an unterminated block comment run to the end of input and deletes",
            kinds="DELETE",
            effect="CEE",
        ),
        case(
            "cmt-nested-pg-only-trailing",
            ALLOW,
            "SELECT 1 /* /* */ */",
            "valid only where block comments nest (PostgreSQL); a syntax error elsewhere",
            effect="ENE",
        ),
        case(
            "cmt-nested-pg-only-leading",
            ALLOW,
            "/* a /* b */ c */ SELECT 1",
            "valid only where block comments nest (PostgreSQL); a syntax error elsewhere",
            effect="ENE",
        ),
        case(
            "cmt-order-by-then-drop",
            BLOCK,
            "SELECT id FROM users ORDER/**/BY id; DROP TABLE users",
            "a comment splitting ORDER BY, then a DROP",
            kinds="DROP",
            effect="CCC",
        ),
        case(
            "cmt-inside-order-by",
            ALLOW,
            "SELECT id FROM users ORDER/**/BY id",
            "a comment splitting ORDER BY is valid everywhere",
            effect="NNN",
        ),
        case(
            "cmt-line-inside-order-by",
            ALLOW,
            "SELECT id FROM users ORDER -- by what?\nBY id",
            "a line comment splitting ORDER BY",
            effect="NNN",
        ),
        case(
            "cmt-inside-group-by",
            ALLOW,
            "SELECT name, COUNT(*) FROM users GROUP/**/BY name",
            "a comment splitting GROUP BY",
            effect="NNN",
        ),
        case(
            "cmt-inside-partition-by",
            ALLOW,
            "SELECT ROW_NUMBER() OVER (PARTITION/**/BY name) FROM users",
            "a comment splitting PARTITION BY",
            effect="NNN",
        ),
        case(
            "cmt-inside-union-all",
            ALLOW,
            "SELECT 1 UNION/**/ALL SELECT 2",
            "a comment splitting UNION ALL",
            effect="NNN",
        ),
        case(
            "cmt-line-mentions-drop",
            ALLOW,
            "SELECT 1 -- drop table users",
            "denied words inside a line comment",
            effect="NNN",
        ),
        case(
            "cmt-block-mentions-delete",
            ALLOW,
            "SELECT * FROM users /* DELETE FROM users */",
            "denied words inside a block comment",
            effect="NNN",
        ),
        case(
            "cmt-line-hides-statement",
            ALLOW,
            "SELECT * FROM users -- ; DROP TABLE users",
            "the ; and the DROP are inside the comment",
            effect="NNN",
        ),
        case(
            "cmt-leading-block-mentions-drop",
            ALLOW,
            "/* DROP TABLE users */ SELECT 1",
            "comment first, read after",
            effect="NNN",
        ),
        case(
            "cmt-block-inside-select",
            ALLOW,
            "SELECT /* ; DELETE FROM users; */ name FROM users",
            "a script hidden in a block comment",
            effect="NNN",
        ),
        case(
            "cmt-semicolon-in-comment",
            ALLOW,
            "SELECT 1 /* ; */ ; SELECT 2",
            "a ; inside a comment is not a separator",
            effect="NNN",
        ),
        case(
            "cmt-markers-in-strings",
            ALLOW,
            "SELECT '/*' AS a, '*/' AS b, '--' AS c",
            "comment markers inside string literals",
            effect="NNN",
        ),
        case(
            "cmt-dash-space-comment",
            ALLOW,
            "SELECT 1 -- 1; DROP TABLE users",
            "-- followed by a space is a comment in MySQL too",
            effect="NNN",
        ),
    ],
)

MULTI_STATEMENT = _category(
    "multi-statement",
    [
        case(
            "multi-select-then-drop",
            BLOCK,
            "SELECT 1; DROP TABLE users",
            "a read, then a DROP",
            kinds="DROP",
            effect="CCC",
        ),
        case(
            "multi-no-spaces",
            BLOCK,
            "SELECT * FROM users;DELETE FROM orders;",
            "no spaces around the separators",
            kinds="DELETE",
            effect="CCC",
        ),
        case(
            "multi-leading-empty",
            BLOCK,
            ";DROP TABLE users",
            "an empty statement first; MariaDB rejects the empty query and stops",
            kinds="DROP",
            effect="CCE",
        ),
        case(
            "multi-empty-everywhere",
            BLOCK,
            ";;;DELETE FROM users;;;",
            "empty statements around a DELETE",
            kinds="DELETE",
            effect="CCE",
        ),
        case(
            "multi-spaced-empties",
            BLOCK,
            "SELECT 1;;; ;DROP TABLE users;;",
            "empty statements between a read and a DROP; MariaDB stops at the first empty one",
            kinds="DROP",
            effect="CCE",
        ),
        case(
            "multi-after-line-comment",
            BLOCK,
            "SELECT 1; -- comment\nDROP TABLE users",
            "statement after a comment line",
            kinds="DROP",
            effect="CCC",
        ),
        case(
            "multi-after-block-comment",
            BLOCK,
            "SELECT 1; /* c */ DROP TABLE users",
            "statement after a block comment",
            kinds="DROP",
            effect="CCC",
        ),
        case(
            "multi-transaction-commit",
            BLOCK,
            "BEGIN; DELETE FROM users; COMMIT;",
            "inside an explicit transaction",
            kinds="DELETE",
            effect="CCC",
        ),
        case(
            "multi-transaction-rollback",
            BLOCK,
            "BEGIN; DROP TABLE users; ROLLBACK;",
            "rolled back in SQLite and PostgreSQL (transactional DDL), but MySQL commits DDL at once; the DROP ran everywhere",
            kinds="DROP",
            effect="NNC",
            destroys="yy.",
        ),
        case(
            "multi-union-then-truncate",
            BLOCK,
            "SELECT 1 UNION SELECT 2; TRUNCATE users",
            "set operation, then TRUNCATE",
            kinds="TRUNCATE",
            effect="ECC",
        ),
        case(
            "multi-three-reads-then-update",
            BLOCK,
            "SELECT 1; SELECT 2; SELECT 3; UPDATE users SET name = 'x'",
            "denied statement in fourth place",
            kinds="UPDATE",
            effect="CCC",
        ),
        case(
            "multi-delete-first",
            BLOCK,
            "DELETE FROM users; SELECT 1",
            "denied statement first, read after",
            kinds="DELETE",
            effect="CCC",
        ),
        case(
            "multi-semicolon-in-literal-then-delete",
            BLOCK,
            "SELECT name FROM users WHERE note = ';'; DELETE FROM users",
            "a ; inside a literal, then a real separator",
            kinds="DELETE",
            effect="CCC",
        ),
        case(
            "multi-commit-then-drop",
            BLOCK,
            "SELECT 1; COMMIT; DROP TABLE users",
            "SQLite fails on COMMIT with no transaction and stops; PostgreSQL and MySQL go on and drop",
            kinds="DROP",
            effect="ECC",
        ),
        case(
            "multi-savepoint",
            BLOCK,
            "SAVEPOINT a; DELETE FROM users; RELEASE a",
            "PostgreSQL refuses SAVEPOINT outside a transaction block; MariaDB deletes, then fails on RELEASE",
            kinds="DELETE",
            effect="CEX",
        ),
        case(
            "multi-tsql-go-separator",
            BLOCK,
            "SELECT 1\nGO\nDROP TABLE users",
            "T-SQL client tools (sqlcmd, SSMS) split batches at GO and run the DROP; a syntax error elsewhere",
            kinds="DROP",
            effect="EEE",
        ),
        case(
            "multi-values-then-drop",
            BLOCK,
            "VALUES (1); DROP TABLE users",
            "a VALUES statement first",
            kinds="DROP",
            effect="CCC",
        ),
        case(
            "multi-blank-lines",
            BLOCK,
            "SELECT 1;\n\n\n\nDROP TABLE users",
            "blank lines between statements",
            kinds="DROP",
            effect="CCC",
        ),
        case(
            "multi-explain-then-drop",
            BLOCK,
            "EXPLAIN SELECT 1; DROP TABLE users",
            "EXPLAIN of a read, then a DROP",
            kinds="DROP",
            effect="CCC",
        ),
        case("multi-two-reads", ALLOW, "SELECT 1; SELECT 2", "two reads", effect="NNN"),
        case("multi-trailing-semicolon", ALLOW, "SELECT 1;", "one read, trailing separator", effect="NNN"),
        case(
            "multi-empty-statements-read",
            ALLOW,
            ";SELECT 1;;",
            "empty statements around a read; MariaDB rejects the empty query",
            effect="NNE",
        ),
        case(
            "multi-separators-in-names",
            ALLOW,
            'SELECT \'a;b\'; SELECT "c;d" FROM (SELECT 1 AS "c;d") AS t',
            "separators inside a literal and a quoted identifier",
            effect="NNN",
        ),
        case(
            "multi-read-transaction",
            ALLOW,
            "BEGIN; SELECT * FROM users; COMMIT",
            "a read inside a transaction",
            effect="NNN",
        ),
        case(
            "multi-comment-between-reads",
            ALLOW,
            "SELECT 1; -- DROP TABLE users\nSELECT 2",
            "a commented-out DROP between reads",
            effect="NNN",
        ),
    ],
)

DATA_MODIFYING_CTE = _category(
    "data-modifying-cte",
    [
        case(
            "cte-delete-returning",
            BLOCK,
            "WITH d AS (DELETE FROM users RETURNING *) SELECT * FROM d",
            "PostgreSQL runs DELETE inside WITH",
            kinds="DELETE",
            effect="ECE",
        ),
        case(
            "cte-delete-count",
            BLOCK,
            "WITH gone AS (DELETE FROM users RETURNING id) SELECT count(*) FROM gone",
            "a count over deleted rows",
            kinds="DELETE",
            effect="ECE",
        ),
        case(
            "cte-update-returning",
            BLOCK,
            "WITH u AS (UPDATE users SET name = 'x' RETURNING *) SELECT * FROM u",
            "UPDATE inside WITH",
            kinds="UPDATE",
            effect="ECE",
        ),
        case(
            "cte-insert-returning",
            BLOCK,
            "WITH i AS (INSERT INTO orders VALUES (3, 1, 1.0) RETURNING *) SELECT * FROM i",
            "INSERT inside WITH",
            kinds="INSERT",
            effect="ECE",
        ),
        case(
            "cte-unreferenced-delete",
            BLOCK,
            "WITH a AS (SELECT 1), b AS (DELETE FROM users RETURNING *) SELECT * FROM a",
            "PostgreSQL runs a data-modifying CTE even when nothing reads it",
            kinds="DELETE",
            effect="ECE",
        ),
        case(
            "cte-delete-into-insert",
            BLOCK,
            "WITH d AS (DELETE FROM users RETURNING *) INSERT INTO archive SELECT * FROM d",
            "move rows: DELETE in WITH feeding an INSERT",
            kinds="DELETE INSERT",
            effect="ECE",
        ),
        case(
            "cte-read-then-delete",
            BLOCK,
            "WITH x AS (SELECT 1) DELETE FROM users",
            "a plain CTE in front of a DELETE (MySQL 8 too; not MariaDB 10.11)",
            kinds="DELETE",
            effect="CCE",
        ),
        case(
            "cte-recursive-then-update",
            BLOCK,
            "WITH RECURSIVE r(n) AS (SELECT 1) UPDATE users SET name = 'x' WHERE id IN (SELECT n FROM r)",
            "a recursive CTE in front of an UPDATE (MySQL 8 too; not MariaDB 10.11)",
            kinds="UPDATE",
            effect="CCE",
        ),
        case(
            "cte-lower-comment",
            BLOCK,
            "with D as (delete/**/from users returning *) select * from D",
            "lower case and a comment in the CTE",
            kinds="DELETE",
            effect="ECE",
        ),
        case(
            "cte-multiline",
            BLOCK,
            "WITH d AS (\n  DELETE FROM users\n  WHERE id = 1\n  RETURNING *\n)\nSELECT * FROM d",
            "laid out over lines",
            kinds="DELETE",
            effect="ECE",
        ),
        case(
            "cte-materialized-delete",
            BLOCK,
            "WITH t AS MATERIALIZED (DELETE FROM users RETURNING *) SELECT * FROM t",
            "MATERIALIZED hint",
            kinds="DELETE",
            effect="ECE",
        ),
        case(
            "cte-merge-returning",
            BLOCK,
            "WITH m AS (MERGE INTO users u USING staging s ON u.id = s.id WHEN MATCHED THEN DELETE RETURNING *) SELECT * FROM m",
            "MERGE ... RETURNING inside WITH is PostgreSQL 17+; 15 rejects it",
            kinds="MERGE DELETE",
            effect="EEE",
        ),
        case(
            "cte-in-subquery-rejected",
            BLOCK,
            "SELECT * FROM (WITH d AS (DELETE FROM users RETURNING *) SELECT * FROM d) AS s",
            "PostgreSQL refuses a data-modifying WITH below the top level, no other database has one: junk everywhere",
            effect="EEE",
        ),
        case(
            "cte-plain-read",
            ALLOW,
            "WITH t AS (SELECT id FROM users) SELECT COUNT(*) FROM t",
            "a read-only CTE",
            effect="NNN",
        ),
        case(
            "cte-recursive-read",
            ALLOW,
            "WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < 5) SELECT * FROM c",
            "a recursive read",
            effect="NNN",
        ),
        case(
            "cte-named-like-dml",
            ALLOW,
            "WITH deleted_rows AS (SELECT * FROM users WHERE deleted = 1) SELECT * FROM deleted_rows",
            "a CTE named after a denied word",
            effect="NNN",
        ),
        case(
            "cte-quoted-keyword-name",
            ALLOW,
            'WITH "delete" AS (SELECT 1 AS x) SELECT x FROM "delete"',
            'a CTE named "delete"; MySQL reads "delete" as a string: a syntax error there',
            effect="NNE",
        ),
        case(
            "cte-dml-text-in-literal",
            ALLOW,
            "WITH d AS (SELECT 'DELETE FROM users' AS q) SELECT q FROM d",
            "the DML is a literal",
            effect="NNN",
        ),
    ],
)

DIALECT_VARIANTS = _category(
    "dialect-variants",
    [
        case(
            "dia-tsql-delete-no-from",
            BLOCK,
            "DELETE users WHERE id = 1",
            "T-SQL: FROM is optional",
            kinds="DELETE",
            effect="EEE",
        ),
        case(
            "dia-tsql-delete-top", BLOCK, "DELETE TOP (1) FROM users", "T-SQL: DELETE TOP", kinds="DELETE", effect="EEE"
        ),
        case(
            "dia-tsql-delete-output",
            BLOCK,
            "DELETE FROM users OUTPUT deleted.*",
            "T-SQL: DELETE ... OUTPUT",
            kinds="DELETE",
            effect="EEE",
        ),
        case(
            "dia-tsql-update-top",
            BLOCK,
            "UPDATE TOP (1) users SET name = 'x'",
            "T-SQL: UPDATE TOP",
            kinds="UPDATE",
            effect="EEE",
        ),
        case(
            "dia-tsql-merge-by-source",
            BLOCK,
            "MERGE users AS t USING staging AS s ON t.id = s.id WHEN NOT MATCHED BY SOURCE THEN DELETE;",
            "T-SQL: MERGE ... WHEN NOT MATCHED BY SOURCE THEN DELETE",
            kinds="MERGE DELETE",
            effect="EEE",
        ),
        case(
            "dia-tsql-exec-string", BLOCK, "EXEC('DROP TABLE users')", "T-SQL dynamic SQL", kinds="DROP", effect="EEE"
        ),
        case(
            "dia-tsql-sp-executesql",
            BLOCK,
            "EXEC sp_executesql N'DROP TABLE users'",
            "T-SQL dynamic SQL through sp_executesql",
            kinds="DROP",
            effect="EEE",
        ),
        case(
            "dia-tsql-if-drop",
            BLOCK,
            "IF 1 = 1 DROP TABLE users",
            "T-SQL control flow around a DROP",
            kinds="DROP",
            effect="EEE",
        ),
        case(
            "dia-mysql-multi-table-delete",
            BLOCK,
            "DELETE users, orders FROM users JOIN orders ON users.id = orders.user_id",
            "MySQL multi-table DELETE",
            kinds="DELETE",
            effect="EEC",
        ),
        case(
            "dia-mysql-alias-delete",
            BLOCK,
            "DELETE t1 FROM users t1 JOIN orders t2 ON t1.id = t2.user_id",
            "MySQL/T-SQL DELETE of an alias",
            kinds="DELETE",
            effect="EEC",
        ),
        case(
            "dia-mysql-delete-using",
            BLOCK,
            "DELETE FROM users USING users JOIN orders ON users.id = orders.user_id",
            "MySQL DELETE ... USING",
            kinds="DELETE",
            effect="EEC",
        ),
        case(
            "dia-pg-delete-using",
            BLOCK,
            "DELETE FROM users USING orders WHERE users.id = orders.user_id",
            "PostgreSQL DELETE ... USING",
            kinds="DELETE",
            effect="ECE",
        ),
        case(
            "dia-pg-delete-only",
            BLOCK,
            "DELETE FROM ONLY users",
            "PostgreSQL DELETE FROM ONLY",
            kinds="DELETE",
            effect="ECE",
        ),
        case(
            "dia-pg-truncate-only",
            BLOCK,
            "TRUNCATE ONLY users",
            "PostgreSQL TRUNCATE ONLY",
            kinds="TRUNCATE",
            effect="ECE",
        ),
        case(
            "dia-pg-truncate-restart",
            BLOCK,
            "TRUNCATE TABLE users RESTART IDENTITY CASCADE",
            "PostgreSQL TRUNCATE options",
            kinds="TRUNCATE",
            effect="ECE",
        ),
        case(
            "dia-pg-truncate-two",
            BLOCK,
            "TRUNCATE users, orders",
            "PostgreSQL truncates a list of tables",
            kinds="TRUNCATE",
            effect="ECE",
        ),
        case(
            "dia-truncate-table",
            BLOCK,
            "TRUNCATE TABLE users",
            "standard TRUNCATE TABLE",
            kinds="TRUNCATE",
            effect="ECC",
        ),
        case(
            "dia-sqlite-replace-into",
            BLOCK,
            "REPLACE INTO users (id, name) VALUES (1, 'x')",
            "SQLite and MySQL REPLACE INTO: the conflicting row (with its note) is deleted, then the new one inserted",
            kinds="REPLACE DELETE",
            effect="CEC",
        ),
        case(
            "dia-mysql-replace-no-into",
            BLOCK,
            "REPLACE users (id, name) VALUES (1, 'x')",
            "MySQL: INTO is optional",
            kinds="REPLACE DELETE",
            effect="EEC",
        ),
        case(
            "dia-sqlite-insert-or-replace",
            BLOCK,
            "INSERT OR REPLACE INTO users (id, name) VALUES (1, 'x')",
            "SQLite INSERT OR REPLACE: deletes the conflicting row",
            kinds="INSERT REPLACE DELETE",
            effect="CEE",
        ),
        case(
            "dia-sqlite-insert-or-ignore",
            BLOCK,
            "INSERT OR IGNORE INTO users (id, name) VALUES (1, 'x')",
            "SQLite INSERT OR IGNORE (the row exists, so nothing changes)",
            kinds="INSERT",
            effect="NEE",
        ),
        case(
            "dia-upsert-on-conflict",
            BLOCK,
            "INSERT INTO users (id, name) VALUES (1, 'x') ON CONFLICT (id) DO UPDATE SET name = 'y'",
            "SQLite/PostgreSQL upsert",
            kinds="INSERT UPDATE",
            effect="CCE",
        ),
        case(
            "dia-mysql-on-duplicate-key",
            BLOCK,
            "INSERT INTO users (id, name) VALUES (1, 'x') ON DUPLICATE KEY UPDATE name = 'y'",
            "MySQL upsert",
            kinds="INSERT UPDATE",
            effect="EEC",
        ),
        case(
            "dia-cockroach-upsert",
            BLOCK,
            "UPSERT INTO users (id, name) VALUES (1, 'x')",
            "CockroachDB UPSERT",
            kinds="INSERT",
            effect="EEE",
        ),
        case(
            "dia-drop-if-exists", BLOCK, "DROP TABLE IF EXISTS users", "DROP ... IF EXISTS", kinds="DROP", effect="CCC"
        ),
        case(
            "dia-drop-cascade",
            BLOCK,
            "DROP TABLE IF EXISTS users CASCADE",
            "PostgreSQL CASCADE (MySQL accepts and ignores it)",
            kinds="DROP",
            effect="ECC",
        ),
        case("dia-drop-two-tables", BLOCK, "DROP TABLE users, orders", "a list of tables", kinds="DROP", effect="ECC"),
        case(
            "dia-merge-delete",
            BLOCK,
            "MERGE INTO users u USING staging s ON u.id = s.id WHEN MATCHED THEN DELETE",
            "MERGE ... WHEN MATCHED THEN DELETE (PostgreSQL 15+, SQL Server, Oracle)",
            kinds="MERGE DELETE",
            effect="ECE",
        ),
        case(
            "dia-merge-upsert",
            BLOCK,
            "MERGE INTO users USING staging ON users.id = staging.id WHEN MATCHED THEN UPDATE SET name = staging.name "
            "WHEN NOT MATCHED THEN INSERT (id, name) VALUES (staging.id, staging.name)",
            "MERGE as an upsert",
            kinds="MERGE UPDATE INSERT",
            effect="ECE",
        ),
        case(
            "dia-execute-literal",
            BLOCK,
            "EXECUTE 'DROP TABLE users'",
            "dynamic SQL in PL/pgSQL syntax; no database runs it at the top level (junk), blocked either way",
            effect="EEE",
        ),
        case(
            "dia-execute-immediate",
            BLOCK,
            "EXECUTE IMMEDIATE 'DROP TABLE users'",
            "Snowflake/BigQuery/MariaDB dynamic SQL",
            kinds="DROP",
            effect="EEC",
        ),
        case(
            "dia-execute-immediate-concat",
            BLOCK,
            "EXECUTE IMMEDIATE CONCAT('DR', 'OP TABLE users')",
            "dynamic SQL assembled from pieces: MariaDB and BigQuery run the DROP",
            kinds="DROP",
            effect="EEC",
        ),
        case(
            "dia-mysql-prepare-concat",
            BLOCK,
            "SET @q = CONCAT('DR', 'OP TABLE users'); PREPARE s FROM @q; EXECUTE s",
            "MySQL dynamic SQL from a variable built by CONCAT",
            kinds="DROP",
            effect="EEC",
        ),
        case(
            "dia-mysql-prepare-literal",
            BLOCK,
            "PREPARE s FROM 'DELETE FROM users'; EXECUTE s",
            "MySQL prepared DELETE",
            kinds="DELETE",
            effect="EEC",
        ),
        case(
            "dia-pg-prepare-execute",
            BLOCK,
            "PREPARE p AS DELETE FROM users; EXECUTE p",
            "PostgreSQL prepared DELETE",
            kinds="DELETE",
            effect="ECE",
        ),
        case(
            "dia-pg-do-execute",
            BLOCK,
            "DO $$ BEGIN EXECUTE 'DROP TABLE users'; END $$",
            "PostgreSQL anonymous block with dynamic SQL",
            kinds="DROP",
            effect="ECE",
        ),
        case(
            "dia-pg-do-delete",
            BLOCK,
            "DO $$ BEGIN DELETE FROM users; END $$",
            "PostgreSQL anonymous block",
            kinds="DELETE",
            effect="ECE",
        ),
        case(
            "dia-pg-explain-analyze",
            BLOCK,
            "EXPLAIN ANALYZE DELETE FROM users",
            "PostgreSQL EXPLAIN ANALYZE executes the statement",
            kinds="DELETE",
            effect="ECE",
        ),
        case(
            "dia-mariadb-analyze-delete",
            BLOCK,
            "ANALYZE DELETE FROM users",
            "MariaDB ANALYZE <statement> executes the statement",
            kinds="DELETE",
            effect="EEC",
        ),
        case(
            "dia-select-into-new-table",
            BLOCK,
            "SELECT * INTO archive2 FROM users",
            "PostgreSQL and T-SQL: SELECT INTO creates and fills a new table (CREATE TABLE AS); MySQL reads INTO as a variable",
            kinds="CREATE",
            effect="ECE",
        ),
        case(
            "dia-create-table-as",
            BLOCK,
            "CREATE TABLE t2 AS SELECT * FROM users",
            "CREATE TABLE AS",
            kinds="CREATE",
            effect="CCC",
        ),
        case(
            "dia-sqlite-trigger",
            BLOCK,
            "CREATE TRIGGER t AFTER INSERT ON orders BEGIN DELETE FROM users; END",
            "SQLite trigger with a DELETE body, created only (destructive by the rule that such a body is blocked)",
            kinds="CREATE DELETE",
            effect="CEE",
            destroys="y..",
        ),
        case(
            "dia-alter-drop-column",
            BLOCK,
            "ALTER TABLE users DROP COLUMN note",
            "ALTER ... DROP COLUMN drops the column and its values",
            kinds="ALTER DROP",
            effect="CCC",
        ),
        case(
            "dia-alter-rename",
            BLOCK,
            "ALTER TABLE users RENAME TO old_users",
            "ALTER ... RENAME",
            kinds="ALTER",
            effect="CCC",
        ),
        case(
            "dia-grant",
            BLOCK,
            "GRANT SELECT ON users TO PUBLIC",
            "GRANT (no table changes)",
            kinds="GRANT",
            effect="ENN",
        ),
        case(
            "dia-sqlite-attach",
            BLOCK,
            "ATTACH DATABASE ':memory:' AS aux",
            "SQLite ATTACH",
            kinds="ATTACH",
            effect="CEE",
        ),
        case(
            "dia-sqlite-attach-short",
            BLOCK,
            "ATTACH ':memory:' AS aux",
            "SQLite ATTACH without DATABASE",
            kinds="ATTACH",
            effect="CEE",
        ),
        case(
            "dia-sqlite-pragma-set",
            BLOCK,
            "PRAGMA user_version = 7",
            "SQLite PRAGMA that writes",
            kinds="PRAGMA",
            effect="CEE",
        ),
        case(
            "dia-sqlite-pragma-read",
            BLOCK,
            "pragma table_info(users)",
            "a PRAGMA that only reads is still a denied PRAGMA",
            kinds="PRAGMA",
            effect="NEE",
        ),
        case(
            "dia-sqlite-indexed-by",
            BLOCK,
            "DELETE FROM users INDEXED BY idx_users_name WHERE name = 'ann'",
            "SQLite INDEXED BY",
            kinds="DELETE",
            effect="CEE",
        ),
        case(
            "dia-update-from",
            BLOCK,
            "UPDATE users SET name = 'x' FROM staging WHERE users.id = staging.id",
            "UPDATE ... FROM (SQLite 3.33+, PostgreSQL, T-SQL)",
            kinds="UPDATE",
            effect="CCE",
        ),
        case(
            "dia-mysql-update-join",
            BLOCK,
            "UPDATE users u JOIN orders o ON u.id = o.user_id SET u.name = 'x'",
            "MySQL UPDATE ... JOIN",
            kinds="UPDATE",
            effect="EEC",
        ),
        case(
            "dia-drop-index",
            BLOCK,
            "DROP INDEX idx_users_name",
            "DROP INDEX (MySQL wants ON <table>)",
            kinds="DROP",
            effect="CCE",
        ),
        case(
            "dia-tsql-declare-exec",
            BLOCK,
            "DECLARE @q NVARCHAR(100) = 'DR' + 'OP TABLE users'; EXEC(@q)",
            "T-SQL dynamic SQL assembled in a variable",
            kinds="DROP",
            effect="EEE",
        ),
        case(
            "dia-mysql-rename-table",
            BLOCK,
            "RENAME TABLE users TO old_users",
            "MySQL RENAME TABLE: not an ALTER statement by name, but the same schema change (it needs the ALTER and DROP "
            "privileges)",
            kinds="ALTER",
            effect="EEC",
        ),
        case(
            "dia-pg-copy-from",
            BLOCK,
            "COPY users (id, name) FROM '/dev/null'",
            "PostgreSQL COPY ... FROM: not an INSERT statement by name, but it inserts rows (it needs the INSERT privilege); "
            "reading a server file needs superuser (the label tests connect as one; /dev/null loads no row)",
            kinds="INSERT",
            effect="ENE",
        ),
        case("dia-explain-select", ALLOW, "EXPLAIN SELECT * FROM users", "EXPLAIN of a read", effect="NNN"),
        case(
            "dia-sqlite-explain-query-plan",
            ALLOW,
            "EXPLAIN QUERY PLAN SELECT * FROM users",
            "SQLite query plan",
            effect="NEE",
        ),
        case(
            "dia-explain-delete",
            ALLOW,
            "EXPLAIN DELETE FROM users",
            "EXPLAIN without ANALYZE only plans the DELETE",
            effect="NNN",
        ),
        case(
            "dia-sqlite-explain-query-plan-delete",
            ALLOW,
            "EXPLAIN QUERY PLAN DELETE FROM users",
            "SQLite only plans the DELETE",
            effect="NEE",
        ),
        case(
            "dia-sqlite-explain-drop",
            ALLOW,
            "EXPLAIN DROP TABLE users",
            "SQLite only compiles the DROP (the table stays)",
            effect="NEE",
        ),
        case(
            "dia-sqlite-pragma-function",
            ALLOW,
            "SELECT * FROM pragma_table_info('users')",
            "a table-valued function, not a PRAGMA statement",
            effect="NEE",
        ),
        case("dia-vacuum", ALLOW, "VACUUM", "VACUUM is not denied", effect="NNE"),
        case(
            "dia-analyze-table",
            ALLOW,
            "ANALYZE users",
            "statistics only (SQLite writes sqlite_stat1); ANALYZE is not denied",
            effect="CNE",
        ),
        case(
            "dia-for-update",
            ALLOW,
            "SELECT * FROM users WHERE id = 1 FOR UPDATE",
            "a row lock, not an UPDATE; SQLite has no FOR UPDATE",
            effect="ENN",
        ),
        case(
            "dia-pg-table-shorthand",
            ALLOW,
            "TABLE users",
            "PostgreSQL/MySQL 8 shorthand for SELECT * FROM users",
            effect="ENE",
        ),
        case(
            "dia-pg-comment-on",
            ALLOW,
            "COMMENT ON TABLE users IS 'DROP TABLE users'",
            "COMMENT is not denied",
            effect="ENE",
        ),
        case("dia-limit-offset", ALLOW, "SELECT name FROM users LIMIT 1 OFFSET 1", "LIMIT/OFFSET", effect="NNN"),
        case("dia-tsql-top", ALLOW, "SELECT TOP 1 name FROM users", "T-SQL TOP", effect="EEE"),
        case(
            "dia-fetch-first",
            ALLOW,
            "SELECT name FROM users FETCH FIRST 1 ROWS ONLY",
            "standard FETCH FIRST",
            effect="ENN",
        ),
        case("dia-mysql-dual", ALLOW, "SELECT 1 FROM DUAL", "MySQL/Oracle DUAL", effect="EEN"),
        case("dia-mysql-show", ALLOW, "SHOW TABLES", "MySQL SHOW", effect="EEN"),
        case(
            "dia-pg-dollar-string",
            ALLOW,
            "SELECT $$DROP TABLE users$$",
            "PostgreSQL dollar-quoted string",
            effect="ENE",
        ),
        case("dia-pg-e-string", ALLOW, "SELECT E'DROP TABLE users'", "PostgreSQL escape string", effect="ENE"),
        case("dia-n-string", ALLOW, "SELECT N'DROP TABLE users'", "national character literal", effect="ENN"),
        case(
            "dia-blob-literal",
            ALLOW,
            "SELECT X'44524f50'",
            "a blob/bit-string literal (the bytes of 'DROP')",
            effect="NNN",
        ),
        case(
            "dia-backtick-identifier",
            ALLOW,
            "SELECT `drop` FROM users",
            "backtick-quoted identifier (SQLite, MySQL)",
            effect="NEN",
        ),
        case(
            "dia-bracket-identifier",
            ALLOW,
            "SELECT [drop] FROM users",
            "bracket-quoted identifier (SQLite, T-SQL)",
            effect="NEE",
        ),
    ],
)

KEYWORDS_AS_DATA = _category(
    "keywords-as-data",
    [
        case(
            "data-literal-drop",
            ALLOW,
            "SELECT 'DROP TABLE users'",
            "a denied statement as a string literal",
            effect="NNN",
        ),
        case(
            "data-literals-two",
            ALLOW,
            "SELECT 'DROP TABLE users' AS prank, 'DELETE FROM users' AS joke",
            "two such literals",
            effect="NNN",
        ),
        case(
            "data-where-literal",
            ALLOW,
            "SELECT * FROM users WHERE note = 'DROP TABLE users'",
            "in a WHERE literal",
            effect="NNN",
        ),
        case(
            "data-like-delete",
            ALLOW,
            "SELECT * FROM users WHERE note LIKE '%delete from%'",
            "in a LIKE pattern",
            effect="NNN",
        ),
        case(
            "data-like-script",
            ALLOW,
            "SELECT * FROM users WHERE note LIKE '%; DROP TABLE users; --%'",
            "a whole script in a LIKE pattern",
            effect="NNN",
        ),
        case(
            "data-doubled-quote",
            ALLOW,
            "SELECT 'It''s; DROP TABLE users; --'",
            "a doubled quote keeps the literal open",
            effect="NNN",
        ),
        case(
            "data-doubled-quote-where",
            ALLOW,
            "SELECT * FROM users WHERE note = 'x'' ; DELETE FROM users; --'",
            "the DELETE is inside the literal",
            effect="NNN",
        ),
        case("data-dropped-at", ALLOW, "SELECT dropped_at FROM users", "a column named dropped_at", effect="NNN"),
        case(
            "data-deleted-column",
            ALLOW,
            "SELECT deleted, dropped_at FROM users WHERE deleted = 0",
            "columns named deleted and dropped_at",
            effect="NNN",
        ),
        case("data-deleted-table", ALLOW, "SELECT * FROM deleted", "a table named deleted", effect="NNN"),
        case(
            "data-quoted-keyword-columns",
            ALLOW,
            'SELECT "delete", "drop" FROM users',
            "columns named delete and drop (strings to MySQL)",
            effect="NNN",
        ),
        case(
            "data-quoted-alias-statement",
            ALLOW,
            'SELECT 1 AS "DROP TABLE users"',
            "a statement as a quoted alias",
            effect="NNN",
        ),
        case(
            "data-quoted-table",
            ALLOW,
            'SELECT * FROM "deleted"',
            "a quoted table name; MySQL reads a string: an error",
            effect="NNE",
        ),
        case(
            "data-truncate-column",
            ALLOW,
            "SELECT truncate_log FROM (SELECT 1 AS truncate_log) AS t",
            "a column named truncate_log",
            effect="NNN",
        ),
        case(
            "data-prefixed-aliases",
            ALLOW,
            "SELECT name AS updated_name, note AS insert_note FROM users",
            "aliases starting with denied words",
            effect="NNN",
        ),
        case(
            "data-replace-function",
            ALLOW,
            "SELECT replace(name, 'a', 'b') FROM users",
            "the replace() function, not REPLACE INTO",
            effect="NNN",
        ),
        case(
            "data-create-alias", ALLOW, 'SELECT COUNT(*) AS "create" FROM users', "an alias named create", effect="NNN"
        ),
        case(
            "data-script-alias",
            ALLOW,
            'SELECT 1 AS "; DROP TABLE users; --"',
            "a script as a quoted alias",
            effect="NNN",
        ),
        case("data-concat", ALLOW, "SELECT 'a' || 'DROP TABLE users'", "concatenated literals", effect="NNN"),
        case(
            "data-in-list",
            ALLOW,
            "SELECT * FROM users WHERE name IN ('drop', 'delete', 'truncate')",
            "denied words as list values",
            effect="NNN",
        ),
        case(
            "data-char-codes",
            ALLOW,
            "SELECT CHAR(68, 82, 79, 80)",
            "the letters of DROP built by CHAR(); PostgreSQL has no CHAR()",
            effect="NEN",
        ),
        case(
            "data-qualified-columns",
            ALLOW,
            "SELECT t.drop_count FROM (SELECT 1 AS drop_count) AS t",
            "a qualified column named drop_count",
            effect="NNN",
        ),
        case(
            "data-alter-grant-merge-names",
            ALLOW,
            "SELECT alter_ego, grant_id, merge_key FROM (SELECT 'x' AS alter_ego, 1 AS grant_id, 2 AS merge_key) AS s",
            "columns starting with ALTER, GRANT, MERGE",
            effect="NNN",
        ),
        case(
            "data-update-dropped-at",
            BLOCK,
            "UPDATE users SET dropped_at = '2026-01-01' WHERE id = 3",
            "UPDATE is denied in this corpus",
            kinds="UPDATE",
            effect="CCC",
        ),
        case(
            "data-delete-from-deleted",
            BLOCK,
            "DELETE FROM deleted",
            "deleting from a table named deleted",
            kinds="DELETE",
            effect="CCC",
        ),
        case(
            "data-drop-deleted",
            BLOCK,
            "DROP TABLE deleted",
            "dropping a table named deleted",
            kinds="DROP",
            effect="CCC",
        ),
        case(
            "data-delete-no-match",
            BLOCK,
            "DELETE FROM users WHERE note = 'SELECT only'",
            "a DELETE that matches no row is still a DELETE",
            kinds="DELETE",
            effect="NNN",
            destroys="yyy",
        ),
        case(
            "data-read-then-delete-like",
            BLOCK,
            "SELECT 'harmless'; DELETE FROM users WHERE note LIKE '%DROP%'",
            "a read, then a real DELETE",
            kinds="DELETE",
            effect="CCC",
        ),
        case(
            "data-drop-quoted-statement-table",
            BLOCK,
            'DROP TABLE "DROP TABLE users"',
            "a DROP of a table with a strange name (missing here)",
            kinds="DROP",
            effect="EEE",
        ),
    ],
)

LEXER_DIVERGENCE = _category(
    "lexer-divergence",
    [
        case(
            "lex-backslash-standard-drops",
            BLOCK,
            "SELECT 'a\\'; DROP TABLE users; -- '",
            "standard SQL: backslash is a plain character, the literal ends at \\' and the DROP runs (SQLite, PostgreSQL); "
            "MySQL: \\' is an escaped quote, all one literal",
            kinds="DROP",
            effect="CCN",
        ),
        case(
            "lex-backslash-mysql-drops",
            BLOCK,
            "SELECT 'a\\' , '; DROP TABLE users; -- '",
            "MySQL/MariaDB: \\' escapes the quote, so the literal is 'a\\' , ' and the DROP runs; standard SQL reads two literals",
            kinds="DROP",
            effect="NNC",
        ),
        case(
            "lex-backslash-mysql-double-quote",
            BLOCK,
            'SELECT "a\\" , "; DROP TABLE users; -- "',
            "the same through MySQL double-quoted strings",
            kinds="DROP",
            effect="NEC",
        ),
        case(
            "lex-pg-e-string-drops",
            BLOCK,
            "SELECT E'\\' , '; DROP TABLE users; -- '",
            "PostgreSQL E-string: \\' escapes the quote, so the DROP runs",
            kinds="DROP",
            effect="ECE",
        ),
        case(
            "lex-mysql-dash-dash-no-space",
            BLOCK,
            "SELECT 1 --1; DROP TABLE users",
            "MySQL: -- starts a comment only before whitespace, so this is 1 - -1 and the DROP runs",
            kinds="DROP",
            effect="NNC",
        ),
        case(
            "lex-mysql-executable-comment",
            BLOCK,
            "SELECT 1; /*! DROP TABLE users */",
            "MySQL/MariaDB execute the text of /*! ... */ comments",
            kinds="DROP",
            effect="NNC",
        ),
        case(
            "lex-mysql-executable-comment-alone",
            BLOCK,
            "/*! DROP TABLE users */",
            "an executable comment on its own",
            kinds="DROP",
            effect="NNC",
        ),
        case(
            "lex-mysql-versioned-comment",
            BLOCK,
            "SELECT 1; /*!50000 DELETE FROM users */",
            "a versioned executable comment (runs on servers >= 5.0.0)",
            kinds="DELETE",
            effect="NNC",
        ),
        case(
            "lex-sqlite-bracket-hides-separator",
            BLOCK,
            "SELECT name [';] FROM users; DROP TABLE users; --'] FROM users",
            "SQLite and T-SQL read [';] as a quoted alias, so the DROP runs; PostgreSQL reads a subscript",
            kinds="DROP",
            effect="CEE",
        ),
        case(
            "lex-dollar-tag-sqlite",
            BLOCK,
            "SELECT $a$ ; DROP TABLE users; $a$",
            "PostgreSQL: one dollar-quoted string; SQLite: $a$ is a parameter, the DROP runs, then a syntax error",
            kinds="DROP",
            effect="XNE",
        ),
        case(
            "lex-dollar-quoted-script",
            BLOCK,
            "SELECT $$ ; DROP TABLE users; $$",
            "PostgreSQL: one dollar-quoted string; SQLite: $ starts a parameter name, the DROP runs, then a syntax error",
            kinds="DROP",
            effect="XNE",
        ),
        case(
            "lex-hash-xor-pg",
            BLOCK,
            "SELECT 1 # 2; DROP TABLE users",
            "PostgreSQL: # is XOR and the DROP runs; MySQL: # starts a comment",
            kinds="DROP",
            effect="ECN",
        ),
        case(
            "lex-mysql-hash-comment",
            ALLOW,
            "SELECT 1 # comment; DROP TABLE users",
            "MySQL: a # comment hides the rest; PostgreSQL and SQLite reject the text",
            effect="EEN",
        ),
        case(
            "lex-backslash-two-literals",
            ALLOW,
            "SELECT 'a\\', 'b'",
            "two literals in standard SQL; MySQL sees an unterminated one",
            effect="NNE",
        ),
        case(
            "lex-bracket-identifier-script",
            ALLOW,
            "SELECT [a; DROP TABLE users; --] FROM users",
            "SQLite/T-SQL: one bracket-quoted identifier (no such column); nothing else runs",
            effect="EEE",
        ),
        case(
            "lex-quoted-identifier-separator",
            ALLOW,
            'SELECT "a;b" FROM (SELECT 1 AS "a;b") AS t',
            "a separator inside a quoted identifier",
            effect="NNN",
        ),
    ],
)

UNICODE = _category(
    "unicode",
    [
        case(
            "uni-cyrillic-o-drop",
            BLOCK,
            "DR\u041eP TABLE users",
            "Cyrillic \u041e: not a keyword to any database; junk, fail closed",
            effect="EEE",
        ),
        case(
            "uni-fullwidth-drop",
            BLOCK,
            "\uff24\uff32\uff2f\uff30 TABLE users",
            "fullwidth letters: junk, fail closed",
            effect="EEE",
        ),
        case(
            "uni-fullwidth-delete-from",
            BLOCK,
            "\uff24\uff25\uff2c\uff25\uff34\uff25 \uff26\uff32\uff2f\uff2d users",
            "fullwidth DELETE FROM: junk",
            effect="EEE",
        ),
        case(
            "uni-cyrillic-e-delete",
            BLOCK,
            "DELET\u0415 FROM users",
            "Cyrillic \u0415 at the end of DELETE: junk",
            effect="EEE",
        ),
        case(
            "uni-zero-width-in-delete",
            BLOCK,
            "DE\u200bLETE FROM users",
            "a zero-width space inside the keyword: junk",
            effect="EEE",
        ),
        case(
            "uni-nbsp-separator",
            BLOCK,
            "DROP\u00a0TABLE users",
            "a no-break space is an identifier character to SQLite, PostgreSQL and MariaDB (junk there)",
            effect="EEE",
        ),
        case(
            "uni-em-space-separator", BLOCK, "DROP\u2003TABLE users", "an em space between tokens: junk", effect="EEE"
        ),
        case(
            "uni-ideographic-space",
            BLOCK,
            "DROP\u3000TABLE users",
            "an ideographic space between tokens: junk",
            effect="EEE",
        ),
        case(
            "uni-bom-drop",
            BLOCK,
            "\ufeffDROP TABLE users",
            "SQLite skips a leading byte-order mark and drops",
            kinds="DROP",
            effect="CEE",
        ),
        case(
            "uni-zero-width-after-separator",
            BLOCK,
            "SELECT 1;\u200bDROP TABLE users",
            "a zero-width space glued to DROP: junk",
            effect="EEE",
        ),
        case(
            "uni-zero-width-in-table-name",
            BLOCK,
            "DROP TABLE users\u200b",
            "a DROP of a table whose name ends in a zero-width space (missing)",
            kinds="DROP",
            effect="EEE",
        ),
        case(
            "uni-cyrillic-table-name",
            BLOCK,
            "DROP TABLE us\u0435rs",
            "a DROP of a look-alike table name (missing)",
            kinds="DROP",
            effect="EEE",
        ),
        case(
            "uni-nul-after-drop",
            BLOCK,
            "DROP TABLE users\x00",
            "C APIs (libpq through psycopg, SQLite's) stop at the NUL and drop; python's sqlite3 refuses NUL",
            kinds="DROP",
            effect="ECC",
        ),
        case(
            "uni-nul-before-drop",
            BLOCK,
            "SELECT 1;\x00DROP TABLE users",
            "a NUL glued to DROP: junk (libpq stops at the NUL and runs only SELECT 1)",
            effect="ENE",
        ),
        case(
            "uni-literal-cyrillic-drop",
            ALLOW,
            "SELECT 'DR\u041eP TABLE users'",
            "look-alike inside a literal",
            effect="NNN",
        ),
        case(
            "uni-literal-fullwidth",
            ALLOW,
            "SELECT '\uff24\uff32\uff2f\uff30 TABLE users'",
            "fullwidth inside a literal",
            effect="NNN",
        ),
        case("uni-quoted-alias-cyrillic", ALLOW, 'SELECT 1 AS "DR\u041eP"', "look-alike quoted alias", effect="NNN"),
        case(
            "uni-literal-emoji",
            ALLOW,
            "SELECT * FROM users WHERE name = 'Zo\u00eb \U0001f642'",
            "non-ASCII data",
            effect="NNN",
        ),
        case(
            "uni-literal-zero-width", ALLOW, "SELECT 'ze\u200bro'", "a zero-width space inside a literal", effect="NNN"
        ),
        case(
            "uni-line-separator-in-comment",
            ALLOW,
            "SELECT 1 -- x\u2028DROP TABLE users",
            "U+2028 does not end a line comment in any database",
            effect="NNN",
        ),
        case(
            "uni-next-line-in-comment",
            ALLOW,
            "SELECT 1 -- x\u0085DROP TABLE users",
            "U+0085 (NEL) does not end a line comment either",
            effect="NNN",
        ),
        case(
            "uni-bidi-override-in-comment",
            ALLOW,
            "SELECT 1 /* \u202e DROP TABLE users */",
            "a right-to-left override inside a comment",
            effect="NNN",
        ),
        case(
            "uni-pg-unicode-escape-literal",
            ALLOW,
            "SELECT U&'\\0044ROP'",
            "PostgreSQL Unicode-escape literal spelling DROP",
            effect="ENE",
        ),
        case(
            "uni-literal-accents",
            ALLOW,
            "SELECT 'na\u00efve caf\u00e9', 'Stra\u00dfe'",
            "accented literals",
            effect="NNN",
        ),
    ],
)

LONG_AND_DEEP = _category(
    "long-and-deep",
    [
        case(
            "long-or-5000-then-drop",
            BLOCK,
            _or_terms(5000) + "; DROP TABLE users",
            "a 64 KB SELECT with 5,000 OR terms, then a DROP; SQLite rejects the expression depth and stops",
            kinds="DROP",
            effect="ECC",
        ),
        case(
            "long-5000-selects-then-drop",
            BLOCK,
            "SELECT 1;" * 5000 + "DROP TABLE users",
            "a DROP after 5,000 statements (45 KB)",
            kinds="DROP",
            effect="CCC",
        ),
        case(
            "long-50kb-block-comment-then-drop",
            BLOCK,
            "/* " + "x" * FIFTY_KB + " */ DROP TABLE users",
            "a DROP after a 50 KB comment",
            kinds="DROP",
            effect="CCC",
        ),
        case(
            "long-50kb-line-comment-then-drop",
            BLOCK,
            "-- " + "x" * FIFTY_KB + "\nDROP TABLE users",
            "a DROP after a 50 KB line comment",
            kinds="DROP",
            effect="CCC",
        ),
        case(
            "long-50kb-literal-then-delete",
            BLOCK,
            "SELECT '" + "x" * FIFTY_KB + "'; DELETE FROM users",
            "a DELETE after a 50 KB literal",
            kinds="DELETE",
            effect="CCC",
        ),
        case(
            "long-2000-unions-then-delete",
            BLOCK,
            " UNION ALL ".join(f"SELECT {i}" for i in range(2000)) + "; DELETE FROM users",
            "a DELETE after 2,000 UNION ALL terms; SQLite caps compound SELECTs at 500 and stops",
            kinds="DELETE",
            effect="ECC",
        ),
        case(
            "deep-subqueries-200-then-drop",
            BLOCK,
            _nested_subqueries(200) + "; DROP TABLE users",
            "a DROP after subqueries nested 200 deep (too deep for SQLite and MariaDB, which stop)",
            kinds="DROP",
            effect="ECE",
        ),
        case(
            "deep-parens-1000-then-drop",
            BLOCK,
            _parens(1000) + "; DROP TABLE users",
            "a DROP after parentheses nested 1,000 deep (SQLite overflows its parser stack first)",
            kinds="DROP",
            effect="ECC",
        ),
        case(
            "deep-chained-ctes-delete",
            BLOCK,
            _chained_ctes(50),
            "50 chained CTEs over a DELETE at the root (PostgreSQL)",
            kinds="DELETE",
            effect="ECE",
        ),
        case(
            "deep-delete-over-subqueries",
            BLOCK,
            "DELETE FROM users WHERE id IN (" + _nested_subqueries(100).replace("SELECT *", "SELECT id", 1) + ")",
            "a DELETE whose condition nests 100 subqueries (too deep for SQLite and MariaDB)",
            kinds="DELETE",
            effect="ECE",
        ),
        case(
            "long-over-limit-then-drop",
            BLOCK,
            "SELECT 1; -- " + "x" * 200_000 + "\nDROP TABLE users",
            "a 200 KB script ending in a DROP",
            kinds="DROP",
            effect="CCC",
        ),
        case("deep-parens-unbalanced", BLOCK, "SELECT " + "(" * 1000, "1,000 unclosed parentheses: junk", effect="EEE"),
        case(
            "long-or-5000",
            ALLOW,
            _or_terms(5000),
            "a 64 KB SELECT with 5,000 OR terms (too deep for SQLite's expression limit)",
            effect="ENN",
        ),
        case("long-50kb-literal", ALLOW, "SELECT '" + "x" * FIFTY_KB + "'", "a 50 KB literal", effect="NNN"),
        case(
            "long-50kb-literal-of-drops",
            ALLOW,
            "SELECT '" + "DROP TABLE users; " * 2800 + "'",
            "a 50 KB literal made of DROP statements",
            effect="NNN",
        ),
        case(
            "long-in-list-5000",
            ALLOW,
            "SELECT * FROM users WHERE id IN (" + ", ".join(map(str, range(5000))) + ")",
            "an IN list of 5,000 values",
            effect="NNN",
        ),
        case(
            "long-case-1000",
            ALLOW,
            "SELECT CASE " + " ".join(f"WHEN id = {i} THEN {i}" for i in range(1000)) + " END FROM users",
            "a CASE with 1,000 branches",
            effect="NNN",
        ),
        case(
            "deep-subqueries-50",
            ALLOW,
            _nested_subqueries(50),
            "subqueries nested 50 deep (SQLite: too deep)",
            effect="ENN",
        ),
        case(
            "deep-subqueries-200",
            ALLOW,
            _nested_subqueries(200),
            "subqueries nested 200 deep (PostgreSQL only)",
            effect="ENE",
        ),
        case("deep-parens-300", ALLOW, _parens(300), "parentheses nested 300 deep (SQLite: too deep)", effect="ENN"),
        case(
            "deep-parens-1000",
            ALLOW,
            _parens(1000),
            "parentheses nested 1,000 deep: PostgreSQL and MariaDB run it, SQLite overflows",
            effect="ENN",
        ),
        case(
            "long-over-limit-read",
            ALLOW,
            "SELECT 1 -- " + "x" * 200_000,
            "a 200 KB read (mostly comment), over max_query_chars",
            effect="NNN",
        ),
    ],
)

DEFERRED_CODE = _category(
    "deferred-code",
    [
        # PostgreSQL routines: created, then run in the same script, so the letter shows the body ran.
        case(
            "rt-pg-sql-function-quoted-called",
            BLOCK,
            "CREATE FUNCTION f() RETURNS void LANGUAGE sql AS 'DELETE FROM users'; SELECT f()",
            "PostgreSQL: an SQL function whose body (a quoted string) deletes, then called",
            kinds="CREATE DELETE",
            effect="ECE",
        ),
        case(
            "rt-pg-sql-function-dollar-called",
            BLOCK,
            "CREATE FUNCTION f() RETURNS void AS $$ DROP TABLE orders $$ LANGUAGE sql; SELECT f()",
            "PostgreSQL: a dollar-quoted SQL function body with a DROP, LANGUAGE after the body, then called",
            kinds="CREATE DROP",
            effect="ECE",
        ),
        case(
            "rt-pg-sql-function-quote-escapes-called",
            BLOCK,
            "CREATE FUNCTION f() RETURNS void LANGUAGE sql AS 'DELETE FROM users WHERE name <> ''nobody'''; SELECT f()",
            "PostgreSQL: doubled quotes inside a quoted body",
            kinds="CREATE DELETE",
            effect="ECE",
        ),
        case(
            "rt-pg-plpgsql-function-called",
            BLOCK,
            "CREATE FUNCTION f() RETURNS void LANGUAGE plpgsql AS $$ BEGIN DELETE FROM users; END $$; SELECT f()",
            "PostgreSQL: a PL/pgSQL function that deletes, then called",
            kinds="CREATE DELETE",
            effect="ECE",
        ),
        case(
            "rt-pg-plpgsql-tagged-truncate-called",
            BLOCK,
            "CREATE OR REPLACE FUNCTION cleanup() RETURNS int LANGUAGE plpgsql AS $body$\nBEGIN\n  TRUNCATE orders;\n  RETURN 1;\nEND\n$body$;\n"
            "SELECT cleanup()",
            "PostgreSQL: a $body$-tagged PL/pgSQL body that truncates, laid out over lines, then called",
            kinds="CREATE TRUNCATE",
            effect="ECE",
        ),
        case(
            "rt-pg-plpgsql-called-in-where",
            BLOCK,
            "CREATE FUNCTION g() RETURNS boolean LANGUAGE plpgsql AS $$ BEGIN DELETE FROM orders; RETURN true; END $$; "
            "SELECT name FROM users WHERE g()",
            "PostgreSQL: the destructive function is called from a WHERE clause of a read",
            kinds="CREATE DELETE",
            effect="ECE",
        ),
        case(
            "rt-pg-procedure-call",
            BLOCK,
            "CREATE PROCEDURE p() LANGUAGE sql AS $$ DELETE FROM orders $$; CALL p()",
            "PostgreSQL: a procedure that deletes, then CALLed",
            kinds="CREATE DELETE",
            effect="ECE",
        ),
        case(
            "rt-pg-procedure-begin-atomic-call",
            BLOCK,
            "CREATE PROCEDURE p() LANGUAGE sql BEGIN ATOMIC DELETE FROM orders; DELETE FROM users; END; CALL p()",
            "PostgreSQL 14+: a BEGIN ATOMIC body holds semicolons of its own; then CALLed",
            kinds="CREATE DELETE",
            effect="ECE",
        ),
        case(
            "rt-pg-plpgsql-dynamic-called",
            BLOCK,
            "CREATE FUNCTION f() RETURNS void LANGUAGE plpgsql AS $$ BEGIN EXECUTE 'DR' || 'OP TABLE orders'; END $$; SELECT f()",
            "PostgreSQL: the body builds its statement from strings at run time (cannot be verified), then called",
            kinds="CREATE DROP",
            effect="ECE",
        ),
        case(
            "rt-pg-plpgsql-format-called",
            BLOCK,
            "CREATE FUNCTION wipe(t text) RETURNS void LANGUAGE plpgsql AS $$ BEGIN EXECUTE format('DELETE FROM %I', t); END $$; "
            "SELECT wipe('users')",
            "PostgreSQL: EXECUTE format(...) of a table name passed at call time",
            kinds="CREATE DELETE",
            effect="ECE",
        ),
        # Created only: the body would destroy data when called; a routine is judged by its body: blocked.
        case(
            "rt-pg-function-create-only",
            BLOCK,
            "CREATE FUNCTION purge() RETURNS void LANGUAGE sql AS 'DELETE FROM users'",
            "PostgreSQL: created, not called; counted destructive by the rule that a body which would destroy data is blocked",
            kinds="CREATE DELETE",
            effect="ECE",
            destroys=".y.",
        ),
        case(
            "rt-pg-plpgsql-create-only",
            BLOCK,
            "CREATE FUNCTION purge() RETURNS void LANGUAGE plpgsql AS $$ BEGIN DROP TABLE orders; END $$",
            "PostgreSQL: a PL/pgSQL body with a DROP, created only (destructive by the rule)",
            kinds="CREATE DROP",
            effect="ECE",
            destroys=".y.",
        ),
        case(
            "rt-pg-plpgsql-dynamic-create-only",
            BLOCK,
            "CREATE FUNCTION wipe(t text) RETURNS void LANGUAGE plpgsql AS $$ BEGIN EXECUTE format('DELETE FROM %I', t); END $$",
            "PostgreSQL: a body that builds SQL at run time, created only: cannot be verified, so blocked (destructive by the rule)",
            kinds="CREATE DELETE",
            effect="ECE",
            destroys=".y.",
        ),
        case(
            "rt-pg-trigger-create-only",
            BLOCK,
            "CREATE FUNCTION tf() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN DELETE FROM users; RETURN NEW; END $$; "
            "CREATE TRIGGER t AFTER INSERT ON orders FOR EACH ROW EXECUTE FUNCTION tf()",
            "PostgreSQL: a trigger whose function deletes, never fired (destructive by the rule)",
            kinds="CREATE DELETE",
            effect="ECE",
            destroys=".y.",
        ),
        # DO blocks: run at once.
        case(
            "rt-pg-do-format",
            BLOCK,
            "DO $$ BEGIN EXECUTE format('DELETE FROM %I', 'users'); END $$",
            "PostgreSQL: a DO block that builds its DELETE at run time",
            kinds="DELETE",
            effect="ECE",
        ),
        case(
            "rt-pg-do-loop-drop-all",
            BLOCK,
            "DO $$ DECLARE r record; BEGIN FOR r IN SELECT tablename FROM pg_tables WHERE schemaname = current_schema() LOOP "
            "EXECUTE 'DROP TABLE ' || quote_ident(r.tablename) || ' CASCADE'; END LOOP; END $$",
            "PostgreSQL: a DO block that drops every table of the schema, names found at run time",
            kinds="DROP",
            effect="ECE",
        ),
        case(
            "rt-pg-do-tagged-truncate",
            BLOCK,
            "DO LANGUAGE plpgsql $x$ BEGIN TRUNCATE users, orders; END $x$",
            "PostgreSQL: DO with LANGUAGE first and a $x$ tag",
            kinds="TRUNCATE",
            effect="ECE",
        ),
        case(
            "rt-pg-do-perform-select",
            ALLOW,
            "DO $$ BEGIN PERFORM count(*) FROM users; END $$",
            "PostgreSQL: a DO block that only reads",
            effect="ENE",
        ),
        case(
            "rt-pg-do-select-into-variable",
            ALLOW,
            "DO $$ DECLARE n int; BEGIN SELECT count(*) INTO n FROM users; RAISE NOTICE 'DROP TABLE users: % rows', n; END $$",
            "PL/pgSQL SELECT ... INTO a variable creates no table; the DROP is a message",
            effect="ENE",
        ),
        case(
            "rt-pg-do-static-execute-select",
            ALLOW,
            "DO $$ BEGIN EXECUTE 'SELECT count(*) FROM users'; END $$",
            "EXECUTE of a literal: the text is known now, and it reads",
            effect="ENE",
        ),
        # Harmless for the destructive deny list (a CREATE, and a body that reads or updates).
        case(
            "rt-pg-sql-function-select-called",
            BLOCK,
            "CREATE FUNCTION n_users() RETURNS bigint LANGUAGE sql AS 'SELECT count(*) FROM users'; SELECT n_users()",
            "PostgreSQL: a function that reads (a CREATE: denied by DENY, harmless for DROP/DELETE/TRUNCATE)",
            kinds="CREATE",
            effect="ECE",
        ),
        case(
            "rt-pg-function-drop-in-literal-called",
            BLOCK,
            "CREATE FUNCTION f() RETURNS text LANGUAGE sql AS $$ SELECT 'DROP TABLE users' -- DELETE FROM users\n$$; SELECT f()",
            "PostgreSQL: the body's DROP is a literal and its DELETE a comment",
            kinds="CREATE",
            effect="ECE",
        ),
        case(
            "rt-pg-plpgsql-comment-and-literal-called",
            BLOCK,
            "CREATE FUNCTION note() RETURNS text LANGUAGE plpgsql AS $$\nBEGIN\n  -- DROP TABLE users\n  RETURN 'DELETE FROM users';\nEND\n$$;\n"
            "SELECT note()",
            "PostgreSQL: a PL/pgSQL body with a DROP in a comment and a DELETE in a literal",
            kinds="CREATE",
            effect="ECE",
        ),
        case(
            "rt-pg-plpgsql-update-called",
            BLOCK,
            "CREATE FUNCTION touch() RETURNS void LANGUAGE plpgsql AS $$ BEGIN UPDATE users SET note = 'seen'; END $$; SELECT touch()",
            "PostgreSQL: a body that updates",
            kinds="CREATE UPDATE",
            effect="ECE",
        ),
        # Triggers and rules that fire in the same script.
        case(
            "rt-pg-trigger-delete-fires",
            BLOCK,
            "CREATE FUNCTION tf() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN DELETE FROM users; RETURN NEW; END $$; "
            "CREATE TRIGGER t AFTER INSERT ON orders FOR EACH ROW EXECUTE FUNCTION tf(); INSERT INTO orders VALUES (3, 1, 1.0)",
            "PostgreSQL: an INSERT fires a trigger whose function deletes",
            kinds="CREATE INSERT DELETE",
            effect="ECE",
        ),
        case(
            "rt-pg-trigger-dynamic-fires",
            BLOCK,
            "CREATE FUNCTION tf() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN EXECUTE 'TRUNCATE ' || quote_ident(TG_ARGV[0]); "
            "RETURN NULL; END $$; CREATE TRIGGER t AFTER UPDATE ON users FOR EACH STATEMENT EXECUTE FUNCTION tf('orders'); "
            "UPDATE users SET note = 'x' WHERE id = 1",
            "PostgreSQL: a trigger function that truncates a table named by the trigger's argument, built at run time",
            kinds="CREATE UPDATE TRUNCATE",
            effect="ECE",
        ),
        case(
            "rt-pg-trigger-audit-insert-fires",
            BLOCK,
            "CREATE FUNCTION audit() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN INSERT INTO archive (id, name) "
            "VALUES (NEW.id, 'DROP TABLE users'); RETURN NEW; END $$; "
            "CREATE TRIGGER t AFTER UPDATE ON users FOR EACH ROW EXECUTE FUNCTION audit(); UPDATE users SET note = 'x' WHERE id = 2",
            "PostgreSQL: an audit trigger that inserts (harmless for DROP/DELETE/TRUNCATE)",
            kinds="CREATE UPDATE INSERT",
            effect="ECE",
        ),
        case(
            "rt-pg-rule-delete-fires",
            BLOCK,
            "CREATE RULE r AS ON INSERT TO orders DO ALSO DELETE FROM users; INSERT INTO orders VALUES (3, 1, 1.0)",
            "PostgreSQL: a rule adds a DELETE to every INSERT",
            kinds="CREATE INSERT DELETE",
            effect="ECE",
        ),
        # MariaDB stored programs and compound statements.
        case(
            "rt-maria-procedure-call",
            BLOCK,
            "CREATE PROCEDURE p() BEGIN DELETE FROM users; END; CALL p()",
            "MariaDB: a procedure with a BEGIN ... END body (the server reads the inner ; itself), then CALLed",
            kinds="CREATE DELETE",
            effect="EEC",
        ),
        case(
            "rt-maria-procedure-one-statement-call",
            BLOCK,
            "CREATE PROCEDURE p() DELETE FROM orders; CALL p()",
            "MariaDB: a procedure body may be one bare statement",
            kinds="CREATE DELETE",
            effect="EEC",
        ),
        case(
            "rt-maria-function-called",
            BLOCK,
            "CREATE FUNCTION f() RETURNS INT MODIFIES SQL DATA BEGIN DELETE FROM users; RETURN 1; END; SELECT f()",
            "MariaDB: a stored function that deletes, called from a SELECT",
            kinds="CREATE DELETE",
            effect="EEC",
        ),
        case(
            "rt-maria-procedure-dynamic-call",
            BLOCK,
            "CREATE PROCEDURE p() BEGIN SET @q = CONCAT('DROP TABLE ', 'orders'); PREPARE s FROM @q; EXECUTE s; END; CALL p()",
            "MariaDB: a procedure that prepares a statement built at run time",
            kinds="CREATE DROP",
            effect="EEC",
        ),
        case(
            "rt-maria-procedure-create-only",
            BLOCK,
            "CREATE PROCEDURE p() BEGIN DROP TABLE orders; END",
            "MariaDB: created, not called (destructive by the rule)",
            kinds="CREATE DROP",
            effect="EEC",
            destroys="..y",
        ),
        case(
            "rt-maria-delimiter-procedure",
            BLOCK,
            "DELIMITER //\nCREATE PROCEDURE p()\nBEGIN\n  DELETE FROM users;\nEND//\nDELIMITER ;\nCALL p();\n",
            "a mysqldump-style script: DELIMITER is a command of the mariadb/mysql client (observed through it), the server never "
            "sees it",
            kinds="CREATE DELETE",
            effect="EEC",
            client=True,
        ),
        case(
            "rt-maria-trigger-fires",
            BLOCK,
            "CREATE TRIGGER t AFTER INSERT ON orders FOR EACH ROW DELETE FROM staging; INSERT INTO orders VALUES (3, 1, 1.0)",
            "MariaDB: a one-statement trigger body, fired by the INSERT (SQLite wants BEGIN ... END)",
            kinds="CREATE INSERT DELETE",
            effect="EEC",
        ),
        case(
            "rt-trigger-for-each-row-compound-fires",
            BLOCK,
            "CREATE TRIGGER t BEFORE UPDATE ON users FOR EACH ROW BEGIN DELETE FROM orders WHERE user_id = OLD.id; END; "
            "UPDATE users SET note = 'x' WHERE id = 1",
            "the same text is a trigger to SQLite and to MariaDB; the UPDATE fires its DELETE in both",
            kinds="CREATE UPDATE DELETE",
            effect="CEC",
        ),
        case(
            "rt-maria-begin-not-atomic",
            BLOCK,
            "BEGIN NOT ATOMIC DELETE FROM users; END",
            "MariaDB: an anonymous compound statement, run at once (its DO block)",
            kinds="DELETE",
            effect="EEC",
        ),
        case(
            "rt-maria-begin-not-atomic-dynamic",
            BLOCK,
            "BEGIN NOT ATOMIC DECLARE t VARCHAR(20) DEFAULT 'orders'; EXECUTE IMMEDIATE CONCAT('TRUNCATE TABLE ', t); END",
            "MariaDB: a compound statement that builds a TRUNCATE at run time",
            kinds="TRUNCATE",
            effect="EEC",
        ),
        case(
            "rt-maria-begin-not-atomic-select",
            ALLOW,
            "BEGIN NOT ATOMIC DECLARE n INT; SELECT COUNT(*) INTO n FROM users; SELECT n AS 'DROP TABLE users'; END",
            "MariaDB: a compound statement that reads into a variable (no table created)",
            effect="EEN",
        ),
        case(
            "rt-maria-procedure-select-call",
            BLOCK,
            "CREATE PROCEDURE report() SELECT name FROM users WHERE note LIKE '%drop%'; CALL report()",
            "MariaDB: a procedure that reads",
            kinds="CREATE",
            effect="EEC",
        ),
        # SQLite triggers.
        case(
            "rt-sqlite-trigger-fires",
            BLOCK,
            "CREATE TRIGGER t AFTER INSERT ON orders BEGIN DELETE FROM users; END; INSERT INTO orders VALUES (3, 1, 1.0)",
            "SQLite: a trigger body deletes when the INSERT fires it",
            kinds="CREATE INSERT DELETE",
            effect="CEE",
        ),
        case(
            "rt-sqlite-temp-trigger-when-fires",
            BLOCK,
            "CREATE TEMP TRIGGER t AFTER UPDATE OF note ON users WHEN NEW.note = 'go' BEGIN DELETE FROM orders; END; "
            "UPDATE users SET note = 'go' WHERE id = 2",
            "SQLite: a TEMP trigger with a WHEN condition, fired",
            kinds="CREATE UPDATE DELETE",
            effect="CEE",
        ),
        case(
            "rt-sqlite-instead-of-trigger-fires",
            BLOCK,
            "CREATE VIEW v AS SELECT id, name FROM users; CREATE TRIGGER t INSTEAD OF INSERT ON v BEGIN DELETE FROM orders; END; "
            "INSERT INTO v (id, name) VALUES (9, 'x')",
            "SQLite: an INSTEAD OF trigger on a view; MariaDB creates the view, then rejects the trigger (it has no INSTEAD OF): "
            "not MariaDB SQL, so its X says nothing about the destructive part (not applicable there)",
            kinds="CREATE INSERT DELETE",
            effect="CEX",
            destroys="..-",
        ),
        case(
            "rt-sqlite-trigger-update-fires",
            BLOCK,
            "CREATE TRIGGER t AFTER INSERT ON orders BEGIN UPDATE users SET note = 'DROP TABLE users' WHERE id = NEW.user_id; END; "
            "INSERT INTO orders VALUES (3, 1, 1.0)",
            "SQLite: a trigger body that updates (harmless for DROP/DELETE/TRUNCATE)",
            kinds="CREATE INSERT UPDATE",
            effect="CEE",
        ),
        case(
            "rt-sqlite-trigger-select-raise",
            BLOCK,
            "CREATE TRIGGER t BEFORE DELETE ON users BEGIN SELECT RAISE(ABORT, 'DROP TABLE users is not allowed'); END",
            "SQLite: a trigger that forbids deletes; its text mentions DROP only in a message",
            kinds="CREATE",
            effect="CEE",
        ),
    ],
)

VENDOR_COMMENTS = _category(
    "vendor-comments",
    [
        case(
            "vc-mariadb-m-bang-drop",
            BLOCK,
            "SELECT 1; /*M! DROP TABLE users */",
            "MariaDB runs the text of /*M! ... */ (MySQL and the others skip it)",
            kinds="DROP",
            effect="NNC",
        ),
        case(
            "vc-mariadb-m-bang-versioned-delete",
            BLOCK,
            "/*M!100100 DELETE FROM users */",
            "MariaDB runs /*M!NNNNNN ... */ on servers >= that version (10.1.0 here)",
            kinds="DELETE",
            effect="NNC",
        ),
        case(
            "vc-mariadb-m-bang-subquery-delete",
            BLOCK,
            "SELECT 1 /*M!, (SELECT COUNT(*) FROM users) */; /*M!100301 DELETE FROM orders */",
            "a harmless /*M! */ inside a read, then a versioned one that deletes",
            kinds="DELETE",
            effect="NNC",
        ),
        case(
            "vc-mysql-bang-5digit-version-drop",
            BLOCK,
            "SELECT 1; /*!32302 DROP TABLE users */",
            "MySQL-style versioned executable comment (3.23.02)",
            kinds="DROP",
            effect="NNC",
        ),
        case(
            "vc-mysql-bang-6digit-version",
            BLOCK,
            "SELECT 1; /*!100000 DROP TABLE users */",
            "MariaDB also reads a six-digit version after /*!",
            kinds="DROP",
            effect="NNC",
        ),
        case(
            "vc-mariadb-m-bang-lowercase",
            ALLOW,
            "SELECT 1; /*m! DROP TABLE users */",
            "a lower-case m is an ordinary comment to MariaDB",
            effect="NNN",
        ),
        case(
            "vc-mariadb-m-bang-future-alone",
            ALLOW,
            "SELECT 1; /*M!999999 DROP TABLE users */",
            "version 99.99.99: MariaDB 10.11 skips it (a later server would run it)",
            effect="NNN",
        ),
        case(
            "vc-mysql-bang-50699-runs",
            BLOCK,
            "SELECT 1; /*!50699 DROP TABLE users */",
            "a five-digit version below 50700: MariaDB runs it",
            kinds="DROP",
            effect="NNC",
        ),
        case(
            "vc-mysql-bang-50700-mysql-only",
            BLOCK,
            "SELECT 1; /*!50700 DROP TABLE users */",
            "MariaDB skips /*!NNNNN */ with a five-digit version >= 50700 (MySQL 5.7+ only); MySQL 5.7 and 8 run it (their "
            "manual), so it is blocked, though it is harmless on the three databases here",
            kinds="DROP",
            effect="NNN",
        ),
        case(
            "vc-mariadb-m-bang-semicolon-inside",
            ALLOW,
            "SELECT 1 /*M!; TRUNCATE TABLE orders */",
            "a ; inside the executable comment: MariaDB rejects the text (server and command-line client alike), so nothing runs",
            effect="NNE",
        ),
        case(
            "vc-mysql-bang-straight-join",
            ALLOW,
            "SELECT /*! STRAIGHT_JOIN */ users.name FROM users JOIN orders ON users.id = orders.user_id",
            "an executable comment holding a join hint (mysqldump and ORMs write these)",
            effect="NNN",
        ),
        case(
            "vc-mysqldump-set-header",
            ALLOW,
            "/*!40101 SET @OLD_CHARACTER_SET_CLIENT=@@CHARACTER_SET_CLIENT */;\nSELECT 1",
            "the first line of every mysqldump file: sets a session variable",
            effect="NNN",
        ),
        case(
            "vc-mariadb-m-bang-harmless", ALLOW, "SELECT 1 /*M!100000 , 2 */", "MariaDB reads SELECT 1, 2", effect="NNN"
        ),
        case(
            "vc-m-bang-in-literal",
            ALLOW,
            "SELECT '/*M! DROP TABLE users */' AS note",
            "the comment form inside a literal",
            effect="NNN",
        ),
        case(
            "vc-m-bang-in-line-comment",
            ALLOW,
            "SELECT 1 -- /*M! DROP TABLE users */",
            "inside a line comment",
            effect="NNN",
        ),
        case(
            "vc-bang-nested-in-block",
            ALLOW,
            "SELECT 1 /* x /*! DROP TABLE users */",
            "/*! inside an ordinary block comment is not executed by MariaDB; PostgreSQL nests it (unterminated)",
            effect="NEN",
        ),
        case(
            "vc-optimizer-hint",
            ALLOW,
            "SELECT /*+ MAX_EXECUTION_TIME(1000) */ name FROM users",
            "an optimizer-hint comment",
            effect="NNN",
        ),
    ],
)

HIDDEN_DESTRUCTION = _category(
    "hidden-destruction",
    [
        # REPLACE and conflict clauses: a conflicting row is deleted, then the new one inserted.
        case(
            "imp-replace-select",
            BLOCK,
            "REPLACE INTO users (id, name) SELECT id, name FROM staging",
            "SQLite/MySQL REPLACE ... SELECT: user 1 (with its note) is deleted and re-inserted from staging",
            kinds="REPLACE DELETE",
            effect="CEC",
        ),
        case(
            "imp-replace-lower-no-conflict",
            BLOCK,
            "replace into users(id, name) values(99, 'new')",
            "REPLACE with no conflicting row only inserts here, but it is a delete-then-insert statement: counted as DELETE "
            "whatever the data (as a DELETE matching no row is)",
            kinds="REPLACE DELETE",
            effect="CEC",
        ),
        case(
            "imp-replace-set-form",
            BLOCK,
            "REPLACE users SET id = 2, name = 'bob2'",
            "MySQL REPLACE ... SET replaces user 2",
            kinds="REPLACE DELETE",
            effect="EEC",
        ),
        case(
            "imp-sqlite-insert-or-replace-select",
            BLOCK,
            "INSERT OR REPLACE INTO users (id, name) SELECT id, name FROM staging",
            "SQLite INSERT OR REPLACE ... SELECT",
            kinds="INSERT REPLACE DELETE",
            effect="CEE",
        ),
        case(
            "imp-sqlite-update-or-replace",
            BLOCK,
            "UPDATE OR REPLACE users SET id = 1 WHERE id = 2",
            "SQLite UPDATE OR REPLACE: moving user 2 onto id 1 deletes user 1",
            kinds="UPDATE REPLACE DELETE",
            effect="CEE",
        ),
        case(
            "imp-sqlite-replace-conflict-clause-table",
            BLOCK,
            "CREATE TABLE kv (k INTEGER PRIMARY KEY ON CONFLICT REPLACE, v TEXT); INSERT INTO kv SELECT id, name FROM users; "
            "INSERT INTO kv SELECT id, name FROM staging",
            "SQLite: the table's ON CONFLICT REPLACE clause makes a plain INSERT delete the conflicting row",
            kinds="CREATE INSERT REPLACE DELETE",
            effect="CEE",
        ),
        case(
            "imp-sqlite-unique-replace-insert",
            BLOCK,
            "CREATE UNIQUE INDEX u_name ON users (name); INSERT OR REPLACE INTO users (id, name) VALUES (7, 'ann')",
            "SQLite: the conflict is on a unique name, so user 1 goes; MariaDB builds the index, then rejects INSERT OR REPLACE "
            "as a syntax error (X: not applicable there)",
            kinds="CREATE INSERT REPLACE DELETE",
            effect="CEX",
            destroys="..-",
        ),
        case(
            "imp-upsert-do-nothing",
            BLOCK,
            "INSERT INTO users (id, name) VALUES (1, 'x') ON CONFLICT DO NOTHING",
            "an upsert that keeps the existing row (harmless for DROP/DELETE/TRUNCATE)",
            kinds="INSERT",
            effect="NNE",
        ),
        case(
            "imp-insert-ignore",
            BLOCK,
            "INSERT IGNORE INTO users (id, name) VALUES (1, 'x')",
            "MySQL INSERT IGNORE keeps the existing row",
            kinds="INSERT",
            effect="EEN",
        ),
        # CREATE OR REPLACE TABLE drops the table it replaces.
        case(
            "imp-maria-create-or-replace-table",
            BLOCK,
            "CREATE OR REPLACE TABLE orders (id INT)",
            "MariaDB: drops orders and its rows, creates an empty one",
            kinds="CREATE DROP",
            effect="EEC",
        ),
        case(
            "imp-maria-create-or-replace-table-as",
            BLOCK,
            "CREATE OR REPLACE TABLE users AS SELECT id, name FROM staging",
            "MariaDB: users is dropped and rebuilt from staging",
            kinds="CREATE DROP",
            effect="EEC",
        ),
        case(
            "imp-maria-create-or-replace-temporary",
            BLOCK,
            "CREATE OR REPLACE TEMPORARY TABLE t (id INT)",
            "MariaDB: replaces only a temporary table of this session (there is none)",
            kinds="CREATE",
            effect="EEN",
        ),
        case(
            "imp-create-table-if-not-exists",
            BLOCK,
            "CREATE TABLE IF NOT EXISTS orders (id INT)",
            "the existing table is kept (a notice or warning)",
            kinds="CREATE",
            effect="NNN",
        ),
        case(
            "imp-create-or-replace-view",
            BLOCK,
            "CREATE VIEW v AS SELECT id FROM users; CREATE OR REPLACE VIEW v AS SELECT id, name FROM users",
            "replacing a view loses no rows; SQLite has no OR REPLACE (X: the first view was created)",
            kinds="CREATE",
            effect="XCC",
        ),
        # ALTER forms that delete rows or data.
        case(
            "imp-maria-alter-ignore-unique",
            BLOCK,
            "ALTER IGNORE TABLE users ADD UNIQUE (deleted)",
            "MariaDB: every user has deleted = 0, so ALTER IGNORE keeps one row and deletes the other two",
            kinds="ALTER DELETE",
            effect="EEC",
        ),
        case(
            "imp-maria-alter-ignore-unique-comments",
            BLOCK,
            "alter/**/ignore table users add unique key u (deleted)",
            "the same in lower case, with a comment after ALTER",
            kinds="ALTER DELETE",
            effect="EEC",
        ),
        case(
            "imp-maria-alter-ignore-primary",
            BLOCK,
            "ALTER IGNORE TABLE users DROP PRIMARY KEY, ADD PRIMARY KEY (deleted)",
            "MariaDB: a new primary key over a duplicated column deletes the duplicates",
            kinds="ALTER DROP DELETE",
            effect="EEC",
        ),
        case(
            "imp-alter-add-unique-duplicates",
            BLOCK,
            "ALTER TABLE users ADD UNIQUE (deleted)",
            "without IGNORE the duplicates make it fail (PostgreSQL, MariaDB); SQLite has no ADD UNIQUE",
            kinds="ALTER",
            effect="EEE",
        ),
        case(
            "imp-alter-add-unique",
            BLOCK,
            "ALTER TABLE users ADD UNIQUE (name)",
            "adds an index, deletes nothing",
            kinds="ALTER",
            effect="ECC",
        ),
        case(
            "imp-maria-discard-tablespace",
            BLOCK,
            "ALTER TABLE orders DISCARD TABLESPACE",
            "MariaDB/InnoDB deletes the table's data file: the table stays, its rows are gone (reading it fails)",
            kinds="ALTER DROP",
            effect="EEC",
        ),
        # SQLite's schema table, writable.
        case(
            "imp-sqlite-writable-schema-delete",
            BLOCK,
            "PRAGMA writable_schema = ON; DELETE FROM sqlite_master WHERE name = 'orders'; PRAGMA writable_schema = OFF",
            "SQLite: deleting the schema row of a table drops the table",
            kinds="PRAGMA DELETE DROP",
            effect="CEE",
        ),
        case(
            "imp-sqlite-writable-schema-update",
            BLOCK,
            "PRAGMA writable_schema = 1; UPDATE sqlite_schema SET sql = 'CREATE TABLE orders (id INTEGER PRIMARY KEY)' "
            "WHERE name = 'orders'",
            "SQLite: rewriting a table's schema row drops its other columns from view",
            kinds="PRAGMA UPDATE DROP",
            effect="CEE",
        ),
        case(
            "imp-sqlite-writable-schema-read",
            BLOCK,
            "PRAGMA writable_schema = ON; SELECT name FROM sqlite_master; PRAGMA writable_schema = OFF",
            "SQLite: the pragma with a read only (a PRAGMA: denied by DENY, harmless for DROP/DELETE/TRUNCATE)",
            kinds="PRAGMA",
            effect="NEE",
        ),
        case(
            "imp-sqlite-schema-read",
            ALLOW,
            "SELECT name, sql FROM sqlite_schema WHERE type = 'table' AND sql LIKE '%DROP%'",
            "SQLite: reading the schema table",
            effect="NEE",
        ),
        case(
            "imp-replace-function-upper",
            ALLOW,
            "SELECT REPLACE(note, 'DROP', 'drop') FROM users",
            "the REPLACE() string function",
            effect="NNN",
        ),
        case(
            "imp-create-or-replace-in-literal",
            ALLOW,
            "SELECT 'CREATE OR REPLACE TABLE users (id INT)' AS ddl",
            "in a literal",
            effect="NNN",
        ),
        # Statements that run programs on the database server (PostgreSQL superuser).
        case(
            "prog-pg-copy-to-program-psql-drop",
            BLOCK,
            "COPY (SELECT 1) TO PROGRAM 'psql -X -q -d postgres -c \"DROP TABLE agentos_corpus.orders\"'",
            "PostgreSQL runs a shell command as its OS user; here psql drops a table (peer authentication on the local socket)",
            kinds="DROP",
            effect="ECE",
        ),
        case(
            "prog-pg-copy-from-program-psql-delete",
            BLOCK,
            'COPY staging (id, name) FROM PROGRAM \'psql -X -q -d postgres -c "DELETE FROM agentos_corpus.orders" >/dev/null; '
            "echo 5,x' WITH (FORMAT csv)",
            "COPY FROM PROGRAM: the program deletes through psql, then its output is loaded",
            kinds="INSERT DELETE",
            effect="ECE",
        ),
        case(
            "prog-pg-copy-from-program-echo",
            BLOCK,
            "COPY staging (id, name) FROM PROGRAM 'echo 5,DROP TABLE users' WITH (FORMAT csv)",
            "COPY FROM PROGRAM loading one row (an INSERT; harmless for DROP/DELETE/TRUNCATE, but a program ran)",
            kinds="INSERT",
            effect="ECE",
        ),
        case(
            "prog-pg-copy-to-program-cat",
            ALLOW,
            "COPY (SELECT 'DROP TABLE users') TO PROGRAM 'cat > /dev/null'",
            "a program that changes nothing; what a program does cannot be read from the text",
            effect="ENE",
        ),
        case(
            "prog-pg-copy-to-file",
            ALLOW,
            "COPY (SELECT name FROM users) TO '/dev/null'",
            "COPY to a server file, no program",
            effect="ENE",
        ),
        case(
            "prog-copy-program-in-literal",
            ALLOW,
            "SELECT 'COPY users TO PROGRAM ''rm -rf /''' AS note",
            "in a literal",
            effect="NNN",
        ),
    ],
)

DIALECT_SYNTAX = _category(
    "dialect-syntax",
    [
        # Keywords inside literals on the EXPLAIN and SHOW paths.
        case(
            "syn-explain-where-drop-literal",
            ALLOW,
            "EXPLAIN SELECT * FROM users WHERE name = 'drop'",
            "a denied word as data under EXPLAIN",
            effect="NNN",
        ),
        case(
            "syn-explain-where-delete-statement-literal",
            ALLOW,
            "EXPLAIN SELECT id FROM users WHERE note = 'DELETE FROM users'",
            "a whole DELETE as data under EXPLAIN",
            effect="NNN",
        ),
        case(
            "syn-show-tables-like-drop",
            ALLOW,
            "SHOW TABLES LIKE 'drop%'",
            "MySQL: a LIKE pattern spelling a denied word",
            effect="EEN",
        ),
        case(
            "syn-show-columns-like-delete",
            ALLOW,
            "SHOW COLUMNS FROM users LIKE 'delete'",
            "MySQL: a column named delete",
            effect="EEN",
        ),
        # EXPLAIN without ANALYZE only plans; with ANALYZE (PostgreSQL) or MariaDB's ANALYZE it executes.
        case(
            "syn-explain-update",
            ALLOW,
            "EXPLAIN UPDATE users SET name = 'drop' WHERE id = 1",
            "EXPLAIN only plans the UPDATE",
            effect="NNN",
        ),
        case(
            "syn-pg-explain-options-delete",
            ALLOW,
            "EXPLAIN (COSTS OFF, VERBOSE) DELETE FROM users WHERE id = 1",
            "PostgreSQL: EXPLAIN with options but no ANALYZE only plans",
            effect="ENE",
        ),
        case(
            "syn-pg-explain-analyze-false-delete",
            ALLOW,
            "EXPLAIN (ANALYZE false) DELETE FROM users",
            "PostgreSQL: ANALYZE false is no ANALYZE: only plans",
            effect="ENE",
        ),
        case(
            "syn-maria-explain-extended-delete",
            ALLOW,
            "EXPLAIN EXTENDED DELETE FROM users",
            "MariaDB: only plans",
            effect="EEN",
        ),
        case(
            "syn-maria-explain-format-json-delete",
            ALLOW,
            "EXPLAIN FORMAT=JSON DELETE FROM users",
            "MariaDB: only plans",
            effect="EEN",
        ),
        case(
            "syn-explain-analyze-select",
            ALLOW,
            "EXPLAIN ANALYZE SELECT * FROM users WHERE name = 'drop'",
            "PostgreSQL executes the explained statement, here a read",
            effect="ENE",
        ),
        case(
            "syn-pg-explain-analyze-options-delete",
            BLOCK,
            "EXPLAIN (ANALYZE, COSTS OFF) DELETE FROM users",
            "PostgreSQL: ANALYZE in the option list executes the DELETE",
            kinds="DELETE",
            effect="ECE",
        ),
        case(
            "syn-pg-explain-analyze-true-cte",
            BLOCK,
            "EXPLAIN (ANALYZE true, BUFFERS) WITH d AS (DELETE FROM orders RETURNING *) SELECT * FROM d",
            "PostgreSQL: ANALYZE true executes a data-modifying CTE",
            kinds="DELETE",
            effect="ECE",
        ),
        case(
            "syn-maria-analyze-format-delete",
            BLOCK,
            "ANALYZE FORMAT=JSON DELETE FROM users WHERE id = 2",
            "MariaDB: ANALYZE FORMAT=JSON executes the DELETE",
            kinds="DELETE",
            effect="EEC",
        ),
        # ON COMMIT DROP drops only the temporary table the statement creates.
        case(
            "syn-pg-on-commit-drop",
            BLOCK,
            "CREATE TEMP TABLE scratch (id int) ON COMMIT DROP",
            "PostgreSQL: a temporary table dropped at commit; SQLite opens its temp database, then rejects ON COMMIT (X)",
            kinds="CREATE",
            effect="XNE",
        ),
        case(
            "syn-pg-on-commit-drop-as",
            BLOCK,
            "BEGIN; CREATE TEMPORARY TABLE recent ON COMMIT DROP AS SELECT * FROM users WHERE id > 1; SELECT count(*) FROM recent; COMMIT",
            "PostgreSQL: a temporary working table inside a transaction",
            kinds="CREATE",
            effect="XNE",
        ),
        case(
            "syn-pg-on-commit-delete-rows",
            BLOCK,
            "CREATE TEMP TABLE scratch (id int) ON COMMIT DELETE ROWS",
            "PostgreSQL: empties only its own temporary table at each commit",
            kinds="CREATE",
            effect="XNE",
        ),
        # PostgreSQL syntax.
        case(
            "syn-pg-dollar-tag",
            ALLOW,
            "SELECT $tag$DROP TABLE users; DELETE FROM orders$tag$ AS note",
            "PostgreSQL: a tagged dollar-quoted literal holding a script",
            effect="ENE",
        ),
        case(
            "syn-pg-e-string-escapes",
            ALLOW,
            "SELECT E'it\\'s \\n DROP TABLE users'",
            "PostgreSQL: an E'' literal with escapes",
            effect="ENE",
        ),
        case(
            "syn-pg-array",
            ALLOW,
            "SELECT ARRAY['drop', 'delete'], name FROM users WHERE id = ANY(ARRAY[1, 2])",
            "PostgreSQL: ARRAY[...] constructors",
            effect="ENE",
        ),
        case(
            "syn-pg-notify",
            ALLOW,
            "NOTIFY drop_events, 'DROP TABLE users'",
            "PostgreSQL: NOTIFY with a payload",
            effect="ENE",
        ),
        case(
            "syn-pg-listen",
            ALLOW,
            "LISTEN drop_events; UNLISTEN drop_events",
            "PostgreSQL: LISTEN/UNLISTEN",
            effect="ENE",
        ),
        case(
            "syn-pg-lock",
            ALLOW,
            "BEGIN; LOCK TABLE users IN SHARE MODE; SELECT count(*) FROM users; COMMIT",
            "PostgreSQL: LOCK TABLE inside a transaction",
            effect="ENE",
        ),
        case(
            "syn-pg-refresh-matview",
            BLOCK,
            "CREATE MATERIALIZED VIEW user_names AS SELECT name FROM users; REFRESH MATERIALIZED VIEW user_names",
            "PostgreSQL: REFRESH rebuilds a materialized view (the CREATE is denied by DENY; harmless for DROP/DELETE/TRUNCATE)",
            kinds="CREATE",
            effect="ECE",
        ),
        case(
            "syn-pg-cast-ilike",
            ALLOW,
            "SELECT name::text FROM users WHERE note ILIKE '%drop%'",
            "PostgreSQL: :: casts and ILIKE",
            effect="ENE",
        ),
        case(
            "syn-pg-prepare-select",
            ALLOW,
            "PREPARE q (text) AS SELECT * FROM users WHERE name = $1; EXECUTE q('drop'); DEALLOCATE q",
            "PostgreSQL: a prepared read, executed",
            effect="ENE",
        ),
        case(
            "syn-pg-prepare-delete-param",
            BLOCK,
            "PREPARE q (int) AS DELETE FROM users WHERE id = $1; EXECUTE q(1)",
            "PostgreSQL: a prepared DELETE, executed",
            kinds="DELETE",
            effect="ECE",
        ),
        # MySQL/MariaDB syntax.
        case(
            "syn-mysql-backslash-quote",
            ALLOW,
            "SELECT 'it\\'s fine'",
            "MySQL: a backslash-escaped quote (an open literal elsewhere)",
            effect="EEN",
        ),
        case(
            "syn-backslash-where-literal-drops",
            BLOCK,
            "SELECT name FROM users WHERE note = 'x\\'; DROP TABLE users; --'",
            "MySQL: one literal, nothing else runs; SQLite and PostgreSQL end the literal at \\' and drop",
            kinds="DROP",
            effect="CCN",
        ),
        case(
            "syn-mysql-hash-comment-leading",
            ALLOW,
            "# report\nSELECT name FROM users",
            "MySQL: a # comment line first",
            effect="EEN",
        ),
        case(
            "syn-mysql-hash-comment-drop",
            ALLOW,
            "SELECT name FROM users # DROP TABLE users",
            "MySQL: a DROP inside a # comment",
            effect="EEN",
        ),
        case(
            "syn-mysql-backticks",
            ALLOW,
            "SELECT `name`, `drop` FROM `users` WHERE `delete` IS NULL",
            "backtick-quoted identifiers named drop and delete (SQLite reads them too)",
            effect="NEN",
        ),
        case(
            "syn-mysql-handler",
            ALLOW,
            "HANDLER users OPEN; HANDLER users READ FIRST; HANDLER users CLOSE",
            "MySQL: HANDLER reads a table row by row",
            effect="EEN",
        ),
        case(
            "syn-mysql-charset-introducer",
            ALLOW,
            "SELECT _utf8mb4'DROP TABLE users' COLLATE utf8mb4_bin, _latin1'x'",
            "MySQL: character-set introducers on literals",
            effect="EEN",
        ),
        case(
            "syn-mysql-hex-literal",
            ALLOW,
            "SELECT 0x44524f50, X'44524f50'",
            "MySQL 0x hex literal (SQLite: a hex integer)",
            effect="NEN",
        ),
        case(
            "syn-mysql-user-variable",
            ALLOW,
            "SET @q = 'DROP TABLE users'; SELECT @q",
            "MySQL: a user variable holding text, only read",
            effect="EEN",
        ),
        case(
            "syn-mysql-delimiter-select",
            ALLOW,
            "DELIMITER //\nSELECT 'DROP TABLE users'//\nDELIMITER ;\nSELECT 1;\n",
            "a client script with DELIMITER (observed through the mariadb client)",
            effect="EEN",
            client=True,
        ),
        case(
            "syn-mysql-static-prepare-select",
            ALLOW,
            "PREPARE s FROM 'SELECT name FROM users WHERE note = ''drop'''; EXECUTE s; DEALLOCATE PREPARE s",
            "MySQL: PREPARE of literal text that reads",
            effect="EEN",
        ),
        case(
            "syn-mysql-execute-immediate-select",
            ALLOW,
            "EXECUTE IMMEDIATE 'SELECT COUNT(*) FROM users'",
            "MariaDB: EXECUTE IMMEDIATE of literal text that reads",
            effect="EEN",
        ),
        case(
            "syn-mysql-static-prepare-delete",
            BLOCK,
            "PREPARE s FROM 'DELETE FROM orders WHERE id = 1'; EXECUTE s",
            "MySQL: PREPARE of literal text that deletes, executed",
            kinds="DELETE",
            effect="EEC",
        ),
        case(
            "syn-mysql-execute-immediate-truncate",
            BLOCK,
            "EXECUTE IMMEDIATE 'TRUNCATE TABLE orders'",
            "MariaDB: EXECUTE IMMEDIATE of a literal TRUNCATE",
            kinds="TRUNCATE",
            effect="EEC",
        ),
        # SQLite syntax.
        case(
            "syn-sqlite-pragma-assign",
            BLOCK,
            "PRAGMA foreign_keys = ON",
            "SQLite: PRAGMA name = value (denied by DENY; harmless for DROP/DELETE/TRUNCATE)",
            kinds="PRAGMA",
            effect="NEE",
        ),
        case(
            "syn-sqlite-attach-detach",
            BLOCK,
            "ATTACH DATABASE ':memory:' AS scratch; CREATE TABLE scratch.t (id INTEGER); DETACH DATABASE scratch",
            "SQLite: work in an attached in-memory database, then detach it",
            kinds="ATTACH CREATE",
            effect="NEE",
        ),
        case(
            "syn-sqlite-trigger-begin-end",
            BLOCK,
            "CREATE TRIGGER stamp AFTER UPDATE ON users BEGIN UPDATE users SET dropped_at = NULL WHERE id = NEW.id AND 0; END",
            "SQLite: CREATE TRIGGER ... BEGIN ... END whose body updates",
            kinds="CREATE",
            effect="CEE",
        ),
        case("syn-sqlite-glob", ALLOW, "SELECT name FROM users WHERE note GLOB '*DROP*'", "SQLite: GLOB", effect="NEE"),
        # T-SQL syntax (no SQL Server here: behaviour from its manual).
        case(
            "syn-tsql-top-percent",
            ALLOW,
            "SELECT TOP 10 PERCENT name FROM users ORDER BY id",
            "T-SQL: TOP ... PERCENT",
            effect="EEE",
        ),
        case(
            "syn-tsql-brackets",
            ALLOW,
            "SELECT [name], [drop] FROM [users] WHERE [delete] IS NULL",
            "T-SQL bracket identifiers named drop and delete (SQLite reads them too)",
            effect="NEE",
        ),
        case(
            "syn-tsql-temp-table-read",
            ALLOW,
            "SELECT * FROM #recent_users",
            "T-SQL: reading a #temp table",
            effect="EEE",
        ),
        case(
            "syn-tsql-select-into-temp",
            BLOCK,
            "SELECT id, name INTO #recent FROM users",
            "T-SQL: SELECT INTO creates a #temp table",
            kinds="CREATE",
            effect="EEE",
        ),
    ],
)

DEFAULT_DENY = _category(
    "default-deny",
    [
        # Destruction through effects no list of destructive constructs named: placed by default deny.
        case(
            "dd-maria-exchange-partition",
            BLOCK,
            "CREATE TABLE pt LIKE staging; ALTER TABLE pt PARTITION BY HASH (id) PARTITIONS 1; "
            "ALTER TABLE pt EXCHANGE PARTITION p0 WITH TABLE staging",
            "MariaDB: partition surgery moves staging's rows out of staging; EXCHANGE PARTITION is no known ALTER "
            "action (unknown)",
            kinds="CREATE ALTER DELETE",
            effect="EEC",
        ),
        case(
            "dd-maria-create-or-replace-database",
            BLOCK,
            "CREATE OR REPLACE DATABASE agentos_corpus",
            "MariaDB: drops the database and every table in it, then creates it empty",
            kinds="CREATE DROP",
            effect="EEC",
        ),
        case(
            "dd-pg-detach-partition",
            BLOCK,
            "CREATE TABLE pp (id int) PARTITION BY RANGE (id); "
            "CREATE TABLE pp0 PARTITION OF pp FOR VALUES FROM (0) TO (100); INSERT INTO pp VALUES (1); "
            "ALTER TABLE pp DETACH PARTITION pp0",
            "PostgreSQL: DETACH PARTITION takes the partition's rows out of the parent (unknown ALTER action)",
            kinds="CREATE INSERT ALTER DELETE",
            effect="ECE",
        ),
        case(
            "dd-pg-lo-unlink-in-select",
            BLOCK,
            "SELECT lo_unlink(lo_create(0))",
            "PostgreSQL: a plain SELECT whose function deletes a large object (lo_unlink is no known side-effect-"
            "free built-in); the scratch state does not track large objects, so the letter is N and destroys "
            "says what ran",
            kinds="DELETE",
            effect="ENE",
            destroys="-y-",
        ),
        case(
            "dd-sqlite-trigger-insert-or-replace",
            BLOCK,
            "CREATE TRIGGER tr AFTER INSERT ON orders BEGIN INSERT OR REPLACE INTO staging (id, name) "
            "VALUES (1, 'x'); END; INSERT INTO orders VALUES (3, 1, 1.0)",
            "SQLite: the trigger body's INSERT OR REPLACE deletes staging's row 1 when the trigger fires",
            kinds="CREATE INSERT REPLACE DELETE",
            effect="CEE",
        ),
        case(
            "dd-sqlite-trigger-update-or-replace",
            BLOCK,
            "CREATE TRIGGER tr AFTER UPDATE ON orders BEGIN UPDATE OR REPLACE staging SET id = 1 WHERE id = 9; "
            "END; UPDATE orders SET total = 1 WHERE id = 1",
            "SQLite: the trigger body's UPDATE OR REPLACE deletes the row whose key it takes",
            kinds="CREATE UPDATE REPLACE DELETE",
            effect="CEE",
        ),
        case(
            "dd-maria-trigger-replace",
            BLOCK,
            "CREATE TRIGGER tr AFTER INSERT ON orders FOR EACH ROW REPLACE INTO staging VALUES (1, 'x'); "
            "INSERT INTO orders VALUES (3, 1, 1.0)",
            "MariaDB: a one-statement trigger body REPLACE deletes the conflicting row when it fires",
            kinds="CREATE INSERT REPLACE DELETE",
            effect="EEC",
        ),
        case(
            "dd-maria-sql-mode-no-backslash-escapes",
            BLOCK,
            "SET sql_mode='NO_BACKSLASH_ESCAPES'; SELECT 'a\\'; DELETE FROM users; -- '",
            "MariaDB: the setting changes how the rest is read; the default lexing sees one string, the server "
            "runs the DELETE (a setting that changes lexing is unknown)",
            kinds="DELETE",
            effect="EEC",
        ),
        # Everyday syntax of one database: read and placed.
        case(
            "dd-maria-insert-ignore",
            BLOCK,
            "INSERT IGNORE INTO staging VALUES (1, 'dup')",
            "MariaDB: a duplicate key is skipped, nothing is deleted (INSERT)",
            kinds="INSERT",
            effect="EEN",
        ),
        case(
            "dd-maria-on-duplicate-key-update",
            BLOCK,
            "INSERT INTO staging VALUES (1, 'ANN') ON DUPLICATE KEY UPDATE name = 'ann'",
            "MariaDB: upsert (INSERT, UPDATE), nothing is deleted",
            kinds="INSERT UPDATE",
            effect="EEC",
        ),
        case("dd-maria-flush-tables", ALLOW, "FLUSH TABLES", "MariaDB: closes open tables", effect="EEN"),
        case(
            "dd-maria-lock-unlock-tables",
            ALLOW,
            "LOCK TABLES users READ; SELECT COUNT(*) FROM users; UNLOCK TABLES",
            "MariaDB: table locks around a read",
            effect="EEN",
        ),
        case(
            "dd-maria-next-value-for",
            BLOCK,
            "CREATE SEQUENCE s; SELECT NEXT VALUE FOR s",
            "MariaDB: a sequence created and advanced (CREATE)",
            kinds="CREATE",
            effect="EEC",
        ),
        case(
            "dd-maria-limit-rows-examined",
            ALLOW,
            "SELECT * FROM users LIMIT ROWS EXAMINED 10",
            "MariaDB: stops the read after 10 rows examined",
            effect="EEN",
        ),
        case(
            "dd-sqlite-update-or-ignore",
            BLOCK,
            "UPDATE OR IGNORE users SET name = 'z' WHERE id = 1",
            "SQLite: a conflict skips the row (UPDATE)",
            kinds="UPDATE",
            effect="CEE",
        ),
        case(
            "dd-sqlite-update-or-fail",
            BLOCK,
            "UPDATE OR FAIL users SET name = 'z' WHERE id = 1",
            "SQLite: a conflict stops the statement (UPDATE)",
            kinds="UPDATE",
            effect="CEE",
        ),
        case("dd-sqlite-reindex", ALLOW, "REINDEX", "SQLite: rebuilds every index", effect="NEE"),
        case(
            "dd-sqlite-pragma-on",
            BLOCK,
            "PRAGMA foreign_keys = ON",
            "SQLite: a known pragma set (PRAGMA)",
            kinds="PRAGMA",
            effect="NEE",
        ),
        case(
            "dd-pg-do-harmless",
            ALLOW,
            "DO $$ BEGIN PERFORM 1; END $$",
            "PostgreSQL: a DO block that only computes",
            effect="ENE",
        ),
        case("dd-pg-checkpoint", ALLOW, "CHECKPOINT", "PostgreSQL: writes dirty buffers to disk", effect="ENE"),
        case(
            "dd-version-gated-future-mysql",
            ALLOW,
            "SELECT 1 /*!99999 ; DROP TABLE users */",
            "every server skips an executable comment gated above its version (9.99.99 is above every MySQL)",
            effect="NNN",
        ),
        case(
            "dd-version-gated-future-mariadb",
            ALLOW,
            "SELECT * FROM users /*M!999999 ; DELETE FROM users */",
            "MariaDB skips /*M! gated above its version (99.99.99); elsewhere it is a comment",
            effect="NNN",
        ),
        case(
            "dd-grant-delete-privilege",
            BLOCK,
            "GRANT DELETE ON users TO CURRENT_USER",
            "DELETE is a privilege name here, no statement (GRANT)",
            kinds="GRANT",
            effect="ENN",
        ),
        case(
            "dd-pg-alter-drop-not-null",
            BLOCK,
            "ALTER TABLE users ALTER COLUMN name SET NOT NULL; ALTER TABLE users ALTER COLUMN name DROP NOT NULL",
            "PostgreSQL: DROP NOT NULL removes a constraint flag, no column and no row (ALTER)",
            kinds="ALTER",
            effect="ENE",
        ),
    ],
)

CORPUS: Tuple[Case, ...] = tuple(
    CASE_AND_WHITESPACE
    + COMMENTS
    + MULTI_STATEMENT
    + DATA_MODIFYING_CTE
    + DIALECT_VARIANTS
    + KEYWORDS_AS_DATA
    + LEXER_DIVERGENCE
    + UNICODE
    + LONG_AND_DEEP
    + DEFERRED_CODE
    + VENDOR_COMMENTS
    + HIDDEN_DESTRUCTION
    + DIALECT_SYNTAX
    + DEFAULT_DENY
)

# ----------------------------------------------------------------------------- known false positives
#
# Harmless text the policy blocks, by id, grouped by why. Each group is a reason we accept (the
# policy errs towards blocking there on purpose, or the parser's limits make it); a blocked
# harmless case outside these groups is a bug to fix, not to list. The tests fail when a set
# changes in either direction, so a fix (or a regression) is noticed and the set updated.

#: Bounds: parse depth and max_query_chars.
_FP_BOUNDS = frozenset({"long-over-limit-read"})
#: Without a dialect, text the databases' lexers read differently is blocked unless every reading
#: parses: comments that only PostgreSQL nests, a backslash (MySQL escapes a quote with it), /*!
#: inside an ordinary comment.
_FP_READINGS_DIFFER = frozenset(
    {
        "cmt-nested-pg-only-trailing",
        "cmt-nested-pg-only-leading",
        "lex-backslash-two-literals",
        "vc-bang-nested-in-block",
    }
)
#: Without a dialect, a function only some engines declare a safe built-in is unknown (the text
#: may run on an engine where the name is a user function, or absent): name the dialect.
_FP_ONE_DATABASE_FUNCTION = frozenset({"dia-sqlite-pragma-function"})
#: The same, for entries judged on the destructive deny list only: SQLite's RAISE() in a trigger
#: body, and NEXT VALUE FOR (nextval: PostgreSQL's and MariaDB's, not SQLite's).
_FP_ONE_DATABASE_FUNCTION_NOT_DENIED = frozenset({"rt-sqlite-trigger-select-raise", "dd-maria-next-value-for"})
#: Without a dialect, syntax only one database reads is not parsed, so it fails closed: name the
#: dialect (SQLPolicy(dialect=...)) to have it read.
_FP_ONE_DATABASE_SYNTAX = frozenset(
    {
        "dia-tsql-top",
        "dia-pg-dollar-string",
        "dia-pg-e-string",
        "dia-blob-literal",
        "dia-backtick-identifier",
        "dia-bracket-identifier",
        "lex-mysql-hash-comment",
        "lex-bracket-identifier-script",
        "syn-pg-dollar-tag",
        "syn-pg-e-string-escapes",
        "syn-mysql-backslash-quote",
        "syn-mysql-hash-comment-leading",
        "syn-mysql-hash-comment-drop",
        "syn-mysql-backticks",
        "syn-mysql-charset-introducer",
        "syn-mysql-hex-literal",
        "syn-mysql-delimiter-select",
        "syn-tsql-top-percent",
        "syn-tsql-brackets",
        "syn-tsql-temp-table-read",
        # PostgreSQL DO bodies are read only with dialect="postgres".
        "dd-pg-do-harmless",
        "rt-pg-do-perform-select",
        "rt-pg-do-select-into-variable",
        "rt-pg-do-static-execute-select",
    }
)
#: ... and the same for statements the destructive deny list allows, but the broad DENY denies anyway.
_FP_ONE_DATABASE_SYNTAX_NOT_DENIED = frozenset(
    {
        "dia-sqlite-attach",
        "dia-sqlite-attach-short",
        "syn-sqlite-attach-detach",
        "syn-sqlite-pragma-assign",
        "imp-sqlite-writable-schema-read",
        "imp-insert-ignore",
        "dd-maria-insert-ignore",
        "dd-sqlite-pragma-on",
    }
)
#: Executable comments are opened up to the assumed newest server (MySQL 9.9, MariaDB 12.x): /*!50700 */ runs on
#: MySQL 5.7+ (not on MariaDB), and a ; inside /*M! */ is a MariaDB syntax error.
_FP_EXECUTABLE_COMMENT = frozenset({"vc-mariadb-m-bang-semicolon-inside"})
_FP_EXECUTABLE_COMMENT_DESTRUCTIVE_ELSEWHERE = frozenset({"vc-mysql-bang-50700-mysql-only"})
#: COPY ... PROGRAM runs a shell command on the server: what it does cannot be read from the text.
_FP_PROGRAM = frozenset({"prog-pg-copy-to-program-cat"})
_FP_PROGRAM_NOT_DENIED = frozenset({"prog-pg-copy-from-program-echo"})
#: NUL: C client libraries stop at it, so the text the parser reads is not the text that runs.
_FP_NUL = frozenset({"uni-nul-before-drop"})
#: Default deny: setting SQLite's writable_schema is unknown (it lets later writes corrupt or remove tables), even
#: when the text then only reads.
_FP_WRITABLE_SCHEMA = frozenset({"imp-sqlite-writable-schema-read"})
#: CREATE OR REPLACE TEMPORARY TABLE drops a temporary table of the session if there is one (MariaDB).
_FP_REPLACE_TEMPORARY = frozenset({"imp-maria-create-or-replace-temporary"})

#: ``allow`` entries SQLPolicy(deny=DENY) blocks (no dialect).
KNOWN_FALSE_POSITIVES: FrozenSet[str] = (
    _FP_BOUNDS
    | frozenset({"deep-parens-1000"})
    | _FP_READINGS_DIFFER
    | _FP_ONE_DATABASE_SYNTAX
    | _FP_ONE_DATABASE_FUNCTION
    | _FP_EXECUTABLE_COMMENT
    | _FP_PROGRAM
)

#: Per configuration (:data:`CONFIGURATIONS`, by key): the cases harmless there (see
#: :func:`destruction_across`) that SQLPolicy(deny=list(DESTRUCTIVE), dialect=...) blocks.
KNOWN_DESTRUCTIVE_FALSE_POSITIVES: Dict[str, FrozenSet[str]] = {
    "none": (
        _FP_BOUNDS
        | frozenset({"deep-parens-1000"})
        | _FP_READINGS_DIFFER
        | (
            _FP_ONE_DATABASE_SYNTAX
            - {"dia-tsql-top", "lex-bracket-identifier-script", "syn-tsql-top-percent", "syn-tsql-temp-table-read"}
        )
        | _FP_ONE_DATABASE_SYNTAX_NOT_DENIED
        | _FP_ONE_DATABASE_FUNCTION
        | _FP_ONE_DATABASE_FUNCTION_NOT_DENIED
        | _FP_EXECUTABLE_COMMENT
        | _FP_EXECUTABLE_COMMENT_DESTRUCTIVE_ELSEWHERE
        | _FP_PROGRAM
        | _FP_PROGRAM_NOT_DENIED
        | _FP_NUL
        | _FP_REPLACE_TEMPORARY
    ),
    "postgres": (_FP_BOUNDS | frozenset({"deep-subqueries-200"}) | _FP_NUL | _FP_PROGRAM | _FP_PROGRAM_NOT_DENIED),
    "mariadb": (
        _FP_BOUNDS
        | frozenset({"deep-parens-1000"})
        | (
            _FP_EXECUTABLE_COMMENT - {"vc-mariadb-m-bang-semicolon-inside"}
        )  # that one MariaDB rejects: not harmless there
        | _FP_EXECUTABLE_COMMENT_DESTRUCTIVE_ELSEWHERE
        | _FP_REPLACE_TEMPORARY
    ),
    "sqlite": _FP_BOUNDS | _FP_WRITABLE_SCHEMA,
}

# ----------------------------------------------------------------------------- SQLite ground truth

SCRATCH_TABLES: Tuple[str, ...] = (
    "CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT, note TEXT, dropped_at TEXT, deleted INTEGER DEFAULT 0, "
    '"delete" TEXT, "drop" TEXT)',
    "CREATE TABLE orders (id INTEGER PRIMARY KEY, user_id INTEGER, total REAL)",
    "CREATE TABLE staging (id INTEGER PRIMARY KEY, name TEXT)",
    "CREATE TABLE deleted (id INTEGER PRIMARY KEY)",
    'CREATE TABLE archive (id INTEGER, name TEXT, note TEXT, dropped_at TEXT, deleted INTEGER, "delete" TEXT, "drop" TEXT)',
    "CREATE INDEX idx_users_name ON users (name)",
)
SCRATCH_ROWS: Tuple[str, ...] = (
    "INSERT INTO users (id, name, note) VALUES (1, 'ann', 'DROP TABLE users'), (2, 'bob', NULL), (3, 'cy', 'delete from me')",
    "INSERT INTO orders VALUES (1, 1, 9.5), (2, 2, 20.0)",
    "INSERT INTO staging VALUES (1, 'ANN'), (9, 'new')",
    "INSERT INTO deleted VALUES (1)",
)


def _sqlite_state(conn: sqlite3.Connection) -> list:
    state: list = [tuple(r) for r in conn.execute("SELECT type, name, sql FROM sqlite_master ORDER BY 1, 2")]
    for (table,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY 1").fetchall():
        state.append((table, sorted(map(repr, conn.execute(f'SELECT * FROM "{table}"').fetchall()))))
    state.append(tuple(row[1] for row in conn.execute("PRAGMA database_list")))
    state.append(conn.execute("PRAGMA user_version").fetchone())
    return state


def effect_letter(changed: bool, failed: bool) -> str:
    return {(True, False): "C", (True, True): "X", (False, False): "N", (False, True): "E"}[(changed, failed)]


def observe_sqlite(sql: str) -> str:
    """Run ``sql`` as a script on a fresh in-memory scratch database; the ``effect`` letter."""
    conn = sqlite3.connect(":memory:")
    try:
        for statement in SCRATCH_TABLES + SCRATCH_ROWS:
            conn.execute(statement)
        conn.commit()
        before = _sqlite_state(conn)
        failed = False
        try:
            conn.executescript(sql)
        except (sqlite3.Error, ValueError, UnicodeError):
            failed = True
        return effect_letter(_sqlite_state(conn) != before, failed)
    finally:
        conn.close()


# ----------------------------------------------------------------------------- PostgreSQL and MariaDB ground truth
#
# The same scratch database on a server, rebuilt for every case: PostgreSQL in a schema
# ``agentos_corpus`` (dropped and re-created; functions, triggers and rules in it go with it),
# MariaDB in a database of that name. "Changed" means the relations, columns, rows, indexes,
# routines, triggers or rules of that schema differ afterwards (a table whose rows can no longer
# be read counts as changed). Routines and triggers are part of the state, so creating one is a
# change, as a trigger in ``sqlite_master`` is for SQLite.

SCRATCH_SCHEMA = "agentos_corpus"
#: Bounds a case on a server, so a case that waits on a lock fails instead of hanging the suite.
STATEMENT_TIMEOUT_S = 60
#: Per server, the state of the scratch database as last built, kept while cases leave it
#: unchanged. Building it costs a third of a second on MariaDB (InnoDB creates a file per
#: table), and most cases change nothing, so an unchanged scratch database is reused: before
#: each case its state is compared with this one (the same snapshot that decides the letter),
#: and it is rebuilt unless they are equal. (Not safe for two processes observing on one server
#: at once; neither was the rebuild-every-time scheme, as both use one schema name.)
_PRISTINE: Dict[Tuple[str, str], list] = {}


def _postgres_state(cur: Any) -> list:
    schema = SCRATCH_SCHEMA
    queries = [
        "SELECT c.relname, c.relkind FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
        f"WHERE n.nspname = '{schema}' ORDER BY 1, 2",
        "SELECT table_name, column_name, data_type FROM information_schema.columns "
        f"WHERE table_schema = '{schema}' ORDER BY 1, 2",
        "SELECT p.proname, pg_get_function_identity_arguments(p.oid), p.prokind, md5(coalesce(p.prosrc, '')) FROM pg_proc p "
        f"JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = '{schema}' ORDER BY 1, 2",
        "SELECT t.tgname, c.relname FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid "
        f"JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = '{schema}' AND NOT t.tgisinternal ORDER BY 1, 2",
        f"SELECT rulename, tablename FROM pg_rules WHERE schemaname = '{schema}' ORDER BY 1, 2",
    ]
    snapshot: list = []
    for query in queries:
        cur.execute(query)
        snapshot.append(cur.fetchall())
    cur.execute(f"SELECT table_name FROM information_schema.tables WHERE table_schema = '{schema}' ORDER BY 1")
    for (table,) in cur.fetchall():
        cur.execute(f'SELECT * FROM {schema}."{table}"')
        snapshot.append((table, sorted(map(repr, cur.fetchall()))))
    return snapshot


def observe_postgres(sql: str, dsn: str) -> str:
    """Run ``sql`` on a fresh scratch schema of the PostgreSQL server at ``dsn`` (a psycopg
    conninfo; the user must be able to create schemas) and return the ``effect`` letter.

    The text goes in one ``execute`` without parameters: the simple query protocol, as ``psql -c``
    sends it, so several statements run in one implicit transaction unless the text has its own
    ``BEGIN``/``COMMIT``, and a failure in any of them rolls back the ones before it."""
    import psycopg  # noqa: PLC0415 - optional: only the PostgreSQL label test and the labelling need it

    key = ("postgres", dsn)
    conn = psycopg.connect(dsn, autocommit=True)
    try:
        cur = conn.cursor()
        before = _PRISTINE.pop(key, None)
        if before is None or _postgres_state(cur) != before:
            cur.execute(f"DROP SCHEMA IF EXISTS {SCRATCH_SCHEMA} CASCADE; CREATE SCHEMA {SCRATCH_SCHEMA}")
            cur.execute(f"SET search_path TO {SCRATCH_SCHEMA}")
            for statement in SCRATCH_TABLES + SCRATCH_ROWS:
                cur.execute(statement)
            before = _postgres_state(cur)
        cur.execute(f"SET search_path TO {SCRATCH_SCHEMA}; SET statement_timeout = '{STATEMENT_TIMEOUT_S}s'")
        failed = False
        try:
            cur.execute(sql)  # no parameters: the simple query protocol, several statements allowed
        except (psycopg.Error, ValueError):
            failed = True
    finally:
        conn.close()  # not a context manager: its exit would COMMIT, which fails on a session left mid-COPY
    # A new connection: the case may have left its session in any state (search_path, roles, ...).
    with psycopg.connect(dsn, autocommit=True) as conn:
        after = _postgres_state(conn.cursor())
    if after == before:
        _PRISTINE[key] = before
    return effect_letter(after != before, failed)


def _mariadb_state(cur: Any, errors: Tuple[type, ...]) -> list:
    schema = SCRATCH_SCHEMA
    queries = [
        f"SELECT table_name, column_name, column_type FROM information_schema.columns WHERE table_schema = '{schema}' ORDER BY 1, 2",
        "SELECT table_name, index_name, seq_in_index, column_name, non_unique FROM information_schema.statistics "
        f"WHERE table_schema = '{schema}' ORDER BY 1, 2, 3",
        "SELECT routine_name, routine_type, md5(routine_definition) FROM information_schema.routines "
        f"WHERE routine_schema = '{schema}' ORDER BY 1, 2",
        "SELECT trigger_name, event_object_table, md5(action_statement) FROM information_schema.triggers "
        f"WHERE trigger_schema = '{schema}' ORDER BY 1",
        f"SELECT event_name FROM information_schema.events WHERE event_schema = '{schema}' ORDER BY 1",
    ]
    snapshot: list = []
    for query in queries:
        cur.execute(query)
        snapshot.append(tuple(cur.fetchall()))
    cur.execute(
        f"SELECT table_name, table_type FROM information_schema.tables WHERE table_schema = '{schema}' ORDER BY 1"
    )
    for table, table_type in cur.fetchall():
        try:
            cur.execute(f"SELECT * FROM {schema}.`{table}`")
            snapshot.append((table, table_type, sorted(map(repr, cur.fetchall()))))
        except errors as err:  # e.g. ALTER TABLE ... DISCARD TABLESPACE: the table is there, its rows are gone
            snapshot.append((table, table_type, "unreadable", err.args[0] if err.args else repr(err)))
    return snapshot


def observe_mariadb(sql: str, socket: str, *, client: bool = False) -> str:
    """Run ``sql`` on a fresh scratch database of the MariaDB server listening on unix socket
    ``socket`` (as root, by unix_socket authentication) and return the ``effect`` letter.

    The text goes to the server as one multi-statement query (pymysql with ``MULTI_STATEMENTS``;
    the server splits it and stops at the first error). With ``client`` it goes through the
    ``mariadb`` command-line client instead, which reads ``DELIMITER`` lines (a client command the
    server does not know) and also stops at the first error."""
    import pymysql  # noqa: PLC0415 - optional: only the MariaDB label test and the labelling need it
    from pymysql.constants import CLIENT  # noqa: PLC0415

    def connect() -> Any:
        return pymysql.connect(unix_socket=socket, user="root", client_flag=CLIENT.MULTI_STATEMENTS, autocommit=True)

    key = ("mariadb", socket)
    conn = connect()
    try:
        cur = conn.cursor()
        before = _PRISTINE.pop(key, None)
        if before is None or _mariadb_state(cur, (pymysql.Error,)) != before:
            cur.execute(f"DROP DATABASE IF EXISTS {SCRATCH_SCHEMA}")
            cur.execute(f"CREATE DATABASE {SCRATCH_SCHEMA}")
            cur.execute(f"USE {SCRATCH_SCHEMA}")
            for statement in SCRATCH_TABLES + SCRATCH_ROWS:
                cur.execute(statement.replace('"', "`"))  # MySQL quotes identifiers with backticks
            before = _mariadb_state(cur, (pymysql.Error,))
        cur.execute(f"USE {SCRATCH_SCHEMA}")
        cur.execute(f"SET SESSION max_statement_time = {STATEMENT_TIMEOUT_S}")
        failed = False
        if client:
            done = subprocess.run(
                ["mariadb", f"--socket={socket}", "--user=root", f"--database={SCRATCH_SCHEMA}"],
                input=sql.encode("utf-8", "surrogateescape"),
                capture_output=True,
                timeout=STATEMENT_TIMEOUT_S,
                check=False,
            )
            failed = done.returncode != 0
        else:
            try:
                cur.execute(sql)
                while cur.nextset():
                    pass
            except (pymysql.Error, ValueError, UnicodeError):
                failed = True
    finally:
        conn.close()
    conn = connect()  # a new session: the case may have left this one in any state
    try:
        after = _mariadb_state(conn.cursor(), (pymysql.Error,))
    finally:
        conn.close()
    if after == before:
        _PRISTINE[key] = before
    return effect_letter(after != before, failed)


def observe_case(case: Case, database: str, where: str) -> str:
    """The effect letter running ``case`` on ``database`` gives now (``where``: the DSN or the
    socket; ignored for SQLite)."""
    if database == "sqlite":
        return observe_sqlite(case.sql)
    if database == "postgres":
        return observe_postgres(case.sql, where)
    if database == "mariadb":
        return observe_mariadb(case.sql, where, client=case.mariadb_client)
    raise ValueError(f"unknown database {database!r}; one of {DATABASES}")


# ----------------------------------------------------------------------------- destructive, per database
#
# The destructive deny list: what "destructive" means below. (The corpus's labels above are for the
# broader DENY; these judgements are for SQLPolicy(deny=list(DESTRUCTIVE)), per database.)

DESTRUCTIVE: Tuple[str, ...] = ("DROP", "DELETE", "TRUNCATE")
#: The databases the ``effect`` letters were observed on, in ``effect`` order.
DATABASES: Tuple[str, ...] = ("sqlite", "postgres", "mariadb")
DESTROYS = "destructive"
HARMLESS = "harmless"
NOT_APPLICABLE = "not applicable"


def destruction_in(case: Case, database: str) -> str:
    """Whether running ``case`` on ``database`` ran a statement of a :data:`DESTRUCTIVE` kind.

    * :data:`DESTROYS` -- it did: the case names a DROP, DELETE or TRUNCATE among its ``kinds``
      and that database's effect letter is ``C`` or ``X`` (it changed the scratch database).
    * :data:`HARMLESS` -- the database ran the text (``N``, or ``C``/``X`` from statements of
      other kinds only, e.g. an UPDATE) and no statement of those kinds ran. This includes text
      whose denied statement the database read as data: ``SELECT 'a\\'; DROP TABLE users; -- '``
      is one literal to MariaDB (``N``), so it is harmless there.
    * :data:`NOT_APPLICABLE` -- the database rejected the text (``E``) or it was not run there
      (``-``): it says nothing about that database.

    The letters cannot tell every case; ``case.destroys`` then overrides, one character per
    database in :data:`DATABASES` order (``y`` destructive, ``n`` harmless, ``-`` not applicable,
    ``.`` from the letters), and the case's note says why. Examples: a DELETE that matches no row,
    or a DROP rolled back by the script's own ROLLBACK, ran (``N``, destructive); a routine or
    trigger created but not called whose body would destroy data (``C``, destructive: a routine
    is judged by its body, so such a body is blocked)."""
    column = DATABASES.index(database)
    override = case.destroys[column] if case.destroys else "."
    if override != ".":
        return {"y": DESTROYS, "n": HARMLESS, "-": NOT_APPLICABLE}[override]
    letter = case.effect[column]
    if letter in "E-":
        return NOT_APPLICABLE
    if letter in "CX" and set(case.kinds) & set(DESTRUCTIVE):
        return DESTROYS
    return HARMLESS


def destruction_across(case: Case, databases: Sequence[str] = DATABASES) -> str:
    """:func:`destruction_in` over several databases, for a policy that does not know which one
    will run the text: destructive if destructive in any of them; harmless if harmless in at least
    one and destructive in none; otherwise not applicable (no database ran it)."""
    found = {destruction_in(case, database) for database in databases}
    if DESTROYS in found:
        return DESTROYS
    return HARMLESS if HARMLESS in found else NOT_APPLICABLE


@dataclass(frozen=True)
class Configuration:
    """One SQLPolicy set-up scored against per-database labels."""

    key: str  # names it in test ids and in KNOWN_DESTRUCTIVE_FALSE_POSITIVES
    name: str
    dialect: Optional[str]  # passed to SQLPolicy(dialect=...)
    databases: Tuple[str, ...]  # the databases whose labels judge it


#: SQLPolicy(deny=list(DESTRUCTIVE)) without a dialect is judged on all three databases (it must
#: be safe whichever runs the text); with a dialect, on that database's own outcomes. MariaDB is
#: read with sqlglot's "mysql" dialect.
CONFIGURATIONS: Tuple[Configuration, ...] = (
    Configuration("none", "no dialect", None, DATABASES),
    Configuration("postgres", "dialect=postgres", "postgres", ("postgres",)),
    Configuration("mariadb", "dialect=mysql (MariaDB)", "mysql", ("mariadb",)),
    Configuration("sqlite", "dialect=sqlite", "sqlite", ("sqlite",)),
)


def destructive_cases(configuration: Configuration) -> List[Case]:
    return [c for c in CORPUS if destruction_across(c, configuration.databases) == DESTROYS]


def harmless_cases(configuration: Configuration) -> List[Case]:
    return [c for c in CORPUS if destruction_across(c, configuration.databases) == HARMLESS]


def cases_in(category: str) -> List[Case]:
    return [c for c in CORPUS if c.category == category]


def _main(argv: Optional[Sequence[str]] = None) -> None:
    """``python tests/sql_corpus.py [--postgres DSN] [--mariadb SOCKET] [ID ...]``: run the named
    cases (all by default) on the databases and print the observed letters beside the recorded
    ones; the way new entries get their ``effect``. The DSN and socket default to
    ``AGENTOS_TEST_POSTGRES_DSN`` / ``AGENTOS_TEST_MARIADB_SOCKET`` (``source .ci/services.sh``)."""
    import argparse  # noqa: PLC0415
    import os  # noqa: PLC0415

    parser = argparse.ArgumentParser(description=_main.__doc__)
    parser.add_argument("--postgres", default=os.environ.get("AGENTOS_TEST_POSTGRES_DSN"))
    parser.add_argument("--mariadb", default=os.environ.get("AGENTOS_TEST_MARIADB_SOCKET"))
    parser.add_argument("--sql", action="append", default=[], help="observe this text instead of corpus entries")
    parser.add_argument("ids", nargs="*")
    args = parser.parse_args(argv)
    where = {"sqlite": "", "postgres": args.postgres, "mariadb": args.mariadb}
    by_id = {c.id: c for c in CORPUS}
    unknown = [i for i in args.ids if i not in by_id]
    if unknown:
        parser.error(f"no such case: {unknown}")
    todo = [by_id[i] for i in args.ids] if args.ids else ([] if args.sql else list(CORPUS))
    todo += [Case(f"--sql {n}", ALLOW, text, "given on the command line") for n, text in enumerate(args.sql)]
    differ = 0
    for c in todo:
        seen = "".join(observe_case(c, db, where[db]) if where[db] is not None else "-" for db in DATABASES)
        mark = "" if seen == c.effect else "   <-- differs"
        differ += bool(mark)
        print(f"{c.id:50} recorded {c.effect}  observed {seen}{mark}")
    print(f"{len(todo)} cases, {differ} differ")


if __name__ == "__main__":
    _main()
