"""An agent whose task lists the SQL it runs, each statement through a governed tool.

The recipes that show governance end to end (``dashboard_screenshot.py``, ``governed_load.py``)
need an agent whose actions are known before it runs, so that what the kernel blocked can be
checked against the task list; the runner tests (``tests/runner_agents.py``) use it for the same
reason. A task is ``{"db": <SQLite file>, "queries": [<SQL>, ...], "sleep": <seconds, optional>}``.
"""

from __future__ import annotations

import sqlite3
import time
from typing import Any, Dict, List

import agentlightning as agl

from agentlightning.contrib.runner.agentos import ActionBlockedError, governed_tool


def execute_query(query: str, db: str) -> List[tuple]:
    """Run ``query`` on the SQLite database ``db`` and commit; several statements run as a script.

    >>> import os, tempfile
    >>> db = os.path.join(tempfile.mkdtemp(), "shop.db")
    >>> execute_query("CREATE TABLE users (name TEXT); INSERT INTO users VALUES ('ada')", db)
    []
    >>> execute_query("SELECT name FROM users", db)
    [('ada',)]
    """
    conn = sqlite3.connect(db)
    try:
        rows = conn.executescript(query) if ";" in query.strip().rstrip(";") else conn.execute(query)
        result = rows.fetchall()
        conn.commit()
        return result
    finally:
        conn.close()


class ScriptedSQLAgent(agl.LitAgent):
    """Runs each query of its task through ``governed_tool("database_query", execute_query)``; a
    blocked query is skipped. Reward: the fraction of the task's queries that ran."""

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
