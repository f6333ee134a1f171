"""The no-dialect reading's prefilters (which texts get a second reading) say what their regex
definitions say, on every corpus text and on texts built around each mark: the substring tests
in front of the regexes only save work, they never change an answer."""

from __future__ import annotations

import re
from typing import Any, List

import pytest

from agentlightning.contrib.kernel.agentos.sql import policy as sql_policy

from .sql_corpus import CORPUS

#: The definitions as regexes over the whole text (what the prefilters must agree with).
_MYSQL_MARKS = ("\\", "#", "`", "/*!", "/*M!")


def _other_readings_by_definition(query: str) -> List[Any]:
    readings: List[Any] = []
    if "/*" in query:
        readings.append(sql_policy._FlatCommentsDialect)
    if any(mark in query for mark in _MYSQL_MARKS) or re.search(r"--[^\s]", query) or "DELIMITER" in query.upper():
        readings.append("mariadb")
    if "[" in query:
        readings.append("sqlite")
    return readings


def _postgres_may_differ_by_definition(query: str) -> bool:
    return sql_policy._POSTGRES_MARKS.search(query) is not None


def _texts() -> List[str]:
    texts = [case.sql for case in CORPUS]
    for word in sql_policy._POSTGRES_WORDS:
        texts += [f"SELECT 1 {word} x", f"select 1 {word.lower()}", f"SELECT {word}S FROM t", f"SELECT x_{word}"]
    for mark in _MYSQL_MARKS + ("--x", "-- x", "-1", "/* c */", "delimiter //", "[a]", "$1", "\r\n", "E'x'", "1e'x'"):
        texts += [f"SELECT 1 {mark}", f"SELECT '{mark}'", mark]
    return texts


@pytest.mark.parametrize("query", _texts())
def test_the_prefilters_answer_as_the_definitions_do(query: str) -> None:
    upper = query.upper()
    assert sql_policy._other_readings(query, upper) == _other_readings_by_definition(query)
    assert sql_policy._postgres_may_differ(query, upper) == _postgres_may_differ_by_definition(query)
