"""A PostgreSQL database's catalog for the schema-aware mode (see :mod:`.schema`).

Read from the system catalogs of the database the connection is on:

* ``pg_event_trigger`` (not disabled): their functions' bodies, counted for every statement that
  defines objects (``CREATE``, ``ALTER``, ``DROP``, ``GRANT``, ``REVOKE``, ``COMMENT``);
* ``pg_trigger`` (user triggers, not disabled): each trigger's function body, by event
  (``tgtype``); the body is read by PostgreSQL's own parser (``LANGUAGE sql``) or its PL/pgSQL
  parser, from ``pg_get_functiondef``;
* ``pg_rewrite`` (rules other than views' ``_RETURN``, not disabled): ``pg_get_ruledef``'s
  actions, by event;
* ``pg_constraint`` (foreign keys): ``ON DELETE/UPDATE CASCADE/SET NULL/SET DEFAULT``;
* ``pg_inherits`` (partitions and inheritance children) and ``pg_depend`` (a view's base
  tables): what a write to a table also writes;
* ``pg_proc``: routines by name, read when first called: a ``sql`` or ``plpgsql`` body is
  judged by what it runs; any other (``c``, ``internal``, ``plpython3u``, ...) is placed when
  ``provolatile`` says ``IMMUTABLE`` or ``STABLE`` and is unknown when ``VOLATILE``.

Change detector: for each of ``pg_trigger``, ``pg_event_trigger``, ``pg_rewrite``, ``pg_proc``,
``pg_constraint``, ``pg_class``, ``pg_inherits`` and ``pg_namespace``, its row count and the sum
of its rows' ``xmin``. Every catalog change writes new row versions, whose ``xmin`` is the writing
transaction's id, newer than every committed row's: a change that adds or alters rows raises the
sum, one that only removes rows lowers the count. One query, a few milliseconds, before every
decision. It can be fooled only after transaction ids wrap around (about four billion
transactions) by a change whose ids sum exactly to what it removed.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from .effects import SQLStatement
from .postgres import _plpgsql_statements, read_postgres
from .schema import DDL_EVENT, Catalog, Consequence, any_of, body_of, unreadable_body

__all__ = ["PostgresCatalog"]

_FINGERPRINTED = (
    "pg_trigger",
    "pg_event_trigger",
    "pg_rewrite",
    "pg_proc",
    "pg_constraint",
    "pg_class",
    "pg_inherits",
    "pg_namespace",
)
_FINGERPRINT = "SELECT " + ", ".join(
    f"(SELECT count(*)::text || ':' || coalesce(sum(xmin::text::bigint), 0)::text FROM pg_catalog.{table})"
    for table in _FINGERPRINTED
)
#: ``tgtype`` bits (``pg_trigger.h``).
_TRIGGER_EVENTS = {4: "INSERT", 8: "DELETE", 16: "UPDATE"}
#: ``pg_rewrite.ev_type``.
_RULE_EVENTS = {"2": "UPDATE", "3": "INSERT", "4": "DELETE"}
#: ``confdeltype``/``confupdtype``: what the action does to the referencing rows.
_FK_ACTIONS = {"c": "CASCADE", "n": "SET NULL", "d": "SET DEFAULT"}
_VOLATILITY = {"i": "IMMUTABLE", "s": "STABLE", "v": "VOLATILE"}
#: The CREATE a rule's definition or a SQL-standard body is read inside: the wrapper's own kinds
#: (a rule's actions and a ``BEGIN ATOMIC`` body hold no DDL).
_WRAPPER_KINDS = frozenset({"CREATE", "ALTER"})

_TRIGGERS = """
SELECT t.tgname, c.relname, t.tgtype, t.tgfoid, p.proname
FROM pg_catalog.pg_trigger t
JOIN pg_catalog.pg_class c ON c.oid = t.tgrelid
JOIN pg_catalog.pg_proc p ON p.oid = t.tgfoid
WHERE NOT t.tgisinternal AND t.tgenabled <> 'D'
"""
_EVENT_TRIGGERS = """
SELECT e.evtname, e.evtevent, e.evtfoid, p.proname
FROM pg_catalog.pg_event_trigger e JOIN pg_catalog.pg_proc p ON p.oid = e.evtfoid
WHERE e.evtenabled <> 'D'
"""
_RULES = """
SELECT r.rulename, c.relname, r.ev_type, pg_catalog.pg_get_ruledef(r.oid)
FROM pg_catalog.pg_rewrite r JOIN pg_catalog.pg_class c ON c.oid = r.ev_class
WHERE r.rulename <> '_RETURN' AND r.ev_enabled <> 'D'
"""
_FOREIGN_KEYS = """
SELECT con.conname, parent.relname, child.relname, con.confdeltype, con.confupdtype
FROM pg_catalog.pg_constraint con
JOIN pg_catalog.pg_class child ON child.oid = con.conrelid
JOIN pg_catalog.pg_class parent ON parent.oid = con.confrelid
WHERE con.contype = 'f'
"""
_CHILDREN = """
SELECT parent.relname, child.relname
FROM pg_catalog.pg_inherits i
JOIN pg_catalog.pg_class parent ON parent.oid = i.inhparent
JOIN pg_catalog.pg_class child ON child.oid = i.inhrelid
"""
_VIEW_BASES = """
SELECT DISTINCT v.relname, t.relname
FROM pg_catalog.pg_rewrite r
JOIN pg_catalog.pg_class v ON v.oid = r.ev_class
JOIN pg_catalog.pg_depend d
  ON d.classid = 'pg_catalog.pg_rewrite'::regclass AND d.objid = r.oid
 AND d.refclassid = 'pg_catalog.pg_class'::regclass
