"""What ``AgentOSRunner`` accepts as "the agent": a ``LitAgent``, a plain function, or nothing.

* :func:`as_agent` turns a plain function ``fn(task)`` (or ``fn(task, llm)``,
  ``fn(task, prompt_template)``, each optionally with ``rollout``) into a real ``LitAgent``
  (agentlightning's own ``FunctionalLitAgent``), with a clear error for anything else.
* :class:`TaskActionAgent` is the agent a runner uses when it was given none (the reference's
  quick start, ``await GovernedRunner(kernel).step("DROP TABLE users")``): the task itself is the
  action to govern. Its output, :class:`ActionOutcome`, is the kernel's decision on the task.
* :class:`GovernedAgent` is what the runner hands to agentlightning: the user's agent, composed
  (never patched), each rollout method run inside the attempt's governance record.
"""

from __future__ import annotations

import asyncio
import inspect
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Mapping, Optional, Protocol, Tuple

from opentelemetry.sdk.trace import ReadableSpan

from agentlightning.litagent import LitAgent
from agentlightning.litagent.decorator import FunctionalLitAgent
from agentlightning.types import Span, SpanCoreFields

from agentlightning.contrib.kernel.agentos import Action, Decision
from agentlightning.contrib.kernel.agentos.views import forwarded

from .attempt import RolloutGovernance, active_rollout
from .tools import PolicyViolationError

__all__ = ["ActionOutcome", "AgentError", "GovernedAgent", "TaskActionAgent", "as_agent", "task_action"]

#: Parameters agentlightning's FunctionalLitAgent fills in by name (besides the task).
_INJECTED = ("llm", "prompt_template", "rollout")


def as_agent(agent: Any) -> LitAgent[Any]:
    """``agent`` as a ``LitAgent``: a ``LitAgent`` is returned as is, a plain function (sync or
    async) is wrapped in agentlightning's ``FunctionalLitAgent``.

    The function is called with the task as its first argument; parameters named ``llm``,
    ``prompt_template`` and ``rollout`` are filled in from the rollout's resources. It returns what
    a ``LitAgent.rollout`` returns: a float (the reward), ``None``, or (in ``AgentOSRunner``) any
    other result, which becomes the rollout's ``task_output``.

    ``Trainer.fit`` needs a ``LitAgent``: pass ``trainer.fit(as_agent(fn))``.

    >>> agent = as_agent(lambda task: 1.0 if "SELECT" in task else 0.0)
    >>> type(agent).__name__, agent.is_async()
    ('FunctionalLitAgent', False)
    >>> as_agent(42)  # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ...
    TypeError: the agent must be an agentlightning LitAgent or a function task -> result,
    e.g. runner.init(lambda task: 1.0); got int
    """
    if isinstance(agent, LitAgent):
        return agent
    if isinstance(agent, type):
        hint = (
            f"an instance: {agent.__name__}()"
            if issubclass(agent, LitAgent)
            else "a LitAgent instance or a function task -> result"
        )
        raise TypeError(f"the agent must be {hint}, not the class {agent.__name__}")
    if not callable(agent):
        raise TypeError(
            "the agent must be an agentlightning LitAgent or a function task -> result, "
            f"e.g. runner.init(lambda task: 1.0); got {type(agent).__name__}"
        )
    try:
        signature = inspect.signature(agent)
    except (TypeError, ValueError) as err:
        raise TypeError(
            f"cannot read the signature of {agent!r} ({err}); wrap it: runner.init(lambda task: fn(task))"
        ) from err
    params = list(signature.parameters.values())
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    takes_task = bool(positional) or any(p.kind is p.VAR_POSITIONAL for p in params)
    others = [
        p.name
        for p in positional[1:] + [p for p in params if p.kind is p.KEYWORD_ONLY]
        if p.default is p.empty and p.name not in _INJECTED
    ]
    if not takes_task or others:
        problem = "takes no argument for the task" if not takes_task else f"requires {others}, which nothing passes"
        raise TypeError(
            f"agent function {getattr(agent, '__name__', agent)!r}{signature} {problem}; an agent function is "
            f"fn(task), optionally with parameters named llm, prompt_template or rollout "
            f"(a LitAgent's rollout(task, resources, rollout) belongs in a LitAgent subclass)"
        )
    return FunctionalLitAgent(agent)


def needs_resource(agent: LitAgent[Any], name: str) -> bool:
    """Whether a function agent asks for the resource ``name`` (``llm`` or ``prompt_template``)."""
    if not isinstance(agent, FunctionalLitAgent):
        return False
    return name in agent._sig.parameters  # agentlightning's own cached signature of the function


