"""Real database servers for the schema-aware tests: a database of its own per test.

The servers are the ones ``.ci/services.sh`` starts (``AGENTOS_TEST_POSTGRES_DSN``,
``AGENTOS_TEST_MARIADB_SOCKET``). Without them a test skips, saying how to start them; in CI
(``CI=true``) it fails instead, since a skip there would hide that nothing was checked.
"""

from __future__ import annotations

import importlib
import os
import re
import uuid
from contextlib import contextmanager
from typing import Any, Iterator, Tuple

import pytest


def server(variable: str, module: str, what: str, checks: str = "the schema-aware tests") -> Tuple[str, Any]:
    """The value of ``variable`` and the imported driver ``module``, for a test that runs on a real
    server. In CI (``CI=true``) a missing variable or driver is a failure: ``.ci/run`` sources
    ``.ci/services.sh``, which starts the servers and exports the variables, so a skip there would
    hide that ``checks`` did not run. Elsewhere it is a skip that says what to set."""
    value = os.environ.get(variable, "")
    problem = "" if value else f"{variable} is not set"
    driver = None
    if not problem:
        try:
            driver = importlib.import_module(module)
        except ImportError as err:
            problem = f"the {module} driver is not installed ({err}; it is in the dev extra)"
    if not problem:
        return value, driver
    if os.environ.get("CI", "").strip().lower() in ("true", "1", "yes"):
        pytest.fail(
            f"{problem}, so {checks} cannot run in CI. Run `source .ci/services.sh` "
            f"(as root) before the tests: it installs and starts {what} and exports {variable}.",
            pytrace=False,
        )
    pytest.skip(f"{problem}: `source .ci/services.sh` (as root) starts {what} and sets it, to run {checks}")


@contextmanager
def postgres_database() -> Iterator[Tuple[str, Any]]:
    """A fresh PostgreSQL database (its conninfo, and psycopg), dropped afterwards."""
    dsn, psycopg = server("AGENTOS_TEST_POSTGRES_DSN", "psycopg", "PostgreSQL")
    name = f"agentos_schema_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(dsn, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")
    try:
        yield re.sub(r"dbname=\S+", f"dbname={name}", dsn), psycopg
    finally:
        with psycopg.connect(dsn, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


@contextmanager
def mariadb_database() -> Iterator[Tuple[str, Any, str]]:
    """A fresh MariaDB database (its socket, pymysql, and its name, also the suffix of the
    test's table names: the guard reads every schema, so names are kept apart), dropped after."""
    socket, pymysql = server("AGENTOS_TEST_MARIADB_SOCKET", "pymysql", "MariaDB")
    suffix = uuid.uuid4().hex[:10]
    name = f"agentos_schema_{suffix}"
    admin = pymysql.connect(unix_socket=socket, user="root", autocommit=True)
    try:
        with admin.cursor() as cursor:
            cursor.execute(f"CREATE DATABASE {name}")
        yield socket, pymysql, name
    finally:
        with admin.cursor() as cursor:
            cursor.execute(f"DROP DATABASE IF EXISTS {name}")
        admin.close()
