"""SQL governance decided on the sqlglot parse of every statement, never on substrings.

Agent OS's own SQL check is a regex over the raw text: it misses ``DELETE/**/FROM t`` and blocks
``SELECT 'DROP TABLE users'``. :class:`SQLPolicy` parses the text into statements and looks at
what each statement *is* (including statements nested in CTEs and MERGE branches), so comments,
casing, whitespace, string literals and identifiers such as ``dropped_at`` cannot fool it.
Whatever cannot be parsed into known statements is blocked (fail closed).
"""

from __future__ import annotations

import contextvars
import functools
import logging
import re
from dataclasses import dataclass
from typing import Any, Callable, Dict, FrozenSet, Iterable, List, Mapping, Optional, Sequence, Tuple, Type, Union

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

from .actions import Action, ActionContext
from .policies import Policy
from .violations import GovernanceConfigError, PolicyViolation, Severity

__all__ = ["SQLPolicy", "SQLAnalysis", "analyze_sql", "SQL_KEYWORDS", "DEFAULT_SQL_TOOLS"]

#: Statement kinds SQLPolicy can deny or allow, with the sqlglot node classes that are that kind.
_KIND_NODES: Dict[str, Tuple[Type[exp.Expression], ...]] = {
    "SELECT": (exp.Select, exp.SetOperation, exp.Values),
    "INSERT": (exp.Insert,),
    "UPDATE": (exp.Update,),
    "DELETE": (exp.Delete,),
    "MERGE": (exp.Merge,),
    "DROP": (exp.Drop,),
    "TRUNCATE": (exp.TruncateTable,),
    "ALTER": (exp.Alter,),
    "CREATE": (exp.Create,),
    "GRANT": (exp.Grant,),
    "REVOKE": (exp.Revoke,),
    "ATTACH": (exp.Attach,),
    "DETACH": (exp.Detach,),
    "PRAGMA": (exp.Pragma,),
    "BEGIN": (exp.Transaction,),
    "COMMIT": (exp.Commit,),
    "ROLLBACK": (exp.Rollback,),
    "COPY": (exp.Copy,),
    "DESCRIBE": (exp.Describe,),
    "SHOW": (exp.Show,),
    "USE": (exp.Use,),
    "SET": (exp.Set,),
    "ANALYZE": (exp.Analyze,),
    "COMMENT": (exp.Comment,),
}
#: Statements sqlglot does not model are kept as ``Command`` nodes named by their first keyword.
#: These are the ones a deny/allow list may name on top of the kinds above.
_COMMAND_KINDS = ("REPLACE", "VACUUM", "EXPLAIN", "REINDEX", "EXECUTE", "EXEC", "CALL", "LOAD", "CHECKPOINT")
SQL_KEYWORDS: FrozenSet[str] = frozenset(_KIND_NODES) | frozenset(_COMMAND_KINDS)

_NODE_KIND: Dict[Type[exp.Expression], str] = {cls: kind for kind, classes in _KIND_NODES.items() for cls in classes}
#: Node types that may legitimately stand at the top of a statement.
_STATEMENT_ROOTS = tuple(_NODE_KIND) + (exp.Command, exp.Subquery)

DEFAULT_SQL_TOOLS = ("database_query", "database_write", "sql_query", "execute_sql", "run_sql")


_KIND_BY_TYPE: Dict[type, Optional[str]] = {}


def _kind_of(node: exp.Expression) -> Optional[str]:
    node_type = type(node)
    try:
        return _KIND_BY_TYPE[node_type]
    except KeyError:
        pass
    kind = next((_NODE_KIND[cls] for cls in node_type.__mro__ if cls in _NODE_KIND), None)  # type: ignore[index]
    _KIND_BY_TYPE[node_type] = kind
    return kind


@dataclass(frozen=True)
class SQLAnalysis:
    """What a piece of SQL text contains.

    ``statements`` holds, per statement, its text and the set of statement kinds found anywhere
    in it (``"WITH d AS (DELETE ...) SELECT ..."`` has kinds ``{"SELECT", "DELETE"}``).
    ``error`` is set when the text is not a sequence of SQL statements.
    """

    statements: Tuple[Tuple[str, FrozenSet[str]], ...]
    error: Optional[str] = None

    @property
    def kinds(self) -> FrozenSet[str]:
        return frozenset().union(*(kinds for _, kinds in self.statements))


