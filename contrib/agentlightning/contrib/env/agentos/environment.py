""":class:`GovernedEnvironment`: a Gymnasium environment whose every action goes through the kernel."""

from __future__ import annotations

import dataclasses
import inspect
import math
import random
import string
import time
import uuid
from typing import Any, Callable, Dict, List, Optional, SupportsFloat, Tuple

import gymnasium as gym
from gymnasium import spaces

from agentlightning.contrib.kernel.agentos import (
    Action,
    ActionContext,
    Decision,
    GovernanceKernel,
    Severity,
    as_kernel,
    governance_context,
)
from agentlightning.contrib.kernel.agentos.violations import finite_float

from .config import EnvironmentConfig, config_from_kwargs
from .records import EpisodeMetrics, EpisodeRecord, StepRecord, violation_info

__all__ = ["GovernedEnvironment", "create_governed_env", "TEXT_CHARSET", "DEFAULT_MAX_TEXT_CHARS"]

#: Characters of the default Text observation and action spaces: printable ASCII (SQL, prose).
TEXT_CHARSET = string.printable
#: Default maximum length of a text observation or action.
DEFAULT_MAX_TEXT_CHARS = 4096


def _accepts_rng(fn: Callable[..., Any]) -> bool:
    """True when ``fn`` takes a positional argument (then it is given the episode's ``random.Random``)."""
    try:
        parameters = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):  # builtins without a signature: call them without arguments
        return False
    return any(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL) for p in parameters)


def _identity(state: Any, action: Any) -> Any:
    return action


def _default_reward(state: Any, action: Any, result: Any) -> float:
    return 1.0 if result is not None else 0.0


def _default_task(rng: random.Random) -> str:
    return ""


def _text_space() -> spaces.Text:
    """The default observation and action space: printable ASCII text up to 4096 characters."""
    return spaces.Text(max_length=DEFAULT_MAX_TEXT_CHARS, min_length=0, charset=TEXT_CHARSET)


