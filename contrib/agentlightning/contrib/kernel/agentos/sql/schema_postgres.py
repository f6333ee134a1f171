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
  ``provolatile`` says ``IMMUTABLE`` or ``STABLE`` and is unknown when ``VOLATILE``;
* ``pg_depend`` of views' ``_RETURN`` rules, column defaults (``pg_attrdef``) and constraints
  (``pg_constraint``, tables' and domains'): the functions, operators and domains each calls;
  and the same expressions as text (``pg_get_viewdef``, ``pg_get_expr``), read by the same reader
  as the agent's text, because ``pg_depend`` does not list built-ins (they are pinned): a view
  of ``lo_unlink(0)`` is unknown as the call would be in the agent's text.
  Every statement, reads too, also counts as what runs through what its text names: a view
  (its columns' functions, and the views and tables it reads, in turn), a table written by
  ``INSERT``/``UPDATE``/``MERGE`` (its defaults, its CHECK constraints, its columns' domains'
  CHECKs), a table's row-level security policies (``pg_policy``, when row security is enabled:
  their ``USING`` and ``WITH CHECK`` expressions, whatever their command and role), a type named
  in a cast (a domain's CHECKs; a user-defined cast's function, ``pg_cast.castfunc``, unless the
  value cast is a string literal; assignment casts for every write and implicit casts for every
  statement, since the text need not name their type), an operator (``pg_operator.oprcode`` of
  every operator of that name outside ``pg_catalog``, the ones parse analysis adds too:
  ``BETWEEN``, ``IN (subquery)``, ``CASE x WHEN``, ``JOIN USING``), and a function whose name has
  an overload outside ``pg_catalog`` (a user function in an earlier schema of the ``search_path``
  can shadow a built-in for some argument types: each overload the call can reach counts, see
  :meth:`PostgresCatalog._may_resolve_to`).

