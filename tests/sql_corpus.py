"""A labelled corpus of adversarial SQL for :class:`SQLPolicy` (issue 7, "adversarial input").

Plain data plus a few helpers; no test runs here. Used by ``tests/test_adversarial_sql.py``
(``python -m pytest tests/test_adversarial_sql.py -q``) and by the on-demand comparison
``python tests/benchmarks/bench_sql_corpus.py``.

One deny list for the whole corpus (:data:`DENY`), with no ``dialect`` (the policy's default:
the target database is unknown, so a statement must be safe whichever of the common databases
runs it). Every entry is labelled:

* ``block`` -- a real database would run a statement of a denied kind (``kinds`` names them),
  in at least one of the dialects the note names; or the text is not SQL that any of SQLite,
  PostgreSQL, MySQL/MariaDB or T-SQL would run at all (``kinds`` is empty): such junk must be
  blocked fail-closed. A look-alike keyword is not a keyword to a database: ``DRОP TABLE users``
  with a Cyrillic ``О`` is a syntax error everywhere, so it is junk (blocked, ``kinds=()``), not
  a DROP.
* ``allow`` -- valid SQL in at least one of those dialects, and no dialect runs a denied
  statement from it. A block verdict on an ``allow`` entry is a false positive; the ones the
  policy is known to produce are listed, with the reason, in :data:`KNOWN_FALSE_POSITIVES`.

Labels follow what the databases do, not what the policy does. ``effect`` records, for SQLite,
PostgreSQL and MariaDB in that order, what running the text did to a scratch database holding
:data:`SCRATCH_ROWS` (``C`` changed it, ``N`` ran without changing it, ``E`` rejected it with
nothing changed, ``X`` changed it and then failed, ``-`` not run). The SQLite column is
re-checked by the test suite on every run (python's ``sqlite3``, an in-memory database); the
PostgreSQL (15.18) and MariaDB (10.11.19, standing in for MySQL) columns were observed on local
servers and are re-checked when ``AGENTOS_TEST_POSTGRES_DSN`` / ``AGENTOS_TEST_MARIADB_SOCKET``
are set (see the test module). "Changed" means the schema, the rows, the attached databases or
SQLite's ``user_version`` differ afterwards; a DELETE that matches no row is still a DELETE
(``block``) with effect ``N``. T-SQL, Snowflake and BigQuery behaviour is from their manuals
and says so in the note.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, replace
from typing import Dict, FrozenSet, List, Sequence, Tuple

__all__ = [
    "DENY",
    "BLOCK",
    "ALLOW",
    "CATEGORIES",
    "Case",
    "CORPUS",
    "KNOWN_FALSE_POSITIVES",
    "AGENT_OS_REGEX_SCOPE",
    "SCRATCH_TABLES",
    "SCRATCH_ROWS",
    "observe_sqlite",
    "cases_in",
]

#: The one deny list the whole corpus is labelled against.
DENY: Tuple[str, ...] = (
    "DROP", "DELETE", "TRUNCATE", "ALTER", "UPDATE", "INSERT", "MERGE", "REPLACE", "GRANT", "CREATE", "ATTACH", "PRAGMA",
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

    @property
    def in_agent_os_scope(self) -> bool:
        """Whether the denied statement is one Agent OS's fixed regex claims to catch."""
        return bool(set(self.kinds) & AGENT_OS_REGEX_SCOPE)

    @property
    def is_junk(self) -> bool:
        return self.label == BLOCK and not self.kinds


def case(id: str, label: str, sql: str, note: str, *, kinds: str = "", effect: str = "---") -> Case:
    return Case(id, label, sql, note, tuple(kinds.split()), effect)


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

CASE_AND_WHITESPACE = _category("case-whitespace", [
    case("ws-plain-drop", BLOCK, "DROP TABLE users", "the baseline", kinds="DROP", effect="CCC"),
    case("ws-lower", BLOCK, "drop table users", "lower case", kinds="DROP", effect="CCC"),
    case("ws-mixed-case", BLOCK, "DrOp TaBlE users", "per-letter mixed-case keywords", kinds="DROP", effect="CCC"),
    case("ws-tabs", BLOCK, "dRoP\ttAbLe\tusers", "tabs between tokens", kinds="DROP", effect="CCC"),
    case("ws-newlines", BLOCK, "DROP\nTABLE\nusers", "newlines between tokens", kinds="DROP", effect="CCC"),
    case("ws-crlf", BLOCK, "DROP\r\nTABLE\r\nusers", "CR LF between tokens", kinds="DROP", effect="CCC"),
    case("ws-form-feed", BLOCK, "DROP\fTABLE\fusers", "form feed is whitespace to all three databases", kinds="DROP", effect="CCC"),
    case("ws-vertical-tab", BLOCK, "DROP\vTABLE users",
         "vertical tab: whitespace to MariaDB/MySQL (drops), an unrecognized token to SQLite and PostgreSQL 15",
         kinds="DROP", effect="EEC"),
    case("ws-padded-delete", BLOCK, "   \n\t DELETE   FROM\n\n users  \t", "leading, inner and trailing runs of whitespace",
         kinds="DELETE", effect="CCC"),
    case("ws-truncate-newlines", BLOCK, "\n\n\nTRUNCATE TABLE users\n", "SQLite has no TRUNCATE", kinds="TRUNCATE", effect="ECC"),
    case("ws-update-mixed", BLOCK, "UpDaTe users SeT name = 'x'", "mixed-case UPDATE", kinds="UPDATE", effect="CCC"),
    case("ws-insert-mixed", BLOCK, "InSeRt InTo orders VALUES (3, 1, 1.0)", "mixed-case INSERT", kinds="INSERT", effect="CCC"),
    case("ws-alter-tabs", BLOCK, "alter\ttable users add column z int", "lower-case ALTER with tabs", kinds="ALTER", effect="CCC"),
    case("ws-delete-all-tabs", BLOCK, "DELETE\tFROM\tusers\tWHERE\tid\t=\t1", "every separator a tab", kinds="DELETE", effect="CCC"),
    case("ws-drop-if-exists-lower", BLOCK, "drop table if exists users", "lower-case IF EXISTS", kinds="DROP", effect="CCC"),
    case("ws-trailing-semicolon", BLOCK, "DROP TABLE users ;   ", "space before the semicolon, spaces after", kinds="DROP", effect="CCC"),
    case("ws-no-space-paren", BLOCK, "DELETE FROM users WHERE(id=1)", "no whitespace around the condition", kinds="DELETE", effect="CCC"),
    case("ws-no-space-quoted", BLOCK, 'DELETE FROM"users"', "no space before a quoted identifier; to MySQL it is a string, an error",
         kinds="DELETE", effect="CCE"),
    case("ws-select-upper-lower", ALLOW, "select NAME from USERS where ID = 1",
         "keywords are case-insensitive; MariaDB table names are case-sensitive on Linux", effect="NNE"),
    case("ws-select-form-feed", ALLOW, "SELECT\tname\nFROM\fusers", "tab, newline and form feed in a read", effect="NNN"),
    case("ws-select-padded", ALLOW, "  SELECT 1  ", "padding only", effect="NNN"),
    case("ws-select-mixed", ALLOW, "SeLeCt CoUnT(*) FrOm users", "mixed-case read", effect="NNN"),
    case("ws-select-crlf", ALLOW, "SELECT\r\nid\r\nFROM users", "CR LF in a read", effect="NNN"),
])

