"""The public surface of each room, listed, so that it grows only on purpose; every name that left
a room's top still works there and warns with its new import; the statistics speak one vocabulary."""

from __future__ import annotations

import asyncio
import importlib
import pickle
import re
import warnings
from pathlib import Path

import pytest

from agentlightning.contrib.adapter.agentos import FlightRecorderAdapter
from agentlightning.contrib.env.agentos import EnvironmentConfig
from agentlightning.contrib.env.agentos.config import SEVERITY_SCALE
from agentlightning.contrib.kernel.agentos import (
    GovernanceConfigError,
    GovernanceKernel,
    PolicyViolation,
    RewardConfig,
    Severity,
    SeverityTable,
    SQLPolicy,
)
from agentlightning.contrib.kernel.agentos.agl03.stats import governance_stats
from agentlightning.contrib.kernel.agentos.violations import DEFAULT_SEVERITY_COSTS, DEFAULT_SEVERITY_PENALTIES
from agentlightning.contrib.reward.agentos import PolicyReward
from agentlightning.contrib.runner.agentos import AgentOSRunner

#: The rooms, in the order docs/public_surface.md lists them.
ROOMS = ["kernel", "runner", "reward", "env", "adapter"]

#: Each room's top-level names, as reviewed: docs/public_surface.md. A name added there is a decision:
#: the top holds the core classes and the reference tutorial's names; everything else is imported
#: from its module.
SURFACE_DOC = Path(__file__).resolve().parents[1] / "docs" / "public_surface.md"

SURFACE_HEADER = """# The public surface of each room

Each room's top (`from agentlightning.contrib.<room>.agentos import ...`) exports exactly the names
below; everything else is imported from the module that defines it (docs/architecture.md, "What each
room exports"). `tests/test_public_surface.py` compares this page with every room's `__all__`: a name
joins or leaves a top on purpose, by a change that rewrites this page
(`python tests/test_public_surface.py`) and is reviewed with it.
"""


def render_public_surface() -> str:
    """This page as the live `__all__` lists make it: a section a room, a row a name."""
    parts = [SURFACE_HEADER]
    for room in ROOMS:
        module = _room(room)
        parts.append(f"\n## {room}\n\n| name | defined in |\n| --- | --- |\n")
        for name in sorted(module.__all__):
            parts.append(f"| `{name}` | `{getattr(getattr(module, name), '__module__', module.__name__)}` |\n")
    return "".join(parts)


def documented_surface() -> dict[str, list[str]]:
    """The names docs/public_surface.md lists, by room (none while the page is missing)."""
    surface: dict[str, list[str]] = {}
    room = None
    text = SURFACE_DOC.read_text(encoding="utf-8") if SURFACE_DOC.exists() else ""
    for line in text.splitlines():
        if line.startswith("## "):
            room = line[3:].strip()
            surface[room] = []
        elif room and (row := re.match(r"\| `(\w+)` \|", line)):
            surface[room].append(row.group(1))
    return surface


#: The names the reference tutorial (and the migration guide built on it) imports, by room.
TUTORIAL = {
    "kernel": ["GovernanceKernel", "SQLPolicy", "CostControlPolicy", "as_kernel"],
    "runner": ["GovernedRunner", "AgentOSRunner", "PolicyViolation", "PolicyViolationType", "governance_stats"],
    "reward": ["PolicyReward", "RewardConfig", "CompositeReward", "create_policy_reward", "policy_penalty"],
    "env": ["GovernedEnvironment", "EnvironmentConfig", "create_governed_env"],
    "adapter": ["FlightRecorderEmitter", "LightningSpan", "create_emitter"],
}


def _room(name: str):
    return importlib.import_module(f"agentlightning.contrib.{name}.agentos")


def _moved(room: str):
    return [(room, name, target) for name, target in sorted(_room(room).MOVED.items())]


PUBLIC = documented_surface()

REWRITE = "if the change is on purpose, rewrite the page with `python tests/test_public_surface.py` and review its diff"


def test_the_page_lists_every_room():
    assert list(PUBLIC) == ROOMS


@pytest.mark.parametrize("room", ROOMS)
def test_each_room_exports_exactly_its_listed_names(room):
    module = _room(room)
    assert sorted(module.__all__) == sorted(PUBLIC[room]), (
        f"{room}'s __all__ differs from docs/public_surface.md: {REWRITE}"
    )
    assert all(getattr(module, name) is not None for name in module.__all__)
    assert set(TUTORIAL[room]) <= set(module.__all__)
    assert not set(module.MOVED) & set(module.__all__)


