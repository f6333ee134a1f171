"""Differential check of the SQL readers: every (text, dialect) -> its full analysis, as JSON, so
a change meant to keep every classification (a reader reshaped, rules moved into tables) can be
shown to keep it: write the analyses before and after the change, then compare them.

    python tests/benchmarks/sql_reader_differential.py before.json      # on the old tree
    python tests/benchmarks/sql_reader_differential.py after.json       # on the new tree
    python tests/benchmarks/sql_reader_differential.py --compare before.json after.json

Texts: the adversarial corpus, the text-to-SQL benchmark's queries, every string constant of the
SQL test modules, and examples of the statements that hold statements. Compared: statements,
kinds, reasons, unknown constructs, written tables, errors and unverifiable reasons. sqlglot words
the parse error of a few junk texts (``" OR "``, ``"LIKE"``) differently from one run to the next
of the same code; compare runs made the same way.
"""

import ast
import json
import os
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # offline
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "tests" / "benchmarks")]

DIALECTS = [None, "postgres", "mysql", "mariadb", "sqlite", "tsql"]
EXTRAS = [
    "EXPLAIN SELECT 1",
    "EXPLAIN DELETE FROM t",
    "EXPLAIN ANALYZE DELETE FROM t",
    "EXPLAIN ANALYSE DELETE FROM t",
    "EXPLAIN (ANALYZE) DELETE FROM t",
    "EXPLAIN (ANALYZE false) DELETE FROM t",
    "EXPLAIN (ANALYZE off) DROP TABLE t",
    "EXPLAIN (ANALYZE true, VERBOSE) UPDATE t SET a = 1",
    "EXPLAIN FORMAT=JSON DELETE FROM t",
    "EXPLAIN QUERY PLAN DELETE FROM t",
    "DESCRIBE t",
    "DESC t",
    "DESCRIBE DELETE FROM t",
    "DESC SELECT 1",
    "ANALYZE TABLE t",
    "ANALYZE t",
    "ANALYZE DELETE FROM t",
    "ANALYZE FORMAT=JSON DELETE FROM t",
    "ANALYZE SELECT * FROM t",
    "PREPARE s FROM 'DELETE FROM t'",
    "PREPARE s FROM @q",
    "PREPARE s AS DELETE FROM t",
    "PREPARE s (int) AS SELECT $1",
    "PREPARE s AS SELECT 1; EXECUTE s",
    "EXECUTE s",
    "EXECUTE 'DROP TABLE t'",
    "EXECUTE IMMEDIATE 'DELETE FROM t'",
    "EXECUTE IMMEDIATE 'SELECT 1'",
    "EXEC sp_executesql N'DELETE FROM t'",
    "EXEC sp_executesql N'SELECT 1'",
    "EXEC ('SELECT 1')",
    "EXECUTE s USING @a",
    "PREPARE s FROM 'SELECT 1'; EXECUTE s",
    "DO 1",
    "DO sleep(1)",
    "DO lo_unlink(1)",
    "DO $$ BEGIN DELETE FROM t; END $$",
    "DO 'BEGIN NULL; END'",
    "DO RELEASE_LOCK('x')",
    "DO 1, 2",
    "CALL p()",
    "CALL p",
    "CALL s.p(1)",
    "CREATE PROCEDURE p() BEGIN DELETE FROM t; END; CALL p()",
    "CREATE PROCEDURE p() SELECT 1; CALL p()",
    "CREATE FUNCTION f() RETURNS int RETURN 1; SELECT f()",
    "CREATE TRIGGER tr AFTER INSERT ON t FOR EACH ROW BEGIN DELETE FROM u; END",
    "CREATE TRIGGER tr AFTER INSERT ON t FOR EACH ROW REPLACE INTO u VALUES (1)",
    "CREATE TRIGGER tr AFTER INSERT ON t BEGIN INSERT OR REPLACE INTO u VALUES (1); END",
    "CREATE EVENT e ON SCHEDULE EVERY 1 DAY DO DELETE FROM t",
    "CREATE PROCEDURE p() BEGIN IF 1 THEN SELECT 1; END IF; WHILE 0 DO SELECT 2; END WHILE; END",
    "CREATE PROCEDURE p() BEGIN DECLARE x INT; SET x = 1; SELECT x; END",
    "CREATE PROCEDURE p() BEGIN PREPARE s FROM 'DROP TABLE t'; EXECUTE s; END",
    "BEGIN NOT ATOMIC DELETE FROM t; END",
    "BEGIN NOT ATOMIC SELECT 1; END",
    "BEGIN NOT ATOMIC DECLARE x INT DEFAULT 1; IF x THEN REPLACE INTO t VALUES (1); END IF; END",
    "CREATE FUNCTION f() RETURNS int AS 'SELECT 1' LANGUAGE sql",
    "CREATE FUNCTION f() RETURNS void AS $$ DELETE FROM t $$ LANGUAGE sql",
    "CREATE FUNCTION f() RETURNS trigger AS $$ BEGIN DELETE FROM t; RETURN NEW; END $$ LANGUAGE plpgsql",
    "CREATE TRIGGER tr AFTER INSERT ON t FOR EACH ROW EXECUTE FUNCTION f()",
    "REPLACE INTO t VALUES (1)",
    "REPLACE t VALUES (1)",
    "UPDATE OR REPLACE t SET a = 1",
    "UPDATE OR IGNORE t SET a=1",
    "FLUSH TABLES",
    "LOCK TABLES t READ",
    "UNLOCK TABLES",
    "KILL 42",
    "SET x = 1",
    "call mom",
    "Set the table for dinner",
    "grant access to bob",
    "flush the cache",
    "kill the process",
    "ALTER TABLE t ENGINE=BLACKHOLE",
    "ALTER TABLE t DROP PARTITION p0",
    "ALTER EVENT e DO DELETE FROM t",
    "COPY t TO PROGRAM 'cat'",
    "WITH x AS (DELETE FROM t RETURNING *) SELECT * FROM x",
]


