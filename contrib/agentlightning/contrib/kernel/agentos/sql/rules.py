"""Which effect row applies, for each reader: the predicates, as tables.

One :class:`Rule` per (effect row, form): the effect's name (a row of
:data:`.effects.EFFECTS`) and a predicate for each reader that can see the form:

* ``sqlglot`` -- node classes, and optionally a test on the node;
* ``command`` -- the statement's first word (upper case) for what sqlglot keeps as a ``Command``
  or cannot parse, and optionally a test on the words after it;
* ``pglast`` -- PostgreSQL parse-tree node types, and optionally a test on the node.

The readers walk the tree and look each node up here: a node of a placed class (a statement, a
function call, a command) that no rule matches is ``unknown``. Adding a form is adding a rule.

>>> [r.effect for r in command_rules("FLUSH", ["TABLES"])]
['maintenance']
>>> command_rules("KILL", ["42"])
[]
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Dict, FrozenSet, List, Optional, Sequence, Tuple, Type

from sqlglot import exp
from sqlglot.tokens import TokenType

from .effects import EFFECT_BY_NAME, SQLITE_SCHEMA_TABLES
from .functions import SQLGLOT_KEYS, is_known_function

__all__ = [
    "Rule",
    "RULES",
    "sqlglot_rules",
    "command_rules",
    "pglast_rules",
    "SQLGLOT_PLACED",
    "KNOWN_SETTINGS",
    "SAFE_SQL_MODES",
    "STRICT_SQL_MODES",
    "KNOWN_PRAGMAS",
    "ALTER_CLAUSES",
    "PG_ALTER_TABLE",
    "setting_is_known",
    "Inner",
    "Wrapper",
    "WRAPPERS",
    "wrapper_for",
    "WRAPPER_WORDS",
    "PgWrapper",
    "PG_WRAPPERS",
]


@dataclass(frozen=True)
class Rule:
    """One form of one effect row, with the predicate each reader uses."""

    effect: str
    sqlglot: Tuple[Type[exp.Expression], ...] = ()
    sqlglot_when: Optional[Callable[[Any], bool]] = None
    command: Tuple[str, ...] = ()
    command_when: Optional[Callable[[List[str]], bool]] = None
    pglast: Tuple[str, ...] = ()
    pglast_when: Optional[Callable[[Dict[str, Any]], bool]] = None
    #: The keyword a statement of this form counts as itself (added without a reason), when the
    #: node's own class does not say it (``FLUSH`` is a ``Command``).
    keyword: Optional[str] = None


# --------------------------------------------------------------------------- settings and pragmas

#: Session settings that do not change how the rest of the text is read, nor what runs later.
#: Anything else (``sql_mode`` except below, ``standard_conforming_strings``, ``NAMES`` of a
#: multi-byte charset, ``ROLE``, ``SESSION AUTHORIZATION``, ...) is unknown.
KNOWN_SETTINGS: FrozenSet[str] = frozenset(
    """
    autocommit time_zone timezone foreign_key_checks unique_checks sql_safe_updates max_execution_time
    group_concat_max_len transaction_isolation tx_isolation transaction_read_only innodb_lock_wait_timeout
    lock_wait_timeout net_read_timeout net_write_timeout wait_timeout interactive_timeout sql_select_limit
    max_join_size sql_big_selects optimizer_switch sort_buffer_size join_buffer_size tmp_table_size
    max_heap_table_size lc_time_names div_precision_increment default_week_format sql_notes sql_warnings
    sql_quote_show_create cte_max_recursion_depth max_recursive_iterations statement_timeout lock_timeout
    idle_in_transaction_session_timeout search_path application_name client_min_messages datestyle
    intervalstyle work_mem maintenance_work_mem temp_buffers random_page_cost seq_page_cost
    effective_cache_size jit extra_float_digits default_transaction_isolation default_transaction_read_only
    transaction enable_seqscan enable_indexscan enable_bitmapscan enable_hashjoin enable_mergejoin
    enable_nestloop enable_sort enable_hashagg parallel_setup_cost max_parallel_workers_per_gather
    lc_messages lc_monetary lc_numeric lc_time row_security synchronous_commit max_statement_time
    """.split()
)
#: ``sql_mode`` values that leave quoting and comments as the default reads them.
SAFE_SQL_MODES: FrozenSet[str] = frozenset(
    """
    STRICT_TRANS_TABLES STRICT_ALL_TABLES ONLY_FULL_GROUP_BY NO_ZERO_DATE NO_ZERO_IN_DATE
    ERROR_FOR_DIVISION_BY_ZERO NO_ENGINE_SUBSTITUTION NO_AUTO_VALUE_ON_ZERO TRADITIONAL NO_UNSIGNED_SUBTRACTION
    PAD_CHAR_TO_FULL_LENGTH REAL_AS_FLOAT ALLOW_INVALID_DATES NO_DIR_IN_CREATE SIMULTANEOUS_ASSIGNMENT
    TIME_ROUND_FRACTIONAL
    """.split()
)
#: Character sets whose every byte sequence reads like ASCII for quotes and backslashes.
_SAFE_CHARSETS = frozenset({"utf8", "utf8mb3", "utf8mb4", "latin1", "ascii", "binary", "default"})


def setting_is_known(name: str, value: Optional[str]) -> bool:
    """Whether setting ``name`` (lower case) to ``value`` (a literal, or None when not one)
    changes nothing but this session's options.

    >>> setting_is_known("sql_mode", "STRICT_TRANS_TABLES,NO_ZERO_DATE"), setting_is_known("sql_mode", "ANSI")
    (True, False)
    """
    if name == "sql_mode":
        return value is not None and all(m.strip().upper() in SAFE_SQL_MODES for m in value.split(",") if m.strip())
    if name in ("names", "character set", "charset"):
        return value is not None and value.strip("'\"").lower() in _SAFE_CHARSETS
    return name in KNOWN_SETTINGS


#: SQLite pragmas that only read, and settings that change no row and no schema.
KNOWN_PRAGMAS: FrozenSet[str] = frozenset(
    """
    table_info table_xinfo index_list index_info index_xinfo foreign_key_list foreign_key_check database_list
    table_list function_list pragma_list collation_list compile_options integrity_check quick_check page_count
    page_size freelist_count encoding user_version application_id data_version max_page_count
    foreign_keys busy_timeout journal_mode synchronous cache_size temp_store case_sensitive_like
    recursive_triggers defer_foreign_keys automatic_index query_only read_uncommitted wal_autocheckpoint
    optimize wal_checkpoint mmap_size threads analysis_limit cell_size_check secure_delete auto_vacuum
    incremental_vacuum shrink_memory reverse_unordered_selects ignore_check_constraints locking_mode
    soft_heap_limit hard_heap_limit legacy_file_format full_fsync checkpoint_fullfsync
    """.split()
)
#: Pragmas known only when read (no value): setting them edits the schema's own bookkeeping.
_READ_ONLY_PRAGMAS = frozenset({"writable_schema", "schema_version", "trusted_schema"})


def _pragma_known(node: exp.Pragma) -> bool:
    target = node.this
    assigned = isinstance(target, exp.EQ)
    if assigned:
        target = target.this
    if isinstance(target, exp.Dot):
        target = target.expression
    name = (target.name if isinstance(target, (exp.Var, exp.Column, exp.Identifier, exp.Anonymous)) else "").lower()
    if name in _READ_ONLY_PRAGMAS:
        return not assigned
    return name in KNOWN_PRAGMAS


# --------------------------------------------------------------------------- sqlglot predicates


def _set_item_known(item: exp.Expression) -> bool:
    if not isinstance(item, exp.SetItem):
        return False
    kind = str(item.args.get("kind") or "").upper()
    if kind == "TRANSACTION":
        return True
    if kind in ("NAMES", "CHARACTER SET", "CHARSET"):
        return setting_is_known("names", item.this.name if item.this is not None else None)
    target = item.this
    if not isinstance(target, exp.EQ):
        return False
    name_node, value = target.this, target.expression
    if isinstance(name_node, exp.Parameter):  # a user variable, @x
        return True
    name = name_node.name.lower() if isinstance(name_node, (exp.Column, exp.SessionParameter, exp.Var)) else ""
    literal = value.name if isinstance(value, exp.Literal) and value.is_string else None
    return setting_is_known(name, literal)


def _set_known(node: exp.Set) -> bool:
    return not node.args.get("unset") and all(_set_item_known(i) for i in node.expressions)


#: ``sql_mode`` values any of which keeps MariaDB/MySQL refusing values a column cannot hold.
STRICT_SQL_MODES: FrozenSet[str] = frozenset({"STRICT_TRANS_TABLES", "STRICT_ALL_TABLES", "TRADITIONAL"})


def _set_relaxes_strictness(node: exp.Set) -> bool:
    """A known ``SET`` whose ``sql_mode`` has no strict mode (``SET sql_mode = ''``)."""
    for item in node.expressions:
        target = item.this if isinstance(item, exp.SetItem) else None
        if not isinstance(target, exp.EQ) or not isinstance(target.expression, exp.Literal):
            continue
        name = target.this
        if isinstance(name, (exp.Column, exp.SessionParameter, exp.Var)) and name.name.lower() == "sql_mode":
            modes = {m.strip().upper() for m in target.expression.name.split(",")}
            if not modes & STRICT_SQL_MODES:
                return _set_known(node)
    return False


def _insert_replaces(node: exp.Insert) -> bool:
    return str(node.args.get("alternative") or "").upper() == "REPLACE"


def _insert_upserts(node: exp.Insert) -> bool:
    conflict = node.args.get("conflict")
    return conflict is not None and bool(conflict.args.get("duplicate") or conflict.args.get("expressions"))


def _writes_sqlite_schema(node: exp.Expression) -> bool:
    target = node.this
    if isinstance(target, exp.Schema):
        target = target.this
    return isinstance(target, exp.Table) and target.name.lower() in SQLITE_SCHEMA_TABLES


def _create_kind(node: exp.Create) -> str:
    return str(node.args.get("kind") or "").upper()


#: What CREATE may make; ``OR REPLACE`` of the first set drops the old object and its rows.
_CREATE_DROPPING = frozenset({"TABLE", "DATABASE", "SCHEMA"})
_CREATE_REDEFINING = frozenset({"VIEW", "FUNCTION", "PROCEDURE", "TRIGGER", "MACRO", "SEQUENCE", "TYPE", "INDEX"})
_CREATE_KINDS = _CREATE_DROPPING | _CREATE_REDEFINING | frozenset({"TEMPORARY", "STAGE", "ROLE", "USER"})

#: ALTER actions that change a definition and keep every row, by sqlglot node class.
_ALTER_KEEPS: Tuple[Type[exp.Expression], ...] = (
    exp.ColumnDef,
    exp.AlterColumn,
    exp.AlterRename,
    exp.RenameColumn,
    exp.AddConstraint,
    exp.Constraint,
    exp.ModifyColumn if hasattr(exp, "ModifyColumn") else exp.AlterColumn,
    exp.Comment,
)
#: Table options (``ALTER TABLE t COMMENT='x'``) that keep every row; ``ENGINE=`` is not here.
_ALTER_OPTIONS_KEEP: Tuple[Type[exp.Expression], ...] = (
    exp.SchemaCommentProperty,
    exp.AutoIncrementProperty,
    exp.CharacterSetProperty,
    exp.CollateProperty,
    exp.AlgorithmProperty,  # ALGORITHM=INPLACE/COPY/INSTANT: how the change is made
    exp.LockProperty,  # LOCK=NONE/SHARED/EXCLUSIVE: what others may do meanwhile
)
_ALTER_KINDS = frozenset({"TABLE", "VIEW", "INDEX", "SEQUENCE", "SCHEMA", "DATABASE"})


def _alter_parts_known(node: exp.Alter) -> bool:
    if str(node.args.get("kind") or "").upper() not in _ALTER_KINDS:
        return False
    actions = node.args.get("actions") or []
    options = node.args.get("options") or []
    if not actions and not options:
        return False
    return all(isinstance(a, _ALTER_KEEPS + (exp.Drop,)) for a in actions) and all(
        isinstance(o, _ALTER_OPTIONS_KEEP) for o in options
    )


def _alter_keeps(node: exp.Alter) -> bool:
    return _alter_parts_known(node) and not any(isinstance(a, exp.Drop) for a in node.args.get("actions") or [])


def _alter_drops(node: exp.Alter) -> bool:
    return _alter_parts_known(node) and any(isinstance(a, exp.Drop) for a in node.args.get("actions") or [])


def _into_creates(node: exp.Into) -> bool:
    """``SELECT ... INTO t`` creates table ``t``; MySQL's ``INTO @variable`` only sets variables."""
    targets = node.expressions or [node.this]
    return not all(
        isinstance(t, exp.Table) and isinstance(t.this, (exp.Parameter, exp.SessionParameter)) for t in targets
    )


