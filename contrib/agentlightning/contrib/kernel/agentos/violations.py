"""Severity, violation types and :class:`PolicyViolation`, whose fields declare how they are recorded.

Sign convention (used everywhere in this plugin): a penalty lives in *reward space*, so it is
zero or negative. ``PolicyViolation(severity="critical").penalty == -100.0``; summing the
penalties of a rollout and adding them to the task reward gives the governed reward.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from datetime import datetime, timezone
from enum import Enum
from types import MappingProxyType
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Type, Union

from .semconv import (
    AGENT_OS_POLICY_NAME,
    AGENT_OS_SEVERITY,
    AGENT_OS_TOTAL_PENALTY,
    AGENTOS_ACTION_BLOCKED,
    AGENTOS_DESCRIPTION,
    AGENTOS_PENALTY,
    AGENTOS_POLICY_NAME,
    AGENTOS_SEVERITY,
    AGENTOS_VIOLATION_TYPE,
    MAX_DESCRIPTION_CHARS,
)

__all__ = [
    "Severity",
    "ViolationType",
    "PolicyViolation",
    "RecordedField",
    "VIOLATION_FIELDS",
    "recorded",
    "any_value",
    "one_of",
    "missing_fields",
    "distinct_names",
    "worst_severity",
    "total",
    "SeverityTable",
    "DEFAULT_SEVERITY_PENALTIES",
    "DEFAULT_SEVERITY_COSTS",
    "GovernanceConfigError",
    "penalty_table",
    "penalty_of",
    "constraint_cost",
    "finite_number",
    "penalty_number",
]


class GovernanceConfigError(ValueError):
    """A policy, kernel or violation was configured with an invalid value."""


def _parse_member(enum: Type[Any], value: Any, field_name: str) -> Any:
    """``value`` as a member of the str-valued ``enum``: a member, or its value in any case and
    spacing; anything else is a clear error naming ``field_name`` and the valid values."""
    if isinstance(value, enum):
        return value
    if not isinstance(value, str):
        raise TypeError(f"{field_name} must be a str or {enum.__name__}, got {type(value).__name__}: {value!r}")
    try:
        return enum(value.strip().lower())
    except ValueError:
        valid = ", ".join(member.value for member in enum)
        raise GovernanceConfigError(f"unknown {field_name} {value!r}; use one of: {valid}") from None


class Severity(str, Enum):
    """How bad a violation is. Compares equal to its lowercase name.

    >>> Severity.parse("HIGH") is Severity.HIGH
    True
    >>> Severity.CRITICAL == "critical"
    True
    >>> Severity.CRITICAL.rank > Severity.LOW.rank
    True
    """

    CRITICAL = "critical"
    HIGH = "high"
    MEDIUM = "medium"
    LOW = "low"

    @property
    def rank(self) -> int:
        """Orders severities: low=1 ... critical=4."""
        return _SEVERITY_RANK[self]

    @classmethod
    def parse(cls, value: Union["Severity", str]) -> "Severity":
        """Accept a :class:`Severity` or its name in any case; anything else is a clear error."""
        return _parse_member(cls, value, "severity")

    def __str__(self) -> str:
        return self.value

    # Hashed as the str it equals (``Severity.CRITICAL == "critical"``), so a table keyed by either
    # finds it; Enum's own hash (of the member's name) would not, and runs as Python code.
    __hash__ = str.__hash__


_SEVERITY_RANK = {Severity.LOW: 1, Severity.MEDIUM: 2, Severity.HIGH: 3, Severity.CRITICAL: 4}


def finite_number(name: str, value: Any) -> float:
    """``value`` as a float; a non-number (bools included) or a NaN/infinity is an error naming ``name``.

    >>> finite_number("RewardConfig.clean_bonus", 5)
    5.0
    >>> finite_number("RewardConfig.clean_bonus", "5")
    Traceback (most recent call last):
    ...
    TypeError: RewardConfig.clean_bonus must be a number, got str: '5'
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a number, got {type(value).__name__}: {value!r}")
    number = finite_float(value)
    if number is None:
        raise GovernanceConfigError(f"{name} must be finite, got {_shown_number(value)}")
    return number


