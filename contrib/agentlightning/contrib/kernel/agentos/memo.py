"""What a kernel remembers between checks: per tool name, its plan; per call content, the pure
policies' answers and the frozen action of that content.

A pure policy (:attr:`.policies.Policy.pure`) answers from the frozen action alone, so a later call
of the same content is given the remembered answer, and the very action that was judged: it holds
only immutable plain values, so nothing can change it and what was judged is still what runs.
Each check still gets its own decision, id and audit record.

The content of a call is its key (:func:`.actions.content_key`, worked out once per
:class:`.actions.Action`): the tool name, the cost, and every argument's name and value, when all
of them are plain ``str`` (one type: equal means the same); anything else is not remembered.
Everything is forgotten when the configuration of any pure policy, or a kernel's list of
policies, changes (:data:`.policies.CONFIGURATION_CHANGES`).
"""

from __future__ import annotations

import threading
from typing import Any, Dict, Tuple

from .actions import Action
from .policies import CONFIGURATION_CHANGES, Policy
from .violations import PolicyViolation

__all__ = [
    "MAX_REMEMBERED_ACTIONS",
    "MAX_PLANNED_TOOL_NAMES",
    "NOTHING_FOUND",
    "Memo",
    "Plan",
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


class Plan:
    """What the kernel asks about one tool name, worked out once per name (slots: the check reads
    them on every call)."""

    __slots__ = (
        "policies",
        "notes",
        "note_failures",
        "pure",
        "all_impure",
        "asks_none_when_nothing_found",
        "committers",
        "releasers",
    )

    def __init__(
        self,
        policies: Tuple[Policy, ...],
        notes: Tuple[str, ...],
        note_failures: Tuple[Tuple[Policy, str], ...],
        pure: Tuple[bool, ...],
        committers: Tuple[Tuple[int, Policy], ...],
        releasers: Tuple[Tuple[int, Policy], ...],
    ) -> None:
        self.policies = policies
        self.notes = notes
        #: The policies whose ``note_for`` failed, with what went wrong: each blocks the action.
        self.note_failures = note_failures
        #: Per policy, whether its answers are remembered.
        self.pure = pure
        #: Whether no answer is (then nothing is remembered).
        self.all_impure = not any(pure)
        #: Whether a remembered call in which nothing was found asks no policy at all (every policy
        #: pure, and no ``note_for`` failure to add).
        self.asks_none_when_nothing_found = all(pure) and not note_failures
        #: (index, policy) of the policies whose ``on_allowed`` / ``on_blocked`` is their own (the
        #: base class's does nothing, so it is not called).
        self.committers = committers
        self.releasers = releasers


#: A remembered call: its frozen action, the plan of its tool, and per pure policy its answer.
Entry = Tuple[Action, Plan, Tuple[Tuple[PolicyViolation, ...], ...]]


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
