"""PostgreSQL read by PostgreSQL's own parser (libpg_query, through ``pglast``).

sqlglot cannot read ordinary PostgreSQL such as dollar quoting in every position, ``NOTIFY``
or ``REFRESH MATERIALIZED VIEW``, and cannot see into PL/pgSQL bodies. libpg_query is the
server's grammar compiled as a library, so what it reads is what the server runs; its JSON parse
tree also comes cheaper than sqlglot's AST. Routine and ``DO`` bodies are read
too: SQL bodies as SQL, PL/pgSQL with libpg_query's PL/pgSQL parser, whose dynamic ``EXECUTE``
cannot be verified (blocked). Text whose statements are all plain SELECT, INSERT and UPDATE
calling curated functions is decided from the JSON text itself, without loading the tree
(:func:`_read_plain`: the same analysis the walk gives, without loading the tree).

>>> read_postgres("DO $$ BEGIN DELETE FROM t; END $$").kinds == {"DO", "DELETE"}
True
>>> read_postgres("EXPLAIN DELETE FROM t").kinds
frozenset({'EXPLAIN'})
"""

from __future__ import annotations

import functools
import json
import re
import sys
from typing import Any, Dict, FrozenSet, Iterator, List, Optional, Set, Tuple

import orjson
from pglast import parser as pg_parser

from . import rules
from .effects import EFFECT_BY_NAME, NESTED_TOO_DEEPLY, KindSet, SQLAnalysis, SQLStatement, Unverifiable, snippet
from .functions import is_known_function

__all__ = ["read_postgres"]

_RUNS = EFFECT_BY_NAME["run a statement"]

#: Parse-tree node types named by the keyword they count as (the rest are named by prefix, below).
_NODE_KINDS: Dict[str, str] = {
    "SelectStmt": "SELECT",
    "InsertStmt": "INSERT",
    "UpdateStmt": "UPDATE",
    "DeleteStmt": "DELETE",
    "MergeStmt": "MERGE",
    "TruncateStmt": "TRUNCATE",
    "CopyStmt": "COPY",
    "ExplainStmt": "EXPLAIN",
    "DoStmt": "DO",
    "CallStmt": "CALL",
    "PrepareStmt": "PREPARE",
    "ExecuteStmt": "EXECUTE",
    "DeallocateStmt": "DEALLOCATE",
    "VariableSetStmt": "SET",
    "VariableShowStmt": "SHOW",
    "LockStmt": "LOCK",
    "NotifyStmt": "NOTIFY",
    "ListenStmt": "LISTEN",
    "UnlistenStmt": "UNLISTEN",
    "RefreshMatViewStmt": "REFRESH",
    "ReindexStmt": "REINDEX",
    "CheckPointStmt": "CHECKPOINT",
    "ClusterStmt": "CLUSTER",
    "DiscardStmt": "DISCARD",
    "LoadStmt": "LOAD",
    "CommentStmt": "COMMENT",
    "RenameStmt": "ALTER",
    "IndexStmt": "CREATE",
    "ViewStmt": "CREATE",
    "RuleStmt": "CREATE",
    "GrantStmt": "GRANT",
    "GrantRoleStmt": "GRANT",
    "DeclareCursorStmt": "DECLARE",
    "FetchStmt": "FETCH",
    "ClosePortalStmt": "CLOSE",
    "SecLabelStmt": "ALTER",
    "ReassignOwnedStmt": "ALTER",
    "ImportForeignSchemaStmt": "CREATE",
}
_TRANSACTION_KINDS = {
    "TRANS_STMT_BEGIN": "BEGIN",
    "TRANS_STMT_START": "BEGIN",
    "TRANS_STMT_COMMIT": "COMMIT",
    "TRANS_STMT_ROLLBACK": "ROLLBACK",
    "TRANS_STMT_SAVEPOINT": "SAVEPOINT",
    "TRANS_STMT_RELEASE": "RELEASE",
    "TRANS_STMT_ROLLBACK_TO": "ROLLBACK",
    "TRANS_STMT_PREPARE": "COMMIT",
    "TRANS_STMT_COMMIT_PREPARED": "COMMIT",
    "TRANS_STMT_ROLLBACK_PREPARED": "ROLLBACK",
}
#: PL/pgSQL statements whose SQL is built at run time.
_DYNAMIC_PLPGSQL = ("PLpgSQL_stmt_dynexecute", "PLpgSQL_stmt_dynfors")
_QUERY_STATEMENTS = frozenset({"SelectStmt", "InsertStmt", "UpdateStmt", "DeleteStmt", "MergeStmt"})
_QUERY_CHILDREN = ("withClause", "larg", "rarg", "selectStmt")
_RAW_PARSE_DEFAULT = 0  # a PL/pgSQL expression that is a whole SQL statement
_RAW_PARSE_PLPGSQL_EXPR = 2  # an expression (IF, PERFORM, RETURN, ...)
_CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z])")