class GovernedEnvironment(gym.Env):
    """A ``gymnasium.Env`` in which every action is checked by the governance kernel first.

    An episode's state comes from ``task_generator`` (called with a ``random.Random`` seeded from
    the environment's ``np_random``, so ``reset(seed=...)`` is deterministic; zero-argument
    generators, as in the reference, are called without it). A step turns the action into
    ``Action(tool_name, {arg_name: action})``, checks it under a :func:`governance_context` whose
    rollout id is the episode id, and only an allowed action reaches ``executor(state, action)``
    (default: returns the action, as the reference). Then the reward is
    :meth:`EnvironmentConfig.shape` (the kernel's one reward formula, ``shape_governed_reward``)::

        reward = task_reward + step_penalty + sum(kernel.penalties.price(v) for v in violations)
                 + (success_bonus if the step is clean and successful)

    with the kernel's penalty table, which the config's must be (a violation has one price: see
    :class:`EnvironmentConfig`; a policy's explicit penalty wins, as in every room); ``task_reward =
    reward_fn(state, action, result)`` (default 1.0 when ``result`` is not None) for an executed
    step, 0 for a blocked one or one whose executor raised (the error is in ``info["error"]``). A
    step is *successful* when it executed without error, had no violation at all and earned
    ``task_reward > 0``; an episode is successful when one of its steps was and it was not ended by
    a critical violation. How an episode ends is :meth:`EnvironmentConfig.ending`; ``max_steps``
    truncates it here, not in a ``gymnasium.wrappers.TimeLimit``, because the end of an episode
    closes its books (kernel rollout state, recording, ``info["termination"]``) and a termination on
    the last step wins.

    ``info["cost"]`` is the step's constraint cost (``constraint_cost`` of its violations,
    critical 10, high 5, medium and low 1), as safety-gymnasium reports it.

    ``env.terminated`` is True while no episode is running (so the reference's
    ``while not env.terminated`` loop ends on truncation too); the step's own ``terminated`` and
    ``truncated`` say why an episode ended.

    **Customising.** An instance takes the reference's callables (``task_generator``,
    ``reward_fn``, ``executor``, ``observation_fn``). A subclass overrides the hooks instead (as
    :class:`TextToSQLEnv` does) and passes no callables: :meth:`_new_state`, :meth:`_observe`,
    :meth:`_execute`, :meth:`_task_reward`, :meth:`_start_episode`, :meth:`_end_episode`,
    :meth:`_reset_info` and :meth:`_step_info`; the defaults call the callables.

    >>> from agentlightning.contrib.kernel.agentos import SQLPolicy
    >>> env = GovernedEnvironment([SQLPolicy(deny=["DROP"])], task_generator=lambda rng: "clean up")
    >>> obs, info = env.reset(seed=0)
    >>> obs, info["episode"], info["kernel_policies"]
    ('clean up', 1, ['SQLPolicy'])
    >>> obs, reward, terminated, truncated, info = env.step("DROP TABLE users")
    >>> reward, terminated, info["cost"], info["violations"][0]["severity"]
    (-100.1, True, 10.0, 'critical')
    >>> env.get_metrics()["total_violations"]
    1
    """

    metadata = {"render_modes": ["ansi"]}

    def __init__(
        self,
        kernel: Any,
        task_generator: Optional[Callable[..., Any]] = None,
        reward_fn: Optional[Callable[[Any, Any, Any], SupportsFloat]] = None,
        config: Optional[EnvironmentConfig] = None,
        *,
        executor: Optional[Callable[[Any, Any], Any]] = None,
        tool_name: str = "database_query",
        arg_name: str = "query",
        observation_fn: Optional[Callable[[Any], Any]] = None,
        observation_space: Optional[spaces.Space] = None,
        action_space: Optional[spaces.Space] = None,
        agent_id: str = "env",
        record_episodes: bool = False,
        render_mode: Optional[str] = None,
    ) -> None:
        super().__init__()
        if config is None:
            config = EnvironmentConfig()
        if not isinstance(config, EnvironmentConfig):
            raise TypeError(
                f"config must be an EnvironmentConfig, got {type(config).__name__}; "
                "build one with EnvironmentConfig(max_steps=...)"
            )
        table = config.given_penalties
        if table is None and not isinstance(kernel, GovernanceKernel):
            table = config.severity_penalties  # a kernel built here prices as the reference's environment
        self.kernel: GovernanceKernel = as_kernel(kernel, penalties=table)
        if config.severity_penalties != self.kernel.penalties:  # no table given: the kernel's is the one
            config = dataclasses.replace(config, penalties=self.kernel.penalties)
        self.config = config
        callables = (
            ("task_generator", task_generator),
            ("reward_fn", reward_fn),
            ("executor", executor),
            ("observation_fn", observation_fn),
        )
        for name, fn in callables:
            if fn is not None and not callable(fn):
                raise TypeError(f"{name} must be callable, got {type(fn).__name__}")
        self.task_generator = task_generator if task_generator is not None else _default_task
        self._generator_takes_rng = _accepts_rng(self.task_generator)
        self.reward_fn = reward_fn if reward_fn is not None else _default_reward
        self.executor = executor if executor is not None else _identity
        self.observation_fn = observation_fn if observation_fn is not None else str
        for name, value in (("tool_name", tool_name), ("arg_name", arg_name), ("agent_id", agent_id)):
            if not isinstance(value, str) or not value:
                raise TypeError(f"{name} must be a non-empty str, got {value!r}")
        self.tool_name = tool_name
        self.arg_name = arg_name
        self.agent_id = agent_id
        if not isinstance(record_episodes, bool):
            raise TypeError(f"record_episodes must be True or False, got {record_episodes!r}")
        self.record_episodes = record_episodes
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be None or one of {self.metadata['render_modes']}, got {render_mode!r}")
        self.render_mode = render_mode
        self.observation_space = observation_space if observation_space is not None else _text_space()
        self.action_space = action_space if action_space is not None else _text_space()
        for name in ("observation_space", "action_space"):
            if not isinstance(getattr(self, name), spaces.Space):
                raise TypeError(f"{name} must be a gymnasium.spaces.Space, got {type(getattr(self, name)).__name__}")
        # A random per-environment prefix keeps episode ids unique when environments share a kernel.
        self._run_id = f"env-{uuid.uuid4().hex[:12]}"
        self._episode: Optional[EpisodeRecord] = None
        self._state: Any = None
        self._finished: List[EpisodeRecord] = []
        self._metrics = EpisodeMetrics()
        self.last_decision: Optional[Decision] = None
        self._closed = False

    # ------------------------------------------------------------------ properties
    @property
    def state(self) -> Any:
        """The current episode's state (what ``task_generator`` returned)."""
        return self._state

    @property
    def episode(self) -> Optional[EpisodeRecord]:
        """The current (or last) episode's record."""
        return self._episode

    @property
    def episode_id(self) -> Optional[str]:
        """The rollout id the kernel attributes this episode's checks to."""
        return self._episode.episode_id if self._episode is not None else None

    @property
    def terminated(self) -> bool:
        """True when no episode is running: before the first reset, and once an episode has
        terminated *or* been truncated (so ``while not env.terminated`` loops end)."""
        return self._episode is None or self._episode.done

    # ------------------------------------------------------------------ hooks (override in a subclass)
    def _new_state(self, rng: random.Random, options: Dict[str, Any]) -> Any:
        """The state of a new episode (``options["task"]`` if given, else the task generator's)."""
        if "task" in options:
            return options["task"]
        return self.task_generator(rng) if self._generator_takes_rng else self.task_generator()

    def _observe(self, state: Any) -> Any:
        """The observation of ``state`` (``observation_fn``)."""
        return self.observation_fn(state)

    def _check_action(self, action: Any) -> None:
        """Refuse an action this environment cannot take, before anything is checked or recorded
        (subclasses with a typed action raise a ``TypeError`` naming the type and the fix)."""

    def _execute(self, state: Any, action: Any) -> Any:
        """Run an action the kernel allowed (``executor``); an exception fails the step closed."""
        return self.executor(state, action)

    def _task_reward(self, state: Any, action: Any, result: Any) -> SupportsFloat:
        """The task reward of an executed action (``reward_fn``), before governance shapes it."""
        return self.reward_fn(state, action, result)

    def _start_episode(self, state: Any) -> None:
        """Called once a new episode's state is known (subclasses open sandboxes here)."""

    def _end_episode(self, episode: EpisodeRecord) -> None:
        """Called when an episode is finished or abandoned (subclasses roll back here)."""

    def _reset_info(self, state: Any) -> Dict[str, Any]:
        """Extra ``info`` entries of ``reset()`` (subclasses add theirs)."""
        return {}

    def _step_info(self, step: StepRecord) -> Dict[str, Any]:
        """Extra ``info`` entries of a step (subclasses add theirs)."""
        return {}

    # ------------------------------------------------------------------ gymnasium API
    def reset(
        self, *, seed: Optional[int] = None, options: Optional[Dict[str, Any]] = None
    ) -> Tuple[Any, Dict[str, Any]]:
        """Start a new episode. ``options={"task": state}`` uses ``state`` instead of the generator."""
        super().reset(seed=seed)
        if self._closed:
            raise RuntimeError("this environment is closed; create a new one")
        if options is not None and not isinstance(options, dict):
            raise TypeError(f"options must be a dict or None, got {type(options).__name__}")
        self._finish_episode("reset")
        rng = random.Random(int(self.np_random.integers(0, 2**63 - 1)))
        state = self._new_state(rng, options or {})
        index = self._metrics.start_episode()
        episode_id = f"{self._run_id}-{index}"
        self._state = state
        self._start_episode(state)
        observation = self._observe(state)
        self._episode = EpisodeRecord(
            episode_id=episode_id,
            index=index,
            task=state,
            observation=observation,
            agent_id=self.agent_id,
            penalties=self.config.severity_penalties,
        )
        self.last_decision = None
        info = {
            "episode": index,
            "kernel_policies": list(self.kernel.policy_names),
            "episode_id": episode_id,
            **self._reset_info(state),
        }
        return observation, info

    def step(self, action: Any) -> Tuple[Any, float, bool, bool, Dict[str, Any]]:
        """Check ``action`` with the kernel, execute it only if allowed, and score it."""
        if self._episode is None:
            raise gym.error.ResetNeeded("call reset() before step()")
        episode = self._episode
        if episode.done:
            raise gym.error.ResetNeeded(f"the episode ended ({episode.termination}); call reset() to start another")
        self._check_action(action)
        config = self.config
        step_no = len(episode.steps) + 1
        with governance_context(ActionContext(agent_id=self.agent_id, rollout_id=episode.episode_id)):
            decision = self.kernel.check(Action(self.tool_name, {self.arg_name: action}))
        self.last_decision = decision
        result, error, task_reward = self._run_allowed(decision, action)

        success = decision.allowed and error is None and not decision.violations and task_reward > 0
        record = StepRecord(
            step=step_no,
            action=action,
            decision=decision,
            task_reward=task_reward,
            step_penalty=config.step_penalty,
            governed_reward=config.shape(task_reward, decision.violations, succeeded=success),
            success=success,
            error=error,
            result=result,
        )
        episode.steps.append(record)
        self._metrics.add_step(record)

        critical = any(v.severity is Severity.CRITICAL for v in decision.violations)
        episode.termination = config.ending(step_no, critical=critical, succeeded=success)
        episode.truncated = episode.termination == "max_steps"
        episode.terminated = episode.done and not episode.truncated

        info: Dict[str, Any] = {
            "step": step_no,
            "violations": [violation_info(v, config.severity_penalties) for v in decision.violations],
            "verdict": decision.verdict.value,
            "blocked": decision.blocked,
            "executed": decision.allowed and error is None,
            "reason": decision.reason,
            "cost": record.cost,
            "task_reward": task_reward,
            "total_reward": episode.return_,
            "success": success,
            "episode_success": episode.success,
            "error": error,
            "termination": episode.termination,
            **self._step_info(record),
        }
        terminated, truncated = episode.terminated, episode.truncated
        if episode.done:
            self._finish_episode(episode.termination)
        return self._observe(self._state), record.reward, terminated, truncated, info

    def _run_allowed(self, decision: Decision, action: Any) -> Tuple[Any, Optional[str], float]:
        """``(result, error, task_reward)``: run the action if the kernel allowed it, and score it.

        A blocked action never runs (no result, task reward 0). An executor that raises fails the
        step closed: the error is reported, the task reward is 0.
        """
        if not decision.allowed:
            return None, None, 0.0
        value = decision.action.args.get(self.arg_name, action)  # a policy may have rewritten it
        started = time.perf_counter()
        try:
            result = self._execute(self._state, value)
        except Exception as err:  # noqa: BLE001 - fail closed: no reward, the error is reported
            error = f"{type(err).__name__}: {err}"
            self.kernel.record_outcome(decision, error=error, execution_time_ms=(time.perf_counter() - started) * 1e3)
            return None, error, 0.0
        self.kernel.record_outcome(decision, result=result, execution_time_ms=(time.perf_counter() - started) * 1e3)
        raw_reward = self._task_reward(self._state, value, result)
        task_reward = finite_float(raw_reward) if isinstance(raw_reward, (int, float)) else float(raw_reward)
        if task_reward is None or not math.isfinite(task_reward):
            raise ValueError(f"reward_fn returned a non-finite reward {raw_reward!r}")
        return result, None, task_reward

    def _finish_episode(self, how: str) -> None:
        """Close the books on the current episode (once): metrics, recording, kernel state."""
        episode = self._episode
        if episode is None or episode.finished:
            return
        if episode.termination is None:
            episode.termination = how
        episode.finished = True
        self._metrics.finish_episode(episode)
        if self.record_episodes and episode.steps:
            self._finished.append(episode)
        self._end_episode(episode)
        if self.config.reset_kernel_state == "all":
            self.kernel.reset()
        elif self.config.reset_kernel_state:
            self.kernel.end_rollout(episode.episode_id)

    def render(self) -> Optional[str]:
        """``render_mode="ansi"``: one line about the current episode and its last step."""
        if self.render_mode != "ansi":
            return None
        if self._episode is None:
            return "no episode yet; call reset()"
        episode = self._episode
        last = episode.steps[-1] if episode.steps else None
        line = f"episode {episode.index} step {len(episode.steps)} return {episode.return_:+.2f}"
        if last is not None:
            line += f" last: {last.decision.verdict.value} reward {last.reward:+.2f} cost {last.cost:g}"
        return line + "\n"

    def close(self) -> None:
        """Finish the running episode (metrics, recording, kernel state). Safe to call twice."""
        if not self._closed:
            self._finish_episode("reset")
            self._closed = True
        super().close()

    # ------------------------------------------------------------------ metrics and recording
    def get_metrics(self) -> Dict[str, Any]:
        """Totals over every episode started so far (the running one included); see :class:`EpisodeMetrics`.

        ``successful_episodes`` counts episodes (not steps) that succeeded, so ``success_rate``
        is at most 1; the per-episode rates divide by ``total_episodes``.
        """
        return self._metrics.summary(self._episode)

    def pop_episodes(self, *, include_current: bool = False) -> List[EpisodeRecord]:
        """The finished episodes recorded since the last call (``record_episodes=True``), oldest first.

        With ``include_current=True`` the running episode is finished (as by a reset) and
        included too. Episodes without a step are not recorded.
        """
        if not self.record_episodes:
            raise RuntimeError("this environment does not record episodes; create it with record_episodes=True")
        if include_current:
            self._finish_episode("reset")
        episodes, self._finished = self._finished, []
        return episodes


