"""SQL read with sqlglot: its dialects' tokenizers and parsers, one statement at a time.

The text is tokenized once with the dialect's tokenizer (so strings, quoted identifiers and
comments are what that database says they are), split into statements at top-level semicolons
(a ``CREATE TRIGGER/PROCEDURE/FUNCTION/EVENT`` body's ``BEGIN ... END`` keeps its semicolons),
and each statement is parsed on its own. Every node is looked up in the rows of
:mod:`.rules` (by sqlglot node class, or by first word for what sqlglot keeps as a
``Command``): a statement or a function call no row places is ``unknown``.
MySQL-family text is prepared as the client and server would: ``DELIMITER`` lines, and the
executable comments ``/*! ... */`` and MariaDB's ``/*M! ... */`` whose content runs (up to the
assumed newest server version, :data:`ASSUMED_MYSQL_VERSION`).

>>> read_generic("SHOW TABLES LIKE 'drop%'", "mysql").kinds
frozenset({'SHOW'})
>>> sorted(read_generic("REPLACE INTO t VALUES (1)", "mysql").kinds)  # VALUES is a read
['DELETE', 'INSERT', 'REPLACE', 'SELECT']
>>> sorted(read_generic("/*!50000 DROP TABLE t */", "mysql").kinds)
['DROP']
>>> read_generic("SELECT lo_unlink(1)", "mysql").unknown[0].name
'lo_unlink'
"""

from __future__ import annotations

import bisect
import contextvars
import functools
import logging
import operator
import re
import threading
from typing import Any, Dict, List, Optional, Sequence, Set, Tuple

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError
from sqlglot.tokens import Token, TokenType

from . import rules
from .effects import EFFECT_BY_NAME, NESTED_TOO_DEEPLY, KindSet, SQLAnalysis, SQLStatement, Unverifiable, snippet
from .functions import is_known_function, unknown_function_hint

__all__ = ["read_generic", "MYSQL_FAMILY", "prepare_mysql_text", "ASSUMED_MYSQL_VERSION"]

_RUNS = EFFECT_BY_NAME["run a statement"]

#: Tokens that are data (strings, quoted names, numbers): never read as keywords.
_DATA_TOKENS = frozenset(t for name, t in TokenType.__members__.items() if name.endswith("STRING")) | {
    TokenType.IDENTIFIER,
    TokenType.NUMBER,
}
_ROUTINE_WORDS = frozenset({"TRIGGER", "PROCEDURE", "FUNCTION", "EVENT"})
_DYNAMIC_WORDS = frozenset({"PREPARE", "EXECUTE", "EXEC"})
_ENDS_OWN_BLOCK = frozenset({"IF", "LOOP", "WHILE", "REPEAT", "CASE"})
#: SQLite's conflict clauses that keep a statement what its keyword says (``OR REPLACE`` does not).
_PLAIN_CONFLICT = frozenset({"IGNORE", "ABORT", "FAIL", "ROLLBACK"})

#: Dialects in which ``/*! ... */`` (and MariaDB's ``/*M! ... */``) is code, not a comment.
MYSQL_FAMILY = frozenset({"mysql", "mariadb", "doris", "starrocks", "singlestore", "tidb"})

#: The newest server the guard assumes runs MySQL-family text, as the number an executable comment
#: compares against: a server skips ``/*!NNNNN ... */`` and ``/*M!NNNNNN ... */`` whose version is
#: above its own. Five-digit versions are MySQL's (9.9.99 at most: ``/*!99999`` is skipped), six
#: digits MariaDB's (12.99.99). Content gated above these runs on no server released when this
#: was written; a later server would run it, so text using such a gate is read as a comment here
#: (a stated limit, see the docs).
ASSUMED_MYSQL_VERSION = {5: 90999, 6: 129999}

_POLICY_PARSING: contextvars.ContextVar[bool] = contextvars.ContextVar("agentos_sql_policy_parsing", default=False)


class _QuietWhilePolicyParses(logging.Filter):
    """sqlglot logs a WARNING for every statement it keeps as a Command; the reader decides on
    those itself, so their warnings are dropped while it parses (only then)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not _POLICY_PARSING.get()


_QUIET_FILTER = _QuietWhilePolicyParses()


@functools.cache
def _quiet_sqlglot() -> None:
    """Installed on first use (once), not at import: importing this module changes no logger."""
    logging.getLogger("sqlglot").addFilter(_QUIET_FILTER)


_PARSERS = threading.local()


def _dialect_and_parser(dialect: Any) -> Tuple[sqlglot.Dialect, Any, Any]:
    """The dialect, a parser and a tokenizer for it, made once per thread (both keep state while
    they work, so threads do not share them). Building a tokenizer costs more than tokenizing a
    short query; one tokenizer resets itself for every text and returns a new list of tokens,
    so a reader nested in another (a body, a literal) does not disturb the outer one's tokens."""
    cache = getattr(_PARSERS, "cache", None)
    if cache is None:
        cache = _PARSERS.cache = {}
    triple = cache.get(dialect)
    if triple is None:
        instance = sqlglot.Dialect.get_or_raise(dialect)
        triple = cache[dialect] = (instance, instance.parser(), instance.tokenizer())
    return triple


def _ends_transaction(tokens: Sequence[Token]) -> bool:
    """``END``, ``END TRANSACTION`` or ``END WORK`` (SQLite's and PostgreSQL's COMMIT)."""
    return len(tokens) == 1 or (len(tokens) == 2 and _word(tokens[1]) in ("TRANSACTION", "WORK"))


def _word(token: Token) -> str:
    """The keyword a token is, upper case; empty for data (strings, quoted names, numbers)."""
    return "" if token.token_type in _DATA_TOKENS else token.text.upper()


# --------------------------------------------------------------------------- MySQL text


_DELIMITER_LINE = re.compile(r"^[ \t]*DELIMITER[ \t]+(\S+)[ \t]*$", re.IGNORECASE | re.MULTILINE)
_EXECUTABLE_OPEN = re.compile(r"/\*M?!(\d{5,6})?")


def prepare_mysql_text(text: str) -> str:
    """The text a MySQL/MariaDB server runs: ``DELIMITER`` lines (a client command) applied,
    and executable comments opened (their content is code) up to the assumed server version.

    >>> prepare_mysql_text("SELECT 1 /*!50000 , 2 */")
    'SELECT 1          , 2   '
    >>> prepare_mysql_text("SELECT 1 /*!99999 , 2 */")
    'SELECT 1 /*!99999 , 2 */'
    >>> prepare_mysql_text("DELIMITER //\\nCREATE PROCEDURE p() BEGIN DELETE FROM t; END//\\nDELIMITER ;\\nCALL p()")
    '\\nCREATE PROCEDURE p() BEGIN DELETE FROM t; END;\\n\\nCALL p()'
    """
    if "DELIMITER" in text.upper():
        text = _apply_delimiters(text)
    if "/*" in text:
        text = _open_executable_comments(text)
    return text