#: Frames kept free beyond a tree's depth when choosing orjson (json's own calls, and slack).
_JSON_STACK_SLACK = 50


def _loads(raw_tree: str) -> Dict[str, Any]:
    """libpg_query's JSON tree as Python values, the same as ``json.loads`` gives, or the same
    RecursionError.

    orjson reads the tree faster than ``json.loads``, into the same dicts, lists,
    strings and numbers in the same order; but ``json`` runs out of depth where orjson does not
    (a tree nested more deeply than the interpreter's recursion limit has room for: such text is
    blocked as nested too deeply). orjson is used only when ``json`` could not run out: the
    tree's depth is at most its number of ``{`` and ``[``, and the stack is shallow enough for
    that many more levels (``sys._getframe`` of that height fails). Anything else, and whatever
    orjson refuses, is read by ``json`` as before."""
    containers = raw_tree.count("{") + raw_tree.count("[")
    height = sys.getrecursionlimit() - containers - _JSON_STACK_SLACK
    if height > 0:
        try:
            sys._getframe(height)
        except ValueError:  # fewer frames than that: room for every level of the tree
            try:
                return orjson.loads(raw_tree)
            except orjson.JSONDecodeError:
                pass
    return json.loads(raw_tree)


def _node_kind(node_type: str, node: Dict[str, Any]) -> Optional[str]:
    kind = _NODE_KINDS.get(node_type)
    if kind is not None:
        return kind
    if node_type == "TransactionStmt":
        return _TRANSACTION_KINDS.get(node.get("kind", ""), "BEGIN")
    if node_type == "VacuumStmt":
        return "VACUUM" if node.get("is_vacuumcmd") else "ANALYZE"
    if not node_type.endswith("Stmt"):
        return None
    if node_type.startswith("Drop"):
        return "DROP"
    if node_type.startswith(("Create", "Define", "Composite")):
        return "CREATE"
    if node_type.startswith("Alter"):
        return "ALTER"
    return node_type[: -len("Stmt")].upper()


#: Node types met so far that are neither a call nor a statement (``ColumnRef``, ``A_Const``, ...).
_INERT_TYPES: Set[str] = set()


def _inert(node_type: str) -> bool:
    """Whether a node of this type adds nothing of its own (its children may): not a call, and
    no statement kind (:func:`_node_kind` reads the node itself only for statement types)."""
    if node_type == "FuncCall" or node_type in _NODE_KINDS or node_type.endswith("Stmt"):
        return False
    _INERT_TYPES.add(node_type)
    return True


def _construct(node_type: str, node: Dict[str, Any]) -> str:
    """How an unplaced statement is named in reasons and in ``allow_statements``:
    ``AlterSystemStmt`` is ``ALTER SYSTEM``, an ALTER TABLE subcommand ``ALTER TABLE DETACH
    PARTITION``, a setting ``SET standard_conforming_strings``."""
    if node_type == "AlterTableStmt":
        unknown = [
            c.get("AlterTableCmd", {}).get("subtype", "")
            for c in node.get("cmds", ())
            if c.get("AlterTableCmd", {}).get("subtype", "") not in rules.PG_ALTER_TABLE
        ]
        what = _CAMEL.sub(" ", unknown[0][3:]).upper() if unknown else ""
        return f"ALTER TABLE {what}".strip()
    if node_type == "VariableSetStmt":
        return f"SET {node.get('name', '')}".strip()
    return _CAMEL.sub(" ", node_type[: -len("Stmt")]).upper()


# ----------------------------------------------------------------------------- plain statements
#
# Most agent SQL is plain SELECT, INSERT and UPDATE statements calling curated functions, which the
# tree walk places without finding anything beyond each statement's own rows. Such text is told
# apart from libpg_query's JSON text itself, before any of it becomes Python values; it yields the
# analysis the walk would (checked by the differential benchmark); anything else is walked.
#
# Why reading the JSON text is exact: libpg_query writes every node as ``{"Type":{...}}`` and every
# field as ``"name":``, its keys are its own names (never text from the query), and a string value
# holds ``"`` only escaped (``\"``). So ``Stmt":`` occurs once per key ending in ``Stmt``, ``{"X":``
# once per node of type X, and ``"field":`` once per field of that name; a query's text can put none
# of these into the JSON.