COMMENTS = _category("comments", [
    case("cmt-empty-block-in-delete", BLOCK, "DELETE/**/FROM users", "an empty block comment is a token separator",
         kinds="DELETE", effect="CCC"),
    case("cmt-empty-blocks-in-drop", BLOCK, "DROP/**/TABLE/**/users", "empty block comments between every token",
         kinds="DROP", effect="CCC"),
    case("cmt-wrapped-drop", BLOCK, "/**/DROP/**/TABLE/**/users/**/", "comments before, between and after", kinds="DROP", effect="CCC"),
    case("cmt-line-inside-delete", BLOCK, "DELETE -- sneaky\nFROM users", "a line comment splits DELETE from FROM",
         kinds="DELETE", effect="CCC"),
    case("cmt-bare-line-inside-delete", BLOCK, "DELETE--\nFROM users", "an empty line comment glued to the keyword",
         kinds="DELETE", effect="CCC"),
    case("cmt-leading-line", BLOCK, "-- just a comment\nDROP TABLE users", "statement after a line comment", kinds="DROP", effect="CCC"),
    case("cmt-leading-block", BLOCK, "/* harmless */ DELETE FROM orders", "statement after a block comment", kinds="DELETE", effect="CCC"),
    case("cmt-trailing-line", BLOCK, "DROP TABLE users -- trailing comment", "trailing line comment", kinds="DROP", effect="CCC"),
    case("cmt-between-every-token", BLOCK, "DROP /* a */ TABLE /* b */ users /* c */", "text comments between tokens",
         kinds="DROP", effect="CCC"),
    case("cmt-commented-where-block", BLOCK, "DELETE FROM users /* WHERE id = 1 */", "the WHERE clause is commented out",
         kinds="DELETE", effect="CCC"),
    case("cmt-commented-where-line", BLOCK, "DELETE FROM users -- WHERE id = 1", "the WHERE clause is commented out",
         kinds="DELETE", effect="CCC"),
    case("cmt-where-then-or", BLOCK, "DELETE FROM users WHERE id = 1 -- \n OR 1 = 1", "condition continued after a comment",
         kinds="DELETE", effect="CCC"),
    case("cmt-multiline-block", BLOCK, "/* multi\nline\ncomment */\nDELETE FROM users", "multi-line comment first",
         kinds="DELETE", effect="CCC"),
    case("cmt-after-statement", BLOCK, "DELETE FROM users; -- done", "comment after the statement", kinds="DELETE", effect="CCC"),
    case("cmt-nested-open-select-drop", BLOCK, "SELECT 1 /* /* */; DROP TABLE users; -- */",
         "PostgreSQL nests block comments (all one comment); SQLite and MySQL close at the first */ and drop", kinds="DROP", effect="CNC"),
    case("cmt-nested-open-delete", BLOCK, "/* /* */ DELETE FROM users; -- */",
         "the same ambiguity with nothing before it", kinds="DELETE", effect="CNC"),
    case("cmt-cr-ends-line-comment", BLOCK, "SELECT 1; -- x\rDROP TABLE users",
         "PostgreSQL ends a -- comment at a bare CR and drops; SQLite and MySQL only at LF", kinds="DROP", effect="NCN"),
    case("cmt-unterminated-after-delete", BLOCK, "DELETE FROM users /* unterminated",
         "SQLite lets an unterminated block comment run to the end of input and deletes", kinds="DELETE", effect="CEE"),
    case("cmt-nested-pg-only-trailing", ALLOW, "SELECT 1 /* /* */ */",
         "valid only where block comments nest (PostgreSQL); a syntax error elsewhere", effect="ENE"),
    case("cmt-nested-pg-only-leading", ALLOW, "/* a /* b */ c */ SELECT 1",
         "valid only where block comments nest (PostgreSQL); a syntax error elsewhere", effect="ENE"),
    case("cmt-order-by-then-drop", BLOCK, "SELECT id FROM users ORDER/**/BY id; DROP TABLE users",
         "a comment splitting ORDER BY, then a DROP",
         kinds="DROP", effect="CCC"),
    case("cmt-inside-order-by", ALLOW, "SELECT id FROM users ORDER/**/BY id", "a comment splitting ORDER BY is valid everywhere",
         effect="NNN"),
    case("cmt-line-inside-order-by", ALLOW, "SELECT id FROM users ORDER -- by what?\nBY id", "a line comment splitting ORDER BY",
         effect="NNN"),
    case("cmt-inside-group-by", ALLOW, "SELECT name, COUNT(*) FROM users GROUP/**/BY name", "a comment splitting GROUP BY", effect="NNN"),
    case("cmt-inside-partition-by", ALLOW, "SELECT ROW_NUMBER() OVER (PARTITION/**/BY name) FROM users", "a comment splitting PARTITION BY",
         effect="NNN"),
    case("cmt-inside-union-all", ALLOW, "SELECT 1 UNION/**/ALL SELECT 2", "a comment splitting UNION ALL", effect="NNN"),
    case("cmt-line-mentions-drop", ALLOW, "SELECT 1 -- drop table users", "denied words inside a line comment", effect="NNN"),
    case("cmt-block-mentions-delete", ALLOW, "SELECT * FROM users /* DELETE FROM users */", "denied words inside a block comment",
         effect="NNN"),
    case("cmt-line-hides-statement", ALLOW, "SELECT * FROM users -- ; DROP TABLE users", "the ; and the DROP are inside the comment",
         effect="NNN"),
    case("cmt-leading-block-mentions-drop", ALLOW, "/* DROP TABLE users */ SELECT 1", "comment first, read after", effect="NNN"),
    case("cmt-block-inside-select", ALLOW, "SELECT /* ; DELETE FROM users; */ name FROM users", "a script hidden in a block comment",
         effect="NNN"),
    case("cmt-semicolon-in-comment", ALLOW, "SELECT 1 /* ; */ ; SELECT 2", "a ; inside a comment is not a separator", effect="NNN"),
    case("cmt-markers-in-strings", ALLOW, "SELECT '/*' AS a, '*/' AS b, '--' AS c", "comment markers inside string literals", effect="NNN"),
    case("cmt-dash-space-comment", ALLOW, "SELECT 1 -- 1; DROP TABLE users", "-- followed by a space is a comment in MySQL too",
         effect="NNN"),
])