def _apply_delimiters(text: str) -> str:
    out: List[str] = []
    delimiter, position = ";", 0
    for match in _DELIMITER_LINE.finditer(text):
        chunk = text[position : match.start()]
        out.append(chunk.replace(delimiter, ";") if delimiter != ";" else chunk)
        delimiter, position = match.group(1), match.end()
    chunk = text[position:]
    out.append(chunk.replace(delimiter, ";") if delimiter != ";" else chunk)
    return "".join(out)


def _runs_on_assumed_server(version: Optional[str]) -> bool:
    """Whether a server at :data:`ASSUMED_MYSQL_VERSION` runs an executable comment gated on
    ``version`` (no version: every server runs it)."""
    return version is None or int(version) <= ASSUMED_MYSQL_VERSION[len(version)]


def _open_executable_comments(text: str) -> str:
    """Blank the markers of ``/*!NNNNN ... */`` (and ``/*M!NNNNN ... */``) outside strings, so
    the content is read as the code it is; ordinary comments, and executable ones gated above
    the assumed server version, stay comments."""
    chars = list(text)
    i, n, in_code_comment = 0, len(text), False
    while i < n:
        c = text[i]
        if c in "'\"`":
            i = _skip_quoted(text, i)
            continue
        if c == "#" or (c == "-" and text.startswith("--", i) and (i + 2 >= n or text[i + 2] in " \t\r\n")):
            end = text.find("\n", i)
            i = n if end < 0 else end
            continue
        if in_code_comment and text.startswith("*/", i):
            chars[i] = chars[i + 1] = " "
            in_code_comment = False
            i += 2
            continue
        if text.startswith("/*", i):
            marker = _EXECUTABLE_OPEN.match(text, i)
            if marker and not in_code_comment and _runs_on_assumed_server(marker.group(1)):
                for j in range(marker.start(), marker.end()):
                    chars[j] = " "
                in_code_comment = True
                i = marker.end()
                continue
            end = text.find("*/", i + 2)
            i = n if end < 0 else end + 2
            continue
        i += 1
    return "".join(chars)


def _skip_quoted(text: str, i: int) -> int:
    quote, i, n = text[i], i + 1, len(text)
    while i < n:
        c = text[i]
        if c == "\\" and quote != "`":
            i += 2
            continue
        if c == quote:
            if i + 1 < n and text[i + 1] == quote:
                i += 2
                continue
            return i + 1
        i += 1
    return n


# --------------------------------------------------------------------------- statements

#: The keyword a statement node counts as itself, by sqlglot class.
_NODE_KEYWORDS: Dict[type, str] = {
    exp.Select: "SELECT",
    exp.SetOperation: "SELECT",
    exp.Values: "SELECT",
    exp.Insert: "INSERT",
    exp.Update: "UPDATE",
    exp.Delete: "DELETE",
    exp.Merge: "MERGE",
    exp.Drop: "DROP",
    exp.TruncateTable: "TRUNCATE",
    exp.Alter: "ALTER",
    exp.Create: "CREATE",
    exp.Grant: "GRANT",
    exp.Revoke: "REVOKE",
    exp.Attach: "ATTACH",
    exp.Detach: "DETACH",
    exp.Pragma: "PRAGMA",
    exp.Transaction: "BEGIN",
    exp.Commit: "COMMIT",
    exp.Rollback: "ROLLBACK",
    exp.Copy: "COPY",
    exp.Describe: "DESCRIBE",
    exp.Show: "SHOW",
    exp.Use: "USE",
    exp.Set: "SET",
    exp.Analyze: "ANALYZE",
    exp.Comment: "COMMENT",
}
_KEYWORD_BY_TYPE: Dict[type, Optional[str]] = {}
#: What a command's first word counts as, when it is not its own keyword.
_COMMAND_KEYWORDS = {
    "DESC": "DESCRIBE",
    "HELP": "SHOW",
    "CHECKSUM": "SHOW",
    "CHECK": "SHOW",
    "GET": "SHOW",
    "END": "COMMIT",
    "START": "BEGIN",
    "UNLOCK": "LOCK",
    "RENAME": "ALTER",
    "TABLE": "SELECT",
    "CACHE": "OPTIMIZE",
}
#: Statements read from their tokens by the command rules even when sqlglot would parse them
#: (into something else: ``FLUSH TABLES`` parses as a column with an alias).
_COMMAND_FIRST = frozenset(
    """FLUSH LOCK UNLOCK LOAD HANDLER CHECKPOINT REINDEX VACUUM CLUSTER REFRESH OPTIMIZE CACHE CHECK CHECKSUM
    HELP GET SIGNAL RESIGNAL NOTIFY LISTEN UNLISTEN DISCARD DEALLOCATE SAVEPOINT RELEASE FETCH CLOSE DECLARE
    RESET KILL PURGE INSTALL UNINSTALL SHUTDOWN BINLOG XA BACKUP RESTORE CALL RENAME""".split()
)


def _keyword_of(node: exp.Expression) -> Optional[str]:
    node_type = type(node)
    try:
        return _KEYWORD_BY_TYPE[node_type]
    except KeyError:
        pass
    keyword = next((_NODE_KEYWORDS[c] for c in node_type.__mro__ if c in _NODE_KEYWORDS), None)  # type: ignore[index]
    _KEYWORD_BY_TYPE[node_type] = keyword
    return keyword


#: What a parsed statement may be: a placed node, a command, or a parenthesized query.
_STATEMENT_NODES = rules.SQLGLOT_PLACED + (exp.Subquery,)

_TOKEN_TYPE = operator.attrgetter("token_type")
_TOKEN_TEXT = operator.attrgetter("text")
_TOKEN_START = operator.attrgetter("start")


def any_in(text: str, words: Sequence[str]) -> bool:
    """Whether any of ``words`` is a substring of ``text``. A loop, not a generator (whose steps
    cost as much as the short substring tests themselves), so a prefilter keeps its words as data
    at the cost of a spelled-out ``or`` chain.

    >>> any_in("SELECT NEXT VALUE FOR s", ("PREVIOUS", "NEXT")), any_in("SELECT 1", ("NEXT",))
    (True, False)
    """
    for word in words:
        if word in text:
            return True
    return False