#: Statement types the JSON text decides, with the fields whose presence sends the text to the
#: walk: the fields the rules of these types read (``SELECT ... INTO``, ``ON CONFLICT``), and a
#: ``WITH`` of an INSERT or UPDATE (which the walk reads even where it skips expressions).
_PLAIN_STATEMENTS: Dict[str, Tuple[str, ...]] = {
    "SelectStmt": ('"intoClause":',),
    "InsertStmt": ('"intoClause":', '"onConflictClause":', '"withClause":'),
    "UpdateStmt": ('"intoClause":', '"withClause":'),
}
#: Fields every plain type refuses: searched once in the whole text (which is its statements).
_REFUSED_EVERYWHERE: Tuple[str, ...] = tuple(
    field for field in _PLAIN_STATEMENTS["SelectStmt"] if all(field in f for f in _PLAIN_STATEMENTS.values())
)
#: The others, searched in the statement of that type only.
_REFUSED_IN_STATEMENT: Dict[str, Tuple[str, ...]] = {
    node_type: tuple(f for f in fields if f not in _REFUSED_EVERYWHERE)
    for node_type, fields in _PLAIN_STATEMENTS.items()
}
#: The text split at ``tmt":`` leaves a plain statement's key as this piece right after the
#: statement list's ``{"stmt":`` (``{"stmt":{"SelectStmt":{...``).
_PLAIN_KEYS: Dict[str, str] = {'{"' + node_type[:-3]: node_type for node_type in _PLAIN_STATEMENTS}
#: A call's name, right after ``{"FuncCall":``, when it is one identifier with no escaped
#: character, unqualified or in ``pg_catalog`` (the schema the walk also takes as the built-ins',
#: and the one PostgreSQL's parser itself names for the standard's syntax: ``EXTRACT``, ``TRIM``,
#: ``SUBSTRING ... FROM``, ``POSITION``); anything else, such as ``public.f`` or a quoted name
#: holding ``"``, is walked.
_PLAIN_CALL_NAME = re.compile(
    r'\{"funcname":\[(?:\{"String":\{"sval":"pg_catalog"\}\},)?\{"String":\{"sval":"([^"\\]*)"\}\}\]'
)
#: The table an INSERT or UPDATE writes: its first field, ``relation``, a RangeVar written in place.
_PLAIN_RELATION = re.compile(
    r'\{"relation":\{(?:"catalogname":"[^"\\]*",)?(?:"schemaname":"[^"\\]*",)?"relname":"([^"\\]*)"'
)
#: A statement's own fields follow its tree, within these last characters of its JSON text
#: (``,"stmt_location":N,"stmt_len":M}]}``, two numbers of at most ten digits).
_STATEMENT_TAIL = 64
_STATEMENT_FIELD = re.compile(r'"stmt_(location|len)":(\d+)')
#: Frames the walk takes per level of the JSON tree, at most: the dict's own walk, the node's
#: visit, and the walk of the copy of a query statement's fields (``_Reader.node``).
_FRAMES_PER_LEVEL = 3


#: :func:`_plain_statement` by (type, reads), filled as they are met (six at most).
_PLAIN_KINDS: Dict[Tuple[str, bool], Tuple[FrozenSet[str], Tuple[Tuple[str, str], ...]]] = {}


def _plain_statement(node_type: str, reads: bool) -> Tuple[FrozenSet[str], Tuple[Tuple[str, str], ...]]:
    """The kinds and reasons the walk gives a plain statement of ``node_type`` with none of the
    fields of :data:`_PLAIN_STATEMENTS`, and a SELECT visited under it when ``reads``: the same
    rules applied in the walk's order (the statement first), computed once (:data:`_PLAIN_KINDS`)."""
    kinds = KindSet()
    kind = _node_kind(node_type, {})
    for rule in rules.pglast_rules(node_type, {}) or ():
        kinds.apply(EFFECT_BY_NAME[rule.effect], rule.keyword or kind)
    if reads:
        for rule in rules.pglast_rules("SelectStmt", {}) or ():
            kinds.apply(EFFECT_BY_NAME[rule.effect], rule.keyword or "SELECT")
    statement = kinds.statement("")
    _PLAIN_KINDS[node_type, reads] = statement.kinds, statement.because
    return statement.kinds, statement.because


#: Where one statement of the list sits in the JSON text, and what is below it: its type, where
#: its list entry starts (just after ``{"stmt":``), where its fields start (just after its own key,
#: ``{"InsertStmt":``), where the next ``{"stmt":`` starts (or the text ends), whether a SELECT
#: node is below it, and whether it is an INSERT whose rows are a SELECT
#: (``"selectStmt":{"SelectStmt":``). A plain tuple: one is built per statement of every text.
_PlainStatement = Tuple[str, int, int, int, bool, bool]