MULTI_STATEMENT = _category("multi-statement", [
    case("multi-select-then-drop", BLOCK, "SELECT 1; DROP TABLE users", "a read, then a DROP", kinds="DROP", effect="CCC"),
    case("multi-no-spaces", BLOCK, "SELECT * FROM users;DELETE FROM orders;", "no spaces around the separators",
         kinds="DELETE", effect="CCC"),
    case("multi-leading-empty", BLOCK, ";DROP TABLE users", "an empty statement first; MariaDB rejects the empty query and stops",
         kinds="DROP", effect="CCE"),
    case("multi-empty-everywhere", BLOCK, ";;;DELETE FROM users;;;", "empty statements around a DELETE", kinds="DELETE", effect="CCE"),
    case("multi-spaced-empties", BLOCK, "SELECT 1;;; ;DROP TABLE users;;",
         "empty statements between a read and a DROP; MariaDB stops at the first empty one", kinds="DROP", effect="CCE"),
    case("multi-after-line-comment", BLOCK, "SELECT 1; -- comment\nDROP TABLE users", "statement after a comment line",
         kinds="DROP", effect="CCC"),
    case("multi-after-block-comment", BLOCK, "SELECT 1; /* c */ DROP TABLE users", "statement after a block comment",
         kinds="DROP", effect="CCC"),
    case("multi-transaction-commit", BLOCK, "BEGIN; DELETE FROM users; COMMIT;", "inside an explicit transaction",
         kinds="DELETE", effect="CCC"),
    case("multi-transaction-rollback", BLOCK, "BEGIN; DROP TABLE users; ROLLBACK;",
         "rolled back in SQLite and PostgreSQL (transactional DDL), but MySQL commits DDL at once", kinds="DROP", effect="NNC"),
    case("multi-union-then-truncate", BLOCK, "SELECT 1 UNION SELECT 2; TRUNCATE users", "set operation, then TRUNCATE",
         kinds="TRUNCATE", effect="ECC"),
    case("multi-three-reads-then-update", BLOCK, "SELECT 1; SELECT 2; SELECT 3; UPDATE users SET name = 'x'",
         "denied statement in fourth place",
         kinds="UPDATE", effect="CCC"),
    case("multi-delete-first", BLOCK, "DELETE FROM users; SELECT 1", "denied statement first, read after", kinds="DELETE", effect="CCC"),
    case("multi-semicolon-in-literal-then-delete", BLOCK, "SELECT name FROM users WHERE note = ';'; DELETE FROM users",
         "a ; inside a literal, then a real separator", kinds="DELETE", effect="CCC"),
    case("multi-commit-then-drop", BLOCK, "SELECT 1; COMMIT; DROP TABLE users",
         "SQLite fails on COMMIT with no transaction and stops; PostgreSQL and MySQL go on and drop", kinds="DROP", effect="ECC"),
    case("multi-savepoint", BLOCK, "SAVEPOINT a; DELETE FROM users; RELEASE a",
         "PostgreSQL refuses SAVEPOINT outside a transaction block; MariaDB deletes, then fails on RELEASE", kinds="DELETE", effect="CEX"),
    case("multi-tsql-go-separator", BLOCK, "SELECT 1\nGO\nDROP TABLE users",
         "T-SQL client tools (sqlcmd, SSMS) split batches at GO and run the DROP; a syntax error elsewhere", kinds="DROP", effect="EEE"),
    case("multi-values-then-drop", BLOCK, "VALUES (1); DROP TABLE users", "a VALUES statement first", kinds="DROP", effect="CCC"),
    case("multi-blank-lines", BLOCK, "SELECT 1;\n\n\n\nDROP TABLE users", "blank lines between statements", kinds="DROP", effect="CCC"),
    case("multi-explain-then-drop", BLOCK, "EXPLAIN SELECT 1; DROP TABLE users", "EXPLAIN of a read, then a DROP",
         kinds="DROP", effect="CCC"),
    case("multi-two-reads", ALLOW, "SELECT 1; SELECT 2", "two reads", effect="NNN"),
    case("multi-trailing-semicolon", ALLOW, "SELECT 1;", "one read, trailing separator", effect="NNN"),
    case("multi-empty-statements-read", ALLOW, ";SELECT 1;;", "empty statements around a read; MariaDB rejects the empty query",
         effect="NNE"),
    case("multi-separators-in-names", ALLOW, "SELECT 'a;b'; SELECT \"c;d\" FROM (SELECT 1 AS \"c;d\") AS t",
         "separators inside a literal and a quoted identifier", effect="NNN"),
    case("multi-read-transaction", ALLOW, "BEGIN; SELECT * FROM users; COMMIT", "a read inside a transaction", effect="NNN"),
    case("multi-comment-between-reads", ALLOW, "SELECT 1; -- DROP TABLE users\nSELECT 2", "a commented-out DROP between reads",
         effect="NNN"),
])

DATA_MODIFYING_CTE = _category("data-modifying-cte", [
    case("cte-delete-returning", BLOCK, "WITH d AS (DELETE FROM users RETURNING *) SELECT * FROM d",
         "PostgreSQL runs DELETE inside WITH", kinds="DELETE", effect="ECE"),
    case("cte-delete-count", BLOCK, "WITH gone AS (DELETE FROM users RETURNING id) SELECT count(*) FROM gone", "a count over deleted rows",
         kinds="DELETE", effect="ECE"),
    case("cte-update-returning", BLOCK, "WITH u AS (UPDATE users SET name = 'x' RETURNING *) SELECT * FROM u", "UPDATE inside WITH",
         kinds="UPDATE", effect="ECE"),
    case("cte-insert-returning", BLOCK, "WITH i AS (INSERT INTO orders VALUES (3, 1, 1.0) RETURNING *) SELECT * FROM i",
         "INSERT inside WITH",
         kinds="INSERT", effect="ECE"),
    case("cte-unreferenced-delete", BLOCK, "WITH a AS (SELECT 1), b AS (DELETE FROM users RETURNING *) SELECT * FROM a",
         "PostgreSQL runs a data-modifying CTE even when nothing reads it", kinds="DELETE", effect="ECE"),
    case("cte-delete-into-insert", BLOCK, "WITH d AS (DELETE FROM users RETURNING *) INSERT INTO archive SELECT * FROM d",
         "move rows: DELETE in WITH feeding an INSERT", kinds="DELETE INSERT", effect="ECE"),
    case("cte-read-then-delete", BLOCK, "WITH x AS (SELECT 1) DELETE FROM users",
         "a plain CTE in front of a DELETE (MySQL 8 too; not MariaDB 10.11)", kinds="DELETE", effect="CCE"),
    case("cte-recursive-then-update", BLOCK, "WITH RECURSIVE r(n) AS (SELECT 1) UPDATE users SET name = 'x' WHERE id IN (SELECT n FROM r)",
         "a recursive CTE in front of an UPDATE (MySQL 8 too; not MariaDB 10.11)", kinds="UPDATE", effect="CCE"),
    case("cte-lower-comment", BLOCK, "with D as (delete/**/from users returning *) select * from D", "lower case and a comment in the CTE",
         kinds="DELETE", effect="ECE"),
    case("cte-multiline", BLOCK, "WITH d AS (\n  DELETE FROM users\n  WHERE id = 1\n  RETURNING *\n)\nSELECT * FROM d",
         "laid out over lines",
         kinds="DELETE", effect="ECE"),
    case("cte-materialized-delete", BLOCK, "WITH t AS MATERIALIZED (DELETE FROM users RETURNING *) SELECT * FROM t", "MATERIALIZED hint",
         kinds="DELETE", effect="ECE"),
    case("cte-merge-returning", BLOCK,
         "WITH m AS (MERGE INTO users u USING staging s ON u.id = s.id WHEN MATCHED THEN DELETE RETURNING *) SELECT * FROM m",
         "MERGE ... RETURNING inside WITH is PostgreSQL 17+; 15 rejects it", kinds="MERGE DELETE", effect="EEE"),
    case("cte-in-subquery-rejected", BLOCK, "SELECT * FROM (WITH d AS (DELETE FROM users RETURNING *) SELECT * FROM d) AS s",
         "PostgreSQL refuses a data-modifying WITH below the top level, no other database has one: junk everywhere", effect="EEE"),
    case("cte-plain-read", ALLOW, "WITH t AS (SELECT id FROM users) SELECT COUNT(*) FROM t", "a read-only CTE", effect="NNN"),
    case("cte-recursive-read", ALLOW, "WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < 5) SELECT * FROM c",
         "a recursive read", effect="NNN"),
    case("cte-named-like-dml", ALLOW, "WITH deleted_rows AS (SELECT * FROM users WHERE deleted = 1) SELECT * FROM deleted_rows",
         "a CTE named after a denied word", effect="NNN"),
    case("cte-quoted-keyword-name", ALLOW, 'WITH "delete" AS (SELECT 1 AS x) SELECT x FROM "delete"',
         'a CTE named "delete"; MySQL reads "delete" as a string: a syntax error there', effect="NNE"),
    case("cte-dml-text-in-literal", ALLOW, "WITH d AS (SELECT 'DELETE FROM users' AS q) SELECT q FROM d", "the DML is a literal",
         effect="NNN"),
])

