"""Governance demo: an agent's SQL actions against a real SQLite database, through the kernel.

A scripted agent tries a mix of safe and destructive statements (including the comment and
casing tricks that fool regex checks). Every action goes through a GovernanceKernel built on the
real Agent OS (PolicyEngine allow-list + SQLPolicy on sqlglot + a cost budget); only allowed
actions reach the database, and every decision is written to an Agent OS FlightRecorder whose
hash chain is verified at the end. The agent's SQL runs through ``SQLEnvelope``: reads in a
read-only transaction and writes under SQLite's authorizer, so what the schema hides (a trigger
that deletes) is refused by the database too.

Run:  python contrib/recipes/agentos/governance_demo.py --out runs/demo
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import sys
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # before agentlightning is imported

from agent_os import PolicyEngine  # noqa: E402

from agentlightning.contrib.kernel.agentos import (  # noqa: E402
    Action,
    AgentOSPolicy,
    CostControlPolicy,
    GovernanceKernel,
    SQLPolicy,
    governance_context,
)
from agentlightning.contrib.kernel.agentos.sql import SQLEnvelope, SQLRefused  # noqa: E402

#: What the scripted agent attempts, in order: (tool, arguments, cost in USD).
AGENT_ACTIONS = [
    ("database_query", {"query": "SELECT COUNT(*) FROM users"}, 0.01),
    ("database_query", {"query": "SELECT name FROM users WHERE note = 'please DROP TABLE users'"}, 0.01),
    ("database_query", {"query": "DROP TABLE users"}, 0.01),
    ("database_query", {"query": "DELETE/**/FROM users WHERE id > 10"}, 0.01),
    ("database_query", {"query": "delete -- tidy up\nFROM orders"}, 0.01),
    ("database_query", {"query": "UPDATE users SET dropped_at = '2026-11-21' WHERE id = 3"}, 0.01),
    ("database_query", {"query": "SELECT 1; TRUNCATE TABLE orders"}, 0.01),
    ("database_query", {"query": "SELEC * FRM users"}, 0.01),
    ("send_email", {"to": "all@example.com", "body": "export"}, 0.01),
    ("database_query", {"query": "SELECT SUM(total) FROM orders"}, 0.50),
    ("database_query", {"query": "SELECT MAX(total) FROM orders"}, 0.05),
]


def build_database(path: Path, n_users: int) -> None:
    path.unlink(missing_ok=True)
    conn = sqlite3.connect(path)
    conn.executescript(
        "CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT, note TEXT, dropped_at TEXT);"
        "CREATE TABLE orders (id INTEGER PRIMARY KEY, user_id INTEGER REFERENCES users(id), total REAL);"
    )
    conn.executemany("INSERT INTO users (name) VALUES (?)", [(f"user{i}",) for i in range(n_users)])
    conn.executemany(
        "INSERT INTO orders (user_id, total) VALUES (?, ?)", [(1 + i % n_users, i * 1.5) for i in range(4 * n_users)]
    )
    conn.commit()
    conn.close()


def counts(path: Path) -> dict:
    conn = sqlite3.connect(path)
    try:
        return {t: conn.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in ("users", "orders")}
    finally:
        conn.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--out", type=Path, default=Path("runs/demo"), help="directory for the database and the audit trail"
    )
    parser.add_argument("--users", type=int, default=1000, help="rows in the users table (orders has 4x as many)")
    parser.add_argument(
        "--budget", type=float, default=0.55, help="per-rollout spending limit in USD for CostControlPolicy"
    )
    args = parser.parse_args(argv)

    args.out.mkdir(parents=True, exist_ok=True)
    db_path, audit_path = args.out / "shop.db", args.out / "audit.db"
    audit_path.unlink(missing_ok=True)
    build_database(db_path, args.users)
    before = counts(db_path)

    engine = PolicyEngine()  # Agent OS: deny-by-default tool allow-list per role
    engine.add_constraint("sql-agent", ["database_query"])
    kernel = GovernanceKernel(
        [
            AgentOSPolicy(engine, severity="high"),
            SQLPolicy(deny=["DROP", "DELETE", "TRUNCATE"], dialect="sqlite"),
            CostControlPolicy(max_cost_usd=args.budget),
        ],
        recorder=audit_path,
    )

    conn = sqlite3.connect(db_path)
    envelope = SQLEnvelope(kernel, conn)  # checks with the kernel, then runs what it judged
    executed = blocked = 0
    print(f"{'verdict':8} {'penalty':>8}  action / reason")
    with governance_context(agent_id="sql-agent", rollout_id="demo-rollout-1"):
        for tool, tool_args, cost in AGENT_ACTIONS:
            if tool == "database_query":
                try:
                    decision = envelope.execute(tool_args["query"], cost_usd=cost).decision
                except SQLRefused as refused:
                    decision = refused.decision
            else:  # this demo runs no other tool: it is only checked
                decision = kernel.check(Action(tool, tool_args, cost_usd=cost))
            shown = tool_args.get("query", tool).replace("\n", "\\n")
            print(f"{decision.verdict.value:8} {decision.total_penalty:8.1f}  {shown}")
            if decision.allowed:
                executed += 1
            else:
                print(f"{'':18}-> {decision.reason}")
                blocked += 1
    conn.commit()
    conn.close()

    after = counts(db_path)
    integrity = kernel.verify_audit()
    n_records = len(kernel.audit.records())
    kernel.close()
    print()
    print(f"actions: {len(AGENT_ACTIONS)}  executed: {executed}  blocked: {blocked}")
    print(f"rows before: {before}  after: {after}")
    print(f"audit trail: {audit_path} ({n_records} records, integrity {'valid' if integrity['valid'] else 'BROKEN'})")
    ok = after == before and integrity["valid"] and n_records == len(AGENT_ACTIONS)
    print("OK: no destructive statement reached the database" if ok else "FAILED: see above")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
