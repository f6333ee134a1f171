"""The governance kernel: policies in, one audited :class:`Decision` per action out.

:meth:`GovernanceKernel.check` is one linear path for every call form: the snapshot of the call,
its tool's plan (what the memo remembers of it inside), the optional rewrite, the policies asked,
the verdict, the commits or releases, the one constructor of a :class:`Decision`, and its record.
What the path leans on lives in rooms of its own: the memo (:mod:`.memo`), the policies' daemon
threads (:mod:`.policy_thread`), the garbage-collection clock (:mod:`.gc_clock`) and what a forked
child renews (:mod:`.after_fork`).
"""

from __future__ import annotations

import dataclasses
import itertools
import logging
import math
import threading
import uuid
from collections import OrderedDict
from datetime import datetime, timezone
from pathlib import Path
from time import perf_counter
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

from agent_os import AgentKernelPanic, AgentSignal, FlightRecorder, KernelSpace, PolicyEngine, SignalDispatcher

from .actions import (
    _DEFAULT_CONTEXT,
    NO_COST,
    Action,
    ActionContext,
    Decision,
    Verdict,
    _context_in_force,
    action_of_key,
    content_key,
    current_context,
)
from .after_fork import renew_in_child_while_alive
from .arguments import tool_key
from .audit import AuditTrail, AuditWriteError, open_flight_recorder
from .engine import AgentOSPolicy
from .gc_clock import gc_clock
from .memo import NOTHING_FOUND, Memo, Plan, is_pure
from .policies import CONFIGURATION_CHANGES, CostControlPolicy, Policy
from .policy_thread import call_on_daemon_thread, drained
from .sql import SQLPolicy
from .violations import GovernanceConfigError, PolicyViolation, Severity, SeverityTable, ViolationType, penalty_table

__all__ = ["GovernanceKernel", "as_kernel"]

logger = logging.getLogger(__name__)

KERNEL_POLICY_NAME = "GovernanceKernel"
#: Agents whose Agent OS signal dispatcher the kernel keeps (the most recently used ones).
MAX_DISPATCHERS = 1024

_ALLOWED, _BLOCKED = Verdict.ALLOWED, Verdict.BLOCKED
_new_object = object.__new__


def _fresh(violation: PolicyViolation) -> PolicyViolation:
    """A copy of a remembered finding, stamped now: each decision owns its violations."""
    copy = object.__new__(PolicyViolation)
    copy.__dict__.update(violation.__dict__)
    copy.timestamp = datetime.now(timezone.utc)
    return copy


#: What each field of a violation the kernel decides and records with must hold (exact types:
#: a subclass's own methods could raise where nothing catches them, or say one thing and record another).
_VIOLATION_FIELD_CHECKS: Tuple[Tuple[str, Any, str], ...] = (
    ("violation_type", lambda v: type(v) is ViolationType, "a ViolationType"),
    ("policy_name", lambda v: type(v) is str and v != "", "a non-empty str"),
    ("description", lambda v: type(v) is str, "a str"),
    ("severity", lambda v: type(v) is Severity, "a Severity"),
    ("timestamp", lambda v: isinstance(v, datetime), "a datetime"),
    ("action_blocked", lambda v: type(v) is bool, "a bool"),
    ("penalty", lambda v: type(v) is float and math.isfinite(v), "a finite float"),
    ("penalty_is_explicit", lambda v: type(v) is bool, "a bool"),
)


def _plain_violation(violation: PolicyViolation) -> Tuple[PolicyViolation, Optional[str]]:
    """A policy's violation as the decision holds it: a plain :class:`PolicyViolation` of its
    own (the policy cannot change it after the decision), and what is wrong with it, if a field
    was changed after it was built to something the kernel cannot decide and record with."""
    copy = object.__new__(PolicyViolation)
    fields = copy.__dict__
    for name, holds, what in _VIOLATION_FIELD_CHECKS:
        value = getattr(violation, name)
        if not holds(value):
            return copy, f"{name} is {type(value).__name__}, not {what}"
        fields[name] = value
    return copy, None


#: Every way a policy's code can end other than returning, bar an interrupt: ``SystemExit`` (a
#: policy calling ``sys.exit``) and ``GeneratorExit`` included. Each is the policy's failure, so a
#: blocked decision. ``KeyboardInterrupt`` is the process being stopped: :meth:`GovernanceKernel.check`
#: records a blocked decision and lets it go on stopping the caller, so nothing runs.
_POLICY_ENDINGS = (Exception, SystemExit, GeneratorExit)


def _own(policy: Policy, hook: str) -> bool:
    """Whether ``policy.<hook>`` is more than the base class's, which does nothing."""
    return hook in vars(policy) or getattr(type(policy), hook) is not getattr(Policy, hook)


