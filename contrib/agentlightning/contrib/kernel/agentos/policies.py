"""The :class:`Policy` contract and the simple policies: tool allow-list and cost budget.

A policy looks at one :class:`Action` in its :class:`ActionContext` and returns the violations
it finds (nothing when the action is fine). The kernel combines the answers, fails closed when
a policy raises or times out, and writes the decision to the audit trail.
"""

from __future__ import annotations

import inspect
import threading
from abc import ABC, abstractmethod
from collections import Counter
from decimal import Decimal
from typing import Any, ClassVar, Dict, Iterable, List, Literal, Optional, Tuple, Union

from .actions import Action, ActionContext, plain_cost
from .arguments import tool_key
from .violations import GovernanceConfigError, PolicyViolation, Severity, ViolationType

__all__ = ["Policy", "ToolAllowListPolicy", "CostControlPolicy", "PolicyMode"]

PolicyMode = Literal["block", "warn"]

#: How many times the configuration of a pure policy (:attr:`Policy.pure`) was set; a kernel
#: that remembers pure policies' answers forgets them when this changes.
CONFIGURATION_CHANGES = [0]


class Policy(ABC):
    """Base class for governance policies.

    Subclasses implement :meth:`evaluate`. Use :meth:`violation` to build findings so that the
    policy's name, severity and mode (``"block"`` or ``"warn"``, for shadow-testing a new
    policy) are applied consistently.

    ``runs_inline`` marks policies whose evaluation is bounded CPU work; the kernel calls them
    directly. Other policies run on a daemon thread under the kernel's timeout, so a policy that
    hangs blocks the action instead of the agent.

    >>> class NoShell(Policy):
    ...     def evaluate(self, action, context):
    ...         if action.tool_name == "shell":
    ...             return [self.violation("shell access is not allowed")]
    ...         return []
    >>> NoShell(severity="high").evaluate(Action("shell", {}), ActionContext())[0].penalty
    -50.0
    """

    runs_inline: ClassVar[bool] = False
    #: Declares :meth:`evaluate` a deterministic function of the frozen action alone (its tool
    #: name, its cost and its arguments' plain values) and of this policy's configuration: no
    #: state, no context, no clock, and no :meth:`on_allowed` / :meth:`on_blocked` bookkeeping.
    #: The kernel then remembers the answer per action (see ``GovernanceKernel``) and does not
    #: ask again for the same action. Only a class that sets it in its own body counts (a
    #: subclass that changes the behaviour must declare it again); setting any attribute of a
    #: pure policy (its configuration) makes every kernel forget what it remembered.
    pure: bool = False

    def __init__(
        self,
        *,
        name: Optional[str] = None,
        severity: Union[Severity, str] = Severity.HIGH,
        mode: PolicyMode = "block",
        **unknown: Any,
    ) -> None:
        if unknown:  # a TypeError, as Python's own for an unexpected keyword, naming the valid ones
            raise TypeError(
                f"{type(self).__name__} got unknown argument(s) {', '.join(sorted(unknown))}; "
                f"its arguments are: {', '.join(_parameter_names(type(self)))}"
            )
        if name is not None and (not isinstance(name, str) or not name):
            raise TypeError(f"policy name must be a non-empty str, got {name!r}")
        if mode not in ("block", "warn"):
            raise GovernanceConfigError(f"unknown policy mode {mode!r}; use 'block' or 'warn'")
        self.name: str = name or type(self).__name__
        self.severity: Severity = Severity.parse(severity)
        self.mode: PolicyMode = mode

    def __setattr__(self, name: str, value: Any) -> None:
        object.__setattr__(self, name, value)
        if type(self).__dict__.get("pure") is True:  # a changed configuration: remembered answers are stale
            CONFIGURATION_CHANGES[0] += 1

    @abstractmethod
    def evaluate(self, action: Action, context: ActionContext) -> Iterable[PolicyViolation]:
        """Return the violations ``action`` commits (an empty iterable when it is fine)."""

    def applies_to(self, tool_name: str) -> bool:
        """Whether actions of ``tool_name`` can concern this policy at all (default: every tool).

        The kernel asks once per tool name and then consults only the policies that apply, so
        a kernel with many tool-specific policies pays for the ones about the tool being called.
        """
        return True

    def rewrite(self, action: Action, context: ActionContext) -> Optional[Action]:
        """Optionally return a safer version of ``action`` (recorded as MODIFIED). Default: none."""
        return None

    def note_for(self, tool_name: str) -> Optional[str]:
        """What an auditor should know about every decision on ``tool_name`` that is no
        violation, such as a check this policy skips for it by configuration; the kernel records
        it in ``Decision.notes`` and the audit trail. Default: nothing."""
        return None

    def on_allowed(self, action: Action, context: ActionContext) -> None:
        """Called once the kernel has allowed ``action``: commit state such as spent budget."""

    def on_blocked(self, action: Action, context: ActionContext) -> None:
        """Called when the kernel blocked ``action`` after consulting this policy (another policy
        blocked it, or an ``on_allowed`` failed): undo what :meth:`evaluate` reserved."""

    def end_rollout(self, rollout_id: str) -> None:
        """Forget per-rollout state once ``rollout_id`` is over."""

    def reset(self) -> None:
        """Forget all state (a new run)."""

    def violation(self, description: str, *, severity: Union[Severity, str, None] = None) -> PolicyViolation:
        """A finding of this policy: BLOCKED in ``block`` mode, WARNED in ``warn`` mode."""
        kind = ViolationType.BLOCKED if self.mode == "block" else ViolationType.WARNED
        return PolicyViolation(kind, self.name, description, self.severity if severity is None else severity)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, severity={self.severity.value!r}, mode={self.mode!r})"


