"""AgentOSRunner: a real agentlightning ``LitAgentRunner`` that governs every action of a rollout."""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Union

from pydantic import ConfigDict, Field

from agentlightning.emitter import emit_reward, find_final_reward
from agentlightning.litagent import LitAgent
from agentlightning.runner import LitAgentRunner
from agentlightning.store.base import LightningStore
from agentlightning.tracer.agentops import AgentOpsTracer
from agentlightning.tracer.base import Tracer
from agentlightning.types import AttemptedRollout, Rollout
from agentlightning.types.core import RolloutConfig, TaskInput

from agentlightning.contrib.kernel.agentos import (
    Action,
    ActionContext,
    Decision,
    GovernanceConfigError,
    PolicyViolation,
    as_kernel,
    constraint_cost,
)
from agentlightning.contrib.kernel.agentos.semconv import REWARD_FINAL, GovernedReward
from agentlightning.contrib.kernel.agentos.spans import add_spans, reward_core_fields

from .tools import PolicyViolationError, RolloutGovernance, active_rollout

__all__ = ["AgentOSRunner", "GovernedRunner", "GovernedRollout"]

# AgentOps (agentlightning's default tracer) writes agentops.log into the current directory and
# prints "Session Replay" links although nothing is sent anywhere; keep the first out of the
# user's working tree and the second quiet, unless the user configured them.
os.environ.setdefault("AGENTOPS_LOGGING_TO_FILE", "False")
os.environ.setdefault("AGENTOPS_LOG_LEVEL", "ERROR")

logger = logging.getLogger(__name__)

_ROLLOUT_METHODS = ("training_rollout", "validation_rollout", "training_rollout_async", "validation_rollout_async")