def _plain_statements(raw_tree: str) -> Optional[List[_PlainStatement]]:
    """The statements of the list, when every key ending in ``Stmt`` in the text is a plain
    statement's at the top of the list (:data:`_PLAIN_KEYS`), a SELECT below one, or an INSERT's
    field ``selectStmt``; None when any other is there (a statement of another type anywhere, an
    INSERT or UPDATE below a statement).

    One split at ``tmt":`` finds them all, in order: each piece but the last ends with such a
    key (``...{"s`` for the list's ``{"stmt":``, ``...{"SelectS`` for a SELECT node, ``..."selectS``
    for the field), told by the piece's last characters; a key of another name ending in ``tmt``
    sends the text to the walk."""
    keys = raw_tree.split('tmt":')
    if len(keys) == 3 and keys[0].endswith('{"s'):  # one statement, no other such key: the usual text
        node_type = _PLAIN_KEYS.get(keys[1], "")
        if not node_type:
            return None
        start = len(keys[0]) + 5
        return [(node_type, start, start + len(keys[1]) + 5, len(raw_tree), False, False)]
    found: List[_PlainStatement] = []
    at = 0
    start = -1  # where the current statement's list entry starts; -1 before the first
    node_type = ""
    fields = 0
    selects = rows = opened = after_rows = False
    for index in range(len(keys) - 1):
        key = keys[index]
        at += len(key) + 5
        if opened:  # the statement's own key, right after {"stmt":
            node_type = _PLAIN_KEYS.get(key, "")
            if not node_type:
                return None
            fields, selects, rows, opened = at, False, False, False
        elif key.endswith('{"s'):  # the list's "stmt": a statement starts
            if start >= 0:
                found.append((node_type, start, fields, at - 8, selects, rows))
            start, opened = at, True
        elif key.endswith('{"SelectS') and start >= 0:
            selects = True
            rows = rows or (after_rows and key == '{"SelectS')
        elif not key.endswith('"selectS'):
            return None  # another statement type, or an INSERT or UPDATE below a statement
        after_rows = key.endswith('"selectS')
    if start < 0 or opened:
        return None
    found.append((node_type, start, fields, len(raw_tree), selects, rows))
    return found


def _plain_calls_known(raw_tree: str) -> Optional[bool]:
    """Whether every call in the tree is one the walk finds known (an unqualified name on the
    curated list): True, or False when one is not (the text is then walked); None when the text
    has no ``"FuncCall"`` at all (the walk's own test for visiting every node).

    One split at ``{"FuncCall":``, which is a call and nothing else: a string value holds ``"``
    only escaped, so the text ``"FuncCall"`` there (a column named so) is never after a ``{`` and
    before a ``:``, and the walk's test is asked only of text with no call."""
    calls = raw_tree.split('{"FuncCall":')
    if len(calls) == 1:
        return True if '"FuncCall"' in raw_tree else None
    for call in calls[1:]:
        name = _PLAIN_CALL_NAME.match(call)
        if name is None or not _known_call(name.group(1)):
            return False
    return True


@functools.lru_cache(maxsize=4096)
def _known_call(name: str) -> bool:
    """Whether a call of ``name`` (as written, unqualified) is on the curated list, as the walk
    looks it up; kept for the few names agents call over and over."""
    return is_known_function(name.lower(), "postgres")


def _statement_numbers(raw_tree: str, start: int, end: int) -> Tuple[int, int]:
    """A statement's ``stmt_location`` and ``stmt_len`` from the end of its JSON text,
    ``raw_tree[start:end]`` (libpg_query leaves out a zero; no node below a statement has these
    fields): one search tells a statement with neither (one with no ``;`` after it, at the start)."""
    tail = max(start, end - _STATEMENT_TAIL)
    if raw_tree.find('"stmt_l', tail, end) < 0:
        return 0, 0
    numbers = dict(_STATEMENT_FIELD.findall(raw_tree, tail, end))
    return int(numbers.get("location", 0)), int(numbers.get("len", 0))


def _snippet(text: str) -> str:
    """:func:`.effects.snippet` of a statement's text (compared with it in the tests), told to
    be on one line already by searches of one or two characters, one function call fewer."""
    if (
        text.isascii()
        and "  " not in text
        and text[:1] != " "
        and text[-1:] != " "
        and "\n" not in text
        and "\t" not in text
        and "\r" not in text
        and "\x0b" not in text
        and "\x0c" not in text
        and "\x1c" not in text
        and "\x1d" not in text
        and "\x1e" not in text
        and "\x1f" not in text
    ):
        return text if len(text) <= _SNIPPET_LIMIT else text[: _SNIPPET_LIMIT - 3] + "..."
    return snippet(text)


#: How many characters :func:`.effects.snippet` keeps, "..." included (its default ``limit``).
_SNIPPET_LIMIT = 120


#: A frozen dataclass's ``__init__`` sets each field with ``object.__setattr__``; the plain
#: reading builds its statements and analysis with their fields' dict at once (the same
#: values, equal and hashed alike, without a call per field).
_new_object = object.__new__
_set_attribute = object.__setattr__


def _room_for_the_walk(nesting: int) -> bool:
    """Whether the walk of a statement whose ``{`` nest ``nesting`` deep has room on the stack
    (:func:`_read_plain` says why twice as deep, plus four)."""
    height = sys.getrecursionlimit() - _FRAMES_PER_LEVEL * (2 * nesting + 4) - _JSON_STACK_SLACK
    if height <= 0:
        return False
    try:
        sys._getframe(height)
        return False
    except ValueError:  # fewer frames than that: room for the walk
        return True