def task_action(task: Any, tool_name: str, arg_name: str) -> Action:
    """The action a task stands for when the task itself is the action: a string is
    ``tool_name(arg_name=task)`` (``database_query(query=...)`` by default), a mapping is the
    tool's arguments, an :class:`Action` is itself.

    >>> task_action("DROP TABLE users", "database_query", "query")
    Action(tool_name='database_query', args={'query': 'DROP TABLE users'}, cost_usd=0.0)
    """
    if isinstance(task, Action):
        return task
    if isinstance(task, str):
        return Action(tool_name, {arg_name: task})
    if isinstance(task, Mapping) and all(isinstance(k, str) for k in task):
        return Action.of_call(tool_name, dict(task))  # refused and recorded if it cannot be snapshot
    raise TypeError(
        f"with no agent, the task itself is the action to govern, so it must be a string (checked as "
        f"{tool_name}({arg_name}=task)), a dict of {tool_name}'s arguments or an Action; got {type(task).__name__}. "
        f"To run your own agent on this task, call runner.init(agent) first."
    )


@dataclass(frozen=True)
class ActionOutcome:
    """The output of :class:`TaskActionAgent`: the kernel's decision on the task.

    ``accuracy`` is 1.0 when the kernel allowed the action and 0.0 when it blocked it: with no
    agent there is nothing else to score, and the reference's ``accuracy_reward``
    (``rollout.task_output.accuracy``) needs it. Nothing is executed; a real task score needs a
    real agent (``runner.init(agent)``).
    """

    decision: Decision

    action = forwarded("decision.action", "The action the kernel judged.")
    verdict = forwarded("decision.verdict.value", "The verdict by name: allowed, blocked, modified or warned.")
    allowed = forwarded("decision.allowed", "The kernel allowed the action.")
    reason = forwarded("decision.reason", "Why the kernel decided so.")

    @property
    def accuracy(self) -> float:
        return 1.0 if self.decision.allowed else 0.0

    def __repr__(self) -> str:
        return (
            f"ActionOutcome(verdict={self.verdict!r}, action={self.action.tool_name}({self.action.args!r}), "
            f"accuracy={self.accuracy})"
        )


class TaskActionAgent(LitAgent[Any]):
    """The agent of an ``AgentOSRunner`` that was given none: the task itself is the action.

    Each rollout checks the task (see :func:`task_action`) with the runner's kernel, records the
    decision like any governed tool call (check and violation spans, audit record), and returns an
    :class:`ActionOutcome`. A blocked task makes the rollout unsuccessful (``success=False``), as
    ``govern_input=True`` does; with ``fail_on_violation=True`` it raises
    :class:`PolicyViolationError`. Nothing is executed.

    >>> TaskActionAgent().tool_name, TaskActionAgent().arg_name
    ('database_query', 'query')
    """

    def __init__(self, tool_name: str = "database_query", arg_name: str = "query") -> None:
        super().__init__()
        self.tool_name = tool_name
        self.arg_name = arg_name

    def rollout(self, task: Any, resources: Any, rollout: Any) -> ActionOutcome:
        record = active_rollout()
        if record is None:
            raise RuntimeError(
                "TaskActionAgent governs its task with the runner's kernel; run it with AgentOSRunner.step(task)"
            )
        return ActionOutcome(govern_task(record, task_action(task, self.tool_name, self.arg_name)))


def govern_task(record: Any, action: Action) -> Decision:
    """Check the task itself, as ``action``, in the attempt ``record``: a blocked task is recorded
    as such (the agent does not act on it) and, with ``fail_on_violation``, fails the rollout."""
    decision = record.decide(action)
    if decision.blocked:
        record.record_input_blocked()
        if record.fail_on_violation:
            raise PolicyViolationError(decision)
    return decision


def describe(agent: Optional[LitAgent[Any]]) -> str:
    """A short name of ``agent`` for messages."""
    if agent is None:
        return "no agent"
    func: Optional[Callable[..., Any]] = getattr(agent, "_rollout_func", None)
    if func is not None:
        return f"function {getattr(func, '__name__', repr(func))}"
    return type(agent).__name__


class AgentError(RuntimeError):
    """The agent raised a ``BaseException`` that is not an ``Exception`` (and not an interrupt,
    an exit or a cancellation). agentlightning's runner only fails an attempt on an ``Exception``:
    anything else would leave the attempt marked succeeded and end ``runner.iter()``. The agent's
    exception is the ``__cause__``."""


#: What the runner lets pass unchanged: they stop the program or the task, not just the agent.
_STOPPING = (KeyboardInterrupt, SystemExit, GeneratorExit, asyncio.CancelledError)


def reraise(err: BaseException) -> None:
    """Re-raise what the agent raised; a ``BaseException`` that is not an ``Exception`` (nor an
    interrupt, an exit or a cancellation) becomes an :class:`AgentError`, which fails the attempt."""
    if isinstance(err, (Exception, *_STOPPING)):
        raise err
    raise AgentError(f"the agent raised {type(err).__name__}: {err}") from err


def is_span_list(result: Any) -> bool:
    """Whether an agent's ``result`` is a list of spans, which agentlightning stores as the trace."""
    return (
        isinstance(result, list)
        and len(result) > 0
        and all(isinstance(item, (ReadableSpan, Span, SpanCoreFields)) for item in result)
    )


