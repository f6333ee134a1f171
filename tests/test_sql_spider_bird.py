"""The gold queries of Spider and BIRD dev pass the SQL guard with ``dialect="sqlite"``.

The corpora (``tests/benchmarks/corpora/*.sql``) are built from their public sources by
``tests/benchmarks/corpora/build_text_to_sql_corpora.py``, which records where each came from;
``tests/benchmarks/bench_spider_bird.py`` gives the figures for every dialect setting, with each
blocked text and its reason. Every query is judged first-seen (``cache=False``), all of them: about
8,000 texts, some seconds.
"""

from __future__ import annotations

from pathlib import Path
from typing import List

import pytest

from agentlightning.contrib.kernel.agentos import SQLPolicy

CORPORA = Path(__file__).resolve().parent / "benchmarks" / "corpora"
BUILD = "python tests/benchmarks/corpora/build_text_to_sql_corpora.py (its --help says from where)"


def gold_queries(name: str) -> List[str]:
    path = CORPORA / name
    if not path.is_file():
        pytest.skip(f"{path} is not built: {BUILD}")
    return [line for line in path.read_text(encoding="utf-8").splitlines() if line and not line.startswith("-- ")]


@pytest.mark.parametrize("corpus, at_least", [("spider_gold.sql", 6000), ("bird_dev_gold.sql", 1500)])
def test_no_gold_query_is_blocked_with_dialect_sqlite(corpus, at_least):
    queries = gold_queries(corpus)
    assert len(queries) >= at_least, f"{corpus} holds {len(queries)} queries: rebuild it ({BUILD})"
    policy = SQLPolicy(deny=["DROP", "DELETE", "TRUNCATE"], dialect="sqlite", cache=False)
    blocked = {q: found[0].description for q in queries if (found := policy.check_sql(q))}
    assert not blocked, f"{len(blocked)} gold queries blocked, e.g. {next(iter(blocked.items()))}"
