"""Agents and an algorithm for the runner tests. A module of their own so that runner
processes (fork or spawn) can import them."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import time
from pathlib import Path
from typing import Any, Dict, List

import agentlightning as agl
from agentlightning.algorithm import algo
from agentlightning.emitter import find_final_reward
from agentlightning.store.client_server import LightningStoreClient

from agentlightning.contrib.runner.agentos import ActionBlockedError, governance_stats, governed_tool


def execute_query(query: str, db: str) -> List[tuple]:
    conn = sqlite3.connect(db)
    try:
        rows = conn.executescript(query) if ";" in query.strip().rstrip(";") else conn.execute(query)
        result = rows.fetchall()
        conn.commit()
        return result
    finally:
        conn.close()


class SQLAgent(agl.LitAgent):
    """Runs each query of its task through a governed tool; reward = fraction that ran."""

    def rollout(self, task: Dict[str, Any], resources: Any, rollout: Any) -> float:
        run = governed_tool("database_query", execute_query)
        ran = 0
        for query in task["queries"]:
            try:
                run(query, db=task["db"])
                ran += 1
            except ActionBlockedError:
                pass
        time.sleep(task.get("sleep", 0.0))  # lets every runner process pick up work
        return ran / len(task["queries"])


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
        finished: Dict[str, str] = {}
        deadline = time.time() + 120
        while len(finished) < len(ids) and time.time() < deadline:
            for rollout in await store.wait_for_rollouts(rollout_ids=[i for i in ids if i not in finished], timeout=0.1):
                finished[rollout.rollout_id] = rollout.status
            await asyncio.sleep(0.05)
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
                    {"name": s.name, "rollout_id": s.rollout_id, "attempt_id": s.attempt_id, "attributes": dict(s.attributes)}
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