def function_name(node: exp.Func) -> str:
    """The name a call is known by: an anonymous call's own name, else sqlglot's key."""
    if isinstance(node, (exp.Anonymous, exp.AnonymousAggFunc)):
        return str(node.this).lower()
    return node.key


def sqlglot_function_known(node: exp.Func, dialect: Optional[str]) -> bool:
    """A call is known when its name is a curated pure built-in of the dialect (a typed node:
    when its key, or one of sqlglot's names for it, is)."""
    if isinstance(node, (exp.Anonymous, exp.AnonymousAggFunc)):
        parent = node.parent
        if isinstance(parent, exp.Dot) and parent.expression is node:  # schema.func(): a user routine
            return False
        return is_known_function(str(node.this).lower(), dialect)
    if node.key in SQLGLOT_KEYS:
        return True
    return any(is_known_function(name.lower(), dialect) for name in node.sql_names())


# --------------------------------------------------------------------------- command predicates


def _words_after(words: List[str], *skip: str) -> List[str]:
    i = 0
    while i < len(words) and words[i] in skip:
        i += 1
    return words[i:]


def _load_plain(words: List[str]) -> bool:
    return bool(words) and words[0] in ("DATA", "XML") and "REPLACE" not in words and "INTO" in words


def _load_replaces(words: List[str]) -> bool:
    return bool(words) and words[0] in ("DATA", "XML") and "REPLACE" in words


