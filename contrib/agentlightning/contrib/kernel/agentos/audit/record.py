"""The audit record of one kernel decision: built, validated and read here, and nowhere else.

Every decision is one row of an Agent OS ``FlightRecorder`` (written by :class:`.trail.AuditTrail`).
The recorder hashes ``tool_args`` into its chain, so the row's ``tool_args`` holds the action's
arguments *and* the governance envelope, which makes verdict, policy and severity as
tamper-evident as the rest of the row::

    {"args": {...},
     "agentos": {"decision_id", "verdict", "rollout_id", "attempt_id", "violations": [...], "signals": [...],
                 "notes": [...] (only when a policy noted something, such as a skipped check),
                 "original_args" (only when a policy rewrote the action)}}

A violation in ``violations`` is :meth:`PolicyViolation.to_dict`: its keys, what each must hold
and how each appears in spans are declared once, on the fields of :class:`PolicyViolation`
(:data:`VIOLATION_FIELDS`), and this module follows them. Rows written by older versions read
the same: the format has not changed.

>>> import json
>>> from agentlightning.contrib.kernel.agentos import GovernanceKernel, SQLPolicy
>>> decision = GovernanceKernel([SQLPolicy(deny=["DROP"])]).check("database_query", {"query": "DROP TABLE t"})
>>> text = json.dumps(build_tool_args(serialize_args(decision.action.args), governance_envelope(decision)))
>>> contents = read_tool_args(text)
>>> contents.args, contents.envelope["verdict"], [v["severity"] for v in contents.envelope["violations"]]
({'query': 'DROP TABLE t'}, 'blocked', ['critical'])
>>> violation_summary(contents.envelope["violations"])
{'agent_os.policy_name': 'SQLPolicy', 'agent_os.severity': 'critical', 'agent_os.total_penalty': -100.0}
"""

from __future__ import annotations

import hashlib
import json
import threading
from json import encoder as json_encoder
from typing import Any, Callable, Dict, List, Mapping, NamedTuple, Optional, Sequence, Tuple

from ..actions import Decision, Verdict
from ..violations import VIOLATION_FIELDS, any_value, missing_fields, one_of

__all__ = [
    "RecordFormatError",
    "ToolArgs",
    "ENVELOPE_KEY",
    "ARGS_KEY",
    "DEFAULT_MAX_ARGS_CHARS",
    "serialize_args",
    "governance_envelope",
    "build_tool_args",
    "tool_args_text",
    "read_tool_args",
    "decision_from_record",
    "violation_summary",
]

#: The keys of ``tool_args``: the action's arguments and the governance envelope.
ARGS_KEY = "args"
ENVELOPE_KEY = "agentos"
_WHERE = f"tool_args.{ENVELOPE_KEY}"  # how error messages name the envelope
#: Arguments longer than this (as JSON) are recorded truncated, with the full text's SHA-256.
DEFAULT_MAX_ARGS_CHARS = 65_536


class RecordFormatError(ValueError):
    """A record's ``tool_args`` is not a governance envelope this package wrote; the message
    names the field and what is wrong with it."""


# ---------------------------------------------------------------------------------- building
def serialize_args(args: Mapping[str, Any], max_chars: int = DEFAULT_MAX_ARGS_CHARS) -> str:
    """The arguments as JSON text, taken now (the action may mutate them once it runs).

    Arguments that are not JSON are kept as their ``repr``; text longer than ``max_chars`` is
    replaced by its head, its length and the SHA-256 of the whole.

    >>> serialize_args({"query": "SELECT 1"})
    '{"query": "SELECT 1"}'
    >>> json.loads(serialize_args({"query": "x" * 100}, max_chars=10))["chars"]
    113
    """
    try:
        text = _encode_args(args)
    except Exception as err:  # noqa: BLE001 - whatever the agent passed, the decision is recorded
        return json.dumps({"__unserializable__": type(err).__name__, "repr": _safe_repr(args)[:max_chars]})
    if len(text) <= max_chars:
        return text
    return json.dumps(
        {
            "__truncated__": True,
            "chars": len(text),
            "sha256": hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest(),
            "head": text[:max_chars],
        }
    )


