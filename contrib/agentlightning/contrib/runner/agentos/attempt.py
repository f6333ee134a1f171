"""One rollout attempt's governance: an append-only record while it runs, one outcome when it ends.

:class:`RolloutGovernance` is the record of one attempt (one per attempt, never shared, found
through :func:`active_rollout` in the attempt's task). Decisions are appended as the kernel makes
them, and the facts the runner learns (the agent started, the task was blocked, the agent
returned or raised) are recorded once each; nothing in it is overwritten or removed.

When the attempt ends, :meth:`RolloutGovernance.conclude` computes the frozen
:class:`RolloutOutcome` once, and the record takes nothing more. The attempt's metadata summary,
the ``GovernedRollout`` that ``runner.step`` returns and the input of the runner's ``reward_fn``
are all derived from that one value.

>>> from agentlightning.contrib.kernel.agentos import Action, ActionContext, GovernanceKernel, SQLPolicy
>>> record = RolloutGovernance(GovernanceKernel([SQLPolicy(deny=["DROP"])]), ActionContext(rollout_id="ro-1"))
>>> with record.activate():
...     active_rollout() is record
True
>>> record.decide(Action.sql("DROP TABLE users")).blocked
True
>>> outcome = record.conclude()
>>> len(outcome.violations), outcome.summary()["blocked_actions"]
(1, 1)
>>> try:
...     record.decide(Action.sql("SELECT 1"))
... except RuntimeError as err:
...     print(str(err).split(",")[0])
rollout ro-1 has ended: its governance outcome is final
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import contextvars
import functools
import threading
import time
from dataclasses import MISSING, dataclass, field, fields, replace
from typing import Any, Callable, Dict, Iterator, List, Optional, Set, Tuple, Union

from agentlightning.emitter import emit_reward
from agentlightning.tracer.base import get_active_tracer
from agentlightning.types import TraceStatus
from agentlightning.types.tracer import SpanCoreFields

from agentlightning.contrib.kernel.agentos import (
    Action,
    ActionContext,
    Decision,
    GovernanceKernel,
    PolicyViolation,
    SeverityTable,
    governance_context,
)
from agentlightning.contrib.kernel.agentos.agl03.spans import decision_core_fields, emit_decision_spans
from agentlightning.contrib.kernel.agentos.outcome import GovernanceOutcome
from agentlightning.contrib.kernel.agentos.reward.formula import GovernedReward
from agentlightning.contrib.kernel.agentos.semconv import AGENTOS_DECISION_ID

__all__ = ["RolloutGovernance", "RolloutOutcome", "active_rollout", "propagate_rollout_to_threads"]


def _set_in_one_write(cls: type) -> type:
    """Give the frozen dataclass ``cls`` an ``__init__`` that sets its fields in one write.

    A frozen dataclass's generated ``__init__`` sets each field with its own ``object.__setattr__``
    call, and a record and an outcome are built for every attempt. The replacement takes the same
    parameters (the init fields, in order, with their defaults), starts every other field at its
    default or from its factory, and writes ``vars(self)`` once.
    """
    if hasattr(cls, "__post_init__"):
        raise TypeError(f"{cls.__name__} has a __post_init__, which the one-write __init__ would not call")
    namespace: Dict[str, Any] = {}
    parameters: List[str] = []
    values: List[str] = []
    for spec in fields(cls):  # type: ignore[arg-type]
        name, default, factory = spec.name, spec.default, spec.default_factory
        if spec.init and factory is MISSING:
            namespace[f"_default_{name}"] = default
            parameters.append(name if default is MISSING else f"{name}=_default_{name}")
            values.append(f"{name}={name}")
        elif not spec.init and factory is not MISSING:
            namespace[f"_factory_{name}"] = factory
            values.append(f"{name}=_factory_{name}()")
        elif not spec.init and default is not MISSING:
            namespace[f"_default_{name}"] = default
            values.append(f"{name}=_default_{name}")
        else:
            raise TypeError(f"{cls.__name__}.{name}: a default factory for an init field, or no default for another")
    exec(f"def __init__(self, {', '.join(parameters)}):\n    vars(self).update({', '.join(values)})", namespace)
    init = namespace["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    cls.__init__ = init  # type: ignore[misc]
    return cls


@_set_in_one_write
@dataclass(frozen=True)
class RolloutOutcome(GovernanceOutcome):
    """The governance outcome of one rollout attempt, with what the runner saw of its agent.

    ``agent_started``: the agent's rollout method was entered (the runner found resources);
    ``agent_failed``: the agent raised; ``task_output``: what the agent returned;
    ``agent_reward``: the reward the agent returned or emitted itself (recorded when the runner
    has a ``reward_fn``, whose base reward it is).
    """

    agent_started: bool = False
    agent_failed: bool = False
    task_output: Any = None
    agent_reward: Optional[float] = None


#: The facts of an attempt that can only become true (recording one twice changes nothing).
_FLAGS = ("agent_started", "input_blocked", "agent_failed")


@_set_in_one_write
@dataclass(frozen=True, eq=False)
class RolloutGovernance:
    """The governance record of one rollout attempt: decisions and facts, appended, never changed.

    The settings are fixed at construction (the dataclass is frozen). ``rollout`` is the store's
    attempted rollout when :class:`AgentOSRunner` runs the attempt (its reward function needs it);
    with ``defer_clean_check_spans`` the spans of clean checks are held for
    :meth:`take_deferred_spans` (see :meth:`decide`); with ``clean_check_spans=False`` a clean
    check gets no span at all (its record in the audit trail is its evidence). ``penalties`` is
    the penalty table the spans price violations by (None: the default table); the runner gives
    the one its reward prices them by, so a span and the reward say the same number.
    """

    kernel: GovernanceKernel
    context: ActionContext
    fail_on_violation: bool = False
    on_decision: Optional[Callable[[Decision], None]] = None
    rollout: Any = None
    defer_clean_check_spans: bool = False
    clean_check_spans: bool = True
    penalties: Optional[SeverityTable] = None
    _decisions: List[Decision] = field(default_factory=list, init=False, repr=False)
    _flags: Set[str] = field(default_factory=set, init=False, repr=False)
    _result: Dict[str, Any] = field(default_factory=dict, init=False, repr=False)
    _emitted_reward: List[float] = field(default_factory=list, init=False, repr=False)
    _deferred: List[Tuple[Decision, float]] = field(default_factory=list, init=False, repr=False)
    _held_reward: List[SpanCoreFields] = field(default_factory=list, init=False, repr=False)
    _outcome: Optional[RolloutOutcome] = field(default=None, init=False, repr=False)
    #: Orders checks and the conclusion: a check under way when the attempt ends counts in it.
    _lock: threading.RLock = field(default_factory=threading.RLock, init=False, repr=False)

    # ------------------------------------------------------------------ appending
    def decide(
        self, action: Union[Action, str], kernel: Optional[GovernanceKernel] = None, args: Optional[dict] = None
    ) -> Decision:
        """Check ``action``, append the decision here and record it as spans of the active trace.

        ``action`` is an :class:`Action`, or a tool name with its call's ``args``: then the kernel
        builds the action itself, as ``kernel.check(tool_name, args)`` does, and can answer a call
        it has judged before from its memory of pure policies' answers.

        A decision with violations goes to the trace at once, so it reaches the store even if
        the process dies a moment later. With ``defer_clean_check_spans`` the check span of a
        clean decision (the common case) is kept, with its time, for :meth:`take_deferred_spans`:
        each span sent through the tracer is one synchronous store write, so a rollout's clean
        checks are written together, in one call, when it ends.

        After :meth:`conclude` the action is refused (``RuntimeError``): its decision could no
        longer count, so the tool must not run. The refusal is recorded like any blocked action
        (``kernel.refuse``: the audit trail, a span if a trace is still active, ``on_decision``).
        A check under way when the attempt ends finishes first and counts (one lock orders them).
        """
        kernel = kernel or self.kernel
        with self._lock:
            refused = self._outcome is not None
            if not refused:
                decision = kernel.check(action, args, context=self.context)
                self._decisions.append(decision)
            else:
                if not isinstance(action, Action):
                    action = Action.of_call(action, {} if args is None else args)
                decision = kernel.refuse(
                    action,
                    f"rollout {self.context.rollout_id} had already ended when {action.tool_name!r} was called",
                    context=self.context,
                    refused_by="AgentOSRunner",
                )
        clean = not decision.violations
        if clean and not self.clean_check_spans:
            pass  # its evidence is its record in the audit trail
        elif clean and self.defer_clean_check_spans and get_active_tracer() is not None:
            self._deferred.append((decision, time.time()))
        else:
            emit_decision_spans(decision, penalties=self.penalties)
        if self.on_decision is not None:
            self.on_decision(decision)
        if refused:
            self._refuse_if_concluded(f"the action {decision.action.tool_name!r} is refused")
        return decision

    def refuse(self, action: Action, reason: str, refused_by: str) -> Decision:
        """Record a refusal that came after an allowed check (the database refusing what the
        :class:`~agentlightning.contrib.kernel.agentos.sql.SQLEnvelope` ran) as a blocked decision
        of this attempt, like any other: the audit trail, a violation span, ``on_decision``."""
        with self._lock:
            decision = self.kernel.refuse(action, reason, context=self.context, refused_by=refused_by)
            if self._outcome is None:
                self._decisions.append(decision)
        emit_decision_spans(decision, penalties=self.penalties)
        if self.on_decision is not None:
            self.on_decision(decision)
        return decision

    def record_agent_started(self) -> None:
        """The agent's rollout method was entered."""
        self._flag("agent_started")

    def record_input_blocked(self) -> None:
        """The task itself was blocked: the agent did not act on it."""
        self._flag("input_blocked")

    def record_agent_failed(self) -> None:
        """The agent raised."""
        self._flag("agent_failed")

    def record_agent_result(self, task_output: Any, agent_reward: Optional[float]) -> None:
        """What the agent returned, and the reward it gave itself (None: none). Recorded once."""
        self._refuse_if_concluded("its result cannot be recorded")
        if self._result:
            raise RuntimeError(
                f"rollout {self.context.rollout_id}: the agent's result was already recorded "
                f"({self._result!r}); an attempt has one result"
            )
        self._result.update(task_output=task_output, agent_reward=agent_reward)

    def record_emitted_reward(self, value: float) -> None:
        """The last reward the agent emitted itself (``agl.emit_reward``), read from its trace when
        the attempt ends. It is the agent's reward when the agent returned without giving one."""
        self._refuse_if_concluded("its emitted reward cannot be recorded")
        if self._emitted_reward:
            raise RuntimeError(f"rollout {self.context.rollout_id}: the agent's emitted reward was already recorded")
        self._emitted_reward.append(float(value))

    def _flag(self, name: str) -> None:
        self._refuse_if_concluded(f"{name} cannot be recorded")
        self._flags.add(name)

    def _refuse_if_concluded(self, consequence: str) -> None:
        if self._outcome is not None:
            raise RuntimeError(
                f"rollout {self.context.rollout_id} has ended: its governance outcome is final, so {consequence}. "
                f"Call governed tools only while the agent's rollout runs (await any task it started before returning)."
            )

    # ------------------------------------------------------------------ reading
    @property
    def decisions(self) -> Tuple[Decision, ...]:
        """The decisions so far, in order."""
        return tuple(self._decisions)

    @property
    def violations(self) -> Tuple[PolicyViolation, ...]:
        """The violations so far, in order."""
        return tuple(v for d in self._decisions for v in d.violations)

    @property
    def outcome(self) -> Optional[RolloutOutcome]:
        """The attempt's outcome once :meth:`conclude` computed it, else None."""
        return self._outcome

    def conclude(self, score: Optional[Callable[[RolloutOutcome], GovernedReward]] = None) -> RolloutOutcome:
        """Compute the attempt's outcome from everything recorded; the record is closed after it.

        ``score`` (the runner's reward function) receives the outcome without a reward and returns
        the :class:`GovernedReward`, which the outcome then carries: the reward is computed from
        exactly the facts it is stored with. If ``score`` raises, nothing is concluded.
        """
        with self._lock:
            self._refuse_if_concluded("it cannot be concluded again")
            result = dict(self._result)
            if result and result["agent_reward"] is None and self._emitted_reward:
                result["agent_reward"] = self._emitted_reward[0]  # the agent returned, and emitted its reward
            facts = RolloutOutcome(
                decisions=tuple(self._decisions),
                penalties=self.penalties,
                **{name: name in self._flags for name in _FLAGS},
                **result,
            )
            outcome = facts if score is None else replace(facts, reward=score(facts))
            object.__setattr__(self, "_outcome", outcome)  # the one write of the frozen record: closing it
            return outcome

    # ------------------------------------------------------------------ spans held back
    def hold_reward_span(self, value: float) -> None:
        """Hold the reward span of the reward the agent returned (agentlightning's own
        ``emit_reward`` span, timed now) for :meth:`take_deferred_spans`, which gives it after the
        check spans: the runner writes it in the same store call as them, instead of the two calls
        (a sequence id, then the span) agentlightning makes for a returned reward. Held once."""
        self._refuse_if_concluded("its reward cannot be held")
        if self._held_reward:
            raise RuntimeError(f"rollout {self.context.rollout_id}: the agent's reward span is already held")
        self._held_reward.append(emit_reward(float(value), propagate=False))

    def take_deferred_spans(self) -> List[SpanCoreFields]:
        """The check spans held back so far (timed when their check ran), then the held reward
        span, if any; both lists are emptied."""
        spans = [_clean_check_span(decision, at, self.penalties) for decision, at in self._deferred]
        spans.extend(self._held_reward)
        self._deferred.clear()
        self._held_reward.clear()
        return spans

    def emit_deferred_spans(self) -> None:
        """Send the held-back check spans through the active trace now (``AgentOSRunner`` writes
        them with :meth:`take_deferred_spans` instead, when the attempt is concluded)."""
        for decision, _ in self._deferred:
            emit_decision_spans(decision, penalties=self.penalties)
        self._deferred.clear()

    # ------------------------------------------------------------------ scope
    @contextlib.contextmanager
    def activate(self) -> Iterator["RolloutGovernance"]:
        """Make this the active rollout (and its context the kernel's) in the current task.

        Each asyncio task or thread sees only the record it activated, so concurrent rollouts
        never mix decisions.
        """
        token = _ACTIVE.set(self)
        try:
            with governance_context(self.context):
                yield self
        finally:
            _ACTIVE.reset(token)