def finite_float(value: Any) -> Optional[float]:
    """``value`` as a plain finite float, or None: not a number (a ``bool`` is not one), NaN,
    infinite, or an ``int`` too large for a float (``float()`` of which raises ``OverflowError``).
    A subclass is read as the value it holds, without calling its own methods.

    >>> finite_float(3), finite_float(10**400), finite_float(float("nan")), finite_float(True)
    (3.0, None, None, None)
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        number = float.__float__(value) if isinstance(value, float) else int.__float__(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None


def _shown_number(value: Any) -> str:
    """``value`` for an error message: an ``int`` too large for a float by its size (its digits
    could be too many even to print), anything else as its ``repr``."""
    if isinstance(value, int) and not isinstance(value, bool) and finite_float(value) is None:
        return f"an int of {int.bit_length(value)} bits (too large for a float)"
    return repr(float.__float__(value)) if isinstance(value, float) else repr(value)


def penalty_number(name: str, value: Any) -> float:
    """``value`` as a penalty: a finite number <= 0, since a penalty is negative reward; a positive
    one is an error naming ``name`` that suggests its negation.

    >>> penalty_number("RewardConfig.low_penalty", -1)
    -1.0
    """
    value = finite_number(name, value)
    if value > 0:
        raise GovernanceConfigError(
            f"{name} must be <= 0 (a penalty is negative reward), got {value}; did you mean {-value}?"
        )
    return value


class SeverityTable(Mapping[Severity, float]):
    """One number per severity, read-only: the one type of every per-severity table of the package.

    A table is a penalty table (reward space, every entry <= 0), a cost table (constraint cost,
    every entry >= 0) or a scale (a multiplier per severity, every entry >= 0); ``kind`` says
    which and is checked. The package's tables are presets of this type, named in
    :meth:`presets`: ``"penalties"`` (:data:`DEFAULT_SEVERITY_PENALTIES`, ``RewardConfig``'s
    defaults), ``"costs"`` (:data:`DEFAULT_SEVERITY_COSTS`) and ``"environment_scale"`` (the
    reference environment's multiplier of ``violation_penalty``). Presets with the same numbers
    stay separate objects, so changing what one means never changes another.

    >>> table = SeverityTable.preset("environment_scale")
    >>> table["critical"], table[Severity.LOW], table.kind
    (10.0, 1.0, 'scale')
    >>> table.scaled(-10.0)["high"]
    -50.0
    >>> SeverityTable("cost", critical=1.0, high=0.5, medium=0.1, low=0.0) == {"critical": 1.0, "high": 0.5,
    ...                                                                       "medium": 0.1, "low": 0.0}
    True
    >>> try:
    ...     SeverityTable("penalty", critical=100.0, high=-50.0, medium=-10.0, low=-1.0)
    ... except GovernanceConfigError as error:
    ...     print(error)
    a penalty table's critical entry must be <= 0 (a penalty is negative reward), got 100.0
    """

    KINDS = ("penalty", "cost", "scale")

    __slots__ = ("kind", "_values")

    def __init__(self, kind: str, *, critical: float, high: float, medium: float, low: float) -> None:
        if kind not in self.KINDS:
            raise GovernanceConfigError(f"SeverityTable kind must be one of {self.KINDS}, got {kind!r}")
        values: Dict[Severity, float] = {}
        for severity, value in zip(Severity, (critical, high, medium, low)):
            number = finite_number(f"SeverityTable {severity.value}", value)
            if kind == "penalty" and number > 0:
                raise GovernanceConfigError(
                    f"a penalty table's {severity.value} entry must be <= 0 (a penalty is negative reward), "
                    f"got {number}"
                )
            if kind != "penalty" and number < 0:
                raise GovernanceConfigError(f"a {kind} table's {severity.value} entry must be >= 0, got {number}")
            values[severity] = number
        self.kind = kind
        self._values = values  # never handed out: the table is read-only

    def __reduce__(self) -> Any:
        return (_severity_table, (self.kind, {s.value: v for s, v in self._values.items()}))

    @classmethod
    def presets(cls) -> Mapping[str, "SeverityTable"]:
        """The package's tables, by name."""
        return _SEVERITY_TABLE_PRESETS

    @classmethod
    def preset(cls, name: str) -> "SeverityTable":
        """The preset named ``name`` (see :meth:`presets`)."""
        try:
            return _SEVERITY_TABLE_PRESETS[name]
        except KeyError:
            raise GovernanceConfigError(
                f"unknown SeverityTable preset {name!r}; presets: {', '.join(_SEVERITY_TABLE_PRESETS)}"
            ) from None

    def scaled(self, factor: float, *, kind: Optional[str] = None) -> "SeverityTable":
        """Every entry times ``factor``, as a table of ``kind`` (default: a penalty table when the
        factor is negative, as a scale times ``violation_penalty`` is; else this table's kind)."""
        factor = finite_number("SeverityTable.scaled(factor)", factor)
        kind = kind or ("penalty" if factor < 0 else self.kind)
        return SeverityTable(kind, **{s.value: v * factor for s, v in self._values.items()})

    def price(self, violation: "PolicyViolation") -> float:
        """The penalty of ``violation`` by this penalty table: the explicit penalty its policy set,
        else this table's entry for its severity. The one rule that prices a violation: the kernel
        writes it on every violation it decides (:meth:`stamp`), and the reward, the environment
        and the 1.0 gateway's hooks ask the table they hold, which must be their kernel's.

        A violation has one price: one a kernel decided (``priced_by_kernel``) at another price
        than this table's is refused, naming both and the fix, never priced a second time.

        >>> table = SeverityTable("penalty", critical=-200.0, high=-80.0, medium=-15.0, low=-2.0)
        >>> table.price(PolicyViolation("blocked", "SQLPolicy", "DROP denied", "critical"))
        -200.0
        >>> table.price(PolicyViolation("warned", "Audit", "slow query", "low", penalty=-0.5))
        -0.5
        """
        if self.kind != "penalty":
            raise GovernanceConfigError(
                f"only a penalty table prices a violation; this is a {self.kind} table "
                "(use RewardConfig(...).severity_penalties or SeverityTable.preset('penalties'))"
            )
        try:  # read by its fields: a doctest run imports this module a second time, under another name
            explicit, penalty, severity = violation.penalty_is_explicit, violation.penalty, violation.severity
            priced_by_kernel = violation.priced_by_kernel
        except AttributeError:
            got = f"{type(violation).__name__}: {violation!r}"
            raise TypeError(f"expected PolicyViolation objects, got {got}") from None
        if explicit:
            return float(penalty)
        price = self[severity]
        if priced_by_kernel and penalty != price:
            raise GovernanceConfigError(
                f"a {Severity.parse(severity).value} violation of {violation.policy_name} was priced {penalty} by the "
                f"kernel that decided it, and this table says {price}: a violation has one price. Give the kernel "
                f"this table, GovernanceKernel(penalties=config.severity_penalties, ...), or price with the "
                f"kernel's (kernel.penalties); this table: {self!r}"
            )
        return price

    def stamp(self, violations: Iterable["PolicyViolation"]) -> None:
        """Write this table's price on each of ``violations`` as the kernel's (``priced_by_kernel``):
        an explicit penalty stays, else ``penalty`` becomes this table's entry for the severity. The
        kernel stamps the violations of every decision, so the violation, its decision and its
        audit record say the kernel's price."""
        prices = self._values
        for violation in violations:
            if not violation.penalty_is_explicit:
                violation.penalty = prices[violation.severity]
            violation.priced_by_kernel = True

    def __getitem__(self, severity: Union[Severity, str]) -> float:
        return self._values[Severity.parse(severity)]

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __repr__(self) -> str:
        entries = ", ".join(f"{s.value}={v!r}" for s, v in self._values.items())
        return f"SeverityTable({self.kind!r}, {entries})"


def _severity_table(kind: str, values: Mapping[str, float]) -> SeverityTable:
    return SeverityTable(kind, **values)


def penalty_table(penalties: Any, name: str = "penalties") -> SeverityTable:
    """``penalties`` if it is a penalty :class:`SeverityTable`; anything else is an error naming
    ``name`` and how to build one.

    >>> try:
    ...     penalty_table({"critical": -200.0})
    ... except GovernanceConfigError as error:
    ...     print(error)  # doctest: +NORMALIZE_WHITESPACE
    penalties must be a penalty table, e.g. RewardConfig(critical_penalty=-200).severity_penalties or
    SeverityTable.preset('penalties'); got {'critical': -200.0}
    """
    if not isinstance(penalties, SeverityTable) or penalties.kind != "penalty":
        raise GovernanceConfigError(
            f"{name} must be a penalty table, e.g. RewardConfig(critical_penalty=-200).severity_penalties or "
            f"SeverityTable.preset('penalties'); got {penalties!r}"
        )
    return penalties


def penalty_of(violation: "PolicyViolation", penalties: Optional[SeverityTable] = None) -> float:
    """The penalty of ``violation``: by ``penalties`` when given (:meth:`SeverityTable.price`, which
    refuses a table other than the one of the kernel that priced it), else the price it carries.

    >>> drop = PolicyViolation("blocked", "SQLPolicy", "DROP denied", "critical")
    >>> penalty_of(drop), penalty_of(drop, SeverityTable("penalty", critical=-9.0, high=0, medium=0, low=0))
    (-100.0, -9.0)
    """
    return float(violation.penalty) if penalties is None else penalties.price(violation)  # type: ignore[arg-type]


#: Default penalty per violation, in reward space (negative), by severity.
DEFAULT_SEVERITY_PENALTIES: SeverityTable = SeverityTable(
    "penalty", critical=-100.0, high=-50.0, medium=-10.0, low=-1.0
)


#: Default constraint cost per violation, by severity: the safe-RL signal kept separate from the
#: reward (positive, as safety-gymnasium's ``info["cost"]``). The ratios follow the reference
#: environment's severity scaling (critical x10, high x5, medium and low x1).
DEFAULT_SEVERITY_COSTS: SeverityTable = SeverityTable("cost", critical=10.0, high=5.0, medium=1.0, low=1.0)

_SEVERITY_TABLE_PRESETS: Mapping[str, SeverityTable] = MappingProxyType(
    {
        "penalties": DEFAULT_SEVERITY_PENALTIES,
        "costs": DEFAULT_SEVERITY_COSTS,
        # The reference environment's scaling of ``violation_penalty``: critical x10, high x5, medium and low x1.
        "environment_scale": SeverityTable("scale", critical=10.0, high=5.0, medium=1.0, low=1.0),
    }
)


class ViolationType(str, Enum):
    """What the kernel did about a violation."""

    BLOCKED = "blocked"  #: the action did not execute
    MODIFIED = "modified"  #: the action executed in a rewritten form
    WARNED = "warned"  #: the action executed; the violation is recorded and penalised
    SIGNAL_SENT = "signal_sent"  #: a kernel signal was dispatched to the agent

    @classmethod
    def parse(cls, value: Union["ViolationType", str]) -> "ViolationType":
        """Accept a :class:`ViolationType` or its value in any case; anything else is a clear error."""
        return _parse_member(cls, value, "violation_type")

    def __str__(self) -> str:
        return self.value


_RECORDED = "agentos.recorded"  # the key of a PolicyViolation field's declaration in its metadata


def _same(value: Any) -> Any:
    return value


def any_value(value: Any) -> Optional[str]:
    """A ``check`` that accepts every value (a :class:`RecordedField`'s default)."""
    return None


@dataclass(frozen=True)
class RecordedField:
    """How one field of :class:`PolicyViolation` is written, checked and shown outside Python.

    Declared once, as the field's metadata (``field(metadata=recorded(...))``). The audit record
    (:mod:`.audit.record` builds, validates and reads it), the violation span (``agl03.spans``) and
    the audit adapter's span all follow the declarations, in field order. In the record, a field
    is the key of its name with the value :meth:`PolicyViolation.to_dict` gives it (an enum's
    value, a time in ISO 8601, anything else as it is).

    * ``required``: a recorded violation must have the key (declare a new field ``required=False``:
      records written before it existed must still read);
    * ``check``: what is wrong with a recorded value (``"must be a string"``), or None if nothing;
    * ``attribute``: the violation span's ``agentos.*`` attribute (None: not in the span), with
      the value ``attribute_value`` makes of the recorded one;
    * ``summary``: the audit span's ``agent_os.*`` attribute summing up a record's violations
      (None: none), with the value ``summarize`` makes of their recorded values;
    * ``read``: the constructor argument from a recorded violation (None: the field's default);
      without it, the recorded value itself.
    """

    required: bool = True
    check: Callable[[Any], Optional[str]] = any_value
    attribute: Optional[str] = None
    attribute_value: Callable[[Any], Any] = _same
    summary: Optional[str] = None
    summarize: Optional[Callable[[List[Any]], Any]] = None
    read: Optional[Callable[[Mapping[str, Any]], Any]] = None

    def __post_init__(self) -> None:
        if (self.summary is None) != (self.summarize is None):
            raise TypeError("declare a summary attribute and its summarize function together, or neither")


def recorded(**declaration: Any) -> Dict[str, RecordedField]:
    """The metadata declaring a :class:`PolicyViolation` field (see :class:`RecordedField`)."""
    return {_RECORDED: RecordedField(**declaration)}


def _non_empty_string(value: Any) -> Optional[str]:
    return None if isinstance(value, str) and value else f"must be a non-empty string, got {value!r}"


def _string(value: Any) -> Optional[str]:
    return None if isinstance(value, str) else "must be a string"


def _boolean(value: Any) -> Optional[str]:
    return None if isinstance(value, bool) else f"must be true or false, got {value!r}"


def _finite(value: Any) -> Optional[str]:
    if finite_float(value) is None:
        return f"must be a finite number, got {_shown_number(value)}"
    return None


def one_of(kind: Type[Enum]) -> Callable[[Any], Optional[str]]:
    """A ``check`` accepting the values of the enum ``kind`` as recorded, and nothing else.

    >>> one_of(Severity)("HIGH")
    "must be one of ['critical', 'high', 'medium', 'low'], got 'HIGH'"
    """
    values = [member.value for member in kind]

    def problem(value: Any) -> Optional[str]:
        return None if value in values else f"must be one of {values}, got {value!r}"

    return problem


def distinct_names(names: Iterable[str]) -> str:
    """Names in order, without repeats, comma-separated.

    >>> distinct_names(["SQLPolicy", "CostControlPolicy", "SQLPolicy"])
    'SQLPolicy,CostControlPolicy'
    """
    return ",".join(dict.fromkeys(names))


def worst_severity(severities: Iterable[str]) -> str:
    """The worst of recorded severities, ``""`` for none.

    >>> worst_severity(["low", "critical", "medium"]), worst_severity([])
    ('critical', '')
    """
    return max(severities, key=lambda name: Severity(name).rank, default="")


def total(values: Iterable[float]) -> float:
    """The sum of recorded penalties, as a float (``0.0`` for none)."""
    return float(sum(values))


def _description_attribute(description: str) -> str:
    return description[:MAX_DESCRIPTION_CHARS]  # the full text is in the audit record


def _read_time(record: Mapping[str, Any]) -> Optional[datetime]:
    value = record.get("timestamp")
    return datetime.fromisoformat(value) if isinstance(value, str) else None


def _read_penalty(record: Mapping[str, Any]) -> Optional[float]:
    # The explicit penalty is the constructor's; a kernel's price is set after it (from_dict), and
    # a penalty that followed from the severity alone is left to follow from it again.
    return record.get("penalty") if record.get("penalty_is_explicit") else None


def _now() -> datetime:
    return datetime.now(timezone.utc)


@dataclass
class PolicyViolation:
    """One policy finding about one action.

    A violation carries its ``severity`` and, when its policy set one, an explicit ``penalty``
    (flagged in ``penalty_is_explicit``). What it costs is the business of a penalty table:
    :meth:`SeverityTable.price` (the explicit penalty, else the table's entry for the severity), the
    one rule every room prices with. Without an explicit one, ``penalty`` holds the price by the
    default table (:data:`DEFAULT_SEVERITY_PENALTIES`) until a kernel decides the violation: the
    kernel then writes its own table's price (``GovernanceKernel(penalties=...)``) and sets
    ``priced_by_kernel``, so the violation, its decision and its audit record say one price, and
    a table that disagrees with it is refused rather than heard as a second one.
    ``action_blocked`` defaults to ``violation_type == BLOCKED``.

    Each field's metadata declares how it is recorded and shown in spans (:class:`RecordedField`):
    adding a field is its line here and, if a span shows it, its attribute name in :mod:`.semconv`.

    >>> v = PolicyViolation("blocked", "SQLPolicy", "DROP statement denied", "critical")
    >>> (v.penalty, v.action_blocked, v.penalty_is_explicit)
    (-100.0, True, False)
    >>> PolicyViolation("warned", "Audit", "slow query", "low", penalty=-0.5).penalty
    -0.5
    """

    violation_type: ViolationType = field(
        metadata=recorded(check=one_of(ViolationType), attribute=AGENTOS_VIOLATION_TYPE)
    )
    policy_name: str = field(
        metadata=recorded(
            check=_non_empty_string,
            attribute=AGENTOS_POLICY_NAME,
            summary=AGENT_OS_POLICY_NAME,
            summarize=distinct_names,
        )
    )
    description: str = field(
        metadata=recorded(check=_string, attribute=AGENTOS_DESCRIPTION, attribute_value=_description_attribute)
    )
    severity: Severity = field(
        default=Severity.MEDIUM,
        metadata=recorded(
            check=one_of(Severity), attribute=AGENTOS_SEVERITY, summary=AGENT_OS_SEVERITY, summarize=worst_severity
        ),
    )
    timestamp: datetime = field(default_factory=_now, metadata=recorded(required=False, read=_read_time))
    action_blocked: Optional[bool] = field(
        default=None, metadata=recorded(check=_boolean, attribute=AGENTOS_ACTION_BLOCKED)
    )
    penalty: Optional[float] = field(
        default=None,
        metadata=recorded(
            check=_finite,
            attribute=AGENTOS_PENALTY,
            summary=AGENT_OS_TOTAL_PENALTY,
            summarize=total,
            read=_read_penalty,
        ),
    )
    penalty_is_explicit: bool = field(init=False, default=False, metadata=recorded(required=False))
    priced_by_kernel: bool = field(init=False, default=False, metadata=recorded(required=False, check=_boolean))

    def __post_init__(self) -> None:
        self.violation_type = ViolationType.parse(self.violation_type)
        if not isinstance(self.policy_name, str) or not self.policy_name:
            raise TypeError(f"policy_name must be a non-empty str, got {self.policy_name!r}")
        if not isinstance(self.description, str):
            raise TypeError(f"description must be a str, got {type(self.description).__name__}")
        self.severity = Severity.parse(self.severity)
        if not isinstance(self.timestamp, datetime):
            raise TypeError(f"timestamp must be a datetime, got {type(self.timestamp).__name__}")
        if self.timestamp.tzinfo is None:
            self.timestamp = self.timestamp.replace(tzinfo=timezone.utc)
        if self.action_blocked is None:
            self.action_blocked = self.violation_type is ViolationType.BLOCKED
        elif not isinstance(self.action_blocked, bool):
            raise TypeError(f"action_blocked must be a bool, got {type(self.action_blocked).__name__}")
        if self.penalty is None:
            self.penalty = DEFAULT_SEVERITY_PENALTIES[self.severity]
        else:
            self.penalty = penalty_number("penalty", self.penalty)
            self.penalty_is_explicit = True

    def to_dict(self) -> Dict[str, Any]:
        """The violation as the audit record holds it: JSON-ready, one key per field, in field order.

        >>> PolicyViolation("blocked", "P", "d", "high").to_dict()["severity"]
        'high'
        """
        return {name: _recorded_value(getattr(self, name)) for name in VIOLATION_FIELDS}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "PolicyViolation":
        """Inverse of :meth:`to_dict`.

        >>> v = PolicyViolation("blocked", "P", "d", "high")
        >>> PolicyViolation.from_dict(v.to_dict()) == v
        True
        """
        missing = missing_fields(data)
        if missing:
            raise ValueError(f"a recorded violation needs the field(s) {missing}; got {sorted(data)}")
        arguments = {}
        for item in fields(cls):
            if item.init:
                declared = VIOLATION_FIELDS[item.name]
                value = declared.read(data) if declared.read is not None else data.get(item.name)
                if value is not None:  # not recorded: the field's default
                    arguments[item.name] = value
        violation = cls(**arguments)
        if data.get("priced_by_kernel") is True:  # the price its kernel wrote, read as written
            if not violation.penalty_is_explicit:
                violation.penalty = penalty_number("penalty", data["penalty"])
            violation.priced_by_kernel = True
        return violation

    def span_attributes(self) -> Dict[str, Any]:
        """The ``agentos.*`` attributes the violation's span shows of it, in field order.

        >>> PolicyViolation("blocked", "SQLPolicy", "DROP denied", "critical").span_attributes()["agentos.severity"]
        'critical'
        """
        record = self.to_dict()
        return {
            declared.attribute: declared.attribute_value(record[name])
            for name, declared in VIOLATION_FIELDS.items()
            if declared.attribute is not None
        }


def _recorded_value(value: Any) -> Any:
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, datetime):
        return value.isoformat()
    return value


