"""Agents and an algorithm for the runner tests. A module of their own so that runner
processes (fork or spawn) can import them.

``SQLAgent`` and ``execute_query`` are the recipes' scripted SQL agent and its tool
(contrib/recipes/agentos/scripted_sql_agent.py): the tests run the agent the recipes run.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Dict, List

import agentlightning as agl
from agentlightning.algorithm import algo
from agentlightning.emitter import find_final_reward
from agentlightning.store.client_server import LightningStoreClient

from agentlightning.contrib.runner.agentos import governance_stats

RECIPE_DIR = Path(__file__).resolve().parents[1] / "contrib" / "recipes" / "agentos"
if str(RECIPE_DIR) not in sys.path:
    # Kept on the path: a spawned runner process imports the agent by its module name.
    sys.path.insert(0, str(RECIPE_DIR))

from grpo import wait_for_rollouts  # noqa: E402
from scripted_sql_agent import ScriptedSQLAgent as SQLAgent  # noqa: E402
from scripted_sql_agent import execute_query  # noqa: E402

__all__ = ["InputSQLAgent", "SQLAgent", "execute_query", "make_collecting_algorithm", "mixed_sql_tasks"]


def mixed_sql_tasks(
    db: str, n: int, good: List[str], bad: List[str], *, second_bad_every: int, sleep: float
) -> List[Dict[str, Any]]:
    """``n`` tasks for ``SQLAgent``: each runs one good query; every third also a bad one, and every
    ``second_bad_every``-th one more bad one (so some rollouts have two violations)."""
    tasks = []
    for i in range(n):
        queries = [good[i % len(good)]]
        if i % 3 == 0:
            queries.append(bad[(i // 3) % len(bad)])
        if i % second_bad_every == 0:
            queries.append(bad[(i // second_bad_every + 1) % len(bad)])
        tasks.append({"db": db, "queries": queries, "sleep": sleep})
    return tasks


class InputSQLAgent(agl.LitAgent):
    """The reference's simple form: the task itself is the SQL to run."""

    def __init__(self, db: str) -> None:
        super().__init__()
        self.db = db

    def rollout(self, task: str, resources: Any, rollout: Any) -> float:
        return float(len(execute_query(task, self.db)))


def make_collecting_algorithm(tasks: List[Dict[str, Any]], result_path: str, port: int):
    """An @algo that enqueues ``tasks``, waits for them, and writes what the store holds to JSON
    (statistics both from the server-side store and through an HTTP client of it)."""

    @algo
    async def collect(*, store: agl.LightningStore) -> None:
        await store.add_resources({"prompt": agl.PromptTemplate(template="{q}", engine="f-string")})
        ids = [(await store.enqueue_rollout(input=task, mode="train")).rollout_id for task in tasks]
        finished = await wait_for_rollouts(store, ids, 120)
        per_rollout = {}
        for index, rollout_id in enumerate(ids):
            attempt = await store.get_latest_attempt(rollout_id)
            spans = await store.query_spans(rollout_id, "latest")
            per_rollout[rollout_id] = {
                "task_index": index,
                "status": finished.get(rollout_id, "unfinished"),
                "worker_id": attempt.worker_id if attempt else None,
                "attempt_id": attempt.attempt_id if attempt else None,
                "metadata": attempt.metadata if attempt else None,
                "final_reward": find_final_reward(spans),
                "spans": [
                    {
                        "name": s.name,
                        "rollout_id": s.rollout_id,
                        "attempt_id": s.attempt_id,
                        "attributes": dict(s.attributes),
                    }
                    for s in spans
                ],
            }
        stats = await governance_stats(store, ids)
        client = LightningStoreClient(f"http://localhost:{port}")
        try:
            client_stats = await governance_stats(client)
        finally:
            await client.close()
        result = {"rollouts": per_rollout, "stats": stats, "client_stats": client_stats}
        Path(result_path).write_text(json.dumps(result, default=str))

    return collect
