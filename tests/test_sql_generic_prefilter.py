"""The generic reader's keyword prefilters may search a statement's source text instead of its tokens.

``generic._Reader.statements`` passes each statement the upper case of the source text its tokens
span, and the prefilters (MariaDB-only syntax, ``REPLACE``) rule a word out with one substring test
on it. That is sound when every word of every token that is not data (``generic._word``) is in that
text: the argument is in ``generic._upper_words``. Here it is checked on every statement the reader
reads for the corpus, the realistic text-to-SQL queries (alone and as scripts) and generated
adversarial scripts, in the dialects the reader is used with, and the decision it feeds (the words
found) is compared with the tokens' own words.
"""

from __future__ import annotations

from typing import Iterable, List, Optional, Tuple

import pytest
from hypothesis import given

from agentlightning.contrib.kernel.agentos.sql import generic

from .sql_corpus import CORPUS
from .test_adversarial_sql import PROPERTY_SETTINGS, safe_script, script_with_denied_statements
from .test_sql_generic_walk import _read_watching, _realistic

DIALECTS = (None, "mysql", "mariadb", "sqlite", "tsql", "bigquery", "snowflake", "duckdb")
#: The words the prefilters search for.
SEARCHED = sorted(generic._MARIADB_ONLY | {"REPLACE"})


def _statements(texts: Iterable[str], dialects=DIALECTS) -> List[Tuple[list, str]]:
    """Every (tokens, upper source) the reader's ``statement`` is given with a source, for ``texts``."""
    seen: List[Tuple[list, str]] = []

    def record(tokens, upper: Optional[str] = None) -> None:
        if upper is not None:
            seen.append((list(tokens), upper))

    _read_watching("statement", record, texts, dialects)
    return seen


def _check(tokens: list, upper: str) -> int:
    """Assert the prefilter's claim on one statement; the number of words checked."""
    checked = 0
    for token in tokens:
        for part in generic._word(token).split():
            assert part in upper, (part, token, upper)
            checked += 1
    joined = generic._upper_words(tokens)
    for word in SEARCHED:  # what the prefilter decides: never less than the tokens' join finds
        if any(generic._word(t) == word for t in tokens):
            assert word in upper and word in joined, (word, upper)
    return checked


@pytest.mark.parametrize("source", ["corpus", "realistic"])
def test_every_word_of_a_statement_is_in_its_source(source):
    texts = [c.sql for c in CORPUS if len(c.sql) < 20_000] if source == "corpus" else _realistic(200)
    statements = _statements(texts)
    words = sum(_check(tokens, upper) for tokens, upper in statements)
    assert len(statements) > 1_000 and words > 10_000, (len(statements), words)  # the check saw real text


def test_the_searched_words_are_found_in_the_corpus():
    """The corpus has statements the prefilters must let through (so the check above is not vacuous)."""
    statements = _statements([c.sql for c in CORPUS if len(c.sql) < 20_000], (None, "mysql", "mariadb", "sqlite"))
    found = {w for tokens, _ in statements for t in tokens for w in SEARCHED if generic._word(t) == w}
    assert {"REPLACE", "NEXT"} <= found, found


def test_keywords_of_several_words_and_odd_spacing():
    texts = [
        "LOCK\n\t TABLES t WRITE",
        "SELECT a FROM t ORDER \n  BY a",
        "SELECT NEXT  VALUE\n FOR s",
        "select next value for s; insert or replace into t values (1)",
        "SELECT 1L, 2S, 3Y, 4D FROM t",
        "SELECT 'ß', straße FROM t WHERE x = 'ﬁ' /* REPLACE */",
        "CREATE TABLE t (a INT UNIQUE ON CONFLICT\nREPLACE)",
    ]
    statements = _statements(texts)
    assert statements
    for tokens, upper in statements:
        _check(tokens, upper)


@PROPERTY_SETTINGS
@given(sql=script_with_denied_statements())
def test_generated_scripts_with_denied_statements(sql):
    for tokens, upper in _statements([sql], (None, "mysql", "mariadb", "sqlite")):
        _check(tokens, upper)


@PROPERTY_SETTINGS
@given(sql=safe_script())
def test_generated_safe_scripts(sql):
    for tokens, upper in _statements([sql], (None, "mysql", "mariadb", "sqlite")):
        _check(tokens, upper)


def _split_by_types(tokens: list) -> List[list]:
    """The split by reading every token's type (what ``generic._split_statements`` gives)."""
    statements: List[list] = []
    types = [t.token_type for t in tokens]
    semicolon, start, end = generic.TokenType.SEMICOLON, 0, len(tokens)
    while start < end:
        if types[start] is not semicolon and generic._starts_compound(tokens[start]):
            statements.extend(generic._split_compound(tokens[start:]))
            break
        stop = types.index(semicolon, start) if semicolon in types[start:] else end
        if stop > start:
            statements.append(list(tokens[start:stop]))
        start = stop + 1
    return statements


def _check_split(texts: Iterable[str], dialects=DIALECTS) -> int:
    split = 0
    for text in texts:
        for dialect in dialects:
            prepared = generic.prepare_mysql_text(text) if dialect in generic.MYSQL_FAMILY else text
            try:
                tokens = generic._dialect_and_parser("mysql" if dialect == "mariadb" else dialect)[2].tokenize(prepared)
            except Exception:  # noqa: BLE001 - text this dialect cannot tokenize: the reader reports it
                continue
            found = generic._split_statements(tokens, prepared)
            assert [[id(t) for t in s] for s in found] == [[id(t) for t in s] for s in _split_by_types(tokens)], text
            split += len(found)
    return split


def test_semicolons_found_from_the_text_split_as_the_token_types_do():
    """``_split_statements`` finds semicolon tokens from the ``;`` of the text (a semicolon token
    starts at one); a ``;`` in a string, a quoted name or a comment is no semicolon token."""
    corpus = [c.sql for c in CORPUS if len(c.sql) < 20_000]
    odd = [
        "SELECT ';' ; SELECT `a;b` FROM t; -- ; x\nSELECT 1 /* ; */ ;; ;",
        "SELECT 1;",
        ";",
        "a;;b",
        "SELECT $$;$$; DROP t",
    ]
    assert _check_split(corpus + _realistic(200) + odd) > 5_000


@PROPERTY_SETTINGS
@given(sql=script_with_denied_statements())
def test_semicolons_of_generated_scripts(sql):
    _check_split([sql], (None, "mysql", "mariadb", "sqlite"))
