"""What the kernel decides about: an :class:`Action` in an :class:`ActionContext`, and the
:class:`Decision` it returns."""

from __future__ import annotations

import contextlib
import contextvars
import math
import re
from dataclasses import dataclass, field, replace
from enum import Enum
from typing import Any, ClassVar, Dict, Iterator, Mapping, Optional, Tuple

from .arguments import ArgumentError, FrozenArgs, flat_snapshot, freeze_arguments, tool_key
from .violations import PolicyViolation

__all__ = [
    "Action",
    "ActionContext",
    "Verdict",
    "Decision",
    "current_context",
    "governance_context",
]

MAX_TOOL_NAME_CHARS = 256
#: Characters no tool name has and code or prose always has: whitespace, quotes, parentheses,
#: ``;``, ``,``, ``=`` and ``*``. ``kernel.check("DROP TABLE users")`` used to judge a tool
#: named ``DROP TABLE users`` with no arguments (allowed); such a name is refused, naming the
#: call that was meant. Names as frameworks write them (``run-sql``, ``mcp__db__query``,
#: ``db.query``, ``files/read``, ``tool:v2``) and look-alike letters stay names.
_NOT_IN_A_TOOL_NAME = re.compile(r"[\s'\"`();,=*]").search


def not_a_tool_name(tool_name: str) -> bool:
    """Whether ``tool_name`` (a plain ``str``) holds a character no tool name has
    (:data:`_NOT_IN_A_TOOL_NAME`); an identifier is a name without the search.

    >>> not_a_tool_name("database_query"), not_a_tool_name("mcp__db-query.v2"), not_a_tool_name("DROP TABLE users")
    (False, False, True)
    >>> not_a_tool_name(" DATABASE_QUERY ")
    False
    """
    # Spaces around a name are padding (policies compare names stripped), not a sign of code.
    return not tool_name.isidentifier() and _NOT_IN_A_TOOL_NAME(tool_name.strip()) is not None


def not_a_tool_name_error(tool_name: str) -> ValueError:
    """The error for a tool name that is code or prose, with the call that was meant."""
    shown = tool_name if len(tool_name) <= 80 else tool_name[:77] + "..."
    found = _NOT_IN_A_TOOL_NAME(tool_name.strip())
    return ValueError(
        f"{shown!r} is not a tool name (it has {found.group() if found else '?'!r}): the first argument of "
        f"kernel.check is the tool's name and its arguments go in a dict. For SQL write "
        f'kernel.check(Action.sql({shown!r})) or kernel.check("database_query", {{"query": {shown!r}}})'
    )


#: The arguments of an action built with none.
_NO_ARGUMENTS = FrozenArgs()
#: The cost of a call that names none (the default of :class:`Action`, :meth:`Action.sql` and
#: ``GovernanceKernel.check``), told by identity from a caller's own ``0.0`` or ``-0.0``, which
#: costs nothing to test.
NO_COST = 0.0
#: The tool :meth:`Action.sql` names unless told another.
_SQL_TOOL = "database_query"
#: The actions :meth:`Action.sql` shares, per text (of the default tool, at no cost): the most
#: recent ones, of texts short enough that the memory they hold stays bounded.
_SQL_ACTIONS: Dict[str, "Action"] = {}
_SHARED_SQL_ACTIONS = 1024
_SHARED_SQL_CHARS = 10_000


