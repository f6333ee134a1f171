"""False positives of the default-deny SQL guard on realistic text-to-SQL queries.

Run it on demand (pytest does not collect ``tests/benchmarks``)::

    python tests/benchmarks/bench_text_to_sql.py            # the table
    python tests/benchmarks/bench_text_to_sql.py --show 5   # and up to 5 blocked queries per set-up

It generates (seed 0) at least 2,000 distinct queries of the kind a text-to-SQL agent writes
against a small shop schema: joins, aggregates with ``GROUP BY``/``HAVING``, CTEs, window
functions, subqueries, ``CASE``, string and date functions, ``INSERT`` and ``UPDATE``. Every
query is first run on SQLite (python's ``sqlite3``, in a transaction rolled back), so each is SQL
a database really runs; then each is judged by ``SQLPolicy(deny=["DROP", "DELETE", "TRUNCATE"])``
with no dialect and with ``dialect`` postgres, mysql and sqlite, first-seen (``cache=False``).
Dialect-specific date expressions are added for the named dialects (PostgreSQL's ``date_trunc``
and ``EXTRACT``, MySQL's ``DATE_FORMAT``/``YEAR``, SQLite's ``strftime``); those are checked on
SQLite only when they are SQLite's. The target is **0 blocked** in every set-up.
"""

from __future__ import annotations

import argparse
import os
import random
import sqlite3
import sys
import time
from pathlib import Path
from typing import Dict, List, Optional, Sequence

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from agentlightning.contrib.kernel.agentos import SQLPolicy  # noqa: E402

SCHEMA = (
    "CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT, email TEXT, city TEXT, country TEXT, "
    "created_at TEXT, tier TEXT)",
    "CREATE TABLE products (id INTEGER PRIMARY KEY, name TEXT, category TEXT, price REAL, stock INTEGER)",
    "CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER, status TEXT, total REAL, created_at TEXT)",
    "CREATE TABLE order_items (id INTEGER PRIMARY KEY, order_id INTEGER, product_id INTEGER, quantity INTEGER, "
    "unit_price REAL)",
    "CREATE TABLE employees (id INTEGER PRIMARY KEY, name TEXT, department_id INTEGER, salary REAL, "
    "manager_id INTEGER, hired_at TEXT)",
    "CREATE TABLE departments (id INTEGER PRIMARY KEY, name TEXT, budget REAL)",
)
ROWS = (
    "INSERT INTO customers VALUES (1, 'Ann', 'ann@x.org', 'Paris', 'FR', '2024-01-05', 'gold'), "
    "(2, 'Bob', 'bob@x.org', 'Lyon', 'FR', '2024-02-11', 'silver'), "
    "(3, 'Cy', NULL, 'Oslo', 'NO', '2023-12-30', 'gold')",
    "INSERT INTO products VALUES (1, 'pen', 'office', 1.5, 100), (2, 'desk', 'furniture', 120.0, 4), "
    "(3, 'lamp', 'furniture', 35.0, 12)",
    "INSERT INTO orders VALUES (1, 1, 'shipped', 121.5, '2024-03-01'), (2, 2, 'pending', 35.0, '2024-03-02'), "
    "(3, 1, 'cancelled', 3.0, '2024-04-10')",
    "INSERT INTO order_items VALUES (1, 1, 1, 1, 1.5), (2, 1, 2, 1, 120.0), (3, 2, 3, 1, 35.0), (4, 3, 1, 2, 1.5)",
    "INSERT INTO departments VALUES (1, 'sales', 100000), (2, 'ops', 50000)",
    "INSERT INTO employees VALUES (1, 'Eve', 1, 5000, NULL, '2020-01-01'), (2, 'Dan', 1, 4000, 1, '2021-06-01'), "
    "(3, 'Fay', 2, 4500, 1, '2022-09-15')",
)