def _analyze_table(words: List[str]) -> bool:
    """``ANALYZE [TABLE] t``; MariaDB's ``ANALYZE <statement>`` runs the statement (read apart)."""
    return not _DML.intersection(words[:6])


_DML = frozenset({"SELECT", "INSERT", "UPDATE", "DELETE", "REPLACE", "WITH", "MERGE", "VALUES"})


def _transaction_words(words: List[str]) -> bool:
    return not words or words[0] in ("TRANSACTION", "WORK", "WITH", "READ", "ISOLATION", "DEFERRED", "IMMEDIATE")


def _start_transaction(words: List[str]) -> bool:
    return bool(words) and words[0] == "TRANSACTION"


def _handler(words: List[str]) -> bool:
    # HANDLER t OPEN / READ ... / CLOSE: reads a table through a cursor-like handle.
    return len(words) >= 2 and words[1] in ("OPEN", "READ", "CLOSE", "AS", ".")


def _lock(words: List[str]) -> bool:
    return bool(words) and words[0] in ("TABLE", "TABLES", "IN", "ONLY") or (len(words) > 1 and words[1] == "IN")


def _unlock(words: List[str]) -> bool:
    return words[:1] == ["TABLES"] or words[:1] == ["TABLE"]


def _flush(words: List[str]) -> bool:
    kept = _words_after(words, "LOCAL", "NO_WRITE_TO_BINLOG")
    return bool(kept) and kept[0] in ("TABLES", "TABLE", "PRIVILEGES", "STATUS", "LOGS", "HOSTS", "QUERY")


def _reset_query_cache(words: List[str]) -> bool:
    return words[:2] == ["QUERY", "CACHE"]