@dataclass(frozen=True, init=False)
class Action:
    """A tool call the agent wants to make: a tool name, its arguments and what it will cost.

    ``args`` is a frozen snapshot of the arguments (:func:`.arguments.freeze_arguments`): plain
    values, lists as tuples, mappings as :class:`.arguments.FrozenArgs`, a ``str`` subclass as
    the plain ``str`` it holds. What the policies judge is what the tool receives; an argument
    that cannot be snapshot (a generator, a connection) is an ``ArgumentError`` naming it.
    :meth:`of_call` builds the action of an agent's call instead, which the kernel refuses (and
    records) when its arguments cannot be snapshot.

    >>> a = Action("database_query", {"query": "SELECT 1", "params": [1, 2]})
    >>> a.tool_name, a.args["query"], a.args["params"], a.cost_usd
    ('database_query', 'SELECT 1', (1, 2), 0.0)
    >>> Action.sql("DROP TABLE users").args
    {'query': 'DROP TABLE users'}
    """

    tool_name: str
    args: Mapping[str, Any] = field(default_factory=dict)
    cost_usd: float = 0.0
    #: Why the kernel must refuse this action without asking the policies (see :meth:`of_call`).
    refusal: Optional[str] = field(default=None, repr=False, compare=False)

    def __init__(
        self,
        tool_name: str,
        args: Mapping[str, Any] = _NO_ARGUMENTS,
        cost_usd: float = NO_COST,
        refusal: Optional[str] = None,
    ) -> None:
        # Every field is checked and snapshot here, then stored in the instance's dict at once (the
        # frozen dataclass's generated __init__ would set each one with object.__setattr__): every
        # call of an agent builds one Action.
        if type(tool_name) is not str and isinstance(tool_name, str):
            # A str subclass is read as the plain str it holds: its own strip, len, __eq__ or
            # __hash__ are never called (they could raise, or tell the checks one name and the tool another).
            tool_name = str.__str__(tool_name)
        if type(tool_name) is not str or not tool_name or tool_name.isspace():
            raise TypeError(f"Action.tool_name must be a non-empty str, got {tool_name!r}")
        if len(tool_name) > MAX_TOOL_NAME_CHARS:
            raise ValueError(f"Action.tool_name is {len(tool_name)} characters; the limit is {MAX_TOOL_NAME_CHARS}")
        if not tool_name.isidentifier() and not_a_tool_name(tool_name):  # an identifier is a name: no call
            raise not_a_tool_name_error(tool_name)
        # A snapshot of plain values, so that nothing (the caller's mapping, a mutable value, a
        # str subclass, a later policy) can change the decided action afterwards.
        frozen = flat_snapshot(args) if type(args) is dict or type(args) is FrozenArgs else None
        if frozen is None:
            if not isinstance(args, Mapping):
                raise TypeError(
                    f"Action.args must be a mapping of argument name to value, got {type(args).__name__}; "
                    f"pass e.g. {{'query': ...}}"
                )
            bad_keys = [k for k in args if not isinstance(k, str)]
            if bad_keys:
                raise TypeError(f"Action.args keys must be str, got {bad_keys[:3]!r}")
            frozen = freeze_arguments(args)
        if type(cost_usd) is not float or not 0.0 <= cost_usd < _INFINITY:
            cost_usd = plain_cost("Action.cost_usd", cost_usd)
        fields = self.__dict__
        fields["tool_name"] = tool_name
        fields["args"] = frozen
        fields["cost_usd"] = cost_usd
        fields["refusal"] = refusal
        # Worked out once, where the action is frozen: every check of it looks it up by its content.
        fields["_content_key"] = None if refusal is not None else content_key(tool_name, frozen, cost_usd)

    #: The key of this action's content in a kernel's memo (:func:`content_key`); None on an action
    #: built without ``__init__`` (a subclass's own), which is then not remembered.
    _content_key: ClassVar[Optional[Tuple[Any, ...]]] = None

    @property
    def tool_key(self) -> str:
        """The tool's name as policies compare it (:func:`.arguments.tool_key`): look-alike
        letters, invisible characters, case and separators folded."""
        return tool_key(self.tool_name)

    @classmethod
    def of_call(cls, tool_name: str, args: Mapping[str, Any], cost_usd: float = 0.0) -> "Action":
        """The action of an agent's call. When an argument cannot be snapshot, the action holds
        each argument that can and a note in place of each that cannot, and ``refusal`` says why:
        the kernel then blocks and records it without running any policy.

        >>> action = Action.of_call("database_query", {"query": "SELECT 1", "rows": iter([1])})
        >>> action.args["rows"], action.refusal.split(";")[0]
        ('<not snapshot: list_iterator>', "argument 'rows' is an iterator (list_iterator), which ...")
        """
        if type(args) is dict and type(cost_usd) is float:
            # The common call: flat plain values, read in one step (another thread may be changing
            # the caller's dict); anything else, or a field in error, is read and named below.
            flat = flat_snapshot(args)
            if flat is not None:
                try:
                    return cls(tool_name, flat, cost_usd)
                except (TypeError, ValueError):
                    pass
        try:
            plain_cost("cost_usd", cost_usd)
        except (TypeError, ValueError) as err:
            # A cost that is not one (negative, NaN, too large for a float, not a number) makes the
            # call unreadable like an argument that cannot be snapshot: refused, with a record.
            action = cls.of_call(tool_name, args)
            refusal = str(err) if action.refusal is None else f"{err}; {action.refusal}"
            return replace(action, refusal=refusal)
        # Read the caller's mapping once, into a dict of our own, before anything iterates it: a
        # dict's copy is one step no other thread can interleave with (iterating the caller's dict
        # while another thread resized it raised, and the check ended with no record); a mapping
        # that cannot even be read is refused and recorded like any argument that cannot be snapshot.
        # (A dict's copy can run its keys' own __eq__: a copy of a dict with deleted entries
        # inserts every key anew, comparing keys of equal hash.)
        if isinstance(args, Mapping):
            try:
                args = args.copy() if type(args) is dict else dict(args)
            except Exception as err:  # noqa: BLE001 - an unreadable action is refused, with a record
                return cls(
                    tool_name, {}, cost_usd, refusal=f"the arguments could not be read: {type(err).__name__}: {err}"
                )
        try:
            return cls(tool_name, args, cost_usd)
        except ArgumentError as err:
            if not isinstance(args, Mapping):
                raise
            kept = {}
            for name, value in args.items():
                try:
                    kept[str(name)] = freeze_arguments({name: value})[name]
                except (ArgumentError, TypeError):
                    kept[str(name)] = f"<not snapshot: {type(value).__name__}>"
            return cls(tool_name, kept, cost_usd, refusal=str(err))

    @classmethod
    def sql(cls, query: Any, *, tool_name: str = _SQL_TOOL, cost_usd: float = NO_COST) -> "Action":
        """An SQL action in the shape :class:`SQLPolicy` checks by default.

        Identical calls of plain text to the default tool share one action (it holds only immutable
        plain values, so nothing can change it), as identical checks do: an agent sends the same
        query over and over. Another tool name or a cost builds an action of its own.

        >>> Action.sql("SELECT 1") is Action.sql("SELECT 1"), Action.sql("SELECT 1") == Action.sql("SELECT 2")
        (True, False)
        """
        if cls is not Action or type(query) is not str or tool_name is not _SQL_TOOL or cost_usd is not NO_COST:
            return cls(tool_name, {"query": query}, cost_usd)
        shared = _SQL_ACTIONS.get(query)
        if shared is None:
            shared = cls(tool_name, {"query": query}, cost_usd)
            if len(query) <= _SHARED_SQL_CHARS:
                if len(_SQL_ACTIONS) >= _SHARED_SQL_ACTIONS:
                    try:
                        del _SQL_ACTIONS[next(iter(_SQL_ACTIONS))]  # the earliest
                    except (KeyError, RuntimeError, StopIteration):  # another thread changed it meanwhile
                        pass
                _SQL_ACTIONS[query] = shared
        return shared


