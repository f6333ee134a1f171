"""SQL read with sqlglot: its dialects' tokenizers and parsers, one statement at a time.

The text is tokenized once with the dialect's tokenizer (so strings, quoted identifiers and
comments are what that database says they are), split into statements at top-level semicolons
(a ``CREATE TRIGGER/PROCEDURE/FUNCTION/EVENT`` body's ``BEGIN ... END`` keeps its semicolons),
and each statement is parsed on its own. Statements sqlglot does not model are read from their
tokens by their first keyword: string literals and quoted identifiers are data, never keywords.
MySQL-family text is prepared as the client and server would: ``DELIMITER`` lines, and the
executable comments ``/*! ... */`` and MariaDB's ``/*M! ... */`` whose content runs.

>>> read_generic("SHOW TABLES LIKE 'drop%'", "mysql").kinds
frozenset({'SHOW'})
>>> sorted(read_generic("REPLACE INTO t VALUES (1)", "mysql").kinds)
['DELETE', 'INSERT', 'REPLACE']
>>> sorted(read_generic("/*!50000 DROP TABLE t */", "mysql").kinds)
['DROP']
"""

from __future__ import annotations

import contextvars
import functools
import logging
import re
import threading
from typing import Any, Dict, FrozenSet, List, Optional, Sequence, Set, Tuple, Type

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError
from sqlglot.tokens import Token, TokenType

from .sql_effects import (
    ALTER_DROPS,
    ALTER_TRUNCATES,
    COPY_FROM,
    DISCARDS_TABLESPACE,
    EMPTY_SQL,
    EXPLAIN_ANALYZE,
    IGNORE_UNIQUE,
    REPLACES_DEFINITION,
    REPLACES_ROWS,
    REPLACES_TABLE,
    ROUTINE_BODY,
    SCHEMA_TABLE_WRITE,
    SELECT_INTO,
    SQL_KEYWORDS,
    SQLITE_SCHEMA_TABLES,
    STATIC_PREPARE,
    UPSERT,
    KindSet,
    SQLAnalysis,
    SQLStatement,
    Unverifiable,
    snippet,
)

__all__ = ["read_generic", "MYSQL_FAMILY", "prepare_mysql_text"]

#: Statement kinds and the sqlglot node classes that are that kind.
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
_NODE_KIND: Dict[Type[exp.Expression], str] = {cls: kind for kind, classes in _KIND_NODES.items() for cls in classes}
_STATEMENT_ROOTS = tuple(_NODE_KIND) + (exp.Command, exp.Subquery)
_KIND_BY_TYPE: Dict[type, Optional[str]] = {}

#: Tokens that are data (strings, quoted names, numbers): never read as keywords.
_DATA_TOKENS = frozenset(t for name, t in TokenType.__members__.items() if name.endswith("STRING")) | {
    TokenType.IDENTIFIER,
    TokenType.NUMBER,
}
#: Commands that only read or set session state, whatever words follow them (``SHOW CREATE
#: TABLE t`` creates nothing). Their kind is their keyword.
_HARMLESS_COMMANDS = frozenset(
    """SHOW DESCRIBE DESC HANDLER LOCK UNLOCK NOTIFY LISTEN UNLISTEN USE HELP CHECKSUM CHECK CACHE FLUSH RESET
    DISCARD DEALLOCATE SAVEPOINT RELEASE KILL OPTIMIZE CHECKPOINT VACUUM REINDEX CLUSTER REFRESH GET SIGNAL
    FETCH CLOSE START BEGIN COMMIT ROLLBACK""".split()
)
_COMMAND_ALIASES = {"RENAME": "ALTER", "DESC": "DESCRIBE", "UNLOCK": "LOCK", "START": "BEGIN"}
#: Statement keywords a routine or trigger body, or an unknown command, is scanned for.
_BODY_KEYWORDS = SQL_KEYWORDS - {
    "BEGIN",
    "COMMIT",
    "ROLLBACK",
    "SET",
    "DECLARE",
    "CLOSE",
    "FETCH",
    "SHOW",
    "USE",
    "RELEASE",
    "DO",
}
_ROUTINE_WORDS = frozenset({"TRIGGER", "PROCEDURE", "FUNCTION", "EVENT"})
_DYNAMIC_WORDS = frozenset({"PREPARE", "EXECUTE", "EXEC"})
_DML_WORDS = frozenset({"SELECT", "INSERT", "UPDATE", "DELETE", "REPLACE", "WITH", "MERGE", "VALUES", "TABLE"})
_FALSE_WORDS = frozenset({"FALSE", "OFF", "0"})
_ENDS_OWN_BLOCK = frozenset({"IF", "LOOP", "WHILE", "REPEAT"})

