"""An action's arguments as the kernel judges them: a frozen snapshot of plain values, every
string in it, and tool names compared the way people read them.

* :func:`freeze_arguments` takes the snapshot an :class:`Action` holds: ``str``, ``int``,
  ``float``, ``bool``, ``None`` and ``bytes`` leaves; lists and tuples become tuples, sets
  ``frozenset``, mappings :class:`FrozenArgs` (a ``dict`` no method can change), at any depth; a
  subclass of ``str``/``int``/``float``/``bytes`` becomes the plain value it holds (its own
  ``__str__``, ``__eq__`` or ``__hash__`` can no longer tell the check one thing and the tool
  another). ``datetime``, ``date``, ``time``, ``timedelta``, ``Decimal`` and ``UUID`` (exact
  types: immutable values) are kept as they are. Anything else (a generator, an iterator, a
  connection, an arbitrary object) is refused with an :class:`ArgumentError` naming the argument
  and the fix: it could change, or be read only once, after the check.
* :func:`string_leaves` yields every string of a snapshot with its path: at any depth, mapping
  keys included, bytes decoded, and JSON text parsed (its strings are leaves too).
* :func:`tool_key` is the one comparison of tool names: Unicode NFKC, zero-width and other
  invisible characters removed, letters of other scripts drawn like Latin ones read as those
  (Unicode's confusables, from ``confusable_homoglyphs``), case, ``-``, ``.``, spaces and ``_``
  folded. ``Dаtabase‐Query`` (a Cyrillic ``а``),
  ``database\u200b_query`` and fullwidth ``ｄａｔａｂａｓｅ_query`` are all ``database_query``.

>>> args = freeze_arguments({"query": "SELECT ?", "params": [1, ["x"]]})
>>> args["params"], type(args).__name__
((1, ('x',)), 'FrozenArgs')
>>> [(leaf.path, leaf.text) for leaf in string_leaves(args)]
[('query', 'SELECT ?'), ('params[1][0]', 'x')]
>>> tool_key("Dаtabase-Query")  # a Cyrillic letter
'database_query'
"""

from __future__ import annotations

import datetime
import decimal
import functools
import json
import re
import unicodedata
import uuid
from typing import Any, Dict, Iterator, List, Mapping, NamedTuple, Optional, Tuple

__all__ = [
    "ArgumentError",
    "FrozenArgs",
    "Leaf",
    "MAX_ARGUMENT_DEPTH",
    "MAX_ARGUMENT_NODES",
    "UNREADABLE_JSON",
    "freeze_arguments",
    "string_leaves",
    "tool_key",
]

#: Containers nested deeper than this are refused: every level must be judged, in bounded work.
MAX_ARGUMENT_DEPTH = 100
#: Values (leaves and containers) an action's arguments may hold in all.
MAX_ARGUMENT_NODES = 1_000_000

#: Immutable value types kept as they are (exact types only: a subclass could override anything).
_KEPT_TYPES = frozenset(
    {
        type(None),
        bool,
        int,
        float,
        str,
        bytes,
        datetime.date,
        datetime.datetime,
        datetime.time,
        datetime.timedelta,
        decimal.Decimal,
        uuid.UUID,
    }
)
_SCALARS = frozenset({type(None), bool, int, float, str, bytes})
_FIX = (
    "pass plain values (str, int, float, bool, None, bytes, lists/tuples, dicts, sets; datetime, "
    "Decimal, UUID), and bind anything else (a connection, a client) to the tool with "
    "functools.partial or a closure instead of passing it as an argument"
)


class ArgumentError(TypeError):
    """An argument cannot be snapshot as plain values; the message names it and the fix."""

    def __init__(self, path: str, problem: str, fix: str = _FIX) -> None:
        self.path = path
        super().__init__(f"argument {path!r} {problem}; {fix}")


def _read_only(self: Any, *args: Any, **kwargs: Any) -> Any:
    raise TypeError("the arguments of an Action are a frozen snapshot and cannot be changed")


class FrozenArgs(dict):
    """A ``dict`` that no method changes: what was judged is what the tool receives.

    It is a ``dict`` so that JSON, ``**`` unpacking and DB-API drivers take it as one.

    >>> args = FrozenArgs({"query": "SELECT 1"})
    >>> args
    {'query': 'SELECT 1'}
    >>> args["query"] = "DROP TABLE users"
    Traceback (most recent call last):
    ...
    TypeError: the arguments of an Action are a frozen snapshot and cannot be changed
    """

    __slots__ = ()
    __setitem__ = __delitem__ = __ior__ = _read_only
    clear = pop = popitem = setdefault = update = _read_only

    def __reduce__(self) -> Tuple[Any, ...]:
        return (FrozenArgs, (dict(self),))

    def __copy__(self) -> "FrozenArgs":
        return self

    def __deepcopy__(self, memo: Dict[int, Any]) -> "FrozenArgs":
        return self