def _applies(policy: Policy, tool_name: str) -> bool:
    """Whether ``policy`` concerns ``tool_name``, asked of the name as called and of its
    :func:`tool_key`, so a look-alike of a tool a policy names is never left out."""
    try:
        return bool(policy.applies_to(tool_name)) or bool(policy.applies_to(tool_key(tool_name)))
    except _POLICY_ENDINGS:  # noqa: BLE001 - when unsure, consult the policy (it fails closed there)
        logger.exception("policy %s.applies_to raised; consulting it for %r", policy.name, tool_name)
        return True


def _parse_signals(signals: Optional[Mapping[Any, Any]]) -> Dict[Severity, AgentSignal]:
    parsed: Dict[Severity, AgentSignal] = {}
    for severity, signal in (signals or {}).items():
        if isinstance(signal, str):
            try:
                signal = AgentSignal[signal.strip().upper()]
            except KeyError:
                valid = ", ".join(s.name for s in AgentSignal)
                raise GovernanceConfigError(f"unknown Agent OS signal {signal!r}; use one of: {valid}") from None
        if not isinstance(signal, AgentSignal):
            raise TypeError(f"signals values must be agent_os.AgentSignal or its name, got {signal!r}")
        parsed[Severity.parse(severity)] = signal
    return parsed


def _checked_policies(policies: Union[Policy, Iterable[Policy]]) -> Tuple[Policy, ...]:
    """``policies`` as the kernel keeps them; a clear error for anything it cannot check with."""
    if isinstance(policies, Policy):
        policies = [policies]
    if isinstance(policies, (str, bytes)) or not isinstance(policies, Iterable):
        raise TypeError(f"policies must be a list of Policy objects, got {type(policies).__name__}")
    checked = tuple(policies)
    for p in checked:
        if not isinstance(p, Policy):
            hint = " (wrap an agent_os.PolicyEngine in AgentOSPolicy)" if isinstance(p, PolicyEngine) else ""
            raise TypeError(f"every policy must be a Policy, got {type(p).__name__}{hint}")
    names = [p.name for p in checked]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise GovernanceConfigError(
            f"policy names must be unique (they label violations); duplicated: {duplicates}; pass name=..."
        )
    if any(isinstance(p, AgentOSPolicy) and p.defer_sql for p in checked) and not any(
        isinstance(p, SQLPolicy) for p in checked
    ):
        raise GovernanceConfigError(
            "AgentOSPolicy(defer_sql=True) leaves SQL to SQLPolicy, but the kernel has no SQLPolicy: "
            "add SQLPolicy(deny=[...]) or pass AgentOSPolicy(..., defer_sql=False)"
        )
    return checked


def _rewriters(policies: Sequence[Policy]) -> Tuple[Policy, ...]:
    """The policies that may rewrite an action (their own ``rewrite``)."""
    return tuple(p for p in policies if type(p).rewrite is not Policy.rewrite)


def _audit_trail(recorder: Union[AuditTrail, FlightRecorder, str, Path]) -> AuditTrail:
    if isinstance(recorder, AuditTrail):  # configured by the caller (a key, durability="queued", ...)
        return recorder
    if isinstance(recorder, FlightRecorder):
        return AuditTrail(recorder)
    if isinstance(recorder, (str, Path)):
        opened = open_flight_recorder(recorder)
        try:
            return AuditTrail(opened)
        except BaseException:
            opened.close()  # refused (a second writer, a changed or sealed file): leave no connection open
            raise
    raise TypeError(
        f"recorder must be an agent_os.FlightRecorder or a file path (or an AuditTrail), got {type(recorder).__name__}"
    )