def _upper_words(tokens: Sequence[Token]) -> str:
    """The tokens' texts, upper case, in one string: a word no token is can be ruled out with
    one substring test (the upper case of joined texts is the join of their upper cases, so
    every token whose :func:`_word` is ``W`` puts ``W`` in it).

    For tokens read from a text, the upper case of the text they span serves the same test
    without a join (:meth:`_Reader.statements` passes it): a word without spaces that is part of
    a token's :func:`_word` is in that span's upper case. The tokenizer gives a token that is not
    data the source characters it covers (``sql[start:end + 1]``, or the one character of a
    one-character token), except a keyword of several words, whose text is its words upper-cased
    with each run of whitespace between them made one space (each word is still source characters
    in a row), and the type name it adds after a number with a type suffix (``1L`` is read as
    ``1 :: BIGINT``: a type name, never a word the prefilters search). ``str.upper`` maps each
    character on its own, so the upper case of a part of the span is a part of the span's upper
    case. ``tests/test_sql_generic_prefilter.py`` checks it on every statement of the corpus, the
    realistic queries and generated scripts."""
    return " ".join(map(_TOKEN_TEXT, tokens)).upper()


def _starts_compound(token: Token) -> bool:
    """Whether a statement starting with ``token`` may have a compound body (see below)."""
    return token.token_type is TokenType.CREATE or _word(token) in ("BEGIN", "ALTER")


def _split_statements(tokens: Sequence[Token], text: str) -> List[List[Token]]:
    """Top-level statements of ``tokens`` (read from ``text``); a routine's or trigger's ``BEGIN ... END``
    keeps its semicolons.

    A statement that cannot hold a compound body ends at the next semicolon: those are cut
    where the semicolons are; from the first statement that may hold one on, every token is
    read by :func:`_split_compound`.

    The semicolons are found from the text, not by reading every token's type (an attribute read
    per token, where only a few tokens are semicolons): a semicolon token is the one character ``;``
    at its ``start``, so every semicolon token starts at a ``;`` of the text; each ``;`` of the text
    is looked up among the tokens by ``start`` (they are in the order of the text; the rest of a
    command, kept as one string token, can carry the start of the semicolon after it, so every token
    starting there is asked) and counts when a semicolon token starts there (a ``;`` in a string, a
    quoted name or a comment does not). ``tests/test_sql_generic_prefilter.py`` checks that this
    split is the split by token types on the corpus, the realistic queries and generated scripts."""
    statements: List[List[Token]] = []
    semicolon, start, end = TokenType.SEMICOLON, 0, len(tokens)
    at = text.find(";")
    while start < end:
        first = tokens[start]
        if first.token_type is not semicolon and _starts_compound(first):
            statements.extend(_split_compound(tokens[start:]))
            break
        stop = end
        while at >= 0:
            index = bisect.bisect_left(tokens, at, start, end, key=_TOKEN_START)
            while index < end and tokens[index].start == at and tokens[index].token_type is not semicolon:
                index += 1  # another token with the same start (a command's rest, kept as one string)
            found = index < end and tokens[index].start == at
            at = text.find(";", at + 1)
            if found:
                stop = index
                break
        if stop > start:
            statements.append(list(tokens[start:stop]))
        start = stop + 1
    return statements


def _split_compound(tokens: Sequence[Token]) -> List[List[Token]]:
    """:func:`_split_statements` token by token, from the start of a statement."""
    statements: List[List[Token]] = []
    current: List[Token] = []
    depth, compound, creates = 0, False, False
    semicolon = TokenType.SEMICOLON
    for index, token in enumerate(tokens):
        if token.token_type is semicolon and depth == 0:
            if current:
                statements.append(current)
            current, compound, creates = [], False, False
            continue
        current.append(token)
        if len(current) == 1:
            creates = _starts_compound(token)
            continue
        if not creates:  # only CREATE TRIGGER/... and BEGIN NOT ATOMIC have a compound body
            continue
        word = _word(token)
        if len(current) == 2 and word == "NOT" and _word(current[0]) == "BEGIN":
            compound, depth = True, 1  # MariaDB's anonymous block: BEGIN NOT ATOMIC ... END
        elif word in _ROUTINE_WORDS and _word(current[0]) in ("CREATE", "ALTER"):
            compound = True
        elif compound and word in ("BEGIN", "CASE"):
            depth += 1
        elif compound and word == "END":
            following = _word(tokens[index + 1]) if index + 1 < len(tokens) else ""
            if following not in _ENDS_OWN_BLOCK:
                depth = max(0, depth - 1)
    if current:
        statements.append(current)
    return statements


def _construct(node: exp.Expression) -> str:
    """How an unplaced sqlglot statement is named in reasons and in ``allow_statements``."""
    if isinstance(node, exp.Alter):
        parts = [*(node.args.get("actions") or []), *(node.args.get("options") or [])]
        unknown = [p for p in parts if not isinstance(p, rules._ALTER_KEEPS + rules._ALTER_OPTIONS_KEEP + (exp.Drop,))]
        what = unknown[0].key.upper().replace("PROPERTY", "") if unknown else str(node.args.get("kind") or "")
        return f"ALTER {what}".strip()
    if isinstance(node, exp.Create):
        prefix = "CREATE OR REPLACE" if node.args.get("replace") else "CREATE"
        return f"{prefix} {rules._create_kind(node)}".strip()
    if isinstance(node, exp.Set):
        names = []
        for item in node.expressions:
            target = item.this
            name = target.this if isinstance(target, exp.EQ) else target
            names.append(str(item.args.get("kind") or "") or (name.name if name is not None else ""))
        return f"SET {' '.join(n for n in names if n)}".strip()
    if isinstance(node, exp.Pragma):
        target = node.this.this if isinstance(node.this, exp.EQ) else node.this
        return f"PRAGMA {target.name if target is not None else ''}".strip()
    return node.key.upper()


_INERT, _CALL, _COMMAND, _WHEN, _PLACED = "inert", "call", "command", "when", "placed"
#: What each sqlglot node class is to the walk (filled as classes are met).
_ROLE_BY_TYPE: Dict[type, str] = {}


def _role_of(node_type: type) -> str:
    """A node class's role in :meth:`_Reader._tree`, in the order the walk asks: a call, a
    command, a MERGE branch, a class some rule names, else inert (a column, a literal, ...)."""
    if issubclass(node_type, exp.Func):
        role = _CALL
    elif issubclass(node_type, exp.Command):
        role = _COMMAND
    elif issubclass(node_type, exp.When):
        role = _WHEN
    elif rules._sqlglot_candidates(node_type) is not None:
        role = _PLACED
    else:
        role = _INERT
    _ROLE_BY_TYPE[node_type] = role
    return role


