"""Built-in SQL functions known to have no side effects, per dialect: the engines' own word.

A function call is an effect the guard must place like any statement: ``lo_unlink(oid)`` deletes
a large object, ``dblink_exec(conn, text)`` runs text built at run time on another connection,
and a user-defined function runs whatever its body says. So a call is ``unknown`` unless its name
is known. Where that knowledge comes from (:data:`KNOWLEDGE` says it for each dialect):

* **PostgreSQL** -- ``pg_proc`` (:mod:`.catalog`, generated from the server): a name is known when
  every ``pg_catalog`` function of that name is IMMUTABLE or STABLE, which by PostgreSQL's
  contract cannot modify the database. A VOLATILE built-in is unknown unless
  :data:`HARMLESS_VOLATILE` names it, with its reason.
* **SQLite** -- ``PRAGMA function_list``: a name is known when every function of that name is
  flagged ``innocuous`` (no side effects, depends on its arguments only), or ``deterministic`` and
  not ``directonly`` (the flag SQLite puts on functions with side effects or security risks,
  such as ``load_extension``); the table-valued functions SQLite's manual describes as reads
  (``json_each``, ``pragma_<name>`` for the engine's pragmas) and the curated
  :data:`HARMLESS_VOLATILE` entries (FTS5's ``snippet``/``highlight``/``bm25``) with reasons.
* **MariaDB** (and ``mysql``, judged on MariaDB) -- the server's help tables name every built-in
  and the manual's section it is in, and ``PREPARE`` on the server tells which this server has.
  MariaDB declares no volatility, so the sections that only compute a value are the manual's
  word (:data:`MARIADB_PURE_SECTIONS`); in the other sections (locks, waits, sequences,
  information) only the curated :data:`HARMLESS_VOLATILE` entries are known.
* Every dialect: :data:`UNSAFE_BUILTINS` takes out the few the engines would place but that are
  not harmless, each with its reason (``load_file`` reads a file on the server).
* **No dialect, and dialects without an engine here** (Snowflake, BigQuery, ...): the guard cannot
  know which engine runs the text, so a name is known only when **every** engine above declares
  it a safe built-in (``lower``, ``round``, ``count``, ...). A name only some engines declare
  (``julianday``, ``date_format``, ``websearch_to_tsquery``) is unknown, and its reason names the
  engines that declare it and the dialect to name (``SQLPolicy(dialect="sqlite")``). T-SQL, which
  has no engine here, has the small curated standard list (:data:`_COMMON`, :data:`_TSQL`).

A name is compared in lower case, without its schema (``pg_catalog.lower`` is ``lower``); a schema
other than the dialect's own catalog makes it a user routine (unknown). Anything else is allowed
only by naming it: ``SQLPolicy(allow_functions=["my_func"])``.

>>> is_known_function("upper", "postgres"), is_known_function("lo_unlink", "postgres")
(True, False)
>>> is_known_function("websearch_to_tsquery", "postgres"), is_known_function("pg_sleep", "postgres")
(True, False)
>>> is_known_function("json_extract", "sqlite"), is_known_function("sleep", None)
(True, False)
"""

from __future__ import annotations

from typing import Dict, FrozenSet, Mapping, Optional, Tuple

from . import catalog

__all__ = [
    "KNOWN_FUNCTIONS",
    "SQLGLOT_KEYS",
    "is_known_function",
    "engines_declaring",
    "unknown_function_hint",
    "ENGINES",
    "CATALOG_SCHEMAS",
    "HARMLESS_VOLATILE",
    "UNSAFE_BUILTINS",
    "MARIADB_PURE_SECTIONS",
    "KNOWLEDGE",
    "knowledge_table",
]


def _names(text: str) -> FrozenSet[str]:
    return frozenset(text.split())


