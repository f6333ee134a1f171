"""Each engine's built-in functions as the engine declares them: generated data, checked in.

``postgres.json`` (``pg_proc``), ``sqlite.json`` (``PRAGMA function_list``) and ``mariadb.json``
(the server's help tables, and ``PREPARE`` on the server) are written by :mod:`.generate` from
the real servers, each with the engine's version; ``tests/test_sql_catalog.py`` regenerates them
in CI and fails when they differ. :mod:`..functions` decides from them which calls are known.

>>> table("postgres")["functions"]["lower"][0][:2]
['i', 'f']
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any, Dict

__all__ = ["ENGINE_TABLES", "table"]

_DIR = Path(__file__).resolve().parent

#: The dialects whose tables are generated from an engine.
ENGINE_TABLES = ("postgres", "sqlite", "mariadb")


@functools.lru_cache(maxsize=None)
def table(dialect: str) -> Dict[str, Any]:
    """The checked-in table of ``dialect`` (one of :data:`ENGINE_TABLES`)."""
    if dialect not in ENGINE_TABLES:
        raise ValueError(f"no generated function table for {dialect!r}; the tables are {', '.join(ENGINE_TABLES)}")
    return json.loads((_DIR / f"{dialect}.json").read_text(encoding="utf-8"))
