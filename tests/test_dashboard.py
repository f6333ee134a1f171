"""The `agl store` dashboard shows audit violation spans, checked in a real headless chromium.

Runs contrib/recipes/agentos/dashboard_screenshot.py end to end (agl store, a two-runner governed
Trainer run, emit_to_store through a LightningStoreClient, chromium over the DevTools protocol).
Skipped when chromium is not installed (Debian: apt-get install -y chromium)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

RECIPES = Path(__file__).resolve().parent.parent / "contrib" / "recipes" / "agentos"


@pytest.fixture(scope="module")
def recipe():
    sys.path.insert(0, str(RECIPES))
    try:
        import dashboard_screenshot
    finally:
        sys.path.remove(str(RECIPES))
    if dashboard_screenshot.find_chromium() is None:
        pytest.skip("chromium is not installed (apt-get install -y chromium)")
    return dashboard_screenshot


def test_violation_spans_are_readable_in_the_dashboard_traces_view(recipe, tmp_path, capsys):
    out = tmp_path / "dashboard.png"
    assert recipe.main(["--out", str(out), "--workdir", str(tmp_path / "run")]) == 0
    printed = capsys.readouterr().out
    assert "(again: 0)" in printed
    # main() returns 0 only if blocked records on disk == audit violation spans == runner violation spans
    assert "agent_os.policy_check: blocked by SQLPolicy (critical)" in printed  # read back from the rendered table
    assert "agentlightning.annotation" in printed  # the runner's check/violation/reward spans, same table
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and out.stat().st_size > 10_000
