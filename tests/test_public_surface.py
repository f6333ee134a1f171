"""The public surface of each room, listed, so that it grows only on purpose; the only second names
are the reference tutorial's, in each room's reference_names; the statistics speak one vocabulary."""

from __future__ import annotations

import asyncio
import importlib
import pickle
import pkgutil
import re
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


def test_the_public_surface_is_small():
    assert sum(len(names) for names in PUBLIC.values()) == 53  # ToolRulesPolicy joined the kernel


def test_the_page_is_what_the_live_surface_renders():
    assert SURFACE_DOC.read_text(encoding="utf-8") == render_public_surface(), (
        f"docs/public_surface.md differs from the live __all__ lists: {REWRITE}"
    )


#: The reference tutorial's spellings: the only names a room's top exports for an object of another name.
REFERENCE_NAMES = {
    "runner": {"GovernedRunner": "AgentOSRunner", "PolicyViolationType": "ViolationType"},
    "adapter": {"FlightRecorderEmitter": "FlightRecorderAdapter"},
}


@pytest.mark.parametrize("room", ROOMS)
def test_the_only_second_names_are_the_reference_tutorials_in_reference_names(room):
    module = _room(room)
    second = {
        name: obj.__name__
        for name in module.__all__
        if (obj := getattr(module, name)) is not None and getattr(obj, "__name__", name) != name
    }
    assert second == REFERENCE_NAMES.get(room, {})
    if second:
        reference = importlib.import_module(f"{module.__name__}.reference_names")
        assert sorted(reference.__all__) == sorted(second)
        assert all(getattr(module, name) is getattr(reference, name) for name in second)


def test_a_former_name_is_gone():
    with pytest.raises(AttributeError, match="has no attribute 'analyze_sql'"):
        _room("kernel").analyze_sql  # noqa: B018
    with pytest.raises(ImportError):
        from agentlightning.contrib.env.agentos import split_statements  # noqa: F401


def test_no_module_exports_a_private_name():
    """``__all__`` is what a module offers: a leading underscore says the opposite."""
    private = {}
    for room in ROOMS:
        package = _room(room)
        for info in pkgutil.walk_packages(package.__path__, f"{package.__name__}."):
            module = importlib.import_module(info.name)
            if names := [name for name in getattr(module, "__all__", ()) if name.startswith("_")]:
                private[info.name] = names
    assert private == {}


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


def test_sql_policy_cache_is_on_or_off():
    assert SQLPolicy(deny=["DROP"]).cache is True and SQLPolicy(deny=["DROP"], cache=False).cache is False
    with pytest.raises(TypeError, match="cache must be True or False"):
        SQLPolicy(deny=["DROP"], cache="yes")
    with pytest.raises(TypeError, match="cache_size"):
        SQLPolicy(deny=["DROP"], cache_size=0)
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