Change detector: for each of ``pg_trigger``, ``pg_event_trigger``, ``pg_rewrite``, ``pg_proc``,
``pg_constraint``, ``pg_class``, ``pg_inherits``, ``pg_namespace``, ``pg_attrdef``,
``pg_attribute``, ``pg_operator``, ``pg_type``, ``pg_policy`` and ``pg_cast``, its row count and the sum
of its rows' ``xmin``. Every catalog change writes new row versions, whose ``xmin`` is the writing
transaction's id, newer than every committed row's: a change that adds or alters rows raises the
sum, one that only removes rows lowers the count. One query, a few milliseconds, before every
decision. It can be fooled only after transaction ids wrap around (about four billion
transactions) by a change whose ids sum exactly to what it removed.
"""

from __future__ import annotations

import functools
import json
from typing import Any, Dict, List, Optional, Tuple

from pglast import parser as pg_parser

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
    "pg_attrdef",
    "pg_attribute",
    "pg_operator",
    "pg_type",
    "pg_policy",
    "pg_cast",
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
SELECT p.oid, n.nspname, p.proname, p.provolatile, l.lanname, p.pronargs, p.pronargdefaults,
       p.provariadic <> 0, pg_catalog.array_to_string(p.proargtypes::oid[], ' ')
FROM pg_catalog.pg_proc p
JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace
JOIN pg_catalog.pg_language l ON l.oid = p.prolang
"""
#: What views' columns, column defaults and constraints call: (via, owner, referenced class, oid).
_CALLED_BY_SCHEMA = """
SELECT 'view', c.relname, d.refclassid::regclass::text, d.refobjid::bigint
FROM pg_catalog.pg_depend d
JOIN pg_catalog.pg_rewrite r ON d.classid = 'pg_catalog.pg_rewrite'::regclass AND d.objid = r.oid
JOIN pg_catalog.pg_class c ON c.oid = r.ev_class
WHERE r.rulename = '_RETURN' AND d.refclassid IN ('pg_catalog.pg_proc'::regclass,
      'pg_catalog.pg_operator'::regclass, 'pg_catalog.pg_type'::regclass)
UNION ALL
SELECT 'default', c.relname, d.refclassid::regclass::text, d.refobjid::bigint
FROM pg_catalog.pg_depend d
JOIN pg_catalog.pg_attrdef a ON d.classid = 'pg_catalog.pg_attrdef'::regclass AND d.objid = a.oid
JOIN pg_catalog.pg_class c ON c.oid = a.adrelid
WHERE d.refclassid IN ('pg_catalog.pg_proc'::regclass, 'pg_catalog.pg_operator'::regclass,
      'pg_catalog.pg_type'::regclass)
UNION ALL
SELECT CASE WHEN con.contypid <> 0 THEN 'domain' ELSE 'check' END, coalesce(c.relname, t.typname),
       d.refclassid::regclass::text, d.refobjid::bigint
FROM pg_catalog.pg_depend d
JOIN pg_catalog.pg_constraint con ON d.classid = 'pg_catalog.pg_constraint'::regclass AND d.objid = con.oid
LEFT JOIN pg_catalog.pg_class c ON c.oid = con.conrelid
LEFT JOIN pg_catalog.pg_type t ON t.oid = con.contypid
WHERE d.refclassid IN ('pg_catalog.pg_proc'::regclass, 'pg_catalog.pg_operator'::regclass,
      'pg_catalog.pg_type'::regclass)
UNION ALL
SELECT 'policy', c.relname, d.refclassid::regclass::text, d.refobjid::bigint
FROM pg_catalog.pg_depend d
JOIN pg_catalog.pg_policy pol ON d.classid = 'pg_catalog.pg_policy'::regclass AND d.objid = pol.oid
JOIN pg_catalog.pg_class c ON c.oid = pol.polrelid
WHERE c.relrowsecurity AND d.refclassid IN ('pg_catalog.pg_proc'::regclass,
      'pg_catalog.pg_operator'::regclass, 'pg_catalog.pg_type'::regclass)
UNION ALL
SELECT CASE k.castcontext WHEN 'e' THEN 'cast' WHEN 'a' THEN 'assignment cast' ELSE 'implicit cast' END,
       t.typname, 'pg_catalog.pg_proc', k.castfunc::bigint
FROM pg_catalog.pg_cast k JOIN pg_catalog.pg_type t ON t.oid = k.casttarget
WHERE k.castfunc <> 0 AND k.oid >= 16384
"""
#: The expressions the schema runs, as text: views' definitions, column defaults, CHECK constraints
#: (tables' and domains'): (via, owner, text). Read by the same reader as the agent's text, since
#: pg_depend does not list built-ins (they are pinned): ``lo_unlink(0)`` in a view is seen here.
_SCHEMA_TEXTS = """
SELECT 'view', c.relname, pg_catalog.pg_get_viewdef(c.oid)
FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind IN ('v', 'm') AND n.nspname NOT IN ('pg_catalog', 'information_schema')
UNION ALL
SELECT 'default', c.relname, 'SELECT ' || pg_catalog.pg_get_expr(d.adbin, d.adrelid)
FROM pg_catalog.pg_attrdef d JOIN pg_catalog.pg_class c ON c.oid = d.adrelid
UNION ALL
SELECT CASE WHEN con.contypid <> 0 THEN 'domain' ELSE 'check' END, coalesce(c.relname, t.typname),
       'SELECT ' || pg_catalog.pg_get_expr(con.conbin, con.conrelid)
FROM pg_catalog.pg_constraint con
LEFT JOIN pg_catalog.pg_class c ON c.oid = con.conrelid
LEFT JOIN pg_catalog.pg_type t ON t.oid = con.contypid
WHERE con.contype = 'c'
UNION ALL
SELECT 'policy', c.relname, 'SELECT ' || pg_catalog.pg_get_expr(e.expr, pol.polrelid)
FROM pg_catalog.pg_policy pol JOIN pg_catalog.pg_class c ON c.oid = pol.polrelid
CROSS JOIN LATERAL (VALUES (pol.polqual), (pol.polwithcheck)) AS e(expr)
WHERE c.relrowsecurity AND e.expr IS NOT NULL
"""
#: Columns whose type is a domain: (table, domain).
_DOMAIN_COLUMNS = """
SELECT c.relname, t.typname FROM pg_catalog.pg_attribute a
JOIN pg_catalog.pg_class c ON c.oid = a.attrelid JOIN pg_catalog.pg_type t ON t.oid = a.atttypid
WHERE t.typtype = 'd' AND a.attnum > 0 AND NOT a.attisdropped
"""
#: Every operator: (oid, name, schema, the function it calls).
_OPERATORS = """
SELECT o.oid::bigint, o.oprname, n.nspname, o.oprcode::oid::bigint
FROM pg_catalog.pg_operator o JOIN pg_catalog.pg_namespace n ON n.oid = o.oprnamespace
"""
#: The built-in types a call's argument can be known to have, by name: those no other schema has a
#: type of the same name for (else the name may be the other one, and the type is not known).
_BUILTIN_TYPES = """
SELECT t.typname, t.oid::bigint FROM pg_catalog.pg_type t
WHERE t.typnamespace = 'pg_catalog'::regnamespace AND NOT EXISTS (
  SELECT 1 FROM pg_catalog.pg_type u WHERE u.typname = t.typname AND u.typnamespace <> t.typnamespace)
"""
#: Domains by oid: (oid, name).
_DOMAINS = "SELECT t.oid::bigint, t.typname FROM pg_catalog.pg_type t WHERE t.typtype = 'd'"
#: The statements whose target table's defaults, CHECKs and domains run.
_WRITE_KINDS = frozenset({"INSERT", "UPDATE", "MERGE"})

