""":class:`TextToSQLEnv`: the governed environment on the text-to-SQL world, and its discrete wrapper."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any, Dict, Optional, Tuple, Union

import gymnasium as gym
from gymnasium import spaces

from .config import EnvironmentConfig, config_from_kwargs
from .environment import DEFAULT_MAX_TEXT_CHARS, TEXT_CHARSET, GovernedEnvironment
from .records import EpisodeRecord, StepRecord
from .sql_world import FAMILIES, STRATEGIES, SQLResult, SQLSandbox, SQLTask, SQLWorld

__all__ = ["TextToSQLEnv", "DiscreteStrategyWrapper", "make_text_to_sql_env", "SQL_ENV_DEFAULTS"]

#: The text-to-SQL environment's config defaults: one task per episode, ended by its first clean
#: success, at most 5 attempts; everything else is ``EnvironmentConfig``'s default.
SQL_ENV_DEFAULTS: Dict[str, Any] = {"max_steps": 5, "terminate_on_success": True}

MAX_QUESTION_CHARS = 1024


class TextToSQLEnv(GovernedEnvironment):
    """Answer questions and make changes on a real SQLite database, one task per episode.

    * observation: the task's question (``Text``, printable ASCII, up to 1024 characters);
    * action: SQL text (``Text``, up to 4096 characters), checked by the kernel as
      ``database_query(query=<sql>)``; allowed SQL runs in a :class:`SQLSandbox` (an in-memory
      copy of the database, one transaction per episode, rolled back at its end);
    * task reward: 1.0 when the task is solved after the step (:meth:`SQLSandbox.check`: a
      question's answer matches the reference query's, a change leaves the whole database as
      the reference statement does), else 0.0; plus the governed shaping of
      :class:`GovernedEnvironment`.

    ``reset(options={"task_id": ...})`` (or ``{"task": SQLTask}``) picks a task; otherwise a task
    of ``split`` is drawn with the environment's seeded generator. ``info`` adds ``task_id``,
    ``family``, ``temptation``, the step's ``rows`` (result rows), ``rows_destroyed`` and
    ``tables_dropped``.

    It customises :class:`GovernedEnvironment` one way only: by overriding its hooks (the task,
    observation, execution, task reward, episode start and end, info); it passes no callables.

    >>> import tempfile, os
    >>> from agentlightning.contrib.kernel.agentos import SQLPolicy
    >>> world = SQLWorld.create(os.path.join(tempfile.mkdtemp(), "shop.db"))
    >>> env = TextToSQLEnv([SQLPolicy(deny=["DROP", "DELETE", "TRUNCATE"])], world)
    >>> question, info = env.reset(seed=0, options={"task_id": "remove_test_accounts-00"})
    >>> shortcut = world.task("remove_test_accounts-00").candidates["destructive_shortcut"]
    >>> _, reward, terminated, _, info = env.step(shortcut)
    >>> reward, terminated, info["blocked"], info["rows_destroyed"]
    (-100.1, True, True, 0)
    """

    def __init__(
        self,
        kernel: Any,
        world: SQLWorld,
        *,
        split: str = "train",
        config: Optional[EnvironmentConfig] = None,
        record_episodes: bool = False,
        agent_id: str = "sql-agent",
        render_mode: Optional[str] = None,
    ) -> None:
        if not isinstance(world, SQLWorld):
            raise TypeError(f"world must be an SQLWorld (SQLWorld.create(db_path, seed)), got {type(world).__name__}")
        self.world = world
        self.split = split
        self.tasks: Tuple[SQLTask, ...] = world.split(split)
        if not self.tasks:
            raise ValueError(f"the world has no {split!r} tasks")
        self.sandbox = SQLSandbox(world.db_path)
        super().__init__(
            kernel,
            config=config if config is not None else EnvironmentConfig(**SQL_ENV_DEFAULTS),
            tool_name="database_query",
            arg_name="query",
            observation_space=spaces.Text(max_length=MAX_QUESTION_CHARS, min_length=1, charset=TEXT_CHARSET),
            action_space=spaces.Text(max_length=DEFAULT_MAX_TEXT_CHARS, min_length=0, charset=TEXT_CHARSET),
            agent_id=agent_id,
            record_episodes=record_episodes,
            render_mode=render_mode,
        )

    @property
    def task(self) -> Optional[SQLTask]:
        """The current episode's task."""
        return self.state

    # The GovernedEnvironment hooks; this subclass passes no callables up.
    def _new_state(self, rng: random.Random, options: Dict[str, Any]) -> SQLTask:
        if "task_id" in options:
            return self.world.task(options["task_id"])
        if "task" not in options:
            return rng.choice(self.tasks)
        task = options["task"]
        if not isinstance(task, SQLTask):
            raise TypeError(f"options['task'] must be an SQLTask, got {type(task).__name__}")
        return task

    def _observe(self, task: SQLTask) -> str:
        return task.question

    def _check_action(self, action: Any) -> None:
        if not isinstance(action, str):
            fix = (
                "join several statements into one text: env.step('; '.join(statements))"
                if isinstance(action, (list, tuple))
                else "pass the SQL as a string, e.g. env.step('SELECT name FROM users')"
            )
            raise TypeError(f"a TextToSQLEnv action is SQL text (str), got {type(action).__name__} {action!r}: {fix}")

    def _execute(self, task: SQLTask, sql: Any) -> SQLResult:
        return self.sandbox.execute(sql)

    def _task_reward(self, task: SQLTask, sql: Any, result: SQLResult) -> float:
        return 1.0 if self.sandbox.check(task, result) else 0.0

    def _start_episode(self, task: SQLTask) -> None:
        self.sandbox.begin()

    def _end_episode(self, episode: EpisodeRecord) -> None:
        self.sandbox.rollback()

    def _reset_info(self, task: SQLTask) -> Dict[str, Any]:
        return {"task_id": task.task_id, "family": task.family, "kind": task.kind, "temptation": task.temptation}

    def _step_info(self, step: StepRecord) -> Dict[str, Any]:
        task: SQLTask = self.state
        result: Optional[SQLResult] = step.result
        return {
            "task_id": task.task_id,
            "family": task.family,
            "temptation": task.temptation,
            "rows": None if result is None or result.rows is None else [list(r) for r in result.rows],
            "rows_destroyed": 0 if result is None else result.rows_destroyed,
            "tables_dropped": [] if result is None else list(result.tables_dropped),
        }

    def close(self) -> None:
        super().close()
        try:
            self.sandbox.close()
        except Exception:  # noqa: BLE001 - already closed
            pass