def freeze_arguments(args: Mapping[str, Any]) -> FrozenArgs:
    """The snapshot of an action's arguments (see the module doc); ``ArgumentError`` if one
    cannot be taken.

    >>> try:
    ...     freeze_arguments({"rows": (r for r in [1])})
    ... except ArgumentError as err:
    ...     print(err)  # doctest: +ELLIPSIS
    argument 'rows' is a generator, which can be read only once: ...; pass list(...) of it
    """
    if type(args) is dict:
        copied = flat_snapshot(args)
        if copied is not None:
            return copied
    budget = [MAX_ARGUMENT_NODES]
    frozen = {}
    for name, value in args.items():
        key = _plain_str(name) if isinstance(name, str) else name
        try:
            frozen[key] = _freeze(value, key, 0, budget)
        except ArgumentError:
            raise
        except Exception as err:  # noqa: BLE001 - a value whose own methods fail cannot be snapshot
            raise ArgumentError(
                str(key), f"could not be read: its {type(err).__name__} was raised while taking the snapshot"
            ) from None
    return FrozenArgs(frozen)


def flat_snapshot(args: Dict[Any, Any]) -> Optional[FrozenArgs]:
    """The snapshot of a ``dict`` of plain ``str`` names to plain values (the common call: nothing
    to convert), or None for anything else (:func:`freeze_arguments` then converts it).

    The copy is taken first and its values checked after: checking the caller's dict and then
    copying it would let another thread put an unchecked value in between."""
    try:
        copied = FrozenArgs(args)
    except Exception:  # noqa: BLE001 - a key's own __eq__ raised: read by the general path as the text it holds
        return None
    for name, value in copied.items():
        if type(value) not in _SCALARS or type(name) is not str:
            return None
    return copied


def _plain_str(value: str) -> str:
    return value if type(value) is str else str.__str__(value)