#: Node classes that are leaves: sqlglot declares them primitive (``is_primitive``: their args are
#: plain values, so their constructor links no child), and its parsers build them only from a
#: token's text or a name (``Identifier(this=token.text, quoted=...)``, ``Literal(this=token.text,
#: is_string=...)``), never around another node. A leaf holds no call and no statement, and its own
#: role is inert, so the walk does not visit it (exact classes: a subclass is visited as before).
#: The walk does not take all of that on trust: a leaf is skipped only when its ``this`` (the one
#: arg that holds its text) is a ``str``, so one that some parser did build around a node is visited
#: like any other node. Its other args are flags (``quoted``, ``is_string``, ...) and are not
#: checked at run time: checking every arg would cost more than skipping the leaves saves
#: (docs/performance.md, "Figures behind the code's shape"). ``tests/test_sql_generic_walk.py``
#: checks, on every tree of the corpus, the realistic queries, the adversarial scripts and
#: generated ones, that no leaf holds a node in any arg and that the walk meets every other node
#: in the order of sqlglot's own breadth-first ``walk``. Skipping leaves pays because identifiers
#: and literals are a large share of a realistic query's nodes.
_LEAVES = frozenset({exp.Identifier, exp.Literal})


def _walk(root: exp.Expression) -> List[exp.Expression]:
    """The nodes of ``root``'s tree in the order of ``root.walk()`` (breadth first, each node's
    args in their order, lists exploded), leaves (:data:`_LEAVES` whose ``this`` is a ``str``) left out."""
    nodes = [root]
    append, leaves, expression = nodes.append, _LEAVES, exp.Expr
    for node in nodes:  # grows while it is read: a queue with no pops
        for value in node.args.values():
            if isinstance(value, expression):  # the usual arg first: a node, then a list, else a plain value
                if type(value) not in leaves or type(value.args.get("this")) is not str:
                    append(value)
            elif type(value) is list:
                for item in value:
                    if isinstance(item, expression) and (
                        type(item) not in leaves or type(item.args.get("this")) is not str
                    ):
                        append(item)
    return nodes


def _release(nodes: List[exp.Expression]) -> None:
    """Empty the args of a walked tree's nodes, once the walk has read all of them, so the tree
    is freed when the reader drops it.

    Why: a parsed tree is one big reference cycle (every node links its children through its
    args and its parent through ``parent``), so dropping it frees nothing until Python's cycle
    collector passes, and those passes cost more than the walk itself. With the visited nodes'
    args empty, what is left of the tree links only upwards (``parent``; a leaf the walk skipped holds no node, see
    :data:`_LEAVES`), and reference counting frees it at once.

    Why it changes no decision: it runs after the walk has looked up every node (:meth:`_Reader._tree`
    calls it last; a walk that raises leaves its tree to the collector). Nothing reads the tree
    afterwards: an analysis holds strings, kinds and rule results, never a node. And the tree is
    this parse's own: sqlglot's parsers build new nodes for every parse (its API changes parsed
    trees in place, ``set``, ``replace``, ``transform(copy=False)``, which a node shared between
    parses would not survive). ``tests/test_sql_generic_walk.py`` checks that reading leaves no
    cyclic garbage behind and that every tree is walked before it is emptied."""
    for node in nodes:
        node.args.clear()