class GovernanceKernel:
    """Checks every action against a list of policies, on top of the real Agent OS.

    * Violations carry a severity and a penalty; the kernel's verdict is BLOCKED if any policy
      blocks, else MODIFIED / WARNED / ALLOWED.
    * Fail closed: a policy that raises, returns something other than violations, or runs past
      ``policy_timeout_s`` blocks the action with a violation naming the failure (at
      ``error_severity``). So does a failure to write the audit record of an allowed action.
    * ``recorder`` (an ``agent_os.FlightRecorder`` or a file path) receives one record per
      decision. There is no default path: without one, nothing is written to disk.
    * ``signals`` maps a severity to an Agent OS signal dispatched to the agent on a blocked
      action at that severity (e.g. ``{"critical": "SIGSTOP"}``); none by default, so an agent in
      training sees the policy error and can learn from it.
    * ``penalties`` is the one penalty table (a ``SeverityTable`` of kind ``"penalty"``; default
      ``SeverityTable.preset("penalties")``): every violation the kernel decides carries its price
      (a policy's explicit penalty wins), so the violation, ``Decision.total_penalty`` and the audit
      record say it, and the rooms above (runner, reward, environment, gateway) price by it.

    >>> kernel = GovernanceKernel([SQLPolicy(deny=["DROP", "DELETE"]), CostControlPolicy(max_cost_usd=100)])
    >>> kernel.check("database_query", {"query": "DROP TABLE users"}).verdict
    <Verdict.BLOCKED: 'blocked'>
    >>> kernel.check("database_query", {"query": "SELECT 'DROP TABLE users'"}).allowed
    True
    """

    def __init__(
        self,
        policies: Union[Policy, Iterable[Policy]] = (),
        *,
        policy: Union[Policy, Iterable[Policy], None] = None,
        recorder: Union[FlightRecorder, str, Path, None] = None,
        policy_timeout_s: float = 1.0,
        error_severity: Union[Severity, str] = Severity.HIGH,
        signals: Optional[Mapping[Any, Any]] = None,
        penalties: Optional[SeverityTable] = None,
    ) -> None:
        if policy is not None:  # the reference API spells it KernelSpace(policy=[...])
            if policies:
                raise GovernanceConfigError("pass policies either positionally or as policy=, not both")
            policies = policy
        self._policies = _checked_policies(policies)
        if (
            isinstance(policy_timeout_s, bool)
            or not isinstance(policy_timeout_s, (int, float))
            or not policy_timeout_s > 0
        ):
            raise GovernanceConfigError(
                f"policy_timeout_s must be a positive number of seconds, got {policy_timeout_s!r}"
            )
        self.policy_timeout_s = float(policy_timeout_s)
        self.error_severity = Severity.parse(error_severity)
        self._penalties = SeverityTable.preset("penalties") if penalties is None else penalty_table(penalties)
        self._gc_pauses = gc_clock()
        self.signal_map = _parse_signals(signals)
        self.audit: Optional[AuditTrail] = None if recorder is None else _audit_trail(recorder)
        self._rewriters = _rewriters(self._policies)
        self._dispatchers: "OrderedDict[str, SignalDispatcher]" = OrderedDict()
        self._dispatchers_lock = threading.Lock()
        self._new_id_prefix()
        renew_in_child_while_alive(self, GovernanceKernel._new_id_prefix)
        self._memo = Memo()

    # ----------------------------------------------------------------- construction helpers
    @classmethod
    def from_kernel_space(
        cls, kernel_space: KernelSpace, *extra_policies: Policy, role: Optional[str] = None, **kwargs: Any
    ) -> "GovernanceKernel":
        """Adopt an ``agent_os.KernelSpace``: its policy engine becomes an :class:`AgentOSPolicy`
        and its flight recorder the audit trail."""
        if not isinstance(kernel_space, KernelSpace):
            raise TypeError(f"expected an agent_os.KernelSpace, got {type(kernel_space).__name__}")
        policies: List[Policy] = list(extra_policies)
        engine = kernel_space._policy_engine
        if engine is not None:
            has_sql = any(isinstance(p, SQLPolicy) for p in policies)
            policies.insert(0, AgentOSPolicy(engine, role=role, defer_sql=has_sql))
        recorder = kwargs.pop("recorder", None) or kernel_space._flight_recorder
        return cls(policies, recorder=recorder, **kwargs)

    def _new_id_prefix(self) -> None:
        """Decision ids are a random prefix of this kernel in this process plus a counter: unique
        across kernels and processes (64 random bits per prefix, and a forked child draws a new
        one before it runs anything, see :mod:`.after_fork`); a uuid4 per decision would draw from
        the operating system's random source on every check."""
        self._id_prefix = uuid.uuid4().hex[:16] + "-"
        self._id_counter = itertools.count(1)

    @property
    def policies(self) -> Tuple[Policy, ...]:
        """The policies every action is checked against, in order."""
        return self._policies

    @policies.setter
    def policies(self, policies: Union[Policy, Iterable[Policy]]) -> None:
        """Check against other policies from the next check on, checked as the constructor checks
        them. Everything worked out from the previous ones (which apply to each tool, their notes,
        the remembered answers) is forgotten, in every thread: a removed policy is asked no more,
        an added one from the next check on."""
        checked = _checked_policies(policies)
        with self._memo.lock:
            self._policies = checked
            self._rewriters = _rewriters(checked)
            CONFIGURATION_CHANGES[0] += 1  # every check forgets what it worked out before this

    @property
    def penalties(self) -> SeverityTable:
        """The penalty table every violation this kernel decides is priced by (fixed at construction)."""
        return self._penalties

    @property
    def policy_names(self) -> List[str]:
        return [p.name for p in self.policies]

    def attach_recorder(self, recorder: Union[AuditTrail, FlightRecorder, str, Path]) -> None:
        """Write further decisions to ``recorder`` (a FlightRecorder or a file path).

        Runners call this in each worker process: the FlightRecorder's hash chain lives in the
        recorder object, so every process needs its own file. The previous trail of this process is
        closed (its file released); one inherited from a parent process is left to the parent.
        """
        if self.audit is not None and self.audit is not recorder:
            self.audit.close()  # first: the new file may be the same path, and a file has one writer
        self.audit = _audit_trail(recorder)

    @property
    def recorder(self) -> Optional[FlightRecorder]:
        return self.audit.recorder if self.audit is not None else None

    # ----------------------------------------------------------------- deciding
    def check(
        self,
        action: Union[Action, str],
        args: Optional[Mapping[str, Any]] = None,
        *,
        context: Optional[ActionContext] = None,
        cost_usd: float = NO_COST,
    ) -> Decision:
        """Decide about one action and record the decision.

        ``action`` is an :class:`Action` or a tool name (then ``args`` and ``cost_usd`` build the
        action). ``context`` defaults to the one set by :func:`governance_context`.

        Identical calls share one :class:`Action`. The kernel keeps the frozen action of every
        call it remembers (pure policies' answers, per content: the tool name, the cost and the
        arguments' names and values, all plain ``str`` but the cost; see :mod:`.memo`), and a later
        call of the same content is given that very action, which holds only immutable plain
        values: nothing can change it, so what was judged is still what runs. Each check still
        gets its own decision, id and audit record.

        >>> kernel = GovernanceKernel([SQLPolicy(deny=["DROP"])])
        >>> args = {"query": "SELECT 1"}
        >>> first, second = kernel.check("database_query", args), kernel.check("database_query", args)
        >>> second.action is first.action, second is first, second.decision_id == first.decision_id
        (True, False, False)
        >>> args["query"] = "DROP TABLE users"  # the caller's dict is read once per check, never kept
        >>> first.action.args["query"], kernel.check("database_query", args).blocked
        ('SELECT 1', True)

        An interrupt (``KeyboardInterrupt``) while the policies are asked is recorded as a blocked
        decision and then raised on: the caller stops, and nothing runs.
        """
        try:
            memo = self._memo
            if memo.configuration != CONFIGURATION_CHANGES[0]:
                memo.forget()
            # 1. The snapshot: a remembered call's frozen action (a caller's Action is its own),
            #    else one built from what the memo's key read, else from the call.
            if type(action) is str:
                key, given = content_key(action, args, cost_usd), None
            elif isinstance(action, Action):
                if args is not None:
                    raise TypeError("pass args only together with a tool name, not with an Action")
                # A subclass's own properties could tell the memo one thing and the policies another.
                key, given = (action._content_key if type(action) is Action else None), action
            else:
                key = given = None
            entry = memo.calls.get(key)
            if entry is not None:
                snapshot, plan, remembered = entry
                if given is not None:
                    snapshot = given  # the caller's own, of the same content (and so no refusal)
                refusal = None
            else:
                plan = remembered = None
                if given is not None:
                    snapshot = given
                elif key is not None:
                    snapshot = action_of_key(key)
                else:
                    snapshot = Action.of_call(action, {} if args is None else args, cost_usd)
                refusal = snapshot.refusal  # arguments that could not be snapshot: nothing to judge
            if context is None:
                context = _context_in_force()
            elif type(context) is not ActionContext and not isinstance(context, ActionContext):
                raise TypeError(f"context must be an ActionContext, got {type(context).__name__}")
            if refusal is None:
                started = perf_counter()
                original: Optional[Action] = None
                if remembered is NOTHING_FOUND and plan.asks_none_when_nothing_found:
                    # 2-4. A remembered call in which every policy, all pure, found nothing: none is asked
                    #      and there is nothing to collect (a kernel with a rewriting policy remembers nothing).
                    verdict, violations = _ALLOWED, ()
                else:
                    violations = []  # what the rewrite and the policies find
                    # 2. The optional rewrite.
                    if self._rewriters:
                        original = snapshot
                        snapshot = self._rewritten(snapshot, context, violations)
                        if snapshot is original:
                            original = None
                        key = plan = remembered = None
                    # 3. The plan of the tool (a remembered call carries it).
                    if plan is None:
                        plan = memo.plans.get(snapshot.tool_name) or self._plan(snapshot.tool_name)
                    # 4. The policies asked, the verdict, and the commits or releases that follow it.
                    verdict = self._asked(snapshot, context, plan, key, remembered, violations)
                # 5. The decision, recorded.
                return self._decided(snapshot, context, started, verdict, violations, original, plan.notes)
        except KeyboardInterrupt:
            self._record_interrupted(action, args, context, cost_usd)
            raise
        return self.refuse(snapshot, refusal, context=context)

    def refuse(
        self,
        action: Action,
        reason: str,
        *,
        context: Optional[ActionContext] = None,
        refused_by: str = KERNEL_POLICY_NAME,
    ) -> Decision:
        """Block ``action`` without asking the policies, because its caller already knows it must
        not run (for example, its rollout has ended), and record that like any blocked decision:
        one violation of ``error_severity`` by ``refused_by``, explained by ``reason``.

        >>> kernel = GovernanceKernel([])
        >>> decision = kernel.refuse(Action.sql("SELECT 1"), "the rollout has ended", refused_by="AgentOSRunner")
        >>> decision.blocked, decision.violations[0].policy_name, decision.reason
        (True, 'AgentOSRunner', 'AgentOSRunner[high]: the rollout has ended')
        """
        if not isinstance(action, Action):
            raise TypeError(f"refuse takes an Action, got {type(action).__name__}")
        if context is None:
            context = _context_in_force()
        elif not isinstance(context, ActionContext):
            raise TypeError(f"context must be an ActionContext, got {type(context).__name__}")
        started = perf_counter()
        refusal = PolicyViolation(ViolationType.BLOCKED, refused_by, reason, self.error_severity)
        return self._decided(action, context, started, _BLOCKED, [refusal], None, ())

    def _rewritten(self, action: Action, context: ActionContext, violations: List[PolicyViolation]) -> Action:
        """``action`` as the rewriting policies leave it, in order; each rewrite is a MODIFIED
        violation in ``violations`` (so are the rewriters' failures, which leave it as it was)."""
        for policy in self._rewriters:
            rewritten = self._run(policy, "rewrite", action, context, violations)
            if isinstance(rewritten, Action) and rewritten != action:
                action = rewritten
                violations.append(
                    PolicyViolation(
                        ViolationType.MODIFIED, policy.name, f"action rewritten by {policy.name}", policy.severity
                    )
                )
        return action

    def _plan(self, tool_name: str) -> Plan:
        """What to ask about ``tool_name``: the policies that apply to it, in kernel order, what
        they note about it, and which of their answers are remembered (kept in the memo for up to
        ``memo.MAX_PLANNED_TOOL_NAMES`` names)."""
        configuration = CONFIGURATION_CHANGES[0]
        policies = tuple(p for p in self.policies if _applies(p, tool_name))
        notes, note_failures = self._notes_and_failures(tool_name, policies)
        pure = tuple(is_pure(p) for p in policies)
        plan = Plan(
            policies,
            notes,
            note_failures,
            pure,
            tuple((i, p) for i, p in enumerate(policies) if _own(p, "on_allowed")),
            tuple((i, p) for i, p in enumerate(policies) if _own(p, "on_blocked")),
        )
        self._memo.keep_plan(tool_name, plan, configuration)
        return plan

    @staticmethod
    def _notes_and_failures(
        tool_name: str, policies: Sequence[Policy]
    ) -> Tuple[Tuple[str, ...], Tuple[Tuple[Policy, str], ...]]:
        """What ``policies`` note about ``tool_name`` (:meth:`Policy.note_for`), and the policies
        whose ``note_for`` raised or answered something other than a str or None, with what went
        wrong: each blocks the action (a skipped check that cannot be stated is not skipped silently)."""
        notes: List[str] = []
        failures: List[Tuple[Policy, str]] = []
        for policy in policies:
            if type(policy).note_for is Policy.note_for:
                continue
            try:
                note = policy.note_for(tool_name)
            except _POLICY_ENDINGS as err:  # noqa: BLE001 - fail closed, and keep the decision recordable
                logger.exception("policy %s.note_for raised", policy.name)
                failures.append((policy, f"note_for raised {type(err).__name__}: {err}"))
                continue
            if note is not None and not isinstance(note, str):
                failures.append((policy, f"note_for returned {type(note).__name__}, not a str or None"))
            elif note is not None:
                note = str.__str__(note)  # the text it holds: a str subclass's own methods could raise
                if note:
                    notes.append(f"{policy.name}: {note}")
        return tuple(notes), tuple(failures)

    def _asked(
        self,
        snapshot: Action,
        context: ActionContext,
        plan: Plan,
        key: Optional[Tuple[Any, ...]],
        remembered: Optional[Tuple[Tuple[PolicyViolation, ...], ...]],
        violations: List[PolicyViolation],
    ) -> Verdict:
        """The verdict of the policies of ``plan`` on ``snapshot`` (a pure one's remembered answer
        used instead when there is one), their findings added to ``violations``, and the commits
        or releases that follow it."""
        configuration = CONFIGURATION_CHANGES[0]
        if plan.note_failures:
            violations.extend(self._failure(policy, what) for policy, what in plan.note_failures)
        policies = plan.policies
        answers: List[Tuple[PolicyViolation, ...]] = []
        remember = key is not None and remembered is None and not plan.all_impure
        for policy, pure in zip(policies, plan.pure):
            if pure and remembered is not None:
                found = remembered[len(answers)] if remembered else ()
                answers.append(found)
                violations.extend(_fresh(v) for v in found)
                continue
            before = len(violations)
            found = self._run(policy, "evaluate", snapshot, context, violations)
            if pure:
                if found is None or len(violations) != before:  # a failure is not an answer to remember
                    remember = False
                else:
                    answers.append(tuple([_fresh(v) for v in found]) if found else ())  # the memo's own copies
            if found:
                violations.extend(found)
        if remember:
            self._memo.remember(key, snapshot, plan, tuple(answers), configuration)  # type: ignore[arg-type]
        verdict = self._verdict(violations) if violations else _ALLOWED
        committed = len(policies) if verdict is not _BLOCKED else 0
        if verdict is not _BLOCKED and plan.committers:
            for index, policy in plan.committers:
                if not self._committed(policy, snapshot, context, violations):
                    committed = index
                    verdict = Verdict.BLOCKED
                    break
        if committed < len(policies):
            self._release([p for i, p in plan.releasers if i >= committed], snapshot, context)
        return verdict

    def _run(
        self, policy: Policy, method: str, action: Action, context: ActionContext, sink: List[PolicyViolation]
    ) -> Any:
        """Call ``policy.<method>`` under the kernel's fail-closed rules; failures go to ``sink``.

        An inline policy is called here, timed; any other on a daemon thread under the timeout
        (:meth:`_call_on_thread`). A garbage collection that ran meanwhile paused the policy; it is
        not its time (:mod:`.gc_clock`)."""
        fn = getattr(policy, method)
        try:
            if policy.runs_inline:
                gc_pauses = self._gc_pauses
                gc_before = gc_pauses.total_s
                started = perf_counter()
                result = fn(action, context)
                if perf_counter() - started - (gc_pauses.total_s - gc_before) > self.policy_timeout_s:
                    sink.append(
                        self._failure(policy, f"{method} took longer than policy_timeout_s={self.policy_timeout_s}s")
                    )
                    return None
            else:
                result = self._call_on_thread(policy, fn, method, action, context, sink)
            return self._checked_result(policy, method, result, sink)
        except _POLICY_ENDINGS as err:  # noqa: BLE001 - any policy failure must block, not propagate
            logger.exception("policy %s.%s raised", policy.name, method)
            sink.append(self._failure(policy, f"{method} raised {type(err).__name__}: {err}"))
            return None

    _NO_RESULT = object()

    def _call_on_thread(
        self, policy: Policy, fn: Any, method: str, action: Action, context: ActionContext, sink: List[PolicyViolation]
    ) -> Any:
        """``fn(action, context)`` on a daemon thread, under the timeout (a failure in ``sink``)."""
        try:
            # A generator is drained on the policy's thread too: it can hang or raise mid-way.
            return call_on_daemon_thread(
                (lambda: drained(fn(action, context))) if method == "evaluate" else (lambda: fn(action, context)),
                self.policy_timeout_s,
            )
        except TimeoutError:
            sink.append(self._failure(policy, f"{method} timed out after {self.policy_timeout_s}s"))
            return self._NO_RESULT

    def _checked_result(self, policy: Policy, method: str, result: Any, sink: List[PolicyViolation]) -> Any:
        """The policy's answer if it is one; otherwise a failure in ``sink`` (fail closed).

        ``evaluate`` must return an iterable of :class:`PolicyViolation` (``[]`` when the action
        is fine); ``None`` is not an answer, so it blocks. A generator is drained here, so one
        that raises after yielding blocks too (the caller turns the exception into a failure).
        """
        if result is self._NO_RESULT:
            return None
        if type(result) is list and not result and method == "evaluate":  # the common answer: nothing found
            return result
        if method == "rewrite":
            if result is not None and not isinstance(result, Action):
                sink.append(self._failure(policy, f"rewrite returned {type(result).__name__}, not an Action or None"))
                return None
            if result is not None and type(result) is not Action:
                # An Action subclass's own methods (__eq__, properties) could raise or lie later,
                # where nothing catches them: the plain action of its fields (its snapshot) instead.
                result = Action(result.tool_name, result.args, result.cost_usd)
            return result
        if result is None:
            sink.append(
                self._failure(
                    policy, "evaluate returned None, not a list of PolicyViolation (return [] when the action is fine)"
                )
            )
            return None
        if isinstance(result, PolicyViolation):
            found = [result]
        else:
            try:
                found = list(result)
            except TypeError:
                found = [result]
        if not all(isinstance(v, PolicyViolation) for v in found):
            sink.append(
                self._failure(policy, f"evaluate returned {type(result).__name__}, not a list of PolicyViolation")
            )
            return None
        plain = []
        for violation in found:
            copy, problem = _plain_violation(violation)
            if problem is not None:
                sink.append(self._failure(policy, f"evaluate returned a PolicyViolation whose {problem}"))
                return None
            plain.append(copy)
        return plain

    def _failure(self, policy: Policy, what: str) -> PolicyViolation:
        return PolicyViolation(
            ViolationType.BLOCKED, policy.name, f"{what} (failing closed: action blocked)", self.error_severity
        )

    @staticmethod
    def _verdict(violations: Sequence[PolicyViolation]) -> Verdict:
        if not violations:
            return Verdict.ALLOWED
        if any(v.action_blocked for v in violations):
            return Verdict.BLOCKED
        if any(v.violation_type is ViolationType.MODIFIED for v in violations):
            return Verdict.MODIFIED
        return Verdict.WARNED

    def _committed(
        self, policy: Policy, action: Action, context: ActionContext, violations: List[PolicyViolation]
    ) -> bool:
        """``policy.on_allowed``; False (its failure added to ``violations``) if it raised."""
        try:
            policy.on_allowed(action, context)
        except _POLICY_ENDINGS as err:  # noqa: BLE001 - fail closed, and keep the decision recordable
            logger.exception("policy %s.on_allowed raised", policy.name)
            violations.append(self._failure(policy, f"on_allowed raised {type(err).__name__}: {err}"))
            return False
        return True

    def _release(self, policies: Sequence[Policy], action: Action, context: ActionContext) -> None:
        """Tell the policies the action is blocked, so they undo what ``evaluate`` reserved (a
        budget's amount). A failure here is logged: the action is blocked either way."""
        for policy in policies:
            try:
                policy.on_blocked(action, context)
            except _POLICY_ENDINGS:  # noqa: BLE001 - the action is already blocked
                logger.exception("policy %s.on_blocked raised", policy.name)

    def _decided(
        self,
        action: Action,
        context: ActionContext,
        started: float,
        verdict: Verdict,
        violations: Sequence[PolicyViolation],
        original: Optional[Action],
        notes: Tuple[str, ...],
    ) -> Decision:
        """The kernel's one constructor of a :class:`Decision`, and its record.

        Every field is made here, so none is checked, and stored in the new instance's own dict (the
        frozen dataclass's ``__init__`` would set each with ``object.__setattr__``, and a dict set as
        the instance's is one more to fill). A field still at its default (the default context, no
        finding, no signal, no rewrite, no audit, no note) is left out: the class keeps the default,
        where every read finds it.
        """
        decision_id = self._id_prefix + hex(next(self._id_counter))
        audit = self.audit
        decision = _new_object(Decision)
        fields = decision.__dict__
        fields["action"] = action
        fields["verdict"] = verdict
        if context is not _DEFAULT_CONTEXT:
            fields["context"] = context
        fields["decision_id"] = decision_id
        if violations:
            self._penalties.stamp(violations)  # the decision's own copies: priced once, here
            fields["violations"] = tuple(violations)
        if verdict is _BLOCKED:
            fields["signals"] = self._send_signals(violations, context)
        if original is not None:
            fields["original_action"] = original
        if audit is not None:
            fields["audit_id"] = decision_id
        if notes:
            fields["notes"] = notes
        fields["elapsed_us"] = (perf_counter() - started) * 1e6
        return decision if audit is None else self._record(decision)

    def _send_signals(self, violations: Sequence[PolicyViolation], context: ActionContext) -> Tuple[str, ...]:
        if not self.signal_map:
            return ()
        worst = max((v.severity for v in violations if v.action_blocked), key=lambda s: s.rank, default=None)
        signal = self.signal_map.get(worst) if worst is not None else None
        if signal is None:
            return ()
        dispatcher = self.dispatcher(context.agent_id)
        reason = "; ".join(v.description for v in violations if v.action_blocked)
        try:
            dispatcher.signal(signal, source="agentlightning.contrib.kernel.agentos", reason=reason)
        except AgentKernelPanic:
            # SIGKILL / SIGPOLICY terminate the agent in Agent OS; the dispatcher keeps that state.
            return (signal.name, AgentSignal.SIGKILL.name) if signal is not AgentSignal.SIGKILL else (signal.name,)
        return (signal.name,)

    def dispatcher(self, agent_id: str) -> SignalDispatcher:
        """The Agent OS signal dispatcher of ``agent_id`` (``is_stopped``, ``is_terminated``, history).

        The kernel keeps the dispatchers of the :data:`MAX_DISPATCHERS` agents most recently
        signalled or asked about; an older one is forgotten (its agent starts afresh), so a run
        with ever new agent ids holds bounded memory. Each decision carries its own signals.
        """
        with self._dispatchers_lock:
            found = self._dispatchers.get(agent_id)
            if found is None:
                found = self._dispatchers[agent_id] = SignalDispatcher(agent_id)
                while len(self._dispatchers) > MAX_DISPATCHERS:
                    self._dispatchers.popitem(last=False)
            else:
                self._dispatchers.move_to_end(agent_id)
            return found

    def _record(self, decision: Decision) -> Decision:
        if self.audit is None:
            return decision
        try:
            self.audit.record(decision)  # recorded under its decision_id, already the audit_id
        except Exception as err:  # noqa: BLE001
            logger.exception("audit write failed")
            if decision.blocked:
                # The action is already blocked; losing its record is logged loudly above.
                return dataclasses.replace(decision, audit_id=None)
            failure = PolicyViolation(
                ViolationType.BLOCKED,
                KERNEL_POLICY_NAME,
                # The audit's own errors already name their cause; others are named here (so the
                # reason does not say "audit write failed" twice).
                f"audit write failed ({err if isinstance(err, AuditWriteError) else f'{type(err).__name__}: {err}'});"
                " failing closed: action blocked",
                self.error_severity,
            )
            return dataclasses.replace(
                decision, verdict=Verdict.BLOCKED, violations=decision.violations + (failure,), audit_id=None
            )
        return decision

    def _record_interrupted(self, action: Any, args: Any, context: Any, cost_usd: Any) -> None:
        """The blocked decision of a check an interrupt stopped (best effort: the interrupt goes on)."""
        try:
            if not isinstance(action, Action):
                action = Action.of_call(action, {} if args is None else args, cost_usd)
            if not isinstance(context, ActionContext):
                context = _context_in_force()
            self.refuse(action, "the check was interrupted (KeyboardInterrupt) before a verdict", context=context)
        except Exception:  # noqa: BLE001 - the interrupt is what the caller must see
            logger.exception("the interrupted check could not be recorded")

    # ----------------------------------------------------------------- state and outcomes
    def record_outcome(
        self,
        decision: Decision,
        *,
        result: Any = None,
        error: Optional[BaseException | str] = None,
        execution_time_ms: Optional[float] = None,
    ) -> None:
        """Add the executed action's result (or error) to its audit record."""
        if self.audit is not None and decision.audit_id is not None:
            self.audit.record_outcome(
                decision.audit_id,
                result=result,
                error=None
                if error is None
                else f"{type(error).__name__}: {error}"
                if isinstance(error, BaseException)
                else error,
                execution_time_ms=execution_time_ms,
            )

    def report_cost(self, cost_usd: float, context: Optional[ActionContext] = None) -> None:
        """Feed a cost incurred outside a governed action to every :class:`CostControlPolicy`."""
        context = context or current_context()
        for policy in self.policies:
            if isinstance(policy, CostControlPolicy):
                policy.report_cost(cost_usd, context)

    def end_rollout(self, rollout_id: str) -> None:
        """Drop per-rollout policy state (budgets) once a rollout has finished."""
        for policy in self.policies:
            policy.end_rollout(rollout_id)

    def reset(self) -> None:
        """Forget all policy state (e.g. between runs)."""
        for policy in self.policies:
            policy.reset()
        with self._dispatchers_lock:
            self._dispatchers.clear()

    def verify_audit(self) -> Dict[str, Any]:
        """Recompute the whole audit file (every hash, link, seal and the signed head; see
        ``audit.seal.verify_rows``) and check it is still the file this kernel writes:
        ``{"valid": bool, "sealed": bool, "assurance": "keyed" | "unkeyed", ...}``."""
        if self.audit is None:
            raise RuntimeError("this kernel has no recorder; pass recorder=<path> to keep an audit trail")
        return self.audit.verify()

    def close(self) -> None:
        """Flush and close the audit trail."""
        if self.audit is not None:
            self.audit.close()

    def __repr__(self) -> str:
        audit = self.audit.path if self.audit else None
        return f"GovernanceKernel(policies={self.policy_names}, recorder={audit!r})"