#: Nodes below which libpg_query writes no node but a ``String`` (a ``ColumnRef``'s field, a
#: ``RangeVar``'s alias column), each opening two ``{`` of its own (``{"String":{``); the values a
#: node holds in a dict of their own (an ``A_Const``'s ``{"ival":...}``) are not counted here.
_LEAF_NODES = ('{"String":{', '{"ColumnRef":{', '{"A_Const":{', '{"RangeVar":{')
#: The most ``{`` of :data:`_LEAF_NODES` on one path down the tree: a node and a String below it.
_LEAF_NESTING = 4


def _nesting_bounds(raw_tree: str, start: int, end: int) -> Iterator[int]:
    """Bounds on how deeply the ``{`` of ``raw_tree[start:end]`` nest, each counted in C: every
    ``{``; then, one type of leaf node (:data:`_LEAF_NODES`) after the other, every ``{`` but
    those of the leaves counted so far, of which a path down the tree holds
    at most :data:`_LEAF_NESTING`. Most of a tree's ``{`` are its leaves' (each column is a
    ``ColumnRef`` and two ``String``), which a count of every ``{`` takes as nested in each other.
    Each bound costs a scan of the text, so the reader stops at the first one that leaves the walk
    room (the leaf most trees hold most of, ``String``, is counted first). The patterns are
    libpg_query's own keys: a query's text cannot put them into the JSON text (a string value
    holds ``"`` only escaped)."""
    bound = raw_tree.count("{", start, end)
    yield bound
    bound += _LEAF_NESTING
    for leaf in _LEAF_NODES:
        bound -= 2 * raw_tree.count(leaf, start, end)
        yield bound


def _read_plain(text: str, raw_tree: str) -> Optional[SQLAnalysis]:
    """The analysis of ``text`` read from libpg_query's JSON text when every statement in it is
    a plain SELECT, INSERT or UPDATE (:data:`_PLAIN_STATEMENTS`) and every call one of the
    curated functions; None for anything else (the tree is then loaded and walked)."""
    plain = _plain_statements(raw_tree)
    if plain is None:
        return None
    # The walk visits every node when the text has a call ('"FuncCall"' anywhere, as it tests).
    calls_known = _plain_calls_known(raw_tree)
    if calls_known is False:
        return None
    walks_all = calls_known is not None
    for field in _REFUSED_EVERYWHERE:
        if field in raw_tree:
            return None
    # The walk would run out of stack where the tree is too deep: such text is walked (and fails
    # as the walk does). libpg_query writes a list's items as nodes (``{}`` for none; a list in a
    # list is a ``List`` node) or as numbers, so on any path down the tree a list is followed by a
    # dict or ends it: a statement's depth is at most twice how deeply its ``{`` nest, plus one
    # (and the statement list, the statement and its wrapper above it). Their number bounds their
    # nesting; where it is too high, the tighter bounds of :func:`_nesting_bounds` are taken.
    for statement in plain:
        for bound in _nesting_bounds(raw_tree, statement[1], statement[3]):
            if _room_for_the_walk(bound):
                break
        else:
            return None
    encoded = None if text.isascii() else text.encode("utf-8")
    statements: List[SQLStatement] = []
    for node_type, start, fields, end, selects, rows in plain:
        for field in _REFUSED_IN_STATEMENT[node_type]:
            if raw_tree.find(field, start, end) >= 0:
                return None
        writes: Tuple[str, ...] = ()
        reads = False
        if node_type != "SelectStmt":
            relation = _PLAIN_RELATION.match(raw_tree, fields, end)
            if relation is None:
                return None
            writes = (relation.group(1).lower(),) if relation.group(1) else ()
            # An INSERT's rows come from a SELECT (VALUES included) the walk always visits; other
            # SELECTs sit in expressions, visited only when the walk visits everything.
            reads = (node_type == "InsertStmt" and rows) or (walks_all and selects)
        kinds, because = _PLAIN_KINDS.get((node_type, reads)) or _plain_statement(node_type, reads)
        if raw_tree.find('"stmt_l', end - _STATEMENT_TAIL, end) < 0:  # neither: the usual one statement
            location = length = 0
        else:
            location, length = _statement_numbers(raw_tree, start, end)
        if encoded is None:
            shown = text[location : location + length] if length else text[location:]
        else:
            length = length or len(encoded) - location
            shown = encoded[location : location + length].decode("utf-8", "replace")
        statement = _new_object(SQLStatement)  # SQLStatement(_snippet(shown), kinds, because, (), writes)
        _set_attribute(
            statement,
            "__dict__",
            {"text": _snippet(shown), "kinds": kinds, "because": because, "unknown": (), "writes": writes},
        )
        statements.append(statement)
    analysis = _new_object(SQLAnalysis)  # SQLAnalysis(tuple(statements))
    _set_attribute(analysis, "__dict__", {"statements": tuple(statements), "error": None, "unverifiable": None})
    return analysis