CITIES = ["Paris", "Lyon", "Oslo", "Berlin", "Madrid", "Rome", "Lisbon", "Vienna"]
STATUSES = ["shipped", "pending", "cancelled", "returned", "paid"]
CATEGORIES = ["office", "furniture", "garden", "toys", "books", "kitchen"]
TIERS = ["gold", "silver", "bronze"]
AGGREGATES = ["COUNT(*)", "SUM(o.total)", "AVG(o.total)", "MAX(o.total)", "MIN(o.total)", "COUNT(DISTINCT o.id)"]
STRING_EXPRS = [
    "UPPER(c.name)",
    "LOWER(c.email)",
    "LENGTH(c.name)",
    "SUBSTR(c.name, 1, 3)",
    "TRIM(c.city)",
    "REPLACE(c.email, '@', ' at ')",
    "COALESCE(c.email, 'none')",
    "c.name || ' (' || c.city || ')'",
]
WINDOWS = [
    "ROW_NUMBER() OVER (PARTITION BY o.customer_id ORDER BY o.created_at)",
    "RANK() OVER (ORDER BY o.total DESC)",
    "DENSE_RANK() OVER (PARTITION BY o.status ORDER BY o.total DESC)",
    "SUM(o.total) OVER (PARTITION BY o.customer_id)",
    "AVG(o.total) OVER (PARTITION BY o.status)",
    "LAG(o.total) OVER (ORDER BY o.created_at)",
    "LEAD(o.total, 1) OVER (ORDER BY o.created_at)",
    "COUNT(*) OVER (PARTITION BY o.customer_id)",
]
DATE_EXPRS: Dict[Optional[str], List[str]] = {
    "postgres": [
        "date_trunc('month', o.created_at::timestamp)",
        "EXTRACT(YEAR FROM o.created_at::date)",
        "to_char(o.created_at::date, 'YYYY-MM')",
        "o.created_at::date + INTERVAL '7 days'",
    ],
    "mysql": ["DATE_FORMAT(o.created_at, '%Y-%m')", "YEAR(o.created_at)", "DATE_ADD(o.created_at, INTERVAL 7 DAY)"],
    "sqlite": ["strftime('%Y-%m', o.created_at)", "date(o.created_at, '+7 days')", "julianday(o.created_at)"],
}


def _generic_queries(rng: random.Random) -> List[str]:
    """Queries in the SQL all three databases read (checked on SQLite)."""
    out: List[str] = []
    for city in CITIES:
        for status in STATUSES:
            for agg in AGGREGATES:
                out.append(
                    f"SELECT c.name, {agg} AS value FROM customers c JOIN orders o ON o.customer_id = c.id "
                    f"WHERE c.city = '{city}' AND o.status = '{status}' GROUP BY c.name ORDER BY value DESC"
                )
    for category in CATEGORIES:
        for limit in (5, 10, 20):
            for min_qty in (1, 2, 5):
                out.append(
                    f"SELECT p.name, SUM(oi.quantity * oi.unit_price) AS revenue FROM products p "
                    f"JOIN order_items oi ON oi.product_id = p.id JOIN orders o ON o.id = oi.order_id "
                    f"WHERE p.category = '{category}' GROUP BY p.name HAVING SUM(oi.quantity) >= {min_qty} "
                    f"ORDER BY revenue DESC LIMIT {limit}"
                )
    for window in WINDOWS:
        for status in STATUSES:
            for limit in (10, 50, 100):
                out.append(
                    f"SELECT o.id, o.customer_id, o.total, {window} AS w FROM orders o "
                    f"WHERE o.status <> '{status}' ORDER BY o.id LIMIT {limit}"
                )
    for tier in TIERS:
        for threshold in (10, 50, 100, 250, 500):
            for city in CITIES:
                out.append(
                    f"WITH big AS (SELECT customer_id, SUM(total) AS spent FROM orders GROUP BY customer_id "
                    f"HAVING SUM(total) > {threshold}) SELECT c.name, c.city, big.spent FROM customers c "
                    f"JOIN big ON big.customer_id = c.id WHERE c.tier = '{tier}' AND c.city <> '{city}' "
                    f"ORDER BY big.spent DESC"
                )
    for expr in STRING_EXPRS:
        for city in CITIES:
            for order in ("c.name", "c.id DESC", "2"):
                out.append(f"SELECT c.id, {expr} AS label FROM customers c WHERE c.city = '{city}' ORDER BY {order}")
    for salary in (3000, 4000, 5000, 6000):
        for dept in ("sales", "ops", "research"):
            for kind in ("LEFT JOIN", "JOIN"):
                out.append(
                    f"SELECT d.name AS department, COUNT(e.id) AS people, AVG(e.salary) AS avg_salary, "
                    f"MAX(e.salary) - MIN(e.salary) AS spread FROM departments d {kind} employees e "
                    f"ON e.department_id = d.id WHERE d.name <> '{dept}' AND (e.salary IS NULL OR e.salary > {salary}) "
                    f"GROUP BY d.name"
                )
                out.append(
                    f"SELECT e.name, m.name AS manager FROM employees e {kind} employees m ON m.id = e.manager_id "
                    f"WHERE e.salary >= {salary} AND e.name NOT IN (SELECT name FROM departments WHERE name = '{dept}')"
                )
    for status in STATUSES:
        for low, high in ((0, 50), (50, 100), (100, 500), (10, 1000)):
            out.append(
                f"SELECT o.id, CASE WHEN o.total < {low} THEN 'small' WHEN o.total < {high} THEN 'medium' "
                f"ELSE 'large' END AS size FROM orders o WHERE o.status = '{status}'"
            )
            out.append(
                f"SELECT c.name FROM customers c WHERE EXISTS (SELECT 1 FROM orders o WHERE o.customer_id = c.id "
                f"AND o.status = '{status}' AND o.total BETWEEN {low} AND {high})"
            )
            out.append(
                f"SELECT status, ROUND(AVG(total), 2) AS avg_total, ABS(MIN(total) - {low}) AS gap FROM orders "
                f"WHERE total BETWEEN {low} AND {high} GROUP BY status"
            )
    for i in range(400):
        name = rng.choice(["Gil", "Hal", "Ivy", "Joe", "Kim", "Lou", "Max", "Ned"]) + str(i)
        city = rng.choice(CITIES)
        out.append(
            f"INSERT INTO customers (name, email, city, country, created_at, tier) VALUES ('{name}', "
            f"'{name.lower()}@example.org', '{city}', 'FR', '2024-05-{1 + i % 28:02d}', '{rng.choice(TIERS)}')"
        )
        out.append(
            f"INSERT INTO orders (customer_id, status, total, created_at) VALUES ({1 + i % 3}, "
            f"'{rng.choice(STATUSES)}', {round(rng.uniform(1, 900), 2)}, '2024-06-{1 + i % 28:02d}')"
        )
        out.append(f"UPDATE orders SET status = '{rng.choice(STATUSES)}' WHERE id = {i + 1}")
        out.append(f"UPDATE products SET stock = stock - {1 + i % 4} WHERE id = {1 + i % 3} AND stock >= {1 + i % 4}")
        out.append(
            f"UPDATE customers SET tier = '{rng.choice(TIERS)}' WHERE id IN (SELECT customer_id FROM orders "
            f"GROUP BY customer_id HAVING SUM(total) > {100 + i})"
        )
        out.append(
            f"INSERT INTO order_items (order_id, product_id, quantity, unit_price) SELECT o.id, p.id, {1 + i % 5}, "
            f"p.price FROM orders o CROSS JOIN products p WHERE o.id = {1 + i % 3} AND p.id = {1 + i % 3}"
        )
    return list(dict.fromkeys(out))