DIALECT_VARIANTS = _category("dialect-variants", [
    case("dia-tsql-delete-no-from", BLOCK, "DELETE users WHERE id = 1", "T-SQL: FROM is optional", kinds="DELETE", effect="EEE"),
    case("dia-tsql-delete-top", BLOCK, "DELETE TOP (1) FROM users", "T-SQL: DELETE TOP", kinds="DELETE", effect="EEE"),
    case("dia-tsql-delete-output", BLOCK, "DELETE FROM users OUTPUT deleted.*", "T-SQL: DELETE ... OUTPUT", kinds="DELETE", effect="EEE"),
    case("dia-tsql-update-top", BLOCK, "UPDATE TOP (1) users SET name = 'x'", "T-SQL: UPDATE TOP", kinds="UPDATE", effect="EEE"),
    case("dia-tsql-merge-by-source", BLOCK, "MERGE users AS t USING staging AS s ON t.id = s.id WHEN NOT MATCHED BY SOURCE THEN DELETE;",
         "T-SQL: MERGE ... WHEN NOT MATCHED BY SOURCE THEN DELETE", kinds="MERGE DELETE", effect="EEE"),
    case("dia-tsql-exec-string", BLOCK, "EXEC('DROP TABLE users')", "T-SQL dynamic SQL", kinds="DROP", effect="EEE"),
    case("dia-tsql-sp-executesql", BLOCK, "EXEC sp_executesql N'DROP TABLE users'", "T-SQL dynamic SQL through sp_executesql",
         kinds="DROP", effect="EEE"),
    case("dia-tsql-if-drop", BLOCK, "IF 1 = 1 DROP TABLE users", "T-SQL control flow around a DROP", kinds="DROP", effect="EEE"),
    case("dia-mysql-multi-table-delete", BLOCK, "DELETE users, orders FROM users JOIN orders ON users.id = orders.user_id",
         "MySQL multi-table DELETE", kinds="DELETE", effect="EEC"),
    case("dia-mysql-alias-delete", BLOCK, "DELETE t1 FROM users t1 JOIN orders t2 ON t1.id = t2.user_id",
         "MySQL/T-SQL DELETE of an alias", kinds="DELETE", effect="EEC"),
    case("dia-mysql-delete-using", BLOCK, "DELETE FROM users USING users JOIN orders ON users.id = orders.user_id",
         "MySQL DELETE ... USING", kinds="DELETE", effect="EEC"),
    case("dia-pg-delete-using", BLOCK, "DELETE FROM users USING orders WHERE users.id = orders.user_id",
         "PostgreSQL DELETE ... USING", kinds="DELETE", effect="ECE"),
    case("dia-pg-delete-only", BLOCK, "DELETE FROM ONLY users", "PostgreSQL DELETE FROM ONLY", kinds="DELETE", effect="ECE"),
    case("dia-pg-truncate-only", BLOCK, "TRUNCATE ONLY users", "PostgreSQL TRUNCATE ONLY", kinds="TRUNCATE", effect="ECE"),
    case("dia-pg-truncate-restart", BLOCK, "TRUNCATE TABLE users RESTART IDENTITY CASCADE", "PostgreSQL TRUNCATE options",
         kinds="TRUNCATE", effect="ECE"),
    case("dia-pg-truncate-two", BLOCK, "TRUNCATE users, orders", "PostgreSQL truncates a list of tables", kinds="TRUNCATE", effect="ECE"),
    case("dia-truncate-table", BLOCK, "TRUNCATE TABLE users", "standard TRUNCATE TABLE", kinds="TRUNCATE", effect="ECC"),
    case("dia-sqlite-replace-into", BLOCK, "REPLACE INTO users (id, name) VALUES (1, 'x')", "SQLite and MySQL REPLACE INTO",
         kinds="REPLACE", effect="CEC"),
    case("dia-mysql-replace-no-into", BLOCK, "REPLACE users (id, name) VALUES (1, 'x')", "MySQL: INTO is optional",
         kinds="REPLACE", effect="EEC"),
    case("dia-sqlite-insert-or-replace", BLOCK, "INSERT OR REPLACE INTO users (id, name) VALUES (1, 'x')", "SQLite INSERT OR REPLACE",
         kinds="INSERT REPLACE", effect="CEE"),
    case("dia-sqlite-insert-or-ignore", BLOCK, "INSERT OR IGNORE INTO users (id, name) VALUES (1, 'x')",
         "SQLite INSERT OR IGNORE (the row exists, so nothing changes)", kinds="INSERT", effect="NEE"),
    case("dia-upsert-on-conflict", BLOCK, "INSERT INTO users (id, name) VALUES (1, 'x') ON CONFLICT (id) DO UPDATE SET name = 'y'",
         "SQLite/PostgreSQL upsert", kinds="INSERT UPDATE", effect="CCE"),
    case("dia-mysql-on-duplicate-key", BLOCK, "INSERT INTO users (id, name) VALUES (1, 'x') ON DUPLICATE KEY UPDATE name = 'y'",
         "MySQL upsert", kinds="INSERT UPDATE", effect="EEC"),
    case("dia-cockroach-upsert", BLOCK, "UPSERT INTO users (id, name) VALUES (1, 'x')", "CockroachDB UPSERT", kinds="INSERT", effect="EEE"),
    case("dia-drop-if-exists", BLOCK, "DROP TABLE IF EXISTS users", "DROP ... IF EXISTS", kinds="DROP", effect="CCC"),
    case("dia-drop-cascade", BLOCK, "DROP TABLE IF EXISTS users CASCADE", "PostgreSQL CASCADE (MySQL accepts and ignores it)",
         kinds="DROP", effect="ECC"),
    case("dia-drop-two-tables", BLOCK, "DROP TABLE users, orders", "a list of tables", kinds="DROP", effect="ECC"),
    case("dia-merge-delete", BLOCK, "MERGE INTO users u USING staging s ON u.id = s.id WHEN MATCHED THEN DELETE",
         "MERGE ... WHEN MATCHED THEN DELETE (PostgreSQL 15+, SQL Server, Oracle)", kinds="MERGE DELETE", effect="ECE"),
    case("dia-merge-upsert", BLOCK,
         "MERGE INTO users USING staging ON users.id = staging.id WHEN MATCHED THEN UPDATE SET name = staging.name "
         "WHEN NOT MATCHED THEN INSERT (id, name) VALUES (staging.id, staging.name)",
         "MERGE as an upsert", kinds="MERGE UPDATE INSERT", effect="ECE"),
    case("dia-execute-literal", BLOCK, "EXECUTE 'DROP TABLE users'",
         "dynamic SQL in PL/pgSQL syntax; no database runs it at the top level (junk), blocked either way", effect="EEE"),
    case("dia-execute-immediate", BLOCK, "EXECUTE IMMEDIATE 'DROP TABLE users'", "Snowflake/BigQuery/MariaDB dynamic SQL",
         kinds="DROP", effect="EEC"),
    case("dia-execute-immediate-concat", BLOCK, "EXECUTE IMMEDIATE CONCAT('DR', 'OP TABLE users')",
         "dynamic SQL assembled from pieces: MariaDB and BigQuery run the DROP", kinds="DROP", effect="EEC"),
    case("dia-mysql-prepare-concat", BLOCK, "SET @q = CONCAT('DR', 'OP TABLE users'); PREPARE s FROM @q; EXECUTE s",
         "MySQL dynamic SQL from a variable built by CONCAT", kinds="DROP", effect="EEC"),
    case("dia-mysql-prepare-literal", BLOCK, "PREPARE s FROM 'DELETE FROM users'; EXECUTE s", "MySQL prepared DELETE",
         kinds="DELETE", effect="EEC"),
    case("dia-pg-prepare-execute", BLOCK, "PREPARE p AS DELETE FROM users; EXECUTE p", "PostgreSQL prepared DELETE",
         kinds="DELETE", effect="ECE"),
    case("dia-pg-do-execute", BLOCK, "DO $$ BEGIN EXECUTE 'DROP TABLE users'; END $$", "PostgreSQL anonymous block with dynamic SQL",
         kinds="DROP", effect="ECE"),
    case("dia-pg-do-delete", BLOCK, "DO $$ BEGIN DELETE FROM users; END $$", "PostgreSQL anonymous block", kinds="DELETE", effect="ECE"),
    case("dia-pg-explain-analyze", BLOCK, "EXPLAIN ANALYZE DELETE FROM users", "PostgreSQL EXPLAIN ANALYZE executes the statement",
         kinds="DELETE", effect="ECE"),
    case("dia-mariadb-analyze-delete", BLOCK, "ANALYZE DELETE FROM users", "MariaDB ANALYZE <statement> executes the statement",
         kinds="DELETE", effect="EEC"),
    case("dia-select-into-new-table", BLOCK, "SELECT * INTO archive2 FROM users",
         "PostgreSQL and T-SQL: SELECT INTO creates and fills a new table (CREATE TABLE AS); MySQL reads INTO as a variable",
         kinds="CREATE", effect="ECE"),
    case("dia-create-table-as", BLOCK, "CREATE TABLE t2 AS SELECT * FROM users", "CREATE TABLE AS", kinds="CREATE", effect="CCC"),
    case("dia-sqlite-trigger", BLOCK, "CREATE TRIGGER t AFTER INSERT ON orders BEGIN DELETE FROM users; END",
         "SQLite trigger with a DELETE body", kinds="CREATE", effect="CEE"),
    case("dia-alter-drop-column", BLOCK, "ALTER TABLE users DROP COLUMN note", "ALTER ... DROP COLUMN", kinds="ALTER", effect="CCC"),
    case("dia-alter-rename", BLOCK, "ALTER TABLE users RENAME TO old_users", "ALTER ... RENAME", kinds="ALTER", effect="CCC"),
    case("dia-grant", BLOCK, "GRANT SELECT ON users TO PUBLIC", "GRANT (no table changes)", kinds="GRANT", effect="ENN"),
    case("dia-sqlite-attach", BLOCK, "ATTACH DATABASE ':memory:' AS aux", "SQLite ATTACH", kinds="ATTACH", effect="CEE"),
    case("dia-sqlite-attach-short", BLOCK, "ATTACH ':memory:' AS aux", "SQLite ATTACH without DATABASE", kinds="ATTACH", effect="CEE"),
    case("dia-sqlite-pragma-set", BLOCK, "PRAGMA user_version = 7", "SQLite PRAGMA that writes", kinds="PRAGMA", effect="CEE"),
    case("dia-sqlite-pragma-read", BLOCK, "pragma table_info(users)", "a PRAGMA that only reads is still a denied PRAGMA",
         kinds="PRAGMA", effect="NEE"),
    case("dia-sqlite-indexed-by", BLOCK, "DELETE FROM users INDEXED BY idx_users_name WHERE name = 'ann'", "SQLite INDEXED BY",
         kinds="DELETE", effect="CEE"),
    case("dia-update-from", BLOCK, "UPDATE users SET name = 'x' FROM staging WHERE users.id = staging.id",
         "UPDATE ... FROM (SQLite 3.33+, PostgreSQL, T-SQL)", kinds="UPDATE", effect="CCE"),
    case("dia-mysql-update-join", BLOCK, "UPDATE users u JOIN orders o ON u.id = o.user_id SET u.name = 'x'", "MySQL UPDATE ... JOIN",
         kinds="UPDATE", effect="EEC"),
    case("dia-drop-index", BLOCK, "DROP INDEX idx_users_name", "DROP INDEX (MySQL wants ON <table>)", kinds="DROP", effect="CCE"),
    case("dia-tsql-declare-exec", BLOCK, "DECLARE @q NVARCHAR(100) = 'DR' + 'OP TABLE users'; EXEC(@q)",
         "T-SQL dynamic SQL assembled in a variable", kinds="DROP", effect="EEE"),
    case("dia-mysql-rename-table", BLOCK, "RENAME TABLE users TO old_users",
         "MySQL RENAME TABLE: not an ALTER statement by name, but the same schema change (it needs the ALTER and DROP "
         "privileges)", kinds="ALTER", effect="EEC"),
    case("dia-pg-copy-from", BLOCK, "COPY users (id, name) FROM '/dev/null'",
         "PostgreSQL COPY ... FROM: not an INSERT statement by name, but it inserts rows (it needs the INSERT privilege); "
         "reading a server file needs superuser, so PostgreSQL is not re-checked", kinds="INSERT", effect="E-E"),
    case("dia-explain-select", ALLOW, "EXPLAIN SELECT * FROM users", "EXPLAIN of a read", effect="NNN"),
    case("dia-sqlite-explain-query-plan", ALLOW, "EXPLAIN QUERY PLAN SELECT * FROM users", "SQLite query plan", effect="NEE"),
    case("dia-explain-delete", ALLOW, "EXPLAIN DELETE FROM users", "EXPLAIN without ANALYZE only plans the DELETE", effect="NNN"),
    case("dia-sqlite-explain-query-plan-delete", ALLOW, "EXPLAIN QUERY PLAN DELETE FROM users", "SQLite only plans the DELETE",
         effect="NEE"),
    case("dia-sqlite-explain-drop", ALLOW, "EXPLAIN DROP TABLE users", "SQLite only compiles the DROP (the table stays)", effect="NEE"),
    case("dia-sqlite-pragma-function", ALLOW, "SELECT * FROM pragma_table_info('users')", "a table-valued function, not a PRAGMA statement",
         effect="NEE"),
    case("dia-vacuum", ALLOW, "VACUUM", "VACUUM is not denied", effect="NNE"),
    case("dia-analyze-table", ALLOW, "ANALYZE users", "statistics only (SQLite writes sqlite_stat1); ANALYZE is not denied", effect="CNE"),
    case("dia-for-update", ALLOW, "SELECT * FROM users WHERE id = 1 FOR UPDATE", "a row lock, not an UPDATE; SQLite has no FOR UPDATE",
         effect="ENN"),
    case("dia-pg-table-shorthand", ALLOW, "TABLE users", "PostgreSQL/MySQL 8 shorthand for SELECT * FROM users", effect="ENE"),
    case("dia-pg-comment-on", ALLOW, "COMMENT ON TABLE users IS 'DROP TABLE users'", "COMMENT is not denied", effect="ENE"),
    case("dia-limit-offset", ALLOW, "SELECT name FROM users LIMIT 1 OFFSET 1", "LIMIT/OFFSET", effect="NNN"),
    case("dia-tsql-top", ALLOW, "SELECT TOP 1 name FROM users", "T-SQL TOP", effect="EEE"),
    case("dia-fetch-first", ALLOW, "SELECT name FROM users FETCH FIRST 1 ROWS ONLY", "standard FETCH FIRST", effect="ENN"),
    case("dia-mysql-dual", ALLOW, "SELECT 1 FROM DUAL", "MySQL/Oracle DUAL", effect="EEN"),
    case("dia-mysql-show", ALLOW, "SHOW TABLES", "MySQL SHOW", effect="EEN"),
    case("dia-pg-dollar-string", ALLOW, "SELECT $$DROP TABLE users$$", "PostgreSQL dollar-quoted string", effect="ENE"),
    case("dia-pg-e-string", ALLOW, "SELECT E'DROP TABLE users'", "PostgreSQL escape string", effect="ENE"),
    case("dia-n-string", ALLOW, "SELECT N'DROP TABLE users'", "national character literal", effect="ENN"),
    case("dia-blob-literal", ALLOW, "SELECT X'44524f50'", "a blob/bit-string literal (the bytes of 'DROP')", effect="NNN"),
    case("dia-backtick-identifier", ALLOW, "SELECT `drop` FROM users", "backtick-quoted identifier (SQLite, MySQL)", effect="NEN"),
    case("dia-bracket-identifier", ALLOW, "SELECT [drop] FROM users", "bracket-quoted identifier (SQLite, T-SQL)", effect="NEE"),
])