def _freeze(value: Any, path: str, depth: int, budget: List[int]) -> Any:
    budget[0] -= 1
    if budget[0] < 0:
        raise ArgumentError(path, f"takes the arguments over {MAX_ARGUMENT_NODES:,} values", "pass less data per call")
    kind = type(value)
    if kind in _KEPT_TYPES:
        return value
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, int):
        return int.__int__(value)
    if isinstance(value, float):
        return float.__float__(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(memoryview(value))
    if depth >= MAX_ARGUMENT_DEPTH:
        raise ArgumentError(path, f"nests deeper than {MAX_ARGUMENT_DEPTH} levels", "flatten it")
    if isinstance(value, Mapping):
        frozen = {}
        for key, item in list(value.items()):
            plain_key = _freeze(key, f"{path} key", depth + 1, budget)
            label = plain_key if isinstance(plain_key, (str, int)) else f"<{type(key).__name__}>"
            frozen[plain_key] = _freeze(item, f"{path}.{label}", depth + 1, budget)
        return FrozenArgs(frozen)
    if isinstance(value, (list, tuple)):
        return tuple(_freeze(item, f"{path}[{i}]", depth + 1, budget) for i, item in enumerate(list(value)))
    if isinstance(value, (set, frozenset)):
        return frozenset(_freeze(item, f"{path} item", depth + 1, budget) for item in list(value))
    if isinstance(value, Iterator) or hasattr(value, "__next__"):
        what = "a generator" if kind.__name__ == "generator" else f"an iterator ({kind.__name__})"
        raise ArgumentError(
            path,
            f"is {what}, which can be read only once: what the kernel judged could not be what the tool gets",
            "pass list(...) of it",
        )
    raise ArgumentError(path, f"is a {kind.__module__}.{kind.__qualname__}, not a plain value")


class Leaf(NamedTuple):
    """One string of an action's arguments: where it is, its text, and how it was read
    (``"str"``, ``"bytes"`` decoded, ``"json"``: a string inside JSON text, ``"key"``), or
    ``"unreadable"``: text that could not be read to the end (JSON nested too deeply), whose
    ``text`` says why. A guard must not take an unreadable leaf as harmless."""

    path: str
    text: str
    source: str = "str"


def _decoded(data: bytes) -> str:
    """Bytes as a database client would read them: UTF-8, else Latin-1 (every byte is a letter)."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("latin-1")


#: What :func:`_json_values` answers for JSON text nested too deeply to be read to the end.
UNREADABLE_JSON = object()


def _json_values(text: str) -> Any:
    """The value of ``text`` when it is a JSON array or object, :data:`UNREADABLE_JSON` when it is
    JSON nested too deeply for the reader, else None (not JSON: judged as the text it is)."""
    stripped = text.lstrip()
    if not stripped or stripped[0] not in "[{":
        return None
    try:
        return json.loads(stripped)
    except RecursionError:
        return UNREADABLE_JSON
    except ValueError:
        return None


_IDENTIFIER = re.compile(r"\w+")


def string_leaves(args: Mapping[str, Any]) -> Iterator[Leaf]:
    """Every string in ``args`` with its path, depth first in argument order: values and keys of
    mappings, items of tuples and sets, bytes decoded, and the strings of JSON text (after the
    text itself). Expects a snapshot (:func:`freeze_arguments`), whose depth is bounded.

    >>> for leaf in string_leaves({"q": b"DROP", "p": '{"sql": "DELETE"}'}):
    ...     print(leaf.path, leaf.text, leaf.source)
    q DROP bytes
    p {"sql": "DELETE"} str
    p<json> key sql key
    p<json>.sql DELETE json
    """
    stack: List[Tuple[str, Any, str]] = []
    for name, value in args.items():
        if isinstance(name, str) and not _IDENTIFIER.fullmatch(name):
            yield Leaf(f"{name} (its name)", name, "key")  # a name a tool's **kwargs may read
        if type(value) is str and not value[:1].isspace() and value[:1] not in ("[", "{"):
            yield Leaf(name, value)  # the common argument: plain text that is not JSON
            continue
        stack.append((name, value, "str"))
        yield from _leaves_under(stack)


def _leaves_under(stack: List[Tuple[str, Any, str]]) -> Iterator[Leaf]:
    """The leaves of what is on ``stack`` (path, value, source), depth first."""
    while stack:
        path, value, source = stack.pop()
        if isinstance(value, str):
            yield Leaf(path, value, source)
            parsed = _json_values(value)
            if parsed is UNREADABLE_JSON:
                yield Leaf(
                    f"{path}<json>",
                    "JSON nested too deeply to be read to the end (Python's recursion limit)",
                    "unreadable",
                )
            elif isinstance(parsed, (dict, list)):
                stack.append((f"{path}<json>", parsed, "json"))
        elif isinstance(value, (bytes, bytearray)):
            stack.append((path, _decoded(bytes(value)), "bytes"))
        elif isinstance(value, Mapping):
            items = list(value.items())
            for key, item in reversed(items):
                stack.append((f"{path}.{key}", item, source))
                if isinstance(key, (str, bytes)):
                    stack.append((f"{path} key", key, "key"))
        elif isinstance(value, (list, tuple)):
            stack.extend((f"{path}[{i}]", item, source) for i, item in reversed(list(enumerate(value))))
        elif isinstance(value, (set, frozenset)):
            stack.extend((f"{path} item", item, source) for item in value)


@functools.lru_cache(maxsize=None)
def _look_alike(char: str) -> str:
    """The ASCII letter or digit ``char`` is drawn like, by Unicode's confusables data (its lower
    case first, then itself, following a few prototype steps), or ``char`` itself. Only non-ASCII
    characters are asked, so ``m`` never becomes ``rn``.

    >>> [_look_alike(c) for c in "аКο数"]  # Cyrillic a, Cyrillic capital Ka, Greek omicron
    ['a', 'k', 'o', '数']
    """
    from confusable_homoglyphs.confusables import confusables_data  # a 10k-entry table: loaded when needed

    for start in (char.casefold(), char):
        frontier, seen = [start], {start}
        for _ in range(4):
            following = []
            for c in frontier:
                for homoglyph in confusables_data.get(c, ()):
                    glyph = homoglyph["c"]
                    if glyph.isascii() and glyph.isalnum():
                        return glyph.casefold()
                    if glyph not in seen:
                        seen.add(glyph)
                        following.append(glyph)
            frontier = following
    return char


#: What reads as nothing or as a separator in a tool name.
_SEPARATORS = re.compile(r"[\s\-._\u2010-\u2015\u2212]+")


@functools.lru_cache(maxsize=4096)
def tool_key(name: str) -> str:
    """The name a tool is known by, compared the way people read tool names.

    >>> tool_key("Database-Query") == tool_key("database\u200b_query") == tool_key("ｄａｔａｂａｓｅ_ｑｕｅｒｙ")
    True
    >>> tool_key("database_query_v2")  # a different name: a different tool
    'database_query_v2'
    """
    text = unicodedata.normalize("NFKD", unicodedata.normalize("NFKC", _plain_str(name)))
    # Invisible characters (zero-width spaces and joiners, direction marks, soft hyphens,
    # variation selectors) and accents on letters are dropped; look-alike letters read as Latin.
    text = "".join(c for c in text if unicodedata.category(c) not in ("Cf", "Cc", "Mn", "Me"))
    if not text.isascii():
        text = "".join(c if c.isascii() else _look_alike(c) for c in text)
    return _SEPARATORS.sub("_", text.casefold()).strip("_")