def _parameter_names(cls: type) -> List[str]:
    """The keyword arguments ``cls(...)`` takes, its own and its bases' (for error messages)."""
    names: Dict[str, None] = {}
    for klass in cls.__mro__:
        init = klass.__dict__.get("__init__")
        if init is None or klass is object:
            continue
        for parameter in list(inspect.signature(init).parameters.values())[1:]:
            if parameter.kind not in (parameter.VAR_KEYWORD, parameter.VAR_POSITIONAL):
                names.setdefault(parameter.name)
    return list(names)


class ToolAllowListPolicy(Policy):
    """Only the listed tools may be called; everything else is blocked (deny by default).

    Names are compared as :func:`.arguments.tool_key` reads them: ``Database-Query``, a name with
    a zero-width character or a Cyrillic look-alike letter is the listed tool it looks like;
    ``database_query_v2`` is another tool, so it is not allowed unless listed.

    For role-based allow-lists and attribute conditions, plug Agent OS's own ``PolicyEngine``
    in with :class:`AgentOSPolicy` instead.

    >>> policy = ToolAllowListPolicy(["database_query", "search"])
    >>> [v.description for v in policy.evaluate(Action("send_email", {}), ActionContext())]
    ["tool 'send_email' is not in the allow-list (allowed: database_query, search)"]
    """

    runs_inline = True
    pure = True

    def __init__(
        self, allowed_tools: Iterable[str], *, severity: Union[Severity, str] = Severity.HIGH, **kwargs
    ) -> None:
        super().__init__(severity=severity, **kwargs)
        if isinstance(allowed_tools, str):
            raise TypeError("allowed_tools must be a list of tool names, not a single str")
        tools = list(allowed_tools)
        bad = [t for t in tools if not isinstance(t, str) or not t]
        if bad:
            raise TypeError(f"allowed_tools entries must be non-empty str, got {bad[:3]!r}")
        self.allowed_tools = frozenset(tools)
        self._allowed_keys = frozenset(tool_key(t) for t in tools)
        self._listing = ", ".join(sorted(self.allowed_tools)) or "nothing"

    def evaluate(self, action: Action, context: ActionContext) -> List[PolicyViolation]:
        if action.tool_key in self._allowed_keys:
            return []
        return [self.violation(f"tool {action.tool_name!r} is not in the allow-list (allowed: {self._listing})")]


RUN_SCOPE = "__run__"