KEYWORDS_AS_DATA = _category("keywords-as-data", [
    case("data-literal-drop", ALLOW, "SELECT 'DROP TABLE users'", "a denied statement as a string literal", effect="NNN"),
    case("data-literals-two", ALLOW, "SELECT 'DROP TABLE users' AS prank, 'DELETE FROM users' AS joke", "two such literals", effect="NNN"),
    case("data-where-literal", ALLOW, "SELECT * FROM users WHERE note = 'DROP TABLE users'", "in a WHERE literal", effect="NNN"),
    case("data-like-delete", ALLOW, "SELECT * FROM users WHERE note LIKE '%delete from%'", "in a LIKE pattern", effect="NNN"),
    case("data-like-script", ALLOW, "SELECT * FROM users WHERE note LIKE '%; DROP TABLE users; --%'", "a whole script in a LIKE pattern",
         effect="NNN"),
    case("data-doubled-quote", ALLOW, "SELECT 'It''s; DROP TABLE users; --'", "a doubled quote keeps the literal open", effect="NNN"),
    case("data-doubled-quote-where", ALLOW, "SELECT * FROM users WHERE note = 'x'' ; DELETE FROM users; --'",
         "the DELETE is inside the literal", effect="NNN"),
    case("data-dropped-at", ALLOW, "SELECT dropped_at FROM users", "a column named dropped_at", effect="NNN"),
    case("data-deleted-column", ALLOW, "SELECT deleted, dropped_at FROM users WHERE deleted = 0", "columns named deleted and dropped_at",
         effect="NNN"),
    case("data-deleted-table", ALLOW, "SELECT * FROM deleted", "a table named deleted", effect="NNN"),
    case("data-quoted-keyword-columns", ALLOW, 'SELECT "delete", "drop" FROM users', "columns named delete and drop (strings to MySQL)",
         effect="NNN"),
    case("data-quoted-alias-statement", ALLOW, 'SELECT 1 AS "DROP TABLE users"', "a statement as a quoted alias", effect="NNN"),
    case("data-quoted-table", ALLOW, 'SELECT * FROM "deleted"', "a quoted table name; MySQL reads a string: an error", effect="NNE"),
    case("data-truncate-column", ALLOW, "SELECT truncate_log FROM (SELECT 1 AS truncate_log) AS t", "a column named truncate_log",
         effect="NNN"),
    case("data-prefixed-aliases", ALLOW, "SELECT name AS updated_name, note AS insert_note FROM users",
         "aliases starting with denied words",
         effect="NNN"),
    case("data-replace-function", ALLOW, "SELECT replace(name, 'a', 'b') FROM users", "the replace() function, not REPLACE INTO",
         effect="NNN"),
    case("data-create-alias", ALLOW, 'SELECT COUNT(*) AS "create" FROM users', "an alias named create", effect="NNN"),
    case("data-script-alias", ALLOW, 'SELECT 1 AS "; DROP TABLE users; --"', "a script as a quoted alias", effect="NNN"),
    case("data-concat", ALLOW, "SELECT 'a' || 'DROP TABLE users'", "concatenated literals", effect="NNN"),
    case("data-in-list", ALLOW, "SELECT * FROM users WHERE name IN ('drop', 'delete', 'truncate')", "denied words as list values",
         effect="NNN"),
    case("data-char-codes", ALLOW, "SELECT CHAR(68, 82, 79, 80)", "the letters of DROP built by CHAR(); PostgreSQL has no CHAR()",
         effect="NEN"),
    case("data-qualified-columns", ALLOW, "SELECT t.drop_count FROM (SELECT 1 AS drop_count) AS t", "a qualified column named drop_count",
         effect="NNN"),
    case("data-alter-grant-merge-names", ALLOW,
         "SELECT alter_ego, grant_id, merge_key FROM (SELECT 'x' AS alter_ego, 1 AS grant_id, 2 AS merge_key) AS s",
         "columns starting with ALTER, GRANT, MERGE", effect="NNN"),
    case("data-update-dropped-at", BLOCK, "UPDATE users SET dropped_at = '2026-01-01' WHERE id = 3", "UPDATE is denied in this corpus",
         kinds="UPDATE", effect="CCC"),
    case("data-delete-from-deleted", BLOCK, "DELETE FROM deleted", "deleting from a table named deleted", kinds="DELETE", effect="CCC"),
    case("data-drop-deleted", BLOCK, "DROP TABLE deleted", "dropping a table named deleted", kinds="DROP", effect="CCC"),
    case("data-delete-no-match", BLOCK, "DELETE FROM users WHERE note = 'SELECT only'", "a DELETE that matches no row is still a DELETE",
         kinds="DELETE", effect="NNN"),
    case("data-read-then-delete-like", BLOCK, "SELECT 'harmless'; DELETE FROM users WHERE note LIKE '%DROP%'", "a read, then a real DELETE",
         kinds="DELETE", effect="CCC"),
    case("data-drop-quoted-statement-table", BLOCK, 'DROP TABLE "DROP TABLE users"', "a DROP of a table with a strange name (missing here)",
         kinds="DROP", effect="EEE"),
])