def as_kernel(obj: Any, *, penalties: Optional[SeverityTable] = None) -> GovernanceKernel:
    """Accept what users hand a runner or environment as "the kernel".

    A :class:`GovernanceKernel` is returned as is; an ``agent_os.KernelSpace`` is adopted with
    :meth:`GovernanceKernel.from_kernel_space`; a list of policies builds a kernel. Anything
    else is a ``TypeError`` naming what was passed.

    ``penalties`` is the penalty table the caller prices by (None: the kernel's): a kernel built
    here gets it, and a given kernel must already price by it (a violation has one price), else
    the error names both tables and the fix.

    >>> as_kernel([SQLPolicy(deny=["DROP"])]).policy_names
    ['SQLPolicy']
    """
    if penalties is not None:
        penalties = penalty_table(penalties)
    if isinstance(obj, GovernanceKernel):
        if penalties is not None and penalties != obj.penalties:
            raise GovernanceConfigError(
                f"the penalty table given, {penalties!r}, differs from the one the kernel prices its violations "
                f"by, {obj.penalties!r}: a violation has one price. Build the kernel with the table, "
                f"GovernanceKernel(penalties=config.severity_penalties, ...), or leave the table out to price by "
                f"the kernel's"
            )
        return obj
    if isinstance(obj, KernelSpace):
        return GovernanceKernel.from_kernel_space(obj, penalties=penalties)
    if isinstance(obj, Policy):
        return GovernanceKernel([obj], penalties=penalties)
    if isinstance(obj, (list, tuple)) and all(isinstance(p, Policy) for p in obj):
        return GovernanceKernel(obj, penalties=penalties)
    raise TypeError(
        f"expected a GovernanceKernel, an agent_os.KernelSpace or a list of policies, got "
        f"{type(obj).__module__}.{type(obj).__name__}; build one with GovernanceKernel([SQLPolicy(...), ...])"
    )