def is_plain_result(result: Any) -> bool:
    """Whether an agent's ``result`` is its task's result and not something agentlightning stores
    (a reward or spans): a dict, a string, rows from ``fetchall()``, an object, an empty list."""
    return result is not None and not isinstance(result, (bool, int, float)) and not is_span_list(result)


class GovernanceOfAttempts(Protocol):
    """What :class:`GovernedAgent` asks of its runner (``AgentOSRunner``)."""

    reward_fn: Any

    def attempt_record(self, rollout: Any) -> RolloutGovernance: ...

    def task_allowed(self, record: RolloutGovernance, task: Any) -> bool: ...


class GovernedAgent(LitAgent[Any]):
    """The user's agent, run by ``AgentOSRunner`` inside each attempt's governance record.

    agentlightning's runner calls one of the four rollout methods; each finds the attempt's
    record (filed by the runner under its rollout and attempt ids), makes it the active one for
    the agent's task and the threads it starts, records that the agent started, checks the task
    itself when the task is the action, runs the wrapped agent's same method and records how it
    ended: the result it returned, or that it raised. It concludes nothing: the runner does, once,
    when the attempt ends. The wrapped agent (``.agent``) is never modified.

    What it hands back to agentlightning is what agentlightning should store: an int or bool
    reward the agent returned, or its spans; ``None`` for anything else (the task's result, kept
    as ``task_output``). A float reward is stored by the runner instead, after the attempt's
    held-back check spans and in the same store call (with a ``reward_fn`` it is not stored
    unshaped: it is the base of the shaped one).

    >>> from agentlightning.litagent.decorator import FunctionalLitAgent
    >>> inner = FunctionalLitAgent(lambda task: 1.0)
    >>> governed = GovernedAgent(inner)
    >>> governed.agent is inner, governed.is_async()
    (True, False)
    """

    def __init__(self, agent: LitAgent[Any]) -> None:
        super().__init__()
        if not isinstance(agent, LitAgent):
            raise TypeError(f"GovernedAgent wraps a LitAgent (see as_agent), got {type(agent).__name__}")
        self.agent = agent

    def is_async(self) -> bool:
        return self.agent.is_async()

    def training_rollout(self, task: Any, resources: Any, rollout: Any) -> Any:
        return self._run(self.agent.training_rollout, task, resources, rollout)

    def validation_rollout(self, task: Any, resources: Any, rollout: Any) -> Any:
        return self._run(self.agent.validation_rollout, task, resources, rollout)

    async def training_rollout_async(self, task: Any, resources: Any, rollout: Any) -> Any:
        return await self._run_async(self.agent.training_rollout_async, task, resources, rollout)

    async def validation_rollout_async(self, task: Any, resources: Any, rollout: Any) -> Any:
        return await self._run_async(self.agent.validation_rollout_async, task, resources, rollout)

    def _run(self, method: Callable[..., Any], task: Any, resources: Any, rollout: Any) -> Any:
        runner, record = self._start(rollout)
        with record.activate():
            if not runner.task_allowed(record, task):
                return None
            try:
                result = method(task, resources=resources, rollout=rollout)
            except BaseException as err:
                record.record_agent_failed()
                reraise(err)
        return self._returned(runner, record, result)

    async def _run_async(self, method: Callable[..., Awaitable[Any]], task: Any, resources: Any, rollout: Any) -> Any:
        runner, record = self._start(rollout)
        with record.activate():
            if not runner.task_allowed(record, task):
                return None
            try:
                result = await method(task, resources=resources, rollout=rollout)
            except BaseException as err:
                record.record_agent_failed()
                reraise(err)
        return self._returned(runner, record, result)

    def _start(self, rollout: Any) -> Tuple[GovernanceOfAttempts, RolloutGovernance]:
        runner: GovernanceOfAttempts = self.get_runner()  # type: ignore[assignment]
        record = runner.attempt_record(rollout)
        record.record_agent_started()
        return runner, record

    @staticmethod
    def _returned(runner: GovernanceOfAttempts, record: RolloutGovernance, result: Any) -> Any:
        """Record what the agent returned; hand agentlightning what it should store."""
        reward = None
        if runner.reward_fn is not None and isinstance(result, (bool, int, float)):
            # The agent's own reward is the base of the shaped one; it is not stored unshaped.
            reward = float(result)
        record.record_agent_result(result, reward)
        if reward is not None or is_plain_result(result):
            # A task result is not a reward: agentlightning's LitAgentRunner would fail the rollout
            # on it (TypeError or ValueError: Invalid raw result type).
            return None
        if isinstance(result, float) and record.defer_clean_check_spans:
            # The reward agentlightning would store (its emit_reward span, in two store calls) goes
            # into the runner's one store call with the held-back check spans, last, so it is still
            # the attempt's final reward. (An int or a bool is left to agentlightning, which warns.)
            record.hold_reward_span(result)
            return None
        return result
