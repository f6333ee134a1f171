"""Build each dialect's table of built-in functions from the engine itself.

The guard's knowledge of a database's functions is what that database says about them, read by
this script and checked in beside it (``postgres.json``, ``sqlite.json``, ``mariadb.json``, each
with the engine's version). Regenerate after upgrading an engine::

    source .ci/services.sh   # PostgreSQL 15 and MariaDB 10.11 on this machine, their variables
    python -m agentlightning.contrib.kernel.agentos.sql.catalog.generate \\
        --postgres "$AGENTOS_TEST_POSTGRES_DSN" --mariadb-socket "$AGENTOS_TEST_MARIADB_SOCKET"

and ``tests/test_sql_catalog.py`` (run by ``.ci/run``, which starts the servers) regenerates the
tables against the live servers and fails when they differ from the checked-in files.

What each engine says:

* **PostgreSQL** -- ``pg_proc``: every function of ``pg_catalog`` with its volatility
  (``provolatile``: ``i`` immutable, ``s`` stable, ``v`` volatile), kind (``f`` function, ``a``
  aggregate, ``w`` window, ``p`` procedure), whether it returns a set, and its argument types.
  By PostgreSQL's own contract an IMMUTABLE or STABLE function cannot modify the database.
* **SQLite** -- ``PRAGMA function_list`` (the SQLite of Python's ``sqlite3``): every function
  with its type (scalar, aggregate, window), number of arguments and flags
  (``deterministic``, ``directonly``: not for use in triggers and views, the mark SQLite puts on
  functions with side effects or security risk, ``innocuous``: no side effects, and does not
  depend on anything but its arguments); ``PRAGMA module_list`` (the table-valued functions and
  virtual tables) and ``PRAGMA pragma_list``.
* **MariaDB** -- the server's help tables (``mysql.help_topic``, loaded from the reference
  manual): every function named on a topic's syntax line, with its help category and the
  manual's section (from the topic's URL); and whether this server has it, asked by
  ``PREPARE`` (which resolves a call without running it): ``native`` (the server's own function),
  ``syntax`` (a construct of the grammar, such as ``VALUES(col)``, that a plain ``SELECT`` does not
  take), or ``absent`` (this server has no such built-in: the help describes a later version).
  MariaDB declares no volatility for built-ins, so which sections only compute a value is the
  manual's word, kept as data in :mod:`..functions`.
"""

from __future__ import annotations

import argparse
import json
import re
import sqlite3
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional

__all__ = [
    "CATALOG_DIR",
    "postgres_table",
    "sqlite_table",
    "mariadb_table",
    "render",
    "write_tables",
]

#: Where the generated tables live (beside this script).
CATALOG_DIR = Path(__file__).resolve().parent

_REGENERATE = "python -m agentlightning.contrib.kernel.agentos.sql.catalog.generate"

# --------------------------------------------------------------------------- PostgreSQL

_PG_VERSION = "SELECT pg_catalog.current_setting('server_version'), pg_catalog.current_setting('server_version_num')"
_PG_FUNCTIONS = """
SELECT p.proname, p.provolatile, p.prokind, p.proretset, pg_catalog.pg_get_function_identity_arguments(p.oid)
FROM pg_catalog.pg_proc p
WHERE p.pronamespace = 'pg_catalog'::regnamespace
"""
#: Base, range and multirange types of ``pg_catalog``: ``regrole('x')`` calls no function of that
#: name, PostgreSQL reads it as a cast to the type (through the type's input function).
_PG_TYPES = """
SELECT t.typname FROM pg_catalog.pg_type t
WHERE t.typnamespace = 'pg_catalog'::regnamespace AND t.typtype IN ('b', 'r', 'm')
"""