#: MariaDB/MySQL ``ALTER TABLE`` clauses by their first word(s), for ALTER read from tokens: the
#: row each counts as. A clause not here is unknown (``ENGINE=``, ``EXCHANGE PARTITION``,
#: ``CONVERT PARTITION``, ``REMOVE PARTITIONING``, ``PARTITION BY``, ``REORGANIZE``, ``COALESCE``,
#: ``IMPORT TABLESPACE``, ...).
ALTER_CLAUSES: Dict[str, str] = {
    "ADD": "alter object",
    "ALTER": "alter object",
    "MODIFY": "alter object",
    "CHANGE": "alter object",
    "RENAME": "alter object",
    "COMMENT": "alter object",
    "AUTO_INCREMENT": "alter object",
    "DEFAULT": "alter object",
    "CHARACTER": "alter object",
    "CHARSET": "alter object",
    "COLLATE": "alter object",
    "ALGORITHM": "alter object",
    "LOCK": "alter object",
    "ENABLE": "alter object",
    "DISABLE": "alter object",
    "ORDER": "alter object",
    "FORCE": "alter object",
    "OWNER": "alter object",
    "SET": "alter object",
    "DROP": "alter dropping a part",
    "DISCARD": "alter dropping a part",
    "TRUNCATE": "alter truncating a part",
}


# --------------------------------------------------------------------------- pglast predicates

#: PostgreSQL ``ALTER TABLE`` subcommands (``AlterTableCmd.subtype``) and the row each counts as;
#: any other (``AT_DetachPartition``, ``AT_AttachPartition``, ``AT_SetAccessMethod``,
#: ``AT_ReplaceRelOptions``, ...) is unknown.
PG_ALTER_TABLE: Dict[str, str] = {
    "AT_AddColumn": "alter object",
    "AT_ColumnDefault": "alter object",
    "AT_DropNotNull": "alter object",
    "AT_SetNotNull": "alter object",
    "AT_SetStatistics": "alter object",
    "AT_AddIndex": "alter object",
    "AT_AddConstraint": "alter object",
    "AT_ValidateConstraint": "alter object",
    "AT_AlterColumnType": "alter object",
    "AT_ChangeOwner": "alter object",
    "AT_EnableTrig": "alter object",
    "AT_DisableTrig": "alter object",
    "AT_EnableRowSecurity": "alter object",
    "AT_DisableRowSecurity": "alter object",
    "AT_SetLogged": "alter object",
    "AT_SetUnLogged": "alter object",
    "AT_AddIdentity": "alter object",
    "AT_SetIdentity": "alter object",
    "AT_ClusterOn": "alter object",
    "AT_SetRelOptions": "alter object",
    "AT_ResetRelOptions": "alter object",
    "AT_DropColumn": "alter dropping a part",
    "AT_DropConstraint": "alter dropping a part",
    "AT_DropIdentity": "alter dropping a part",
    "AT_DropExpression": "alter dropping a part",
    "AT_DropCluster": "alter object",
}


def _pg_alter_rows(node: Dict[str, Any]) -> List[str]:
    return [PG_ALTER_TABLE.get(c.get("AlterTableCmd", {}).get("subtype", ""), "") for c in node.get("cmds", ())]


def _pg_alter_keeps(node: Dict[str, Any]) -> bool:
    rows = _pg_alter_rows(node)
    return bool(rows) and all(r == "alter object" for r in rows)


def _pg_alter_drops(node: Dict[str, Any]) -> bool:
    rows = _pg_alter_rows(node)
    return all(rows) and "alter dropping a part" in rows


def _pg_setting(node: Dict[str, Any]) -> bool:
    kind = node.get("kind", "")
    if kind in ("VAR_RESET_ALL", "VAR_RESET"):
        return True
    name = str(node.get("name", "")).lower()
    if kind == "VAR_SET_MULTI":
        return name in ("transaction", "session characteristics")
    if kind == "VAR_SET_DEFAULT":
        return True
    return name in KNOWN_SETTINGS


def _pg_replace(node: Dict[str, Any]) -> bool:
    return bool(node.get("replace"))


def _pg_upsert(node: Dict[str, Any]) -> bool:
    return (node.get("onConflictClause") or {}).get("action") == "ONCONFLICT_UPDATE"


def _pg_copy_from(node: Dict[str, Any]) -> bool:
    return bool(node.get("is_from"))


def _pg_copy_to(node: Dict[str, Any]) -> bool:
    return not node.get("is_from")


def _pg_select_into(node: Dict[str, Any]) -> bool:
    return bool(node.get("intoClause"))


def _pg_function_known(node: Dict[str, Any]) -> bool:
    names = [str(n.get("String", {}).get("sval", "")).lower() for n in node.get("funcname", ())]
    if not names:
        return False
    if len(names) > 1 and names[0] != "pg_catalog":
        return False
    return is_known_function(names[-1], "postgres")


def pg_function_name(node: Dict[str, Any]) -> str:
    return ".".join(str(n.get("String", {}).get("sval", "")) for n in node.get("funcname", ()))


def _not(predicate: Callable[[Any], bool]) -> Callable[[Any], bool]:
    return lambda node: not predicate(node)


# --------------------------------------------------------------------------- the rules


def _pg(*types: str) -> Tuple[str, ...]:
    return types