JOIN pg_catalog.pg_class t ON t.oid = d.refobjid
WHERE v.relkind = 'v' AND r.rulename = '_RETURN' AND t.oid <> v.oid
"""
_ROUTINES = """
SELECT p.oid, n.nspname, p.proname, p.provolatile, l.lanname
FROM pg_catalog.pg_proc p
JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace
JOIN pg_catalog.pg_language l ON l.oid = p.prolang
"""
_DEFINITION = "SELECT p.prosrc, pg_catalog.pg_get_functiondef(p.oid) FROM pg_catalog.pg_proc p WHERE p.oid = {oid}"


class PostgresCatalog(Catalog):
    """A PostgreSQL database's triggers, rules, cascades and routines (see the module doc)."""

    database = "the PostgreSQL database"

    def __init__(self, connection: Any, owned: bool = False, factory: Any = None) -> None:
        super().__init__(connection, owned, factory)
        #: routine name (lower case) -> [(oid, schema, volatility, language)]
        self._by_name: Dict[str, List[Tuple[int, str, str, str]]] = {}
        self._bodies: Dict[int, SQLStatement] = {}

    def _fingerprint(self) -> Any:
        return self._rows(_FINGERPRINT)[0]

    def _read(self) -> None:
        self._by_name, self._bodies = {}, {}
        for oid, schema, proname, volatility, language in self._rows(_ROUTINES):
            entry = (int(oid), str(schema).lower(), str(volatility), str(language))
            self._by_name.setdefault(str(proname).lower(), []).append(entry)
        for name, table, tgtype, function_oid, function_name in self._rows(_TRIGGERS):
            body = self._body(int(function_oid), str(function_name).lower(), self._language(int(function_oid)))
            what = f"trigger {name} on {table}"
            for bit, event in _TRIGGER_EVENTS.items():
                if int(tgtype) & bit:
                    self._add(str(table), event, Consequence(what, body))
        for name, event, function_oid, function_name in self._rows(_EVENT_TRIGGERS):
            body = self._body(int(function_oid), str(function_name).lower(), self._language(int(function_oid)))
            what = f"event trigger {name} ({event})"
            self._add("", DDL_EVENT, Consequence(what, body, why=f"{what} runs it when this statement defines objects"))
        for name, table, ev_type, definition in self._rows(_RULES):
            event = _RULE_EVENTS.get(str(ev_type))
            if event is None:
                continue
            body = body_of(read_postgres(str(definition)), f"rule {name}", drop=_WRAPPER_KINDS)
            self._add(str(table), event, Consequence(f"rule {name} on {table}", body, source="rule"))
        for name, parent, child, on_delete, on_update in self._rows(_FOREIGN_KEYS):
            # 'a' (NO ACTION) and 'r' (RESTRICT) are not in _FK_ACTIONS: they write nothing.
            self._add_cascade(name, child, parent, "DELETE", _FK_ACTIONS.get(str(on_delete), ""))
            self._add_cascade(name, child, parent, "UPDATE", _FK_ACTIONS.get(str(on_update), ""))
        also: Dict[str, List[str]] = {}
        for parent, child in self._rows(_CHILDREN) + self._rows(_VIEW_BASES):
            also.setdefault(str(parent).lower(), []).append(str(child).lower())
        self._also_written = {name: tuple(dict.fromkeys(tables)) for name, tables in also.items()}

    def _language(self, oid: int) -> str:
        return next((e[3] for entries in self._by_name.values() for e in entries if e[0] == oid), "")

    def _body(self, oid: int, name: str, language: str) -> SQLStatement:
        """What running routine ``oid`` counts as, read from its definition (cached per catalog)."""
        if oid in self._bodies:
            return self._bodies[oid]
        if language in ("sql", "plpgsql"):
            source, definition = self._rows(_DEFINITION.format(oid=int(oid)))[0]
            if language == "plpgsql":
                analysis = _plpgsql_statements(str(definition))
                body = body_of(analysis, name)
            elif source and source.strip():
                body = body_of(read_postgres(str(source)), name)
            else:  # a SQL-standard body (BEGIN ATOMIC ... END / RETURN ...), inside its CREATE
                body = body_of(read_postgres(str(definition)), name, drop=_WRAPPER_KINDS)
        else:
            volatility = next((e[2] for es in self._by_name.values() for e in es if e[0] == oid), "v")
            if volatility in ("i", "s"):  # declared free of writes; PostgreSQL does not read the body
                body = SQLStatement("", frozenset())
            else:
                declared = _VOLATILITY.get(volatility, volatility)
                why = f"LANGUAGE {language}, {declared} in pg_proc: its body cannot be read"
                body = SQLStatement("", frozenset(), unknown=(unreadable_body(name, why),))
        self._bodies[oid] = body
        return body

    def _routine(self, name: str) -> Optional[SQLStatement]:
        schema, _, bare = name.rpartition(".")
        overloads = [e for e in self._by_name.get(bare, ()) if not schema or e[1] == schema]
        if not overloads:
            return None
        # Every overload of the name (in every schema, when the call names none) may be the one
        # that runs: the call counts as all of them.
        bodies = [self._body(oid, name, language) for oid, _, _, language in overloads]
        return any_of(bodies)
