"""Every tool governed by default: rules that name tools and constrain their arguments, as data.

:class:`ToolRulesPolicy` holds one rule per tool. A rule declares the tool's arguments and what
each may hold: a type, a pattern the whole value must match, a numeric range, a length, a set of
values, the directories a path must stay under, the hosts a URL may reach. Default deny, three
times over:

* a tool no rule names is blocked, and the reason says how to allow it;
* an argument its rule does not declare is blocked (unless the rule says ``undeclared_args: allow``);
* a value that cannot be read as its rule says (a path that does not resolve, a URL that does not
  parse, a number that is not finite) is blocked.

Each constraint is one function of :data:`CHECKS` (the table is the data, sqlglot style): adding a
kind of constraint is adding a row and its function, and a rule that names a key no row has is a
configuration error at construction, naming the keys there are.

>>> policy = ToolRulesPolicy({
...     "bash": {"args": {"cmd": {"type": "str", "pattern": "(ls|cat|grep)( [a-z./-]+)*"}}},
...     "write_file": {"args": {"path": {"type": "path", "roots": ["/srv/files"]},
...                             "content": {"type": "str", "max_length": 65536}}},
...     "http_post": {"args": {"url": {"type": "url", "hosts": ["api.example.com"]}, "body": {"type": "str"}}},
... })
>>> ctx = ActionContext()
>>> policy.evaluate(Action("bash", {"cmd": "ls -la /srv/files"}), ctx)
[]
>>> print(policy.evaluate(Action("bash", {"cmd": "rm -rf /data"}), ctx)[0].description)
tool 'bash': argument 'cmd' does not match the pattern '(ls|cat|grep)( [a-z./-]+)*' (the whole value must match)
>>> escape = Action("write_file", {"path": "/srv/files/../../etc/passwd", "content": "x"})
>>> print(policy.evaluate(escape, ctx)[0].description)
tool 'write_file': argument 'path' resolves to '/etc/passwd', outside the allowed roots ['/srv/files']
>>> print(policy.evaluate(Action("http_post", {"url": "https://evil.example.net/x", "body": ""}), ctx)[0].description)
tool 'http_post': argument 'url' has host 'evil.example.net', not an allowed host ['api.example.com']
>>> print(policy.evaluate(Action("send_email", {"to": "a@b.c"}), ctx)[0].description)  # doctest: +NORMALIZE_WHITESPACE
tool 'send_email' has no rule in ToolRulesPolicy, so it is blocked (default deny); to allow it, add a rule:
tools: {send_email: {args: {<argument>: {type: str, ...}}}}
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass
from typing import Any, Callable, Dict, FrozenSet, List, Mapping, Optional, Sequence, Tuple, Union
from urllib.parse import urlsplit

import re2

from .actions import Action, ActionContext
from .arguments import tool_key
from .policies import Policy
from .violations import GovernanceConfigError, PolicyViolation, Severity

__all__ = ["ToolRulesPolicy", "ArgumentRule", "ToolRule", "CHECKS", "TYPES"]

#: What each ``type`` accepts. Arguments are the kernel's frozen snapshot: lists are tuples and
#: mappings ``FrozenArgs`` (a ``dict``). ``bool`` is not a number here, and a number is finite.
TYPES: Dict[str, Callable[[Any], bool]] = {
    "str": lambda v: type(v) is str,
    "int": lambda v: type(v) is int,
    "number": lambda v: type(v) is int or (type(v) is float and math.isfinite(v)),
    "bool": lambda v: type(v) is bool,
    "path": lambda v: type(v) is str,
    "url": lambda v: type(v) is str,
    "list": lambda v: isinstance(v, (list, tuple)),
    "object": lambda v: isinstance(v, Mapping),
    "any": lambda v: True,
}
_TEXT = frozenset({"str", "path", "url"})
_NUMBERS = frozenset({"int", "number"})

#: URL schemes allowed when a ``url`` rule names none.
DEFAULT_SCHEMES = ("https",)


def _where(path: str) -> str:
    return f"argument {path!r}"


# -- one constraint, one function: (the rule, the value, where it is) -> the problem, or None ------
def check_pattern(rule: "ArgumentRule", value: Any, path: str) -> Optional[str]:
    if rule.pattern is None or rule.pattern.fullmatch(value) is not None:
        return None
    return f"{_where(path)} does not match the pattern {rule.pattern.pattern!r} (the whole value must match)"


def check_range(rule: "ArgumentRule", value: Any, path: str) -> Optional[str]:
    if rule.min is not None and value < rule.min:
        return f"{_where(path)} is {value!r}, below the minimum {rule.min!r}"
    if rule.max is not None and value > rule.max:
        return f"{_where(path)} is {value!r}, above the maximum {rule.max!r}"
    return None


def check_length(rule: "ArgumentRule", value: Any, path: str) -> Optional[str]:
    if rule.max_length is not None and len(value) > rule.max_length:
        return f"{_where(path)} holds {len(value):,} items or characters, over max_length={rule.max_length:,}"
    return None


def check_one_of(rule: "ArgumentRule", value: Any, path: str) -> Optional[str]:
    if rule.one_of is None or any(type(value) is type(v) and value == v for v in rule.one_of):
        return None
    return f"{_where(path)} is {value!r}, not one of {list(rule.one_of)!r}"


def resolve_path(value: str, base: Optional[str]) -> str:
    """Where ``value`` points once ``..`` and every symbolic link that exists now are resolved
    (``os.path.realpath``); a relative path is read against ``base``. ``ValueError`` when the path
    cannot be read as one place: a NUL byte, a ``~`` the tool might expand, a relative path with
    no base."""
    if "\x00" in value:
        raise ValueError("holds a NUL byte")
    if value.startswith("~"):
        raise ValueError("starts with '~', which a tool may expand to a home directory; pass an absolute path")
    if not os.path.isabs(value):
        if base is None:
            raise ValueError(
                "is a relative path and the rule names no base (the directory the tool reads it against); "
                "pass an absolute path, or add base: <directory> to the rule"
            )
        value = os.path.join(base, value)
    return os.path.realpath(value)


def check_roots(rule: "ArgumentRule", value: Any, path: str) -> Optional[str]:
    if rule.roots is None:
        return None
    try:
        resolved = resolve_path(value, rule.base)
    except (ValueError, OSError) as error:
        return f"{_where(path)} cannot be read as a path: {error}"
    if any(os.path.commonpath([resolved, root]) == root for root in rule.roots):
        return None
    return f"{_where(path)} resolves to {resolved!r}, outside the allowed roots {list(rule.roots)!r}"


#: Characters no URL of a governed call may hold: parsers disagree on them (a backslash is a
#: slash to browsers, not to ``urlsplit``), and whitespace or control characters hide a host.
_URL_UNSAFE = re.compile(r"[\\\s\x00-\x1f\x7f]")


def url_host(value: str) -> Tuple[str, str, Optional[int]]:
    """``(scheme, host, port)`` of ``value``, the host in lower case, IDNA-encoded, without a
    trailing dot. ``ValueError`` when it cannot be read as one: unsafe characters, user
    information (``https://allowed.com@evil.com``), no host, a port that is not a number."""
    if _URL_UNSAFE.search(value):
        raise ValueError("holds a backslash, whitespace or a control character")
    parts = urlsplit(value)
    if "@" in parts.netloc:
        raise ValueError("holds user information ('...@'), which hides the host it reaches")
    host = parts.hostname
    if not host:
        raise ValueError("has no host")
    try:
        port = parts.port
        host = host.rstrip(".").encode("idna").decode("ascii").lower()
    except (ValueError, UnicodeError) as error:
        raise ValueError(str(error)) from None
    return parts.scheme.lower(), host, port


def _host_allowed(host: str, allowed: Sequence[str]) -> bool:
    """An allowed host matches itself; ``.example.com`` matches every subdomain of example.com."""
    return any(host == entry or (entry.startswith(".") and host.endswith(entry)) for entry in allowed)


def check_url(rule: "ArgumentRule", value: Any, path: str) -> Optional[str]:
    if rule.hosts is None:
        return None
    try:
        scheme, host, port = url_host(value)
    except ValueError as error:
        return f"{_where(path)} cannot be read as a URL: {error}"
    if scheme not in rule.schemes:
        return f"{_where(path)} has scheme {scheme!r}, not an allowed scheme {list(rule.schemes)!r}"
    if not _host_allowed(host, rule.hosts):
        return f"{_where(path)} has host {host!r}, not an allowed host {list(rule.hosts)!r}"
    if port is not None and port not in rule.ports:
        return f"{_where(path)} names port {port}, not an allowed port {list(rule.ports)!r} (add it to ports:)"
    return None


def check_items(rule: "ArgumentRule", value: Any, path: str) -> Optional[str]:
    if rule.items is None:
        return None
    problems = [p for i, item in enumerate(value) for p in rule.items.problems(item, f"{path}[{i}]")]
    return "; ".join(problems) or None


def check_fields(rule: "ArgumentRule", value: Any, path: str) -> Optional[str]:
    if rule.fields is None:
        return None
    problems = _mapping_problems(value, rule.fields, rule.undeclared_fields == "allow", f"{path}.", "field")
    return "; ".join(problems) or None


#: The constraints: the key a rule names it by, the types it applies to, its function. Checked in
#: this order once the value's ``type`` holds.
CHECKS: Tuple[Tuple[str, FrozenSet[str], Callable[["ArgumentRule", Any, str], Optional[str]]], ...] = (
    ("max_length", frozenset({"str", "path", "url", "list"}), check_length),
    ("pattern", _TEXT, check_pattern),
    ("min", _NUMBERS, check_range),
    ("max", _NUMBERS, check_range),
    ("one_of", frozenset(TYPES) - {"list", "object", "any"}, check_one_of),
    ("roots", frozenset({"path"}), check_roots),
    ("hosts", frozenset({"url"}), check_url),
    ("items", frozenset({"list"}), check_items),
    ("fields", frozenset({"object"}), check_fields),
)
#: Keys that refine another constraint (they need it): base -> roots; schemes, ports -> hosts.
_REFINES = {"base": "roots", "schemes": "hosts", "ports": "hosts", "undeclared_fields": "fields"}
_ARGUMENT_KEYS = ("type", "required", *(key for key, _, _ in CHECKS), *_REFINES)
_RULE_KEYS = ("args", "undeclared_args")


def _functions(type_name: str, given: Mapping[str, Any]) -> Tuple[Callable[..., Optional[str]], ...]:
    """The check functions an argument rule of ``type_name`` runs, once each, in :data:`CHECKS` order."""
    chosen: List[Callable[..., Optional[str]]] = []
    for key, _, function in CHECKS:
        if key in given and function not in chosen:
            chosen.append(function)
    return tuple(chosen)


@dataclass(frozen=True)
class ArgumentRule:
    """What one argument may hold (built from a mapping by :meth:`parse`; see the module doc)."""

    type: str
    required: bool = False
    pattern: Any = None
    min: Optional[float] = None
    max: Optional[float] = None
    max_length: Optional[int] = None
    one_of: Optional[Tuple[Any, ...]] = None
    roots: Optional[Tuple[str, ...]] = None
    base: Optional[str] = None
    hosts: Optional[Tuple[str, ...]] = None
    schemes: Tuple[str, ...] = DEFAULT_SCHEMES
    ports: Tuple[int, ...] = ()
    items: Optional["ArgumentRule"] = None
    fields: Optional[Mapping[str, "ArgumentRule"]] = None
    undeclared_fields: str = "block"
    checks: Tuple[Callable[..., Optional[str]], ...] = ()

    @classmethod
    def parse(cls, spec: Any, where: str) -> "ArgumentRule":
        if not isinstance(spec, Mapping):
            raise GovernanceConfigError(f"{where}: an argument rule is a mapping such as {{type: str}}, got {spec!r}")
        unknown = sorted(set(spec) - set(_ARGUMENT_KEYS))
        if unknown:
            raise GovernanceConfigError(
                f"{where}: unknown key(s) {unknown}; an argument rule has {list(_ARGUMENT_KEYS)}"
            )
        type_name = spec.get("type")
        if type_name not in TYPES:
            raise GovernanceConfigError(
                f"{where}: type is required and must be one of {sorted(TYPES)}, got {type_name!r} "
                "(type: any accepts every value, unchecked)"
            )
        for what, needs in (("path", "roots"), ("url", "hosts")):
            if type_name == what and needs not in spec:
                raise GovernanceConfigError(
                    f"{where}: a {what} argument names where it may point ({needs}: [...]); default deny has no "
                    f"'anywhere' (to accept any text, declare type: str)"
                )
        for key, types, _ in CHECKS:
            if key in spec and type_name not in types:
                raise GovernanceConfigError(f"{where}: {key} applies to types {sorted(types)}, not to {type_name!r}")
        for key, needs in _REFINES.items():
            if key in spec and needs not in spec:
                raise GovernanceConfigError(f"{where}: {key} refines {needs}, which the rule does not give")
        required = spec.get("required", False)
        if not isinstance(required, bool):
            raise GovernanceConfigError(f"{where}.required must be true or false, got {required!r}")
        fields: Dict[str, Any] = dict(type=type_name, required=required, checks=_functions(type_name, spec))
        if "pattern" in spec:
            fields["pattern"] = _pattern(spec["pattern"], f"{where}.pattern")
        for key in ("min", "max"):
            if key in spec:
                fields[key] = _number(spec[key], f"{where}.{key}")
        if fields.get("min") is not None and fields.get("max") is not None and fields["min"] > fields["max"]:
            raise GovernanceConfigError(f"{where}: min {fields['min']} is above max {fields['max']}")
        if "max_length" in spec:
            fields["max_length"] = _count(spec["max_length"], f"{where}.max_length")
        if "one_of" in spec:
            fields["one_of"] = tuple(_list(spec["one_of"], f"{where}.one_of"))
        if "roots" in spec:
            fields["roots"] = tuple(_directory(r, f"{where}.roots") for r in _list(spec["roots"], f"{where}.roots"))
            if "base" in spec:
                fields["base"] = _directory(spec["base"], f"{where}.base")
        if "hosts" in spec:
            fields["hosts"] = tuple(_host(h, f"{where}.hosts") for h in _list(spec["hosts"], f"{where}.hosts"))
            if "schemes" in spec:
                schemes = _list(spec["schemes"], f"{where}.schemes")
                fields["schemes"] = tuple(_text(s, f"{where}.schemes").lower() for s in schemes)
            if "ports" in spec:
                fields["ports"] = tuple(_port(p, f"{where}.ports") for p in _list(spec["ports"], f"{where}.ports"))
        if "items" in spec:
            fields["items"] = cls.parse(spec["items"], f"{where}.items")
        if "fields" in spec:
            fields["fields"] = _argument_rules(spec["fields"], f"{where}.fields")
            fields["undeclared_fields"] = _block_or_allow(
                spec.get("undeclared_fields", "block"), f"{where}.undeclared_fields"
            )
        return cls(**fields)

    def problems(self, value: Any, path: str) -> List[str]:
        """What is wrong with ``value`` under this rule (nothing when it holds)."""
        if not TYPES[self.type](value):
            return [f"{_where(path)} must be of type {self.type}, got {type(value).__name__}"]
        found = []
        for check in self.checks:
            problem = check(self, value, path)
            if problem is not None:
                found.append(problem)
        return found


@dataclass(frozen=True)
class ToolRule:
    """One tool's arguments: each declared one's :class:`ArgumentRule`, and whether others may come."""

    args: Mapping[str, ArgumentRule]
    allow_undeclared: bool = False

    @classmethod
    def parse(cls, spec: Any, where: str) -> "ToolRule":
        if spec is None:
            spec = {}
        if not isinstance(spec, Mapping):
            raise GovernanceConfigError(f"{where}: a tool rule is a mapping such as {{args: {{...}}}}, got {spec!r}")
        unknown = sorted(set(spec) - set(_RULE_KEYS))
        if unknown:
            raise GovernanceConfigError(f"{where}: unknown key(s) {unknown}; a tool rule has {list(_RULE_KEYS)}")
        undeclared = _block_or_allow(spec.get("undeclared_args", "block"), f"{where}.undeclared_args")
        return cls(_argument_rules(spec.get("args") or {}, f"{where}.args"), undeclared == "allow")

    def problems(self, args: Mapping[str, Any]) -> List[str]:
        return _mapping_problems(args, self.args, self.allow_undeclared, "", "argument")


#: The rule key that lets undeclared arguments or fields through.
_UNDECLARED_OPTION = {"argument": "undeclared_args", "field": "undeclared_fields"}


def _mapping_problems(
    values: Mapping[Any, Any], rules: Mapping[str, ArgumentRule], allow_undeclared: bool, prefix: str, what: str
) -> List[str]:
    """What is wrong with the arguments (``what``: "argument") or an object's fields ("field")."""
    found: List[str] = []
    for name, value in values.items():
        rule = rules.get(name) if isinstance(name, str) else None
        if rule is not None:
            found.extend(rule.problems(value, f"{prefix}{name}"))
        elif not allow_undeclared:
            found.append(
                f"{what} {prefix + str(name)!r} is not declared by the rule "
                f"(declare it, or set {_UNDECLARED_OPTION[what]}: allow)"
            )
    for name, rule in rules.items():
        if rule.required and name not in values:
            found.append(f"{_where(prefix + name)} is required and missing")
    return found


# -- reading the configuration (each a clear error at the boundary) --------------------------------
def _argument_rules(spec: Any, where: str) -> Dict[str, ArgumentRule]:
    if not isinstance(spec, Mapping):
        raise GovernanceConfigError(f"{where} must map argument names to rules, got {spec!r}")
    rules = {}
    for name, rule in spec.items():
        if not isinstance(name, str) or not name:
            raise GovernanceConfigError(f"{where}: argument names must be non-empty strings, got {name!r}")
        rules[name] = ArgumentRule.parse(rule, f"{where}.{name}")
    return rules


def _pattern(value: Any, where: str) -> Any:
    """A pattern compiled by RE2, which matches in time linear in the text: a user's pattern cannot
    backtrack for ever (Python's ``re`` can, holding the interpreter, so no timeout could stop it)."""
    options = re2.Options()
    options.log_errors = False  # the error is raised here, with the rule's place, not printed
    try:
        return re2.compile(_text(value, where), options)
    except re2.error as error:
        detail = error.args[0].decode() if error.args and isinstance(error.args[0], bytes) else error
        raise GovernanceConfigError(
            f"{where} is not a regular expression RE2 reads ({detail}); RE2 has no backreferences or "
            "look-around, which is what keeps every match linear in time"
        ) from None


def _block_or_allow(value: Any, where: str) -> str:
    if value not in ("block", "allow"):
        raise GovernanceConfigError(f"{where} must be 'block' or 'allow', got {value!r}")
    return value


def _text(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value:
        raise GovernanceConfigError(f"{where} must be a non-empty string, got {value!r}")
    return value


def _list(value: Any, where: str) -> List[Any]:
    if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)) or not value:
        raise GovernanceConfigError(f"{where} must be a non-empty list, got {value!r}")
    return list(value)


