"""Environment episodes as LightningStore rollouts, with the same spans as ``AgentOSRunner``'s.

``env.step`` is synchronous and a store is asynchronous, so the environment buffers finished
episodes (``record_episodes=True``) and :func:`record_episodes_to_store` exports them, from a
coroutine, whenever convenient (after each epoch, say). Each episode becomes one rollout with one
attempt holding, in step order, the check span and violation spans of every kernel decision
(exactly what the runner emits), then one governed reward span whose ``final`` dimension is the
episode return; the attempt is marked succeeded with the episode summary in its metadata under
``"agentos"``. So ``find_final_reward`` gives each episode's return and ``governance_stats``
counts the episodes' violations exactly as it counts runner rollouts.
"""

from __future__ import annotations

import json
from typing import Any, Iterable, List, Union

from agentlightning.store.base import LightningStore

from agentlightning.contrib.kernel.agentos.agl03.reward_span import reward_core_fields
from agentlightning.contrib.kernel.agentos.agl03.spans import add_spans, decision_core_fields

from .environment import GovernedEnvironment
from .records import EpisodeRecord

__all__ = ["record_episodes_to_store"]


def _jsonable(value: Any) -> Any:
    if hasattr(value, "to_dict"):
        value = value.to_dict()
    try:
        json.dumps(value)
        return value
    except (TypeError, ValueError):
        return repr(value)


async def record_episodes_to_store(
    store: LightningStore,
    episodes: Union[GovernedEnvironment, Iterable[EpisodeRecord]],
    *,
    mode: str = "train",
    include_current: bool = False,
) -> List[str]:
    """Write episodes to ``store`` as rollouts; returns their rollout ids, in episode order.

    ``episodes`` is a :class:`GovernedEnvironment` created with ``record_episodes=True`` (its
    buffered episodes are taken, see :meth:`GovernedEnvironment.pop_episodes`) or an iterable of
    :class:`EpisodeRecord`. Works with ``InMemoryLightningStore`` and with a client of ``agl store``.

    >>> import asyncio
    >>> from agentlightning.store.memory import InMemoryLightningStore
    >>> from agentlightning.contrib.kernel.agentos import SQLPolicy
    >>> from agentlightning.contrib.kernel.agentos.agl03.stats import governance_stats
    >>> env = GovernedEnvironment([SQLPolicy(deny=["DROP"])], record_episodes=True)
    >>> for action in ["SELECT 1", "DROP TABLE t"]:
    ...     _ = env.reset(seed=0)
    ...     _ = env.step(action)
    >>> store = InMemoryLightningStore()
    >>> ids = asyncio.run(record_episodes_to_store(store, env, include_current=True))
    >>> len(ids), asyncio.run(governance_stats(store))["total_violations"]
    (2, 1)
    """
    if isinstance(episodes, GovernedEnvironment):
        episodes = episodes.pop_episodes(include_current=include_current)
    rollout_ids: List[str] = []
    for episode in episodes:
        if not isinstance(episode, EpisodeRecord):
            raise TypeError(f"expected EpisodeRecord objects, got {type(episode).__name__}")
        task_input = {
            "episode_id": episode.episode_id,
            "task": _jsonable(episode.task),
            "observation": _jsonable(episode.observation),
        }
        attempted = await store.start_rollout(input=task_input, mode=mode, metadata={"source": "GovernedEnvironment"})
        rollout_id, attempt_id = attempted.rollout_id, attempted.attempt.attempt_id
        fields = [
            core for step in episode.steps for core in decision_core_fields(step.decision, penalties=episode.penalties)
        ]
        fields.append(reward_core_fields(episode.governed_reward()))
        await add_spans(store, rollout_id, attempt_id, fields)
        metadata = {**(attempted.attempt.metadata or {}), "agentos": episode.summary()}
        await store.update_attempt(rollout_id, attempt_id, status="succeeded", metadata=metadata)
        rollout_ids.append(rollout_id)
    return rollout_ids