LEXER_DIVERGENCE = _category("lexer-divergence", [
    case("lex-backslash-standard-drops", BLOCK, "SELECT 'a\\'; DROP TABLE users; -- '",
         "standard SQL: backslash is a plain character, the literal ends at \\' and the DROP runs (SQLite, PostgreSQL); "
         "MySQL: \\' is an escaped quote, all one literal", kinds="DROP", effect="CCN"),
    case("lex-backslash-mysql-drops", BLOCK, "SELECT 'a\\' , '; DROP TABLE users; -- '",
         "MySQL/MariaDB: \\' escapes the quote, so the literal is 'a\\' , ' and the DROP runs; standard SQL reads two literals",
         kinds="DROP", effect="NNC"),
    case("lex-backslash-mysql-double-quote", BLOCK, 'SELECT "a\\" , "; DROP TABLE users; -- "',
         "the same through MySQL double-quoted strings", kinds="DROP", effect="NEC"),
    case("lex-pg-e-string-drops", BLOCK, "SELECT E'\\' , '; DROP TABLE users; -- '",
         "PostgreSQL E-string: \\' escapes the quote, so the DROP runs", kinds="DROP", effect="ECE"),
    case("lex-mysql-dash-dash-no-space", BLOCK, "SELECT 1 --1; DROP TABLE users",
         "MySQL: -- starts a comment only before whitespace, so this is 1 - -1 and the DROP runs", kinds="DROP", effect="NNC"),
    case("lex-mysql-executable-comment", BLOCK, "SELECT 1; /*! DROP TABLE users */",
         "MySQL/MariaDB execute the text of /*! ... */ comments", kinds="DROP", effect="NNC"),
    case("lex-mysql-executable-comment-alone", BLOCK, "/*! DROP TABLE users */", "an executable comment on its own",
         kinds="DROP", effect="NNC"),
    case("lex-mysql-versioned-comment", BLOCK, "SELECT 1; /*!50000 DELETE FROM users */",
         "a versioned executable comment (runs on servers >= 5.0.0)", kinds="DELETE", effect="NNC"),
    case("lex-sqlite-bracket-hides-separator", BLOCK, "SELECT name [';] FROM users; DROP TABLE users; --'] FROM users",
         "SQLite and T-SQL read [';] as a quoted alias, so the DROP runs; PostgreSQL reads a subscript", kinds="DROP", effect="CEE"),
    case("lex-dollar-tag-sqlite", BLOCK, "SELECT $a$ ; DROP TABLE users; $a$",
         "PostgreSQL: one dollar-quoted string; SQLite: $a$ is a parameter, the DROP runs, then a syntax error",
         kinds="DROP", effect="XNE"),
    case("lex-dollar-quoted-script", BLOCK, "SELECT $$ ; DROP TABLE users; $$",
         "PostgreSQL: one dollar-quoted string; SQLite: $ starts a parameter name, the DROP runs, then a syntax error",
         kinds="DROP", effect="XNE"),
    case("lex-hash-xor-pg", BLOCK, "SELECT 1 # 2; DROP TABLE users",
         "PostgreSQL: # is XOR and the DROP runs; MySQL: # starts a comment", kinds="DROP", effect="ECN"),
    case("lex-mysql-hash-comment", ALLOW, "SELECT 1 # comment; DROP TABLE users",
         "MySQL: a # comment hides the rest; PostgreSQL and SQLite reject the text", effect="EEN"),
    case("lex-backslash-two-literals", ALLOW, "SELECT 'a\\', 'b'", "two literals in standard SQL; MySQL sees an unterminated one",
         effect="NNE"),
    case("lex-bracket-identifier-script", ALLOW, "SELECT [a; DROP TABLE users; --] FROM users",
         "SQLite/T-SQL: one bracket-quoted identifier (no such column); nothing else runs", effect="EEE"),
    case("lex-quoted-identifier-separator", ALLOW, 'SELECT "a;b" FROM (SELECT 1 AS "a;b") AS t', "a separator inside a quoted identifier",
         effect="NNN"),
])

