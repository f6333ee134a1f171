"""``python -m pytest -p tests.kernel_core_only``: the kernel core's tests and doctests, in seconds.

The kernel core (actions, policies, the SQL guard, violations, audit, the reward formula) imports
without agentlightning, and importing agentlightning is most of a pytest process's start (litellm's
proxy server among it: seconds of CPU). This plugin runs the tests that need only the core on a
machine as one without agentlightning sees it: ``agentlightning`` is a bare namespace package
holding this plugin's files, and importing any module of agentlightning itself fails with an
``ImportError`` that names it, so a test listed here that needs agentlightning fails loudly instead
of importing it. Nothing is replaced or skipped: the same tests run with agentlightning in every
other run (plain ``pytest``, ``-m "not e2e"``); this is a subset, chosen by file below.

>>> from tests.kernel_core_only import is_kernel_core
>>> is_kernel_core("tests/test_sql_policy.py"), is_kernel_core("tests/test_runner.py")
(True, False)
>>> is_kernel_core("contrib/agentlightning/contrib/kernel/agentos/sql/policy.py")
True
>>> is_kernel_core("contrib/agentlightning/contrib/kernel/agentos/agl03/spans.py")
False
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import os
import sys
from pathlib import Path
from typing import Optional

import pytest

#: Test modules that import the kernel core only (besides the standard library, Agent OS, sqlglot,
#: pglast and the database drivers). The schema tests of PostgreSQL and MariaDB skip with their
#: reason when the servers are not running, as in every run.
KERNEL_CORE_TESTS = frozenset(
    {
        "tests/test_audit_durability.py",
        "tests/test_audit_signing.py",
        "tests/test_kernel.py",
        "tests/test_kernel_remembered.py",
        "tests/test_sql_effects.py",
        "tests/test_sql_policy.py",
        "tests/test_sql_schema_mariadb.py",
        "tests/test_sql_schema_postgres.py",
        "tests/test_sql_schema_sqlite.py",
        "tests/test_sql_wrappers.py",
        "tests/test_tool_rules.py",
        "tests/test_violations_and_actions.py",
        # this module's own doctest
        "tests/kernel_core_only.py",
    }
)
KERNEL_PACKAGE = "contrib/agentlightning/contrib/kernel/agentos/"
#: The kernel package's sub-room of agentlightning 0.3's side (spans, the reward span, store
#: totals): its doctests run in every other run.
KERNEL_03_ROOM = KERNEL_PACKAGE + "agl03/"


def is_kernel_core(relative_path: str) -> bool:
    """Whether the file (a path relative to the repository's root, with ``/``) is collected here."""
    if relative_path in KERNEL_CORE_TESTS:
        return True
    if relative_path.startswith(KERNEL_PACKAGE) and relative_path.endswith(".py"):
        return not relative_path.startswith(KERNEL_03_ROOM)
    return False


class WithoutAgentLightning(importlib.abc.MetaPathFinder):
    """``agentlightning`` as a bare namespace package over the folders named ``agentlightning`` on
    ``sys.path`` (where this plugin's files are), and an ``ImportError`` for every other
    ``agentlightning.*`` module than ``agentlightning.contrib.*``: a machine without agentlightning,
    as this run and tests/test_kernel_core.py's fresh interpreters see it. ``hint`` ends the error's
    message."""

    def __init__(self, hint: str = "") -> None:
        self.hint = hint

    def find_spec(self, name, path=None, target=None):
        if name == "agentlightning":
            spec = importlib.machinery.ModuleSpec(name, None, is_package=True)
            places = [os.path.join(entry or ".", "agentlightning") for entry in sys.path]
            spec.submodule_search_locations = [place for place in places if os.path.isdir(place)]
            return spec
        if name.startswith("agentlightning.") and not (name + ".").startswith("agentlightning.contrib."):
            raise ImportError(f"agentlightning is not installed here (blocked import of {name}){self.hint}")
        return None


def pytest_load_initial_conftests(early_config, parser, args):
    # Before any conftest.py: those import the kernel, which must find agentlightning absent.
    loaded = sorted(m for m in sys.modules if m == "agentlightning" or m.startswith("agentlightning."))
    if loaded:
        raise RuntimeError(f"agentlightning was imported before the kernel-core plugin started: {loaded[:5]}")
    sys.meta_path.insert(
        0, WithoutAgentLightning("; in the kernel-core run, a test that needs it belongs outside this plugin's list")
    )


def pytest_configure(config):
    # A listed file that was renamed or removed would silently leave its tests out of this run.
    missing = sorted(name for name in KERNEL_CORE_TESTS if not (config.rootpath / name).is_file())
    if missing:
        raise pytest.UsageError(f"tests/kernel_core_only.py lists files that do not exist: {', '.join(missing)}")


def pytest_ignore_collect(collection_path: Path, config) -> Optional[bool]:
    if collection_path.is_dir() or collection_path.suffix != ".py":
        return None
    try:
        relative = collection_path.resolve().relative_to(config.rootpath.resolve()).as_posix()
    except ValueError:  # outside the repository: not this plugin's to judge
        return None
    return None if is_kernel_core(relative) else True


def pytest_report_header(config):
    return "kernel-core run: agentlightning itself is not imported (tests/kernel_core_only.py lists the tests)"
