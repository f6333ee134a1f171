"""The SQL guard's function knowledge comes from the engines.

* The checked-in tables (``sql/catalog/*.json``) are what the engines say now: each is generated
  again here from the real server (PostgreSQL's ``pg_proc``, Python's SQLite, MariaDB's help
  tables and ``PREPARE``) and must be the same. ``.ci/run`` starts the servers; without them the
  server tests skip (fail in CI), saying how to start them.
* What the engines declare free of effects is allowed; what they do not stays unknown unless
  curated with a reason, and every destructive built-in stays blocked.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict

import pytest

from agentlightning.contrib.kernel.agentos.sql import SQLPolicy, catalog, functions
from agentlightning.contrib.kernel.agentos.sql.catalog import generate

from .sql_schema_servers import server

DENY = ["DROP", "DELETE", "TRUNCATE"]
ROOT = Path(__file__).resolve().parents[1]
REGENERATE = (
    "python -m agentlightning.contrib.kernel.agentos.sql.catalog.generate "
    '--postgres "$AGENTOS_TEST_POSTGRES_DSN" --mariadb-socket "$AGENTOS_TEST_MARIADB_SOCKET"'
)


def _differences(checked_in: Dict[str, Any], live: Dict[str, Any]) -> str:
    old, new = checked_in["functions"], live["functions"]
    changed = sorted(n for n in set(old) | set(new) if old.get(n) != new.get(n))
    head = {k: v for k, v in checked_in.items() if k not in ("functions", "version")}
    live_head = {k: v for k, v in live.items() if k not in ("functions", "version")}
    heads = [k for k in head if head[k] != live_head.get(k)]
    return f"{len(changed)} names differ ({', '.join(changed[:20])}{', ...' if len(changed) > 20 else ''})" + (
        f"; fields differ: {heads}" if heads else ""
    )


def _assert_same(dialect: str, live: Dict[str, Any]) -> None:
    checked_in = json.loads((generate.CATALOG_DIR / f"{dialect}.json").read_text(encoding="utf-8"))
    same = {k: v for k, v in checked_in.items() if k != "version"} == {k: v for k, v in live.items() if k != "version"}
    assert same, (
        f"sql/catalog/{dialect}.json ({checked_in['engine']} {checked_in['version']}) differs from what "
        f"{live['engine']} {live['version']} says: {_differences(checked_in, live)}. If the engine was upgraded on "
        f"purpose, regenerate the tables (source .ci/services.sh first): {REGENERATE}"
    )


def test_the_postgres_table_is_what_pg_proc_says_now():
    dsn, psycopg = server("AGENTOS_TEST_POSTGRES_DSN", "psycopg", "PostgreSQL", "the function table check")
    with psycopg.connect(dsn, autocommit=True) as conn:
        _assert_same("postgres", generate.postgres_table(conn))


def test_the_mariadb_table_is_what_the_server_says_now():
    socket, pymysql = server("AGENTOS_TEST_MARIADB_SOCKET", "pymysql", "MariaDB", "the function table check")
    conn = pymysql.connect(unix_socket=socket, user="root", autocommit=True)
    try:
        _assert_same("mariadb", generate.mariadb_table(conn))
    finally:
        conn.close()


def test_the_sqlite_table_is_what_python_sqlite_says_now():
    _assert_same("sqlite", generate.sqlite_table())


def test_the_generated_files_are_rendered_as_the_generator_writes_them():
    for dialect in catalog.ENGINE_TABLES:
        text = (generate.CATALOG_DIR / f"{dialect}.json").read_text(encoding="utf-8")
        assert generate.render(json.loads(text)) == text, f"{dialect}.json was edited by hand; regenerate it"


def test_a_mariadb_connection_with_a_default_database_is_refused():
    class Cursor:
        def execute(self, query: str) -> None:
            self.query = query

        def fetchone(self):
            return ("10.11.19-MariaDB", "shop")

    class Connection:
        def cursor(self) -> Cursor:
            return Cursor()

    with pytest.raises(ValueError, match="connect without one"):
        generate.mariadb_table(Connection())


# --------------------------------------------------------------------------- what the knowledge allows


@pytest.mark.parametrize(
    "query",
    [
        "SELECT numrange(1, 5) @> 3",
        "SELECT * FROM jsonb_populate_record(NULL::record, '{\"a\": 1}') AS x(a int)",
        "SELECT to_tsvector('english', 'fat cats') @@ websearch_to_tsquery('english', 'cat')",
        "SELECT timezone('UTC', now())",
        "SELECT jsonb_path_query_array('{\"a\": [1, 2]}', '$.a[*]')",
        "SELECT array_to_json(ARRAY[1, 2])",
        "SELECT generate_subscripts(ARRAY[1, 2], 1)",
        "SELECT pg_get_constraintdef(oid) FROM pg_constraint",
        "SELECT 'abc' SIMILAR TO 'a%'",
        "SELECT 'a_c' LIKE 'a$_c' ESCAPE '$'",
        "SELECT now() AT TIME ZONE 'UTC'",
    ],
)
def test_postgres_builtins_pg_proc_declares_immutable_or_stable_are_allowed(query):
    assert SQLPolicy(deny=DENY, dialect="postgres").check_sql(query) == []


@pytest.mark.parametrize(
    "query",
    [
        "SELECT lo_unlink(16384)",
        "SELECT pg_sleep(10)",
        "SELECT setval('s', 1)",
        "SELECT pg_advisory_lock(1)",
        "SELECT pg_read_file('/etc/passwd')",
        "SELECT pg_terminate_backend(42)",
        "SELECT query_to_xml('DELETE FROM t RETURNING *', true, true, '')",
        "SELECT * FROM ts_stat('SELECT v FROM t')",
        "SELECT ts_rewrite('a'::tsquery, 'SELECT t, s FROM aliases')",
        "SELECT dblink_exec('dbname=x', 'DELETE FROM t')",
        "SELECT pg_catalog.set_config('search_path', 'evil', false)",
        "SELECT public.lower('x')",
    ],
)
def test_postgres_volatile_builtins_and_user_routines_stay_unknown(query):
    blocked = SQLPolicy(deny=DENY, dialect="postgres").check_sql(query)
    assert blocked and "unknown effect" in blocked[0].description


def test_sqlite_fts5_auxiliary_functions_are_allowed_and_risky_ones_are_not():
    sqlite = SQLPolicy(deny=DENY, dialect="sqlite")
    query = "SELECT snippet(ft, 0, '[', ']', '...', 5), highlight(ft, 0, '[', ']'), bm25(ft) FROM ft WHERE ft MATCH 'x'"
    assert sqlite.check_sql(query) == []
    risky_calls = (
        "SELECT load_extension('/tmp/evil.so')",
        "SELECT fts3_tokenizer('simple', x'00')",
        "SELECT * FROM pragma_optimize()",
    )
    for risky in risky_calls:
        blocked = sqlite.check_sql(risky)
        assert blocked and "unknown effect" in blocked[0].description, risky


@pytest.mark.parametrize("dialect", ["mysql", "mariadb"])
def test_mariadb_everyday_builtins_are_allowed_and_locks_waits_and_files_are_not(dialect):
    policy = SQLPolicy(deny=DENY, dialect=dialect)
    assert policy.check_sql("SELECT FORMAT(1234.5, 2), CONNECTION_ID(), INET_ATON('10.0.0.1')") == []
    for risky in (
        "SELECT SLEEP(10)",
        "SELECT GET_LOCK('x', 10)",
        "SELECT BENCHMARK(100000000, MD5('x'))",
        "SELECT LOAD_FILE('/etc/passwd')",
        "SELECT MASTER_POS_WAIT('log', 4)",
    ):
        blocked = policy.check_sql(risky)
        assert blocked and "unknown effect" in blocked[0].description, risky


def test_every_curated_entry_has_a_reason_and_names_a_builtin_of_its_engine():
    tables = {"postgres": catalog.table("postgres"), "sqlite": catalog.table("sqlite")}
    tables["mariadb"] = catalog.table("mariadb")
    modules = set(tables["sqlite"]["modules"])
    for curated in (functions.HARMLESS_VOLATILE, functions.UNSAFE_BUILTINS):
        for dialect, entries in curated.items():
            engine = tables.get("mariadb" if dialect == "mysql" else dialect)
            for name, reason in entries.items():
                assert reason.strip(), f"{dialect} {name}: a curated entry needs its reason"
                if dialect == "mysql" and reason.startswith("MySQL"):
                    continue  # MySQL-only, from MySQL's manual
                pragma = name.startswith("pragma_") and name[7:] in engine.get("pragmas", ())
                known_to_engine = name in engine["functions"] or name in modules or pragma or name == "raise"
                assert known_to_engine, f"{dialect} {name} is curated but the engine has no such built-in"


def test_the_docs_knowledge_table_is_generated_from_the_tables():
    docs = (ROOT / "docs" / "kernel.md").read_text(encoding="utf-8")
    assert functions.knowledge_table() in docs, "docs/kernel.md's knowledge table differs: paste knowledge_table()"


# --------------------------------------------------------------------------- no dialect named

#: The engines the guard has generated tables for: with no dialect, the text may run on any.
ENGINES = ("postgres", "sqlite", "mariadb")


def test_with_no_dialect_a_function_is_known_only_when_every_engine_declares_it():
    every = frozenset.intersection(*(functions.KNOWN_FUNCTIONS[e] for e in ENGINES))
    assert functions.KNOWN_FUNCTIONS[None] == every
    assert {"lower", "replace", "round", "substr", "count"} <= functions.KNOWN_FUNCTIONS[None]


@pytest.mark.parametrize(
    "query, declared_by, dialect",
    [
        ("SELECT websearch_to_tsquery('english', 'cat')", "postgres", "postgres"),
        ("SELECT julianday(d) FROM t", "sqlite", "sqlite"),
        ("SELECT date_format(d, '%Y') FROM t", "mariadb", "mariadb"),
        ("SELECT quote(name) FROM t", "sqlite and mariadb", "sqlite"),
        ("SELECT json_array_length('[1, 2]')", "postgres and sqlite", "postgres"),
    ],
)
def test_with_no_dialect_a_function_only_some_engines_declare_is_unknown_naming_them(query, declared_by, dialect):
    blocked = SQLPolicy(deny=DENY).check_sql(query)
    assert blocked and "unknown effect" in blocked[0].description, query
    reason = blocked[0].description
    assert f"declared a safe built-in by {declared_by} only" in reason, reason
    assert f'SQLPolicy(dialect="{dialect}")' in reason, reason
    assert SQLPolicy(deny=DENY, dialect=dialect).check_sql(query) == []


def test_with_no_dialect_functions_every_engine_declares_stay_allowed():
    query = "SELECT lower(name), replace(name, 'a', 'b'), round(price, 2), substr(name, 1, 3), count(*) FROM t"
    assert SQLPolicy(deny=DENY).check_sql(query) == []
    assert SQLPolicy(deny=DENY).check_sql("SELECT sleep(10)")  # declared by no engine: unknown as before