def postgres_table(connection: Any) -> Dict[str, Any]:
    """The functions of ``pg_catalog`` as the server declares them (a DB-API connection to it).

    Each name maps to its overloads, ``[volatility, kind, returns a set, argument types]``,
    sorted so that the same server always gives the same table."""
    cursor = connection.cursor()
    cursor.execute(_PG_VERSION)
    version, version_num = cursor.fetchone()
    cursor.execute(_PG_FUNCTIONS)
    functions: Dict[str, List[List[Any]]] = {}
    for name, volatility, kind, retset, arguments in cursor.fetchall():
        functions.setdefault(str(name), []).append([str(volatility), str(kind), bool(retset), str(arguments)])
    for overloads in functions.values():
        overloads.sort(key=lambda o: (o[3], o[1], o[0], o[2]))
    cursor.execute(_PG_TYPES)
    types = sorted(str(row[0]) for row in cursor.fetchall())
    return {
        "engine": "PostgreSQL",
        "version": str(version).split()[0],
        "major": str(int(version_num) // 10000),
        "source": "pg_catalog.pg_proc: [provolatile, prokind, proretset, identity arguments] per overload; "
        "pg_catalog.pg_type: base, range and multirange types",
        "types": types,
        "functions": dict(sorted(functions.items())),
    }


# --------------------------------------------------------------------------- SQLite

#: ``PRAGMA function_list``'s flag bits (sqlite3.h), by the word the table uses.
_SQLITE_FLAGS = {
    "deterministic": 0x000000800,  # SQLITE_DETERMINISTIC
    "directonly": 0x000080000,  # SQLITE_DIRECTONLY
    "subtype": 0x000100000,  # SQLITE_SUBTYPE
    "innocuous": 0x000200000,  # SQLITE_INNOCUOUS
}


def sqlite_table(connection: Optional[sqlite3.Connection] = None) -> Dict[str, Any]:
    """The built-in functions, table-valued functions and pragmas of an SQLite connection (by
    default a new in-memory database of Python's ``sqlite3``)."""
    own = connection is None
    conn = sqlite3.connect(":memory:") if connection is None else connection
    try:
        version = conn.execute("SELECT sqlite_version()").fetchone()[0]
        functions: Dict[str, List[List[Any]]] = {}
        rows = conn.execute("SELECT name, builtin, type, narg, flags FROM pragma_function_list").fetchall()
        for name, builtin, kind, narg, flags in rows:
            words = [word for word, bit in _SQLITE_FLAGS.items() if int(flags) & bit]
            # builtin: SQLite's core; the others are its compiled-in extensions' (FTS3/4/5, R*Tree)
            entry = [str(kind), int(narg), words, "core" if builtin else "extension"]
            if entry not in functions.setdefault(str(name), []):  # one row per text encoding
                functions[str(name)].append(entry)
        for overloads in functions.values():
            overloads.sort(key=lambda o: (o[0], o[1]))
        modules = sorted(str(r[0]) for r in conn.execute("SELECT name FROM pragma_module_list"))
        pragmas = sorted(str(r[0]) for r in conn.execute("SELECT name FROM pragma_pragma_list"))
    finally:
        if own:
            conn.close()
    return {
        "engine": "SQLite",
        "version": str(version),
        "major": str(version).rsplit(".", 1)[0],
        "source": "PRAGMA function_list: [type, narg, flags, core or extension]; PRAGMA module_list, pragma_list",
        "functions": dict(sorted(functions.items())),
        "modules": modules,
        "pragmas": pragmas,
    }


# --------------------------------------------------------------------------- MariaDB

_MARIADB_TOPICS = """
SELECT t.name, c.name, t.description, t.url
FROM mysql.help_topic t JOIN mysql.help_category c ON c.help_category_id = t.help_category_id
ORDER BY t.help_topic_id
"""
#: A call in a topic's "Syntax" section: ``NAME(`` or ``NAME (``.
_SYNTAX_CALL = re.compile(r"\b([A-Za-z_][A-Za-z0-9_]*) ?\(")
#: A topic named after its function (``HOUR``, ``FORMAT``, ``REPLACE Function``, ``JSON\_SEARCH``).
_TOPIC_NAME = re.compile(r"\A([A-Za-z_][A-Za-z0-9_]*)(?: Function)?\Z")
_SYNTAX_SECTION = re.compile(r"\ASyntax\s*\n-+\s*\n(.*?)(?:\n\S[^\n]*\n-+\s*\n|\Z)", re.DOTALL)
#: ``PREPARE`` errors that mean "no such built-in here": the call is taken for a stored function.
_MARIADB_ABSENT = {1305, 1046}
_MARIADB_SYNTAX = 1064
_PROBE_ARGUMENTS = ("", "1", "1, 1", "1, 1, 1")


#: Which topic describes a name that several topics carry (``REPLACE`` the statement and
#: ``REPLACE Function``): a topic titled "... Function", then one in the manual's function or
#: operator sections, then any other topic titled with the name, then a mention in a syntax line.
_MENTIONED = 3


def _topic_rank(topic: str, manual: str) -> int:
    if topic.endswith(" Function"):
        return 0
    if manual.startswith(("sql-functions/", "sql-structure/operators/")):
        return 1
    return 2


def _manual_section(url: str) -> str:
    """The manual's section of a topic: its URL's path below ``/reference/``, without the page."""
    path = url.split("/reference/", 1)[-1].strip().strip("/")
    return path.rsplit("/", 1)[0] if "/" in path else path


def _mariadb_probe(cursor: Any, name: str) -> str:
    """Whether this server has ``name`` as a built-in, asked by ``PREPARE`` (never executed) with
    no to three arguments: ``native`` when some call resolves to the server's own function (or
    fails for a reason other than its name: an argument count or type), ``absent`` when the
    server takes it for a stored function, ``syntax`` when no such call parses."""
    found = "syntax"
    for arguments in _PROBE_ARGUMENTS:
        try:
            cursor.execute(f"PREPARE agentos_probe FROM 'SELECT {name}({arguments})'")
        except Exception as err:  # noqa: BLE001 - the driver's error class; its code decides
            code = err.args[0] if err.args and isinstance(err.args[0], int) else None
            if code in _MARIADB_ABSENT:
                found = "absent"
                continue
            if code == _MARIADB_SYNTAX:
                continue
            return "native"
        cursor.execute("DEALLOCATE PREPARE agentos_probe")
        return "native"
    return found


def mariadb_table(connection: Any) -> Dict[str, Any]:
    """The built-in functions the server's help tables name, with their category, manual section
    and whether this server has them (a DB-API connection with no default database, so that a
    name the server does not have as a built-in is never a stored function of some database)."""
    cursor = connection.cursor()
    cursor.execute("SELECT VERSION(), DATABASE()")
    version, database = cursor.fetchone()
    if database is not None:
        raise ValueError(
            f"the MariaDB connection has a default database ({database!r}); connect without one, so that a "
            "name that is not a built-in cannot resolve to a stored function"
        )
    cursor.execute(_MARIADB_TOPICS)
    named: Dict[str, Dict[str, str]] = {}
    ranks: Dict[str, int] = {}
    for topic, category, description, url in cursor.fetchall():
        entry = {"category": str(category), "manual": _manual_section(str(url))}
        title = _TOPIC_NAME.match(str(topic).replace("\\_", "_"))
        if title is not None:
            rank = _topic_rank(str(topic), entry["manual"])
            name = title.group(1).lower()
            if rank < ranks.get(name, _MENTIONED):
                named[name], ranks[name] = entry, rank
        section = _SYNTAX_SECTION.match(str(description).replace("\r\n", "\n"))
        for name in _SYNTAX_CALL.findall(section.group(1) if section else ""):
            if name.lower() not in named:
                named[name.lower()], ranks[name.lower()] = entry, _MENTIONED
    functions = {}
    for name in sorted(named):
        functions[name] = dict(named[name], server=_mariadb_probe(cursor, name))
    major = ".".join(str(version).split("-")[0].split(".")[:2])
    return {
        "engine": "MariaDB",
        "version": str(version).split("-")[0],
        "major": major,
        "source": "mysql.help_topic syntax lines: help category, manual section (the topic's URL), "
        "and PREPARE 'SELECT name(...)' on this server: native, syntax or absent",
        "functions": functions,
    }


# --------------------------------------------------------------------------- files


def render(table: Dict[str, Any]) -> str:
    """A table as the checked-in JSON text: one function a line, so a change reads as a diff."""
    lines = ["{"]
    head = [(key, value) for key, value in table.items() if key != "functions"]
    for key, value in head:
        lines.append(f"  {json.dumps(key)}: {json.dumps(value, ensure_ascii=False)},")
    lines.append('  "functions": {')
    items = list(table["functions"].items())
    for i, (name, value) in enumerate(items):
        comma = "," if i + 1 < len(items) else ""
        lines.append(f"    {json.dumps(name)}: {json.dumps(value, separators=(',', ':'), ensure_ascii=False)}{comma}")
    lines.append("  }")
    lines.append("}")
    return "\n".join(lines) + "\n"


def write_tables(tables: Dict[str, Dict[str, Any]], directory: Path = CATALOG_DIR) -> List[Path]:
    """Write each dialect's table as ``<dialect>.json`` in ``directory``."""
    written = []
    for dialect, table in tables.items():
        path = directory / f"{dialect}.json"
        path.write_text(render(table), encoding="utf-8")
        written.append(path)
    return written


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], prog=_REGENERATE)
    parser.add_argument("--postgres", metavar="DSN", help="psycopg conninfo of a PostgreSQL server")
    parser.add_argument("--mariadb-socket", metavar="PATH", help="unix socket of a MariaDB server (user root)")
    parser.add_argument("--mariadb-user", default="root")
    parser.add_argument("--no-sqlite", action="store_true", help="leave sqlite.json as it is")
    parser.add_argument("--out", type=Path, default=CATALOG_DIR, help="directory to write to (default: beside this)")
    args = parser.parse_args(argv)
    tables: Dict[str, Dict[str, Any]] = {}
    if args.postgres:
        import psycopg

        with psycopg.connect(args.postgres, autocommit=True) as conn:
            tables["postgres"] = postgres_table(conn)
    if args.mariadb_socket:
        import pymysql

        conn = pymysql.connect(unix_socket=args.mariadb_socket, user=args.mariadb_user, autocommit=True)
        try:
            tables["mariadb"] = mariadb_table(conn)
        finally:
            conn.close()
    if not args.no_sqlite:
        tables["sqlite"] = sqlite_table()
    for path in write_tables(tables, args.out):
        table = tables[path.stem]
        print(f"{path}: {table['engine']} {table['version']}, {len(table['functions'])} functions")
    return 0


if __name__ == "__main__":
    sys.exit(main())