#: Calls an agent's SELECT makes, in syntax every database of the benchmarks reads (the SQL
#: standard's ``EXTRACT``, ``SUBSTRING ... FROM``, ``TRIM``, ``POSITION`` become calls of
#: ``pg_catalog`` functions in PostgreSQL's tree), each taking a column of the joined tables.
CALLS = (
    "LOWER({s})",
    "UPPER({s})",
    "LENGTH({s})",
    "TRIM({s})",
    "SUBSTRING({s} FROM 1 FOR 3)",
    "POSITION('a' IN {s})",
    "REPLACE({s}, 'a', 'b')",
    "COALESCE({s}, 'none')",
    "NULLIF({s}, '')",
    "CONCAT({s}, '-', {s2})",
    "ROUND({n}, 2)",
    "ABS({n})",
    "ROUND(AVG({n}) OVER (PARTITION BY {k}), 2)",
    "ROW_NUMBER() OVER (PARTITION BY {k} ORDER BY {n} DESC)",
    "EXTRACT(YEAR FROM {d})",
    "EXTRACT(MONTH FROM {d})",
    "CAST({n} AS INTEGER)",
    "CASE WHEN {n} > 100 THEN UPPER({s}) ELSE LOWER({s}) END",
    "ROUND(ABS({n} - COALESCE({n2}, 0)), 1)",
    "LOWER(TRIM({s}))",
)
#: Tables with their alias, a text column, a numeric column and a date column, and how each joins.
JOINABLE = (
    ("customers", "c", ("c.name", "c.city", "c.email"), ("c.id",), ("c.created_at",)),
    ("orders", "o", ("o.status",), ("o.total", "o.id"), ("o.created_at",)),
    ("order_items", "oi", (), ("oi.quantity", "oi.unit_price"), ()),
    ("products", "p", ("p.name", "p.category"), ("p.price", "p.stock"), ()),
)
JOIN_CONDITIONS = (
    "JOIN orders o ON o.customer_id = c.id",
    "JOIN order_items oi ON oi.order_id = o.id",
    "JOIN products p ON p.id = oi.product_id",
)