class _Reader:
    """Reads one text in one dialect; remembers names prepared (``PREPARE s FROM '...'``) and
    routines created in it (their bodies are read where they are created)."""

    def __init__(self, text: str, dialect: Any) -> None:
        self.text = text
        self.dialect_name = dialect
        self.function_dialect = dialect if isinstance(dialect, str) else None
        self.dialect, self.parser, tokenizer = _dialect_and_parser(dialect)
        self.tokenize = tokenizer.tokenize
        self.prepared: Set[str] = set()
        self.routines: Set[str] = set()
        self.mysql_family = self.function_dialect in MYSQL_FAMILY or self.function_dialect is None

    def statements(self) -> List[SQLStatement]:
        tokens = self.tokenize(self.text)
        result = []
        # A text with no ";" has no semicolon token: it is one statement (or none).
        split = _split_statements(tokens, self.text) if ";" in self.text else [tokens] if tokens else []
        for statement_tokens in split:
            source = self.text[statement_tokens[0].start : statement_tokens[-1].end + 1]
            kinds = self.statement(statement_tokens, source.upper())
            result.append(kinds.statement(snippet(source)))
        return result

    def statement(self, tokens: List[Token], upper: Optional[str] = None) -> KindSet:
        """The kinds of one statement's ``tokens``. ``upper``, when the tokens were read from this
        reader's text, is the upper case of the text they span (:meth:`statements`), which the
        keyword prefilters below search instead of the tokens' joined texts (see :func:`_upper_words`)."""
        kinds = KindSet()
        first = _word(tokens[0]).split(" ", 1)[0]  # sqlglot keeps some pairs as one token (LOCK TABLES)
        if first == "REPLACE" and len(tokens) > 1:
            # MySQL's REPLACE is INSERT that first deletes the conflicting row: read as the INSERT
            command_rest = len(tokens) == 2 and tokens[1].token_type == TokenType.STRING
            tail = tokens[1].text if command_rest and _unquoted_after(tokens[0], self.text) else self._raw(tokens[1:])
            kinds.merge([self._reread("INSERT " + tail).statement("")], _RUNS.why)
            kinds.apply(EFFECT_BY_NAME["replace rows"], "REPLACE")
            return kinds
        if upper is None:  # tokens of another text (an inner statement): their own texts
            upper = _upper_words(tokens)
        if (
            self.mysql_family
            and any_in(upper, _MARIADB_ONLY_WORDS)
            and _MARIADB_ONLY.intersection(_word(t) for t in tokens)
        ):
            return self._reread(self._raw(tokens, _mariadb_rewrite(tokens)))
        if first in ("COPY", "CREATE", "BEGIN", "ALTER"):
            words = [_word(t) for t in tokens]
            if first == "BEGIN" and words[1:3] == ["NOT", "ATOMIC"]:
                self._routine(tokens, words, kinds, kind="BEGIN", header_end=2)
                return kinds
            if first == "COPY" and "PROGRAM" in words:
                raise Unverifiable("COPY ... PROGRAM runs a shell command on the database server")
            if first == "CREATE" and _ROUTINE_WORDS.intersection(words[:8]):
                self._routine(tokens, words, kinds)
                return kinds
            if first == "ALTER" and words[1:2] and words[1] in _ROUTINE_WORDS:
                kinds.add("ALTER")
                kinds.not_placed("statement", f"ALTER {words[1]}")  # ALTER EVENT ... DO <body>, ...
                return kinds
        if first in _COMMAND_FIRST or first in rules.WRAPPER_WORDS or (first == "END" and _ends_transaction(tokens)):
            self._command(tokens, kinds)
            return kinds
        if first == "SET" and self.mysql_family and len(tokens) > 2 and _word(tokens[1]) == "STATEMENT":
            self._set_statement(tokens, kinds)
            return kinds
        if first == "UPDATE" and len(tokens) > 2 and _word(tokens[1]) == "OR":
            # SQLite's UPDATE OR <conflict>: OR REPLACE deletes rows, the others keep UPDATE's effect
            conflict = _word(tokens[2])
            if conflict == "REPLACE":
                kinds.apply(EFFECT_BY_NAME["replace rows"])
            elif conflict not in _PLAIN_CONFLICT:
                raise SqlglotError(f"UPDATE OR {conflict} is no conflict clause")
            tokens = tokens[:1] + tokens[3:]
        replaces = _on_conflict_replace(tokens) if "REPLACE" in upper else set()
        if replaces:  # SQLite's ON CONFLICT REPLACE in a table's constraints: read without it
            kinds.apply(EFFECT_BY_NAME["replace rows"])
            tokens = [t for i, t in enumerate(tokens) if i not in replaces]
        try:
            nodes = self._parse(tokens)
        except SqlglotError:
            if first in ("ALTER", "CREATE"):
                # Grammar sqlglot lacks (MySQL's ALTER ... DROP PARTITION): read the statement from
                # its tokens, by the clause rules.
                self._command(tokens, kinds)
                return kinds
            reread = self._mysql_form(first, tokens) if self.mysql_family else None
            if reread is None:
                raise
            return reread
        for node in nodes:
            if node is None or isinstance(node, exp.Semicolon):
                continue
            if not isinstance(node, _STATEMENT_NODES):
                raise SqlglotError(f"not an SQL statement: {snippet(node.sql(dialect=self.dialect_name))}")
            if isinstance(node, exp.Command):
                self._command(tokens, kinds)
            else:
                self._tree(node, kinds)
        return kinds

    def _set_statement(self, tokens: List[Token], kinds: KindSet) -> None:
        """MariaDB's ``SET STATEMENT var = value [, ...] FOR <statement>``: the settings are read as
        a ``SET`` of them (the same rules, ``sql_mode`` included), and the statement as itself."""
        depth, split_at = 0, None
        for i in range(2, len(tokens)):
            kind = tokens[i].token_type
            depth += kind == TokenType.L_PAREN
            depth -= kind == TokenType.R_PAREN
            if depth == 0 and _word(tokens[i]) == "FOR":
                split_at = i
                break
        if split_at is None or split_at == 2 or split_at + 1 == len(tokens):
            raise SqlglotError("SET STATEMENT needs settings, FOR, and a statement")
        kinds.merge([self._reread("SET " + self._raw(tokens[2:split_at])).statement("")], _RUNS.why)
        kinds.merge([self.statement(tokens[split_at + 1 :]).statement("")], _RUNS.why)

    def _mysql_form(self, first: str, tokens: List[Token]) -> Optional[KindSet]:
        """MariaDB/MySQL forms sqlglot cannot parse, read as the statement they are equivalent to
        (None: not one of them): ``UPDATE IGNORE``/``LOW_PRIORITY`` (an UPDATE that skips rows
        that would fail), ``VALUES (...), (...)`` as a statement (a read of its rows), and
        ``SELECT ... INTO @a, @b`` (sets user variables only)."""
        if first == "UPDATE":
            kept = 1
            while kept < len(tokens) and _word(tokens[kept]) in ("IGNORE", "LOW_PRIORITY"):
                kept += 1
            return self.statement(tokens[:1] + tokens[kept:]) if kept > 1 else None
        if first == "VALUES":
            return self._reread(f"SELECT * FROM ({self._raw(tokens)}) AS agentos_values")
        if first in ("SELECT", "WITH", "("):
            into = next((i for i, t in enumerate(tokens) if t.token_type == TokenType.INTO), None)
            end = into + 1 if into is not None else 0
            while into is not None and end + 1 < len(tokens) and tokens[end].token_type == TokenType.PARAMETER:
                end += 2  # @name
                if end < len(tokens) and tokens[end].token_type == TokenType.COMMA:
                    end += 1
                else:
                    break
            if into is None or end - into <= 3:
                return None  # no INTO of several @variables
            return self.statement(tokens[: into + 3] + tokens[end:])  # INTO the first variable only
        return None

    def _raw(self, tokens: Sequence[Token], replacements: Optional[Dict[int, str]] = None) -> str:
        """The statement's own text, token by token (comments left out), some tokens replaced."""
        replacements = replacements or {}
        return " ".join(replacements.get(i, self.text[t.start : t.end + 1]) for i, t in enumerate(tokens))

    def _reread(self, text: str) -> KindSet:
        """Read ``text`` (one statement rewritten from this one) with this reader's state."""
        inner = _Reader(text, self.dialect_name)
        inner.routines, inner.prepared, inner.mysql_family = self.routines, self.prepared, False
        found = KindSet()
        found.merge(inner.statements(), _RUNS.why)
        return found

    def _parse(self, tokens: List[Token]) -> List[Optional[exp.Expression]]:
        """Parse one statement's tokens. sqlglot matches multi-word keywords (``ORDER BY``) on
        the raw text, so a comment between the words breaks its parse: the statement is then
        parsed again from its tokens' own text, comments left out (the dialect's lexer already
        decided what is a comment)."""
        try:
            return self.parser.parse(tokens, self.text)
        except SqlglotError:
            if not any(t.comments for t in tokens):
                raise
            text = " ".join(self.text[t.start : t.end + 1] for t in tokens)
            return self.parser.parse(self.tokenize(text), text)

    # ----------------------------------------------------------------------- parsed trees
    def _tree(self, root: exp.Expression, kinds: KindSet) -> None:
        """Walk the tree; look every statement node and every call up in the rules. Every node but
        the leaves (:data:`_LEAVES`, which hold neither) is visited (a call can stand anywhere);
        what a node's class makes it (:func:`_role_of`) is asked once per class, so the nodes
        that are neither a call nor a statement cost a look-up."""
        roles = _ROLE_BY_TYPE
        nodes = _walk(root)
        for node in nodes:
            role = roles.get(type(node))
            if role is None:
                role = _role_of(type(node))
            if role is _INERT:
                continue
            if role is _CALL:
                if isinstance(node.parent, exp.Pragma) or (
                    isinstance(node.parent, exp.EQ) and isinstance(node.parent.parent, exp.Pragma)
                ):
                    continue  # PRAGMA name(arg) names the pragma: judged by the pragma rule
                if not rules.sqlglot_function_known(node, self.function_dialect):
                    name = rules.function_name(node)
                    if name not in self.routines and not node.find_ancestor(exp.Hint):
                        hint = unknown_function_hint(name, self.function_dialect)
                        kinds.not_placed("function", name, f"{name}()", hint)
                continue
            if role is _COMMAND:
                command = node.sql(dialect=self.dialect_name)
                self._command(self.tokenize(command), kinds, command)
                continue
            if role is _WHEN and isinstance(node.args.get("then"), exp.Var):
                kinds.add(str(node.args["then"].this).upper(), EFFECT_BY_NAME["merge"].why)
                continue
            matched = rules.sqlglot_rules(node)
            if matched is None:
                continue
            if isinstance(node, exp.Into) or (isinstance(node, exp.Drop) and isinstance(node.parent, exp.Alter)):
                # a part of a statement, counted by its statement's rules
                for rule in matched:
                    kinds.apply(EFFECT_BY_NAME[rule.effect])
                continue
            keyword = _keyword_of(node)
            if isinstance(node, (exp.Insert, exp.Update, exp.Delete)):
                target = node.this.this if isinstance(node.this, exp.Schema) else node.this
                if isinstance(target, exp.Table):
                    kinds.writes[target.name.lower()] = None
            if not matched:
                kinds.apply(EFFECT_BY_NAME["unknown"], keyword)
                kinds.not_placed("statement", _construct(node))
                continue
            for rule in matched:
                kinds.apply(EFFECT_BY_NAME[rule.effect], rule.keyword or keyword)
        _release(nodes)

    # ----------------------------------------------------------------------- commands
    def _command(self, tokens: Sequence[Token], kinds: KindSet, source: Optional[str] = None) -> None:
        """A statement read from its tokens (of ``source``, default the text being read) by its
        first keyword: the special forms below, else the command rules."""
        source = self.text if source is None else source
        first, _, joined = _word(tokens[0]).partition(" ")  # LOCK TABLES can be one token
        rest = list(tokens[1:])
        if len(rest) == 1 and rest[0].token_type == TokenType.STRING and _unquoted_after(tokens[0], source):
            # sqlglot's tokenizer keeps the rest of a command (EXPLAIN, SHOW, EXECUTE, ...) as one
            # string; it is code, not a literal: read its tokens.
            rest = list(self.dialect.tokenize(rest[0].text))
        words = joined.split() + [_word(t) for t in rest]
        wrapper = rules.wrapper_for(first, words)
        if wrapper is not None:
            self._wrapper(wrapper, rest, words, kinds)
            return
        if first == "ALTER":
            self._alter(words, kinds)
            return
        if first == "CREATE":
            self._create(words, kinds)
            return
        matched = rules.command_rules(first, words)
        keyword = _COMMAND_KEYWORDS.get(first, first)
        if not matched:
            kinds.apply(EFFECT_BY_NAME["unknown"], keyword)
            kinds.not_placed("statement", " ".join([first, *words[:1]]) if first in ("SET", "PRAGMA") else first)
            return
        for rule in matched:
            kinds.apply(EFFECT_BY_NAME[rule.effect], rule.keyword or keyword)

    def _alter(self, words: List[str], kinds: KindSet) -> None:
        """MySQL-family ALTER read from its tokens: ``IGNORE`` deletes duplicates; each clause
        (split at top-level commas) is looked up in ``ALTER_CLAUSES``."""
        kinds.add("ALTER")
        if "IGNORE" in words[:3]:
            kinds.apply(EFFECT_BY_NAME["alter deleting duplicates"], "ALTER")
        kept = _words_after_keywords(words, ("ONLINE", "OFFLINE", "IGNORE"))
        if not kept or kept[0] not in ("TABLE", "DATABASE", "SCHEMA", "VIEW", "SEQUENCE", "USER", "INDEX"):
            kinds.not_placed("statement", f"ALTER {kept[0] if kept else ''}".strip())
            return
        clauses = _clauses(kept[2:] if kept[0] != "VIEW" else [])
        if kept[0] == "VIEW":
            return
        for clause in clauses:
            head = clause[0] if clause else ""
            effect = rules.ALTER_CLAUSES.get(head)
            if head == "ADD" and clause[1:2] == ["PARTITION"]:
                effect = "alter object"
            elif head == "DROP" and clause[1:3] == ["NOT", "NULL"]:
                effect = "alter object"
            elif head in ("CHARACTER", "CHARSET", "DEFAULT", "COLLATE") and "CONVERT" in clause:
                effect = None
            if effect is None:
                kinds.not_placed("statement", f"ALTER TABLE {' '.join(clause[:2])}".strip())
            else:
                kinds.apply(EFFECT_BY_NAME[effect], "ALTER")

    def _create(self, words: List[str], kinds: KindSet) -> None:
        """CREATE read from its tokens (sqlglot did not parse it): what is created decides."""
        kinds.add("CREATE")
        words = _without_on_commit_drop(words)
        replace = words[:2] == ["OR", "REPLACE"]
        if replace:
            words = words[2:]
        words = _words_after_keywords(words, ("TEMPORARY", "TEMP", "UNIQUE", "GLOBAL", "LOCAL", "DEFINER", "="))
        what = words[0] if words else ""
        if replace and what in rules._CREATE_DROPPING:
            kinds.apply(EFFECT_BY_NAME["replace object"], "CREATE")
        elif replace:
            kinds.apply(EFFECT_BY_NAME["redefine object"], "CREATE")
        if what not in rules._CREATE_KINDS:
            kinds.not_placed("statement", f"CREATE {what}".strip())

    def _wrapper(self, wrapper: rules.Wrapper, rest: List[Token], words: List[str], kinds: KindSet) -> None:
        """A statement that holds another (a row of ``rules.WRAPPERS``): it counts as its keyword,
        and its inner statement, found by the row, counts as run by it when the row says it runs."""
        kinds.add(wrapper.keyword)
        if wrapper.prepares:
            if not rest:
                raise SqlglotError(f"{wrapper.keyword} without a statement")
            self.prepared.add(rest[0].text.lower())
        if not wrapper.runs(words):
            return
        inner = wrapper.inner(rest, words)
        self._INNER_READERS[inner.how](self, inner, kinds)

    def _inner_statement(self, inner: rules.Inner, kinds: KindSet) -> None:
        kinds.merge([self.statement(list(inner.tokens)).statement("")], _RUNS.why)

    def _inner_text(self, inner: rules.Inner, kinds: KindSet) -> None:
        analysis = read_generic(inner.text, self.dialect_name)
        if analysis.problem:
            raise Unverifiable(f"prepared or executed text that cannot be checked ({analysis.problem})")
        kinds.merge(analysis.statements, _RUNS.why)

    def _inner_expressions(self, inner: rules.Inner, kinds: KindSet) -> None:
        rest = inner.tokens
        text = "SELECT " + self.text[rest[0].start : rest[-1].end + 1] if rest else "SELECT"
        reader = _Reader(text, self.dialect_name)
        reader.routines = self.routines
        kinds.merge(reader.statements(), _RUNS.why)

    def _inner_prepared(self, inner: rules.Inner, kinds: KindSet) -> None:
        if inner.name not in self.prepared:  # else it runs a statement prepared from checked text
            self._inner_dynamic(inner, kinds)

    def _inner_routine(self, inner: rules.Inner, kinds: KindSet) -> None:
        if inner.name.lower() not in self.routines:  # a routine created in this text: its body was read
            kinds.not_placed("function", inner.name.lower(), f"CALL {inner.name}")

    def _inner_unknown(self, inner: rules.Inner, kinds: KindSet) -> None:
        kinds.not_placed("statement", inner.name, inner.why)

    def _inner_dynamic(self, inner: rules.Inner, kinds: KindSet) -> None:
        raise Unverifiable(inner.why or f"dynamic SQL ({snippet(self.text)}) runs text that cannot be checked here")

    def _inner_none(self, inner: rules.Inner, kinds: KindSet) -> None:
        """Nothing runs."""

    _INNER_READERS = {
        "statement": _inner_statement,
        "text": _inner_text,
        "expressions": _inner_expressions,
        "prepared": _inner_prepared,
        "routine": _inner_routine,
        "unknown": _inner_unknown,
        "dynamic": _inner_dynamic,
        "none": _inner_none,
    }

    def _routine(
        self,
        tokens: List[Token],
        words: List[str],
        kinds: KindSet,
        kind: str = "CREATE",
        header_end: Optional[int] = None,
    ) -> None:
        """``CREATE TRIGGER/PROCEDURE/FUNCTION/EVENT`` (or MariaDB's ``BEGIN NOT ATOMIC``): the
        body's statements count, and a body that builds SQL at run time cannot be verified."""
        kinds.add(kind)
        if len(words) > 2 and words[1] == "OR" and words[2] == "REPLACE":
            kinds.apply(EFFECT_BY_NAME["redefine object"], kind)
        if header_end is None:
            header_end = next(i for i, w in enumerate(words) if w in _ROUTINE_WORDS)
            routine_word = words[header_end]
            name_at = header_end + 1
            while name_at < len(words) and words[name_at] in ("IF", "NOT", "EXISTS"):
                name_at += 1
            if routine_word in ("PROCEDURE", "FUNCTION") and name_at < len(tokens):
                self.routines.add(tokens[name_at].text.lower())
            if routine_word == "TRIGGER":
                header_end = _trigger_header_end(words, header_end)
            elif routine_word == "EVENT" and "DO" in words[header_end:]:
                header_end = words.index("DO", header_end)  # ON SCHEDULE ... DO <body>
        body_tokens = tokens[header_end + 1 :]
        read_words = words[header_end + 1 :]  # the body's words, as read
        if "EXECUTE" in read_words:
            at = read_words.index("EXECUTE")
            if at + 1 < len(read_words) and read_words[at + 1] in ("FUNCTION", "PROCEDURE"):
                # PostgreSQL's trigger action EXECUTE FUNCTION f(): the function's body is read where
                # it is created; one created elsewhere is unknown.
                name = body_tokens[at + 2].text.lower() if at + 2 < len(body_tokens) else ""
                if name not in self.routines:
                    kinds.not_placed("function", name, f"trigger function {name}()")
                return
        if _DYNAMIC_WORDS.intersection(read_words):
            raise Unverifiable("a routine or trigger body that runs SQL with PREPARE/EXECUTE cannot be checked")
        # A body given as a string (PostgreSQL's AS '...' or AS $$...$$) is SQL to read.
        if kind == "CREATE" and "AS" in read_words and words[header_end] in ("FUNCTION", "PROCEDURE"):
            at = read_words.index("AS")
            if "BEGIN" not in read_words[:at] and at + 1 < len(body_tokens):
                if body_tokens[at + 1].token_type in (TokenType.HEREDOC_STRING, TokenType.STRING):
                    self._string_body(body_tokens[at + 1].text, kinds)
                    return
        self._body(body_tokens, kinds)

    def _body(self, tokens: List[Token], kinds: KindSet) -> None:
        """A compound body read from its tokens: each statement keyword counts (``REPLACE`` as
        replacing rows), every call must be known, and ``CALL`` of a routine not created in this
        text is unknown. Procedural statements (``IF``, ``DECLARE``, loops) hold no effect of
        their own; their expressions' calls are judged the same way."""
        found = KindSet()
        words = [_word(t) for t in tokens]
        for i, word in enumerate(words):
            following = words[i + 1] if i + 1 < len(words) else ""
            previous = words[i - 1] if i else ""
            if word == "REPLACE" and following != "(":
                found.apply(EFFECT_BY_NAME["replace rows"], "REPLACE")
            elif word == "CALL":
                name = tokens[i + 1].text.lower() if i + 1 < len(tokens) else ""
                if name not in self.routines:
                    found.not_placed("function", name, f"CALL {name}")
            elif word in _BODY_STATEMENTS and following != "(":
                found.add(_BODY_STATEMENTS[word])
            elif (
                following == "("
                and tokens[i].token_type == TokenType.VAR
                and previous not in _NAME_BEFORE_PAREN
                and not is_known_function(word.lower(), self.function_dialect)
                and word.lower() not in self.routines
            ):
                hint = unknown_function_hint(word.lower(), self.function_dialect)
                found.not_placed("function", word.lower(), f"{tokens[i].text}()", hint)
        kinds.merge([found.statement("")], _RUNS.why)

    def _string_body(self, body: str, kinds: KindSet) -> None:
        analysis = read_generic(body, self.dialect_name)
        if analysis.unverifiable:
            raise Unverifiable(analysis.unverifiable)
        if analysis.error:  # not plain SQL (a procedural body): read its tokens
            try:
                tokens = self.dialect.tokenize(body)
            except SqlglotError:
                raise Unverifiable("a routine body that cannot be read cannot be checked") from None
            if _DYNAMIC_WORDS.intersection(_word(t) for t in tokens):
                raise Unverifiable("a routine body that runs SQL with EXECUTE cannot be checked")
            self._body(list(tokens), kinds)
            return
        kinds.merge(analysis.statements, _RUNS.why)