def _safe_repr(value: Any) -> str:
    try:
        return repr(value)
    except Exception as err:  # noqa: BLE001 - a hostile __repr__ must not break the audit
        return f"<unrepresentable {type(value).__name__}: {type(err).__name__}>"


def prebuilt_encoder(encoder: json.JSONEncoder) -> Callable[[Any], str]:
    """``encoder.encode``, with the C encoder it builds on every call built once per thread.

    ``JSONEncoder.encode`` makes a new C encoder object (and its dict of containers being encoded,
    which finds circular references) for every text; for a record's few short texts that is most
    of the encoding. The C encoder here is the one ``encode`` would build, with the same settings,
    so the text and every error are the same. One per thread: the dict of containers being encoded
    must not be shared by two threads encoding the same object (an action checked on two threads).
    An encoder whose encoding raised is dropped, as ``encode`` drops its own.
    """
    make = json_encoder.c_make_encoder
    if make is None or encoder.indent is not None or not encoder.ensure_ascii:
        return encoder.encode  # no C encoder (or settings it does not take): the general path
    local = threading.local()

    def build() -> Callable[[Any, int], Any]:
        markers: Optional[Dict[int, Any]] = {} if encoder.check_circular else None
        return make(
            markers,
            encoder.default,
            json_encoder.encode_basestring_ascii,
            None,
            encoder.key_separator,
            encoder.item_separator,
            encoder.sort_keys,
            encoder.skipkeys,
            encoder.allow_nan,
        )

    def encode(value: Any) -> str:
        built = getattr(local, "encoder", None)
        if built is None:
            built = local.encoder = build()
        try:
            return "".join(built(value, 0))
        except BaseException:
            local.encoder = None
            raise

    return encode


#: ``json.dumps(args, default=_safe_repr, sort_keys=True)``, its encoder built once.
_encode_args = prebuilt_encoder(json.JSONEncoder(default=_safe_repr, sort_keys=True))
#: ``json.dumps(value)``, its encoder built once.
_encode = prebuilt_encoder(json.JSONEncoder())


def governance_envelope(decision: Decision) -> Dict[str, Any]:
    """The ``agentos`` part of ``decision``'s record (without ``original_args``, which
    :func:`build_tool_args` adds); ``notes`` only when the decision has some, so records
    without them read as before."""
    envelope = {
        "decision_id": decision.decision_id,
        "verdict": decision.verdict.value,
        "rollout_id": decision.context.rollout_id,
        "attempt_id": decision.context.attempt_id,
        "violations": [violation.to_dict() for violation in decision.violations],
        "signals": list(decision.signals),
    }
    if decision.notes:
        envelope["notes"] = list(decision.notes)
    return envelope


def build_tool_args(
    args_text: str, envelope: Dict[str, Any], original_args_text: Optional[str] = None
) -> Dict[str, Any]:
    """The record's ``tool_args``: the arguments (from :func:`serialize_args`) and the envelope,
    plus the arguments before a policy rewrote them. Adds ``original_args`` to ``envelope``."""
    if original_args_text is not None:
        envelope["original_args"] = json.loads(original_args_text)
    return {ARGS_KEY: json.loads(args_text), ENVELOPE_KEY: envelope}


