"""The effects table as data: one test per (row, reader), the docs table generated from the rows,
and the opt-ins that place an ``unknown`` construct.

Each example names the effect row it must land in and the reader that reads it: ``sqlglot``
(a parsed node), ``command`` (a statement read by its first word) or ``pglast`` (PostgreSQL's
parse tree, ``dialect="postgres"``). A known row's example has that row's kinds and nothing
unknown; an ``unknown`` example has an unknown construct, whose reason names the opt-in.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agentlightning.contrib.kernel.agentos import SQLPolicy
from agentlightning.contrib.kernel.agentos.sql import analyze_sql, rules
from agentlightning.contrib.kernel.agentos.sql.effects import EFFECT_BY_NAME, EFFECTS, effects_table

DIALECT = {"sqlglot": "sqlite", "command": "mysql", "pglast": "postgres"}

#: (effect row, reader, dialect or None for the reader's default, SQL)
EXAMPLES = [
    ("read", "sqlglot", None, "SELECT a, count(*) FROM t GROUP BY a"),
    ("read", "pglast", None, "SELECT a FROM t UNION SELECT b FROM u"),
    ("read", "command", None, "TABLE t"),
    ("select into", "sqlglot", "postgres_sqlglot", "SELECT * INTO t2 FROM t"),
    ("select into", "pglast", None, "SELECT * INTO t2 FROM t"),
    ("insert rows", "sqlglot", None, "INSERT OR IGNORE INTO t VALUES (1)"),
    ("insert rows", "sqlglot", "mysql", "INSERT IGNORE INTO t VALUES (1)"),
    ("insert rows", "pglast", None, "INSERT INTO t VALUES (1)"),
    ("replace rows", "sqlglot", None, "INSERT OR REPLACE INTO t VALUES (1)"),
    ("replace rows", "command", None, "REPLACE INTO t VALUES (1)"),
    ("replace rows", "command", None, "LOAD DATA INFILE 'f.csv' REPLACE INTO TABLE t"),
    ("replace rows", "sqlglot", None, "CREATE TRIGGER tr AFTER INSERT ON t BEGIN UPDATE OR REPLACE u SET a = 1; END"),
    ("replace rows", "command", None, "CREATE TRIGGER tr AFTER INSERT ON t FOR EACH ROW REPLACE INTO u VALUES (1)"),
    ("upsert", "sqlglot", None, "INSERT INTO t VALUES (1) ON CONFLICT (a) DO UPDATE SET b = 2"),
    ("upsert", "sqlglot", "mysql", "INSERT INTO t VALUES (1) ON DUPLICATE KEY UPDATE b = 2"),
    ("upsert", "pglast", None, "INSERT INTO t VALUES (1) ON CONFLICT (a) DO UPDATE SET b = 2"),
    ("update rows", "sqlglot", None, "UPDATE OR FAIL t SET a = 1"),
    ("update rows", "pglast", None, "UPDATE t SET a = 1"),
    ("delete rows", "sqlglot", None, "DELETE FROM t WHERE a = 1"),
    ("delete rows", "pglast", None, "DELETE FROM t"),
    ("schema table write", "sqlglot", None, "UPDATE sqlite_master SET sql = 'x'"),
    ("merge", "sqlglot", "postgres_sqlglot", "MERGE INTO t USING u ON t.a = u.a WHEN MATCHED THEN DELETE"),
    ("merge", "pglast", None, "MERGE INTO t USING u ON t.a = u.a WHEN MATCHED THEN DELETE"),
    ("truncate", "sqlglot", "mysql", "TRUNCATE TABLE t"),
    ("truncate", "pglast", None, "TRUNCATE t"),
    ("load rows", "sqlglot", "postgres_sqlglot", "COPY t FROM '/tmp/f.csv'"),
    ("load rows", "pglast", None, "COPY t FROM STDIN"),
    ("load rows", "command", None, "LOAD DATA LOCAL INFILE 'f.csv' INTO TABLE t"),
    ("export rows", "sqlglot", "postgres_sqlglot", "COPY t TO STDOUT"),
    ("export rows", "pglast", None, "COPY t TO STDOUT"),
    ("drop object", "sqlglot", None, "DROP TABLE t"),
    ("drop object", "pglast", None, "DROP OWNED BY someone"),
    ("create object", "sqlglot", None, "CREATE TABLE t (a INT)"),
    ("create object", "pglast", None, "CREATE TEMP TABLE t (a INT) ON COMMIT DROP"),
    ("replace object", "sqlglot", "mysql", "CREATE OR REPLACE DATABASE d"),
    ("replace object", "sqlglot", "mysql", "CREATE OR REPLACE TABLE t (a INT)"),
    ("redefine object", "sqlglot", "mysql", "CREATE OR REPLACE VIEW v AS SELECT 1"),
    ("redefine object", "pglast", None, "CREATE OR REPLACE VIEW v AS SELECT 1"),
    ("alter object", "sqlglot", "postgres_sqlglot", "ALTER TABLE t ALTER COLUMN c DROP NOT NULL"),
    ("alter object", "pglast", None, "ALTER TABLE t ALTER COLUMN c DROP NOT NULL"),
    ("alter object", "pglast", None, "REASSIGN OWNED BY a TO b"),
    ("alter object", "command", None, "RENAME TABLE a TO b"),
    ("alter object", "command", None, "ALTER TABLE t ADD PARTITION (PARTITION p3 VALUES LESS THAN (30))"),
    ("alter dropping a part", "sqlglot", None, "ALTER TABLE t DROP COLUMN c"),
    ("alter dropping a part", "pglast", None, "ALTER TABLE t DROP CONSTRAINT k"),
    ("alter dropping a part", "command", None, "ALTER TABLE t DROP PARTITION p1"),
    ("alter truncating a part", "command", None, "ALTER TABLE t TRUNCATE PARTITION p1"),
    ("alter deleting duplicates", "command", None, "ALTER IGNORE TABLE t ADD UNIQUE (a)"),
    ("privileges", "sqlglot", "mysql", "GRANT DELETE ON t TO u"),
    ("privileges", "sqlglot", "mysql", "REVOKE DROP ON t FROM u"),
    ("privileges", "pglast", None, "GRANT DELETE ON t TO u"),
    ("attach database", "sqlglot", None, "ATTACH DATABASE 'x.db' AS x"),
    ("describe", "sqlglot", "mysql", "SHOW TABLES"),
    ("describe", "pglast", None, "SHOW search_path"),
    ("describe", "pglast", None, "EXPLAIN DELETE FROM t"),
    ("describe", "command", None, "HANDLER t READ FIRST"),
    ("describe", "command", None, "DESCRIBE t"),
    ("run a statement", "pglast", None, "DO $$ BEGIN PERFORM 1; END $$"),
    ("run a statement", "pglast", None, "PREPARE q AS SELECT 1; EXECUTE q"),
    ("session settings", "sqlglot", "mysql", "SET @x = 1, autocommit = 0"),
    ("session settings", "sqlglot", "mysql", "SET sql_mode = 'STRICT_TRANS_TABLES'"),
    ("non-strict sql_mode", "sqlglot", "mysql", "SET sql_mode = 'NO_ENGINE_SUBSTITUTION'"),
    ("session settings", "pglast", None, "SET statement_timeout = '5s'"),
    ("session settings", "pglast", None, "DISCARD ALL"),
    ("session settings", "command", None, "USE shop"),
    ("session settings", "command", None, "RESET QUERY CACHE"),
    ("transaction control", "sqlglot", None, "BEGIN"),
    ("transaction control", "pglast", None, "SAVEPOINT s"),
    ("transaction control", "command", None, "START TRANSACTION"),
    ("locks", "pglast", None, "LOCK TABLE t IN SHARE MODE"),
    ("locks", "command", None, "LOCK TABLES t READ"),
    ("locks", "command", None, "UNLOCK TABLES"),
    ("maintenance", "command", "sqlite", "ANALYZE t"),
    ("maintenance", "pglast", None, "CHECKPOINT"),
    ("maintenance", "command", None, "FLUSH TABLES"),
    ("maintenance", "command", "sqlite", "REINDEX"),
    ("notifications", "pglast", None, "LISTEN jobs"),
    ("notifications", "command", "sqlite_generic", "NOTIFY jobs"),
    ("cursors and prepared statements", "pglast", None, "DECLARE c CURSOR FOR SELECT 1"),
    ("cursors and prepared statements", "command", None, "DEALLOCATE PREPARE s"),
    ("comment", "sqlglot", "postgres_sqlglot", "COMMENT ON TABLE t IS 'x'"),
    ("comment", "pglast", None, "COMMENT ON TABLE t IS 'x'"),
    ("pragma", "sqlglot", None, "PRAGMA foreign_keys = ON"),
    ("pragma", "sqlglot", None, "PRAGMA table_info(t)"),
    ("pure function", "sqlglot", None, "SELECT upper(a), substr(a, 1, 2), strftime('%Y', d), json_extract(j, '$.x')"),
    ("pure function", "pglast", None, "SELECT pg_catalog.lower(a), date_trunc('day', d), jsonb_build_object('a', 1)"),
    ("pure function", "sqlglot", "mysql", "SELECT NEXT VALUE FOR s, DATE_FORMAT(d, '%Y')"),
    ("unknown", "sqlglot", "mysql", "ALTER TABLE t ENGINE = BLACKHOLE"),
    ("unknown", "sqlglot", "mysql", "SET sql_mode = 'NO_BACKSLASH_ESCAPES'"),
    ("unknown", "sqlglot", None, "SELECT lo_unlink(42)"),
    ("unknown", "sqlglot", None, "PRAGMA writable_schema = ON"),
    ("unknown", "pglast", None, "SELECT lo_unlink(42)"),
    ("unknown", "pglast", None, "SELECT dblink_exec('conn', 'DELETE FROM ' || t)"),
    ("unknown", "pglast", None, "ALTER TABLE t DETACH PARTITION p"),
    ("unknown", "pglast", None, "SET standard_conforming_strings = off"),
    ("unknown", "pglast", None, "CALL archive_old_rows()"),
    ("unknown", "pglast", None, "DO $$ BEGIN PERFORM lo_unlink(1); END $$"),
    ("unknown", "pglast", None, "LOAD 'auto_explain'"),
    ("unknown", "command", None, "CALL archive_old_rows()"),
    ("unknown", "command", None, "KILL 42"),
    ("unknown", "command", None, "ALTER TABLE t EXCHANGE PARTITION p WITH TABLE t2"),
    ("unknown", "command", None, "ALTER TABLE t REMOVE PARTITIONING"),
    ("unknown", "command", None, "ALTER TABLE t CONVERT PARTITION p TO TABLE t2"),
    ("unknown", "command", None, "DO SLEEP(5)"),
]

_DIALECTS = {"postgres_sqlglot": "tsql", "sqlite_generic": None}


def _dialect(reader: str, dialect):
    if dialect is None:
        return DIALECT[reader]
    return _DIALECTS.get(dialect, dialect)


@pytest.mark.parametrize(
    "effect,reader,dialect,sql", EXAMPLES, ids=[f"{e}-{r}-{i}" for i, (e, r, _, _) in enumerate(EXAMPLES)]
)
def test_each_row_is_found_by_each_reader(effect, reader, dialect, sql):
    dialect = _dialect(reader, dialect)
    analysis = analyze_sql(sql, dialect)
    assert analysis.problem is None, analysis.problem
    row = EFFECT_BY_NAME[effect]
    if effect == "unknown":
        assert analysis.unknown, f"{sql!r} ({dialect}) should be unknown, read as {sorted(analysis.kinds)}"
        reason = analysis.unknown[0].reason()
        assert "allow_statements=" in reason or "allow_functions=" in reason
        assert SQLPolicy(deny=["DROP"], dialect=dialect).check_sql(sql), "unknown must block"
        return
    assert not analysis.unknown, [u.reason() for u in analysis.unknown]
    if row.group:
        assert analysis.kinds & row.kinds, (sorted(analysis.kinds), sorted(row.kinds))
    else:
        assert row.kinds <= analysis.kinds, (sorted(analysis.kinds), sorted(row.kinds))


def test_every_rule_has_an_example_for_each_reader_it_names():
    examples = {(e, r) for e, r, _, _ in EXAMPLES}
    missing = []
    for rule in rules.RULES:
        for reader, names in (("sqlglot", rule.sqlglot), ("command", rule.command), ("pglast", rule.pglast)):
            if names and (rule.effect, reader) not in examples:
                missing.append((rule.effect, reader))
    assert not missing, missing
    assert {e for e, _, _, _ in EXAMPLES} == {row.name for row in EFFECTS}


def test_docs_effects_table_is_generated_from_the_rows():
    docs = (Path(__file__).resolve().parents[1] / "docs" / "kernel.md").read_text(encoding="utf-8")
    assert effects_table() in docs, "docs/kernel.md's effects table differs: paste effects_table() there"


def test_opt_ins_place_exactly_what_they_name():
    call = "CALL archive_old_rows()"
    assert SQLPolicy(deny=["DROP"], dialect="postgres").check_sql(call)
    assert SQLPolicy(deny=["DROP"], dialect="postgres", allow_functions=["archive_old_rows"]).check_sql(call) == []
    assert SQLPolicy(deny=["DROP"], dialect="postgres", allow_functions=["other"]).check_sql(call)
    engine = "ALTER TABLE t ENGINE = InnoDB"
    reason = SQLPolicy(deny=["DROP"], dialect="mysql").check_sql(engine)[0].description
    assert "allow_statements=['ALTER ENGINE']" in reason
    assert SQLPolicy(deny=["DROP"], dialect="mysql", allow_statements=["alter  engine"]).check_sql(engine) == []
    # an opt-in places the construct; the deny list still applies to what it counts as
    assert SQLPolicy(deny=["ALTER"], dialect="mysql", allow_statements=["ALTER ENGINE"]).check_sql(engine)
    with pytest.raises(TypeError):
        SQLPolicy(allow_functions="lo_unlink")


def test_comment_only_text_runs_nothing_on_the_named_database():
    for dialect in ("postgres", "sqlite", "mysql"):
        assert SQLPolicy(deny=["DROP"], dialect=dialect).check_sql("-- nothing here\n/* at all */") == []
    assert SQLPolicy(deny=["DROP"], dialect="postgres").check_sql("/*!50000 DROP TABLE t */") == []
    assert SQLPolicy(deny=["DROP"], dialect="mysql").check_sql("/*!50000 DROP TABLE t */")
    assert SQLPolicy(deny=["DROP"], dialect="mysql").check_sql("/*!99999 DROP TABLE t */") == []
    assert SQLPolicy(deny=["DROP"]).check_sql("-- only a comment"), "no dialect: empty text is still refused"