_KEYWORD_WORD = re.compile(r"\b(" + "|".join(sorted(SQL_KEYWORDS)) + r")\b", re.IGNORECASE)


#: Statements that run SQL text given at run time (a string, a variable, a prepared statement).
_DYNAMIC_COMMANDS = frozenset({"EXECUTE", "EXEC", "PREPARE"})
#: Commands that are a statement kind under another name.
_COMMAND_ALIASES = {"RENAME": "ALTER"}  # MySQL's RENAME TABLE
_LONE_STRING = re.compile(r"^\s*(?:IMMEDIATE\s+)?(?:'[^']*'|\"[^\"]*\")\s*$", re.IGNORECASE)


class _Unverifiable(Exception):
    """The text is SQL, but what it would run cannot be known from it."""


def _command_kinds(node: exp.Command) -> FrozenSet[str]:
    """A Command is a statement sqlglot did not parse. Name it by its keyword and by every
    statement keyword anywhere in its raw text, string literals included, so dynamic SQL such as
    ``EXECUTE 'DROP TABLE t'`` or ``EXPLAIN DROP TABLE t`` counts as DROP. This errs towards
    blocking, which is the right side to err on for text the parser could not read. Dynamic SQL
    whose text is built at run time (``EXECUTE IMMEDIATE CONCAT('DR', 'OP ...')``, ``PREPARE s
    FROM @q``, ``EXECUTE s``) cannot be checked at all: :class:`_Unverifiable`."""
    rest = node.expression
    if isinstance(rest, exp.Literal):
        text = str(rest.this)
    elif isinstance(rest, exp.Expression):
        text = rest.sql()
    else:
        text = "" if rest is None else str(rest)
    keyword = str(node.this).upper()
    if keyword in _DYNAMIC_COMMANDS and not _LONE_STRING.match(text):
        raise _Unverifiable(
            f"dynamic SQL ({keyword} of text built at run time) cannot be checked: {_snippet(keyword + ' ' + text)}"
        )
    found = {m.upper() for m in _KEYWORD_WORD.findall(text)}
    return frozenset({_COMMAND_ALIASES.get(keyword, keyword)} | {_COMMAND_ALIASES.get(k, k) for k in found})


def _into_creates(node: exp.Into) -> bool:
    """``SELECT ... INTO t`` creates table ``t`` (Postgres, T-SQL) or writes a file (MySQL's
    ``INTO OUTFILE``); MySQL's ``INTO @variable`` only sets variables."""
    targets = node.expressions or [node.this]
    return not all(isinstance(t, exp.Table) and isinstance(t.this, (exp.Parameter, exp.SessionParameter)) for t in targets)


class _FlatCommentsDialect(sqlglot.Dialect):
    """sqlglot's default dialect reads ``/* /* */`` as an unclosed nested comment (as Postgres
    does); SQLite and MySQL close it at the first ``*/``. This is the default dialect with the
    SQLite/MySQL reading, used as the second reading when the target dialect is not known."""

    class Tokenizer(sqlglot.tokens.Tokenizer):
        NESTED_COMMENTS = False