UNICODE = _category("unicode", [
    case("uni-cyrillic-o-drop", BLOCK, "DR\u041eP TABLE users", "Cyrillic \u041e: not a keyword to any database; junk, fail closed",
         effect="EEE"),
    case("uni-fullwidth-drop", BLOCK, "\uff24\uff32\uff2f\uff30 TABLE users", "fullwidth letters: junk, fail closed", effect="EEE"),
    case("uni-fullwidth-delete-from", BLOCK, "\uff24\uff25\uff2c\uff25\uff34\uff25 \uff26\uff32\uff2f\uff2d users",
         "fullwidth DELETE FROM: junk", effect="EEE"),
    case("uni-cyrillic-e-delete", BLOCK, "DELET\u0415 FROM users", "Cyrillic \u0415 at the end of DELETE: junk", effect="EEE"),
    case("uni-zero-width-in-delete", BLOCK, "DE\u200bLETE FROM users", "a zero-width space inside the keyword: junk", effect="EEE"),
    case("uni-nbsp-separator", BLOCK, "DROP\u00a0TABLE users",
         "a no-break space is an identifier character to SQLite, PostgreSQL and MariaDB (junk there)", effect="EEE"),
    case("uni-em-space-separator", BLOCK, "DROP\u2003TABLE users", "an em space between tokens: junk", effect="EEE"),
    case("uni-ideographic-space", BLOCK, "DROP\u3000TABLE users", "an ideographic space between tokens: junk", effect="EEE"),
    case("uni-bom-drop", BLOCK, "\ufeffDROP TABLE users", "SQLite skips a leading byte-order mark and drops", kinds="DROP", effect="CEE"),
    case("uni-zero-width-after-separator", BLOCK, "SELECT 1;\u200bDROP TABLE users", "a zero-width space glued to DROP: junk",
         effect="EEE"),
    case("uni-zero-width-in-table-name", BLOCK, "DROP TABLE users\u200b",
         "a DROP of a table whose name ends in a zero-width space (missing)",
         kinds="DROP", effect="EEE"),
    case("uni-cyrillic-table-name", BLOCK, "DROP TABLE us\u0435rs", "a DROP of a look-alike table name (missing)",
         kinds="DROP", effect="EEE"),
    case("uni-nul-after-drop", BLOCK, "DROP TABLE users\x00",
         "C APIs (libpq through psycopg, SQLite's) stop at the NUL and drop; python's sqlite3 refuses NUL", kinds="DROP", effect="ECC"),
    case("uni-nul-before-drop", BLOCK, "SELECT 1;\x00DROP TABLE users",
         "a NUL glued to DROP: junk (libpq stops at the NUL and runs only SELECT 1)", effect="ENE"),
    case("uni-literal-cyrillic-drop", ALLOW, "SELECT 'DR\u041eP TABLE users'", "look-alike inside a literal", effect="NNN"),
    case("uni-literal-fullwidth", ALLOW, "SELECT '\uff24\uff32\uff2f\uff30 TABLE users'", "fullwidth inside a literal", effect="NNN"),
    case("uni-quoted-alias-cyrillic", ALLOW, 'SELECT 1 AS "DR\u041eP"', "look-alike quoted alias", effect="NNN"),
    case("uni-literal-emoji", ALLOW, "SELECT * FROM users WHERE name = 'Zo\u00eb \U0001f642'", "non-ASCII data", effect="NNN"),
    case("uni-literal-zero-width", ALLOW, "SELECT 'ze\u200bro'", "a zero-width space inside a literal", effect="NNN"),
    case("uni-line-separator-in-comment", ALLOW, "SELECT 1 -- x\u2028DROP TABLE users",
         "U+2028 does not end a line comment in any database",
         effect="NNN"),
    case("uni-next-line-in-comment", ALLOW, "SELECT 1 -- x\u0085DROP TABLE users", "U+0085 (NEL) does not end a line comment either",
         effect="NNN"),
    case("uni-bidi-override-in-comment", ALLOW, "SELECT 1 /* \u202e DROP TABLE users */", "a right-to-left override inside a comment",
         effect="NNN"),
    case("uni-pg-unicode-escape-literal", ALLOW, "SELECT U&'\\0044ROP'", "PostgreSQL Unicode-escape literal spelling DROP", effect="ENE"),
    case("uni-literal-accents", ALLOW, "SELECT 'na\u00efve caf\u00e9', 'Stra\u00dfe'", "accented literals", effect="NNN"),
])

