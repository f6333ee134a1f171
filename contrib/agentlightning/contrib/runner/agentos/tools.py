"""Governed tools: an agent's tool calls go through the kernel inside a governed rollout.

:func:`governed_tool` wraps a function (sync or async). Inside a rollout run by
:class:`AgentOSRunner`, every call is checked by the runner's kernel, recorded as native spans of
that rollout and attempt, and executed only when allowed. A blocked call does not run: it raises
:class:`ActionBlockedError`, whose message names the policy, so an LLM agent can read it and try
something else.

What was checked is what runs: the call's arguments are bound to the tool's signature, frozen
into the action's snapshot (plain values; lists become tuples, dicts read-only), checked, and the
tool is called with exactly the snapshot's values, so neither the agent nor a policy can change
them after the check. The wrapper has no ``__wrapped__``: the only way to the tool through it is
the governed one (its ``__signature__`` is the tool's, for frameworks that read it).
"""

from __future__ import annotations

import functools
import inspect
import time
from typing import Any, Callable, Mapping, Optional, Tuple, TypeVar, overload

from agentlightning.contrib.kernel.agentos import Action, Decision, GovernanceKernel, PolicyViolation
from agentlightning.contrib.kernel.agentos.actions import NO_COST, ActionContext
from agentlightning.contrib.kernel.agentos.must_await import MustAwait
from agentlightning.contrib.kernel.agentos.sql import SQLEnvelope
from agentlightning.contrib.kernel.agentos.sql.envelope import ENVELOPE_NAME

from .attempt import active_rollout

__all__ = ["ActionBlockedError", "PolicyViolationError", "governed_sql", "governed_tool"]

F = TypeVar("F", bound=Callable[..., Any])


class ActionBlockedError(Exception):
    """A governed tool call was blocked; the tool did not run. ``str(err)`` explains why.

    Agents catch it to recover (an LLM agent can be shown the message as the tool's result).
    """

    def __init__(self, decision: Decision) -> None:
        self.decision = decision
        self.violations: Tuple[PolicyViolation, ...] = decision.violations
        super().__init__(f"action {decision.action.tool_name!r} blocked by policy: {decision.reason}")


class PolicyViolationError(RuntimeError):
    """Raised instead of :class:`ActionBlockedError` when the runner has ``fail_on_violation=True``:
    the rollout fails (and ``runner.step`` raises). The violation is recorded before it is raised."""

    def __init__(self, decision: Decision) -> None:
        self.decision = decision
        self.violations: Tuple[PolicyViolation, ...] = decision.violations
        super().__init__(f"policy violation in {decision.action.tool_name!r}: {decision.reason}")


def _decide(tool_name: str, call_args: dict, kernel: Optional[GovernanceKernel]) -> Tuple[Decision, GovernanceKernel]:
    """The decision on one call, and the kernel that made it (which records the call's outcome)."""
    record = active_rollout()
    # The kernel builds the call's action (refused and recorded if it cannot be snapshot), so it can
    # answer a call it has judged before from its memory of pure policies' answers.
    if record is not None:
        kernel = kernel or record.kernel
        decision = record.decide(tool_name, kernel, args=call_args)
        fail = record.fail_on_violation
    elif kernel is not None:
        decision = kernel.check(tool_name, call_args)
        fail = False
    else:
        raise RuntimeError(
            f"governed_tool {tool_name!r} was called outside a governed rollout and without kernel=...; "
            f"refusing to run it ungoverned. Run the agent with AgentOSRunner, or pass kernel= to governed_tool."
        )
    if decision.blocked:
        raise PolicyViolationError(decision) if fail else ActionBlockedError(decision)
    return decision, kernel


def _record(
    kernel: GovernanceKernel, decision: Decision, started: float, result: Any = None, error: Any = None
) -> None:
    elapsed_ms = (time.perf_counter() - started) * 1e3
    kernel.record_outcome(decision, result=result, error=error, execution_time_ms=elapsed_ms)


_BY_NAME = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)