class DiscreteStrategyWrapper(gym.Wrapper):
    """The text-to-SQL environment as a contextual bandit for tabular and Stable-Baselines3 learners.

    * observation: ``Discrete(len(FAMILIES))``, the index of the task's family in :data:`FAMILIES`
      (the question text is in ``info["question"]``);
    * action: ``Discrete(len(STRATEGIES))``; action ``a`` submits the current task's candidate
      ``STRATEGIES[a]`` (``precise``, ``sloppy``, ``destructive_shortcut``) as the SQL.

    Everything else (kernel check, reward, cost, termination, metrics) is the wrapped environment's;
    ``info["strategy"]`` names the strategy taken.
    """

    def __init__(self, env: TextToSQLEnv) -> None:
        if not isinstance(env.unwrapped, TextToSQLEnv):
            raise TypeError(f"DiscreteStrategyWrapper wraps a TextToSQLEnv, got {type(env.unwrapped).__name__}")
        super().__init__(env)
        self.strategies: Tuple[str, ...] = STRATEGIES
        self.families: Tuple[str, ...] = FAMILIES
        self.observation_space = spaces.Discrete(len(self.families))
        self.action_space = spaces.Discrete(len(self.strategies))

    def _family_index(self) -> int:
        return self.families.index(self.env.unwrapped.state.family)

    def reset(
        self, *, seed: Optional[int] = None, options: Optional[Dict[str, Any]] = None
    ) -> Tuple[int, Dict[str, Any]]:
        question, info = self.env.reset(seed=seed, options=options)
        info["question"] = question
        return self._family_index(), info

    def step(self, action: Any) -> Tuple[int, float, bool, bool, Dict[str, Any]]:
        index = int(action)
        if not 0 <= index < len(self.strategies):
            raise ValueError(
                f"action must be in 0..{len(self.strategies) - 1} (one of {list(self.strategies)}), got {action!r}"
            )
        strategy = self.strategies[index]
        _, reward, terminated, truncated, info = self.env.step(self.env.unwrapped.state.candidates[strategy])
        info["strategy"] = strategy
        return self._family_index(), reward, terminated, truncated, info


def make_text_to_sql_env(
    kernel: Any,
    db_path: Union[str, Path],
    split: str = "train",
    *,
    seed: int = 0,
    discrete: bool = False,
    config: Optional[EnvironmentConfig] = None,
    record_episodes: bool = False,
    **config_fields: Any,
) -> Union[TextToSQLEnv, DiscreteStrategyWrapper]:
    """A governed text-to-SQL environment on the database at ``db_path``.

    ``seed`` is the *world* seed: the database is built there for it (or reused if it already
    was) and the tasks derived from it; episode randomness comes from ``reset(seed=...)``.
    ``discrete=True`` wraps the environment in :class:`DiscreteStrategyWrapper`. ``config_fields``
    override :data:`SQL_ENV_DEFAULTS` / ``config`` (an unknown field is a ``TypeError``).

    >>> import tempfile, os
    >>> from agentlightning.contrib.kernel.agentos import SQLPolicy
    >>> env = make_text_to_sql_env([SQLPolicy()], os.path.join(tempfile.mkdtemp(), "shop.db"), discrete=True)
    >>> env.observation_space, env.action_space, env.unwrapped.config.max_steps
    (Discrete(7), Discrete(3), 5)
    """
    if not isinstance(discrete, bool):
        raise TypeError(f"discrete must be True or False, got {discrete!r}")
    base = config if config is not None else EnvironmentConfig(**SQL_ENV_DEFAULTS)
    env = TextToSQLEnv(
        kernel,
        SQLWorld.create(db_path, seed),
        split=split,
        config=config_from_kwargs(base, **config_fields),
        record_episodes=record_episodes,
    )
    return DiscreteStrategyWrapper(env) if discrete else env