def content_key(tool_name: str, arguments: Any, cost: Any) -> Optional[Tuple[Any, ...]]:
    """The key a kernel remembers a call by (see ``memo``): its tool name, its cost, and every
    argument's name and value in order, when all of them are plain ``str`` (one type: equal means
    the same); else None, and the call is not remembered. Every call, of one argument or many,
    is read by the one loop below. ``tool_name`` is a plain ``str`` already (both callers made sure:
    the kernel's check of a call by name, an action's own constructor).

    ``arguments`` is a ``dict`` (a caller's, read once, here) or an action's frozen ones. Each
    value is looked up by its name (an ``items()`` view would build a view, an iterator and a pair
    on every call), the name's type checked first, so no key's own ``__hash__`` runs and the key
    holds only what was read and checked. A key that is not a ``str`` ends the reading (None) when
    the loop reaches it; before that, the look-up of a name of the same hash can call its
    ``__eq__``, and whatever that does (raise, change the dict) also ends it: the general path
    then reads the call. The cost is a plain float in an action's range, not -0.0 (equal to 0.0,
    it would be handed an action of the other sign).

    >>> content_key("database_query", {"query": "SELECT 1", "database": "shop"}, NO_COST)
    ('database_query', 0.0, 'query', 'SELECT 1', 'database', 'shop')
    >>> content_key("database_query", {"query": "SELECT 1", "limit": 10}, NO_COST) is None
    True
    """
    if (
        (type(arguments) is not dict and type(arguments) is not FrozenArgs)
        or cost is not NO_COST
        and not (type(cost) is float and 0.0 <= cost < _INFINITY and (cost != 0.0 or math.copysign(1.0, cost) > 0))
    ):
        return None
    key = [tool_name, cost]
    try:
        for name in arguments:  # one pass over the caller's dict
            if type(name) is not str:
                return None
            value = arguments[name]
            if type(value) is not str:
                return None
            key.append(name)
            key.append(value)
    except Exception:  # noqa: BLE001 - the dict changed while it was read, or a non-str key's __eq__ raised
        return None
    return tuple(key)


def action_of_key(key: Tuple[Any, ...]) -> Action:
    """The frozen action of a call's content (:func:`content_key`): what the key read is what is judged."""
    return Action(key[0], dict(zip(key[2::2], key[3::2])), key[1])