def _argument_binder(signature: inspect.Signature, by_name: bool) -> Callable[[tuple, dict], dict]:
    """``(args, kwargs) -> {parameter name: value}`` as ``signature.bind`` gives it.

    ``Signature.bind`` is the slowest step of a governed call; for the usual tool signature
    (``by_name``: parameters that can all be passed by name, no ``*args``/``**kwargs``) a zip does
    the same, and anything unusual (or a call that does not fit) goes through ``bind`` and its
    errors.
    """
    if not by_name:
        return lambda args, kwargs: dict(signature.bind(*args, **kwargs).arguments)
    params = list(signature.parameters.values())
    positional = tuple(p.name for p in params if p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD)
    names = frozenset(p.name for p in params)
    required = frozenset(p.name for p in params if p.default is inspect.Parameter.empty)

    def bind(args: tuple, kwargs: dict) -> dict:
        if len(args) <= len(positional):
            arguments = dict(zip(positional, args))
            if not kwargs or (kwargs.keys() <= names and not kwargs.keys() & arguments.keys()):
                arguments.update(kwargs)
                if required <= arguments.keys():
                    # In parameter order, as bind() gives it.
                    if not kwargs:
                        return arguments
                    return {n: arguments[n] for n in signature.parameters if n in arguments}
        return dict(signature.bind(*args, **kwargs).arguments)

    return bind


def _call_arguments(signature: inspect.Signature, by_name: bool) -> Callable[[Mapping[str, Any]], Tuple[tuple, dict]]:
    """``{parameter name: value} -> (args, kwargs)`` that call the tool with those arguments."""
    if by_name:
        return lambda arguments: ((), arguments)

    def split(arguments: Mapping[str, Any]) -> Tuple[tuple, dict]:
        bound = signature.bind_partial()
        bound.arguments.update(arguments)
        return bound.args, bound.kwargs

    return split


@overload
def governed_tool(tool_name: str, fn: F, *, kernel: Optional[GovernanceKernel] = None) -> F: ...
@overload
def governed_tool(
    tool_name: str, fn: None = None, *, kernel: Optional[GovernanceKernel] = None
) -> Callable[[F], F]: ...
def governed_tool(tool_name: str, fn: Optional[F] = None, *, kernel: Optional[GovernanceKernel] = None) -> Any:
    """Route every call of ``fn`` through the kernel as the action ``tool_name(**arguments)``.

    The action's arguments are ``fn``'s bound arguments by parameter name, so
    ``query = governed_tool("database_query", execute_query)`` with
    ``def execute_query(query): ...`` is checked by :class:`SQLPolicy` on ``query``. ``fn``
    receives the frozen snapshot the kernel judged (a list argument arrives as a tuple, a dict as
    a read-only dict); if a policy rewrites the action, the rewritten snapshot. Works as a
    decorator too. The returned function has no ``__wrapped__`` (no ungoverned way to ``fn``).
    ``kernel`` is optional inside :class:`AgentOSRunner` (the runner's kernel is used).

    >>> from agentlightning.contrib.kernel.agentos import GovernanceKernel, SQLPolicy
    >>> kernel = GovernanceKernel([SQLPolicy(deny=["DROP"])])
    >>> run_sql = governed_tool("database_query", lambda query: f"ran {query}", kernel=kernel)
    >>> run_sql("SELECT 1")
    'ran SELECT 1'
    >>> try:
    ...     run_sql(query="DROP TABLE users")
    ... except ActionBlockedError as err:
    ...     print(err)
    action 'database_query' blocked by policy: SQLPolicy[critical]: DROP statement denied: DROP TABLE users
    """
    if not isinstance(tool_name, str) or not tool_name:
        raise TypeError(f"tool_name must be a non-empty str, got {tool_name!r}")
    if kernel is not None and not isinstance(kernel, GovernanceKernel):
        raise TypeError(f"kernel must be a GovernanceKernel, got {type(kernel).__name__}")
    if fn is None:
        return lambda f: governed_tool(tool_name, f, kernel=kernel)
    if not callable(fn):
        raise TypeError(f"governed_tool needs a callable, got {type(fn).__name__}")
    signature = inspect.signature(fn)
    by_name = all(p.kind in _BY_NAME for p in signature.parameters.values())
    arguments_of = _argument_binder(signature, by_name)
    call_arguments_of = _call_arguments(signature, by_name)

    def start(args: tuple, kwargs: dict) -> _GovernedCall:
        """Decide on the call; the arguments to run with are the (possibly rewritten) action's."""
        decision, owner = _decide(tool_name, arguments_of(args, kwargs), kernel)
        return _GovernedCall(owner, decision, *call_arguments_of(decision.action.args))

    if inspect.iscoroutinefunction(fn):

        async def governed_call(args: tuple, kwargs: dict) -> Any:
            call = start(args, kwargs)
            with call:
                result = await fn(*call.args, **call.kwargs)
            return call.ran(result)

        @functools.wraps(fn)
        def async_wrapper(*args: Any, **kwargs: Any) -> MustAwait:
            # A MustAwait: called without await, the tool neither runs nor is checked, and the
            # ERROR logged then says so and how to write the call (Python's own warning does not).
            return MustAwait(
                governed_call(args, kwargs), f"{tool_name}(...)", "the tool did not run and nothing was checked"
            )

        _mark_coroutine_function(async_wrapper)
        return _without_wrapped(async_wrapper, signature)

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        call = start(args, kwargs)
        with call:
            result = fn(*call.args, **call.kwargs)
        return call.ran(result)

    return _without_wrapped(wrapper, signature)