_DEFINITION = "SELECT p.prosrc, pg_catalog.pg_get_functiondef(p.oid) FROM pg_catalog.pg_proc p WHERE p.oid = {oid}"


class PostgresCatalog(Catalog):
    """A PostgreSQL database's triggers, rules, cascades and routines (see the module doc)."""

    database = "the PostgreSQL database"

    def __init__(self, connection: Any, owned: bool = False, factory: Any = None) -> None:
        super().__init__(connection, owned, factory)
        #: routine name (lower case) -> [(oid, schema, volatility, language)]
        self._by_name: Dict[str, List[Tuple[int, str, str, str]]] = {}
        self._bodies: Dict[int, SQLStatement] = {}
        #: (via, owner lower case) -> [(what it calls, described, routine oid)]
        self._calls: Dict[Tuple[str, str], List[Tuple[str, int]]] = {}
        #: view -> the relations its definition reads
        self._view_reads: Dict[str, Tuple[str, ...]] = {}
        #: table -> its columns' domains
        self._domain_columns: Dict[str, Tuple[str, ...]] = {}
        #: operator name -> [(schema, routine oid)]
        self._operators: Dict[str, List[Tuple[str, int]]] = {}
        self._by_oid: Dict[int, Tuple[str, str]] = {}
        #: (via, owner lower case) -> what its expressions' text counts as
        self._texts: Dict[Tuple[str, str], List[SQLStatement]] = {}
        #: routine oid -> (number of arguments, of defaults, whether variadic, argument type oids)
        self._signatures: Dict[int, Tuple[int, int, bool, Tuple[int, ...]]] = {}
        #: built-in type name -> oid (see _BUILTIN_TYPES)
        self._builtin_types: Dict[str, int] = {}

    def _needs_catalog(self, statement: SQLStatement) -> bool:
        names = _names_in(statement.text)
        return names is not None and any(names)

    def _fingerprint(self) -> Any:
        return self._rows(_FINGERPRINT)[0]

    def _read(self) -> None:
        self._by_name, self._bodies, self._signatures = {}, {}, {}
        for oid, schema, proname, volatility, language, nargs, ndefaults, variadic, types in self._rows(_ROUTINES):
            entry = (int(oid), str(schema).lower(), str(volatility), str(language))
            self._by_name.setdefault(str(proname).lower(), []).append(entry)
            argument_types = tuple(int(t) for t in str(types or "").split())
            self._signatures[int(oid)] = (int(nargs), int(ndefaults), bool(variadic), argument_types)
        self._builtin_types = {str(name): int(oid) for name, oid in self._rows(_BUILTIN_TYPES)}
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
        view_reads: Dict[str, List[str]] = {}
        for parent, child in self._rows(_CHILDREN):
            also.setdefault(str(parent).lower(), []).append(str(child).lower())
        for view, table in self._rows(_VIEW_BASES):
            also.setdefault(str(view).lower(), []).append(str(table).lower())
            view_reads.setdefault(str(view).lower(), []).append(str(table).lower())
        self._also_written = {name: tuple(dict.fromkeys(tables)) for name, tables in also.items()}
        self._view_reads = {name: tuple(dict.fromkeys(tables)) for name, tables in view_reads.items()}
        self._read_calls()

    def _read_calls(self) -> None:
        """What views' columns, defaults, CHECKs, domains and operators call (see the module doc)."""
        operators = self._rows(_OPERATORS)
        operator_code = {int(oid): int(code) for oid, _, _, code in operators}
        self._operators = {}
        for _oid, name, schema, code in operators:
            if str(schema) != "pg_catalog" and int(code):
                self._operators.setdefault(str(name), []).append((str(schema), int(code)))
        domains = {int(oid): str(name).lower() for oid, name in self._rows(_DOMAINS)}
        self._calls = {}
        for via, owner, refclass, oid in self._rows(_CALLED_BY_SCHEMA):
            key = (str(via), str(owner).lower())
            refclass, oid = str(refclass).rpartition(".")[2], int(oid)
            if refclass == "pg_proc":
                self._calls.setdefault(key, []).append(("function", oid))
            elif refclass == "pg_operator" and operator_code.get(oid):
                self._calls.setdefault(key, []).append(("operator", operator_code[oid]))
            elif refclass == "pg_type" and oid in domains:
                self._calls.setdefault(key, []).append((f"domain {domains[oid]}", 0))
        self._texts = {}
        for via, owner, text in self._rows(_SCHEMA_TEXTS):
            if text is None:
                continue
            body = body_of(read_postgres(str(text)), f"{via} {owner}", drop=frozenset({"SELECT"}))
            if body.kinds or body.unknown:
                self._texts.setdefault((str(via), str(owner).lower()), []).append(body)
        columns: Dict[str, List[str]] = {}
        for table, domain in self._rows(_DOMAIN_COLUMNS):
            columns.setdefault(str(table).lower(), []).append(str(domain).lower())
        self._domain_columns = {table: tuple(dict.fromkeys(names)) for table, names in columns.items()}

    def _entry(self, oid: int) -> Optional[Tuple[str, str]]:
        """(name, language) of routine ``oid``."""
        if len(self._by_oid) != sum(len(entries) for entries in self._by_name.values()):
            self._by_oid = {e[0]: (name, e[3]) for name, entries in self._by_name.items() for e in entries}
        return self._by_oid.get(oid)

    def _reached(self, statement: SQLStatement) -> List[Tuple[SQLStatement, str]]:
        names = _names_in(statement.text)
        if names is None:
            return []
        relations, types, operators, functions, cast_targets, call_shapes = names
        found: List[Tuple[SQLStatement, str]] = []
        seen: set = set()

        def calls(via: str, owner: str, what: str) -> None:
            for body in self._texts.get((via, owner), ()):
                found.append((body, f"{what} runs it"))
            for kind, oid in self._calls.get((via, owner), ()):
                if kind.startswith("domain "):
                    domain = kind.split(" ", 1)[1]
                    if ("domain", domain) not in seen:
                        seen.add(("domain", domain))
                        calls("domain", domain, f"domain {domain}'s CHECK")
                    continue
                entry = self._entry(oid)
                if entry is None or (what, oid) in seen:
                    continue
                seen.add((what, oid))
                name, language = entry
                found.append((self._body(oid, name, language), f"{what} calls {name}(), whose body runs it"))

        pending = list(relations)
        if statement.kinds & _WRITE_KINDS:
            for table in statement.writes:
                calls("default", table, f"a column DEFAULT of {table}")
                calls("check", table, f"a CHECK constraint of {table}")
                for domain in self._domain_columns.get(table, ()):
                    calls("domain", domain, f"domain {domain}'s CHECK (a column of {table})")
        while pending:
            relation = pending.pop()
            if ("relation", relation) in seen:
                continue
            seen.add(("relation", relation))
            calls("view", relation, f"view {relation}")
            # Row-level security: every policy of the table, whatever its command and whoever
            # runs the statement (the guard knows neither which role runs it nor, through a
            # view, which command reaches the table), counts.
            calls("policy", relation, f"a row-level security policy on {relation}")
            pending.extend(self._view_reads.get(relation, ()))
        for domain in types:
            calls("domain", domain, f"domain {domain}'s CHECK")
        for target in cast_targets:  # every user-defined cast to the type, whatever its source type
            for context in ("cast", "assignment cast", "implicit cast"):
                calls(context, target, f"a user-defined {context} to {target}")
        # Where an assignment cast applies (a value written to a column of its type) or an implicit
        # one (any expression of its source type where its target type is wanted), the text need
        # not name the type, and the guard does not resolve expression types: they count for every
        # write, and for every statement, respectively.
        for via, target in self._casts_without_the_type_named(statement):
            calls(via, target, f"a user-defined {via} to {target} (applied where the text need not name it)")
        for operator in operators:
            for schema, oid in self._operators.get(operator, ()):
                entry = self._entry(oid)
                if entry is not None and ("operator", oid) not in seen:
                    seen.add(("operator", oid))
                    found.append(
                        (
                            self._body(oid, entry[0], entry[1]),
                            f"operator {schema}.{operator} calls {entry[0]}(), whose body runs it",
                        )
                    )
        for function in functions:
            shadows = [e for e in self._by_name.get(function, ()) if e[1] != "pg_catalog"]
            if shadows and not any(e[1] == "pg_catalog" for e in self._by_name.get(function, ())):
                continue  # a user routine of its own name: the text's unknown call looks it up
            builtins = [e[0] for e in self._by_name.get(function, ()) if e[1] == "pg_catalog"]
            calls_of = [shape for name, *shape in call_shapes if name == function] or [(None, ())]
            for oid, schema, _, language in shadows:
                if ("shadow", oid) in seen:
                    continue
                reaching = [shape for shape in calls_of if self._may_resolve_to(oid, shape, builtins)]
                if not reaching:
                    continue
                seen.add(("shadow", oid))
                known = all(t is not None for t in reaching[0][1]) and reaching[0][0] is not None
                how = "its argument types" if known else "argument types the guard does not know"
                found.append(
                    (
                        self._body(oid, function, language),
                        f"{function}() may resolve to {schema}.{function} (an overload outside pg_catalog, earlier "
                        f"on a search_path, that PostgreSQL can choose for {how}), whose body runs it",
                    )
                )
        return found

    def _may_resolve_to(self, oid: int, shape: Tuple[Any, ...], builtins: List[int]) -> bool:
        """Whether a call of ``shape`` (number of arguments or None, their type names or None each)
        can resolve to routine ``oid``, an overload outside ``pg_catalog``, the way PostgreSQL
        resolves overloads: not when it cannot take that many arguments; not when every argument's
        type is known, a built-in takes exactly those types and ``oid`` does not (an exact match
        wins wherever it is on the search_path). Else (types unknown, or left to PostgreSQL's
        coercion rules) it may: fail closed."""
        nargs, type_names = shape
        signature = self._signatures.get(oid)
        if nargs is None or signature is None:
            return True
        arguments, defaults, variadic, argument_types = signature
        if not variadic and not arguments - defaults <= nargs <= arguments:
            return False
        types = tuple(self._builtin_types.get(name) if name else None for name in type_names)
        if len(types) != nargs or any(t is None for t in types) or argument_types == types:
            return True
        return not any(self._signatures.get(b, (0, 0, False, ()))[3] == types for b in builtins)

    def _casts_without_the_type_named(self, statement: SQLStatement) -> List[Tuple[str, str]]:
        contexts = ("implicit cast", "assignment cast") if statement.kinds & _WRITE_KINDS else ("implicit cast",)
        return [key for key in self._calls if key[0] in contexts]

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


