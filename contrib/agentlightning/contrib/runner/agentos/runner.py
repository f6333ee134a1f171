"""AgentOSRunner: a real agentlightning ``LitAgentRunner`` that governs every action of a rollout.

One attempt's path, in order (agentlightning's ``LitAgentRunner`` calls every step not marked ours):

1. ``step`` (ours) or ``iter`` gets the attempt from the store;
2. ``_step_impl`` (ours, around agentlightning's) files the attempt's :class:`RolloutGovernance`
   record under (rollout id, attempt id);
3. agentlightning fetches resources, opens the trace and calls the :class:`GovernedAgent`, which
   runs the user's agent inside the record and appends to it (started, input blocked, result or
   raise); ``governed_tool`` appends each decision;
4. agentlightning post-processes what the governed agent handed back (a reward, spans or None);
   the runner notes that it did (the attempt succeeded unless this step is reached and returns);
5. agentlightning calls the ``on_rollout_end`` hooks; the runner's own, last, calls
   :meth:`AgentOSRunner._conclude`: **the one place the outcome is concluded**, scored by
   ``reward_fn``, and its held-back spans and reward span written; then the summary and the
   attempt's final status are written together, in one store call, so the status never says
   finished before the summary is there. The hook then ends agentlightning's attempt with
   :class:`_StatusWritten`, so agentlightning does not write the status a second time;
6. (agentlightning writes the attempt's final status only if the runner's write did not happen);
7. ``step`` takes the outcome by its key and returns a :class:`GovernedRollout` holding it.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import os
import time
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple, Union

from pydantic import ConfigDict

from agentlightning.emitter import find_final_reward
from agentlightning.litagent import LitAgent
from agentlightning.litagent.decorator import FunctionalLitAgent
from agentlightning.runner import LitAgentRunner
from agentlightning.store.base import LightningStore
from agentlightning.tracer.agentops import AgentOpsTracer
from agentlightning.tracer.base import Tracer
from agentlightning.types import AttemptedRollout, Hook, Rollout
from agentlightning.types.core import RolloutConfig, TaskInput

from agentlightning.contrib.kernel.agentos import (
    ActionContext,
    Decision,
    GovernanceConfigError,
    PolicyViolation,
    SeverityTable,
    as_kernel,
)
from agentlightning.contrib.kernel.agentos.agl03.reward_span import reward_core_fields
from agentlightning.contrib.kernel.agentos.agl03.spans import add_spans
from agentlightning.contrib.kernel.agentos.cores import run_on_core, usable_cores
from agentlightning.contrib.kernel.agentos.keywords import unknown_keyword_error
from agentlightning.contrib.kernel.agentos.reward.formula import GovernedReward
from agentlightning.contrib.kernel.agentos.violations import penalty_table

# `from . import agents`, never `from .agents import ...`: AgentOps' import monitor reads the latter as the
# OpenAI Agents SDK and uninstruments OpenAI when this package is imported after an AgentOps tracer started
# (tracing.py). Relative all the same, so that the package never loads this module under a second name.
from . import agents
from .attempt import RolloutGovernance, RolloutOutcome, propagate_rollout_to_threads
from .heartbeat import AttemptHeartbeats, attempt_is_live, attempt_state
from .hosts import audit_file_name, process_identity, worker_name
from .quickstart import RESOURCES_HINT, is_action_policy, normalize_mode, on_demand_store
from .tools import PolicyViolationError
from .tracing import keep_relative_imports_from_agentops, refuse_double_instrumentation

AgentError, GovernedAgent, TaskActionAgent = agents.AgentError, agents.GovernedAgent, agents.TaskActionAgent
as_agent, describe, govern_task, task_action = agents.as_agent, agents.describe, agents.govern_task, agents.task_action
is_plain_result, needs_resource = agents.is_plain_result, agents.needs_resource

__all__ = ["AgentError", "AgentOSRunner", "GovernedAgent", "GovernedRollout"]

logger = logging.getLogger(__name__)

#: ``AgentOSRunner(check_spans=...)``: spans for the decisions with violations only (the default:
#: allowed decisions are in the audit trail, and a span each cost the store a write per check), or all.
CHECK_SPANS_VIOLATIONS = "violations"
CHECK_SPANS_ALL = "all"
CHECK_SPANS = (CHECK_SPANS_VIOLATIONS, CHECK_SPANS_ALL)


@dataclass
class _Attempt:
    """The runner's entry for one attempt it runs: its governance record, and whether ``step``
    waits for it (an ``iter`` attempt's entry is dropped when the attempt ends)."""

    record: RolloutGovernance
    stepped: bool
    #: agentlightning post-processed the agent's result: its attempt ends ``succeeded``.
    post_processed: bool = False


class _ConclusionFailed(BaseException):
    """The attempt's outcome could not be completed (``reward_fn`` raised, or the store refused its
    spans) although the agent did not fail. The runner's ``on_rollout_end`` hook raises it so that
    agentlightning does not mark the attempt succeeded (it catches only ``Exception`` around hooks,
    and writes the status after them); ``_step_impl`` marks the attempt failed instead. The error
    is ``error`` (and the ``__cause__``)."""

    def __init__(self, error: BaseException, status_written: bool = False) -> None:
        super().__init__(str(error))
        self.error = error
        self.status_written = status_written


class _StatusWritten(BaseException):
    """The runner's ``on_rollout_end`` hook wrote the attempt's summary and its final status in one
    store call. Raised by the hook, like :class:`_ConclusionFailed`, so that agentlightning does not
    write the status again; ``_step_impl`` ends the attempt there (re-raising the agent's error for
    ``step``, which agentlightning would have raised)."""


class _Superseded(BaseException):
    """The store gave the attempt up (marked it unresponsive or timed out, or started another attempt
    of its rollout) before it ended here. Raised by the runner's ``on_rollout_end`` hook, like
    :class:`_ConclusionFailed`, so that agentlightning does not write a status over the store's;
    ``_step_impl`` writes nothing either. ``reason`` says what the store holds."""

    def __init__(self, rollout_id: str, attempt_id: str, reason: str) -> None:
        super().__init__(f"rollout {rollout_id} attempt {attempt_id}: {reason}")
        self.reason = reason


class _ConcludeBeforeStatus(Hook):
    """agentlightning's ``on_rollout_end`` hook runs after the agent and before the runner writes
    the attempt's final status: the outcome is concluded there, so whoever sees the attempt
    finished can read its summary and its reward span."""

    async def on_rollout_end(self, *, agent: Any, runner: Any, rollout: Any, spans: Any) -> None:
        if isinstance(runner, AgentOSRunner):
            await runner._conclude(rollout, spans)


#: The fields of agentlightning's Rollout, which a GovernedRollout takes from the store's (an
#: AttemptedRollout's ``attempt`` is not one of them).
_ROLLOUT_FIELDS = tuple(Rollout.model_fields)


class GovernedRollout(Rollout):
    """The store's :class:`~agentlightning.Rollout` and its attempt's governance outcome.

    ``governance`` is the attempt's frozen :class:`RolloutOutcome` itself (decisions, violations,
    signals, penalty, cost, the governed reward, what the agent returned); ``success`` says
    whether the rollout succeeded and its task was not blocked; ``execution_time_ms`` is how long
    ``step`` took. The reference tutorial's names read the outcome: ``task_input``,
    ``task_output``, ``violations``, ``signals_sent``, ``total_penalty``; so do ``governed`` and
    ``agent_reward``, which reward functions read.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    governance: RolloutOutcome
    success: bool = False
    execution_time_ms: float = 0.0

    @property
    def task_input(self) -> Any:
        """The task (the store's ``input``)."""
        return self.input

    @property
    def task_output(self) -> Any:
        """What the agent returned (None if it returned nothing, raised or never ran)."""
        return self.governance.task_output

    @property
    def violations(self) -> List[PolicyViolation]:
        """Every violation of the attempt, in order."""
        return list(self.governance.violations)

    @property
    def signals_sent(self) -> List[str]:
        """The kernel signals of the attempt's decisions (``governance.signals``)."""
        return list(self.governance.signals)

    @property
    def total_penalty(self) -> float:
        """The sum of the violations' penalties (zero or negative)."""
        return self.governance.total_penalty

    @property
    def agent_reward(self) -> Optional[float]:
        """The reward the agent returned or emitted itself (with a ``reward_fn``), the base of the shaped one."""
        return self.governance.agent_reward

    @property
    def governed(self) -> bool:
        """Whether at least one action of this rollout went through the kernel. A rollout with no
        check was not governed at all: it has no violations because nothing was looked at, and
        ``PolicyReward`` gives it no clean bonus."""
        return self.governance.governed

    @classmethod
    def from_outcome(
        cls, rollout: Rollout, outcome: RolloutOutcome, execution_time_ms: float, *, success: Optional[bool] = None
    ) -> "GovernedRollout":
        """The store's ``rollout`` with its attempt's ``outcome``.

        ``success`` defaults to the rollout's status; a blocked task input is never a success.
        The rollout's fields are validated as they are, not dumped first: the task input and the
        config are the rollout's own objects (as agentlightning's ``step`` returns the store's),
        the metadata a new dict.
        """
        if success is None:
            success = rollout.status == "succeeded"
        return cls(
            **{name: getattr(rollout, name) for name in _ROLLOUT_FIELDS},
            governance=outcome,
            success=success and not outcome.input_blocked,
            execution_time_ms=execution_time_ms,
        )


#: What agentlightning's AgentOps tracer warns when the process already has a runner's tracing set
#: up (a second runner in one process: an evaluation after training, a notebook cell run again).
#: It reuses what is there, and refuse_double_instrumentation (after init_worker) refuses the one
#: state that is wrong, so these read as failures and say nothing: hidden while init_worker runs.
_EXPECTED_REUSE_WARNINGS = {
    "agentlightning.instrumentation.agentops": ("AgentOps already patched",),
    "agentlightning.tracer.agentops": (
        "LightningSpanProcessor already present in TracerProvider",
        "AgentOps client was already initialized",
    ),
}


class _HideExpected(logging.Filter):
    def __init__(self, starts: Tuple[str, ...]) -> None:
        super().__init__()
        self.starts = starts

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno > logging.WARNING:
            return True
        message = record.getMessage()
        return not any(start in message for start in self.starts)


@contextlib.contextmanager
def _expected_reuse_warnings_hidden() -> Iterator[None]:
    installed = [(logging.getLogger(name), _HideExpected(starts)) for name, starts in _EXPECTED_REUSE_WARNINGS.items()]
    for upstream, hide in installed:
        upstream.addFilter(hide)
    try:
        yield
    finally:
        for upstream, hide in installed:
            upstream.removeFilter(hide)


def _place_worker(worker_id: int) -> Optional[int]:
    """Every thread of this process on the ``worker_id``-th core it may use (``pin_to_core``); the core, or
    None where the system refuses (the process then runs where the system places it)."""
    cores = usable_cores()
    core = cores[worker_id % len(cores)] if cores else None
    if core is not None and run_on_core(core):
        logger.info("AgentOSRunner: worker %s runs on core %s (pin_to_core=True)", worker_id, core)
        return core
    logger.warning(
        "AgentOSRunner: pin_to_core=True, but this system did not place worker %s on a core (cores this process "
        "may use: %s); it runs where the system places it",
        worker_id,
        cores or "not reported",
    )
    return None


def _check_keywords(callee: str, runner_kwargs: Dict[str, Any]) -> None:
    """``runner_kwargs`` go to ``LitAgentRunner``: a name neither takes is refused here, with the
    name it may have meant (``log_violation`` for ``log_violations``), not by ``LitAgentRunner``."""
    valid = set(inspect.signature(AgentOSRunner.__init__).parameters) | set(
        inspect.signature(LitAgentRunner.__init__).parameters
    )
    valid -= {"self", "runner_kwargs", "args", "kwargs"}
    for name in runner_kwargs:
        if name not in valid:
            raise unknown_keyword_error(callee, name, valid)


def _given_penalty_table(penalties: Optional[SeverityTable], reward_fn: Any) -> Optional[SeverityTable]:
    """The penalty table the runner is given, which its kernel must price by: ``penalties``, and
    the reward function's (``reward_fn.config.severity_penalties``, read by attribute: the runner
    does not import the reward room); both given must be one table. None: the kernel's."""
    rewards = getattr(getattr(reward_fn, "config", None), "severity_penalties", None)
    rewards = rewards if isinstance(rewards, SeverityTable) else None
    if penalties is None:
        return rewards
    penalties = penalty_table(penalties)
    if rewards is not None and rewards != penalties:
        raise GovernanceConfigError(
            f"penalties={penalties!r} and the reward function's table, {rewards!r}, differ: a violation has one "
            f"price. Give one table: leave penalties out, or pass it as the reward's "
            f"(RewardConfig(critical_penalty=..., ...))"
        )
    return penalties


class AgentOSRunner(LitAgentRunner[Any]):
    """A ``LitAgentRunner`` whose rollouts run under a governance kernel.

    Inside each rollout attempt, tools wrapped with :func:`governed_tool` are checked by
    ``kernel``; every check and every violation becomes an annotation span of that rollout and
    attempt, and the attempt's metadata gets a summary under ``"agentos"``. Concurrent rollouts
    never share state: each attempt has its own record, filed under its rollout and attempt ids
    and active (a context variable) while its agent runs. The agent runs inside a
    :class:`GovernedAgent` and is never modified. The path of one attempt is in this module's
    docstring.

    Args:
        kernel: a :class:`GovernanceKernel`, an ``agent_os.KernelSpace`` or a list of policies.
        tracer: the agentlightning tracer (default: ``AgentOpsTracer``, as the Trainer uses).
        fail_on_violation: a blocked action raises :class:`PolicyViolationError` (the rollout
            fails; ``step`` raises) instead of :class:`ActionBlockedError` to the agent.
        log_violations: log a WARNING per violation.
        violation_callback: called with each :class:`PolicyViolation` (errors are logged).
        govern_input: govern a string task itself as ``input_tool(input_arg=task)`` before the
            agent runs (the reference's ``runner.step("SELECT ...")``); a blocked task does not
            reach the agent. ``None`` (default): on for a plain-function agent that takes no ``llm``
            (its task is the action), off for a ``LitAgent`` (its tasks are usually questions).
        audit_dir: directory for one FlightRecorder file per runner process
            (``worker-<id>@<host>-<pid>.db``, see hosts.py); required when the kernel audits and runners
            are processes.
        reward_fn: shapes each rollout's reward by its violations, typically a ``PolicyReward``.
            It is called with the :class:`GovernedRollout` (``agent_reward`` holds the reward the
            agent returned or emitted, ``success`` whether it finished without raising) and its
            result becomes one multi-dimensional reward span (primary dimension ``final``) that is
            the last reward span of the attempt, so ``find_final_reward`` returns it; a float
            returned by the agent is not stored unshaped. If the agent raises, the span is still
            written (with ``success=False``) before the attempt is marked failed; if ``reward_fn``
            raises, the attempt is marked failed (and ``step`` raises its error). An object with
            ``score(rollout) -> GovernedReward`` keeps its decomposition; a plain callable's float
            is stored as ``final`` and ``base``.
        check_spans: which decisions become spans in the store. ``"violations"`` (default): the
            decisions with violations (a check span and a span per violation, sent at once), plus
            the attempt's governance summary (``metadata["agentos"]``); an allowed decision's
            evidence is its record in the keyed audit trail, which the adapter can import.
            ``"all"``: also a check span per allowed decision (written in one store call when the
            attempt ends), for a dashboard or algorithm that reads every decision from the store.
        penalties: the penalty table (a ``SeverityTable`` of kind ``"penalty"``) violations are
            priced by. The kernel holds it (``GovernanceKernel(penalties=...)``): a runner that
            builds its kernel (from policies or a ``KernelSpace``) builds it with this table, or
            with ``reward_fn``'s ``config.severity_penalties`` when it has one (a ``PolicyReward``:
            read by that attribute, since the runner does not import the reward room); a kernel
            given must already price by them, else the error names both tables and the fix.
            Default: the kernel's table. So the violation, its audit record, the spans and the
            reward say one price.
        pin_to_core: at ``init_worker(worker_id, ...)``, place every thread of the runner's
            process on the ``worker_id``-th core the process may use (counted round the cores
            when there are more workers). For a Trainer that runs one runner process per core
            (``n_runners`` = the cores): a process left to the scheduler moves between cores and
            pays for it in CPU (see docs/runner.md). Off by default: a runner cannot tell how many
            processes share the machine, and a lone runner pinned to one core would leave the others
            idle. Where the system refuses, the runner runs unpinned (logged), governed all the same.
        **runner_kwargs: passed to ``LitAgentRunner`` (``max_rollouts``, ``poll_interval``, ...).

    The agent (``init(agent)``) is a ``LitAgent`` or a plain function ``fn(task)`` (see
    :func:`as_agent`). ``await runner.step(task)`` works on a runner that was never set up: with
    no agent, the task itself is the action to govern (:class:`TaskActionAgent`), and with no
    store (no ``init_worker``) an ``InMemoryLightningStore`` is created, with the resources the
    agent needs. A runner set up by the user or the Trainer keeps agentlightning's lifecycle.

    Besides a float (the reward) or ``None``, the agent may return any other result (a dict, an
    object): it becomes the rollout's ``task_output`` and, unlike in ``LitAgentRunner``, does not
    fail the rollout; it is not a reward.

    >>> from agentlightning.contrib.kernel.agentos import SQLPolicy
    >>> runner = AgentOSRunner([SQLPolicy(deny=["DROP"])], poll_interval=0.1)
    >>> runner.get_stats()  # doctest: +NORMALIZE_WHITESPACE
    {'total_rollouts': 0, 'total_violations': 0, 'violation_rate': 0.0, 'violations_per_rollout': 0.0,
     'total_checks': 0, 'blocked_actions': 0, 'rollouts_with_violations': 0, 'ungoverned_rollouts': 0}
    """

    def __init__(
        self,
        kernel: Any,
        tracer: Optional[Tracer] = None,
        *,
        fail_on_violation: bool = False,
        log_violations: bool = True,
        violation_callback: Optional[Callable[[PolicyViolation], Any]] = None,
        govern_input: Optional[bool] = None,
        input_tool: str = "database_query",
        input_arg: str = "query",
        agent_id: Optional[str] = None,
        audit_dir: Union[str, Path, None] = None,
        reward_fn: Optional[Callable[[Any], Any]] = None,
        check_spans: str = CHECK_SPANS_VIOLATIONS,
        penalties: Optional[SeverityTable] = None,
        pin_to_core: bool = False,
        **runner_kwargs: Any,
    ) -> None:
        _check_keywords(type(self).__name__, runner_kwargs)
        if not isinstance(check_spans, str) or check_spans not in CHECK_SPANS:
            raise ValueError(
                f"check_spans must be {CHECK_SPANS_VIOLATIONS!r} (the default: spans for the decisions with violations "
                f"and one governance summary per attempt) or {CHECK_SPANS_ALL!r} (also a span per allowed decision), "
                f"got {check_spans!r}; every decision is in the audit trail either way"
            )
        flags = {"fail_on_violation": fail_on_violation, "log_violations": log_violations, "pin_to_core": pin_to_core}
        for name, value in flags.items():
            if not isinstance(value, bool):
                raise TypeError(f"{name} must be a bool, got {type(value).__name__}")
        if govern_input is not None and not isinstance(govern_input, bool):
            raise TypeError(
                f"govern_input must be True, False or None (None: a plain-function agent's string task is "
                f"governed, a LitAgent's is not), got {type(govern_input).__name__}"
            )
        audit_dir = _checked_audit_dir(audit_dir)
        if violation_callback is not None and not callable(violation_callback):
            raise TypeError(f"violation_callback must be callable, got {type(violation_callback).__name__}")
        if reward_fn is not None and not callable(reward_fn):
            raise TypeError(
                f"reward_fn must be callable (rollout -> reward), e.g. PolicyReward(kernel); "
                f"got {type(reward_fn).__name__}"
            )
        self.kernel = as_kernel(kernel, penalties=_given_penalty_table(penalties, reward_fn))
        if tracer is not None and not isinstance(tracer, Tracer):
            raise TypeError(f"tracer must be an agentlightning Tracer, got {type(tracer).__name__}")
        _quiet_agentops()
        propagate_rollout_to_threads()
        super().__init__(tracer if tracer is not None else AgentOpsTracer(), **runner_kwargs)
        self.fail_on_violation = fail_on_violation
        self.log_violations = log_violations
        self.violation_callback = violation_callback
        self.govern_input = govern_input
        self.input_tool = input_tool
        self.input_arg = input_arg
        self.agent_id = agent_id
        self.audit_dir = audit_dir
        self.reward_fn = reward_fn
        self.check_spans = check_spans
        self.penalties = self.kernel.penalties
        self.pin_to_core = pin_to_core
        #: The core this worker's process was placed on (``pin_to_core``); None if not placed.
        self.core: Optional[int] = None
        self._counts = {
            "total_rollouts": 0,
            "total_violations": 0,
            "total_checks": 0,
            "blocked_actions": 0,
            "rollouts_with_violations": 0,
            "ungoverned_rollouts": 0,
        }
        #: The attempts this runner is running, by (rollout id, attempt id): concurrent attempts
        #: (``step`` calls on one loop) each find their own record.
        self._attempts: Dict[Tuple[str, str], _Attempt] = {}
        self._conclusion_hook = _ConcludeBeforeStatus()
        #: The store ``step`` created because none was given (nobody else can queue rollouts in it).
        self._on_demand_store: Optional[LightningStore] = None
        #: What this runner already told the user once (each of these is logged once per runner).
        self._told: set = set()
        self._setup_locks: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock]" = (
            weakref.WeakKeyDictionary()
        )
        #: ``<host>-<pid>`` of the process that set up the worker (hosts.py); None before init_worker.
        self._identity: Optional[str] = None
        #: The heartbeats of the attempts this worker runs (heartbeat.py); None before init_worker.
        self._heartbeats: Optional[AttemptHeartbeats] = None

    # ------------------------------------------------------------------ lifecycle
    def init(self, agent: Any, *, hooks: Optional[Sequence[Hook]] = None, **kwargs: Any) -> None:
        """Set the agent: a ``LitAgent``, or a plain function ``fn(task)`` (wrapped by
        :func:`as_agent` into agentlightning's ``FunctionalLitAgent``). The runner runs it inside a
        :class:`GovernedAgent` (``runner.get_agent()``; yours is ``runner.get_agent().agent``) and
        never modifies it. ``hooks`` are agentlightning's; the runner's own hook, which concludes
        each attempt's outcome, runs after them."""
        if is_action_policy(agent):
            # The reference's training loop: its own code calls my_agent.get_action(state) and hands
            # the action to runner.step(action), so the runner governs the task as the action.
            logger.info(
                "AgentOSRunner: %s picks actions with get_action(); runner.step(action) governs each action "
                "as %s(%s=action) (see docs/migrating.md)",
                type(agent).__name__,
                self.input_tool,
                self.input_arg,
            )
            agent = TaskActionAgent(self.input_tool, self.input_arg)
        if isinstance(agent, GovernedAgent):
            agent = agent.agent  # runner.init(runner.get_agent()): govern the user's agent once
        agent = as_agent(agent)
        # What LitAgentRunner.init does for the agent it runs, so the agent's self.runner and
        # self.tracer work as under the plain runner.
        agent.set_runner(self)
        super().init(GovernedAgent(agent), hooks=[*(hooks or []), self._conclusion_hook], **kwargs)

    @property
    def user_agent(self) -> Optional[LitAgent[Any]]:
        """The agent given to :meth:`init` (as a ``LitAgent``), or None before it."""
        return self._agent.agent if isinstance(self._agent, GovernedAgent) else None

    def get_agent(self) -> LitAgent[Any]:
        """The :class:`GovernedAgent` the runner runs (agentlightning's ``_step_impl`` calls its
        rollout methods); the agent given to :meth:`init` is its ``.agent``."""
        if self._agent is None:
            raise ValueError(
                "AgentOSRunner has no agent: call runner.init(agent) first (a LitAgent, or a function task -> result); "
                "await runner.step(task) without one governs the task itself"
            )
        return self._agent

    def get_store(self) -> LightningStore:
        if self._store is None:
            raise ValueError(
                "AgentOSRunner has no store: call runner.init_worker(0, store) first (the Trainer does it for you). "
                "await runner.step(task) creates an in-memory store on demand; runner.iter() needs the store it "
                "takes rollouts from (see docs/migrating.md#4-lifecycle-and-iter)"
            )
        return self._store

    def _tell_once(self, key: str, message: str, *args: Any, level: int = logging.WARNING) -> None:
        if key not in self._told:
            self._told.add(key)
            logger.log(level, message, *args)

    def init_worker(self, worker_id: int, store: LightningStore, **kwargs: Any) -> None:
        if not isinstance(store, LightningStore):
            hint = (
                f"for the agl store at {store!r}, pass LightningStoreClient({store!r}) "
                f"(from agentlightning.store.client_server import LightningStoreClient)"
                if isinstance(store, str)
                else "e.g. InMemoryLightningStore(), or LightningStoreClient(url) for an agl store"
            )
            raise TypeError(f"store must be an agentlightning LightningStore, got {type(store).__name__}: {hint}")
        if isinstance(worker_id, bool) or not isinstance(worker_id, int):
            raise TypeError(f"worker_id must be an int, got {type(worker_id).__name__}")
        self._identity = process_identity()
        if self.audit_dir is not None:
            self.kernel.attach_recorder(self.audit_dir / audit_file_name(worker_id, self._identity))
        elif self.kernel.audit is not None and self.kernel.audit.pid != os.getpid():
            raise GovernanceConfigError(
                "the kernel's FlightRecorder was opened in another process; its hash chain cannot be "
                "shared. Pass audit_dir=... to AgentOSRunner so each runner process writes its own file."
            )
        with _expected_reuse_warnings_hidden():
            super().init_worker(worker_id, store, **kwargs)
        if self._heartbeats is not None:
            self._heartbeats.stop()
        self._heartbeats = AttemptHeartbeats(store, default_interval=self._heartbeat_interval)
        if self.pin_to_core:
            self.core = _place_worker(worker_id)
        # The tracer has started AgentOps: one LLM call must stay one span whatever the agent imports later.
        keep_relative_imports_from_agentops()
        # What the guard cannot undo (AgentOps started and misread an import before this runner existed)
        # is refused, not repaired: see refuse_double_instrumentation for why a repair cannot be trusted.
        refuse_double_instrumentation()

    def get_worker_id(self) -> str:
        """This worker's name in the store: ``Worker-<n>@<host>-<pid>`` (see hosts.py), unique across
        runner hosts and processes, where agentlightning's is ``Worker-<n>`` in every process."""
        if self.worker_id is None or self._identity is None:
            return super().get_worker_id()
        return worker_name(self.worker_id, self._identity)

    def teardown_worker(self, worker_id: int, *args: Any, **kwargs: Any) -> None:
        if self._heartbeats is not None:
            self._heartbeats.stop()
        if self.kernel.audit is not None:
            self.kernel.audit.flush()
        super().teardown_worker(worker_id, *args, **kwargs)

    def governs_input(self) -> bool:
        """Whether a string task is governed as ``input_tool(input_arg=task)`` before the agent runs:
        ``govern_input`` if it was given; otherwise True for a plain-function agent that takes no
        ``llm`` (its task is the action: a tutorial's ``fn(task)`` that runs the SQL it is given is
        never ungoverned) and False for a ``LitAgent`` (its tasks are usually questions)."""
        if self.govern_input is not None:
            return self.govern_input
        agent = self.user_agent
        return isinstance(agent, FunctionalLitAgent) and not needs_resource(agent, "llm")

    def task_allowed(self, record: RolloutGovernance, task: Any) -> bool:
        """Whether the agent may run on ``task``: a string task is checked first, in ``record``, as
        ``input_tool(input_arg=task)`` when :meth:`governs_input` (appending the decision)."""
        if not isinstance(task, str) or not self.governs_input():
            return True
        if isinstance(self.user_agent, TaskActionAgent):  # it governs the task itself
            return True
        try:
            decision = govern_task(record, task_action(task, self.input_tool, self.input_arg))
        except PolicyViolationError:  # fail_on_violation: the task was blocked
            self._explain_task_as_action()
            raise
        if decision.blocked:
            self._explain_task_as_action()
        return decision.allowed

    def _explain_task_as_action(self) -> None:
        """Once per runner, when a plain function's task was blocked: the task was judged as the
        action only because of the default, so a user whose tasks are questions rather than SQL must
        learn why they are blocked, and how not to be."""
        if self.govern_input is None:
            self._tell_once(
                "task-as-action",
                "AgentOSRunner: the agent (%s) is a plain function, so each string task is itself the action, "
                "judged as %s(%s=task) before the function runs, and this one was blocked. If your tasks are "
                "not the action (questions in prose, say), pass AgentOSRunner(..., govern_input=False) and wrap "
                "the function's tools with governed_tool. (Logged once per runner.)",
                describe(self.user_agent),
                self.input_tool,
                self.input_arg,
            )

    # ------------------------------------------------------------------ rollouts
    def attempt_record(self, rollout: Any) -> RolloutGovernance:
        """The governance record of the attempt ``rollout`` (filed by :meth:`_step_impl`)."""
        entry = self._attempts.get((rollout.rollout_id, rollout.attempt.attempt_id))
        if entry is None:
            # Fail closed: an agent this runner did not file an attempt for must not run ungoverned.
            raise RuntimeError(
                f"rollout {rollout.rollout_id} attempt {rollout.attempt.attempt_id} has no governance record; "
                f"AgentOSRunner runs its agent only in attempts it started (step() or iter())"
            )
        return entry.record

    async def _step_impl(self, next_rollout: AttemptedRollout, raise_on_exception: bool = False) -> str:
        """agentlightning's attempt, with the attempt's governance record filed under its key
        first (the governed agent and the conclusion find it there)."""
        key = (next_rollout.rollout_id, next_rollout.attempt.attempt_id)
        # Every record and span names the host and process it came from: the worker's name carries them.
        agent_id = f"{self.agent_id}@{self._identity or process_identity()}" if self.agent_id else self.get_worker_id()
        record = RolloutGovernance(
            kernel=self.kernel,
            context=ActionContext(agent_id=agent_id, rollout_id=key[0], attempt_id=key[1]),
            fail_on_violation=self.fail_on_violation,
            on_decision=self._on_decision,
            rollout=next_rollout,
            defer_clean_check_spans=True,
            clean_check_spans=self.check_spans == CHECK_SPANS_ALL,
            penalties=self.penalties,
        )
        self._attempts[key] = _Attempt(record, stepped=raise_on_exception)
        if self._heartbeats is not None:
            self._heartbeats.add(next_rollout)
        agent_error: Optional[Exception] = None
        try:
            await super()._step_impl(next_rollout, raise_on_exception=raise_on_exception)
        except _StatusWritten as written:
            # The error agentlightning was raising for step(), if any: raised below, as it was.
            if raise_on_exception and isinstance(written.__context__, Exception):
                agent_error = written.__context__
        except _ConclusionFailed as failed:
            if not failed.status_written:
                await self._mark_failed(next_rollout)
            if raise_on_exception:
                raise failed.error from None
        except _Superseded as superseded:
            if raise_on_exception:
                raise RuntimeError(
                    f"{superseded}: the store gave this attempt up before it ended here, so its outcome was not "
                    f"written (the store keeps the attempt as it is); its decisions are in this process's audit trail"
                ) from None
        finally:
            if self._heartbeats is not None:
                self._heartbeats.remove(*key)
            if not raise_on_exception:  # iter(): nobody reads the record after the attempt
                self._attempts.pop(key, None)
        if agent_error is not None:
            raise agent_error
        if record.outcome is None:
            # agentlightning returns before the agent and the hooks only when the store has no resources.
            self._tell_once(
                "no_resources",
                "AgentOSRunner: rollout %s was skipped (agentlightning: 'Failed to fetch resources'): "
                + RESOURCES_HINT
                + ".",
                key[0],
                level=logging.ERROR,
            )
        return key[0]

    async def _post_process_rollout_result(self, rollout: AttemptedRollout, raw_result: Any) -> Any:
        """agentlightning's post-processing of the agent's result; that it returned is what makes
        the attempt ``succeeded`` (agentlightning's own rule), noted for :meth:`_conclude`."""
        spans = await super()._post_process_rollout_result(rollout, raw_result)
        entry = self._attempts.get((rollout.rollout_id, rollout.attempt.attempt_id))
        if entry is not None:
            entry.post_processed = True
        return spans

    async def _mark_failed(self, rollout: AttemptedRollout) -> None:
        """The status agentlightning writes for an attempt that raised, for one whose conclusion failed
        (unless the store has given the attempt up meanwhile: it is not rewritten)."""
        try:
            live, reason = await attempt_is_live(self.get_store(), rollout.rollout_id, rollout.attempt.attempt_id)
            if not live:
                logger.warning(
                    "AgentOSRunner: rollout %s attempt %s is not marked failed: %s",
                    rollout.rollout_id,
                    rollout.attempt.attempt_id,
                    reason,
                )
                return
            await self.get_store().update_attempt(rollout.rollout_id, rollout.attempt.attempt_id, status="failed")
        except Exception:
            logger.exception("could not mark rollout %s failed", rollout.rollout_id)

    async def _conclude(self, rollout: AttemptedRollout, spans: Any) -> None:
        """Conclude the attempt's outcome, once: the one place it is concluded (called by the
        runner's ``on_rollout_end`` hook, before agentlightning writes the final status).

        The outcome is computed from the record (scored by ``reward_fn``); the held-back check
        spans and the reward span are written in one store call; the attempt is counted and its
        summary stored under ``metadata["agentos"]``. If ``reward_fn`` or the store fails and the
        agent did not, the attempt fails (see :class:`_ConclusionFailed`).
        """
        entry = self._attempts.get((rollout.rollout_id, rollout.attempt.attempt_id))
        if entry is None or entry.record.outcome is not None:
            return
        record = entry.record
        if self._heartbeats is not None:
            self._heartbeats.remove(rollout.rollout_id, rollout.attempt.attempt_id)
        self.kernel.end_rollout(rollout.rollout_id)
        emitted = find_final_reward(spans or []) if self.reward_fn is not None else None
        if emitted is not None:
            record.record_emitted_reward(emitted)
        error: Optional[BaseException] = None
        try:
            outcome = record.conclude(self._scorer(rollout))
        except Exception as err:  # reward_fn raised: the facts are concluded without a reward
            error = err
            outcome = record.conclude()
        batch = record.take_deferred_spans()
        if outcome.reward is not None:
            batch.append(reward_core_fields(outcome.reward))
        await self._refuse_if_superseded(rollout, outcome, spans)
        try:
            await add_spans(self.get_store(), rollout.rollout_id, rollout.attempt.attempt_id, batch)
        except Exception as err:
            error = error or err
        self._count(rollout, outcome, spans or [])
        summary = outcome.summary()
        metadata = {**(rollout.attempt.metadata or {}), "agentos": summary}
        status = "succeeded" if entry.post_processed and error is None else "failed"
        status_written = False
        try:
            await self._mark_rollout(rollout, summary)
        except Exception:
            logger.exception("could not mark rollout %s with its violations in the store", rollout.rollout_id)
        try:
            await self.get_store().update_attempt(
                rollout.rollout_id, rollout.attempt.attempt_id, status=status, metadata=metadata
            )
            status_written = True
        except Exception:
            # agentlightning (or _step_impl) still writes the status, without the summary.
            logger.exception("could not write the governance summary of rollout %s to the store", rollout.rollout_id)
        if error is not None:
            logger.error(
                "AgentOSRunner: rollout %s: its governance outcome could not be completed (%s: %s)",
                rollout.rollout_id,
                type(error).__name__,
                error,
                exc_info=error,
            )
            if not outcome.agent_failed:  # a failed agent fails the attempt already
                raise _ConclusionFailed(error, status_written) from error
        if status_written:
            raise _StatusWritten()

    async def _mark_rollout(self, rollout: AttemptedRollout, summary: Dict[str, Any]) -> None:
        """Mark a rollout with violations in the rollout's own metadata (``"agentos"``: the latest
        attempt's counts), where the store's rollout list carries it; the attempt's metadata holds
        the whole summary. A clean rollout is written only to clear the mark an earlier attempt left."""
        own = dict(rollout.metadata or {})
        if not summary["violations"] and "agentos" not in own:
            return
        if summary["violations"]:
            own["agentos"] = {
                "attempt_id": rollout.attempt.attempt_id,
                "violations": summary["violations"],
                "blocked_actions": summary["blocked_actions"],
                "total_penalty": summary["total_penalty"],
                "violations_by_policy": summary["violations_by_policy"],
            }
        else:
            del own["agentos"]
        await self.get_store().update_rollout(rollout.rollout_id, metadata=own)

    async def _refuse_if_superseded(self, rollout: AttemptedRollout, outcome: RolloutOutcome, spans: Any) -> None:
        """Raise :class:`_Superseded` (after counting the outcome here) if the store has given the
        attempt up: a span would turn an ``unresponsive`` attempt back into ``running`` (a span is a
        heartbeat to agentlightning's store) and the status write would overwrite the store's, for an
        attempt whose rollout was retried. If the store cannot be asked, the writes go ahead (and fail
        or succeed as before). agentlightning 0.3 has no conditional update, so the store could still
        give the attempt up between this check and the writes; the heartbeats keep that window shut
        for an attempt whose runner is alive and connected."""
        store, rollout_id, attempt_id = self.get_store(), rollout.rollout_id, rollout.attempt.attempt_id
        try:
            live, reason, status = await attempt_state(store, rollout_id, attempt_id)
            if not live and status == "running":
                # Superseded, yet running: agentlightning's tracer wrote the trace's session span when the
                # agent returned, and a span arriving turns an unresponsive attempt into a running one (no
                # other status of a superseded attempt changes). What the store had decided is put back.
                await store.update_attempt(rollout_id, attempt_id, status="unresponsive")
                reason += "; its status, turned back to running by the trace's last span, is unresponsive again"
        except Exception:
            return
        if live:
            return
        self._count(rollout, outcome, spans or [])
        logger.warning(
            "AgentOSRunner: rollout %s attempt %s ended here after the store gave it up (%s): nothing of it is written "
            "to the store, which keeps the attempt as it is; its %d decision(s) are in this process's audit trail",
            rollout.rollout_id,
            rollout.attempt.attempt_id,
            reason,
            len(outcome.decisions),
        )
        raise _Superseded(rollout.rollout_id, rollout.attempt.attempt_id, reason)

    def _count(self, rollout: AttemptedRollout, outcome: RolloutOutcome, spans: Any) -> None:
        """Count the concluded attempt, and say once what the user should know about it."""
        self._counts["total_rollouts"] += 1
        if outcome.violations:
            self._counts["rollouts_with_violations"] += 1
        if outcome.agent_started and not outcome.governed and not outcome.agent_failed:
            self._counts["ungoverned_rollouts"] += 1
            self._tell_once(
                "ungoverned",
                "AgentOSRunner: rollout %s finished without a single governance check: no action of the agent (%s) "
                "went through the kernel, so nothing could be blocked or recorded. Wrap the agent's tools with "
                "governed_tool('%s', fn), or pass govern_input=True to check a string task itself as %s(%s=task). "
                "PolicyReward gives such a rollout no clean bonus. (Logged once per runner; "
                "runner.get_stats()['ungoverned_rollouts'] counts them.)",
                rollout.rollout_id,
                describe(self.user_agent),
                self.input_tool,
                self.input_tool,
                self.input_arg,
            )
        if (
            is_plain_result(outcome.task_output)
            and self.reward_fn is None
            and find_final_reward(spans) is None
            and not isinstance(self.user_agent, TaskActionAgent)
        ):
            self._tell_once(
                "result_without_reward",
                "AgentOSRunner: rollout %s: the agent (%s) returned a %s; it is kept as the rollout's task_output, "
                "but it is not a reward, so the store holds no reward for this rollout and training gets nothing "
                "from it. Return a float (the reward), call agl.emit_reward(value) in the agent, or pass "
                "reward_fn=PolicyReward(kernel, base_reward_fn=lambda rollout: ...) to the runner, which computes it "
                "from rollout.task_output. (Logged once per runner.)",
                rollout.rollout_id,
                describe(self.user_agent),
                type(outcome.task_output).__name__,
            )

    def _scorer(self, rollout: Rollout) -> Optional[Callable[[RolloutOutcome], GovernedReward]]:
        """``reward_fn`` as :meth:`RolloutGovernance.conclude` takes it (None: nothing to score)."""
        if self.reward_fn is None:
            return None
        return lambda outcome: self._score(rollout, outcome)

    def _score(self, rollout: Rollout, outcome: RolloutOutcome) -> GovernedReward:
        """``reward_fn`` of the rollout view of ``outcome``; ``success`` there means the agent did not raise."""
        view = GovernedRollout.from_outcome(rollout, outcome, 0.0, success=not outcome.agent_failed)
        score = getattr(self.reward_fn, "score", None)
        value = score(view) if callable(score) else self.reward_fn(view)  # type: ignore[misc]
        if isinstance(value, GovernedReward):
            return value
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TypeError(
                f"reward_fn returned {type(value).__name__} ({value!r}); it must return a float or a GovernedReward"
            )
        return GovernedReward(
            final=float(value),
            base=float(value),
            policy_penalty=0.0,
            clean_bonus=0.0,
            cost=outcome.cost,
            violation_count=len(outcome.violations),
        )

    def _on_decision(self, decision: Decision) -> None:
        self._counts["total_checks"] += 1
        self._counts["blocked_actions"] += int(decision.blocked)
        self._counts["total_violations"] += len(decision.violations)
        for violation in decision.violations:
            if self.log_violations:
                logger.warning(
                    "[%s] %s %s[%s]: %s",
                    decision.context.rollout_id,
                    violation.violation_type.value.upper(),
                    violation.policy_name,
                    violation.severity.value,
                    violation.description,
                )
            if self.violation_callback is not None:
                try:
                    self.violation_callback(violation)
                except Exception:
                    logger.exception("violation_callback raised; governance goes on")

    async def step(self, input: Any, *, resources: Any = None, mode: Any = None, event: Any = None) -> GovernedRollout:  # type: ignore[override]
        """Run one task now and return the rollout with its governance fields.

        ``mode`` is ``"train"``, ``"val"`` (``"eval"`` is accepted) or ``"test"``. On a runner
        that was not set up, the agent and the store are created first (see the class docstring).

        >>> import asyncio
        >>> from agentlightning.contrib.kernel.agentos import SQLPolicy
        >>> runner = AgentOSRunner([SQLPolicy(deny=["DROP"])], log_violations=False)
        >>> rollout = asyncio.run(runner.step("DROP TABLE users"))
        >>> rollout.success, len(rollout.violations), rollout.total_penalty
        (False, 1, -100.0)
        """
        mode = normalize_mode(mode)
        await self._ensure_ready(input, resources)
        started = time.perf_counter()
        # LitAgentRunner.step's own three store calls, keeping the attempt's key in hand.
        store = self.get_store()
        resources_id = (await store.add_resources(resources)).resources_id if resources is not None else None
        attempted = await store.start_rollout(
            input=input, mode=mode, resources_id=resources_id, worker_id=self.get_worker_id()
        )
        key = (attempted.rollout_id, attempted.attempt.attempt_id)
        try:
            await self._step_impl(attempted, raise_on_exception=True)
            rollout = await store.get_rollout_by_id(attempted.rollout_id)
        except RuntimeError as err:
            if "Failed to fetch resources" in str(err):
                raise RuntimeError(f"{err}: {RESOURCES_HINT}") from err
            raise
        finally:
            entry = self._attempts.pop(key, None)
        if rollout is None:
            raise RuntimeError(f"{self._log_prefix()} Failed to fetch completed rollout by id after step: {key[0]}")
        if entry is None or entry.record.outcome is None:
            raise RuntimeError(f"rollout {key[0]} attempt {key[1]} has no governance outcome; this is a runner bug")
        return GovernedRollout.from_outcome(rollout, entry.record.outcome, (time.perf_counter() - started) * 1e3)

    async def _ensure_ready(self, task: Any, resources: Any) -> None:
        """Create what ``step`` needs and the user did not set up: the agent, then the store."""
        if self._agent is None or isinstance(self.user_agent, TaskActionAgent):
            # A task that is no action fails here, before a rollout exists.
            task_action(task, self.input_tool, self.input_arg)
        if self._agent is not None and self._store is not None:
            return
        loop = asyncio.get_running_loop()
        lock = self._setup_locks.get(loop)
        if lock is None:
            lock = self._setup_locks[loop] = asyncio.Lock()
        async with lock:
            if self._agent is None:
                self.init(TaskActionAgent(self.input_tool, self.input_arg))
                logger.info(
                    "AgentOSRunner: no agent given; the task itself is the action to govern (%s)", self.input_tool
                )
            if self._store is None:
                store = await on_demand_store(self.user_agent, resources)
                self.init_worker(0, store)
                self._on_demand_store = store
                logger.info("AgentOSRunner: no store given; created an InMemoryLightningStore (runner.get_store())")

    async def iter(self, *, event: Any = None) -> None:
        """agentlightning's ``iter``: run the rollouts queued in the store until ``event`` is set or
        ``max_rollouts`` were run; refused at once where it could only wait forever."""
        if event is not None and not callable(getattr(event, "is_set", None)):
            raise TypeError(
                f"event must have is_set() (an asyncio.Event, threading.Event or agentlightning ExecutionEvent), "
                f"got {type(event).__name__}"
            )
        store = self.get_store()
        if store is self._on_demand_store and not await store.query_rollouts(status_in=["queuing", "requeuing"]):
            raise RuntimeError(
                "runner.iter() runs the rollouts queued in the runner's store, and this runner's store (the in-memory "
                "one step() created) has none queued, so iter() would wait forever. Queue them first: "
                "await runner.get_store().enqueue_rollout(input=task, mode='train'); and set the stop event from "
                "another task: task = asyncio.create_task(runner.iter(event=stop)); ...; stop.set(); await task. "
                "See docs/migrating.md#4-lifecycle-and-iter"
            )
        await super().iter(event=event)

    # ------------------------------------------------------------------ statistics
    def get_stats(self) -> Dict[str, Any]:
        """This runner's own counts (one process). For all workers, use :func:`governance_stats`.

        ``violation_rate`` is the fraction of rollouts with at least one violation and
        ``violations_per_rollout`` the mean number of violations per rollout, as in every
        statistics of the package.
        """
        rollouts = self._counts["total_rollouts"]
        return {
            "total_rollouts": rollouts,
            "total_violations": self._counts["total_violations"],
            "violation_rate": self._counts["rollouts_with_violations"] / rollouts if rollouts else 0.0,
            "violations_per_rollout": self._counts["total_violations"] / rollouts if rollouts else 0.0,
            "total_checks": self._counts["total_checks"],
            "blocked_actions": self._counts["blocked_actions"],
            "rollouts_with_violations": self._counts["rollouts_with_violations"],
            "ungoverned_rollouts": self._counts["ungoverned_rollouts"],
        }

    def get_violation_rate(self) -> float:
        """The fraction of this runner's rollouts with at least one violation (``get_stats()["violation_rate"]``)."""
        return self.get_stats()["violation_rate"]