def _number(value: Any, where: str) -> float:
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or (isinstance(value, float) and not math.isfinite(value))
    ):
        raise GovernanceConfigError(f"{where} must be a finite number, got {value!r}")
    return value


def _count(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise GovernanceConfigError(f"{where} must be an integer >= 0, got {value!r}")
    return value


def _port(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value < 65536:
        raise GovernanceConfigError(f"{where} entries must be port numbers (1-65535), got {value!r}")
    return value


def _directory(value: Any, where: str) -> str:
    text = _text(value, where)
    if not os.path.isabs(os.path.expanduser(text)):
        raise GovernanceConfigError(f"{where} must be absolute directories, got {value!r}")
    return os.path.realpath(os.path.expanduser(text))  # compared with resolved paths: resolved too


def _host(value: Any, where: str) -> str:
    text = _text(value, where).lower()
    subdomains = text.startswith(".")
    try:
        encoded = text.lstrip(".").rstrip(".").encode("idna").decode("ascii")
    except UnicodeError as error:
        raise GovernanceConfigError(f"{where}: {value!r} is not a host name ({error})") from None
    if not encoded or "/" in encoded or ":" in encoded or "@" in encoded:
        raise GovernanceConfigError(
            f"{where}: {value!r} is not a host name (give the host only, e.g. api.example.com, or "
            ".example.com for its subdomains; schemes: and ports: are separate keys)"
        )
    return ("." if subdomains else "") + encoded


class ToolRulesPolicy(Policy):
    """Only the tools a rule names may be called, each with the arguments its rule allows (see the module doc).

    ``tools`` maps a tool name to its rule: ``{"args": {name: {type: ..., <constraints>}}, "undeclared_args":
    "block" | "allow"}``. Tool names are compared as :func:`.arguments.tool_key` reads them (a look-alike of
    a named tool is that tool). A rule with no ``args`` allows the tool only when called without arguments.

    Path rules resolve symbolic links as they are at the check: a link planted after the check and
    before the tool runs is not seen, so such a rule is not pure (its answers are not remembered)
    and a tool writing files should still run where it cannot leave its roots. Patterns are RE2's
    (linear-time matching: no pattern can hang the check), matched against the whole value.
    """

    runs_inline = True
    pure = True

    def __init__(
        self,
        tools: Mapping[str, Any],
        *,
        severity: Union[Severity, str] = Severity.HIGH,
        **kwargs: Any,
    ) -> None:
        super().__init__(severity=severity, **kwargs)
        if not isinstance(tools, Mapping) or not tools:
            raise GovernanceConfigError(
                "ToolRulesPolicy needs tools: a mapping of tool name to rule, e.g. "
                "{'bash': {'args': {'cmd': {'type': 'str', 'pattern': 'ls .*'}}}}"
            )
        rules: Dict[str, ToolRule] = {}
        names: Dict[str, str] = {}
        for name, spec in tools.items():
            where = f"{self.name}.tools.{name}"
            key = tool_key(_text(name, f"{self.name}.tools: a tool name"))
            if key in names:
                raise GovernanceConfigError(f"{where}: the same tool as {names[key]!r} (names compare as tool_key)")
            names[key] = name
            rules[key] = ToolRule.parse(spec, where)
        self.rules: Mapping[str, ToolRule] = rules
        self.tool_names = tuple(tools)
        everything = [rule for tool in rules.values() for rule in _all_rules(tool.args.values())]
        if any(rule.roots is not None for rule in everything):
            self.pure = False  # what a path resolves to can change between two checks of one call

    def evaluate(self, action: Action, context: ActionContext) -> List[PolicyViolation]:
        rule = self.rules.get(action.tool_key)
        if rule is None:
            return [
                self.violation(
                    f"tool {action.tool_name!r} has no rule in {self.name}, so it is blocked (default deny); "
                    f"to allow it, add a rule: tools: "
                    f"{{{action.tool_name}: {{args: {{<argument>: {{type: str, ...}}}}}}}}"
                )
            ]
        problems = rule.problems(action.args)
        if not problems:
            return []
        return [self.violation(f"tool {action.tool_name!r}: " + "; ".join(problems))]


def _all_rules(rules: Any) -> List[ArgumentRule]:
    """Every argument rule, nested ones (``items``, ``fields``) included."""
    found: List[ArgumentRule] = []
    for rule in rules:
        found.append(rule)
        if rule.items is not None:
            found.extend(_all_rules([rule.items]))
        if rule.fields is not None:
            found.extend(_all_rules(rule.fields.values()))
    return found
