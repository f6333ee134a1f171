"""Per-action decision latency of the governance kernel, next to Agent OS's own SQL check.

Run it on demand (pytest does not collect ``tests/benchmarks``)::

    python tests/benchmarks/bench_kernel_decisions.py                  # 2000 queries, seed 0
    python tests/benchmarks/bench_kernel_decisions.py --n 5000 --seed 7 --json /tmp/bench.json

It builds ``--n`` distinct SQL queries, deterministically from ``--seed``: SELECTs with joins,
filters and aggregates, CTEs, UPDATEs, INSERTs, DELETE / DROP / TRUNCATE, string literals and
comments that mention DROP or DELETE, and a few evasions (``DELETE/**/FROM``, ``MERGE ... THEN
DELETE``, a DROP smuggled through a nested block comment). Every query carries a label: should a
policy denying DROP, DELETE and TRUNCATE block it?

Each decision is timed on its own with ``time.perf_counter_ns`` after a warm-up on other queries
(so the workload's parse cache stays cold). Everything runs in one process; within a phase the
approaches are interleaved query by query, in a rotating order, so a noisy shared machine slows
them all alike and the ratios stay comparable. The garbage collector stays on, as in real use.
Actions are built before timing; a figure covers the decision only.

Rows of the table:

* ``kernel.check  first-seen`` -- ``GovernanceKernel([SQLPolicy(deny=[DROP, DELETE, TRUNCATE])])``
  without a recorder, its policy built with ``cache=False`` (analyses are otherwise shared by
  every SQLPolicy in the process), so this is parse + decision on every call.
* ``SQLPolicy.check_sql  first-seen`` -- a policy's ``check_sql`` alone (``cache=False``): the
  parse and analysis without the kernel around it. No dialect: sqlglot's generic reading, the
  readings where databases split text differently when the text calls for them, and
  PostgreSQL's parser when the text has what makes PostgreSQL differ.
* ``sqlglot.parse (bare parse)`` -- ``sqlglot.parse(text)`` alone, the floor of the row above.
* ``check_sql dialect=postgres  first-seen`` / ``pglast JSON parse + json.loads (bare)`` --
  ``SQLPolicy(dialect="postgres")``, which reads with libpg_query, next to libpg_query's JSON
  parse tree loaded into Python (what it walks).
* ``kernel.check, 4 SQL policies  first-seen`` / ``sqlglot.parse sqlite (bare parse)`` -- four
  ``SQLPolicy(dialect="sqlite")`` on one tool (deny DROP, DELETE, TRUNCATE, ALTER, one each) on
  texts they have not seen: they share one parse, so this stays near one bare parse.
* ``agent_os PolicyEngine.check_violation`` -- Agent OS's own check (role allow-list, then its
  SQL regexes) on the same queries; it keeps no cache, so first-seen and repeated cost the same.
* ``kernel.check  repeated`` / ``SQLPolicy.check_sql  repeated`` -- the same instances on the
  same queries again: every parse is a cache hit (the caches are sized to hold the workload).
* ``kernel.check + audit  repeated`` -- a kernel sharing the warm SQLPolicy but writing every
  decision to a real Agent OS ``FlightRecorder`` (SQLite, in a temporary directory). Every
  decision waits until its record is committed (the durable default; the check commits it
  itself, or shares a commit under way), so the latencies are mostly those commits. The FlightRecorder logs only
  errors (the plugin routes its per-violation WARNING lines to a logger of its own set to ERROR).
* ``governed tool call + audit  repeated`` -- the whole call an agent makes:
  ``governed_tool("database_query", tool, kernel=...)`` around a tool that does nothing, with its
  own audited kernel: bind the arguments, check, queue the record, run the tool, queue its
  outcome (a blocked call raises ``ActionBlockedError``, caught by the harness).

``blocked`` counts the queries each approach blocked; ``p99/median`` is the ratio of the two;
``allowed only`` are the median and p99 over the queries the approach allowed. Below the table:
where Agent OS's regex and the SQL parser disagree, a breakdown by kind of query against the
labels, and examples of queries SQLPolicy decides against its label. Timing targets are not
asserted; this only reports.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Set, Tuple

# agentlightning imports litellm, which otherwise fetches its model cost map over the network.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


import pglast  # noqa: E402
import sqlglot  # noqa: E402
from agent_os import PolicyEngine  # noqa: E402
from bench_common import environment, print_table, require_at_least  # noqa: E402

from agentlightning.contrib.kernel.agentos import Action, GovernanceKernel, SQLPolicy  # noqa: E402
from agentlightning.contrib.runner.agentos import ActionBlockedError, governed_tool  # noqa: E402

DENY = ("DROP", "DELETE", "TRUNCATE")
ROLE = "agent"
TOOL = "database_query"
WARMUP_QUERIES = 200

# ----------------------------------------------------------------------------- workload

Gen = Callable[[random.Random], str]

#: table -> predicates on it, each a function of the RNG giving ``column op value``.
PREDICATES: Dict[str, Tuple[Gen, ...]] = {
    "users": (
        lambda r: f"country = '{r.choice(['US', 'DE', 'FR', 'BR', 'IN', 'JP'])}'",
        lambda r: f"status = '{r.choice(['active', 'suspended', 'pending'])}'",
        lambda r: f"created_at >= '2024-{r.randint(1, 12):02d}-{r.randint(1, 28):02d}'",
        lambda r: f"email LIKE '%@{r.choice(['example.com', 'corp.io', 'mail.net'])}'",
    ),
    "orders": (
        lambda r: f"total > {r.randint(5, 5000)}",
        lambda r: f"status IN ('{r.choice(['paid', 'new'])}', '{r.choice(['shipped', 'refunded'])}')",
        lambda r: f"created_at BETWEEN '2024-{r.randint(1, 6):02d}-01' AND '2024-{r.randint(7, 12):02d}-01'",
    ),
    "order_items": (
        lambda r: f"quantity >= {r.randint(1, 20)}",
        lambda r: f"price < {r.randint(1, 900)}.{r.randint(0, 99):02d}",
    ),
    "products": (
        lambda r: f"category = '{r.choice(['books', 'garden', 'toys', 'tools', 'games'])}'",
        lambda r: f"stock < {r.randint(0, 100)}",
        lambda r: f"price BETWEEN {r.randint(1, 50)} AND {r.randint(51, 500)}",
    ),
    "tickets": (
        lambda r: f"priority <= {r.randint(1, 4)}",
        lambda r: f"status = '{r.choice(['open', 'closed', 'waiting'])}'",
    ),
    "invoices": (
        lambda r: f"amount > {r.randint(10, 10000)}",
        lambda r: f"due_date < '2025-{r.randint(1, 12):02d}-{r.randint(1, 28):02d}'",
        lambda r: f"paid = {r.choice(['TRUE', 'FALSE'])}",
    ),
    "sessions": (
        lambda r: f"started_at < '2024-{r.randint(1, 12):02d}-{r.randint(1, 28):02d}'",
        lambda r: f"user_id = {r.randint(1, 99999)}",
    ),
}
COLUMNS: Dict[str, Tuple[str, ...]] = {
    "users": ("id", "email", "name", "country", "status", "created_at"),
    "orders": ("id", "user_id", "total", "status", "created_at"),
    "order_items": ("id", "order_id", "product_id", "quantity", "price"),
    "products": ("id", "name", "category", "price", "stock"),
    "tickets": ("id", "user_id", "subject", "status", "priority"),
    "invoices": ("id", "order_id", "amount", "due_date", "paid"),
    "sessions": ("id", "user_id", "started_at", "ip"),
}
#: FROM clauses: (table, alias) of the base, then the joined (table, alias, ON condition).
JOIN_PATHS: Tuple[Tuple[Tuple[str, str], Tuple[Tuple[str, str, str], ...]], ...] = (
    (("users", "u"), ()),
    (("products", "p"), ()),
    (("orders", "o"), (("users", "u", "u.id = o.user_id"),)),
    (("tickets", "t"), (("users", "u", "u.id = t.user_id"),)),
    (("order_items", "oi"), (("orders", "o", "o.id = oi.order_id"), ("products", "p", "p.id = oi.product_id"))),
    (("invoices", "i"), (("orders", "o", "o.id = i.order_id"), ("users", "u", "u.id = o.user_id"))),
)
#: table -> assignments an UPDATE makes.
ASSIGNMENTS: Dict[str, Tuple[Gen, ...]] = {
    "users": (
        lambda r: f"status = '{r.choice(['active', 'suspended'])}'",
        lambda r: f"country = '{r.choice(['US', 'DE'])}'",
    ),
    "orders": (
        lambda r: f"status = '{r.choice(['shipped', 'refunded'])}'",
        lambda r: f"total = total * {r.randint(80, 99)} / 100",
    ),
    "products": (lambda r: f"stock = stock - {r.randint(1, 9)}", lambda r: f"price = {r.randint(1, 500)}.99"),
    "tickets": (lambda r: f"priority = {r.randint(1, 4)}", lambda r: f"status = '{r.choice(['closed', 'waiting'])}'"),
    "invoices": (lambda r: "paid = TRUE", lambda r: f"due_date = '2025-{r.randint(1, 12):02d}-01'"),
}
DROP_TARGETS = ("TABLE", "TABLE IF EXISTS", "VIEW", "INDEX")


def _styled(r: random.Random, sql: str) -> str:
    """Agents write SQL in any case and layout: lowercase some, break lines in others."""
    if r.random() < 0.2:
        sql = sql.lower()
    if r.random() < 0.3:
        for keyword in (" FROM ", " JOIN ", " LEFT JOIN ", " WHERE ", " GROUP BY ", " ORDER BY "):
            sql = sql.replace(keyword, "\n" + keyword.strip() + " ")
    return sql


def _where(r: random.Random, tables: Sequence[Tuple[str, str]]) -> str:
    chosen = r.sample(list(tables), k=r.randint(1, len(tables)))
    return " AND ".join(f"{alias}{'.' if alias else ''}{r.choice(PREDICATES[table])(r)}" for table, alias in chosen)


def select(r: random.Random) -> str:
    (base, alias), joins = r.choice(JOIN_PATHS)
    tables = [(base, alias)] + [(table, a) for table, a, _ in joins]
    from_clause = f"{base} {alias}" + "".join(
        f" {r.choice(['JOIN', 'LEFT JOIN'])} {table} {a} ON {on}" for table, a, on in joins
    )
    columns = [f"{a}.{c}" for table, a in tables for c in COLUMNS[table]]
    if r.random() < 0.25:
        key = r.choice(columns)
        return _styled(
            r,
            f"SELECT {key}, COUNT(*) AS n FROM {from_clause} WHERE {_where(r, tables)} "
            f"GROUP BY {key} HAVING COUNT(*) > {r.randint(1, 50)} ORDER BY n DESC",
        )
    picked = r.sample(columns, k=r.randint(2, 5))
    tail = r.choice(["", f" ORDER BY {picked[0]} DESC LIMIT {r.randint(10, 500)}", f" LIMIT {r.randint(1, 100)}"])
    return _styled(r, f"SELECT {', '.join(picked)} FROM {from_clause} WHERE {_where(r, tables)}{tail}")


def cte_select(r: random.Random) -> str:
    return _styled(
        r,
        f"WITH spend AS (SELECT user_id, SUM(total) AS spent FROM orders "
        f"WHERE created_at >= '2024-{r.randint(1, 12):02d}-01' GROUP BY user_id) "
        f"SELECT u.email, s.spent FROM spend s JOIN users u ON u.id = s.user_id "
        f"WHERE s.spent > {r.randint(100, 20000)} ORDER BY s.spent DESC LIMIT {r.randint(5, 100)}",
    )


def update(r: random.Random) -> str:
    table = r.choice(list(ASSIGNMENTS))
    where = r.choice([f"id = {r.randint(1, 99999)}", _where(r, [(table, "")])])
    return _styled(r, f"UPDATE {table} SET {r.choice(ASSIGNMENTS[table])(r)} WHERE {where}")


def insert(r: random.Random) -> str:
    uid = r.randint(1, 99999)
    return r.choice(
        [
            f"INSERT INTO orders (user_id, total, status) VALUES "
            f"({uid}, {r.randint(1, 999)}.{r.randint(0, 99):02d}, 'new')",
            f"INSERT INTO sessions (user_id, started_at, ip) VALUES ({uid}, '2024-{r.randint(1, 12):02d}-01', "
            f"'10.0.{r.randint(0, 255)}.{r.randint(1, 254)}')",
            f"INSERT INTO order_items (order_id, product_id, quantity, price) VALUES "
            f"({uid}, {r.randint(1, 5000)}, {r.randint(1, 9)}, {r.randint(1, 300)}.00), "
            f"({uid}, {r.randint(1, 5000)}, 1, 9.99)",
        ]
    )


def insert_select(r: random.Random) -> str:
    return _styled(
        r,
        f"INSERT INTO orders_archive SELECT * FROM orders "
        f"WHERE created_at < '20{r.randint(10, 23)}-{r.randint(1, 12):02d}-01' "
        f"AND status = '{r.choice(['shipped', 'refunded'])}'",
    )


def delete(r: random.Random) -> str:
    table = r.choice(["sessions", "tickets", "orders", "invoices"])
    return _styled(r, f"DELETE FROM {table} WHERE {_where(r, [(table, '')])}")


def drop(r: random.Random) -> str:
    target = r.choice(DROP_TARGETS)
    prefix = {"INDEX": "idx_orders_", "VIEW": "report_"}.get(target, "tmp_export_")
    return _styled(r, f"DROP {target} {prefix}{r.randint(1, 99999)}")


def truncate(r: random.Random) -> str:
    return _styled(r, f"TRUNCATE {r.choice(['TABLE ', ''])}staging_events_{r.randint(1, 99999)}")


def multi_statement(r: random.Random) -> str:
    return f"{select(r)}; {r.choice([delete, drop, truncate])(r)}"


def alter_drop_column(r: random.Random) -> str:
    return f"ALTER TABLE {r.choice(list(COLUMNS))} DROP COLUMN legacy_{r.randint(1, 99999)}"


def literal_keyword(r: random.Random) -> str:
    n = r.randint(1, 99999)
    return r.choice(
        [
            f"UPDATE tickets SET subject = 'customer wants to drop the {r.choice(['pro', 'team', 'family'])} plan' "
            f"WHERE id = {n}",
            f"INSERT INTO tickets (user_id, subject, status, priority) VALUES "
            f"({n}, 'please delete from my profile the saved cards', 'open', {r.randint(1, 4)})",
            f"SELECT id, subject FROM tickets WHERE subject LIKE '%DROP TABLE%' "
            f"AND priority <= {r.randint(1, 4)} LIMIT {n % 100 + 1}",
            f"SELECT COUNT(*) FROM audit_log WHERE message = 'TRUNCATE TABLE staging_{n} requested'",
        ]
    )


def comment_keyword(r: random.Random) -> str:
    return r.choice(
        [
            f"-- drop rows older than 90 days in a later job\n{select(r)}",
            f"/* DELETE FROM handled by the nightly cleanup */ {select(r)}",
            f"{update(r)} -- then drop the temp copy",
        ]
    )


def mass_update(r: random.Random) -> str:
    table = r.choice(list(ASSIGNMENTS))
    return f"UPDATE {table} SET {r.choice(ASSIGNMENTS[table])(r)} WHERE 1 = 1"


def obfuscated(r: random.Random) -> str:
    n = r.randint(1, 99999)
    return r.choice(
        [
            f"DELETE/**/FROM sessions WHERE user_id = {n}",
            f"DROP/**/TABLE tmp_export_{n}",
            f"TRUNCATE/* nightly */TABLE staging_events_{n}",
            f"delete\t/* cleanup */ from tickets where id = {n}",
        ]
    )


def merge_delete(r: random.Random) -> str:
    return (
        f"MERGE INTO products p USING product_updates s ON p.id = s.id AND s.batch_id = {r.randint(1, 99999)} "
        f"WHEN MATCHED AND s.discontinued THEN DELETE WHEN MATCHED THEN UPDATE SET stock = s.stock"
    )


def delete_without_from(r: random.Random) -> str:
    return f"DELETE sessions WHERE user_id = {r.randint(1, 99999)}"


def nested_comment(r: random.Random) -> str:
    return f"SELECT id, total FROM orders WHERE id = {r.randint(1, 99999)} /* /* */; DROP TABLE users; -- */"


@dataclass(frozen=True)
class QueryKind:
    name: str
    weight: int
    should_block: bool  # under deny=[DROP, DELETE, TRUNCATE]
    make: Gen


KINDS: Tuple[QueryKind, ...] = (
    QueryKind("select (joins, filters, aggregates)", 38, False, select),
    QueryKind("WITH ... SELECT", 4, False, cte_select),
    QueryKind("update", 10, False, update),
    QueryKind("insert", 9, False, insert),
    QueryKind("insert ... select", 3, False, insert_select),
    QueryKind("delete", 5, True, delete),
    QueryKind("drop", 3, True, drop),
    QueryKind("truncate", 2, True, truncate),
    QueryKind("select; delete|drop|truncate", 2, True, multi_statement),
    QueryKind("alter table ... drop column", 1, True, alter_drop_column),
    QueryKind("keyword in a string literal", 6, False, literal_keyword),
    QueryKind("keyword in a comment", 5, False, comment_keyword),
    QueryKind("update ... where 1 = 1", 2, False, mass_update),
    QueryKind("comment inside the keyword (DELETE/**/FROM)", 3, True, obfuscated),
    QueryKind("merge ... then delete", 1, True, merge_delete),
    QueryKind("delete without FROM (T-SQL)", 1, True, delete_without_from),
    # SQLite and MySQL do not nest block comments: for them "/* /* */" is a whole comment, so the
    # DROP after it runs. Postgres nests them and would see one SELECT.
    QueryKind("DROP after a nested-looking comment", 1, True, nested_comment),
)


@dataclass(frozen=True)
class Query:
    sql: str
    kind: QueryKind


def build_workload(count: int, seed: int) -> List[Query]:
    """``count`` distinct queries, the same for the same seed."""
    r = random.Random(seed)
    seen: Set[str] = set()
    queries: List[Query] = []
    weights = [k.weight for k in KINDS]
    while len(queries) < count:
        kind = r.choices(KINDS, weights)[0]
        sql = kind.make(r)
        if sql not in seen:
            seen.add(sql)
            queries.append(Query(sql, kind))
    return queries


# ----------------------------------------------------------------------------- timing

Call = Callable[[int], Any]


@dataclass
class Series:
    """One row of the table: a timed call per query and what it decided."""

    label: str
    call: Call
    is_blocked: Callable[[Any], bool]
    samples_ns: List[int]
    blocked: List[bool]

    @classmethod
    def of(cls, label: str, call: Call, is_blocked: Callable[[Any], bool]) -> "Series":
        return cls(label, call, is_blocked, [], [])

    def summary(self) -> Dict[str, Any]:
        allowed = [ns for ns, blocked in zip(self.samples_ns, self.blocked) if not blocked]
        return {
            "approach": self.label,
            "n": len(self.samples_ns),
            "median_us": statistics.median(self.samples_ns) / 1000,
            "p99_us": _p99(self.samples_ns) / 1000,
            "blocked": sum(self.blocked),
            "allowed_median_us": statistics.median(allowed) / 1000 if allowed else None,
            "allowed_p99_us": _p99(allowed) / 1000 if allowed else None,
        }


def _p99(samples: Sequence[int]) -> int:
    ordered = sorted(samples)
    return ordered[max(0, math.ceil(0.99 * len(ordered)) - 1)]


def run_interleaved(series: Sequence[Series], count: int) -> None:
    """Time every series on queries 0..count-1, one query at a time, rotating who goes first."""
    clock = time.perf_counter_ns
    for i in range(count):
        shift = i % len(series)
        for s in (*series[shift:], *series[:shift]):
            started = clock()
            result = s.call(i)
            s.samples_ns.append(clock() - started)
            s.blocked.append(s.is_blocked(result))


def warm_up(calls: Sequence[Call], count: int) -> None:
    """Exercise every code path, cache misses and hits, on queries outside the workload."""
    for _ in range(2):
        for i in range(count):
            for call in calls:
                call(i)


# ----------------------------------------------------------------------------- report


def _bare_sqlglot(sql: str, dialect: Optional[str] = None) -> Any:
    try:
        return sqlglot.parse(sql, read=dialect)
    except sqlglot.errors.SqlglotError:
        return None


def _bare_pglast(sql: str) -> Any:
    try:
        return json.loads(pglast.parser.parse_sql_json(sql))
    except pglast.parser.ParseError:
        return None


def short(sql: str, limit: int = 100) -> str:
    text = repr(sql)
    return text if len(text) <= limit else text[: limit - 3] + "..."


@dataclass
class Results:
    first_seen: List[Series]  # kernel.check, SQLPolicy.check_sql, Agent OS check_violation
    repeated: List[Series]  # kernel.check, SQLPolicy.check_sql, kernel.check with audit
    floor: Series  # a no-op call through the same harness
    audit: Dict[str, Any]  # FlightRecorder.verify_integrity() of the audited kernel's file
    elapsed_s: float


def measure(workload: Sequence[Query], warmup: Sequence[Query]) -> Results:
    actions = [Action(TOOL, {"query": q.sql}) for q in workload]
    arguments = [{"query": q.sql} for q in workload]
    warm_actions = [Action(TOOL, {"query": q.sql}) for q in warmup]
    warm_arguments = [{"query": q.sql} for q in warmup]
    # cache turns the shared analysis cache on or off; its size is fixed (8,192
    # texts), which holds the whole workload at the usual --n: repeated rows are cache hits.
    cache = True

    # Analyses are cached per (text, dialect) and shared by every SQLPolicy in the process, so
    # the first-seen rows use policies that bypass the cache (cache=False): parse + decision on
    # every call, whoever saw the text before. The repeated rows use the shared cache.
    kernel_policy = SQLPolicy(deny=DENY, cache=cache)
    kernel = GovernanceKernel([kernel_policy])
    bare_policy = SQLPolicy(deny=DENY, cache=cache)
    cold_kernel = GovernanceKernel([SQLPolicy(deny=DENY, cache=False)])
    cold_policy = SQLPolicy(deny=DENY, cache=False)
    cold_postgres = SQLPolicy(deny=DENY, dialect="postgres", cache=False)
    # N SQL policies on one tool share one parse: four policies, the cache on, texts never seen.
    shared_kernel = GovernanceKernel(
        [SQLPolicy(deny=[kind], name=f"deny-{kind}", cache=cache, dialect="sqlite") for kind in (*DENY, "ALTER")]
    )
    engine = PolicyEngine()
    engine.add_constraint(ROLE, [TOOL])

    def decided(decision: Any) -> bool:
        return bool(decision.blocked)

    def denied(reason: Optional[str]) -> bool:
        return reason is not None

    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="bench-kernel-") as tmp:
        audited = GovernanceKernel([kernel_policy], recorder=Path(tmp) / "audit.db")
        tool_kernel = GovernanceKernel([kernel_policy], recorder=Path(tmp) / "tool-audit.db")
        tool = governed_tool(TOOL, lambda query: "ok", kernel=tool_kernel)

        def call_tool(query: str) -> bool:
            """The full governed call: check, audit record, run (a no-op tool), outcome record."""
            try:
                tool(query)
            except ActionBlockedError:
                return True
            return False

        warm_up(
            [
                lambda i: cold_kernel.check(warm_actions[i]),
                lambda i: cold_postgres.check_sql(warmup[i].sql),
                lambda i: shared_kernel.check(warm_actions[i]),
                lambda i: _bare_sqlglot(warmup[i].sql),
                lambda i: _bare_pglast(warmup[i].sql),
                lambda i: kernel.check(warm_actions[i]),
                lambda i: bare_policy.check_sql(warmup[i].sql),
                lambda i: engine.check_violation(ROLE, TOOL, warm_arguments[i]),
                lambda i: audited.check(warm_actions[i]),
                lambda i: call_tool(warmup[i].sql),
            ],
            len(warmup),
        )
        first_seen = [
            Series.of("kernel.check  first-seen", lambda i: cold_kernel.check(actions[i]), decided),
            Series.of("SQLPolicy.check_sql  first-seen", lambda i: cold_policy.check_sql(workload[i].sql), bool),
            Series.of(
                "agent_os PolicyEngine.check_violation",
                lambda i: engine.check_violation(ROLE, TOOL, arguments[i]),
                denied,
            ),
            Series.of("sqlglot.parse (bare parse)", lambda i: _bare_sqlglot(workload[i].sql), lambda _: False),
            Series.of(
                "check_sql dialect=postgres  first-seen", lambda i: cold_postgres.check_sql(workload[i].sql), bool
            ),
            Series.of(
                "pglast JSON parse + json.loads (bare)", lambda i: _bare_pglast(workload[i].sql), lambda _: False
            ),
            Series.of("kernel.check, 4 SQL policies  first-seen", lambda i: shared_kernel.check(actions[i]), decided),
            Series.of(
                "sqlglot.parse sqlite (bare parse)", lambda i: _bare_sqlglot(workload[i].sql, "sqlite"), lambda _: False
            ),
        ]
        repeated = [
            Series.of("kernel.check  repeated", lambda i: kernel.check(actions[i]), decided),
            Series.of("SQLPolicy.check_sql  repeated", lambda i: bare_policy.check_sql(workload[i].sql), bool),
            Series.of("kernel.check + audit  repeated", lambda i: audited.check(actions[i]), decided),
            Series.of("governed tool call + audit  repeated", lambda i: call_tool(workload[i].sql), bool),
        ]
        floor = Series.of("no-op call", lambda i: None, lambda _: False)
        run_interleaved(first_seen, len(workload))
        for query in workload:  # the first-seen rows bypass the cache: fill it, untimed, for the repeated rows
            bare_policy.check_sql(query.sql)
        run_interleaved([*repeated, floor], len(workload))
        audit = audited.verify_audit()
        tool_audit = tool_kernel.verify_audit()
        audit = {
            **audit,
            "valid": audit.get("valid") and tool_audit.get("valid"),
            "total_entries": audit.get("total_entries", 0) + tool_audit.get("total_entries", 0),
        }
        audited.close()
        tool_kernel.close()
    return Results(first_seen, repeated, floor, audit, time.perf_counter() - started)


def report(workload: Sequence[Query], results: Results, header: str, env: Dict[str, Any]) -> Dict[str, Any]:
    """Print the figures; return them as a JSON-able dict."""
    kernel_cold, policy_cold, agent_os, bare_parse, postgres_cold, bare_pglast, shared_cold, bare_sqlite = (
        results.first_seen
    )
    rows = [s.summary() for s in (*results.first_seen, *results.repeated)]
    floor_us = results.floor.summary()["median_us"]
    n = len(workload)

    print(header)
    print(f"{env['python']} on {env['platform']}, {env['cpus']} CPUs")
    sqlglotc = f"yes (sqlglotc {env['sqlglotc']})" if env["sqlglotc_in_use"] else "no (pure-Python parser)"
    print(
        f"sqlglot {env['sqlglot']}, compiled sqlglotc parser in use: {sqlglotc}; "
        f"agent-os-kernel {env['agent_os_kernel']}"
    )
    print(f"policy: SQLPolicy(deny={list(DENY)}); Agent OS: PolicyEngine with role {ROLE!r} allowed {TOOL!r}\n")
    print_table(
        ["approach", "n", "median us", "p99 us", "p99/median", "blocked", "allowed only: median us", "p99 us"],
        [
            [
                r["approach"],
                r["n"],
                r["median_us"],
                r["p99_us"],
                f"{r['p99_us'] / r['median_us']:.1f}x",
                r["blocked"],
                r["allowed_median_us"],
                r["allowed_p99_us"],
            ]
            for r in rows
        ],
    )
    print(f"harness floor (timer + a no-op call): median {floor_us:.2f} us, included in every figure")
    med = {s.label: s.summary()["median_us"] for s in results.first_seen}
    ratios = {
        "check_sql / sqlglot.parse (no dialect)": med[policy_cold.label] / med[bare_parse.label],
        "check_sql postgres / pglast JSON + loads": med[postgres_cold.label] / med[bare_pglast.label],
        "kernel 4 sqlite policies / sqlglot.parse sqlite": med[shared_cold.label] / med[bare_sqlite.label],
    }
    for name, value in ratios.items():
        print(f"first-seen median ratio, {name}: {value:.2f}x")
    print(
        f"audit trail: {results.audit.get('total_entries')} FlightRecorder records, "
        f"hash chain valid: {results.audit.get('valid')}"
    )
    verdicts = [s.blocked for s in (kernel_cold, policy_cold, *results.repeated)]
    postgres_disagree = sum(a != b for a, b in zip(postgres_cold.blocked, policy_cold.blocked, strict=True))
    print(f"dialect=postgres and no dialect disagree on {postgres_disagree} of {n} queries")
    same = all(v == verdicts[0] for v in verdicts)
    print(
        f"kernel and check_sql, cold and warm, audited or not: same verdict on every query: {'yes' if same else 'NO'}"
    )

    regex_only = sum(a and not p for a, p in zip(agent_os.blocked, policy_cold.blocked, strict=True))
    parser_only = sum(p and not a for a, p in zip(agent_os.blocked, policy_cold.blocked, strict=True))
    print(
        f"\nAgent OS regex vs SQLPolicy parse: disagree on {regex_only + parser_only} of {n} queries "
        f"(blocked only by the regex: {regex_only}, only by the parser: {parser_only})\n"
    )
    by_kind = []
    for kind in KINDS:
        members = [i for i, q in enumerate(workload) if q.kind is kind]
        if members:
            by_kind.append(
                {
                    "kind": kind.name,
                    "n": len(members),
                    "label": "block" if kind.should_block else "allow",
                    "sqlpolicy_blocked": sum(policy_cold.blocked[i] for i in members),
                    "agent_os_blocked": sum(agent_os.blocked[i] for i in members),
                }
            )
    print_table(
        ["kind of query", "n", "label", "SQLPolicy blocked", "Agent OS blocked"], [list(k.values()) for k in by_kind]
    )
    print("(Agent OS also blocks 'UPDATE ... WHERE 1 = 1' by design; the deny list here does not name UPDATE.)")

    wrong = {
        name: [i for i, q in enumerate(workload) if s.blocked[i] != q.kind.should_block]
        for name, s in (("sqlpolicy", policy_cold), ("agent_os", agent_os))
    }
    print(
        f"\nverdicts against the label: SQLPolicy {len(wrong['sqlpolicy'])} wrong, "
        f"Agent OS {len(wrong['agent_os'])} wrong"
    )
    for i in wrong["sqlpolicy"][:3]:
        print(f"  SQLPolicy {'blocked' if policy_cold.blocked[i] else 'allowed'}: {short(workload[i].sql)}")
    print(f"\nwarm-up and measurement took {results.elapsed_s:.1f} s")

    return {
        "environment": env,
        "rows": rows,
        "harness_floor_us": floor_us,
        "first_seen_ratios": ratios,
        "audit": {"records": results.audit.get("total_entries"), "valid": results.audit.get("valid")},
        "disagreements": {"regex_only": regex_only, "parser_only": parser_only},
        "by_kind": by_kind,
        "wrong_vs_label": {name: len(indices) for name, indices in wrong.items()},
        "sqlpolicy_wrong_examples": [workload[i].sql for i in wrong["sqlpolicy"][:10]],
    }


def main(argv: Optional[Sequence[str]] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--n", type=int, default=2000, help="number of distinct SQL queries in the workload (default: 2000)"
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the query generator (default: 0)")
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write the figures to this JSON file")
    args = parser.parse_args(argv)
    require_at_least(parser, args, n=1)

    queries = build_workload(args.n + WARMUP_QUERIES, args.seed)
    workload, warmup = queries[: args.n], queries[args.n :]
    results = measure(workload, warmup)
    header = (
        f"Governance kernel decision latency -- n={args.n} distinct queries, seed={args.seed}, warm-up={len(warmup)}"
    )
    figures = report(workload, results, header, environment("sqlglotc", "agent-os-kernel"))
    if args.json is not None:
        args.json.write_text(
            json.dumps({"n": args.n, "seed": args.seed, "warmup": len(warmup), **figures}, indent=2) + "\n"
        )
        print(f"figures written to {args.json}")


if __name__ == "__main__":
    main()