#: Statement words in a compound body, and what each counts as.
_BODY_STATEMENTS = {
    w: w
    for w in """SELECT INSERT UPDATE DELETE MERGE DROP TRUNCATE ALTER CREATE GRANT REVOKE ATTACH DETACH PRAGMA
    COPY LOAD ANALYZE VACUUM REINDEX OPTIMIZE FLUSH LOCK""".split()
}
#: Words after which ``name (`` is a table or column list, not a call.
_NAME_BEFORE_PAREN = frozenset(
    {"INTO", "TABLE", "EXISTS", "ON", "REFERENCES", "JOIN", "FROM", "UPDATE", "KEY", "INDEX"}
)
_QUOTE_STARTS = ("'", '"', "$", "N'", "E'", "X'", "B'", "U&'")


#: MariaDB syntax sqlglot does not read, rewritten to what it does: ``NEXT VALUE FOR s`` is
#: ``nextval(s)``, ``PREVIOUS VALUE FOR s`` is ``lastval(s)``, ``LIMIT ROWS EXAMINED n`` only
#: stops a query early.
_MARIADB_ONLY = frozenset({"EXAMINED", "NEXT", "PREVIOUS"})
_MARIADB_ONLY_WORDS = tuple(sorted(_MARIADB_ONLY))  # for any_in, in a fixed order