def _declarations(cls: type) -> Mapping[str, RecordedField]:
    declared = {}
    for item in fields(cls):
        if _RECORDED not in item.metadata:
            raise TypeError(
                f"{cls.__name__}.{item.name} does not say how it is recorded; "
                f"declare it with field(metadata=recorded(...)) (see RecordedField)"
            )
        declared[item.name] = item.metadata[_RECORDED]
    return MappingProxyType(declared)


#: The declaration of every :class:`PolicyViolation` field, in field order (the order of the record's keys).
VIOLATION_FIELDS: Mapping[str, RecordedField] = _declarations(PolicyViolation)


def missing_fields(record: Mapping[str, Any]) -> List[str]:
    """The required fields of a recorded violation that ``record`` lacks, in field order.

    >>> missing_fields({"violation_type": "blocked", "description": "d"})
    ['policy_name', 'severity', 'action_blocked', 'penalty']
    """
    return [name for name, declared in VIOLATION_FIELDS.items() if declared.required and name not in record]


#: :data:`DEFAULT_SEVERITY_COSTS` read once into a dict (the table is immutable): every rollout's
#: summary prices its violations, and a table read as a mapping parses each severity it is asked for.
_DEFAULT_COST_WEIGHTS: Dict[Severity, float] = dict(DEFAULT_SEVERITY_COSTS)