def analyze_sql(
    query: str, dialect: Optional[str] = None, *, describe: Optional[Callable[[FrozenSet[str]], bool]] = None
) -> SQLAnalysis:
    """Parse ``query`` into statements and name the kinds each contains.

    With no ``dialect`` the database's comment rules are unknown, so text containing ``/*`` is
    read both with nesting block comments (Postgres) and without (SQLite, MySQL); it counts as
    everything either reading finds, and fails if either reading fails. ``SELECT 1 /* /* */;
    DROP TABLE t; -- */`` is a harmless comment in Postgres but drops ``t`` in SQLite.

    Rendering a statement back to text costs as much as parsing it, so ``describe(kinds)`` may
    say which statements need their text (a policy asks only for the ones it will report);
    the others get an empty text.

    >>> analyze_sql("SELECT 'DROP TABLE users'").kinds == {"SELECT"}
    True
    >>> sorted(analyze_sql("SELECT 1; DELETE/**/FROM t").kinds)
    ['DELETE', 'SELECT']
    >>> analyze_sql("SELEC * FRM").error
    'not an SQL statement: SELEC * FRM'
    >>> sorted(analyze_sql("SELECT 1 /* /* */; DROP TABLE t; -- */").kinds)
    ['DROP', 'SELECT']
    """
    if "/*!" in query and (dialect is None or str(dialect).lower() in _EXECUTABLE_COMMENT_DIALECTS):
        return SQLAnalysis((), "MySQL executable comment '/*! ... */' (MySQL runs what it holds); write the SQL without it")
    analysis = _analyze_one_reading(query, dialect, describe)
    if dialect is not None or analysis.error is not None:
        return analysis
    for reading in _other_readings(query):
        other = _analyze_one_reading(query, reading, describe)
        if other.error is not None:
            return other
        extra = tuple(s for s in other.statements if s not in analysis.statements)
        analysis = SQLAnalysis(analysis.statements + extra)
    return analysis


#: Dialects in which ``/*! ... */`` is code, not a comment.
_EXECUTABLE_COMMENT_DIALECTS = frozenset({"mysql", "doris", "starrocks", "singlestore"})
_DASH_DASH_WITHOUT_SPACE = re.compile(r"--[^\s]")


def _other_readings(query: str) -> List[Any]:
    """The lexers under which ``query`` may split into different statements than under the
    default one, when the database is not known. Each is read only when the text has what makes
    them differ, so ordinary queries are parsed once.

    * ``/*`` -- Postgres nests block comments, SQLite and MySQL close them at the first ``*/``.
    * a backslash, or ``--`` not followed by a space -- MySQL: ``\'`` escapes a quote inside a
      string, and ``--1`` is minus minus one, not a comment.
    * ``[`` -- SQLite and T-SQL: ``[...]`` is a quoted identifier, so a ``;`` inside it separates
      nothing.
    """
    readings: List[Any] = []
    if "/*" in query:
        readings.append(_FlatCommentsDialect)
    if "\\" in query or _DASH_DASH_WITHOUT_SPACE.search(query):
        readings.append("mysql")
    if "[" in query:
        readings.append("sqlite")
    return readings


_POLICY_PARSING: contextvars.ContextVar[bool] = contextvars.ContextVar("agentos_sql_policy_parsing", default=False)