def plain_cost(name: str, cost: Any) -> float:
    """``cost`` as the plain ``float`` an :class:`Action` holds: a number (not a ``bool``),
    finite and >= 0, read as the value it holds (a subclass's own methods are not called); else
    a ``TypeError`` or ``ValueError`` naming ``name`` (an ``int`` too large for a float too,
    never an ``OverflowError``).

    >>> plain_cost("cost_usd", 2), plain_cost("cost_usd", 0.5)
    (2.0, 0.5)
    >>> plain_cost("cost_usd", 10**400)
    Traceback (most recent call last):
    ...
    ValueError: cost_usd must be finite and >= 0, got an int of 1329 bits (too large for a float)
    """
    if isinstance(cost, bool) or not isinstance(cost, (int, float)):
        raise TypeError(f"{name} must be a number, got {type(cost).__name__}")
    if isinstance(cost, float):
        value = float.__float__(cost)
    else:
        try:
            value = int.__float__(cost)
        except OverflowError:
            raise ValueError(
                f"{name} must be finite and >= 0, got an int of {int.bit_length(cost)} bits (too large for a float)"
            ) from None
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"{name} must be finite and >= 0, got {value}")
    return value


_INFINITY = math.inf


@dataclass(frozen=True)
class ActionContext:
    """Who acts and inside which rollout. Per-rollout budgets and the audit trail key on it.

    >>> with governance_context(ActionContext(agent_id="a1", rollout_id="ro-1")):
    ...     current_context().rollout_id
    'ro-1'
    >>> current_context().rollout_id is None
    True
    """

    agent_id: str = "agent"
    rollout_id: Optional[str] = None
    attempt_id: Optional[str] = None

    def __post_init__(self) -> None:
        if not isinstance(self.agent_id, str) or not self.agent_id:
            raise TypeError(f"ActionContext.agent_id must be a non-empty str, got {self.agent_id!r}")
        for name in ("rollout_id", "attempt_id"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, str):
                raise TypeError(f"ActionContext.{name} must be a str or None, got {type(value).__name__}")


_DEFAULT_CONTEXT = ActionContext()
_current_context: contextvars.ContextVar[ActionContext] = contextvars.ContextVar(
    "agentos_action_context", default=_DEFAULT_CONTEXT
)


#: ``_current_context.get``, bound once: another module's ``_current_context.get()`` would bind the
#: method anew on every call (CPython compiles a method call on an imported name as an attribute read).
_context_in_force = _current_context.get


def current_context() -> ActionContext:
    """The context set by the innermost :func:`governance_context` (a default one outside)."""
    return _current_context.get()


@contextlib.contextmanager
def governance_context(context: Optional[ActionContext] = None, **fields: Any) -> Iterator[ActionContext]:
    """Set the :class:`ActionContext` for kernel checks in this task/thread.

    Contexts are :mod:`contextvars`, so concurrent asyncio rollouts never see each other's.

    >>> with governance_context(agent_id="worker-1", rollout_id="ro-7") as ctx:
    ...     ctx.agent_id
    'worker-1'
    """
    if context is None:
        context = replace(_current_context.get(), **fields) if fields else _current_context.get()
    elif fields:
        context = replace(context, **fields)
    token = _current_context.set(context)
    try:
        yield context
    finally:
        _current_context.reset(token)


class Verdict(str, Enum):
    """The kernel's overall answer for one action."""

    ALLOWED = "allowed"
    BLOCKED = "blocked"
    MODIFIED = "modified"
    WARNED = "warned"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class Decision:
    """The kernel's decision about one action.

    ``action`` is what may execute (a policy may have rewritten it; see ``original_action``).
    ``total_penalty`` is the sum of the violations' penalties (zero or negative), each the price
    the deciding kernel's penalty table (``GovernanceKernel(penalties=)``) wrote on it. ``notes`` are
    what the policies consulted say about the tool without finding a violation (a check skipped
    by configuration, :meth:`.policies.Policy.note_for`); they are recorded with the decision.
    """

    action: Action
    verdict: Verdict
    violations: Tuple[PolicyViolation, ...] = ()
    signals: Tuple[str, ...] = ()
    context: ActionContext = _DEFAULT_CONTEXT
    decision_id: str = ""
    original_action: Optional[Action] = None
    audit_id: Optional[str] = None
    elapsed_us: float = 0.0
    notes: Tuple[str, ...] = ()

    @property
    def allowed(self) -> bool:
        """True when the action may execute (allowed, warned or modified)."""
        return self.verdict is not Verdict.BLOCKED

    @property
    def blocked(self) -> bool:
        return self.verdict is Verdict.BLOCKED

    @property
    def total_penalty(self) -> float:
        return float(sum(v.penalty for v in self.violations))  # type: ignore[misc]

    @property
    def reason(self) -> str:
        """One line naming every violation, e.g. ``SQLPolicy[critical]: DROP statement denied``."""
        return "; ".join(f"{v.policy_name}[{v.severity.value}]: {v.description}" for v in self.violations)