RULES: Tuple[Rule, ...] = (
    # read
    Rule("read", sqlglot=(exp.Select, exp.SetOperation, exp.Values), pglast=_pg("SelectStmt"), command=("TABLE",)),
    Rule(
        "select into",
        sqlglot=(exp.Into,),
        sqlglot_when=_into_creates,
        pglast=_pg("SelectStmt"),
        pglast_when=_pg_select_into,
    ),
    # rows
    Rule("insert rows", sqlglot=(exp.Insert,), sqlglot_when=_not(_insert_replaces), pglast=_pg("InsertStmt")),
    Rule("replace rows", sqlglot=(exp.Insert,), sqlglot_when=_insert_replaces, command=("REPLACE",)),
    Rule(
        "upsert", sqlglot=(exp.Insert,), sqlglot_when=_insert_upserts, pglast=_pg("InsertStmt"), pglast_when=_pg_upsert
    ),
    Rule("update rows", sqlglot=(exp.Update,), pglast=_pg("UpdateStmt")),
    Rule("delete rows", sqlglot=(exp.Delete,), pglast=_pg("DeleteStmt")),
    Rule("schema table write", sqlglot=(exp.Insert, exp.Update, exp.Delete), sqlglot_when=_writes_sqlite_schema),
    Rule("merge", sqlglot=(exp.Merge,), pglast=_pg("MergeStmt")),
    Rule("truncate", sqlglot=(exp.TruncateTable,), pglast=_pg("TruncateStmt")),
    Rule(
        "load rows",
        sqlglot=(exp.Copy,),
        sqlglot_when=lambda n: bool(n.args.get("kind")),
        pglast=_pg("CopyStmt"),
        pglast_when=_pg_copy_from,
        command=("LOAD",),
        command_when=_load_plain,
        keyword="LOAD",
    ),
    Rule("replace rows", command=("LOAD",), command_when=_load_replaces, keyword="LOAD"),
    Rule(
        "export rows",
        sqlglot=(exp.Copy,),
        sqlglot_when=lambda n: not n.args.get("kind"),
        pglast=_pg("CopyStmt"),
        pglast_when=_pg_copy_to,
    ),
    # objects
    Rule(
        "drop object",
        sqlglot=(exp.Drop,),
        pglast=_pg(
            "DropStmt",
            "DropdbStmt",
            "DropRoleStmt",
            "DropOwnedStmt",
            "DropTableSpaceStmt",
            "DropSubscriptionStmt",
            "DropUserMappingStmt",
        ),
    ),
    Rule(
        "create object",
        sqlglot=(exp.Create,),
        sqlglot_when=lambda n: not n.args.get("replace") and _create_kind(n) in _CREATE_KINDS,
        pglast=_pg(
            "CreateStmt",
            "CreateSchemaStmt",
            "CreateSeqStmt",
            "CreatedbStmt",
            "CreateTableAsStmt",
            "CreateRoleStmt",
            "CreateDomainStmt",
            "CreateEnumStmt",
            "CreateRangeStmt",
            "CompositeTypeStmt",
            "CreateStatsStmt",
            "CreatePolicyStmt",
            "IndexStmt",
            "ViewStmt",
            "RuleStmt",
            "CreateFunctionStmt",
            "CreateTrigStmt",
            "CreateCastStmt",
            "DefineStmt",
            "CreateForeignTableStmt",
            "ImportForeignSchemaStmt",
            "CreateEventTrigStmt",
        ),
        pglast_when=_not(_pg_replace),
    ),
    Rule(
        "replace object",
        sqlglot=(exp.Create,),
        sqlglot_when=lambda n: bool(n.args.get("replace")) and _create_kind(n) in _CREATE_DROPPING,
    ),
    Rule(
        "redefine object",
        sqlglot=(exp.Create,),
        sqlglot_when=lambda n: bool(n.args.get("replace")) and _create_kind(n) in _CREATE_REDEFINING,
        pglast=_pg("ViewStmt", "CreateFunctionStmt", "RuleStmt", "CreateTrigStmt"),
        pglast_when=_pg_replace,
    ),
    Rule(
        "alter object",
        sqlglot=(exp.Alter,),
        sqlglot_when=_alter_keeps,
        command=("RENAME",),
        keyword="ALTER",
        pglast=_pg("AlterTableStmt"),
        pglast_when=_pg_alter_keeps,
    ),
    Rule(
        "alter object",
        pglast=_pg(
            "RenameStmt",
            "AlterSeqStmt",
            "AlterOwnerStmt",
            "AlterRoleStmt",
            "AlterObjectSchemaStmt",
            "AlterEnumStmt",
            "AlterDomainStmt",
            "AlterFunctionStmt",
            "AlterDatabaseSetStmt",
            "AlterDatabaseStmt",
            "AlterRoleSetStmt",
            "AlterDefaultPrivilegesStmt",
            "ReassignOwnedStmt",
            "SecLabelStmt",
            "AlterStatsStmt",
            "AlterPolicyStmt",
        ),
        keyword="ALTER",
    ),
    Rule(
        "alter dropping a part",
        sqlglot=(exp.Alter,),
        sqlglot_when=_alter_drops,
        pglast=_pg("AlterTableStmt"),
        pglast_when=_pg_alter_drops,
    ),
    # privileges, databases
    Rule("privileges", sqlglot=(exp.Grant, exp.Revoke), pglast=_pg("GrantStmt", "GrantRoleStmt")),
    Rule("attach database", sqlglot=(exp.Attach, exp.Detach)),
    # metadata and plans
    Rule(
        "describe",
        sqlglot=(exp.Describe, exp.Show),
        pglast=_pg("VariableShowStmt"),
        command=("SHOW", "DESCRIBE", "DESC", "HELP", "CHECKSUM", "CHECK", "GET"),
        keyword="SHOW",
    ),
    Rule("describe", command=("HANDLER",), command_when=_handler, keyword="HANDLER"),
    Rule("describe", pglast=_pg("ExplainStmt"), command=("EXPLAIN",), keyword="EXPLAIN"),
    # sessions and transactions
    Rule(
        "session settings",
        sqlglot=(exp.Set,),
        sqlglot_when=_set_known,
        pglast=_pg("VariableSetStmt"),
        pglast_when=_pg_setting,
    ),
    Rule("non-strict sql_mode", sqlglot=(exp.Set,), sqlglot_when=_set_relaxes_strictness),
    Rule("session settings", sqlglot=(exp.Use,), command=("USE",), keyword="USE"),
    Rule("session settings", pglast=_pg("DiscardStmt"), command=("DISCARD",), keyword="DISCARD"),
    Rule("session settings", command=("RESET",), command_when=_reset_query_cache, keyword="RESET"),
    Rule(
        "transaction control",
        sqlglot=(exp.Transaction, exp.Commit, exp.Rollback),
        pglast=_pg("TransactionStmt"),
        command=("BEGIN", "COMMIT", "ROLLBACK", "SAVEPOINT", "RELEASE", "END", "SIGNAL", "RESIGNAL"),
        command_when=lambda w: "PROCEDURE" not in w,
    ),
    Rule("transaction control", command=("START",), command_when=_start_transaction, keyword="BEGIN"),
    Rule("locks", pglast=_pg("LockStmt"), command=("LOCK",), command_when=_lock, keyword="LOCK"),
    Rule("locks", command=("UNLOCK",), command_when=_unlock, keyword="LOCK"),
    # maintenance
    Rule("maintenance", pglast=_pg("VacuumStmt", "ReindexStmt", "CheckPointStmt", "ClusterStmt", "RefreshMatViewStmt")),
    Rule("maintenance", command=("ANALYZE",), command_when=_analyze_table, keyword="ANALYZE"),
    Rule("maintenance", command=("VACUUM", "REINDEX", "CHECKPOINT", "CLUSTER", "REFRESH", "OPTIMIZE", "CACHE")),
    Rule("maintenance", command=("FLUSH",), command_when=_flush, keyword="FLUSH"),
    # messages, cursors, comments, pragmas
    Rule(
        "notifications",
        pglast=_pg("NotifyStmt", "ListenStmt", "UnlistenStmt"),
        command=("NOTIFY", "LISTEN", "UNLISTEN"),
    ),
    Rule(
        "cursors and prepared statements",
        pglast=_pg("DeclareCursorStmt", "FetchStmt", "ClosePortalStmt", "DeallocateStmt"),
        command=("DECLARE", "FETCH", "CLOSE", "DEALLOCATE"),
    ),
    Rule("run a statement", pglast=_pg("DoStmt", "PrepareStmt", "ExecuteStmt")),
    Rule("comment", sqlglot=(exp.Comment,), pglast=_pg("CommentStmt")),
    Rule("pragma", sqlglot=(exp.Pragma,), sqlglot_when=_pragma_known),
)