class GovernedRollout(Rollout):
    """The store's :class:`~agentlightning.Rollout` plus the governance fields users know."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    task_input: Any = None
    task_output: Any = None
    success: bool = False
    violations: List[PolicyViolation] = Field(default_factory=list)
    signals_sent: List[str] = Field(default_factory=list)
    total_penalty: float = 0.0
    cost: float = 0.0
    agent_reward: Optional[float] = None
    reward: Optional[GovernedReward] = None
    execution_time_ms: float = 0.0
    decisions: List[Decision] = Field(default_factory=list)

    @classmethod
    def from_state(
        cls, rollout: Rollout, state: RolloutGovernance, execution_time_ms: float, *, success: Optional[bool] = None
    ) -> "GovernedRollout":
        if success is None:
            success = rollout.status == "succeeded"
        return cls(
            **rollout.model_dump(exclude={"attempt"}),
            task_input=rollout.input,
            task_output=state.task_output,
            success=success and not state.input_blocked,
            violations=state.violations,
            signals_sent=state.signals,
            total_penalty=state.total_penalty,
            cost=state.reward.cost if state.reward is not None else constraint_cost(state.violations),
            agent_reward=state.agent_reward,
            reward=state.reward,
            execution_time_ms=execution_time_ms,
            decisions=list(state.decisions),
        )


class AgentOSRunner(LitAgentRunner[Any]):
    """A ``LitAgentRunner`` whose rollouts run under a governance kernel.

    Inside each rollout attempt, tools wrapped with :func:`governed_tool` are checked by
    ``kernel``; every check and every violation becomes an annotation span of that rollout and
    attempt, and the attempt's metadata gets a summary under ``"agentos"``. Concurrent rollouts
    never share state (it lives in a context variable per attempt).

    Args:
        kernel: a :class:`GovernanceKernel`, an ``agent_os.KernelSpace`` or a list of policies.
        tracer: the agentlightning tracer (default: ``AgentOpsTracer``, as the Trainer uses).
        fail_on_violation: a blocked action raises :class:`PolicyViolationError` (the rollout
            fails; ``step`` raises) instead of :class:`ActionBlockedError` to the agent.
        log_violations: log a WARNING per violation.
        violation_callback: called with each :class:`PolicyViolation` (errors are logged).
        govern_input: govern a string task itself as ``input_tool(input_arg=task)`` before the
            agent runs (the reference's ``runner.step("SELECT ...")``); a blocked task does not
            reach the agent. Off by default: tasks are usually questions, not actions.
        audit_dir: directory for one FlightRecorder file per runner process
            (``worker-<id>.db``); required when the kernel audits and runners are processes.
        reward_fn: shapes each rollout's reward by its violations, typically a ``PolicyReward``.
            It is called with the :class:`GovernedRollout` (``agent_reward`` holds the reward the
            agent returned or emitted, ``success`` whether it finished without raising) and its
            result becomes one multi-dimensional reward span (primary dimension ``final``) that is
            the last reward span of the attempt, so ``find_final_reward`` returns it; a float
            returned by the agent is not stored unshaped. If the agent raises, the span is still
            written (with ``success=False``) before the attempt is marked failed. An object with
            ``score(rollout) -> GovernedReward`` keeps its decomposition; a plain callable's float
            is stored as ``final`` and ``base``.
        **runner_kwargs: passed to ``LitAgentRunner`` (``max_rollouts``, ``poll_interval``, ...).

    >>> from agentlightning.contrib.kernel.agentos import SQLPolicy
    >>> runner = AgentOSRunner([SQLPolicy(deny=["DROP"])], poll_interval=0.1)
    >>> runner.get_stats()
    {'total_rollouts': 0, 'total_violations': 0, 'violation_rate': 0.0, 'total_checks': 0, 'blocked_actions': 0, 'rollouts_with_violations': 0}
    """

    def __init__(
        self,
        kernel: Any,
        tracer: Optional[Tracer] = None,
        *,
        fail_on_violation: bool = False,
        log_violations: bool = True,
        violation_callback: Optional[Callable[[PolicyViolation], Any]] = None,
        govern_input: bool = False,
        input_tool: str = "database_query",
        input_arg: str = "query",
        agent_id: Optional[str] = None,
        audit_dir: Union[str, Path, None] = None,
        reward_fn: Optional[Callable[[Any], Any]] = None,
        **runner_kwargs: Any,
    ) -> None:
        self.kernel = as_kernel(kernel)
        for name, value in (("fail_on_violation", fail_on_violation), ("log_violations", log_violations), ("govern_input", govern_input)):
            if not isinstance(value, bool):
                raise TypeError(f"{name} must be a bool, got {type(value).__name__}")
        if violation_callback is not None and not callable(violation_callback):
            raise TypeError(f"violation_callback must be callable, got {type(violation_callback).__name__}")
        if reward_fn is not None and not callable(reward_fn):
            raise TypeError(f"reward_fn must be callable (rollout -> reward), e.g. PolicyReward(kernel); got {type(reward_fn).__name__}")
        if tracer is not None and not isinstance(tracer, Tracer):
            raise TypeError(f"tracer must be an agentlightning Tracer, got {type(tracer).__name__}")
        super().__init__(tracer if tracer is not None else AgentOpsTracer(), **runner_kwargs)
        self.fail_on_violation = fail_on_violation
        self.log_violations = log_violations
        self.violation_callback = violation_callback
        self.govern_input = govern_input
        self.input_tool = input_tool
        self.input_arg = input_arg
        self.agent_id = agent_id
        self.audit_dir = Path(audit_dir) if audit_dir is not None else None
        self.reward_fn = reward_fn
        self._counts = {"total_rollouts": 0, "total_violations": 0, "total_checks": 0, "blocked_actions": 0, "rollouts_with_violations": 0}
        self._last_step_state: Optional[RolloutGovernance] = None

    # ------------------------------------------------------------------ lifecycle
    def init(self, agent: LitAgent[Any], **kwargs: Any) -> None:
        super().init(agent, **kwargs)
        self._wrap_agent(agent)

    def init_worker(self, worker_id: int, store: LightningStore, **kwargs: Any) -> None:
        if self.audit_dir is not None:
            self.kernel.attach_recorder(self.audit_dir / f"worker-{worker_id}.db")
        elif self.kernel.audit is not None and self.kernel.audit.pid != os.getpid():
            raise GovernanceConfigError(
                "the kernel's FlightRecorder was opened in another process; its hash chain cannot be "
                "shared. Pass audit_dir=... to AgentOSRunner so each runner process writes its own file."
            )
        super().init_worker(worker_id, store, **kwargs)

    def teardown_worker(self, worker_id: int, *args: Any, **kwargs: Any) -> None:
        if self.kernel.audit is not None:
            self.kernel.audit.flush()
        super().teardown_worker(worker_id, *args, **kwargs)

    def teardown(self, *args: Any, **kwargs: Any) -> None:
        if self._agent is not None:
            for name in _ROLLOUT_METHODS:
                self._agent.__dict__.pop(name, None)
        super().teardown(*args, **kwargs)

    def _wrap_agent(self, agent: LitAgent[Any]) -> None:
        """Shadow the agent's rollout methods (on the instance) to govern a string task first."""
        for name in _ROLLOUT_METHODS:
            agent.__dict__.pop(name, None)  # never wrap a wrapper (init may run twice on one agent)
            original = getattr(agent, name)
            if name.endswith("_async"):

                async def async_method(task: Any, *args: Any, _original: Any = original, **kwargs: Any) -> Any:
                    if not self._task_allowed(task):
                        return None
                    try:
                        return await _original(task, *args, **kwargs)
                    except Exception:
                        self._on_agent_failure()
                        raise

                setattr(agent, name, async_method)
            else:

                def method(task: Any, *args: Any, _original: Any = original, **kwargs: Any) -> Any:
                    if not self._task_allowed(task):
                        return None
                    try:
                        return _original(task, *args, **kwargs)
                    except Exception:
                        self._on_agent_failure()
                        raise

                setattr(agent, name, method)

    def _task_allowed(self, task: Any) -> bool:
        state = active_rollout()
        if not self.govern_input or state is None or not isinstance(task, str):
            return True
        decision = state.decide(Action(self.input_tool, {self.input_arg: task}))
        if decision.allowed:
            return True
        state.input_blocked = True
        if self.fail_on_violation:
            raise PolicyViolationError(decision)
        return False

    # ------------------------------------------------------------------ rollouts
    async def _step_impl(self, next_rollout: AttemptedRollout, raise_on_exception: bool = False) -> str:
        state = RolloutGovernance(
            kernel=self.kernel,
            context=ActionContext(
                agent_id=self.agent_id or self.get_worker_id(),
                rollout_id=next_rollout.rollout_id,
                attempt_id=next_rollout.attempt.attempt_id,
            ),
            fail_on_violation=self.fail_on_violation,
            on_decision=self._on_decision,
            defer_clean_check_spans=True,
        )
        state.rollout = next_rollout
        try:
            with state.activate():
                return await super()._step_impl(next_rollout, raise_on_exception=raise_on_exception)
        finally:
            await self._finish(next_rollout, state)
            if raise_on_exception:  # called from step(), which returns the governance fields
                self._last_step_state = state

    async def _post_process_rollout_result(self, rollout: AttemptedRollout, raw_result: Any) -> Any:
        state = active_rollout()
        if state is not None:
            state.task_output = raw_result
        if state is None:
            return await super()._post_process_rollout_result(rollout, raw_result)
        if self.reward_fn is not None and isinstance(raw_result, (bool, int, float)):
            # The agent's own reward becomes the base of the shaped one; it is not stored unshaped.
            state.agent_reward = float(raw_result)
            raw_result = None
        spans = list(await super()._post_process_rollout_result(rollout, raw_result))
        # The clean checks' spans and the shaped reward span, in one store call.
        batch = state.take_deferred_spans()
        if self.reward_fn is not None:
            if state.agent_reward is None:
                state.agent_reward = find_final_reward(spans)  # a reward the agent emitted itself
            state.reward = self._score(rollout, state, success=True)
            batch.append(reward_core_fields(state.reward))
        spans += await add_spans(self.get_store(), rollout.rollout_id, rollout.attempt.attempt_id, batch)
        return spans

    def _score(self, rollout: Rollout, state: RolloutGovernance, *, success: bool) -> GovernedReward:
        view = GovernedRollout.from_state(rollout, state, 0.0, success=success)
        score = getattr(self.reward_fn, "score", None)
        value = score(view) if callable(score) else self.reward_fn(view)  # type: ignore[misc]
        if isinstance(value, GovernedReward):
            return value
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TypeError(f"reward_fn returned {type(value).__name__} ({value!r}); it must return a float or a GovernedReward")
        return GovernedReward(
            final=float(value),
            base=float(value),
            policy_penalty=0.0,
            clean_bonus=0.0,
            cost=constraint_cost(state.violations),
            violation_count=len(state.violations),
        )

    def _on_agent_failure(self) -> None:
        """The agent raised: emit the held-back check spans and the shaped reward into the trace
        now, before the runner marks the attempt failed (a span added after that could revive a
        requeued rollout)."""
        state = active_rollout()
        if state is None:
            return
        state.emit_deferred_spans()
        if self.reward_fn is None or state.rollout is None or state.reward is not None:
            return
        rollout = state.rollout
        try:
            state.reward = self._score(rollout, state, success=False)
            emit_reward(state.reward.dimensions(), primary_key=REWARD_FINAL, attributes=state.reward.span_attributes())
        except Exception:
            logger.exception("could not emit the governed reward of failed rollout %s", rollout.rollout_id)

    async def _finish(self, rollout: AttemptedRollout, state: RolloutGovernance) -> None:
        self.kernel.end_rollout(rollout.rollout_id)
        self._counts["total_rollouts"] += 1
        if state.violations:
            self._counts["rollouts_with_violations"] += 1
        metadata = {**(rollout.attempt.metadata or {}), "agentos": state.summary()}
        try:
            await self.get_store().update_attempt(rollout.rollout_id, rollout.attempt.attempt_id, metadata=metadata)
        except Exception:
            logger.exception("could not write the governance summary of rollout %s to the store", rollout.rollout_id)

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
        """Run one task now and return the rollout with its governance fields."""
        started = time.perf_counter()
        try:
            rollout = await super().step(input, resources=resources, mode=mode, event=event)
            state = self._last_step_state
        finally:
            self._last_step_state = None
        assert state is not None and state.context.rollout_id == rollout.rollout_id
        return GovernedRollout.from_state(rollout, state, (time.perf_counter() - started) * 1e3)

    # ------------------------------------------------------------------ statistics
    def get_stats(self) -> Dict[str, Any]:
        """This runner's own counts (one process). For all workers, use :func:`governance_stats`."""
        rollouts = self._counts["total_rollouts"]
        return {
            "total_rollouts": rollouts,
            "total_violations": self._counts["total_violations"],
            "violation_rate": self._counts["total_violations"] / rollouts if rollouts else 0.0,
            "total_checks": self._counts["total_checks"],
            "blocked_actions": self._counts["blocked_actions"],
            "rollouts_with_violations": self._counts["rollouts_with_violations"],
        }

    def get_violation_rate(self) -> float:
        """Violations per rollout in this runner."""
        return self.get_stats()["violation_rate"]


GovernedRollout.model_rebuild(_types_namespace={"TaskInput": TaskInput, "RolloutConfig": RolloutConfig})

#: Name used by the agentmesh-lightning package.
GovernedRunner = AgentOSRunner