#: Built-ins an engine does not declare free of effects but that change nothing a deny list
#: guards (no row, no object, no other session), by engine, each with its reason.
HARMLESS_VOLATILE: Mapping[str, Mapping[str, str]] = {
    "postgres": {
        "random": "VOLATILE because each call differs; reads a random source",
        "setseed": "sets this session's seed for random()",
        "clock_timestamp": "VOLATILE because each call differs; reads the clock",
        "timeofday": "VOLATILE because each call differs; reads the clock",
        "gen_random_uuid": "VOLATILE because each call differs; reads a random source",
        "nextval": "advances a sequence (a counter outside every transaction); no row or object changes",
        "currval": "reads this session's last value of a sequence",
        "lastval": "reads this session's last sequence value",
        "pg_relation_size": "reads a relation's size on disk (VOLATILE because it changes under writes)",
        "pg_table_size": "reads a table's size on disk (VOLATILE because it changes under writes)",
        "pg_total_relation_size": "reads a table's size with its indexes (VOLATILE because it changes under writes)",
        "pg_indexes_size": "reads a table's indexes' size (VOLATILE because it changes under writes)",
        "pg_database_size": "reads a database's size on disk (VOLATILE because it changes under writes)",
        "pg_partition_tree": "reads a partitioned table's tree from the catalog",
        "pg_partition_ancestors": "reads a partition's ancestors from the catalog",
        "pg_stat_force_next_flush": "makes this session's pending statistics visible at its next report",
    },
    "sqlite": {
        "snippet": "FTS5/FTS3 auxiliary function: text around the matches of the current row (SQLite manual)",
        "highlight": "FTS5 auxiliary function: the current row's text with its matches marked (SQLite manual)",
        "bm25": "FTS5 auxiliary function: the current row's relevance (SQLite manual)",
        "offsets": "FTS3 auxiliary function: where the current row's matches are (SQLite manual)",
        "matchinfo": "FTS3 auxiliary function: statistics of the current row's matches (SQLite manual)",
        "json_each": "table-valued function: the elements of a JSON value (SQLite manual)",
        "json_tree": "table-valued function: the elements of a JSON value, recursively (SQLite manual)",
        "raise": "RAISE() of a trigger body: aborts or ignores the statement, changes nothing itself",
    },
    "mariadb": {
        "nextval": "advances a sequence (a counter); no row or object changes",
        "lastval": "reads this session's last value of a sequence",
        "value": "VALUE(col) in ON DUPLICATE KEY UPDATE: the value the INSERT would have written",
        "values": "VALUES(col) in ON DUPLICATE KEY UPDATE: the value the INSERT would have written",
        "inet_aton": "converts an address (miscellaneous functions)",
        "inet_ntoa": "converts an address (miscellaneous functions)",
        "inet6_aton": "converts an address (miscellaneous functions)",
        "inet6_ntoa": "converts an address (miscellaneous functions)",
        "is_ipv4": "tests an address (miscellaneous functions)",
        "is_ipv4_compat": "tests an address (miscellaneous functions)",
        "is_ipv4_mapped": "tests an address (miscellaneous functions)",
        "is_ipv6": "tests an address (miscellaneous functions)",
        "name_const": "names a constant (miscellaneous functions)",
        "uuid": "a new identifier (miscellaneous functions)",
        "uuid_short": "a new identifier (miscellaneous functions)",
        "sys_guid": "a new identifier (miscellaneous functions)",
        "is_free_lock": "reads whether a named lock is free; takes none",
        "is_used_lock": "reads who holds a named lock; takes none",
    },
}
HARMLESS_VOLATILE["mysql"] = dict(
    HARMLESS_VOLATILE["mariadb"],
    any_value="MySQL 8 (manual: aggregate functions): one value of the group",
    regexp_like="MySQL 8 (manual: regular expressions): whether a string matches",
)

#: Built-ins an engine would place (non-volatile, innocuous, in a pure section) that are not
#: harmless, by engine, each with its reason.
UNSAFE_BUILTINS: Mapping[str, Mapping[str, str]] = {
    "postgres": {},
    "sqlite": {
        "pragma_optimize": "the table-valued form of PRAGMA optimize runs it (ANALYZE may rewrite sqlite_stat1)",
    },
    "mariadb": {
        "load_file": "reads a file on the database server (listed among the string functions; needs FILE)",
        "benchmark": "evaluates its expression the given number of times: an unbounded use of the server's CPU",
    },
}
UNSAFE_BUILTINS["mysql"] = UNSAFE_BUILTINS["mariadb"]

#: The sections of MariaDB's manual whose functions compute a value from their arguments only
#: (a section path prefix, from each help topic's URL).
MARIADB_PURE_SECTIONS: Tuple[str, ...] = (
    "sql-functions/string-functions",
    "sql-functions/numeric-functions",
    "sql-functions/date-time-functions",
    "sql-functions/aggregate-functions",
    "sql-functions/control-flow-functions",
    "sql-functions/special-functions/json-functions",
    "sql-functions/special-functions/window-functions",
    "sql-functions/special-functions/dynamic-columns-functions",
    "sql-functions/secondary-functions/encryption-hashing-and-compression-functions",
    "sql-functions/secondary-functions/bit-functions-and-operators",
    "sql-functions/secondary-functions/information-functions",
    "sql-functions/vector-functions",
    "sql-structure/operators/",
    "sql-statements/geometry-constructors/",
    "data-types/date-and-time-data-types",
)
#: The manual's function sections: a name there that is not placed is unsafe in MariaDB.
_MARIADB_FUNCTION_SECTIONS = ("sql-functions/", "sql-structure/sequences/sequence-functions")