def tool_args_text(args_text: str, envelope: Dict[str, Any], original_args_text: Optional[str] = None) -> str:
    """The record's ``tool_args`` column: ``json.dumps(build_tool_args(...))``, spliced from the
    texts already encoded instead of decoding and encoding them again (the same text, character
    for character: both are ``json.dumps`` output, which a round trip through ``json.loads``
    reproduces).

    >>> envelope = {"decision_id": "d", "verdict": "allowed"}
    >>> text = tool_args_text('{"q": 1}', dict(envelope), '{"q": 2}')
    >>> text == json.dumps(build_tool_args('{"q": 1}', dict(envelope), '{"q": 2}'))
    True
    """
    envelope_text = _encode(envelope)
    if original_args_text is not None:
        envelope_text = f'{envelope_text[:-1]}, "original_args": {original_args_text}}}'
    return f'{{"{ARGS_KEY}": {args_text}, "{ENVELOPE_KEY}": {envelope_text}}}'


# ---------------------------------------------------------------------------------- validating
def _string(value: Any) -> Optional[str]:
    return None if isinstance(value, str) else f"must be a string, got {value!r}"


def _string_or_null(value: Any) -> Optional[str]:
    return None if value is None or isinstance(value, str) else f"must be a string or null, got {value!r}"


def _strings(value: Any) -> Optional[str]:
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return None
    return f"must be a list of strings, got {value!r}"


#: The envelope's keys and what each must hold (``violations`` is checked as a list here, and each
#: of its items against :data:`VIOLATION_FIELDS`); a missing key is None, or its default below.
_ENVELOPE_FIELDS: Dict[str, Callable[[Any], Optional[str]]] = {
    "decision_id": _string,
    "verdict": one_of(Verdict),
    "rollout_id": _string_or_null,
    "attempt_id": _string_or_null,
    "violations": lambda value: None if isinstance(value, list) else f"must be a list, got {type(value).__name__}",
    "signals": _strings,
    "notes": _strings,
    "original_args": any_value,
}
_ENVELOPE_DEFAULTS: Dict[str, Any] = {"violations": [], "signals": [], "notes": []}


def _unexpected(unknown: List[str], where: str) -> RecordFormatError:
    return RecordFormatError(
        f"unexpected field(s) {unknown} in {where} (pass strict=False to keep them as extra fields)"
    )


def _check_violation(violation: Any, at: str, strict: bool) -> Tuple[Dict[str, Any], Dict[str, Any]]:
    """``violation`` with its declared keys (in declared order), and its unknown keys."""
    if not isinstance(violation, dict):
        raise RecordFormatError(f"{at} must be an object, got {type(violation).__name__}")
    missing = missing_fields(violation)
    if missing:
        raise RecordFormatError(f"{at} is missing field(s) {missing}")
    unknown = sorted(set(violation) - set(VIOLATION_FIELDS))
    if unknown and strict:
        raise _unexpected(unknown, at)
    for name, declared in VIOLATION_FIELDS.items():
        problem = declared.check(violation[name]) if name in violation else None
        if problem:
            raise RecordFormatError(f"{at}.{name} {problem}")
    kept = {name: violation[name] for name in VIOLATION_FIELDS if name in violation}
    return kept, {name: violation[name] for name in unknown}


def _check_envelope(envelope: Any, strict: bool, extra: Dict[str, Any]) -> Dict[str, Any]:
    if not isinstance(envelope, dict):
        raise RecordFormatError(f"{_WHERE} must be an object, got {type(envelope).__name__}")
    unknown = sorted(set(envelope) - set(_ENVELOPE_FIELDS))
    if unknown:
        if strict:
            raise _unexpected(unknown, _WHERE)
        extra["envelope"] = {name: envelope[name] for name in unknown}
    checked = {name: envelope.get(name, _ENVELOPE_DEFAULTS.get(name)) for name in _ENVELOPE_FIELDS}
    for name, check in _ENVELOPE_FIELDS.items():
        problem = check(checked[name])
        if problem:
            raise RecordFormatError(f"{_WHERE}.{name} {problem}")
    violations = []
    for index, violation in enumerate(checked["violations"]):
        kept, unknown_fields = _check_violation(violation, f"{_WHERE}.violations[{index}]", strict)
        if unknown_fields:
            extra.setdefault("violations", {})[index] = unknown_fields
        violations.append(kept)
    checked["violations"] = violations
    checked["signals"] = list(checked["signals"])
    if "original_args" not in envelope:
        del checked["original_args"]  # only rewritten actions have it
    if "notes" not in envelope:
        del checked["notes"]  # only decisions with notes have them
    return checked