#: ``A_Expr`` kinds PostgreSQL's parse analysis turns into comparisons, and their operators.
_BETWEEN_KINDS = frozenset({"AEXPR_BETWEEN", "AEXPR_NOT_BETWEEN", "AEXPR_BETWEEN_SYM", "AEXPR_NOT_BETWEEN_SYM"})
_BETWEEN_OPERATORS = ("<", "<=", ">", ">=")
#: Sublinks that compare a value with the subquery's rows (IN, = ANY, < ALL, row comparisons).
_COMPARING_SUBLINKS = frozenset({"ANY_SUBLINK", "ALL_SUBLINK", "ROWCOMPARE_SUBLINK"})


@functools.lru_cache(maxsize=1024)
def _names_in(text: str) -> Optional[Tuple[Tuple[str, ...], ...]]:
    """The relations, types, operators and functions ``text`` names (lower case, without schema),
    and the types it casts a value other than a string literal to, read by PostgreSQL's parser;
    None when it cannot be read (the text's own reading decides)."""
    if not text:
        return None
    try:
        tree = json.loads(pg_parser.parse_sql_json(text))
    except Exception:  # noqa: BLE001 - a text PostgreSQL cannot parse was judged by its reading already
        return None
    relations: Dict[str, None] = {}
    types: Dict[str, None] = {}
    operators: Dict[str, None] = {}
    functions: Dict[str, None] = {}
    cast_targets: Dict[str, None] = {}
    call_shapes: Dict[Tuple[Any, ...], None] = {}

    def last(names: Any) -> Optional[str]:
        strings = [n.get("String", {}).get("sval") for n in names or () if isinstance(n, dict)]
        strings = [x for x in strings if x]
        return strings[-1] if strings else None

    stack: List[Any] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(node)
            continue
        if not isinstance(node, dict):
            continue
        for key, value in node.items():
            if key == "TypeCast" and isinstance(value, dict) and _is_string_literal(value.get("arg")):
                # 'text'::t is read by t's input function, not by a cast: only t's domain CHECKs run
                name = last((value.get("typeName") or {}).get("names"))
                if name:
                    types[name.lower()] = None
                continue
            # A FROM item is a RangeVar node; a write's target (INSERT/UPDATE/DELETE/MERGE's
            # ``relation``) is the same struct, unwrapped.
            if key in ("RangeVar", "relation") and isinstance(value, dict) and value.get("relname"):
                relations[str(value["relname"]).lower()] = None
            elif key in ("TypeName", "typeName") and isinstance(value, dict):
                name = last(value.get("names"))
                if name:
                    types[name.lower()] = None
                    cast_targets[name.lower()] = None
            elif key == "A_Expr" and isinstance(value, dict):
                if value.get("kind") in _BETWEEN_KINDS:  # read as comparisons: x >= a AND x <= b, ...
                    operators.update(dict.fromkeys(_BETWEEN_OPERATORS))
                else:
                    name = last(value.get("name"))
                    if name:
                        operators[name] = None
            elif key == "SubLink" and isinstance(value, dict) and value.get("subLinkType") in _COMPARING_SUBLINKS:
                operators[last(value.get("operName")) or "="] = None  # x IN (SELECT ...) compares with =
            elif (key == "CaseExpr" and isinstance(value, dict) and value.get("arg")) or (
                key == "JoinExpr" and isinstance(value, dict) and (value.get("usingClause") or value.get("isNatural"))
            ):
                operators["="] = None  # CASE x WHEN v compares x = v; JOIN USING/NATURAL JOIN joins on =
            elif key == "FuncCall" and isinstance(value, dict):
                name = last(value.get("funcname"))
                if name:
                    functions[name.lower()] = None
                    call_shapes[(name.lower(), *_call_shape(value))] = None
            if isinstance(value, (dict, list)):
                stack.append(value)
    return tuple(relations), tuple(types), tuple(operators), tuple(functions), tuple(cast_targets), tuple(call_shapes)


