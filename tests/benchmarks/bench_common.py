"""Helpers shared by the benchmark scripts in this folder (run as scripts, not by pytest)."""

from __future__ import annotations

import argparse
import os
import platform
import sqlite3
from importlib import metadata
from typing import Any, Dict, Optional, Sequence

import sqlglot


def package_version(dist: str) -> Optional[str]:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def environment(*dists: str) -> Dict[str, Any]:
    """Interpreter, machine, the SQL parser in use and the versions of ``dists``."""
    return {
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        **{dist.replace("-", "_"): package_version(dist) for dist in dists},
        "sqlglot": sqlglot.__version__,
        "sqlglotc_in_use": str(sqlglot.parser.__file__).endswith(".so"),
        "sqlite": sqlite3.sqlite_version,
    }


def print_table(headers: Sequence[str], rows: Sequence[Sequence[Any]], float_format: str = ",.1f") -> None:
    """A plain-text table: first column left-aligned, the others right-aligned."""
    cells = [[format(c, float_format) if isinstance(c, float) else str(c) for c in row] for row in rows]
    widths = [max(len(h), *(len(row[j]) for row in cells)) for j, h in enumerate(headers)]

    def line(values: Sequence[str]) -> str:
        return "  ".join(
            v.ljust(w) if j == 0 else v.rjust(w) for j, (v, w) in enumerate(zip(values, widths, strict=True))
        )

    print(line(headers))
    print(line(["-" * w for w in widths]))
    for row in cells:
        print(line(row))


def require_at_least(parser: argparse.ArgumentParser, args: argparse.Namespace, **minimums: float) -> None:
    """Exit through ``parser.error`` naming the first option of ``minimums`` (``rounds=1``) whose value is below it."""
    for name, minimum in minimums.items():
        if getattr(args, name) < minimum:
            parser.error(f"--{name.replace('_', '-')} must be at least {minimum}")