LONG_AND_DEEP = _category("long-and-deep", [
    case("long-or-5000-then-drop", BLOCK, _or_terms(5000) + "; DROP TABLE users",
         "a 64 KB SELECT with 5,000 OR terms, then a DROP; SQLite rejects the expression depth and stops", kinds="DROP", effect="ECC"),
    case("long-5000-selects-then-drop", BLOCK, "SELECT 1;" * 5000 + "DROP TABLE users", "a DROP after 5,000 statements (45 KB)",
         kinds="DROP", effect="CCC"),
    case("long-50kb-block-comment-then-drop", BLOCK, "/* " + "x" * FIFTY_KB + " */ DROP TABLE users", "a DROP after a 50 KB comment",
         kinds="DROP", effect="CCC"),
    case("long-50kb-line-comment-then-drop", BLOCK, "-- " + "x" * FIFTY_KB + "\nDROP TABLE users", "a DROP after a 50 KB line comment",
         kinds="DROP", effect="CCC"),
    case("long-50kb-literal-then-delete", BLOCK, "SELECT '" + "x" * FIFTY_KB + "'; DELETE FROM users", "a DELETE after a 50 KB literal",
         kinds="DELETE", effect="CCC"),
    case("long-2000-unions-then-delete", BLOCK, " UNION ALL ".join(f"SELECT {i}" for i in range(2000)) + "; DELETE FROM users",
         "a DELETE after 2,000 UNION ALL terms; SQLite caps compound SELECTs at 500 and stops", kinds="DELETE", effect="ECC"),
    case("deep-subqueries-200-then-drop", BLOCK, _nested_subqueries(200) + "; DROP TABLE users",
         "a DROP after subqueries nested 200 deep (too deep for SQLite and MariaDB, which stop)",
         kinds="DROP", effect="ECE"),
    case("deep-parens-1000-then-drop", BLOCK, _parens(1000) + "; DROP TABLE users",
         "a DROP after parentheses nested 1,000 deep (SQLite overflows its parser stack first)", kinds="DROP", effect="ECC"),
    case("deep-chained-ctes-delete", BLOCK, _chained_ctes(50), "50 chained CTEs over a DELETE at the root (PostgreSQL)",
         kinds="DELETE", effect="ECE"),
    case("deep-delete-over-subqueries", BLOCK,
         "DELETE FROM users WHERE id IN (" + _nested_subqueries(100).replace("SELECT *", "SELECT id", 1) + ")",
         "a DELETE whose condition nests 100 subqueries (too deep for SQLite and MariaDB)", kinds="DELETE", effect="ECE"),
    case("long-over-limit-then-drop", BLOCK, "SELECT 1; -- " + "x" * 200_000 + "\nDROP TABLE users", "a 200 KB script ending in a DROP",
         kinds="DROP", effect="CCC"),
    case("deep-parens-unbalanced", BLOCK, "SELECT " + "(" * 1000, "1,000 unclosed parentheses: junk", effect="EEE"),
    case("long-or-5000", ALLOW, _or_terms(5000), "a 64 KB SELECT with 5,000 OR terms (too deep for SQLite's expression limit)",
         effect="ENN"),
    case("long-50kb-literal", ALLOW, "SELECT '" + "x" * FIFTY_KB + "'", "a 50 KB literal", effect="NNN"),
    case("long-50kb-literal-of-drops", ALLOW, "SELECT '" + "DROP TABLE users; " * 2800 + "'", "a 50 KB literal made of DROP statements",
         effect="NNN"),
    case("long-in-list-5000", ALLOW, "SELECT * FROM users WHERE id IN (" + ", ".join(map(str, range(5000))) + ")",
         "an IN list of 5,000 values",
         effect="NNN"),
    case("long-case-1000", ALLOW, "SELECT CASE " + " ".join(f"WHEN id = {i} THEN {i}" for i in range(1000)) + " END FROM users",
         "a CASE with 1,000 branches", effect="NNN"),
    case("deep-subqueries-50", ALLOW, _nested_subqueries(50), "subqueries nested 50 deep (SQLite: too deep)", effect="ENN"),
    case("deep-subqueries-200", ALLOW, _nested_subqueries(200), "subqueries nested 200 deep (PostgreSQL only)", effect="ENE"),
    case("deep-parens-300", ALLOW, _parens(300), "parentheses nested 300 deep (SQLite: too deep)", effect="ENN"),
    case("deep-parens-1000", ALLOW, _parens(1000), "parentheses nested 1,000 deep: PostgreSQL and MariaDB run it, SQLite overflows",
         effect="ENN"),
    case("long-over-limit-read", ALLOW, "SELECT 1 -- " + "x" * 200_000, "a 200 KB read (mostly comment), over max_query_chars",
         effect="NNN"),
])

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
)

#: ``allow`` entries SQLPolicy(deny=DENY) blocks, by id, with why. The test fails if this set
#: changes in either direction, so a fix (or a regression) is noticed and this list updated.
KNOWN_FALSE_POSITIVES: FrozenSet[str] = frozenset({
    # Without a dialect, text whose comments read differently across databases is blocked.
    "cmt-nested-pg-only-trailing",
    "cmt-nested-pg-only-leading",
    # sqlglot reads ORDER BY, GROUP BY and PARTITION BY as single tokens: a comment inside is a parse error.
    "cmt-inside-order-by",
    "cmt-line-inside-order-by",
    "cmt-inside-group-by",
    "cmt-inside-partition-by",
    # EXPLAIN (without ANALYZE) only plans; the policy counts the explained statement.
    "dia-explain-delete",
    "dia-sqlite-explain-query-plan-delete",
    "dia-sqlite-explain-drop",
    # Valid SQL that sqlglot's default dialect cannot parse, so it fails closed.
    "dia-tsql-top",
    "dia-pg-dollar-string",
    "dia-pg-e-string",
    "dia-blob-literal",
    "dia-backtick-identifier",
    "dia-bracket-identifier",
    "lex-mysql-hash-comment",
    "lex-bracket-identifier-script",
    # Without a dialect, text with a backslash is also read as MySQL (where \' escapes a quote);
    # that reading finds an unterminated string, and what does not parse is blocked.
    "lex-backslash-two-literals",
    # Bounds: parse depth and max_query_chars.
    "deep-parens-1000",
    "long-over-limit-read",
})

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


def cases_in(category: str) -> List[Case]:
    return [c for c in CORPUS if c.category == category]