def test_the_public_surface_is_small():
    assert sum(len(names) for names in PUBLIC.values()) == 53  # ToolRulesPolicy joined the kernel


def test_the_page_is_what_the_live_surface_renders():
    assert SURFACE_DOC.read_text(encoding="utf-8") == render_public_surface(), (
        f"docs/public_surface.md differs from the live __all__ lists: {REWRITE}"
    )


@pytest.mark.parametrize("room,name,target", [moved for room in ROOMS for moved in _moved(room)], ids=lambda v: str(v))
def test_a_moved_name_warns_with_its_new_import_and_still_works(room, name, target):
    module_name, _, new_name = target.partition(":")
    new_name = new_name or name
    expected = getattr(importlib.import_module(module_name), new_name)
    with pytest.warns(DeprecationWarning, match=f"from {module_name} import {new_name}`") as caught:
        value = getattr(_room(room), name)
    assert value is expected
    assert f"agentlightning.contrib.{room}.agentos.{name} moved" in str(caught[0].message)


def test_from_import_of_a_moved_name_warns_at_the_importing_line():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        from agentlightning.contrib.env.agentos import split_statements  # noqa: F401
    assert [w.category for w in caught] == [DeprecationWarning]
    assert caught[0].filename == __file__
    assert "from agentlightning.contrib.env.agentos.sql_world import split_statements" in str(caught[0].message)


def test_the_migration_guide_lists_every_moved_name_with_its_new_place():
    guide = (Path(__file__).resolve().parents[1] / "docs" / "migrating.md").read_text(encoding="utf-8")
    rows = {}
    for line in guide.split("## Names that moved from a room's top", 1)[1].splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[0].startswith("`agentlightning."):
            old, new = cells[0].strip("`"), cells[1].strip("`")
            for name in re.findall(r"`(\w+)`(?: \(now `(\w+)`\))?", cells[2]):
                rows[(old, name[0])] = f"{new}:{name[1]}" if name[1] else new
    expected = {
        (f"agentlightning.contrib.{room}.agentos", name): target
        for room in PUBLIC
        for name, target in _room(room).MOVED.items()
    }
    assert rows == expected


def test_an_unknown_name_is_still_an_attribute_error():
    with pytest.raises(AttributeError, match="has no attribute 'no_such_name'"):
        _room("kernel").no_such_name  # noqa: B018
    with pytest.raises(ImportError):
        from agentlightning.contrib.runner.agentos import no_such_name  # noqa: F401


def test_submodules_stay_importable_from_the_top():
    from agentlightning.contrib.kernel.agentos import semconv

    assert semconv.KIND_AUDIT == "audit"


# ---------------------------------------------------------------------- one vocabulary for statistics


def test_violation_rate_is_the_fraction_of_rollouts_with_a_violation_in_every_statistics(tmp_path):
    """A rollout with two violations and a clean one: every API says violation_rate 0.5 (one
    rollout in two violated) and violations_per_rollout 1.0 (two violations over two rollouts)."""
    recorder = tmp_path / "audit.db"
    kernel = GovernanceKernel(
        [SQLPolicy(deny=["DROP"], name="first"), SQLPolicy(deny=["DROP"], name="second")], recorder=recorder
    )
    runner = AgentOSRunner(kernel, log_violations=False)
    reward_fn = PolicyReward(None)

    async def scenario():
        rollouts = [await runner.step("DROP TABLE users"), await runner.step("SELECT 1")]
        return rollouts, await governance_stats(runner.get_store())

    rollouts, store_stats = asyncio.run(scenario())
    assert [len(r.violations) for r in rollouts] == [2, 0]
    for rollout in rollouts:
        reward_fn(rollout)
    for stats in (runner.get_stats(), store_stats, reward_fn.get_stats()):
        assert stats["total_violations"] == 2
        assert stats["violation_rate"] == 0.5
        assert stats["violations_per_rollout"] == 1.0
    assert runner.get_violation_rate() == 0.5
    assert store_stats["rollout_violation_rate"] == store_stats["violation_rate"]  # the former name, kept
    kernel.close()

    summary = FlightRecorderAdapter(recorder).get_violation_summary()
    assert (summary["total_entries"], summary["violating_entries"], summary["total_violations"]) == (2, 1, 2)
    assert summary["violation_rate"] == 0.5
    assert summary["policies_violated"] == {"first": 1, "second": 1}


# ---------------------------------------------------------------------- per-severity tables


