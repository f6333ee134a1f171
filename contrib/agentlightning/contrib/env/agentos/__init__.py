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
(``SEVERITY_SCALE``), ``environment`` and ``text_to_sql`` (their constants). The former
top-level names still work and warn with their new import.
"""

from agentlightning.contrib.kernel.agentos.deprecation import moved_names

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

#: Names that left the top, and the module each now lives in (the old name warns and still works).
MOVED = {
    "DEFAULT_MAX_TEXT_CHARS": f"{__name__}.environment",
    "EpisodeRecord": f"{__name__}.records",
    "FAMILIES": f"{__name__}.sql_world",
    "SEVERITY_SCALE": f"{__name__}.config",
    "SQLResult": f"{__name__}.sql_world",
    "SQLSandbox": f"{__name__}.sql_world",
    "SQLTask": f"{__name__}.sql_world",
    "SQL_ENV_DEFAULTS": f"{__name__}.text_to_sql",
    "STRATEGIES": f"{__name__}.sql_world",
    "SandboxError": f"{__name__}.sql_world",
    "StepRecord": f"{__name__}.records",
    "TEXT_CHARSET": f"{__name__}.environment",
    "answers_match": f"{__name__}.sql_world",
    "build_database": f"{__name__}.sql_world",
    "config_from_kwargs": f"{__name__}.config",
    "database_fingerprint": f"{__name__}.sql_world",
    "generate_tasks": f"{__name__}.sql_world",
    "split_statements": f"{__name__}.sql_world",
    "violation_info": f"{__name__}.records",
}

__getattr__ = moved_names(__name__, MOVED)
