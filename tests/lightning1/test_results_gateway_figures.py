"""The measured figures of docs/results_gateway.md and docs/agentlightning-1.0.md are generated from their results
files (docs/results_gateway_figures.py), so they cannot drift from them."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def load_figures():
    spec = importlib.util.spec_from_file_location(
        "results_gateway_figures", ROOT / "docs" / "results_gateway_figures.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_quoted_figure_is_what_its_results_file_gives():
    figures = load_figures()
    quoted = {doc.name: figures.regions(doc.read_text(encoding="utf-8")) for doc in figures.DOCS}
    assert set(quoted["results_gateway.md"]) == {"gateway_demo", "gateway_quick", "streaming"}
    assert set(quoted["agentlightning-1.0.md"]) == {"streaming"}
    for doc, regions in quoted.items():
        for name, text in regions.items():
            assert text == figures.GENERATORS[name](ROOT), (
                f"{doc}: figures {name!r}: run docs/results_gateway_figures.py"
            )
