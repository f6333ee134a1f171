"""What a kernel remembers between checks: per tool name, its plan; per call content, the pure
policies' answers and the frozen action of that content.

A pure policy (:attr:`.policies.Policy.pure`) answers from the frozen action alone, so a later call
of the same content is given the remembered answer, and the very action that was judged: it holds
only immutable plain values, so nothing can change it and what was judged is still what runs.
Each check still gets its own decision, id and audit record.

The content of a call is its key (:func:`content_key`): the tool name, the cost, and every
argument's name and value, when all of them are plain ``str`` (one type: equal means the same);
anything else is not remembered. Everything is forgotten when the configuration of any pure policy,
or a kernel's list of policies, changes (:data:`.policies.CONFIGURATION_CHANGES`).
"""

from __future__ import annotations

import math
import threading
from typing import Any, Dict, NamedTuple, Optional, Tuple

from .actions import NO_COST, Action
from .policies import CONFIGURATION_CHANGES, Policy
from .violations import PolicyViolation

__all__ = [
    "MAX_REMEMBERED_ACTIONS",
    "MAX_PLANNED_TOOL_NAMES",
    "NOTHING_FOUND",
    "Memo",
    "Plan",
    "action_of_key",
    "content_key",
    "is_pure",
]

#: Call contents whose answers a kernel remembers (the most recently remembered ones: the earliest
#: is forgotten first, and a hit does not reorder them, which would cost a second look-up on every
#: repeated check).
MAX_REMEMBERED_ACTIONS = 4096
#: Tool names whose plan a kernel keeps (agents can invent tool names).
MAX_PLANNED_TOOL_NAMES = 1024
#: The remembered answers of pure policies that found nothing.
NOTHING_FOUND: Tuple[Tuple[PolicyViolation, ...], ...] = ()


def is_pure(policy: Policy) -> bool:
    """Whether a kernel may remember ``policy``'s answers (:attr:`.policies.Policy.pure`): its own
    class declares it pure, it still says so, and no method the kernel calls was replaced on it."""
    cls = type(policy)
    return (
        cls.__dict__.get("pure") is True
        and policy.pure is True
        and not any(name in vars(policy) for name in ("evaluate", "rewrite", "on_allowed", "on_blocked"))
        and cls.on_allowed is Policy.on_allowed
        and cls.on_blocked is Policy.on_blocked
    )


class Plan(NamedTuple):
    """What the kernel asks about one tool name, worked out once per name."""

    policies: Tuple[Policy, ...]
    notes: Tuple[str, ...]
    note_failures: Tuple[Tuple[Policy, str], ...]
    #: Per policy, whether its answers are remembered.
    pure: Tuple[bool, ...]
    #: Whether no answer is (then nothing is remembered).
    all_impure: bool
    #: Whether a remembered call in which nothing was found asks no policy at all (every policy
    #: pure, and no ``note_for`` failure to add).
    asks_none_when_nothing_found: bool
    #: (index, policy) of the policies whose ``on_allowed`` / ``on_blocked`` is their own (the
    #: base class's does nothing, so it is not called).
    committers: Tuple[Tuple[int, Policy], ...]
    releasers: Tuple[Tuple[int, Policy], ...]


#: A remembered call: its frozen action, the plan of its tool, and per pure policy its answer.
Entry = Tuple[Action, Plan, Tuple[Tuple[PolicyViolation, ...], ...]]


