"""Built-in SQL functions known to have no side effects, per dialect.

A function call is an effect the guard must place like any statement: ``lo_unlink(oid)`` deletes
a large object, ``dblink_exec(conn, text)`` runs text built at run time on another connection,
and a user-defined function runs whatever its body says. So a call is ``unknown`` unless its name
is here: aggregates, string, math, date and time, JSON, window, conditional and conversion
functions that only compute a value from their arguments (some also read the clock or a random
source, or advance a sequence: none changes a row or an object). A name is compared in lower case,
without its schema (``pg_catalog.lower`` is ``lower``); a schema other than the dialect's own
catalog makes it a user routine (unknown). Anything else is allowed only by naming it:
``SQLPolicy(allow_functions=["my_func"])``.

>>> is_known_function("upper", "postgres"), is_known_function("lo_unlink", "postgres")
(True, False)
>>> is_known_function("json_extract", "sqlite"), is_known_function("sleep", None)
(True, False)
"""

from __future__ import annotations

from typing import Dict, FrozenSet, Optional

__all__ = ["KNOWN_FUNCTIONS", "SQLGLOT_KEYS", "is_known_function", "CATALOG_SCHEMAS"]


def _names(text: str) -> FrozenSet[str]:
    return frozenset(text.split())


#: In every dialect: the SQL standard's and the common databases' shared pure built-ins.
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
    generate_series unnest nextval currval lastval
    """
)

_BY_DIALECT: Dict[str, FrozenSet[str]] = {
    "postgres": _names(
        """
        jsonb_build_object jsonb_build_array jsonb_agg jsonb_object_agg jsonb_extract_path jsonb_extract_path_text
        json_extract_path json_extract_path_text jsonb_array_length jsonb_each jsonb_each_text json_each_text
        jsonb_typeof json_typeof jsonb_set jsonb_insert jsonb_strip_nulls jsonb_pretty to_jsonb
        jsonb_array_elements jsonb_array_elements_text json_array_elements json_array_elements_text
        jsonb_object_keys json_object_keys jsonb_path_query jsonb_path_exists
        array_length array_position array_positions array_remove array_append array_prepend array_cat
        array_to_string string_to_array array_upper array_lower cardinality regexp_split_to_table
        regexp_split_to_array string_to_table date_bin justify_days justify_hours justify_interval isfinite
        clock_timestamp statement_timestamp transaction_timestamp timeofday setseed gen_random_uuid
        cbrt factorial gcd lcm scale trim_scale num_nonnulls num_nulls bit_count get_bit get_byte
        pg_typeof format_type current_schema current_database current_user session_user version
        current_setting has_table_privilege has_schema_privilege has_column_privilege to_regclass
        obj_description col_description pg_get_viewdef pg_get_indexdef pg_table_size pg_relation_size
        pg_total_relation_size pg_size_pretty pg_column_size xmlelement xmlforest xmlagg
        """
    ),
    "mysql": _names(
        """
        json_search json_length json_depth json_merge_patch json_merge_preserve json_replace json_pretty
        json_table json_overlaps bit_and bit_or bit_xor std format_bytes elt field find_in_set make_set
        export_set mid insert lpad rpad strcmp char conv bin oct crc32 uuid uuid_short curdate curtime
        sysdate utc_date utc_time utc_timestamp adddate subdate addtime subtime makedate maketime
        period_add period_diff sec_to_time time_to_sec to_days to_seconds from_days yearweek weekofyear
        monthname dayname microsecond time_format get_format convert_tz database schema user current_user
        version found_rows row_count last_insert_id charset collation coercibility isnull inet_aton inet_ntoa
        """
    ),
    "sqlite": _names(
        """
        total printf unicode zeroblob randomblob typeof likely unlikely likelihood glob quote hex
        changes total_changes last_insert_rowid sqlite_version json json_array_insert jsonb
        iif octet_length format raise pragma_table_info pragma_table_xinfo pragma_index_list pragma_index_info
        pragma_index_xinfo pragma_foreign_key_list pragma_table_list pragma_database_list pragma_function_list
        pragma_collation_list pragma_compile_options
        """
    ),
    "tsql": _names(
        """
        len datalength charindex patindex stuff replicate quotename isnull getdate getutcdate sysdatetime
        dateadd datename eomonth format newid choose str string_split
        """
    ),
}
_BY_DIALECT["mariadb"] = _BY_DIALECT["mysql"]

#: Every dialect's names at once: with no dialect named, a call known to any of them is known
#: (the name is a built-in of the database that reads it; another database rejects it).
_ANY: FrozenSet[str] = _COMMON.union(*_BY_DIALECT.values())

#: Each dialect's full list (what is judged, per dialect).
KNOWN_FUNCTIONS: Dict[Optional[str], FrozenSet[str]] = {name: _COMMON | extra for name, extra in _BY_DIALECT.items()}
KNOWN_FUNCTIONS[None] = _ANY

#: Schemas a built-in lives in: a call qualified by another schema is a user routine.
CATALOG_SCHEMAS: FrozenSet[str] = frozenset({"pg_catalog", "sys", "information_schema", "main"})


def is_known_function(name: str, dialect: Optional[str]) -> bool:
    """Whether ``name`` (lower case, no schema) is a side-effect-free built-in in ``dialect``."""
    return name in KNOWN_FUNCTIONS.get(dialect, _ANY)


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
    month monthname nextvaluefor nthvalue ntile nullif nvl2 overlay pad parsejson percentilecont
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