#: A clean check span's name and attributes differ from one decision to the next only by the
#: decision id, as long as the fields :func:`check_span_attributes` and :func:`check_span_name` read
#: are the same; these are kept per such fields (flattened and sanitised once by agentlightning's
#: helpers, through :func:`decision_core_fields`), with the decision id as the one value replaced.
_CHECK_SPAN_TEMPLATES: Dict[Tuple[Any, ...], Tuple[str, Dict[str, Any]]] = {}
_MAX_CHECK_SPAN_TEMPLATES = 1024


def _clean_check_span(decision: Decision, at: float, penalties: Optional[SeverityTable] = None) -> SpanCoreFields:
    """The check span of a decision without violations, timed ``at``: exactly the span
    :func:`decision_core_fields` builds (its only span for such a decision), with that time.

    Building it costs a dictionary copy instead of agentlightning's flattening, checking and
    sanitising of every attribute, which were most of a clean check's own cost in the runner.
    """
    if decision.violations:
        raise ValueError("a decision with violations is not held back: its spans go to the trace at once")
    if not isinstance(decision.decision_id, str):  # not the case a template is for: built in full
        (core,) = decision_core_fields(decision, penalties=penalties)
        return core.model_copy(update={"start_time": at, "end_time": at})
    key = (
        decision.verdict,
        decision.action.tool_name,
        decision.context.agent_id,
        decision.total_penalty,
        tuple(decision.signals),
    )
    template = _CHECK_SPAN_TEMPLATES.get(key)
    if template is None:
        (core,) = decision_core_fields(decision, penalties=penalties)
        template = (core.name, dict(core.attributes))
        if len(_CHECK_SPAN_TEMPLATES) >= _MAX_CHECK_SPAN_TEMPLATES:
            _CHECK_SPAN_TEMPLATES.clear()
        _CHECK_SPAN_TEMPLATES[key] = template
    name, attributes = template
    attributes = dict(attributes)
    attributes[AGENTOS_DECISION_ID] = decision.decision_id  # a str: sanitised, it is itself
    return SpanCoreFields(
        name=name, attributes=attributes, start_time=at, end_time=at, status=TraceStatus(status_code="OK")
    )