def content_key(action: Any, args: Any, cost_usd: Any) -> Optional[Tuple[Any, ...]]:
    """The key of a call's content, or None when it is not remembered (see the module doc).

    ``action`` and ``args`` are as ``GovernanceKernel.check`` takes them: an exact
    :class:`.actions.Action`, or a tool name and a ``dict``. The caller's mapping is read once, here
    (a name's type checked before it is looked up, so no key's own ``__hash__`` runs); the kernel
    builds the call's snapshot from the key, so it is what the key says. The cost is a plain float
    in an action's range, not -0.0 (equal to 0.0, it would be handed an action of the other sign).

    >>> content_key("database_query", {"query": "SELECT 1"}, NO_COST)
    ('database_query', 0.0, 'query', 'SELECT 1')
    >>> content_key("database_query", {"query": "SELECT 1", "limit": 10}, NO_COST) is None
    True
    """
    if type(action) is str:
        if type(args) is not dict:
            return None
        tool_name, arguments, cost = action, args, cost_usd
    elif type(action) is Action:  # a subclass's own properties could tell the key one thing and the policies another
        tool_name, arguments, cost = action.tool_name, action.args, action.cost_usd
    else:
        return None
    if cost is not NO_COST and not (
        type(cost) is float and 0.0 <= cost < math.inf and (cost != 0.0 or math.copysign(1.0, cost) > 0)
    ):
        return None
    try:
        if len(arguments) == 1:
            (name,) = arguments
            value = arguments[name] if type(name) is str else None
            return (tool_name, cost, name, value) if type(value) is str else None
        items = tuple(arguments.items())
    except (ValueError, RuntimeError, KeyError):  # the caller's dict changed while it was read
        return None
    for name, value in items:
        if type(name) is not str or type(value) is not str:
            return None
    return (tool_name, cost, items)


def action_of_key(key: Tuple[Any, ...]) -> Action:
    """The frozen action of a call's content (:func:`content_key`)."""
    if len(key) == 4:
        return Action(key[0], {key[2]: key[3]}, key[1])
    return Action(key[0], dict(key[2]), key[1])


class Memo:
    """A kernel's plans per tool name and remembered calls per content (see the module doc).

    The kernel reads :attr:`plans` and :attr:`calls` directly (plain dicts: a look-up of either
    takes no lock); everything that changes them takes :attr:`lock`.
    """

    def __init__(self) -> None:
        self.plans: Dict[str, Plan] = {}
        #: Insertion order is the order of forgetting.
        self.calls: Dict[Tuple[Any, ...], Entry] = {}
        self.lock = threading.Lock()
        #: The configuration (:data:`.policies.CONFIGURATION_CHANGES`) everything here was worked out under.
        self.configuration = CONFIGURATION_CHANGES[0]

    def __len__(self) -> int:
        return len(self.calls)

    def keep_plan(self, tool_name: str, plan: Plan, configuration: int) -> None:
        """Keep ``plan``, worked out under ``configuration``, unless that has changed since (then it
        may be stale) or the plans are full."""
        with self.lock:
            if configuration == CONFIGURATION_CHANGES[0] == self.configuration and (
                len(self.plans) < MAX_PLANNED_TOOL_NAMES
            ):
                self.plans[tool_name] = plan

    def remember(
        self,
        key: Tuple[Any, ...],
        action: Action,
        plan: Plan,
        answers: Tuple[Tuple[PolicyViolation, ...], ...],
        configuration: int,
    ) -> None:
        """Keep the pure policies' ``answers`` about ``action`` (of content ``key``), found under
        ``configuration``, with the action itself and its plan."""
        if not any(answers):
            answers = NOTHING_FOUND
        with self.lock:
            if configuration != CONFIGURATION_CHANGES[0]:
                return  # found under a configuration that has changed since: not an answer to keep
            if self.configuration != configuration:
                self._forget()
            self.calls[key] = (action, plan, answers)
            while len(self.calls) > MAX_REMEMBERED_ACTIONS:
                del self.calls[next(iter(self.calls))]  # the earliest remembered

    def forget(self) -> None:
        """Forget everything: a pure policy's configuration, or a kernel's list of policies, changed.
        The plans go too: they say which policies are pure (a policy set ``pure = False`` must be
        asked every time), which apply to each tool and what they note about it (a policy set
        ``detect = True`` applies to more tools)."""
        with self.lock:
            self._forget()

    def _forget(self) -> None:
        self.plans = {}
        self.calls = {}
        self.configuration = CONFIGURATION_CHANGES[0]
