"""What the figure scripts share: the generated regions of a page, checked or rewritten from results files.

A figure sits between ``<!-- figures: NAME -->`` and ``<!-- /figures -->`` and is the text a
script's ``GENERATORS[NAME]`` writes from a results file (``readme_figures.py`` for the README,
``results_gateway_figures.py`` for the 1.0 pages).

>>> page = "a\\n<!-- figures: x -->\\nold\\n<!-- /figures -->\\nb"
>>> rewrite(page, {"x": lambda root: "new"}, Path("."))
'a\\n<!-- figures: x -->\\nnew\\n<!-- /figures -->\\nb'
>>> regions(page)
{'x': 'old'}
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import Callable, Dict, Optional, Sequence

Generators = Dict[str, Callable[[Path], str]]

#: A region's text never runs past its own end marker (an empty region must not swallow the next one).
REGION = re.compile(r"<!-- figures: (\w+) -->\n(?:((?:(?!<!-- /figures -->).)*?)\n)?<!-- /figures -->", re.DOTALL)


def load_results(root: Path, path: Path) -> dict:
    """A results file, by its path from the repository's root."""
    return json.loads((root / path).read_text())


def regions(text: str) -> Dict[str, str]:
    """A page's generated regions, by name."""
    return {match.group(1): match.group(2) or "" for match in REGION.finditer(text)}


def rewrite(text: str, generators: Generators, root: Path) -> str:
    """The page with every region written anew by its generator."""
    return REGION.sub(
        lambda m: f"<!-- figures: {m.group(1)} -->\n{generators[m.group(1)](root)}\n<!-- /figures -->", text
    )


def main(
    pages: Sequence[Path], generators: Generators, root: Path, script: str, argv: Optional[Sequence[str]] = None
) -> int:
    """The figure scripts' command: rewrite the pages' regions, or with ``--check`` name those that differ (exit 1)."""
    parser = argparse.ArgumentParser(description=f"the generated figures of {', '.join(p.name for p in pages)}")
    parser.add_argument("--check", action="store_true", help="only report the figures that differ (exit 1)")
    args = parser.parse_args(argv)
    status = 0
    for page in pages:
        text = page.read_text(encoding="utf-8")
        new = rewrite(text, generators, root)
        if args.check:
            for name, quoted in regions(text).items():
                if quoted != regions(new)[name]:
                    print(f"{page.name}: the figures {name!r} differ from their results file; run python {script}")
                    status = 1
        elif new != text:
            page.write_text(new, encoding="utf-8")
            print(f"{page.name}: figures rewritten from the results files")
    return status