def test_every_per_severity_table_is_a_severity_table_preset():
    presets = SeverityTable.presets()
    assert presets["penalties"] is DEFAULT_SEVERITY_PENALTIES and presets["costs"] is DEFAULT_SEVERITY_COSTS
    assert presets["environment_scale"] is SEVERITY_SCALE
    # The environment's scale has the cost table's numbers, but is not that table.
    assert SEVERITY_SCALE == DEFAULT_SEVERITY_COSTS and SEVERITY_SCALE is not DEFAULT_SEVERITY_COSTS
    assert (SEVERITY_SCALE.kind, DEFAULT_SEVERITY_COSTS.kind, DEFAULT_SEVERITY_PENALTIES.kind) == (
        "scale",
        "cost",
        "penalty",
    )
    assert RewardConfig().severity_penalties == DEFAULT_SEVERITY_PENALTIES
    assert isinstance(EnvironmentConfig().severity_penalties, SeverityTable)
    assert dict(EnvironmentConfig(violation_penalty=-2.0).severity_penalties) == {
        Severity.CRITICAL: -20.0,
        Severity.HIGH: -10.0,
        Severity.MEDIUM: -2.0,
        Severity.LOW: -2.0,
    }
    assert pickle.loads(pickle.dumps(SEVERITY_SCALE)) == SEVERITY_SCALE


def test_a_severity_table_checks_its_entries():
    with pytest.raises(GovernanceConfigError, match="penalty table's high entry must be <= 0"):
        SeverityTable("penalty", critical=-1.0, high=1.0, medium=0.0, low=0.0)
    with pytest.raises(GovernanceConfigError, match="cost table's low entry must be >= 0"):
        SeverityTable("cost", critical=1.0, high=1.0, medium=1.0, low=-1.0)
    with pytest.raises(GovernanceConfigError, match="kind must be one of"):
        SeverityTable("bonus", critical=1.0, high=1.0, medium=1.0, low=1.0)
    with pytest.raises(TypeError, match="must be a number"):
        SeverityTable("cost", critical="10", high=1.0, medium=1.0, low=1.0)
    with pytest.raises(GovernanceConfigError, match="unknown SeverityTable preset 'cost'; presets: penalties"):
        SeverityTable.preset("cost")
    with pytest.raises(GovernanceConfigError, match="unknown severity"):
        DEFAULT_SEVERITY_COSTS["severe"]
    with pytest.raises(TypeError):
        DEFAULT_SEVERITY_COSTS[Severity.LOW] = 5.0  # type: ignore[index]


# ---------------------------------------------------------------------- honest names


def test_sql_policy_cache_is_on_or_off_and_cache_size_is_deprecated():
    assert SQLPolicy(deny=["DROP"]).cache is True and SQLPolicy(deny=["DROP"], cache=False).cache is False
    with pytest.warns(DeprecationWarning, match="use cache=False instead"):
        assert SQLPolicy(deny=["DROP"], cache_size=0).cache is False
    with pytest.warns(DeprecationWarning, match="use cache=True instead"):
        assert SQLPolicy(deny=["DROP"], cache_size=4096).cache is True
    with pytest.raises(GovernanceConfigError, match="cache_size must be an int >= 0"):
        SQLPolicy(deny=["DROP"], cache_size=-1)
    with pytest.raises(TypeError, match="cache must be True or False"):
        SQLPolicy(deny=["DROP"], cache="yes")
    with pytest.raises(GovernanceConfigError, match="both cache=False and cache_size=4096"):
        SQLPolicy(deny=["DROP"], cache=False, cache_size=4096)
    assert SQLPolicy(deny=["DROP"]).cache is True
    uncached = SQLPolicy(deny=["DROP"], cache=False)
    assert [v.description for v in uncached.check_sql("DROP TABLE t")] == ["DROP statement denied: DROP TABLE t"]


def test_policy_reward_kernel_is_checked_and_its_attribute_deprecated():
    kernel = GovernanceKernel([SQLPolicy(deny=["DROP"])])
    reward_fn = PolicyReward(kernel)
    with pytest.warns(DeprecationWarning, match="PolicyReward.kernel is deprecated"):
        assert reward_fn.kernel is kernel
    with pytest.raises(TypeError):
        PolicyReward(42)
    violation = PolicyViolation("blocked", "SQLPolicy", "DROP denied", "critical")
    assert PolicyReward(None)(type("R", (), {"success": True, "violations": [violation]})()) == -99.0


if __name__ == "__main__":
    # Rewrite docs/public_surface.md from the live `__all__` lists, after a change to a room's top.
    SURFACE_DOC.write_text(render_public_surface(), encoding="utf-8")
    print(f"wrote {SURFACE_DOC.name}: review its diff")
