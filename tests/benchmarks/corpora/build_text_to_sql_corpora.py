"""Build the Spider and BIRD gold-query corpora from their public sources.

The SQL guard must not block the queries text-to-SQL benchmarks take as correct answers. Those
queries are not the project's, so this script builds the corpus files from pinned public copies
and writes where each came from (repository, commit, path, git blob id, licence) at the top of
each file:

* **Spider** (Yu et al., EMNLP 2018; CC BY-SA 4.0): the dev set's queries from ``dev.json`` and the
  ``train_gold.sql`` and ``test_gold.sql`` gold files (train = ``train_spider`` + ``train_others``).
* **BIRD** (Li et al., NeurIPS 2023; CC BY-SA 4.0): the dev set's ``dev_gold.sql``.

Each source file is read at its pinned commit, either from a local git directory (``--spider-git``,
``--bird-git``: a clone, or a mirror) or, without one, downloaded from
``raw.githubusercontent.com`` at that commit; its git blob id must be the pinned one, so what is
built is what was reviewed. A corpus file holds one query a line, each distinct text once (first
seen first), trailing white space removed::

    python tests/benchmarks/corpora/build_text_to_sql_corpora.py \\
        --spider-git /path/to/spider_evaluation/.git --bird-git /path/to/DAMO-ConvAI/.git

``tests/benchmarks/bench_spider_bird.py`` judges the files; ``tests/test_sql_spider_bird.py``
asserts 0 blocked with ``dialect="sqlite"``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, List, Optional, Sequence, Tuple

HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Source:
    """One pinned public file and how its queries are read out of it."""

    repo: str
    commit: str
    path: str
    blob: str  # git's blob id of the file at that commit: what was reviewed
    read: Callable[[str], List[str]]


@dataclass(frozen=True)
class Corpus:
    file: str
    title: str
    licence: str
    attribution: str
    sources: Tuple[Source, ...]


def _json_queries(text: str) -> List[str]:
    """Spider's ``dev.json``: a list of examples, each with its gold ``query``."""
    return [example["query"] for example in json.loads(text)]


def _tab_separated_queries(text: str) -> List[str]:
    """A gold file: ``<query>\\t<db_id>`` a line (Spider, BIRD)."""
    queries = []
    for line in text.splitlines():
        query, tab, _db = line.rpartition("\t")
        if tab and query.strip():
            queries.append(query)
    return queries


SPIDER_REPO = "xi-ix/spider_evaluation"
SPIDER_COMMIT = "80a9084cbae519a5da33e08abcf8e259d31072b3"
BIRD_REPO = "AlibabaResearch/DAMO-ConvAI"
BIRD_COMMIT = "03898f5f9fed0d232afea3a05a42a830bfe0e8e9"

CORPORA: Tuple[Corpus, ...] = (
    Corpus(
        file="spider_gold.sql",
        title="Spider gold SQL queries (dev, train, test)",
        licence="CC BY-SA 4.0 (https://creativecommons.org/licenses/by-sa/4.0/), as Spider is published",
        attribution=(
            "Tao Yu et al., Spider: A Large-Scale Human-Labeled Dataset for Complex and Cross-Domain Semantic "
            "Parsing and Text-to-SQL Task, EMNLP 2018 (https://yale-lily.github.io/spider)"
        ),
        sources=(
            Source(
                SPIDER_REPO,
                SPIDER_COMMIT,
                "database/dev.json",
                "4e0338a32452185fa79fdf38a1f273d86d36fbdf",
                _json_queries,
            ),
            Source(
                SPIDER_REPO,
                SPIDER_COMMIT,
                "database/train_gold.sql",
                "e62743e1ac8dd96506cc59fd8a9dad5116c809ff",
                _tab_separated_queries,
            ),
            Source(
                SPIDER_REPO,
                SPIDER_COMMIT,
                "database/test_gold.sql",
                "50cb737a3c8d6e62ba5e172e5b7a18abf27eb6cc",
                _tab_separated_queries,
            ),
        ),
    ),
    Corpus(
        file="bird_dev_gold.sql",
        title="BIRD dev gold SQL queries",
        licence=(
            "CC BY-SA 4.0 (https://creativecommons.org/licenses/by-sa/4.0/), as the BIRD README in "
            f"{BIRD_REPO} states it now (it said CC BY-NC 4.0 at the commit the file is read from)"
        ),
        attribution=(
            "Jinyang Li et al., Can LLM Already Serve as A Database Interface? A BIg Bench for Large-Scale "
            "Database Grounded Text-to-SQLs, NeurIPS 2023 (https://bird-bench.github.io/)"
        ),
        sources=(
            Source(
                BIRD_REPO,
                BIRD_COMMIT,
                "bird/llm/data/dev_gold.sql",
                "348a2b5398de0e2a8ba7cb176398af86778923a5",
                _tab_separated_queries,
            ),
        ),
    ),
)


