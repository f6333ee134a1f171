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
"""

from .config import SEVERITY_SCALE, EnvironmentConfig, config_from_kwargs
from .environment import DEFAULT_MAX_TEXT_CHARS, TEXT_CHARSET, GovernedEnvironment, create_governed_env
from .recording import record_episodes_to_store
from .records import EpisodeRecord, StepRecord, violation_info
from .sql_world import (
    FAMILIES,
    STRATEGIES,
    SandboxError,
    SQLResult,
    SQLSandbox,
    SQLTask,
    SQLWorld,
    answers_match,
    build_database,
    database_fingerprint,
    generate_tasks,
    split_statements,
)
from .text_to_sql import SQL_ENV_DEFAULTS, DiscreteStrategyWrapper, TextToSQLEnv, make_text_to_sql_env

__all__ = [
    "DEFAULT_MAX_TEXT_CHARS",
    "DiscreteStrategyWrapper",
    "EnvironmentConfig",
    "EpisodeRecord",
    "FAMILIES",
    "GovernedEnvironment",
    "SEVERITY_SCALE",
    "SQLResult",
    "SQLSandbox",
    "SQLTask",
    "SQLWorld",
    "SQL_ENV_DEFAULTS",
    "STRATEGIES",
    "SandboxError",
    "StepRecord",
    "TEXT_CHARSET",
    "TextToSQLEnv",
    "answers_match",
    "build_database",
    "config_from_kwargs",
    "create_governed_env",
    "database_fingerprint",
    "generate_tasks",
    "make_text_to_sql_env",
    "record_episodes_to_store",
    "split_statements",
    "violation_info",
]