def _checked_audit_dir(audit_dir: Any) -> Optional[Path]:
    """``audit_dir`` as a ``Path`` (None: none), refused at once if it cannot be a directory."""
    if audit_dir is None:
        return None
    if not isinstance(audit_dir, (str, os.PathLike)):
        raise TypeError(f"audit_dir must be a directory path (str or Path), got {type(audit_dir).__name__}")
    path = Path(audit_dir)
    if path.exists() and not path.is_dir():
        raise ValueError(
            f"audit_dir={str(path)!r} is a file; it must be a directory, where each runner process writes its "
            f"FlightRecorder file worker-<id>.db. Pass a directory (it is created if missing)."
        )
    return path


def _quiet_agentops() -> None:
    """AgentOps (agentlightning's default tracer) writes agentops.log into the current directory
    and prints "Session Replay" links although nothing is sent anywhere; keep the first out of the
    user's working tree and the second quiet, unless the user configured them. AgentOps reads
    these when its tracer starts (``init_worker``), so setting them when a runner is built is in
    time, and importing this module changes nothing."""
    os.environ.setdefault("AGENTOPS_LOGGING_TO_FILE", "False")
    os.environ.setdefault("AGENTOPS_LOG_LEVEL", "ERROR")


GovernedRollout.model_rebuild(_types_namespace={"TaskInput": TaskInput, "RolloutConfig": RolloutConfig})
