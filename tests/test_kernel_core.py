"""The kernel core imports without agentlightning; only its 0.3 sub-room (``agl03``) needs it.

Each check runs in a fresh interpreter in which agentlightning's own modules cannot be imported
(a meta-path blocker): ``agentlightning`` is an empty namespace package there, exactly what a
machine without agentlightning has when this plugin is installed (its files sit under
``agentlightning/contrib``). The blocker refuses every ``agentlightning.*`` module outside
``agentlightning.contrib``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import agentlightning.contrib.kernel.agentos as kernel_package

# Each fresh interpreter starts by installing the kernel-core run's own blocker (tests/kernel_core_only.py,
# which imports nothing of agentlightning), found by its folder.
BLOCKER = f"""
import sys
sys.path.insert(0, {str(Path(__file__).resolve().parent)!r})
from kernel_core_only import WithoutAgentLightning
sys.meta_path.insert(0, WithoutAgentLightning())
del sys.path[0]
"""

# The 0.3 side of the kernel package is one sub-room: agentlightning 0.3 spans, the reward span, store totals.
LIGHTNING_03_ROOM = "agl03"


def run_without_agentlightning(code: str) -> dict:
    script = BLOCKER + textwrap.dedent(code)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def without_agentlightning(tmp_path_factory) -> dict:
    """What one fresh interpreter without agentlightning saw: the blocker's answer, a governed
    decision through the kernel core, and which of the kernel package's modules import. One
    interpreter for the three checks: each start imports the kernel (sqlglot, pglast, Agent OS)."""
    audit = tmp_path_factory.mktemp("kernel_core") / "audit.db"
    root = Path(kernel_package.__file__).parent
    names = sorted(
        ".".join(path.relative_to(root).with_suffix("").parts)
        for path in root.rglob("*.py")
        if path.name != "__init__.py"
    )
    result = run_without_agentlightning(
        f"""
        import importlib, json, sys
        try:
            import agentlightning.store.base
            blocker = "imported"
        except ImportError as error:
            blocker = str(error)

        from agentlightning.contrib.kernel.agentos import (
            Action, GovernanceKernel, LagrangianPenalty, RewardConfig, SQLPolicy)
        from agentlightning.contrib.kernel.agentos.reward.config import shape_reward
        from agentlightning.contrib.kernel.agentos.reward.formula import shape_governed_reward
        from agentlightning.contrib.kernel.agentos.outcome import GovernanceOutcome

        kernel = GovernanceKernel([SQLPolicy(deny=["DROP", "DELETE"])], recorder={str(audit)!r})
        decision = kernel.check(Action.sql("DROP TABLE users"))
        reward = shape_reward(1.0, GovernanceOutcome(decisions=(decision,)).violations, RewardConfig())
        audit_valid = kernel.verify_audit()["valid"]
        kernel.close()
        foreign = sorted(
            m for m in sys.modules if m.startswith("agentlightning.") and not m.startswith("agentlightning.contrib")
        )
        core = {{
            "blocked": decision.blocked,
            "audit_valid": audit_valid,
            "final": reward.final,
            "lambda": LagrangianPenalty(target_violation_rate=0.0, multiplier=1.0).update(0.5),
            "agentlightning_init_ran": getattr(sys.modules["agentlightning"], "__file__", None) is not None,
            "foreign": foreign,
        }}

        # after the core's checks, so that a module failing half-way cannot change what they saw
        failed = {{}}
        for name in {names!r}:
            try:
                importlib.import_module("agentlightning.contrib.kernel.agentos." + name)
            except ImportError as error:
                failed[name] = str(error)
        print(json.dumps({{"blocker": blocker, "core": core, "failed": failed}}))
        """
    )
    result["names"] = names
    return result


def test_the_blocker_blocks_agentlightning(without_agentlightning):
    assert (
        without_agentlightning["blocker"]
        == "agentlightning is not installed here (blocked import of agentlightning.store)"
    )


def test_the_kernel_core_works_without_agentlightning(without_agentlightning):
    assert without_agentlightning["core"] == {
        "blocked": True,
        "audit_valid": True,
        "final": -99.0,
        "lambda": 1.5,
        "agentlightning_init_ran": False,
        "foreign": [],
    }


def test_only_the_03_modules_need_agentlightning(without_agentlightning):
    room = {name for name in without_agentlightning["names"] if name.startswith(LIGHTNING_03_ROOM + ".")}
    assert {"agl03.spans", "agl03.reward_span", "agl03.stats"} <= room
    failed = without_agentlightning["failed"]
    assert set(failed) == room, failed
    assert all("agentlightning is not installed here" in message for message in failed.values())


def test_the_sql_reading_worker_imports_the_readers_without_agentlightnings_own_package():
    """The worker the kernel starts to read long texts sets the packages above the SQL readers up
    as plain namespaces over their folders, the way ``bounded`` starts it (``-I -S``, the parent's
    path): agentlightning's ``__init__`` (seconds under 0.3, a proxy server's imports among it)
    never runs there, and the readers import nothing else of agentlightning."""
    import os

    from agentlightning.contrib.kernel.agentos.sql import bounded

    code = textwrap.dedent(
        """
        import importlib, json, sys
        sys.path.insert(0, sys.argv[1] + "/sql")
        import _reading_worker
        _reading_worker._set_up(sys.argv[1], sys.argv[2])
        importlib.import_module("agentlightning.contrib.kernel.agentos.sql.policy")
        lightning = sorted(m for m in sys.modules if m.split(".")[:2] != ["agentlightning", "contrib"])
        print(json.dumps([m for m in lightning if m.startswith("agentlightning")]))
        print(json.dumps(getattr(sys.modules["agentlightning"], "__file__", None)))
        """
    )
    process = subprocess.run(
        [sys.executable, "-I", "-S", "-c", code, str(bounded._KERNEL_ROOT), os.pathsep.join(sys.path)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert process.returncode == 0, process.stderr
    lightning_modules, package_file = (json.loads(line) for line in process.stdout.splitlines())
    assert lightning_modules == ["agentlightning"] and package_file is None