def read_postgres(text: str, routines: Optional[Set[str]] = None) -> SQLAnalysis:
    """Statements of ``text`` as PostgreSQL reads them, with their kinds and unknown constructs
    (see ``effects``); ``routines`` are the names of routines created earlier in the same text."""
    try:
        raw_tree = pg_parser.parse_sql_json(text)
    except pg_parser.ParseError as err:
        return SQLAnalysis((), f"unparseable SQL for PostgreSQL ({err.args[0] if err.args else err})")
    except RecursionError:
        return SQLAnalysis((), unverifiable=NESTED_TOO_DEEPLY)
    plain = _read_plain(text, raw_tree)
    if plain is not None:
        return plain
    try:
        tree = _loads(raw_tree)
    except RecursionError:
        return SQLAnalysis((), unverifiable=NESTED_TOO_DEEPLY)
    # Calls sit in expressions, which the walk otherwise skips: only then is the whole tree walked.
    reader = _Reader(has_calls='"FuncCall"' in raw_tree, routines=routines)
    statements: List[SQLStatement] = []
    encoded = text.encode("utf-8")
    try:
        for raw in tree.get("stmts", ()):
            kinds = KindSet()
            start = raw.get("stmt_location", 0)
            length = raw.get("stmt_len") or len(encoded) - start
            reader.statement_text = encoded[start : start + length].decode("utf-8", "replace")
            reader.walk(raw.get("stmt", {}), kinds)
            statements.append(kinds.statement(snippet(reader.statement_text)))
    except Unverifiable as err:
        return SQLAnalysis((), unverifiable=str(err))
    except RecursionError:
        return SQLAnalysis((), unverifiable=NESTED_TOO_DEEPLY)
    return SQLAnalysis(tuple(statements))


