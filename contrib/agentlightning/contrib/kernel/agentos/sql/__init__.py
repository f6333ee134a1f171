"""The SQL guard: what a text of SQL does, decided on parsed statements, default deny.

* :mod:`.effects` -- the closed set of effects (one row each, ``unknown`` among them), and what
  an analysis is;
* :mod:`.rules` -- for each row, the predicate each reader uses (sqlglot node, command word,
  PostgreSQL parse-tree node);
* :mod:`.functions` -- the built-ins known to have no side effects, per dialect;
* :mod:`.generic` -- the sqlglot reader; :mod:`.postgres` -- PostgreSQL's own parser;
* :mod:`.schema` -- the schema-aware mode (``SQLPolicy(database=...)``: what a statement sets off in
  the database, its triggers, rules, cascades and routine bodies), read by :mod:`.schema_sqlite`,
  :mod:`.schema_postgres` and :mod:`.schema_mariadb`;
* :mod:`.bounded` -- reading in bounded time (:class:`ReadingBudget`: counted limits before
  parsing, long texts read in a worker process killed at the deadline);
* :mod:`.policy` -- :class:`SQLPolicy` and :func:`analyze_sql`;
* :mod:`.envelope` -- :class:`SQLEnvelope`, a governed executor whose second line is the database
  (read-only transactions for reads; SQLite's authorizer, PostgreSQL's transaction statistics and
  MariaDB's row counters for writes).
"""

from .bounded import ReadingBudget
from .effects import EFFECTS, SQL_KEYWORDS, SQLAnalysis, SQLStatement, Unknown, effects_table
from .envelope import SQLEnvelope, SQLEnvelopeResult, SQLRefused
from .policy import DEFAULT_SQL_TOOLS, SQL_ARG_NAMES, SQLPolicy, analyze_sql

__all__ = [
    "SQLPolicy",
    "ReadingBudget",
    "SQLEnvelope",
    "SQLEnvelopeResult",
    "SQLRefused",
    "SQLAnalysis",
    "SQLStatement",
    "Unknown",
    "analyze_sql",
    "SQL_KEYWORDS",
    "DEFAULT_SQL_TOOLS",
    "SQL_ARG_NAMES",
    "EFFECTS",
    "effects_table",
]