def _postgres(data: Mapping[str, object]) -> Tuple[FrozenSet[str], FrozenSet[str]]:
    """(known, unsafe) from ``pg_proc``: known when no overload of the name is VOLATILE; and the
    built-in types' names that no function has, which PostgreSQL reads as a cast (``regrole('x')``)."""
    known, unsafe = set(), set()
    for name, overloads in data["functions"].items():  # type: ignore[attr-defined]
        (known if all(o[0] in ("i", "s") for o in overloads) else unsafe).add(name.lower())
    known.update(name for name in data.get("types", ()) if name not in unsafe)  # type: ignore[attr-defined]
    return frozenset(known), frozenset(unsafe)


def _sqlite(data: Mapping[str, object]) -> Tuple[FrozenSet[str], FrozenSet[str]]:
    """(known, unsafe) from ``PRAGMA function_list``: known when every function of the name is
    innocuous, or deterministic and not direct-only; plus the table-valued pragma functions,
    which SQLite's manual says exist only for pragmas that return results and have no side
    effects."""
    known, unsafe = set(), set()
    for name, overloads in data["functions"].items():  # type: ignore[attr-defined]
        flags = [set(o[2]) for o in overloads]
        pure = all("innocuous" in f or ("deterministic" in f and "directonly" not in f) for f in flags)
        (known if pure else unsafe).add(name.lower())
    known.update(f"pragma_{name}" for name in data["pragmas"])  # type: ignore[attr-defined]
    return frozenset(known), frozenset(unsafe)


def _mariadb(table: Mapping[str, Mapping[str, str]]) -> Tuple[FrozenSet[str], FrozenSet[str]]:
    """(known, unsafe) from the help tables: known when this server has it (``native``, or a
    construct of its grammar) and the manual's section only computes values."""
    known, unsafe = set(), set()
    for name, entry in table.items():
        if entry["server"] == "absent":
            continue
        if entry["manual"].startswith(MARIADB_PURE_SECTIONS):
            known.add(name)
        elif entry["manual"].startswith(_MARIADB_FUNCTION_SECTIONS):
            unsafe.add(name)
    return frozenset(known), frozenset(unsafe)


def _engine_sets() -> Dict[str, Tuple[FrozenSet[str], FrozenSet[str]]]:
    sets = {
        "postgres": _postgres(catalog.table("postgres")),
        "sqlite": _sqlite(catalog.table("sqlite")),
        "mariadb": _mariadb(catalog.table("mariadb")["functions"]),
    }
    sets["mysql"] = sets["mariadb"]
    result = {}
    for dialect, (known, unsafe) in sets.items():
        harmless = frozenset(HARMLESS_VOLATILE.get(dialect, {}))
        bad = frozenset(UNSAFE_BUILTINS.get(dialect, {}))
        result[dialect] = ((known | harmless) - bad, (unsafe | bad) - harmless)
    return result