# ---------------------------------------------------------------------------------- reading
class ToolArgs(NamedTuple):
    """A record's ``tool_args``, read: the action's arguments, the governance envelope (None for
    a row written without one) and, when read with ``strict=False``, the unknown fields kept."""

    args: Any
    envelope: Optional[Dict[str, Any]]
    extra: Dict[str, Any]


def read_tool_args(text: str, *, strict: bool = True) -> ToolArgs:
    """Validate a record's ``tool_args`` column; a :class:`RecordFormatError` names what is wrong.

    A row not written by the governance kernel (no ``agentos`` key) is its arguments only. With
    ``strict=False`` unknown fields are kept in ``extra`` (``"envelope"``, ``"violations"`` by
    index, ``"tool_args"``) instead of failing; they are never dropped silently.

    >>> read_tool_args('{"q": 1}')
    ToolArgs(args={'q': 1}, envelope=None, extra={})
    >>> try:
    ...     read_tool_args('{"args": {}, "agentos": {"decision_id": "d", "verdict": "maybe"}}')
    ... except RecordFormatError as err:
    ...     print(err)
    tool_args.agentos.verdict must be one of ['allowed', 'blocked', 'modified', 'warned'], got 'maybe'
    """
    try:
        decoded = json.loads(text)
    except ValueError as err:
        raise RecordFormatError(f"field 'tool_args' is not JSON ({err})") from None
    if not isinstance(decoded, dict) or ENVELOPE_KEY not in decoded:
        return ToolArgs(decoded, None, {})
    extra: Dict[str, Any] = {}
    envelope = _check_envelope(decoded[ENVELOPE_KEY], strict, extra)
    other = sorted(set(decoded) - {ARGS_KEY, ENVELOPE_KEY})
    if other:
        if strict:
            raise RecordFormatError(
                f"unexpected field(s) {other} in tool_args next to {ENVELOPE_KEY!r} "
                f"(pass strict=False to keep them as extra fields)"
            )
        extra["tool_args"] = {name: decoded[name] for name in other}
    return ToolArgs(decoded.get(ARGS_KEY), envelope, extra)


def decision_from_record(record: Mapping[str, Any]) -> Optional[Dict[str, Any]]:
    """The ``tool_args`` of a FlightRecorder row written by :class:`.trail.AuditTrail`
    (``{"args": ..., "agentos": ...}``, unvalidated), or None for rows written by something else.

    >>> decision_from_record({"tool_args": '{"args": {}, "agentos": {"verdict": "allowed"}}'})["agentos"]
    {'verdict': 'allowed'}
    >>> decision_from_record({"tool_args": '{"query": "SELECT 1"}'}) is None
    True
    """
    raw = record.get("tool_args")
    if not raw:
        return None
    try:
        tool_args = json.loads(raw)
    except (TypeError, ValueError):
        return None
    if not isinstance(tool_args, dict) or not isinstance(tool_args.get(ENVELOPE_KEY), dict):
        return None
    return tool_args


def violation_summary(violations: Sequence[Mapping[str, Any]]) -> Dict[str, Any]:
    """The audit span's ``agent_os.*`` attributes summing up a record's (validated) violations:
    one per field of :class:`PolicyViolation` that declares a summary.

    >>> violation_summary([])
    {'agent_os.policy_name': '', 'agent_os.severity': '', 'agent_os.total_penalty': 0.0}
    """
    return {  # a field that older records lack is summarised over the records that have it
        declared.summary: declared.summarize([violation[name] for violation in violations if name in violation])
        for name, declared in VIOLATION_FIELDS.items()
        if declared.summary is not None and declared.summarize is not None
    }
