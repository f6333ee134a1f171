"""SQL governance decided on parsed statements, never on substrings; default deny.

Agent OS's own SQL check is a regex over the raw text: it misses ``DELETE/**/FROM t`` and blocks
``SELECT 'DROP TABLE users'``. :class:`SQLPolicy` reads the text into statements with a real
parser and places what each statement, call and body *does* in the closed set of effects of
``effects`` (including statements nested in CTEs, MERGE branches, routine, trigger and ``DO``
bodies: a ``REPLACE`` counts as a ``DELETE``), so comments, casing, whitespace, string literals
and identifiers such as ``dropped_at`` cannot fool it. A construct no effect row places is
``unknown`` and blocked, with the opt-in that allows it (``allow_functions``,
``allow_statements``); whatever cannot be read, or runs SQL that cannot be known in advance, is
blocked too (fail closed).

Which parser reads the text depends on the ``dialect``:

* ``"postgres"``: PostgreSQL's own parser (libpg_query via ``pglast``), which reads everything
  the server does (dollar quoting, ``NOTIFY``, PL/pgSQL bodies).
* any other sqlglot dialect (``"mysql"``, ``"mariadb"``, ``"sqlite"``, ``"tsql"``, ...): sqlglot,
  with MySQL-family text prepared as the server sees it (``DELIMITER``, ``/*! */``, ``/*M! */``).
* none (the default): the database is unknown, so the text must be safe whichever common
  database runs it: it is read by sqlglot's generic reading, by the readings under which
  databases split text differently (comment nesting, backslash escapes, brackets, MySQL's
  executable comments) and by PostgreSQL's parser, and counts as everything any of them finds.
  Text sqlglot's generic reading cannot parse is blocked with a reason naming the dialects
  that can read it.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from enum import Enum
from typing import Any, Dict, FrozenSet, Iterable, List, Mapping, NamedTuple, Optional, Sequence, Tuple, Union

import sqlglot
from sqlglot.errors import SqlglotError

from ..actions import Action, ActionContext
from ..arguments import string_leaves, tool_key
from ..policies import CONFIGURATION_CHANGES, Policy
from ..violations import GovernanceConfigError, PolicyViolation, Severity
from .bounded import ReadingBudget, ReadingFailed, ReadingTimedOut, over_budget, read_in_worker, warm_reading_worker
from .effects import EMPTY_SQL, SQL_KEYWORDS, SQLAnalysis, SQLStatement, Unknown
from .generic import any_in, read_generic
from .postgres import read_postgres
from .schema import CatalogUnreadable, open_schema

__all__ = [
    "SQLPolicy",
    "SQLAnalysis",
    "SQLStatement",
    "analyze_sql",
    "SQL_KEYWORDS",
    "DEFAULT_SQL_TOOLS",
    "SQL_ARG_NAMES",
]

DEFAULT_SQL_TOOLS = (
    "database_query",
    "database_write",
    "sql_query",
    "execute_sql",
    "run_sql",
    "sql",
    "query_database",
    "run_query",
)
#: Argument names that hold SQL: on a tool the policy names, every one present must be a string
#: of SQL (see ``SQLPolicy.evaluate``).
SQL_ARG_NAMES = ("query", "sql", "statement", "sql_query")
#: Distinct strings one action's arguments may hold for the policy to judge; more is blocked.
MAX_JUDGED_STRINGS = 10_000
#: An argument name that is not read as a string of its own (``arguments.string_leaves``).
_WORD = re.compile(r"\w+")
#: A string with none of these cannot read as a statement (every statement starts with a word).
_HAS_LETTER = re.compile(r"[A-Za-z]")
#: The databases' own readings of a string pasted into SQL, when no dialect is named and the
#: generic reading cannot parse it (``--'`` ends a line comment in SQLite, not in MySQL).
_PASTED_READINGS = ("sqlite", "postgres", "mysql")
_POSTGRES = frozenset({"postgres", "postgresql"})
#: Dialects offered in the hint when the generic reading cannot parse a text.
_HINT_DIALECTS = ("postgres", "mysql", "sqlite", "tsql")


def analyze_sql(query: str, dialect: Optional[str] = None) -> SQLAnalysis:
    """Read ``query`` into statements and name the kinds each contains (see the module doc).

    ``.error`` is set when the text could not be read, ``.unverifiable`` when it was read but
    runs SQL that cannot be known in advance.

    >>> analyze_sql("SELECT 'DROP TABLE users'").kinds == {"SELECT"}
    True
    >>> sorted(analyze_sql("SELECT 1; DELETE/**/FROM t").kinds)
    ['DELETE', 'SELECT']
    >>> analyze_sql("SELEC * FRM").error.startswith("unparseable SQL")
    True
    >>> sorted(analyze_sql("SELECT 1 /* /* */; DROP TABLE t; -- */").kinds)
    ['DROP', 'SELECT']
    >>> sorted(analyze_sql("INSERT OR REPLACE INTO t SELECT * FROM u", "sqlite").kinds)
    ['DELETE', 'INSERT', 'REPLACE', 'SELECT']
    """
    try:
        return _bounded_reading(query, _dialect_name(dialect), DEFAULT_READING_BUDGET, cached=False).shown(query)
    except ReadingTimedOut as err:
        return _timed_out(err)


class _Reading(NamedTuple):
    """An analysis, and whether its error is the generic reading's failure on a text no dialect
    was named for: shown to people, that error names the dialects that can read the text
    (:func:`_dialect_hint`). The hint costs four more parses, so it is only written where the
    error is shown, never for text that is then dismissed as not SQL."""

    analysis: SQLAnalysis
    hint_wanted: bool = False

    def shown(self, query: str) -> SQLAnalysis:
        """The analysis as people see it: with the hint, when it wants one."""
        if not self.hint_wanted:
            return self.analysis
        return SQLAnalysis((), f"{self.analysis.error}; {_dialect_hint(query)}")


def _dialect_name(dialect: Optional[str]) -> Optional[str]:
    """The dialect's name in lower case; PostgreSQL's two names are one (one reading, one
    cache entry)."""
    name = dialect.lower() if isinstance(dialect, str) else dialect
    return "postgres" if name in _POSTGRES else name


def _read(query: str, name: Optional[str]) -> _Reading:
    """:func:`analyze_sql` of a normalised dialect name, without writing the hint."""
    if name == "postgres":  # text that is only comments to the named database runs nothing: allowed
        return _Reading(read_postgres(query))
    if name is not None:
        return _Reading(read_generic(query, name))
    analysis = read_generic(query, None)
    if analysis.error is not None:
        return _Reading(analysis, hint_wanted=True)
    if analysis.unverifiable is not None:
        return _Reading(analysis)
    upper = query.upper()  # one copy for both tests below
    readings = _other_readings(query, upper)
    postgres_may_differ = _postgres_may_differ(query, upper)
    if not readings and not postgres_may_differ:
        # The usual text: the generic reading is the only one, its analysis the answer as it is.
        return _Reading(analysis if analysis.statements else SQLAnalysis((), EMPTY_SQL))
    statements = list(analysis.statements)
    for reading in readings:
        other = read_generic(query, reading)
        if other.problem is not None:
            return _Reading(other)
        statements.extend(s for s in other.statements if s not in statements)
    if postgres_may_differ:
        postgres = read_postgres(query)
        if postgres.unverifiable is not None:
            return _Reading(postgres)
        if postgres.error is None:  # PostgreSQL rejecting the text is harmless there
            statements.extend(s for s in postgres.statements if s not in statements)
    if not statements:
        return _Reading(SQLAnalysis((), EMPTY_SQL))
    return _Reading(SQLAnalysis(tuple(statements)))


#: What makes PostgreSQL read a text differently from sqlglot's generic reading: dollar quoting,
#: E'' escapes, a CR ending a -- comment, and the bodies only its parser can read. An E'' string
#: starts a token: after a letter, ``_`` or a non-ASCII character the E ends an identifier
#: (``'Seattle'``, ``name'``), which PostgreSQL reads as the generic reading does. After a digit it
#: still counts (PostgreSQL before 15 reads ``1e'x'`` as ``1`` and ``e'x'``).
_POSTGRES_MARKS = re.compile(
    r"\$|\r|(?<![A-Za-z_\u0080-\U0010ffff])[eE]'|\b(?:DO|FUNCTION|PROCEDURE|TRIGGER|RULE|PREPARE|EXECUTE)\b",
    re.IGNORECASE,
)


#: :data:`_POSTGRES_MARKS` for ASCII text in upper case: the same matches (ASCII letters are the
#: only characters ``upper`` changes, and ``IGNORECASE`` matches exactly their two cases), found
#: sooner: without ``IGNORECASE`` and a look-behind in one alternation, the regex engine skips to
#: the positions where a match can start.
_POSTGRES_E_QUOTE_UPPER = re.compile(r"(?<![A-Z_])E'")
_POSTGRES_WORDS = ("DO", "FUNCTION", "PROCEDURE", "TRIGGER", "RULE", "PREPARE", "EXECUTE")
#: The words as whole words: searched only in text holding one of them (a substring search each
#: is a fraction of the regex's cost, which tries every position).
_POSTGRES_WORDS_UPPER = re.compile(rf"\b(?:{'|'.join(_POSTGRES_WORDS)})\b")


def _postgres_may_differ(query: str, upper: str) -> bool:
    """Whether the PostgreSQL reading can find something the generic reading does not; when the
    text has none of these, both read the same tokens into the same statements. ``upper`` is
    ``query.upper()``.

    A substring test is far cheaper per character than a regex search, which tries every position:
    the regexes run only on text the substring tests found a mark in, and the words are tested
    one by one (:func:`any_in`), not in a generator."""
    if not query.isascii():
        return _POSTGRES_MARKS.search(query) is not None
    if "$" in query or "\r" in query:
        return True
    if "E'" in upper and _POSTGRES_E_QUOTE_UPPER.search(upper) is not None:
        return True
    return any_in(upper, _POSTGRES_WORDS) and _POSTGRES_WORDS_UPPER.search(upper) is not None


@functools.lru_cache(maxsize=64)
def _dialect_hint(query: str) -> str:
    """Which dialects read a text the generic reading cannot (four parses: written only when
    the error is shown, and kept for the few texts an agent repeats; 64 entries, as many as
    the cache of long texts, so the memory held stays bounded)."""
    readers = [d for d in _HINT_DIALECTS if _read(query, d).analysis.error is None]
    if readers:
        named = ", ".join(f"dialect={d!r}" for d in readers)
        return f"it reads as SQL with {named}: name the dialect your database speaks (SQLPolicy(dialect=...))"
    return "no dialect reads it either; if your database does, name it with SQLPolicy(dialect=...)"


class _FlatCommentsDialect(sqlglot.Dialect):
    """sqlglot's default dialect reads ``/* /* */`` as an unclosed nested comment (as Postgres
    does); SQLite and MySQL close it at the first ``*/``. This is the default dialect with the
    SQLite/MySQL reading, used as a second reading when the target dialect is not known."""

    class Tokenizer(sqlglot.tokens.Tokenizer):
        NESTED_COMMENTS = False


_DASH_DASH_WITHOUT_SPACE = re.compile(r"--[^\s]")


def _other_readings(query: str, upper: str) -> List[Any]:
    """The readings under which ``query`` may split into different statements than under the
    generic one, when the database is not known. Each is read only when the text has what makes
    them differ, so ordinary queries are parsed once by sqlglot.

    * ``/*`` -- Postgres nests block comments, SQLite and MySQL close them at the first ``*/``.
    * a backslash, ``#``, a backtick, ``--`` not followed by a space, an executable comment or a
      ``DELIMITER`` line -- MySQL: ``\\'`` escapes a quote, ``#`` starts a comment, ``--1`` is
      minus minus one, ``/*! */`` is code.
    * ``[`` -- SQLite and T-SQL: ``[...]`` is a quoted identifier.

    ``upper`` is ``query.upper()``. One-character tests (``memchr``, a fraction of a longer
    substring's test) come first, and the regex runs only on text with ``--`` (see
    :func:`_postgres_may_differ` for what each costs); an executable comment starts with
    ``/*``, so it is looked for only in text that has one.
    """
    readings: List[Any] = []
    block_comment = "/" in query and "/*" in query
    if block_comment:
        readings.append(_FlatCommentsDialect)
    if (
        "\\" in query
        or "#" in query
        or "`" in query
        or (block_comment and ("/*!" in query or "/*M!" in query))
        or ("-" in query and "--" in query and _DASH_DASH_WITHOUT_SPACE.search(query) is not None)
        or "DELIMITER" in upper
    ):
        readings.append("mariadb")
    if "[" in query:
        readings.append("sqlite")
    return readings


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
            return (
                f"SQL is not valid Unicode text ({err.reason} at position {err.start}); "
                "decode the bytes properly before sending"
            )
    return None


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


#: Texts longer than this go to a small cache of their own, so a few long queries repeated by an
#: agent stay cheap while the memory the caches hold stays bounded (64 x max_query_chars at most).
_SHORT_QUERY_CHARS = 10_000


#: The reading budget of a policy that names none (see :mod:`.bounded`).
DEFAULT_READING_BUDGET = ReadingBudget()


def _checked_analysis(query: str, dialect: Optional[str], budget: ReadingBudget = DEFAULT_READING_BUDGET) -> _Reading:
    """The reading of a text under ``budget``, or why it is not text a database reads as the
    parser does, or why it was not read (over the budget: unverifiable, so it blocks on every
    path). ``ReadingTimedOut`` when the worker reading it missed the deadline (not cached: the
    next check of the same text tries again)."""
    if "\x00" in query or not query.isascii():  # else _not_sql_text has nothing to say
        junk = _not_sql_text(query)
        if junk is not None:
            return _Reading(SQLAnalysis((), junk))
    problem = over_budget(query, budget)
    if problem is not None:
        return _Reading(SQLAnalysis((), unverifiable=problem))
    warm_reading_worker()  # in every process that reads, before its first long text
    if len(query) <= budget.max_inline_chars:
        return _read(query, dialect)
    try:
        return read_in_worker(_read_shown, (query, dialect), len(query), budget.deadline_s)
    except ReadingFailed as err:
        return _Reading(SQLAnalysis((), unverifiable=f"the text could not be read to the end ({err})"))


def _read_shown(query: str, dialect: Optional[str]) -> _Reading:
    """:func:`_read` with the hint already written where it is wanted: what a worker process
    answers (one round trip, and the hint's extra parses under the same deadline)."""
    reading = _read(query, dialect)
    return _Reading(reading.shown(query)) if reading.hint_wanted else reading


@functools.lru_cache(maxsize=8192)
def _shared_analysis(query: str, dialect: Optional[str], budget: ReadingBudget = DEFAULT_READING_BUDGET) -> _Reading:
    """One parse per (text, dialect, budget) for every policy in the process: N SQL policies on
    one tool share it (the analysis names every statement's kinds; each policy applies its own
    lists)."""
    return _checked_analysis(query, dialect, budget)


@functools.lru_cache(maxsize=64)
def _shared_long_analysis(
    query: str, dialect: Optional[str], budget: ReadingBudget = DEFAULT_READING_BUDGET
) -> _Reading:
    """The same for texts over ``_SHORT_QUERY_CHARS`` characters, in few entries."""
    return _checked_analysis(query, dialect, budget)


def _bounded_reading(query: str, dialect: Optional[str], budget: ReadingBudget, cached: bool) -> _Reading:
    """The reading of ``query`` under ``budget`` (from the shared caches when ``cached``).

    ``ReadingTimedOut`` when it was not read within the deadline: a failure to judge, not a
    judgement, so it is not cached here, and in ``evaluate`` it reaches the kernel, which blocks
    the action and does not remember the answer (the same text may be read in time later)."""
    if not cached:
        return _checked_analysis(query, dialect, budget)
    if len(query) <= _SHORT_QUERY_CHARS:
        return _shared_analysis(query, dialect, budget)
    return _shared_long_analysis(query, dialect, budget)


def _timed_out(err: ReadingTimedOut) -> SQLAnalysis:
    return SQLAnalysis((), unverifiable=str(err))


class _Role(str, Enum):
    """What a tool is to one :class:`SQLPolicy`, decided once per tool name (:meth:`SQLPolicy._role`)."""

    #: Named in ``tools=``: its SQL arguments must be SQL and are judged whole, its other strings too.
    SQL_TOOL = "sql tool"
    #: Not named, with ``detect=True``: every string of its arguments that reads as SQL is judged.
    DETECTED = "detected"
    #: Declared in ``not_sql_tools=`` (with ``detect=True``): not judged, and every decision notes it.
    DECLARED_NOT_SQL = "declared not sql"
    #: Not named, with ``detect=False``: not this policy's business.
    NOT_JUDGED = "not judged"


#: Tool names whose role a policy keeps (agents can invent names: the rest are worked out per call).
_MAX_ROLES = 1024


def _tool_key(name: str) -> str:
    """Tool names compared as people read them (:func:`.arguments.tool_key`): ``Database-Query``,
    ``database_query`` with a Cyrillic ``а`` or a zero-width space, and fullwidth letters are one
    tool; ``database_query_v2`` is another."""
    return tool_key(name)


@functools.lru_cache(maxsize=4096)
def _not_sql_key(name: str) -> str:
    """The name a tool declared not-SQL is matched by: Unicode NFKC (the form Python itself gives
    identifiers, so ``ｓｅｎｄ_message`` is ``send_message``) with invisible characters removed,
    and nothing else folded. :func:`_tool_key` folds more (case, separators, look-alike letters)
    because there folding makes more names judged; here it would make more names *skip* the
    check, so a name that only looks like a declared one (a Cyrillic letter, another case, a
    ``_v2`` suffix) is another tool and stays judged.

    >>> _not_sql_key("send\u200b_message") == _not_sql_key("ｓｅｎｄ_message") == "send_message"
    True
    >>> _not_sql_key("sеnd_message") == "send_message"  # a Cyrillic е
    False
    """
    text = unicodedata.normalize("NFKC", str.__str__(name))
    return "".join(c for c in text if unicodedata.category(c) not in ("Cf", "Cc"))


def _not_sql_tools(values: Any, sql_tools: Sequence[str]) -> Tuple[str, ...]:
    """``not_sql_tools=``, checked: a list of tool names, none of them a tool the policy judges
    as SQL (``tools=``, compared as :func:`_tool_key` compares them, so ``Run-SQL`` conflicts with
    ``run_sql``)."""
    if values is None:
        return ()
    if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
        raise TypeError(f"not_sql_tools must be a list of tool names such as ['send_message'], got {values!r}")
    sql_tool_by_key = {_tool_key(t): t for t in sql_tools}
    names = tuple(values)
    for value in names:
        if not isinstance(value, str) or not _not_sql_key(value).strip():
            raise TypeError(f"not_sql_tools entries must be non-empty tool names (str), got {value!r}")
        clash = sql_tool_by_key.get(_tool_key(value))
        if clash is not None:
            raise GovernanceConfigError(
                f"tool {value!r} is in not_sql_tools= (it runs no SQL) and, as {clash!r}, in tools= (it runs SQL; "
                "tools= is DEFAULT_SQL_TOOLS unless given): a tool is one or the other, remove it from one list"
            )
    return names


class SQLPolicy(Policy):
    """Deny (or allow only) kinds of SQL statement, decided on the parsed statements.

    Applies to actions whose tool is in ``tools`` (names compared by ``tool_key``: case,
    separators, invisible characters and look-alike letters folded); their SQL is every argument
    named ``arg``, ``query``, ``sql``, ``statement`` or ``sql_query``. Every other string of the
    arguments, at any depth, is judged too (:meth:`evaluate`), and with ``detect=True`` (the
    default) so is every string of *other* tools' arguments that reads as SQL, so a tool the list
    forgot is not a way around it. Such text is judged as the statement it reads as, fail
    closed: a search for "delete my account" reads as a ``DELETE`` and is judged as one, while
    prose that does not parse ("delete my account please") is left alone. To refuse unknown tools outright, add a
    ``ToolAllowListPolicy``. ``not_sql_tools=[...]`` names tools the user declares run no SQL
    (a statement of trust about the tool): their arguments are not judged as SQL, matched by the
    exact name after NFKC with invisible characters removed (a look-alike or suffixed name stays
    judged), and every decision about them notes the skipped check (:meth:`note_for`). What each
    statement counts as (``REPLACE`` as ``DELETE``, ...) is the table of effects in ``effects``;
    the reason names the effect that was denied. A statement, call or body no row places is
    unknown and blocked at ``unparseable_severity``;
    ``allow_functions=[...]`` places calls of (and ``CALL``s to) the routines named,
    ``allow_statements=[...]`` the constructs named as the reasons name them, and what they
    place still counts as its keyword for ``deny``/``allow``. ``database=`` (a SQLite path, or the
    guard's own connection to SQLite, PostgreSQL or MariaDB) makes each statement also count as
    what it sets off there: triggers, rules, cascades and routine bodies (``schema``).

    One action yields at most one violation, at the highest severity among what it found.
    ``severities`` sets a severity per keyword (default: the policy's ``severity``); SQL that
    does not parse, cannot be verified, is not a string, or is longer than ``max_query_chars``
    is blocked at ``unparseable_severity``. Analyses are cached per (text, dialect) in caches of
    a fixed size shared by every policy; ``cache=False`` makes this policy parse every text afresh,
    and the kernel does not remember its answers either (it is then not pure).

    >>> policy = SQLPolicy(deny=["DROP", "DELETE"])
    >>> ctx = ActionContext()
    >>> policy.evaluate(Action.sql("SELECT * FROM users WHERE note = 'DROP TABLE users'"), ctx)
    []
    >>> [v.description for v in policy.evaluate(Action.sql("select 1; DROP/**/TABLE users"), ctx)]
    ['DROP statement denied: DROP/**/TABLE users']
    >>> SQLPolicy(deny=["DELETE"], dialect="mysql").check_sql(  # doctest: +NORMALIZE_WHITESPACE
    ...     "REPLACE INTO users VALUES (1)"
    ... )[0].description
    'DELETE statement denied (REPLACE deletes the conflicting row before inserting: counts as DELETE):
     REPLACE INTO users VALUES (1)'
    >>> SQLPolicy(deny=["DROP"], dialect="postgres").check_sql("SELECT lo_unlink(42)")[0].description[:64]
    'unknown effect: function or routine lo_unlink() is not one the g'
    >>> SQLPolicy(deny=["DROP"], dialect="postgres", allow_functions=["lo_unlink"]).check_sql("SELECT lo_unlink(42)")
    []
    >>> read_only = SQLPolicy(allow=["SELECT"])
    >>> read_only.evaluate(Action.sql("UPDATE users SET name = 'x'"), ctx)[0].description
    "UPDATE statement not in allow-list ['SELECT']: UPDATE users SET name = 'x'"
    """

    runs_inline = True
    #: Pure (:attr:`.policies.Policy.pure`) without ``database=``: the answer depends on the
    #: text and this policy's lists only. With a database it is not: what a statement sets off
    #: there (triggers, rules) can change between two checks of the same text.
    pure = True

    def __init__(
        self,
        deny: Optional[Iterable[str]] = ("DROP", "DELETE", "TRUNCATE"),
        *,
        allow: Optional[Iterable[str]] = None,
        tools: Sequence[str] = DEFAULT_SQL_TOOLS,
        arg: str = "query",
        dialect: Optional[str] = None,
        detect: bool = True,
        severity: Union[Severity, str] = Severity.CRITICAL,
        severities: Optional[Mapping[str, Union[Severity, str]]] = None,
        unparseable_severity: Union[Severity, str] = Severity.HIGH,
        max_query_chars: int = 100_000,
        cache: bool = True,
        allow_functions: Optional[Iterable[str]] = None,
        allow_statements: Optional[Iterable[str]] = None,
        database: Any = None,
        not_sql_tools: Optional[Iterable[str]] = None,
        reading_budget: ReadingBudget = DEFAULT_READING_BUDGET,
        **kwargs: Any,
    ) -> None:
        super().__init__(severity=severity, **kwargs)
        self.deny = _keywords("deny", deny) or frozenset()
        self.allow = _keywords("allow", allow)
        self._allow_list = sorted(self.allow) if self.allow is not None else None  # as reasons show it
        if not self.deny and self.allow is None:
            raise GovernanceConfigError("SQLPolicy needs deny=[...] or allow=[...]; with neither it checks nothing")
        if isinstance(tools, str) or not all(isinstance(t, str) and t for t in tools):
            raise TypeError(f"tools must be a list of tool names, got {tools!r}")
        self.tools = frozenset(tools)
        self._tool_keys = frozenset(_tool_key(t) for t in tools)
        self.not_sql_tools = frozenset(_not_sql_tools(not_sql_tools, sorted(self.tools)))
        self._not_sql_keys = frozenset(_not_sql_key(t) for t in self.not_sql_tools)
        if not isinstance(arg, str) or not arg:
            raise TypeError(f"arg must be the name of the argument holding the SQL, got {arg!r}")
        self.arg = arg
        self.dialect = _dialect(dialect)
        self.detect = bool(detect)
        #: Each tool name's role, with the configuration it was decided under (under the key None):
        #: a changed list or ``detect`` decides them again.
        self._roles: Dict[Optional[str], Any] = {}
        self._detect_args = tuple(dict.fromkeys((arg,) + SQL_ARG_NAMES))
        #: The SQL names :func:`_only_whole_sql` takes as judged whole (word characters only).
        self._whole_args = frozenset(name for name in self._detect_args if _WORD.fullmatch(name))
        self.severities: Dict[str, Severity] = {}
        for keyword, sev in (severities or {}).items():
            (key,) = _keywords("severities", [keyword]) or ()
            self.severities[key] = Severity.parse(sev)
        self.unparseable_severity = Severity.parse(unparseable_severity)
        if isinstance(max_query_chars, bool) or not isinstance(max_query_chars, int) or max_query_chars < 1:
            raise GovernanceConfigError(f"max_query_chars must be a positive int, got {max_query_chars!r}")
        self.max_query_chars = max_query_chars
        if not isinstance(reading_budget, ReadingBudget):
            raise TypeError(
                f"reading_budget must be a ReadingBudget (from agentlightning.contrib.kernel.agentos.sql), got "
                f"{type(reading_budget).__name__}"
            )
        self.reading_budget = reading_budget
        warm_reading_worker()  # started now, so the first long text does not wait for it
        if not isinstance(cache, bool):
            raise TypeError(
                f"cache must be True or False (whether this policy uses the shared analysis cache), got {cache!r}"
            )
        self.cache = cache
        self.allow_functions = _names("allow_functions", allow_functions, str.lower)
        self.allow_statements = _names("allow_statements", allow_statements, str.upper)
        self._schema = open_schema(database, self.dialect) if database is not None else None
        if self._schema is not None or not self.cache:
            # With a database, what a statement sets off can change between two checks of one
            # text; with cache=False the user asked for every text to be judged afresh.
            self.pure = False

    def _opted_in(self, unknown: Unknown) -> bool:
        """Whether this policy's opt-ins place ``unknown``: a function or routine by its name
        (with or without its schema), a statement by its name as the reason shows it."""
        if unknown.category == "function":
            return unknown.name in self.allow_functions or unknown.name.rsplit(".", 1)[-1] in self.allow_functions
        return " ".join(unknown.name.upper().split()) in self.allow_statements

    def applies_to(self, tool_name: str) -> bool:
        return self._role(tool_name) is not _Role.NOT_JUDGED

    def _role(self, tool_name: str) -> _Role:
        """What ``tool_name`` is to this policy (:class:`_Role`): named in ``tools`` (compared by
        ``tool_key``), declared not to run SQL (compared as :func:`_not_sql_key` says: a look-alike
        of a declared name is another tool), or neither, then judged by detection or not at all.
        Decided once per tool name while the policy's configuration stays as it is.

        >>> policy = SQLPolicy(tools=["warehouse_query"], not_sql_tools=["send_message"])
        >>> [policy._role(t).name for t in ("Warehouse-Query", "send_message", "database_query")]
        ['SQL_TOOL', 'DECLARED_NOT_SQL', 'DETECTED']
        """
        roles = self._roles
        if roles.get(None) != CONFIGURATION_CHANGES[0]:
            roles.clear()
            roles[None] = CONFIGURATION_CHANGES[0]
        role = roles.get(tool_name)
        if role is None:
            if tool_name in self.tools or _tool_key(tool_name) in self._tool_keys:
                role = _Role.SQL_TOOL
            elif not self.detect:
                role = _Role.NOT_JUDGED
            elif self._not_sql_keys and _not_sql_key(tool_name) in self._not_sql_keys:
                role = _Role.DECLARED_NOT_SQL
            else:
                role = _Role.DETECTED
            if type(tool_name) is str and len(roles) <= _MAX_ROLES:
                roles[tool_name] = role
        return role

    def note_for(self, tool_name: str) -> Optional[str]:
        """On a tool declared not-SQL, that its arguments were not judged as SQL, and why (the
        kernel records it with every decision about the tool, so an auditor sees the skip). With
        ``detect=False`` no unnamed tool is judged in the first place: nothing is skipped."""
        if self._role(tool_name) is not _Role.DECLARED_NOT_SQL:
            return None
        return (
            f"SQL check skipped: tool {tool_name!r} is declared not to run SQL "
            f"({self.name}(not_sql_tools=[...])), so its arguments were not judged as SQL"
        )

    def _analyze(self, query: str, dialect: Optional[str] = None) -> _Reading:
        """The reading of ``query`` in this policy's dialect (or ``dialect``), under its budget."""
        if type(query) is not str:  # the cache is keyed on plain text: a subclass's __eq__ cannot hit it
            query = str.__str__(query)
        return _bounded_reading(query, dialect or self.dialect, self.reading_budget, self.cache)

    def check_sql(self, query: Any) -> List[PolicyViolation]:
        """Decide on SQL text directly (for notebooks and other frameworks)."""
        if isinstance(query, str) and type(query) is not str:
            query = str.__str__(query)  # judge the text it holds, not what its methods say
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
        try:
            analysis = self._analyze(query).shown(query)
        except ReadingTimedOut as err:
            analysis = _timed_out(err)
        return self._judge(analysis)

    def _judge(self, analysis: SQLAnalysis, prefix: str = "") -> List[PolicyViolation]:
        """At most one violation for ``analysis``, its description starting with ``prefix``."""
        if analysis.error is not None:
            return [self.violation(f"{prefix}{analysis.error}", severity=self.unparseable_severity)]
        if analysis.unverifiable is not None:
            return [
                self.violation(f"{prefix}cannot verify: {analysis.unverifiable}", severity=self.unparseable_severity)
            ]
        if self._schema is None and self.allow is None:
            # Nothing the statements set off, no allow-list: a statement adds a finding only by
            # an unknown construct or a denied kind. Told first, the usual answer costs no list.
            deny = self.deny
            for statement in analysis.statements:
                if statement.unknown or not deny.isdisjoint(statement.kinds):
                    break
            else:
                return []
        findings: List[Tuple[str, str]] = []  # (keyword, message)
        try:
            statements = self._with_triggers(analysis.statements)
        except CatalogUnreadable as err:  # what the statements set off in the database is not known
            return [
                self.violation(
                    f"{prefix}{err}: what the statements set off there (triggers, rules, cascades, routines) is not "
                    "known; fix the connection or the guard's privileges, or drop database=",
                    severity=self.unparseable_severity,
                )
            ]
        for statement in statements:
            for unknown in statement.unknown:
                if not self._opted_in(unknown):
                    findings.append(("", f"{unknown.reason()}: {statement.text}"))
            for kind in sorted(statement.kinds & self.deny):
                why = statement.why(kind)
                reason = f" ({why})" if why else ""
                findings.append((kind, f"{kind} statement denied{reason}: {statement.text}"))
            if self.allow is not None:
                for kind in sorted(statement.kinds - self.allow):
                    findings.append((kind, f"{kind} statement not in allow-list {self._allow_list}: {statement.text}"))
        if not findings:
            return []
        severity = max(
            (self.severities.get(k, self.severity) if k else self.unparseable_severity for k, _ in findings),
            key=lambda s: s.rank,
        )
        messages = list(dict.fromkeys(message for _, message in findings))
        return [self.violation(prefix + "; ".join(messages), severity=severity)]

    def _with_triggers(self, statements: Sequence[SQLStatement]) -> Sequence[SQLStatement]:
        """With ``database=``: each statement also counts as what it sets off in the database
        (triggers, rules, cascades, routine bodies; read from its catalog, kept current)."""
        if self._schema is None:
            return statements
        return self._schema.expand(statements)

    def evaluate(self, action: Action, context: ActionContext) -> List[PolicyViolation]:
        """Every argument judged. On a tool this policy names, each SQL-named argument present
        (``arg``, ``query``, ``sql``, ``statement``, ``sql_query``) must be a string of SQL and is
        judged whole. Every other string of the arguments, at any depth, on this tool and (with
        ``detect=True``) on any other, is judged as SQL when it reads as SQL, and as the
        statements it would add if pasted into SQL (see :meth:`_detected`). One violation at
        most, naming everything found."""
        args = action.args
        role = self._role(action.tool_name)
        if len(args) == 1 and role is _Role.SQL_TOOL:
            # The usual call: a listed tool with one plain string under one of its SQL names,
            # judged whole and nothing else to judge (what the general path below finds for it).
            for name in args:
                value = args[name]
                start = value[:1] if type(value) is str else None
                if name in self._whole_args and start is not None and not start.isspace() and start not in ("[", "{"):
                    if len(value) > self.max_query_chars:
                        found = self.check_sql(value)
                    else:  # check_sql of plain text within the limit
                        reading = self._analyze(value)
                        found = self._judge(reading.shown(value) if reading.hint_wanted else reading.analysis)
                    return [self.violation(v.description, severity=v.severity) for v in found] if found else []
        sql_args: Tuple[str, ...] = ()
        found: List[PolicyViolation] = []
        listed = role is _Role.SQL_TOOL
        if listed:
            sql_args = tuple(n for n in self._detect_args if n in action.args)
            if not sql_args:
                return [
                    self.violation(
                        f"tool {action.tool_name!r} called without its SQL argument {self.arg!r}",
                        severity=self.unparseable_severity,
                    )
                ]
            for name in sql_args:
                value = action.args[name]
                prefix = f"argument {name!r}: " if len(sql_args) > 1 else ""
                if not isinstance(value, str):
                    found.append(
                        self.violation(
                            f"{prefix}argument {name!r} must be a string of SQL, got {type(value).__name__}",
                            severity=self.unparseable_severity,
                        )
                    )
                    continue
                for violation in self.check_sql(value):
                    found.append(self.violation(prefix + violation.description, severity=violation.severity))
        elif role is not _Role.DETECTED:
            return []  # a tool the user declared runs no SQL, or one not named without detect=True
        if not _only_whole_sql(action.args, sql_args):
            found.extend(self._detected(action, skip=sql_args, listed=listed))
        if len(found) <= 1:
            return found
        severity = max((v.severity for v in found), key=lambda s: s.rank)
        return [self.violation("; ".join(dict.fromkeys(v.description for v in found)), severity=severity)]

    def _detected(self, action: Action, skip: Sequence[str] = (), listed: bool = False) -> List[PolicyViolation]:
        """Every string of the arguments (at any depth, mapping keys too, bytes decoded, JSON text
        parsed; the SQL arguments named in ``skip`` are judged whole elsewhere) that reads as SQL
        is judged as SQL; text that does not parse is not SQL and is left alone.

        A string with a ``;`` is also read as it would be if a tool pasted it into its SQL: bare
        (``SELECT <text>``) and inside quotes (``'<text>'``, ``"<text>"``), and the statements it
        would add there are judged: a parameter such as ``1; DROP TABLE users`` or
        ``x'; DROP TABLE users; --`` is blocked whether the tool binds its parameters or pastes
        them. On a ``listed`` tool (it runs SQL), a string over ``max_query_chars`` is blocked.
        """
        findings: List[PolicyViolation] = []
        seen = set()
        for leaf in string_leaves(action.args):
            if leaf.source == "str" and leaf.path in skip:
                continue
            if leaf.source == "unreadable":  # what cannot be read to the end cannot be shown harmless
                findings.append(
                    self.violation(
                        f"argument {leaf.path!r} of tool {action.tool_name!r} cannot be judged: {leaf.text}; "
                        "pass it flatter (or declare a tool that runs no SQL in not_sql_tools=[...])",
                        severity=self.unparseable_severity,
                    )
                )
                continue
            readings = [(leaf.text, "")]
            if ";" in leaf.text:
                readings.append((f"SELECT {leaf.text}", ", pasted into SQL,"))
                for quote in ("'", '"'):
                    if quote in leaf.text or "\\" in leaf.text:
                        readings.append(
                            (f"SELECT {quote}{leaf.text}{quote}", f", pasted into SQL inside {quote}...{quote},")
                        )
            for text, pasted in readings:
                if text in seen or not _HAS_LETTER.search(text):
                    continue
                seen.add(text)
                if len(seen) > MAX_JUDGED_STRINGS:
                    return [
                        self.violation(
                            f"the arguments of tool {action.tool_name!r} hold over {MAX_JUDGED_STRINGS:,} distinct "
                            "strings to judge; pass fewer per call",
                            severity=self.unparseable_severity,
                        )
                    ]
                prefix = f"SQL in argument {leaf.path!r}{pasted} of tool {action.tool_name!r}: "
                if len(text) > self.max_query_chars:  # not read, so not shown harmless: unknown
                    hint = "" if listed else "; declare a tool that runs no SQL in not_sql_tools=[...]"
                    findings.append(
                        self.violation(
                            f"{prefix}{len(text):,} characters, over max_query_chars={self.max_query_chars:,}: "
                            f"not read to the end; pass less per call or raise max_query_chars{hint}",
                            severity=self.unparseable_severity,
                        )
                    )
                    continue
                analyses = [self._analyze(text).analysis]
                if pasted and analyses[0].error is not None and self.dialect is None:
                    # Unknown database: pasted text may be read by one database and not another.
                    analyses = [self._analyze(text, dialect).shown(text) for dialect in _PASTED_READINGS]
                for analysis in analyses:
                    if analysis.error is not None:  # not SQL (or not text at all): not this policy's business
                        continue
                    if pasted and analysis.unverifiable is None:  # only what pasting adds after the SELECT
                        analysis = SQLAnalysis(analysis.statements[1:])
                    findings.extend(self._judge(analysis, prefix=prefix))
        return findings


def _only_whole_sql(args: Mapping[str, Any], sql_args: Sequence[str]) -> bool:
    """Whether ``args`` hold nothing but the SQL arguments judged whole, as plain text that
    :func:`.arguments.string_leaves` yields as itself and nothing under it (not JSON-looking, no
    leading space) under a name of word characters (any other name is a string to judge too):
    then :meth:`SQLPolicy._detected` has no string left to judge."""
    if len(args) != len(sql_args):
        return False
    for name in sql_args:
        value = args[name]
        if type(value) is not str or value[:1].isspace() or value[:1] in ("[", "{") or not _WORD.fullmatch(name):
            return False
    return True


def _names(option: str, values: Optional[Iterable[str]], case: Any) -> FrozenSet[str]:
    """An opt-in list (``allow_functions``/``allow_statements``), checked and normalised."""
    if values is None:
        return frozenset()
    if isinstance(values, str):
        raise TypeError(f"{option} must be a list of names such as [{values!r}], not a single str")
    result = set()
    for value in values:
        if not isinstance(value, str) or not value.strip():
            raise TypeError(f"{option} entries must be non-empty str, got {type(value).__name__}: {value!r}")
        result.add(" ".join(case(value).split()))
    return frozenset(result)


def _dialect(dialect: Optional[str]) -> Optional[str]:
    """The dialect name a policy keeps, checked now so a typo fails at construction."""
    if dialect is None:
        return None
    if not isinstance(dialect, str):
        raise TypeError(f"dialect must be a dialect name such as 'postgres', 'mysql' or 'sqlite', got {dialect!r}")
    name = _dialect_name(dialect.strip())
    if name == "postgres" or name == "mariadb":
        return name
    try:
        sqlglot.Dialect.get_or_raise(name)
    except (ValueError, SqlglotError) as err:
        raise GovernanceConfigError(
            f"unknown SQL dialect {dialect!r} ({err}); "
            "use 'postgres', 'mysql', 'mariadb', 'sqlite', 'tsql' or another sqlglot dialect"
        ) from None
    return name