class CostControlPolicy(Policy):
    """A running spending budget, per rollout or per run.

    Each action may carry ``cost_usd``; costs incurred elsewhere (LLM tokens, say) are fed in with
    :meth:`report_cost` (or ``kernel.report_cost``). An action is allowed while
    ``spent + action.cost_usd <= max_cost_usd``: landing exactly on the limit is allowed, going
    over it is blocked, and a blocked action spends nothing. Amounts are summed as decimals so
    ten actions of $0.10 reach $1.00 exactly.

    The check and the spending are one step: :meth:`evaluate` reserves the action's cost under
    the policy's lock, :meth:`on_allowed` keeps it and :meth:`on_blocked` gives it back, so
    checks running at the same time can never spend past the limit together.

    >>> budget = CostControlPolicy(max_cost_usd=1.0)
    >>> ctx = ActionContext(rollout_id="r1")
    >>> for _ in range(4):  # what the kernel does: the action it evaluated is the one it allows
    ...     call = Action("llm", {}, cost_usd=0.25)
    ...     assert not budget.evaluate(call, ctx)
    ...     budget.on_allowed(call, ctx)
    >>> budget.spent(ctx)
    1.0
    >>> len(budget.evaluate(Action("llm", {}, cost_usd=0.01), ctx))
    1
    """

    runs_inline = True

    def __init__(
        self,
        max_cost_usd: float,
        *,
        scope: Literal["rollout", "run"] = "rollout",
        severity: Union[Severity, str] = Severity.HIGH,
        **kwargs,
    ) -> None:
        super().__init__(severity=severity, **kwargs)
        try:
            limit = plain_cost("max_cost_usd", max_cost_usd)  # a TypeError for a non-number
        except ValueError as err:  # negative, NaN, infinite, an int too large for a float
            raise GovernanceConfigError(str(err)) from None
        if scope not in ("rollout", "run"):
            raise GovernanceConfigError(f"unknown budget scope {scope!r}; use 'rollout' or 'run'")
        self.max_cost_usd = limit
        self.scope = scope
        self._limit = Decimal(repr(self.max_cost_usd))
        self._spent: Dict[str, Decimal] = {}
        self._reserved: Counter[Tuple[str, int]] = Counter()  # (scope key, id(action)) -> held
        self._lock = threading.Lock()

    def _key(self, context: ActionContext) -> str:
        if self.scope == "run":
            return RUN_SCOPE
        return context.rollout_id or RUN_SCOPE

    def spent(self, context: Optional[ActionContext] = None) -> float:
        """Dollars spent so far in ``context``'s scope."""
        with self._lock:
            return float(self._spent.get(self._key(context or ActionContext()), Decimal(0)))

    def evaluate(self, action: Action, context: ActionContext) -> List[PolicyViolation]:
        key = self._key(context)
        cost = Decimal(repr(action.cost_usd))
        with self._lock:  # check and reserve in one step
            spent = self._spent.get(key, Decimal(0))
            if spent + cost <= self._limit:
                if cost:
                    self._spent[key] = spent + cost
                    self._reserved[(key, id(action))] += 1
                return []
        where = "this run" if key == RUN_SCOPE else f"rollout {key}"
        return [
            self.violation(f"budget exceeded in {where}: spent ${spent} + this action ${cost} > max ${self._limit}")
        ]

    def _settle(self, action: Action, context: ActionContext) -> bool:
        """Forget one reservation of ``action``; whether there was one."""
        held = (self._key(context), id(action))
        if self._reserved[held] <= 0:
            self._reserved.pop(held, None)
            return False
        self._reserved[held] -= 1
        if not self._reserved[held]:
            del self._reserved[held]
        return True

    def on_allowed(self, action: Action, context: ActionContext) -> None:
        with self._lock:
            if self._settle(action, context) or not action.cost_usd:
                return  # spent when it was reserved
        self._add(self._key(context), action.cost_usd)  # evaluated without a reservation

    def on_blocked(self, action: Action, context: ActionContext) -> None:
        key = self._key(context)
        with self._lock:
            if self._settle(action, context) and key in self._spent:
                self._spent[key] -= Decimal(repr(action.cost_usd))

    def report_cost(self, cost_usd: float, context: Optional[ActionContext] = None) -> None:
        """Add a cost already incurred outside a governed action (e.g. an LLM call)."""
        try:
            cost = plain_cost("cost_usd", cost_usd)
        except TypeError as err:  # a ValueError, as it always was for a cost that is not a number
            raise ValueError(str(err)) from None
        self._add(self._key(context or ActionContext()), cost)

    def _add(self, key: str, cost_usd: float) -> None:
        with self._lock:
            self._spent[key] = self._spent.get(key, Decimal(0)) + Decimal(repr(cost_usd))

    def end_rollout(self, rollout_id: str) -> None:
        if self.scope == "rollout":
            with self._lock:
                self._spent.pop(rollout_id, None)
                for held in [h for h in self._reserved if h[0] == rollout_id]:
                    del self._reserved[held]

    def reset(self) -> None:
        with self._lock:
            self._spent.clear()
            self._reserved.clear()