def _call_shape(call: Dict[str, Any]) -> Tuple[Optional[int], Tuple[Optional[str], ...]]:
    """(number of arguments, each one's type name when the text says it) of a ``FuncCall``; the
    number is None for the forms whose arguments PostgreSQL matches otherwise (named arguments,
    ``VARIADIC``, ``WITHIN GROUP``)."""
    args = call.get("args") or []
    if call.get("func_variadic") or call.get("agg_within_group") or any("NamedArgExpr" in a for a in args):
        return None, ()
    return len(args), tuple(_literal_type(a) for a in args)


def _literal_type(node: Dict[str, Any]) -> Optional[str]:
    """The type PostgreSQL gives an argument written as a typed constant or a cast; None when the
    text does not say (a column, an expression, a string literal: ``unknown`` until resolved)."""
    const = node.get("A_Const")
    if const is not None:
        if "ival" in const:
            return "int4"
        if "boolval" in const:
            return "bool"
        if "fval" in const:
            digits = str(const["fval"].get("fval", ""))
            return "int8" if digits.isdigit() and int(digits) < 2**63 else "numeric"
        return None
    cast = node.get("TypeCast")
    if cast is not None and not (cast.get("typeName") or {}).get("arrayBounds"):
        names = [n.get("String", {}).get("sval") for n in (cast.get("typeName") or {}).get("names") or ()]
        if not names or not names[-1] or (len(names) > 1 and names[0] != "pg_catalog"):
            return None  # a type of another schema is not a built-in, whatever its name
        return str(names[-1]).lower()
    return None


def _is_string_literal(node: Any) -> bool:
    return isinstance(node, dict) and "sval" in (node.get("A_Const") or {})
