"""The generic reader's walk leaves out the leaves and nothing else.

``generic._walk`` visits a parsed tree's nodes in the order of sqlglot's own ``walk`` but skips the
classes in ``generic._LEAVES`` (identifiers and literals), on the argument that such a node never
holds another node. Here that argument is checked on every tree the reader walks, and on every tree
sqlglot parses, for the corpus, the realistic text-to-SQL queries (alone and as scripts), and
generated adversarial scripts: no leaf holds a node, the leaves' role is inert, and the walk meets
every other node, in sqlglot's order.
"""

from __future__ import annotations

import gc
import random
import sys
from pathlib import Path
from typing import Callable, Iterable, List, Optional, Tuple

import pytest
import sqlglot
from hypothesis import given
from sqlglot import exp
from sqlglot.errors import SqlglotError

from agentlightning.contrib.kernel.agentos.sql import generic

from .sql_corpus import CORPUS
from .test_adversarial_sql import PROPERTY_SETTINGS, safe_script, script_with_denied_statements

sys.path.insert(0, str(Path(__file__).resolve().parent / "benchmarks"))

from bench_text_to_sql import _generic_queries  # noqa: E402

DIALECTS = (None, "mysql", "mariadb", "sqlite", "tsql", "postgres", "bigquery", "snowflake")


def _holds_a_node(node: exp.Expression) -> bool:
    return any(
        isinstance(value, exp.Expr) or (type(value) is list and any(isinstance(x, exp.Expr) for x in value))
        for value in node.args.values()
    )


def _check_tree(root: exp.Expression) -> int:
    """Assert the walk's claims on one tree; the number of leaves it skipped."""
    full = list(root.walk())
    leaves = [node for node in full if type(node) in generic._LEAVES]
    for leaf in leaves:
        assert not _holds_a_node(leaf), (type(leaf).__name__, leaf.args, root.sql())
    expected = [id(node) for node in full if type(node) not in generic._LEAVES]
    assert [id(node) for node in generic._walk(root)] == expected, root.sql()
    return len(leaves)


def _read_watching(method: str, seen: Callable[..., None], texts: Iterable[str], dialects) -> None:
    """Read every text of ``texts`` in every dialect of ``dialects`` with the generic reader, every
    call of its ``_Reader`` method ``method`` first showing its arguments to ``seen``."""
    original = getattr(generic._Reader, method)

    def watched(self, *args):
        seen(*args)
        return original(self, *args)

    setattr(generic._Reader, method, watched)
    try:
        for text in texts:
            for dialect in dialects:
                generic.read_generic(text, dialect)
    finally:
        setattr(generic._Reader, method, original)


def _check_trees(texts: Iterable[str], dialects=DIALECTS) -> Tuple[int, int]:
    """Check every tree the generic reader walks for ``texts`` in ``dialects`` (bodies, rewrites and
    inner statements included; each before the reader walks it and empties it, see
    ``generic._release``), and every statement sqlglot parses from them: (trees, leaves skipped)."""
    counts = [0, 0]

    def check(root: exp.Expression, *_kinds) -> None:
        counts[0] += 1
        counts[1] += _check_tree(root)

    texts = list(texts)
    _read_watching("_tree", check, texts, dialects)
    for text in texts:
        for dialect in dialects:
            try:
                parsed = [t for t in sqlglot.parse(text, read=dialect) if t is not None]
            except (SqlglotError, RecursionError, ValueError):
                parsed = []
            for tree in parsed:
                check(tree)
    return counts[0], counts[1]


def test_leaves_are_inert_to_the_walk():
    for leaf in generic._LEAVES:
        assert generic._role_of(leaf) == generic._INERT, leaf


def _realistic(n: Optional[int] = None) -> List[str]:
    queries = _generic_queries(random.Random(0))
    scripts = [";\n".join(queries[i : i + 12]) for i in range(0, 120, 12)]
    return queries[:n] + scripts


@pytest.mark.parametrize("source", ["corpus", "realistic"])
def test_the_walk_skips_only_leaves_that_hold_no_node(source):
    texts = [c.sql for c in CORPUS if len(c.sql) < 20_000] if source == "corpus" else _realistic(200)
    trees, skipped = _check_trees(texts)
    assert trees > 1_000 and skipped > 1_000, (trees, skipped)  # the check saw real trees