def constraint_cost(violations: Iterable["PolicyViolation"], weights: Optional[Mapping[Any, float]] = None) -> float:
    """The constraint cost of a set of violations: the sum of their severities' weights (>= 0).

    ``weights`` maps severities (or their names) to non-negative costs; missing severities use
    :data:`DEFAULT_SEVERITY_COSTS`. Safe-RL algorithms (Lagrangian PPO, CPO) constrain the
    expected cost directly instead of folding a hand-tuned penalty into the reward.

    >>> vs = [PolicyViolation("blocked", "SQLPolicy", "DROP", "critical"), PolicyViolation("warned", "P", "x", "low")]
    >>> constraint_cost(vs)
    11.0
    >>> constraint_cost(vs, weights={"critical": 1.0, "low": 0.0})
    1.0
    >>> constraint_cost([])
    0.0
    """
    table = _DEFAULT_COST_WEIGHTS.copy()
    for key, weight in (weights or {}).items():
        number = finite_float(weight)
        if number is None or number < 0:
            raise GovernanceConfigError(
                f"cost weight for {key!r} must be a finite number >= 0, got {_shown_number(weight)}"
            )
        table[Severity.parse(key)] = number
    total = 0.0
    for violation in violations:
        if not isinstance(violation, PolicyViolation):
            raise TypeError(f"expected PolicyViolation objects, got {type(violation).__name__}")
        total += table[violation.severity]
    return total