#: The SQL standard's and the common databases' shared pure built-ins: what T-SQL (no engine
#: here to read it from) knows.
_COMMON = _names(
    """
    count sum avg min max every bool_and bool_or stddev stddev_pop stddev_samp variance var_pop var_samp
    covar_pop covar_samp corr regr_slope regr_intercept regr_count regr_r2 percentile_cont percentile_disc
    median mode string_agg group_concat array_agg listagg any_value first_value last_value nth_value
    row_number rank dense_rank percent_rank cume_dist ntile lag lead
    abs ceil ceiling floor round trunc truncate sign sqrt power pow exp ln log log10 log2 mod pi degrees radians
    sin cos tan asin acos atan atan2 cot greatest least random rand div width_bucket
    lower upper lcase ucase length char_length character_length octet_length bit_length substr substring
    trim ltrim rtrim btrim lpad rpad replace concat concat_ws left right position strpos instr locate
    reverse repeat initcap ascii chr char split_part translate format quote_ident quote_literal quote_nullable
    regexp_replace regexp_matches regexp_match regexp_like regexp_substr regexp_instr regexp_count like
    starts_with ends_with md5 sha1 sha2 hex unhex to_hex encode decode overlay soundex space
    coalesce nullif ifnull nvl if iif case cast try_cast convert
    now current_date current_time current_timestamp localtime localtimestamp date time datetime timestamp
    date_trunc date_part extract date_add date_sub datediff date_diff timestampdiff timestampadd date_format
    to_char to_date to_timestamp to_number age make_date make_time make_timestamp make_interval
    year month day dayofweek dayofyear dayofmonth week weekday quarter hour minute second last_day
    strftime julianday unixepoch str_to_date from_unixtime unix_timestamp
    json_extract json_object json_array json_agg json_build_object json_build_array json_array_length
    json_each json_tree json_type json_valid json_quote json_set json_insert json_remove json_patch
    json_group_array json_group_object json_value json_query json_contains json_keys json_unquote
    json_arrayagg json_objectagg to_json row_to_json json_object_agg
    generate_series unnest nextval currval lastval xmlelement xmlforest xmlagg
    """
)
#: T-SQL's pure built-ins (no engine here to read them from).
_TSQL = _names(
    """
    len datalength charindex patindex stuff replicate quotename isnull getdate getutcdate sysdatetime
    dateadd datename eomonth format newid choose str string_split
    """
)

_ENGINES = _engine_sets()
#: The engines the guard has tables for, in the order a reason names them.
ENGINES: Tuple[str, ...] = ("postgres", "sqlite", "mariadb")
#: Names some engine has as a built-in that it does not place: unknown with no dialect too.
_UNSAFE_ANYWHERE: FrozenSet[str] = frozenset().union(*(unsafe for _, unsafe in _ENGINES.values()))
#: With no dialect named the guard cannot know which engine runs the text, so a call is known
#: only when every engine declares it a safe built-in (default deny: a name one engine declares
#: can be another engine's user function, or a built-in with effects there).
_ANY: FrozenSet[str] = frozenset.intersection(*(_ENGINES[engine][0] for engine in ENGINES))

#: Each dialect's known names (what is judged, per dialect); other dialects use ``None``'s.
KNOWN_FUNCTIONS: Dict[Optional[str], FrozenSet[str]] = {name: known for name, (known, _) in _ENGINES.items()}
KNOWN_FUNCTIONS["tsql"] = (_COMMON | _TSQL) - _UNSAFE_ANYWHERE
KNOWN_FUNCTIONS[None] = _ANY

#: Schemas a built-in lives in: a call qualified by another schema is a user routine.
CATALOG_SCHEMAS: FrozenSet[str] = frozenset({"pg_catalog", "sys", "information_schema", "main"})

#: Where each dialect's knowledge comes from, for the docs (:func:`knowledge_table`).
KNOWLEDGE: Mapping[str, str] = {
    "postgres": "`pg_proc` (IMMUTABLE or STABLE)",
    "sqlite": "`PRAGMA function_list` (innocuous, or deterministic and not direct-only), `pragma_list`",
    "mariadb": "help tables (`mysql.help_topic`) and `PREPARE` on the server; the manual's sections",
}


def is_known_function(name: str, dialect: Optional[str]) -> bool:
    """Whether ``name`` (lower case, no schema) is a side-effect-free built-in in ``dialect``."""
    return name in KNOWN_FUNCTIONS.get(dialect, _ANY)


def engines_declaring(name: str) -> Tuple[str, ...]:
    """The engines whose tables declare ``name`` (lower case, no schema) a safe built-in.

    >>> engines_declaring("lower"), engines_declaring("julianday"), engines_declaring("sleep")
    (('postgres', 'sqlite', 'mariadb'), ('sqlite',), ())
    """
    return tuple(engine for engine in ENGINES if name in KNOWN_FUNCTIONS[engine])


def unknown_function_hint(name: str, dialect: Optional[str]) -> str:
    """What an unknown call's reason adds when no engine was named and some engines (not all)
    declare ``name`` safe: which, and how to name the engine the text runs on.

    >>> unknown_function_hint("julianday", None).split(", and")[0]
    'declared a safe built-in by sqlite only'
    >>> unknown_function_hint("julianday", None).endswith('e.g. SQLPolicy(dialect="sqlite")')
    True
    """
    declaring = engines_declaring(name) if dialect is None else ()
    if not declaring:
        return ""
    return (
        f"declared a safe built-in by {' and '.join(declaring)} only, and with no dialect named the text may run "
        f'on any engine: name the one it runs on, e.g. SQLPolicy(dialect="{declaring[0]}")'
    )