def call_and_join_queries(rng: random.Random, n: int) -> List[str]:
    """``n`` SELECTs with one to three joins and three to eight calls each (nested, windowed and
    written in the standard's syntax among them), filtered, grouped or ordered by a call too: the
    shape of analytical agent SQL, drawn from ``rng`` (another seed, another workload)."""
    out = []
    for _ in range(n):
        joins = rng.randint(1, 3)
        tables = JOINABLE[: joins + 1]
        texts = [col for t in tables for col in t[2]] or ["c.name"]
        numbers = [col for t in tables for col in t[3]]
        dates = [col for t in tables for col in t[4]]
        keys = [t[1] + ".id" if t[1] != "oi" else "oi.order_id" for t in tables]
        calls = []
        for _ in range(rng.randint(3, 8)):
            template = rng.choice(CALLS)
            if "{d}" in template and not dates:
                template = "LOWER({s})"
            calls.append(
                template.format(
                    s=rng.choice(texts),
                    s2=rng.choice(texts),
                    n=rng.choice(numbers),
                    n2=rng.choice(numbers),
                    d=rng.choice(dates or ["c.created_at"]),
                    k=rng.choice(keys),
                )
            )
        select = ", ".join(f"{call} AS v{i}" for i, call in enumerate(calls))
        like = f"LOWER({rng.choice(texts)}) LIKE '%{rng.choice('aeiou')}%'"
        where = f"{like} AND {rng.choice(numbers)} > {rng.randint(0, 500)}"
        order = rng.choice(("v0", "1", f"LENGTH({rng.choice(texts)}) DESC", f"ABS({rng.choice(numbers)})"))
        out.append(
            f"SELECT {select} FROM customers c {' '.join(JOIN_CONDITIONS[:joins])} WHERE {where} "
            f"ORDER BY {order} LIMIT {rng.choice((10, 20, 50, 100))}"
        )
    return out


def _dialect_queries(dialect: str) -> List[str]:
    out = []
    for expr in DATE_EXPRS[dialect]:
        for status in STATUSES:
            for agg in AGGREGATES[:4]:
                out.append(
                    f"SELECT {expr} AS period, {agg} AS value FROM orders o WHERE o.status = '{status}' "
                    f"GROUP BY 1 ORDER BY 1"
                )
    return out


def runs_on_sqlite(queries: Sequence[str]) -> List[str]:
    """The queries SQLite rejects (each run in a transaction that is rolled back)."""
    conn = sqlite3.connect(":memory:", isolation_level=None)
    for statement in SCHEMA + ROWS:
        conn.execute(statement)
    failed = []
    for query in queries:
        conn.execute("BEGIN")
        try:
            conn.execute(query).fetchall()
        except sqlite3.Error as err:
            failed.append(f"{query}  -- {err}")
        finally:
            conn.execute("ROLLBACK")
    return failed


def main(argv: Optional[Sequence[str]] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--show", type=int, default=3, help="blocked queries to print per set-up")
    args = parser.parse_args(argv)
    rng = random.Random(0)
    generic = _generic_queries(rng)
    rejected = runs_on_sqlite(generic + _dialect_queries("sqlite"))

    for line in rejected[:5]:
        print("  ", line)
    print(f"{'set-up':22} {'queries':>7} {'blocked':>7} {'median us':>9}")
    total_blocked = 0
    for dialect in (None, "postgres", "mysql", "sqlite"):
        queries = generic + (_dialect_queries(dialect) if dialect else [])
        policy = SQLPolicy(deny=["DROP", "DELETE", "TRUNCATE"], dialect=dialect, cache=False)
        blocked, times = [], []
        for query in queries:
            start = time.perf_counter_ns()
            found = policy.check_sql(query)
            times.append(time.perf_counter_ns() - start)
            if found:
                blocked.append((query, found[0].description))
        times.sort()
        total_blocked += len(blocked)
        name = f"dialect={dialect}" if dialect else "no dialect"
        print(f"{name:22} {len(queries):7d} {len(blocked):7d} {times[len(times) // 2] / 1000:9.1f}")
        for query, reason in blocked[: args.show]:
            print(f"    {query[:100]}\n      -> {reason[:200]}")
    print(f"blocked in total: {total_blocked} (target 0)")


if __name__ == "__main__":
    main()