#: Node classes a sqlglot walk must place: every statement class, and every function call.
SQLGLOT_PLACED: Tuple[Type[exp.Expression], ...] = tuple(
    dict.fromkeys(cls for rule in RULES for cls in rule.sqlglot if cls is not exp.Into)
) + (exp.Command,)

_SQLGLOT_INDEX: Dict[type, Optional[Tuple[Rule, ...]]] = {}
_COMMAND_INDEX: Dict[str, Tuple[Rule, ...]] = {}
_PGLAST_INDEX: Dict[str, Tuple[Rule, ...]] = {}
for _rule in RULES:
    assert _rule.effect in EFFECT_BY_NAME, _rule.effect
    for _word in _rule.command:
        _COMMAND_INDEX[_word] = _COMMAND_INDEX.get(_word, ()) + (_rule,)
    for _type in _rule.pglast:
        _PGLAST_INDEX[_type] = _PGLAST_INDEX.get(_type, ()) + (_rule,)


def _sqlglot_candidates(node_type: type) -> Optional[Tuple[Rule, ...]]:
    """The rules whose classes ``node_type`` is (None: a class no rule names, e.g. a column)."""
    try:
        return _SQLGLOT_INDEX[node_type]
    except KeyError:
        pass
    found = tuple(r for r in RULES if r.sqlglot and issubclass(node_type, r.sqlglot))
    _SQLGLOT_INDEX[node_type] = found or None
    return found or None


def sqlglot_rules(node: exp.Expression) -> Optional[List[Rule]]:
    """The rules ``node`` matches; None when no rule is about its class (not a placed node)."""
    candidates = _sqlglot_candidates(type(node))
    if candidates is None:
        return None
    return [r for r in candidates if r.sqlglot_when is None or r.sqlglot_when(node)]


def command_rules(first: str, words: Sequence[str]) -> List[Rule]:
    """The rules a command starting with ``first`` (then ``words``) matches; empty: unknown."""
    return [r for r in _COMMAND_INDEX.get(first, ()) if r.command_when is None or r.command_when(list(words))]


def pglast_rules(node_type: str, node: Dict[str, Any]) -> Optional[List[Rule]]:
    """The rules a PostgreSQL parse-tree node matches; None when no rule names its type."""
    candidates = _PGLAST_INDEX.get(node_type)
    if candidates is None:
        return None
    return [r for r in candidates if r.pglast_when is None or r.pglast_when(node)]