class _Reader:
    """Walks libpg_query's JSON tree, looking every statement node and every call up in the
    rules (:func:`.rules.pglast_rules`) and adding what they count as to a :class:`KindSet`.

    Remembers the names prepared earlier in the same text, so ``EXECUTE s`` of a statement
    whose text was checked is known, and ``EXECUTE s`` of anything else is not; and the
    routines created in it, so ``CALL p()`` of one of them is judged by its body (read where it
    is created).
    """

    def __init__(self, has_calls: bool = True, routines: Optional[Set[str]] = None) -> None:
        self.prepared: Set[str] = set()
        self.routines: Set[str] = set(routines or ())
        self.has_calls = has_calls
        #: The text of the top-level statement being walked (PL/pgSQL is parsed from it).
        self.statement_text = ""

    def walk(self, value: Any, kinds: KindSet) -> None:
        """Visit every node under ``value`` in the tree's order. Only dicts and lists are
        descended into (a string or number holds no node), and a node type that is neither a
        call nor a statement (:func:`_inert`) is known by one set look-up."""
        if type(value) is list:
            for item in value:
                if type(item) is dict or type(item) is list:
                    self.walk(item, kinds)
            return
        if type(value) is not dict:
            return
        inert = _INERT_TYPES
        for key, child in value.items():
            child_type = type(child)
            if child_type is dict:
                if key in inert or not key[:1].isupper() or _inert(key) or not self.node(key, child, kinds):
                    self.walk(child, kinds)
            elif child_type is list:
                self.walk(child, kinds)

    def node(self, node_type: str, node: Dict[str, Any], kinds: KindSet) -> bool:
        """Add what one node counts as; True when its children are already handled."""
        if node_type == "FuncCall":
            if not rules.pg_function_known(node):
                name = rules.pg_function_name(node)
                if name.lower() not in self.routines:
                    kinds.not_placed("function", name.lower(), f"{name}()")
            return False
        kind = _node_kind(node_type, node)
        if kind is None:
            return False
        wrapper = rules.PG_WRAPPERS.get(node_type)
        if wrapper is not None and not wrapper.own_rules:  # CALL: the routine decides, no row of its own
            kinds.add(kind)
            return self._unwrap(wrapper, node, kinds)
        if node_type in ("InsertStmt", "UpdateStmt", "DeleteStmt"):
            relation = node.get("relation", {})
            relation = relation.get("RangeVar", relation)
            if relation.get("relname"):
                kinds.writes[str(relation["relname"]).lower()] = None
        matched = rules.pglast_rules(node_type, node)
        if not matched:
            kinds.apply(EFFECT_BY_NAME["unknown"], kind)
            kinds.not_placed("statement", _construct(node_type, node))
        else:
            for rule in matched:
                kinds.apply(EFFECT_BY_NAME[rule.effect], rule.keyword or kind)
        if wrapper is not None:
            return self._unwrap(wrapper, node, kinds)
        if node_type == "MergeStmt":
            for clause in node.get("mergeWhenClauses", ()):
                command = clause.get("MergeWhenClause", {}).get("commandType", "")
                if command.startswith("CMD_") and command != "CMD_NOTHING":
                    kinds.add(command[4:], EFFECT_BY_NAME["merge"].why)
        elif node_type == "CopyStmt":
            if node.get("is_program"):
                raise Unverifiable(
                    f"COPY ... PROGRAM runs a shell command on the database server: {node.get('filename', '')!r}"
                )
        elif node_type == "CreateFunctionStmt":
            names = [str(n.get("String", {}).get("sval", "")) for n in node.get("funcname", ())]
            if names:
                self.routines.add(names[-1].lower())
            self._routine_body(node, kinds)
        elif node_type == "CreateTrigStmt":
            name = ".".join(str(n.get("String", {}).get("sval", "")) for n in node.get("funcname", ()))
            if name.lower().rsplit(".", 1)[-1] not in self.routines:
                kinds.not_placed("function", name.lower(), f"trigger function {name}()")
        # A CreateStmt's ON COMMIT DROP is an option of the table it creates, no DropStmt: only CREATE.
        if node_type in _QUERY_STATEMENTS and not self.has_calls:
            # PostgreSQL allows a data-modifying statement only at the top of a query or in its
            # WITH; expressions and subqueries hold SELECTs at most, and with no call anywhere in
            # the text, only those children matter.
            for key in _QUERY_CHILDREN:
                child = node.get(key)
                if child is not None:
                    self.walk(child if key != "larg" and key != "rarg" else {"SelectStmt": child}, kinds)
            return True
        if node_type in _QUERY_STATEMENTS:
            for key in ("larg", "rarg"):
                child = node.get(key)
                if child is not None:
                    self.walk({"SelectStmt": child}, kinds)
            self.walk({k: v for k, v in node.items() if k not in ("larg", "rarg")}, kinds)
            return True
        return False

    # ----------------------------------------------------------------------- wrappers
    def _unwrap(self, wrapper: rules.PgWrapper, node: Dict[str, Any], kinds: KindSet) -> bool:
        """A statement that holds another (a row of ``rules.PG_WRAPPERS``): its inner, found by
        the row, counts as run by it when the row says it runs; True when its children are done."""
        if wrapper.prepares:
            self.prepared.add(str(node.get("name", "")).lower())
        if wrapper.runs(node):
            inner = wrapper.inner(node)
            self._INNER_READERS[inner.how](self, inner, kinds)
        return not wrapper.children

    def _inner_tree(self, inner: rules.Inner, kinds: KindSet) -> None:
        found = KindSet()
        self.walk(inner.node, found)
        kinds.merge([found.statement("")], _RUNS.why)

    def _inner_prepared(self, inner: rules.Inner, kinds: KindSet) -> None:
        if inner.name not in self.prepared:  # else it runs a statement prepared from checked text
            raise Unverifiable(inner.why)

    def _inner_routine(self, inner: rules.Inner, kinds: KindSet) -> None:
        if inner.name.lower() not in self.routines:  # a routine created in this text: its body was read
            kinds.not_placed("function", inner.name.lower(), f"CALL {inner.name}")

    def _inner_body(self, inner: rules.Inner, kinds: KindSet) -> None:
        self._do_body(inner.node, kinds)

    _INNER_READERS = {
        "tree": _inner_tree,
        "prepared": _inner_prepared,
        "routine": _inner_routine,
        "body": _inner_body,
    }

    # ----------------------------------------------------------------------- bodies
    def _routine_body(self, node: Dict[str, Any], kinds: KindSet) -> None:
        language, body = "sql", None
        for option in node.get("options", ()):
            elem = option.get("DefElem", {})
            if elem.get("defname") == "language":
                language = str(elem.get("arg", {}).get("String", {}).get("sval", "")).lower()
            elif elem.get("defname") == "as":
                arg = elem.get("arg", {})
                items = arg.get("List", {}).get("items", []) if "List" in arg else [arg]
                body = "".join(str(i.get("String", {}).get("sval", "")) for i in items[:1])
        if body is None:
            return  # SQL-standard body (BEGIN ATOMIC / RETURN): already nodes, walked as children
        if language == "plpgsql":
            # PL/pgSQL is parsed from the CREATE statement itself, whose return type decides
            # what RETURN may say (a trigger function returns NEW or OLD).
            self._take(language, _plpgsql_statements(self.statement_text, self.routines), kinds)
            return
        self._body(language, body, kinds)

    def _do_body(self, node: Dict[str, Any], kinds: KindSet) -> None:
        language, body = "plpgsql", ""
        for arg in node.get("args", ()):
            elem = arg.get("DefElem", {})
            value = str(elem.get("arg", {}).get("String", {}).get("sval", ""))
            if elem.get("defname") == "as":
                body = value
            elif elem.get("defname") == "language":
                language = value.lower()
        self._body(language, body, kinds)

    def _body(self, language: str, body: str, kinds: KindSet) -> None:
        if language == "sql":
            analysis = read_postgres(body, self.routines)
        elif language == "plpgsql":
            analysis = _read_plpgsql(body, self.routines)
        else:
            raise Unverifiable(f"a routine body in LANGUAGE {language} cannot be verified (only sql and plpgsql can)")
        self._take(language, analysis, kinds)

    @staticmethod
    def _take(language: str, analysis: SQLAnalysis, kinds: KindSet) -> None:
        if analysis.unverifiable:
            raise Unverifiable(analysis.unverifiable)
        if analysis.error:
            raise Unverifiable(f"a {language} body that PostgreSQL's parser cannot read ({analysis.error})")
        kinds.merge(analysis.statements, _RUNS.why)