def _mariadb_rewrite(tokens: Sequence[Token]) -> Dict[int, str]:
    words = [_word(t) for t in tokens]
    out: Dict[int, str] = {}
    for i, word in enumerate(words):
        if word in ("NEXT", "PREVIOUS") and words[i + 1 : i + 3] == ["VALUE", "FOR"] and i + 3 < len(tokens):
            out[i] = "nextval(" if word == "NEXT" else "lastval("
            out[i + 1] = out[i + 2] = ""
            out[i + 3] = tokens[i + 3].text + ")"
        elif word == "ROWS" and words[i + 1 : i + 2] == ["EXAMINED"] and i + 2 < len(tokens):
            out[i] = out[i + 1] = out[i + 2] = ""
            if i and words[i - 1] == "LIMIT":
                out[i - 1] = ""
    return out


def _words_after_keywords(words: List[str], skip: Tuple[str, ...]) -> List[str]:
    i = 0
    while i < len(words) and (words[i] in skip or (i and words[i - 1] == "DEFINER" and words[i] == "=")):
        i += 1
    return words[i:]


def _clauses(words: List[str]) -> List[List[str]]:
    """``ALTER TABLE t`` clauses: the words after the table name, split at top-level commas."""
    clauses: List[List[str]] = [[]]
    depth = 0
    for word in words:
        if word == "(":
            depth += 1
        elif word == ")":
            depth -= 1
        elif word == "," and depth == 0:
            clauses.append([])
            continue
        clauses[-1].append(word)
    return [c for c in clauses if c]