class _QuietWhilePolicyParses(logging.Filter):
    """sqlglot logs a WARNING for every statement it keeps as a Command ("contains unsupported
    syntax"); for agent-written SQL that is one stderr line per odd action. The policy decides on
    those statements itself, so their warnings are dropped while it parses (only then)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not _POLICY_PARSING.get()


logging.getLogger("sqlglot").addFilter(_QuietWhilePolicyParses())


def _analyze_one_reading(query: str, dialect: Any, describe: Optional[Callable[[FrozenSet[str]], bool]]) -> SQLAnalysis:
    token = _POLICY_PARSING.set(True)
    try:
        return _analyze_parsed(query, dialect, describe)
    finally:
        _POLICY_PARSING.reset(token)


def _analyze_parsed(query: str, dialect: Any, describe: Optional[Callable[[FrozenSet[str]], bool]]) -> SQLAnalysis:
    try:
        parsed = sqlglot.parse(query, read=dialect)
    except SqlglotError as err:
        first_line = str(err).splitlines()[0] if str(err) else type(err).__name__
        return SQLAnalysis((), f"unparseable SQL ({first_line})")
    except RecursionError:
        return SQLAnalysis((), "unparseable SQL (nested too deeply to parse)")
    statements: List[Tuple[str, FrozenSet[str]]] = []
    for node in parsed:
        if node is None or isinstance(node, exp.Semicolon):  # empty statement between semicolons
            continue
        if not isinstance(node, _STATEMENT_ROOTS):
            return SQLAnalysis((), f"not an SQL statement: {_snippet(node.sql(dialect=dialect))}")
        kinds = set()
        for sub in node.walk():
            kind = _kind_of(sub)
            if kind is None:
                if isinstance(sub, exp.Command):
                    try:
                        kinds.update(_command_kinds(sub))
                    except _Unverifiable as err:
                        return SQLAnalysis((), str(err))
                elif isinstance(sub, exp.When) and isinstance(sub.args.get("then"), exp.Var):
                    kinds.add(str(sub.args["then"].this).upper())  # MERGE ... THEN DELETE
                elif isinstance(sub, exp.Into) and _into_creates(sub):
                    kinds.add("CREATE")  # SELECT ... INTO new_table
                continue
            if kind == "INSERT" and str(sub.args.get("alternative") or "").upper() == "REPLACE":
                kinds.add("REPLACE")  # INSERT OR REPLACE overwrites rows
            elif kind == "COPY" and sub.args.get("kind"):
                kinds.add("INSERT")  # COPY t FROM ... loads rows into t
            kinds.add(kind)
        frozen = frozenset(kinds)
        text = _snippet(node.sql(dialect=dialect)) if describe is None or describe(frozen) else ""
        statements.append((text, frozen))
    if not statements:
        return SQLAnalysis((), "empty SQL: no statement to run")
    return SQLAnalysis(tuple(statements))


def _not_sql_text(query: str) -> Optional[str]:
    """Why ``query`` is not text a database reads the way the parser does, or None.

    A NUL ends the statement in C client libraries; a lone surrogate is not Unicode at all and
    cannot even be sent. Either way the parser's reading is not the database's.
    """
    if "\x00" in query:
        return f"SQL contains a NUL character at position {query.index(chr(0))}; send text without NUL bytes"
    if not query.isascii():
        try:
            query.encode("utf-8")
        except UnicodeEncodeError as err:
            return f"SQL is not valid Unicode text ({err.reason} at position {err.start}); decode the bytes properly before sending"
    return None


def _snippet(text: str, limit: int = 120) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _keywords(name: str, values: Optional[Iterable[str]]) -> Optional[FrozenSet[str]]:
    if values is None:
        return None
    if isinstance(values, str):
        raise TypeError(f"{name} must be a list of SQL keywords such as ['DROP', 'DELETE'], not a single str")
    result = set()
    for value in values:
        if not isinstance(value, str):
            raise TypeError(f"{name} entries must be str, got {type(value).__name__}: {value!r}")
        keyword = value.strip().upper()
        if keyword not in SQL_KEYWORDS:
            raise GovernanceConfigError(
                f"unknown SQL keyword {value!r} in {name}; known keywords: {', '.join(sorted(SQL_KEYWORDS))}"
            )
        result.add(keyword)
    return frozenset(result)


class SQLPolicy(Policy):
    """Deny (or allow only) kinds of SQL statement, decided on the parsed statements.

    Applies to actions whose tool is in ``tools``; the SQL is ``args[arg]``. One action yields
    at most one violation, at the highest severity among what it found. ``severities`` sets a
    severity per keyword (default: the policy's ``severity``); SQL that does not parse, is not a
    string, or is longer than ``max_query_chars`` is blocked at ``unparseable_severity``.
    Results are cached per query text, so repeated queries cost a dictionary look-up.

    >>> policy = SQLPolicy(deny=["DROP", "DELETE"])
    >>> ctx = ActionContext()
    >>> policy.evaluate(Action.sql("SELECT * FROM users WHERE note = 'DROP TABLE users'"), ctx)
    []
    >>> [v.description for v in policy.evaluate(Action.sql("select 1; DROP/**/TABLE users"), ctx)]
    ['DROP statement denied: DROP TABLE users']
    >>> read_only = SQLPolicy(allow=["SELECT"])
    >>> read_only.evaluate(Action.sql("UPDATE users SET name = 'x'"), ctx)[0].description
    "UPDATE statement not in allow-list ['SELECT']: UPDATE users SET name = 'x'"
    """

    runs_inline = True

    def __init__(
        self,
        deny: Optional[Iterable[str]] = ("DROP", "DELETE", "TRUNCATE"),
        *,
        allow: Optional[Iterable[str]] = None,
        tools: Sequence[str] = DEFAULT_SQL_TOOLS,
        arg: str = "query",
        dialect: Optional[str] = None,
        severity: Union[Severity, str] = Severity.CRITICAL,
        severities: Optional[Mapping[str, Union[Severity, str]]] = None,
        unparseable_severity: Union[Severity, str] = Severity.HIGH,
        max_query_chars: int = 100_000,
        cache_size: int = 4096,
        **kwargs: Any,
    ) -> None:
        super().__init__(severity=severity, **kwargs)
        self.deny = _keywords("deny", deny) or frozenset()
        self.allow = _keywords("allow", allow)
        if not self.deny and self.allow is None:
            raise GovernanceConfigError("SQLPolicy needs deny=[...] or allow=[...]; with neither it checks nothing")
        if isinstance(tools, str) or not all(isinstance(t, str) and t for t in tools):
            raise TypeError(f"tools must be a list of tool names, got {tools!r}")
        self.tools = frozenset(tools)
        if not isinstance(arg, str) or not arg:
            raise TypeError(f"arg must be the name of the argument holding the SQL, got {arg!r}")
        self.arg = arg
        if dialect is not None:
            try:
                sqlglot.Dialect.get_or_raise(dialect)
            except (ValueError, SqlglotError) as err:
                raise GovernanceConfigError(f"unknown SQL dialect {dialect!r}: {err}") from None
        self.dialect = dialect
        self.severities: Dict[str, Severity] = {}
        for keyword, sev in (severities or {}).items():
            (key,) = _keywords("severities", [keyword]) or ()
            self.severities[key] = Severity.parse(sev)
        self.unparseable_severity = Severity.parse(unparseable_severity)
        if isinstance(max_query_chars, bool) or not isinstance(max_query_chars, int) or max_query_chars < 1:
            raise GovernanceConfigError(f"max_query_chars must be a positive int, got {max_query_chars!r}")
        self.max_query_chars = max_query_chars
        if isinstance(cache_size, bool) or not isinstance(cache_size, int) or cache_size < 0:
            raise GovernanceConfigError(f"cache_size must be an int >= 0, got {cache_size!r}")
        self._analyze = functools.lru_cache(maxsize=cache_size)(
            functools.partial(analyze_sql, dialect=dialect, describe=self._reports)
        )

    def applies_to(self, tool_name: str) -> bool:
        return tool_name in self.tools

    def _reports(self, kinds: FrozenSet[str]) -> bool:
        """Whether a statement of these kinds produces a finding (and so needs its text)."""
        return bool(kinds & self.deny) or (self.allow is not None and bool(kinds - self.allow))

    def check_sql(self, query: Any) -> List[PolicyViolation]:
        """Decide on SQL text directly (for notebooks and other frameworks)."""
        if not isinstance(query, str):
            return [
                self.violation(
                    f"argument {self.arg!r} must be a string of SQL, got {type(query).__name__}",
                    severity=self.unparseable_severity,
                )
            ]
        if len(query) > self.max_query_chars:
            return [
                self.violation(
                    f"SQL is {len(query):,} characters, over max_query_chars={self.max_query_chars:,}",
                    severity=self.unparseable_severity,
                )
            ]
        junk = _not_sql_text(query)
        if junk is not None:
            return [self.violation(junk, severity=self.unparseable_severity)]
        analysis = self._analyze(query)
        if analysis.error is not None:
            return [self.violation(analysis.error, severity=self.unparseable_severity)]
        findings: List[Tuple[str, str]] = []  # (keyword, message)
        for text, kinds in analysis.statements:
            for kind in sorted(kinds & self.deny):
                findings.append((kind, f"{kind} statement denied: {text}"))
            if self.allow is not None:
                for kind in sorted(kinds - self.allow):
                    findings.append((kind, f"{kind} statement not in allow-list {sorted(self.allow)}: {text}"))
        if not findings:
            return []
        severity = max((self.severities.get(k, self.severity) for k, _ in findings), key=lambda s: s.rank)
        messages = list(dict.fromkeys(message for _, message in findings))
        return [self.violation("; ".join(messages), severity=severity)]

    def evaluate(self, action: Action, context: ActionContext) -> List[PolicyViolation]:
        if action.tool_name not in self.tools:
            return []
        if self.arg not in action.args:
            return [
                self.violation(
                    f"tool {action.tool_name!r} called without its SQL argument {self.arg!r}",
                    severity=self.unparseable_severity,
                )
            ]
        return self.check_sql(action.args[self.arg])