#: Keyword arguments of GovernedEnvironment that create_governed_env passes through (not config fields).
_ENV_OPTIONS = (
    "executor",
    "tool_name",
    "arg_name",
    "observation_fn",
    "observation_space",
    "action_space",
    "agent_id",
    "record_episodes",
    "render_mode",
)


def create_governed_env(
    kernel: Any,
    task_generator: Optional[Callable[..., Any]] = None,
    reward_fn: Optional[Callable[[Any, Any, Any], SupportsFloat]] = None,
    *,
    config: Optional[EnvironmentConfig] = None,
    **fields: Any,
) -> GovernedEnvironment:
    """A :class:`GovernedEnvironment` whose config fields are keyword arguments.

    Keywords naming an :class:`EnvironmentConfig` field override ``config`` (or the defaults);
    the environment's own options (``executor``, ``tool_name``, ``arg_name``, ``observation_fn``,
    ``observation_space``, ``action_space``, ``agent_id``, ``record_episodes``, ``render_mode``)
    are passed to it. Anything else is a ``TypeError`` naming the valid fields.

    >>> from agentlightning.contrib.kernel.agentos import SQLPolicy
    >>> env = create_governed_env([SQLPolicy(deny=["DROP"])], max_steps=200, violation_penalty=-20.0)
    >>> env.config.max_steps, env.config.violation_penalty, env.config.terminate_on_critical
    (200, -20.0, True)
    """
    options = {k: fields.pop(k) for k in _ENV_OPTIONS if k in fields}
    return GovernedEnvironment(kernel, task_generator, reward_fn, config_from_kwargs(config, **fields), **options)
