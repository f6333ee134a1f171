"""The quick-start conveniences of ``AgentOSRunner``: what lets the reference tutorial's lines run
on a runner nobody set up, kept apart from the governed rollout itself.

* :func:`normalize_mode`: the rollout mode as agentlightning spells it (``"eval"`` is ``"val"``);
* :func:`on_demand_store`: the in-memory store ``step`` creates when none was given, with the
  resources the agent needs;
* :func:`is_action_policy`: an object that picks actions for the user's own loop
  (``get_action(state)``), which the runner governs the actions of instead of running it;
* :data:`RESOURCES_HINT`: what to do about a store without resources.
"""

from __future__ import annotations

from typing import Any, Dict, Optional

from agentlightning.litagent import LitAgent
from agentlightning.store.memory import InMemoryLightningStore
from agentlightning.types import PromptTemplate

# `from . import agents`, never `from .agents import ...`: AgentOps' import monitor reads the latter as the
# OpenAI Agents SDK and uninstruments OpenAI when this package is imported after an AgentOps tracer started
# (tracing.py). Relative all the same, so that the package never loads this module under a second name.
from . import agents

__all__ = ["RESOURCES_HINT", "is_action_policy", "normalize_mode", "on_demand_store"]

#: agentlightning's rollout modes, and the spellings users bring from elsewhere (the reference
#: tutorial's ``mode="eval"``, agentlightning's own docstring's "validation").
_MODES = ("train", "val", "test")
_MODE_ALIASES = {
    "eval": "val",
    "evaluation": "val",
    "validation": "val",
    "valid": "val",
    "training": "train",
    "testing": "test",
}


def normalize_mode(mode: Any) -> Optional[str]:
    """A rollout mode as agentlightning spells it: ``"train"``, ``"val"`` or ``"test"`` (or None).

    ``"eval"`` and ``"validation"`` are accepted as ``"val"``; anything else is a ``ValueError``
    naming the valid values (agentlightning itself fails with a pydantic error deep in the store).

    >>> normalize_mode("eval"), normalize_mode("train"), normalize_mode(None)
    ('val', 'train', None)
    """
    if mode is None or mode in _MODES:
        return mode
    if isinstance(mode, str) and mode.strip().lower() in _MODES + tuple(_MODE_ALIASES):
        key = mode.strip().lower()
        return _MODE_ALIASES.get(key, key)
    raise ValueError(
        f"mode must be 'train', 'val' or 'test' (agentlightning's rollout modes; 'eval' means 'val'), got {mode!r}"
    )


RESOURCES_HINT = (
    "the agent receives its resources (LLM endpoints, prompt templates) from the store, and this store has none. "
    "Add them before running rollouts, e.g. await store.add_resources({'prompt': agl.PromptTemplate(template='{task}', "
    "engine='f-string')}) (an empty dict {} if the agent needs nothing), or pass step(task, resources={...}); "
    "a runner without init_worker() creates an in-memory store with what the agent needs"
)


async def on_demand_store(agent: LitAgent[Any], resources: Any) -> InMemoryLightningStore:
    """The store ``step`` creates for ``agent`` when none was given: in memory, with the resources
    the agent needs (none; a pass-through ``{task}`` prompt template for a function that takes a
    ``prompt_template``). An agent that takes an ``llm`` is told to pass one: none can be made up."""
    if resources is None and agents.needs_resource(agent, "llm"):
        raise ValueError(
            f"the agent ({agents.describe(agent)}) takes an `llm`, and there is no LLM to create on demand: pass "
            f"step(task, resources={{'main_llm': agl.LLM(endpoint=..., model=...)}}), or set up a store "
            f"with that resource and runner.init_worker(0, store)"
        )
    store = InMemoryLightningStore()
    named: Dict[str, Any] = {}
    if agents.needs_resource(agent, "prompt_template"):
        named["prompt_template"] = PromptTemplate(template="{task}", engine="f-string")
    await store.add_resources(named)
    return store


def is_action_policy(agent: Any) -> bool:
    """An RL policy object (``get_action(state)``), not an agent the runner can call."""
    return not isinstance(agent, LitAgent) and not callable(agent) and callable(getattr(agent, "get_action", None))