def texts():
    import bench_text_to_sql as b
    from sql_corpus import CORPUS

    out = [c.sql for c in CORPUS]
    out += b._generic_queries(random.Random(0))
    for d in ("postgres", "mysql", "sqlite"):
        out += b._dialect_queries(d)
    for name in (
        "test_sql_effects.py",
        "test_sql_policy.py",
        "test_adversarial_sql.py",
        "test_default_deny_sqlite.py",
        "test_sql_world.py",
        "test_adversarial_arguments.py",
    ):
        tree = ast.parse((ROOT / "tests" / name).read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and 2 < len(node.value) < 20000:
                if any(ch.isalpha() for ch in node.value):
                    out.append(node.value)
    out += EXTRAS
    return list(dict.fromkeys(out))


def record(analysis):
    return {
        "error": analysis.error,
        "unverifiable": analysis.unverifiable,
        "statements": [
            [
                s.text,
                sorted(s.kinds),
                sorted(s.because),
                [[u.category, u.name, u.construct] for u in s.unknown],
                list(s.writes),
            ]
            for s in analysis.statements
        ],
    }


def main():
    if sys.argv[1] == "--compare":
        a, b = (json.loads(Path(p).read_text()) for p in sys.argv[2:4])
        keys = sorted(set(a) | set(b))
        diff = [k for k in keys if a.get(k) != b.get(k)]
        print(f"{len(keys)} (text, dialect) pairs compared; {len(diff)} differ")
        for k in diff[:50]:
            print("---", k[:200])
            print("  before:", json.dumps(a.get(k))[:400])
            print("  after: ", json.dumps(b.get(k))[:400])
        return
    from agentlightning.contrib.kernel.agentos.sql.policy import analyze_sql

    result = {}
    all_texts = texts()
    for text in all_texts:
        for d in DIALECTS:
            try:
                result[json.dumps([text, d])] = record(analyze_sql(text, d))
            except Exception as err:  # noqa: BLE001
                result[json.dumps([text, d])] = {"raised": f"{type(err).__name__}: {err}"}
    Path(sys.argv[1]).write_text(json.dumps(result))
    print(f"{len(all_texts)} texts x {len(DIALECTS)} dialects = {len(result)} analyses written to {sys.argv[1]}")


if __name__ == "__main__":
    main()