def git_blob_id(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def _from_git(git_dir: Path, source: Source) -> bytes:
    return subprocess.run(
        ["git", "--git-dir", str(git_dir), "show", f"{source.commit}:{source.path}"],
        check=True,
        capture_output=True,
    ).stdout


def _from_github(source: Source) -> bytes:
    url = f"https://raw.githubusercontent.com/{source.repo}/{source.commit}/{source.path}"
    with urllib.request.urlopen(url, timeout=60) as response:  # noqa: S310 (a fixed https URL)
        return response.read()


def read_source(source: Source, git_dir: Optional[Path]) -> str:
    """The pinned file's text, refused unless its blob id is the pinned one."""
    data = _from_git(git_dir, source) if git_dir is not None else _from_github(source)
    found = git_blob_id(data)
    if found != source.blob:
        raise SystemExit(
            f"{source.repo}@{source.commit[:12]}:{source.path} has blob {found}, not the pinned {source.blob}: "
            "the source changed; review it and pin the new blob id"
        )
    return data.decode("utf-8")


def distinct(queries: Iterable[str]) -> List[str]:
    seen: dict = {}
    for query in queries:
        text = query.strip()
        if text and "\n" not in text:
            seen.setdefault(text, None)
    return list(seen)


def render(corpus: Corpus, queries: Sequence[str]) -> str:
    header = [
        f"-- {corpus.title}: {len(queries):,} distinct queries, one a line.",
        f"-- Built by tests/benchmarks/corpora/{Path(__file__).name} from:",
    ]
    header += [f"--   https://github.com/{s.repo} commit {s.commit} {s.path} (blob {s.blob})" for s in corpus.sources]
    header += [f"-- Licence: {corpus.licence}.", f"-- Attribution: {corpus.attribution}."]
    return "\n".join(header + list(queries)) + "\n"


def read_corpus(path: Path) -> List[str]:
    """The queries of a built corpus file (its ``--`` header lines left out)."""
    return [line for line in path.read_text(encoding="utf-8").splitlines() if line and not line.startswith("-- ")]


def main(argv: Optional[Sequence[str]] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--spider-git", type=Path, help=f"a git directory holding {SPIDER_REPO}'s commit")
    parser.add_argument("--bird-git", type=Path, help=f"a git directory holding {BIRD_REPO}'s commit")
    parser.add_argument("--out", type=Path, default=HERE, help="where to write the corpus files (default: here)")
    args = parser.parse_args(argv)
    git_dirs = {SPIDER_REPO: args.spider_git, BIRD_REPO: args.bird_git}
    for corpus in CORPORA:
        queries = distinct(q for s in corpus.sources for q in s.read(read_source(s, git_dirs[s.repo])))
        target = args.out / corpus.file
        target.write_text(render(corpus, queries), encoding="utf-8")
        print(f"{target}: {len(queries):,} distinct queries", file=sys.stderr)


if __name__ == "__main__":
    main()