#: Dialects in which ``/*! ... */`` (and MariaDB's ``/*M! ... */``) is code, not a comment.
MYSQL_FAMILY = frozenset({"mysql", "mariadb", "doris", "starrocks", "singlestore", "tidb"})

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


def _dialect_and_parser(dialect: Any) -> Tuple[sqlglot.Dialect, Any]:
    """The dialect and a parser for it, made once per thread (a parser keeps state while it
    parses, so threads do not share one)."""
    cache = getattr(_PARSERS, "cache", None)
    if cache is None:
        cache = _PARSERS.cache = {}
    pair = cache.get(dialect)
    if pair is None:
        instance = sqlglot.Dialect.get_or_raise(dialect)
        pair = cache[dialect] = (instance, instance.parser())
    return pair


def _kind_of(node: exp.Expression) -> Optional[str]:
    node_type = type(node)
    try:
        return _KIND_BY_TYPE[node_type]
    except KeyError:
        pass
    kind = next((_NODE_KIND[cls] for cls in node_type.__mro__ if cls in _NODE_KIND), None)  # type: ignore[index]
    _KIND_BY_TYPE[node_type] = kind
    return kind


def _word(token: Token) -> str:
    """The keyword a token is, upper case; empty for data (strings, quoted names, numbers)."""
    return "" if token.token_type in _DATA_TOKENS else token.text.upper()


# --------------------------------------------------------------------------- MySQL text


_DELIMITER_LINE = re.compile(r"^[ \t]*DELIMITER[ \t]+(\S+)[ \t]*$", re.IGNORECASE | re.MULTILINE)
_EXECUTABLE_OPEN = re.compile(r"/\*M?!(\d{5,6})?")