@PROPERTY_SETTINGS
@given(sql=script_with_denied_statements())
def test_the_walk_on_generated_scripts_with_denied_statements(sql):
    _check_trees([sql], (None, "mysql", "sqlite"))


@PROPERTY_SETTINGS
@given(sql=safe_script())
def test_the_walk_on_generated_safe_scripts(sql):
    _check_trees([sql], (None, "mysql", "sqlite"))


def test_a_leaf_built_around_a_node_is_visited_with_what_it_holds():
    """The skip is not taken on trust: an identifier or literal whose text slot (``this``) holds
    a node (as no sqlglot parser builds today) is walked like any other node."""
    call = exp.Anonymous(this="lo_unlink", expressions=[exp.Literal.number(1)])
    odd_literal = exp.Literal(this=call, is_string=False)
    odd_identifier = exp.Identifier(this=exp.Anonymous(this="pg_sleep"), quoted=False)
    tree = exp.Select(expressions=[odd_literal, exp.column("a"), odd_identifier])
    walked = generic._walk(tree)
    assert any(node is odd_literal for node in walked) and any(node is call for node in walked)
    assert any(node is odd_identifier for node in walked)
    assert any(isinstance(node, exp.Anonymous) and node.name == "pg_sleep" for node in walked)
    assert not any(type(node) is exp.Identifier and node.name == "a" for node in walked)  # a plain leaf


def _cyclic_garbage_after_reading(text: str) -> int:
    generic.read_generic(text)  # warm: classes' roles and rules looked up, parsers built
    gc.collect()
    gc.disable()
    try:
        generic.read_generic(text)
        return gc.collect()
    finally:
        gc.enable()


def test_reading_leaves_no_cyclic_garbage(monkeypatch):
    """Every walked tree is emptied after its walk (``generic._release``), so reading a script
    leaves nothing for the cycle collector; without that, every statement's tree is left to it."""
    script = ";\n".join(_generic_queries(random.Random(0))[:30])
    assert _cyclic_garbage_after_reading(script) == 0
    monkeypatch.setattr(generic, "_release", lambda nodes: None)
    assert _cyclic_garbage_after_reading(script) > 30 * 20  # the check can fail: ~50 nodes a statement


def test_a_tree_is_emptied_only_after_its_walk():
    """The release runs last: every node is looked up before any node's args are emptied."""
    seen = []
    original = generic._release

    def recording(nodes):
        seen.append([type(n) for n in nodes])
        assert all(n.args or type(n) in (exp.Star,) for n in nodes if type(n) is not exp.Null)
        original(nodes)

    generic._release = recording  # type: ignore[assignment]
    try:
        analysis = generic.read_generic("SELECT lo_unlink(1) FROM t WHERE a = 1; DELETE FROM u")
    finally:
        generic._release = original  # type: ignore[assignment]
    assert [u.name for u in analysis.unknown] == ["lo_unlink"] and "DELETE" in analysis.kinds
    assert len(seen) == 2 and exp.Anonymous in seen[0] and exp.Delete in seen[1]


def _parsed_reprs(texts: Iterable[str]) -> List[str]:
    out = []
    for text in texts:
        for dialect in DIALECTS:
            try:
                out.append(repr(sqlglot.parse(text, read=dialect)))
            except (SqlglotError, RecursionError, ValueError) as err:
                out.append(type(err).__name__)
    return out


def test_emptying_read_trees_never_changes_what_sqlglot_parses_afterwards():
    """The release empties nodes the reader's own parse built. Were any of them shared (a
    constant node a parser reuses between parses), emptying it would change every later parse in
    the process, the user's own sqlglot calls included. Every text parses the same after the
    reader has read (and emptied the trees of) all of them as before."""
    texts = [c.sql for c in CORPUS if len(c.sql) < 20_000] + _realistic(200)
    before = _parsed_reprs(texts)
    for text in texts:
        for dialect in DIALECTS:
            generic.read_generic(text, dialect)
    assert _parsed_reprs(texts) == before