def _unquoted_after(keyword: Token, source: str) -> bool:
    """Whether what follows ``keyword`` in ``source`` is raw text (sqlglot's tokenizer keeps the
    rest of a command such as ``EXPLAIN ...`` as one STRING token) rather than a quoted literal
    (``EXECUTE 'DROP TABLE t'``)."""
    after = source[keyword.end + 1 :].lstrip()
    return not after.upper().startswith(_QUOTE_STARTS)


def _trigger_header_end(words: List[str], start: int) -> int:
    """Where a trigger's header ends (its event, ``INSERT``/``UPDATE``/``DELETE``, is no
    statement): at ``BEGIN`` (SQLite, MySQL compound bodies), else after ``FOR EACH ROW``
    (MySQL's one-statement body, skipping ``FOLLOWS``/``PRECEDES other``)."""
    if "BEGIN" in words[start:]:
        return words.index("BEGIN", start)
    for i in range(start, len(words) - 2):
        if words[i : i + 3] == ["FOR", "EACH", "ROW"]:
            end = i + 2
            if end + 2 < len(words) and words[end + 1] in ("FOLLOWS", "PRECEDES"):
                end += 2
            return end
    return len(words) - 1


def _on_conflict_replace(tokens: Sequence[Token]) -> Set[int]:
    """Indexes of SQLite's ``ON CONFLICT REPLACE`` in a table's constraints (which makes every
    later INSERT replace rows)."""
    found: Set[int] = set()
    words = [_word(t) for t in tokens]
    if "REPLACE" not in words:
        return found
    for i in range(1, len(words) - 1):
        if words[i] == "CONFLICT" and words[i + 1] == "REPLACE" and words[i - 1] == "ON":
            found.update((i - 1, i, i + 1))
    return found


def _without_on_commit_drop(words: List[str]) -> List[str]:
    """``ON COMMIT DROP`` drops only the temporary table being created: not a DROP."""
    for i in range(len(words) - 2):
        if words[i : i + 3] == ["ON", "COMMIT", "DROP"]:
            return words[:i] + words[i + 3 :]
    return words


def read_generic(text: str, dialect: Any = None) -> SQLAnalysis:
    """Statements of ``text`` as sqlglot's ``dialect`` reads them, with their kinds (no
    statement at all: an analysis with none, which runs nothing)."""
    _quiet_sqlglot()
    name = dialect if isinstance(dialect, str) else None
    if name is not None and name.lower() in MYSQL_FAMILY:
        text = prepare_mysql_text(text)
        if name.lower() == "mariadb":
            dialect = "mysql"
    token = _POLICY_PARSING.set(True)
    try:
        statements = _Reader(text, dialect).statements()
    except Unverifiable as err:
        return SQLAnalysis((), unverifiable=str(err))
    except SqlglotError as err:
        first_line = str(err).splitlines()[0] if str(err) else type(err).__name__
        return SQLAnalysis((), f"unparseable SQL ({first_line})")
    except RecursionError:
        return SQLAnalysis((), unverifiable=NESTED_TOO_DEEPLY)
    finally:
        _POLICY_PARSING.reset(token)
    return SQLAnalysis(tuple(statements))