class _GovernedCall:
    """One allowed call under way, timed from the decision: ``with call:`` records the exception the
    tool raises (and lets it propagate); ``call.ran(result)`` records the result. Each call is
    recorded once, for a sync tool and a coroutine alike."""

    __slots__ = ("owner", "decision", "args", "kwargs", "started")

    def __init__(self, owner: GovernanceKernel, decision: Decision, args: tuple, kwargs: dict) -> None:
        self.owner, self.decision, self.args, self.kwargs = owner, decision, args, kwargs
        self.started = time.perf_counter()

    def __enter__(self) -> "_GovernedCall":
        return self

    def __exit__(self, kind: Any, error: Any, traceback: Any) -> None:
        if isinstance(error, Exception):  # a BaseException (a cancellation, an exit) is not the tool's outcome
            _record(self.owner, self.decision, self.started, error=error)

    def ran(self, result: Any) -> Any:
        _record(self.owner, self.decision, self.started, result=result)
        return result


def _mark_coroutine_function(wrapper: Callable[..., Any]) -> None:
    """Mark ``wrapper`` (a function returning an awaitable) as a coroutine function for the
    frameworks that ask: ``inspect.iscoroutinefunction`` from Python 3.12, ``asyncio``'s on 3.11."""
    mark = getattr(inspect, "markcoroutinefunction", None)
    if mark is not None:
        mark(wrapper)
    else:  # Python 3.11: asyncio.iscoroutinefunction reads this marker
        import asyncio.coroutines

        wrapper._is_coroutine = asyncio.coroutines._is_coroutine  # type: ignore[attr-defined]


def _without_wrapped(wrapper: F, signature: inspect.Signature) -> F:
    """``wrapper`` without the ``__wrapped__`` that ``functools.wraps`` sets: it would be a call
    to the tool that no policy sees. The tool's signature stays readable as ``__signature__``."""
    del wrapper.__wrapped__  # type: ignore[attr-defined]
    wrapper.__signature__ = signature  # type: ignore[attr-defined]
    return wrapper


def governed_sql(kernel: GovernanceKernel, connection: Any, **options: Any) -> SQLEnvelope:
    """A :class:`~agentlightning.contrib.kernel.agentos.sql.SQLEnvelope` (the kernel's check, then
    the database's own enforcement) whose decisions land in the rollout running when it is called:
    inside :class:`AgentOSRunner` each check is a decision of the attempt (spans, reward), and a
    refusal by the database is a blocked decision of that attempt too, recorded once. Outside a
    rollout it is the kernel's own envelope. ``options`` are the envelope's (``tool_name``, ``arg``).

    >>> import sqlite3
    >>> from agentlightning.contrib.kernel.agentos import SQLPolicy
    >>> kernel = GovernanceKernel([SQLPolicy(deny=["DELETE"])])
    >>> db = sqlite3.connect(":memory:")
    >>> _ = db.executescript("CREATE TABLE a (x); CREATE TABLE b (y); INSERT INTO b VALUES (1);"
    ...                      "CREATE TRIGGER wipe AFTER INSERT ON a BEGIN DELETE FROM b; END;")
    >>> try:  # the text shows an INSERT; the trigger's DELETE is refused by SQLite's authorizer
    ...     governed_sql(kernel, db).execute("INSERT INTO a VALUES (1)")
    ... except Exception as err:
    ...     print(type(err).__name__, db.execute("SELECT count(*) FROM b").fetchone()[0])
    SQLRefused 1
    """

    def check(tool_name: str, args: Mapping[str, Any], context: Optional[ActionContext], cost_usd: float) -> Decision:
        record = active_rollout()
        if record is None:
            return kernel.check(tool_name, args, context=context, cost_usd=cost_usd)
        action = tool_name if cost_usd is NO_COST else Action(tool_name, args, cost_usd)
        return record.decide(action, kernel, args=None if cost_usd is not NO_COST else dict(args))

    def refuse(action: Action, reason: str, context: ActionContext) -> Decision:
        record = active_rollout()
        if record is None:
            return kernel.refuse(action, reason, context=context, refused_by=ENVELOPE_NAME)
        return record.refuse(action, reason, refused_by=ENVELOPE_NAME)

    return SQLEnvelope(kernel, connection, check=check, refuse=refuse, **options)