def _read_plpgsql(body: str, routines: Optional[Set[str]] = None) -> SQLAnalysis:
    """The SQL statements a PL/pgSQL body (a ``DO`` block's) runs; dynamic ``EXECUTE`` is
    unverifiable."""
    tag = "$agentos_body$"
    if tag in body:
        return SQLAnalysis((), unverifiable="a PL/pgSQL body containing $agentos_body$ cannot be checked")
    return _plpgsql_statements(
        f"CREATE FUNCTION agentos_body() RETURNS void LANGUAGE plpgsql AS {tag}{body}{tag}", routines
    )


def _plpgsql_statements(create_statement: str, routines: Optional[Set[str]] = None) -> SQLAnalysis:
    try:
        tree = _loads(pg_parser.parse_plpgsql_json(create_statement))
    except pg_parser.ParseError as err:
        return SQLAnalysis((), f"unparseable PL/pgSQL ({err.args[0] if err.args else err})")
    statements: List[SQLStatement] = []
    pending: List[Any] = [tree]
    while pending:
        value = pending.pop()
        if isinstance(value, list):
            pending.extend(value)
            continue
        if not isinstance(value, dict):
            continue
        for key, child in value.items():
            if key in _DYNAMIC_PLPGSQL:
                literal = (
                    _string_literal(child.get("query", {}).get("PLpgSQL_expr", {}).get("query", ""))
                    if isinstance(child, dict)
                    else None
                )
                if literal is None:
                    return SQLAnalysis((), unverifiable="PL/pgSQL EXECUTE of SQL built at run time cannot be checked")
                inner = read_postgres(literal, routines)  # EXECUTE 'literal text': known now
                if inner.problem:
                    return SQLAnalysis(
                        (), unverifiable=f"PL/pgSQL EXECUTE of text that cannot be checked ({inner.problem})"
                    )
                statements.extend(inner.statements)
                continue
            if key == "PLpgSQL_stmt_open" and isinstance(child, dict) and child.get("dynquery"):
                return SQLAnalysis(
                    (), unverifiable="PL/pgSQL OPEN ... FOR EXECUTE of SQL built at run time cannot be checked"
                )
            if key == "PLpgSQL_stmt_return_query" and isinstance(child, dict) and child.get("dynquery"):
                return SQLAnalysis(
                    (), unverifiable="PL/pgSQL RETURN QUERY EXECUTE of SQL built at run time cannot be checked"
                )
            if key == "PLpgSQL_expr" and isinstance(child, dict):
                # A whole statement is read as one; any other expression (IF, PERFORM, RETURN, an
                # assignment) as the SELECT of it, so its calls are judged.
                query = str(child.get("query", ""))
                if child.get("parseMode", 0) != _RAW_PARSE_DEFAULT:
                    query = "SELECT " + _assigned_value(query)
                inner = read_postgres(query, routines)
                if inner.error is not None and child.get("parseMode", 0) != _RAW_PARSE_DEFAULT:
                    return SQLAnalysis((), unverifiable=f"a PL/pgSQL expression that cannot be read: {snippet(query)}")
                if inner.problem:
                    return inner
                statements.extend(inner.statements)
                continue
            pending.append(child)
    return SQLAnalysis(tuple(statements))


_ASSIGNMENT = re.compile(r"^\s*[\w.\[\]\"]+\s*:?=(?!=)")


def _assigned_value(expression: str) -> str:
    """The value side of a PL/pgSQL assignment (``x := f(1)``), else the expression itself."""
    match = _ASSIGNMENT.match(expression)
    return expression[match.end() :] if match else expression


def _string_literal(expression: str) -> Optional[str]:
    """The value of ``expression`` when it is one string literal (``'...'``, ``E'...'``,
    ``$$...$$``), else None: such an EXECUTE runs text known now.

    >>> _string_literal("'SELECT 1'"), _string_literal("'DROP TABLE ' || name")
    ('SELECT 1', None)
    """
    try:
        tree = _loads(pg_parser.parse_sql_json(f"SELECT {expression}"))
    except pg_parser.ParseError:
        return None
    stmts = tree.get("stmts", ())
    if len(stmts) != 1:
        return None
    select = stmts[0].get("stmt", {}).get("SelectStmt", {})
    targets = select.get("targetList", [])
    if len(targets) != 1 or set(select) != {"targetList", "limitOption", "op"}:  # nothing but the one value
        return None
    value = targets[0].get("ResTarget", {}).get("val", {}).get("A_Const", {})
    sval = value.get("sval")
    return sval.get("sval") if isinstance(sval, dict) else None
