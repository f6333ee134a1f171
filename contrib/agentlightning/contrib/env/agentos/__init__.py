"""Governed Gymnasium environments for Agent Lightning, on the real Agent OS kernel.

* :class:`GovernedEnvironment`: a ``gymnasium.Env`` whose every action is checked by the
  governance kernel first; blocked actions never execute; reward, termination and the
  safety-gymnasium style ``info["cost"]`` follow the violations.
* :class:`TextToSQLEnv` / :func:`make_text_to_sql_env`: a concrete environment over a real SQLite
  database (:mod:`.sql_world`, shared with the training recipe), with a discrete wrapper for
  tabular and Stable-Baselines3 learners.
* :func:`record_episodes_to_store`: episodes as LightningStore rollouts with the runner's spans.

>>> from agentlightning.contrib.kernel.agentos import SQLPolicy
>>> env = create_governed_env([SQLPolicy(deny=["DROP", "DELETE"])], max_steps=3)
>>> _ = env.reset(seed=1)
>>> [env.step(sql)[1] for sql in ["SELECT 1", "SELECT 2"]]
[10.9, 10.9]
>>> env.get_metrics()["total_steps"], env.get_metrics()["successful_episodes"]
(2, 1)

The top holds the environments and their factories; the rest is imported from its module:
``sql_world`` (the database, its tasks and sandbox: ``SQLTask``, ``SQLSandbox``,
``generate_tasks``, ...), ``records`` (``EpisodeRecord``, ``StepRecord``), ``config``
(``SEVERITY_SCALE``), ``environment`` and ``text_to_sql`` (their constants).
"""

from .config import EnvironmentConfig
from .environment import GovernedEnvironment, create_governed_env
from .recording import record_episodes_to_store
from .sql_world import SQLWorld
from .text_to_sql import DiscreteStrategyWrapper, TextToSQLEnv, make_text_to_sql_env

__all__ = [
    "DiscreteStrategyWrapper",
    "EnvironmentConfig",
    "GovernedEnvironment",
    "SQLWorld",
    "TextToSQLEnv",
    "create_governed_env",
    "make_text_to_sql_env",
    "record_episodes_to_store",
]