def prepare_mysql_text(text: str) -> str:
    """The text a MySQL/MariaDB server runs: ``DELIMITER`` lines (a client command) applied,
    and executable comments opened (their content is code).

    >>> prepare_mysql_text("SELECT 1 /*!50000 , 2 */")
    'SELECT 1          , 2   '
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


def _open_executable_comments(text: str) -> str:
    """Blank the markers of ``/*!NNNNN ... */`` (and ``/*M!NNNNN ... */``) outside strings, so
    the content is read as the code it is; ordinary comments stay comments."""
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
            if marker and not in_code_comment:
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


def _split_statements(tokens: Sequence[Token]) -> List[List[Token]]:
    """Top-level statements; a routine's or trigger's ``BEGIN ... END`` keeps its semicolons."""
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
            creates = token.token_type is TokenType.CREATE or _word(token) == "BEGIN"
            continue
        if not creates:  # only CREATE TRIGGER/... and BEGIN NOT ATOMIC have a compound body
            continue
        word = _word(token)
        if len(current) == 2 and word == "NOT" and _word(current[0]) == "BEGIN":
            compound, depth = True, 1  # MariaDB's anonymous block: BEGIN NOT ATOMIC ... END
        elif word in _ROUTINE_WORDS and _word(current[0]) == "CREATE":
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


class _Reader:
    """Reads one text in one dialect; remembers names prepared in it (``PREPARE s FROM '...'``)."""

    def __init__(self, text: str, dialect: Any) -> None:
        self.text = text
        self.dialect_name = dialect
        self.dialect, self.parser = _dialect_and_parser(dialect)
        self.prepared: Set[str] = set()

    def statements(self) -> List[SQLStatement]:
        tokens = self.dialect.tokenize(self.text)
        result = []
        for statement_tokens in _split_statements(tokens):
            kinds = self.statement(statement_tokens)
            shown = snippet(self.text[statement_tokens[0].start : statement_tokens[-1].end + 1])
            result.append(kinds.statement(shown))
        return result

    def statement(self, tokens: List[Token]) -> KindSet:
        kinds = KindSet()
        first = _word(tokens[0])
        if first in ("COPY", "CREATE", "BEGIN"):
            words = [_word(t) for t in tokens]
            if first == "BEGIN" and words[1:3] == ["NOT", "ATOMIC"]:
                self._routine(tokens, words, kinds, kind="BEGIN", header_end=2)
                return kinds
            if first == "COPY" and "PROGRAM" in words:
                raise Unverifiable("COPY ... PROGRAM runs a shell command on the database server")
            if first == "CREATE" and _ROUTINE_WORDS.intersection(words):
                self._routine(tokens, words, kinds)
                return kinds
        if first in ("EXPLAIN", "DESCRIBE", "DESC", "ANALYZE", "PREPARE", "EXECUTE", "EXEC", "REPLACE", "DO"):
            self._command(tokens, kinds)
            return kinds
        source = self.text[tokens[0].start : tokens[-1].end + 1].upper()
        # Only a statement whose text has these words can hold a row-replacing clause; the
        # clause itself is found on the tokens.
        replaces = (
            _replace_clause(tokens) if "REPLACE" in source and ("CONFLICT" in source or first == "UPDATE") else ()
        )
        if replaces:  # SQLite's conflict clauses: read the statement without them
            kinds.apply(REPLACES_ROWS)
            tokens = [t for i, t in enumerate(tokens) if i not in replaces]
        try:
            nodes = self._parse(tokens)
        except SqlglotError:
            if first in ("ALTER", "CREATE"):
                # Grammar sqlglot lacks (MySQL's ALTER ... DROP PARTITION): read the statement from
                # its tokens, counting every statement keyword in it (errs towards blocking).
                self._command(tokens, kinds)
                return kinds
            if first not in _HARMLESS_COMMANDS:
                raise
            # A statement sqlglot has no grammar for (MySQL's HANDLER, PostgreSQL's NOTIFY) that
            # only reads or sets session state whatever follows: its keyword says what it is.
            kinds.add(_COMMAND_ALIASES.get(first, first))
            return kinds
        for node in nodes:
            if node is None or isinstance(node, exp.Semicolon):
                continue
            if not isinstance(node, _STATEMENT_ROOTS):
                raise SqlglotError(f"not an SQL statement: {snippet(node.sql(dialect=self.dialect_name))}")
            if isinstance(node, exp.Command):
                self._command(tokens, kinds)
            else:
                self._tree(node, kinds)
        return kinds

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
            return self.parser.parse(self.dialect.tokenize(text), text)

    # ----------------------------------------------------------------------- parsed trees
    def _tree(self, root: exp.Expression, kinds: KindSet) -> None:
        for node in root.walk():
            kind = _kind_of(node)
            if kind is None:
                if isinstance(node, exp.Command):
                    command = node.sql(dialect=self.dialect_name)
                    self._command(self.dialect.tokenize(command), kinds, command)
                elif isinstance(node, exp.When) and isinstance(node.args.get("then"), exp.Var):
                    kinds.add(str(node.args["then"].this).upper(), "a MERGE branch runs it")
                elif isinstance(node, exp.Into) and _into_creates(node):
                    kinds.apply(SELECT_INTO)
                continue
            kinds.add(kind)
            if kind == "INSERT":
                if str(node.args.get("alternative") or "").upper() == "REPLACE":
                    kinds.apply(REPLACES_ROWS)
                conflict = node.args.get("conflict")
                if conflict is not None and (conflict.args.get("duplicate") or conflict.args.get("expressions")):
                    kinds.apply(UPSERT)
            elif kind == "COPY" and node.args.get("kind"):
                kinds.apply(COPY_FROM)
            elif kind == "CREATE" and node.args.get("replace"):
                kinds.apply(
                    REPLACES_TABLE if str(node.args.get("kind") or "").upper() == "TABLE" else REPLACES_DEFINITION
                )
            elif kind == "ALTER" and any(isinstance(a, exp.Drop) for a in node.args.get("actions") or ()):
                kinds.apply(ALTER_DROPS)
            if kind in ("INSERT", "UPDATE", "DELETE") and _writes_sqlite_schema(node):
                kinds.apply(SCHEMA_TABLE_WRITE)

    # ----------------------------------------------------------------------- commands
    def _command(self, tokens: Sequence[Token], kinds: KindSet, source: Optional[str] = None) -> None:
        """A statement sqlglot did not model, read from its tokens (of ``source``, default the
        text being read) by its first keyword."""
        source = self.text if source is None else source
        first = _word(tokens[0])
        rest = list(tokens[1:])
        if len(rest) == 1 and rest[0].token_type == TokenType.STRING and _unquoted_after(tokens[0], source):
            # sqlglot's tokenizer keeps the rest of a command (EXPLAIN, SHOW, EXECUTE, ...) as one
            # string; it is code, not a literal: read its tokens.
            rest = list(self.dialect.tokenize(rest[0].text))
        words = [_word(t) for t in rest]
        keyword = _COMMAND_ALIASES.get(first, first)
        if first in ("EXPLAIN", "DESCRIBE", "DESC"):
            kinds.add("EXPLAIN" if first == "EXPLAIN" else "DESCRIBE")
            if _explain_analyzes(words):
                self._nested(rest, kinds, EXPLAIN_ANALYZE)
        elif first == "ANALYZE":
            kinds.add("ANALYZE")
            # MariaDB's ANALYZE [FORMAT=JSON] <statement> runs the statement; ANALYZE TABLE does not.
            if (
                words
                and words[0] not in ("TABLE", "LOCAL", "NO_WRITE_TO_BINLOG")
                and _DML_WORDS.intersection(words[:6])
            ):
                self._nested(rest, kinds, EXPLAIN_ANALYZE)
        elif first == "REPLACE":
            kinds.apply(REPLACES_ROWS)
            kinds.update(w for w in words if w in _BODY_KEYWORDS and w != "INTO")
        elif first == "ALTER":
            kinds.add("ALTER")
            if "IGNORE" in words and ("UNIQUE" in words or "PRIMARY" in words):
                kinds.apply(IGNORE_UNIQUE)
            if "DISCARD" in words:
                kinds.apply(DISCARDS_TABLESPACE)
            if "DROP" in words:
                kinds.apply(ALTER_DROPS)
            if "TRUNCATE" in words:
                kinds.apply(ALTER_TRUNCATES)
        elif first == "CREATE":
            kinds.add("CREATE")
            words = _without_on_commit_drop(words)
            if len(words) > 2 and words[0] == "OR" and words[1] == "REPLACE":
                kinds.apply(REPLACES_TABLE if "TABLE" in words[2:4] else REPLACES_DEFINITION)
            kinds.update(w for w in words[1:] if w in _BODY_KEYWORDS and w not in ("CREATE", "REPLACE"))
        elif first == "PREPARE":
            self._prepare(rest, words, kinds)
        elif first in ("EXECUTE", "EXEC"):
            self._execute(rest, words, kinds)
        elif first == "DO":
            # MySQL's DO evaluates expressions (harmless); a PostgreSQL DO block's body is read by
            # the PostgreSQL reading (dialect="postgres", or with no dialect, where it joins in).
            kinds.add("DO")
        elif first in _HARMLESS_COMMANDS:
            kinds.add(keyword)
        else:
            kinds.add(keyword)
            kinds.update(_COMMAND_ALIASES.get(w, w) for w in words if w in _BODY_KEYWORDS)

    def _nested(self, tokens: List[Token], kinds: KindSet, why: str) -> None:
        """Kinds of the statement that starts at the first DML keyword of ``tokens``."""
        start = next((i for i, t in enumerate(tokens) if _word(t) in _DML_WORDS), None)
        if start is None:
            return
        inner = self.statement(tokens[start:])
        kinds.merge([inner.statement("")], why)

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
            kinds.apply(REPLACES_DEFINITION)
        if header_end is None:
            header_end = next(i for i, w in enumerate(words) if w in _ROUTINE_WORDS)
            if words[header_end] == "TRIGGER":
                header_end = _trigger_header_end(words, header_end)
            elif words[header_end] == "EVENT" and "DO" in words[header_end:]:
                header_end = words.index("DO", header_end)  # ON SCHEDULE ... DO <body>
        body_tokens = tokens[header_end + 1 :]
        read_words = words[header_end + 1 :]  # the body's words, as read
        # PostgreSQL's trigger action EXECUTE FUNCTION/PROCEDURE f() calls a function (read where
        # it is created); it is no dynamic SQL.
        body_words = [
            "CALL"
            if w == "EXECUTE" and i + 1 < len(read_words) and read_words[i + 1] in ("FUNCTION", "PROCEDURE")
            else w
            for i, w in enumerate(read_words)
        ]
        if _DYNAMIC_WORDS.intersection(body_words):
            raise Unverifiable("a routine or trigger body that runs SQL with PREPARE/EXECUTE cannot be checked")
        # A body given as a string (PostgreSQL's AS '...' or AS $$...$$) is SQL to read; other
        # strings in a body are data.
        strings = []
        if kind == "CREATE" and words[header_end] in ("FUNCTION", "PROCEDURE") and "AS" in body_words:
            at = body_words.index("AS")  # the first AS, before any compound body
            if "BEGIN" not in body_words[:at] and at + 1 < len(body_tokens):
                if body_tokens[at + 1].token_type in (TokenType.HEREDOC_STRING, TokenType.STRING):
                    strings.append(body_tokens[at + 1].text)
        found = {w for w in body_words if w in _BODY_KEYWORDS} - {"CREATE"}
        for body in strings:  # a body given as a string ('...' or $$...$$): read it as SQL
            found |= _string_body_kinds(body, self.dialect_name)
        kinds.update(found, ROUTINE_BODY)

    def _prepare(self, rest: List[Token], words: List[str], kinds: KindSet) -> None:
        kinds.add("PREPARE")
        if not rest:
            raise SqlglotError("PREPARE without a statement")
        self.prepared.add(rest[0].text.lower())
        if len(words) >= 2 and words[1] == "FROM":
            if len(rest) == 3 and rest[2].token_type in _DATA_TOKENS and rest[2].token_type != TokenType.NUMBER:
                self._literal(rest[2].text, kinds)
                return
            raise Unverifiable(
                "PREPARE ... FROM of text built at run time (a variable or an expression) cannot be checked"
            )
        self._nested(rest[1:], kinds, STATIC_PREPARE)

    def _execute(self, rest: List[Token], words: List[str], kinds: KindSet) -> None:
        kinds.add("EXECUTE")
        tokens = [t for t in rest if _word(t) not in ("IMMEDIATE", "(", ")")]
        if tokens and tokens[0].text.lower() == "sp_executesql" and len(tokens) == 2:
            tokens = tokens[1:]  # T-SQL's sp_executesql of one literal: static text
        if (
            tokens
            and tokens[0].token_type in _DATA_TOKENS
            and tokens[0].token_type not in (TokenType.NUMBER, TokenType.IDENTIFIER)
        ):
            if len(tokens) == 1:
                self._literal(tokens[0].text, kinds)
                return
        elif tokens and tokens[0].text.lower() in self.prepared:
            return  # runs a statement prepared from checked text earlier in this script
        raise Unverifiable(f"dynamic SQL ({snippet(self.text)}) runs text that cannot be checked here")

    def _literal(self, sql: str, kinds: KindSet) -> None:
        analysis = read_generic(sql, self.dialect_name)
        if analysis.problem:
            raise Unverifiable(f"prepared or executed text that cannot be checked ({analysis.problem})")
        kinds.merge(analysis.statements, STATIC_PREPARE)


_QUOTE_STARTS = ("'", '"', "$", "N'", "E'", "X'", "B'", "U&'")


def _unquoted_after(keyword: Token, source: str) -> bool:
    """Whether what follows ``keyword`` in ``source`` is raw text (sqlglot's tokenizer keeps the
    rest of a command such as ``EXPLAIN ...`` as one STRING token) rather than a quoted literal
    (``EXECUTE 'DROP TABLE t'``)."""
    after = source[keyword.end + 1 :].lstrip()
    return not after.upper().startswith(_QUOTE_STARTS)


def _trigger_header_end(words: List[str], start: int) -> int:
    """Where a trigger's header ends (its event, ``INSERT``/``UPDATE``/``DELETE``, is no
    statement): at ``BEGIN`` (SQLite, MySQL compound bodies), else after ``FOR EACH ROW``
    (MySQL's one-statement body, skipping ``FOLLOWS``/``PRECEDES other``); a trigger that runs
    ``EXECUTE FUNCTION f()`` (PostgreSQL) has no body here: the function's own text is read
    where it is created."""
    if "BEGIN" in words[start:]:
        return words.index("BEGIN", start)
    for i in range(start, len(words) - 2):
        if words[i : i + 3] == ["FOR", "EACH", "ROW"]:
            end = i + 2
            if end + 2 < len(words) and words[end + 1] in ("FOLLOWS", "PRECEDES"):
                end += 2
            return end
    return len(words) - 1


def _replace_clause(tokens: Sequence[Token]) -> Set[int]:
    """Indexes of SQLite's row-replacing conflict clauses in a statement: ``INSERT OR REPLACE``
    and ``UPDATE OR REPLACE`` (the ``OR REPLACE``), and ``ON CONFLICT REPLACE`` in a table's
    constraints (which makes every later INSERT replace rows)."""
    found: Set[int] = set()
    words = [_word(t) for t in tokens]
    if len(words) > 2 and words[0] == "UPDATE" and words[1] == "OR" and words[2] == "REPLACE":
        found.update((1, 2))
    for i in range(1, len(words) - 1):
        if words[i] == "CONFLICT" and words[i + 1] == "REPLACE" and words[i - 1] == "ON":
            found.update((i - 1, i, i + 1))
    return found


def _explain_analyzes(words: List[str]) -> bool:
    """``EXPLAIN ANALYZE``/``ANALYSE`` or ``EXPLAIN (ANALYZE [true])`` executes the statement."""
    for i, word in enumerate(words[:12]):
        if word in ("ANALYZE", "ANALYSE"):
            return not (i + 1 < len(words) and words[i + 1] in _FALSE_WORDS)
        if word in _DML_WORDS:
            return False
    return False


def _without_on_commit_drop(words: List[str]) -> List[str]:
    """``ON COMMIT DROP`` drops only the temporary table being created: not a DROP."""
    for i in range(len(words) - 2):
        if words[i : i + 3] == ["ON", "COMMIT", "DROP"]:
            return words[:i] + words[i + 3 :]
    return words


def _string_body_kinds(body: str, dialect: Any) -> FrozenSet[str]:
    analysis = read_generic(body, dialect)
    if analysis.unverifiable:
        raise Unverifiable(analysis.unverifiable)
    if analysis.error:  # not plain SQL (a procedural body): scan its words, conservatively
        try:
            tokens = _dialect_and_parser(dialect)[0].tokenize(body)
        except SqlglotError:
            raise Unverifiable("a routine body that cannot be read cannot be checked") from None
        words = {_word(t) for t in tokens}
        if _DYNAMIC_WORDS.intersection(words):
            raise Unverifiable("a routine body that runs SQL with EXECUTE cannot be checked")
        return frozenset(words & _BODY_KEYWORDS) - {"CREATE"}
    return analysis.kinds


def _into_creates(node: exp.Into) -> bool:
    """``SELECT ... INTO t`` creates table ``t``; MySQL's ``INTO @variable`` only sets variables."""
    targets = node.expressions or [node.this]
    return not all(
        isinstance(t, exp.Table) and isinstance(t.this, (exp.Parameter, exp.SessionParameter)) for t in targets
    )


def _writes_sqlite_schema(node: exp.Expression) -> bool:
    target = node.this
    if isinstance(target, exp.Schema):
        target = target.this
    return isinstance(target, exp.Table) and target.name.lower() in SQLITE_SCHEMA_TABLES


def read_generic(text: str, dialect: Any = None) -> SQLAnalysis:
    """Statements of ``text`` as sqlglot's ``dialect`` reads them, with their kinds."""
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
        return SQLAnalysis((), "unparseable SQL (nested too deeply to parse)")
    finally:
        _POLICY_PARSING.reset(token)
    if not statements:
        return SQLAnalysis((), EMPTY_SQL)
    return SQLAnalysis(tuple(statements))