_ACTIVE: contextvars.ContextVar[Optional[RolloutGovernance]] = contextvars.ContextVar(
    "agentos_active_rollout", default=None
)


def active_rollout() -> Optional[RolloutGovernance]:
    """The governance record of the rollout running in this task, or None outside a governed rollout."""
    return _ACTIVE.get()


# ----------------------------------------------------------------------------- threads the agent starts
_PROPAGATING = threading.Lock()
_propagation_installed = False


def propagate_rollout_to_threads() -> None:
    """Make a thread or a thread-pool job started inside a governed rollout belong to that rollout.

    A context variable (the active rollout, the kernel's action context) does not cross into a
    ``threading.Thread`` or a ``ThreadPoolExecutor`` job (``loop.run_in_executor``): a governed
    call made there would be checked outside its rollout, so its violation would be missing from
    the rollout's outcome and penalty. From the first call on, a thread started while a rollout is
    active runs in a copy of the starting context, and every executor job runs in a copy of the
    submitting context (what ``asyncio.to_thread`` and asyncio tasks already do). Threads started
    outside a rollout are untouched. Installed once per process by the first ``AgentOSRunner``,
    never at import.
    """
    global _propagation_installed
    with _PROPAGATING:
        if _propagation_installed:
            return
        _propagation_installed = True
        start_thread = threading.Thread.start
        submit_job = concurrent.futures.ThreadPoolExecutor.submit

        @functools.wraps(start_thread)
        def start(self: threading.Thread) -> None:
            if _ACTIVE.get() is not None:
                context, run = contextvars.copy_context(), self.run
                self.run = lambda: context.run(run)  # type: ignore[method-assign]
            start_thread(self)

        @functools.wraps(submit_job)
        def submit(self: concurrent.futures.ThreadPoolExecutor, fn: Any, /, *args: Any, **kwargs: Any) -> Any:
            return submit_job(self, contextvars.copy_context().run, fn, *args, **kwargs)

        threading.Thread.start = start  # type: ignore[method-assign]
        concurrent.futures.ThreadPoolExecutor.submit = submit  # type: ignore[method-assign]