def knowledge_table() -> str:
    """The table of ``docs/kernel.md`` saying where each dialect's function knowledge comes from,
    generated from the checked-in engine tables and the curated lists.

    >>> knowledge_table().splitlines()[0]
    '| dialect | engine (version) | read from | known | curated harmless | curated unsafe |'
    """
    lines = [
        "| dialect | engine (version) | read from | known | curated harmless | curated unsafe |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for dialect in catalog.ENGINE_TABLES:
        data = catalog.table(dialect)
        harmless = ", ".join(f"`{n}`" for n in sorted(HARMLESS_VOLATILE.get(dialect, {}))) or "none"
        unsafe = ", ".join(f"`{n}`" for n in sorted(UNSAFE_BUILTINS.get(dialect, {}))) or "none"
        lines.append(
            f"| {dialect} | {data['engine']} {data['version']} | {KNOWLEDGE[dialect]} | "
            f"{len(KNOWN_FUNCTIONS[dialect]):,} names | {harmless} | {unsafe} |"
        )
    return "\n".join(lines) + "\n"


#: sqlglot's own names for the typed calls it builds from the dialects' built-ins (``strftime`` in
#: SQLite becomes ``TimeToStr``, ``instr`` becomes ``StrPosition``): the ones that only compute a
#: value, by the node's ``key``. A typed node whose key is not here, and none of whose names is a
#: known function, is unknown like any other call.
SQLGLOT_KEYS: FrozenSet[str] = _names(
    """
    abs acos acosh addmonths anyvalue approxdistinct approxquantile argmax argmin array arrayagg arrayall
    arrayany arrayappend arrayconcat arraycontains arraycontainsall arraydistinct arrayfilter arrayfirst
    arraylast arraymax arraymin arrayoverlaps arrayposition arrayprepend arrayremove arrayreverse arraysize
    arrayslice arraysort arraysum arraytostring ascii asin asinh atan atan2 atanh avg bitlength bitwiseandagg
    bitwiseoragg bitwisexoragg bitwisecount booland boolnot boolor bytelength case cast casttostrtype cbrt ceil
    chr coalesce collate concat concatws contains convert converttimezone corr cos cosh cot count countif
    covarpop covarsamp cumedist currentdate currentdatetime currentschema currenttime currenttimestamp
    currentuser currentdatabase currentversion sessionuser date dateadd datebin datediff datefromparts
    datestrtodate datesub datetime datetimeadd datetimediff datetimesub datetimetrunc datetodatestr datetrunc
    day dayname dayofmonth dayofweek dayofweekiso dayofyear decode degrees denserank elt encode endswith exists
    exp explode extract factorial first firstvalue floor format generateseries explodinggenerateseries
    greatest groupconcat grouping hex hour if initcap isnan isinf jsonarray jsonarrayagg jsonarraycontains
    jsonbcontains jsonbexists jsonbextract jsonbextractscalar jsonbobjectagg jsonextract jsonextractarray
    jsonextractscalar jsonformat jsonkeys jsonobject jsonobjectagg jsonremove jsonset jsonstripnulls jsontype
    jsontable justifydays justifyhours justifyinterval lag last lastday lastvalue lead least left length
    levenshtein ln localtime localtimestamp log lower lowerhex makeinterval max md5 median min minute mode
    month monthname nextvaluefor nthvalue ntile nullif numbertostr nvl2 overlay pad parsejson percentilecont
    percentiledisc percentrank pi pow quantile quarter radians rand rank regexpcount regexpextract
    regexpextractall regexpilike regexpinstr regexplike regexpreplace regexpsplit regexpsubstr regrcount
    regrintercept regrr2 regrslope repeat replace reverse right round rownumber second sha sha2 sign sin sinh
    soundex space split splitpart sqrt startswith stddev stddevpop stddevsamp strposition strtodate strtotime
    strtounix struct structextract stuff substring substringindex sum tan tanh time timeadd timediff
    timefromparts timestamp timestampadd timestampdiff timestampfromparts timestampsub timestamptrunc
    timestrtodate timestrtotime timestrtounix timesub timetostr timetotimestr timetounix timetrunc tochar
    todays tonumber translate trim trunc trycast tsordsadd tsordsdiff tsordstodate tsordstodatestr
    tsordstodatetime tsordstotime tsordstotimestamp typeof unhex unicode unixdate unixseconds unixtostr
    unixtotime unixtotimestr unnest upper utcdate utctime utctimestamp uuid variance variancepop week
    weekofyear widthbucket xor year and or not
    """
)