def pg_function_known(node: Dict[str, Any]) -> bool:
    return _pg_function_known(node)


# --------------------------------------------------------------------------- statements that hold statements


@dataclass(frozen=True)
class Inner:
    """Where a wrapper's inner statement is, as its row found it; ``how`` says how the reader
    reads it:

    * ``statement`` -- the tokens of a statement (``EXPLAIN ANALYZE DELETE ...``): read as one;
    * ``text`` -- a literal holding SQL text (``PREPARE s FROM '...'``, ``EXECUTE '...'``): read;
    * ``expressions`` -- expressions evaluated (MySQL's ``DO expr, ...``): read as ``SELECT`` them;
    * ``prepared`` -- the name of a statement prepared earlier (``EXECUTE s``): known when this
      text prepared it from checked text, else SQL that cannot be checked;
    * ``routine`` -- a routine called by name (``CALL p()``): known when this text created it,
      else an unknown function;
    * ``unknown`` -- a body this reader cannot read (a PostgreSQL ``DO`` block): unknown;
    * ``dynamic`` -- text built at run time: cannot be checked (``why`` says what);
    * ``none`` -- nothing runs (``EXPLAIN`` without ``ANALYZE``, or no statement follows);
    * ``tree`` -- (PostgreSQL) the parse tree of the inner statement: walked;
    * ``body`` -- (PostgreSQL) a ``DO`` block: read in its language.
    """

    how: str
    tokens: Tuple[Any, ...] = ()
    text: str = ""
    name: str = ""
    why: str = ""
    #: PostgreSQL's reader: the parse-tree node of the inner statement (``tree``) or the
    #: wrapper's own node (``body``: a ``DO`` block, read by its language).
    node: Any = None


@dataclass(frozen=True)
class Wrapper:
    """A statement that holds another statement, or the text or name of one, read from its
    tokens (the command reader): the first words it starts with, the keyword it counts as
    itself, ``when`` it is this form (the words after the first), whether its inner statement
    runs (``runs``: ``EXPLAIN`` without ``ANALYZE`` only plans), and ``inner``: where the inner
    is, from the tokens after the first word and all the words. ``prepares``: it names a
    prepared statement (its first token after the keyword), which a later ``EXECUTE`` may run."""

    words: Tuple[str, ...]
    keyword: str
    inner: Callable[[Sequence[Any], List[str]], Inner]
    runs: Callable[[List[str]], bool] = lambda words: True
    when: Optional[Callable[[List[str]], bool]] = None
    prepares: bool = False


#: Tokens that are literal text (strings of any quoting); not numbers, not quoted names.
_TEXT_TOKENS = frozenset(t for name, t in TokenType.__members__.items() if name.endswith("STRING"))
_FALSE_WORDS = frozenset({"FALSE", "OFF", "0"})


#: Words that start a statement a wrapper can hold.
_DML_WORDS = _DML | {"TABLE"}


def _is_text(token: Any) -> bool:
    return token.token_type in _TEXT_TOKENS


def _is_quoted(token: Any) -> bool:
    """Text or a quoted name (MySQL reads ``PREPARE s FROM `...``` and ``DO `...``` the same way)."""
    return token.token_type in _TEXT_TOKENS or token.token_type is TokenType.IDENTIFIER


def _token_word(token: Any) -> str:
    """The keyword a token is, upper case; empty for data (strings, quoted names, numbers)."""
    data = token.token_type in _TEXT_TOKENS or token.token_type in (TokenType.IDENTIFIER, TokenType.NUMBER)
    return "" if data else token.text.upper()


def _statement_after(tokens: Sequence[Any], words: List[str]) -> Inner:
    """The statement that starts at the first DML keyword of ``tokens`` (none: nothing runs)."""
    start = next((i for i, t in enumerate(tokens) if _token_word(t) in _DML_WORDS), None)
    return Inner("none") if start is None else Inner("statement", tokens=tuple(tokens[start:]))


def _explain_analyzes(words: List[str]) -> bool:
    """``EXPLAIN ANALYZE``/``ANALYSE`` or ``EXPLAIN (ANALYZE [true])`` executes the statement."""
    for i, word in enumerate(words[:12]):
        if word in ("ANALYZE", "ANALYSE"):
            return not (i + 1 < len(words) and words[i + 1] in _FALSE_WORDS)
        if word in _DML_WORDS:
            return False
    return False


def _prepared_from(tokens: Sequence[Any], words: List[str]) -> Inner:
    """``PREPARE s FROM '<text>'`` (MySQL: a literal is checked, anything else is built at run
    time) or ``PREPARE s [(types)] AS <statement>`` (PostgreSQL)."""
    if len(words) >= 2 and words[1] == "FROM":
        if len(tokens) == 3 and _is_quoted(tokens[2]):
            return Inner("text", text=tokens[2].text)
        return Inner(
            "dynamic", why="PREPARE ... FROM of text built at run time (a variable or an expression) cannot be checked"
        )
    return _statement_after(tokens[1:], words)


def _executed(tokens: Sequence[Any], words: List[str]) -> Inner:
    """``EXECUTE '<text>'``/``EXECUTE IMMEDIATE '<text>'``/T-SQL's ``EXEC sp_executesql N'<text>'``
    run that text; ``EXECUTE s`` runs a prepared statement; anything else is built at run time."""
    kept = [t for t in tokens if _token_word(t) not in ("IMMEDIATE", "(", ")")]
    if kept and kept[0].text.lower() == "sp_executesql" and len(kept) == 2:
        kept = kept[1:]  # T-SQL's sp_executesql of one literal: static text
    if kept and _is_text(kept[0]):
        return Inner("text", text=kept[0].text) if len(kept) == 1 else Inner("dynamic")
    if kept:
        return Inner("prepared", name=kept[0].text.lower())
    return Inner("dynamic")


def _done(tokens: Sequence[Any], words: List[str]) -> Inner:
    """MySQL's ``DO expr, ...`` evaluates expressions (their calls must be known); a PostgreSQL
    ``DO '<block>'`` is a procedural body only PostgreSQL's reading reads."""
    if tokens and _is_quoted(tokens[0]):
        return Inner("unknown", name="DO", why="DO block (name dialect='postgres' to have its body read)")
    return Inner("expressions", tokens=tuple(tokens))


def _called(tokens: Sequence[Any], words: List[str]) -> Inner:
    return Inner("routine", name=tokens[0].text if tokens else "")


def _analyze_statement(words: List[str]) -> bool:
    """MariaDB's ``ANALYZE [FORMAT=JSON] <statement>`` runs the statement; ``ANALYZE TABLE`` does not."""
    return bool(words) and not _analyze_table(words)


#: One row per statement that holds another, for the command reader. What the wrapper counts as
#: itself is its keyword's row (``EXPLAIN`` is ``describe``, ``CALL``'s routine is judged by its
#: body or is unknown); what its inner statement counts as is added, as run by it, when it runs.
WRAPPERS: Tuple[Wrapper, ...] = (
    Wrapper(("EXPLAIN",), "EXPLAIN", _statement_after, runs=_explain_analyzes),
    Wrapper(("DESCRIBE", "DESC"), "DESCRIBE", _statement_after, runs=_explain_analyzes),
    Wrapper(("ANALYZE",), "ANALYZE", _statement_after, when=_analyze_statement),
    Wrapper(("PREPARE",), "PREPARE", _prepared_from, prepares=True),
    Wrapper(("EXECUTE", "EXEC"), "EXECUTE", _executed),
    Wrapper(("DO",), "DO", _done),
    Wrapper(("CALL",), "CALL", _called),
)
_WRAPPER_INDEX: Dict[str, Tuple[Wrapper, ...]] = {}
for _wrapper in WRAPPERS:
    for _first in _wrapper.words:
        _WRAPPER_INDEX[_first] = _WRAPPER_INDEX.get(_first, ()) + (_wrapper,)
#: First words of the wrappers: statements the command reader reads (sqlglot would not unwrap them).
WRAPPER_WORDS: FrozenSet[str] = frozenset(_WRAPPER_INDEX)


def wrapper_for(first: str, words: List[str]) -> Optional[Wrapper]:
    """The wrapper row a command starting with ``first`` (then ``words``) is, or None."""
    return next((w for w in _WRAPPER_INDEX.get(first, ()) if w.when is None or w.when(words)), None)


@dataclass(frozen=True)
class PgWrapper:
    """The same for PostgreSQL's reader, by parse-tree node type: where the inner is (``inner``,
    from the node), whether it runs, whether the node names a prepared statement (its
    ``name``), whether the node's own rule rows apply (``CALL`` has none: the routine decides)
    and whether the node's children are walked afterwards (``CALL``'s arguments,
    ``EXECUTE``'s parameters)."""

    inner: Callable[[Dict[str, Any]], Inner]
    runs: Callable[[Dict[str, Any]], bool] = lambda node: True
    prepares: bool = False
    own_rules: bool = True
    children: bool = False


_PG_FALSE_WORDS = frozenset({"false", "off", "0", "no"})


def _pg_explain_analyzes(node: Dict[str, Any]) -> bool:
    """``EXPLAIN (ANALYZE [true])``/``EXPLAIN ANALYZE`` executes the statement."""
    for option in node.get("options", ()) or ():
        elem = option.get("DefElem", {})
        if elem.get("defname") != "analyze":
            continue
        arg = elem.get("arg")
        if arg is None:
            return True
        value = next(iter(arg.values()), {}) if isinstance(arg, dict) else {}
        word = (
            str(value.get("sval", value.get("boolval", value.get("ival", "true")))).lower()
            if isinstance(value, dict)
            else "true"
        )
        return word not in _PG_FALSE_WORDS and word != "{}"
    return False


def _pg_query(node: Dict[str, Any]) -> Inner:
    return Inner("tree", node=node.get("query"))


def _pg_executed(node: Dict[str, Any]) -> Inner:
    name = str(node.get("name", "")).lower()
    return Inner(
        "prepared",
        name=name,
        why=f"EXECUTE {name} runs a statement prepared elsewhere; its text cannot be checked here",
    )


def _pg_called(node: Dict[str, Any]) -> Inner:
    call = node.get("funccall", {})
    return Inner("routine", name=pg_function_name(call.get("FuncCall", call)))


#: One row per PostgreSQL statement that holds another (by parse-tree node type).
PG_WRAPPERS: Dict[str, PgWrapper] = {
    "ExplainStmt": PgWrapper(_pg_query, runs=_pg_explain_analyzes),
    "PrepareStmt": PgWrapper(_pg_query, prepares=True),
    "ExecuteStmt": PgWrapper(_pg_executed, children=True),
    "DoStmt": PgWrapper(lambda node: Inner("body", node=node)),
    "CallStmt": PgWrapper(_pg_called, own_rules=False, children=True),
}
