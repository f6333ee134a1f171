"""The `agl store` dashboard shows governance, checked in a real headless chromium.

Runs contrib/recipes/agentos/dashboard_screenshot.py end to end: agl store, a two-runner governed
Trainer run with PolicyReward, emit_to_store through a LightningStoreClient, then chromium over the
DevTools protocol on three views (a rollout's traces, the same searched by name for "violation",
the rollouts table). Skipped only outside CI when chromium is not installed; with CI=true a missing
browser is a failure (.ci/browser.sh installs Debian's chromium and exports AGENTOS_CHROMIUM).
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import pytest

# End to end (an `agl store` server, a two-runner Trainer and Chromium): minutes; `pytest -m "not e2e"` leaves it out.
pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parent.parent
RECIPES = ROOT / "contrib" / "recipes" / "agentos"


@pytest.fixture(scope="module")
def recipe():
    sys.path.insert(0, str(RECIPES))
    try:
        import dashboard_screenshot
    finally:
        sys.path.remove(str(RECIPES))
    if dashboard_screenshot.find_chromium() is None:
        message = "chromium is not installed (Debian: apt-get install -y chromium; .ci/browser.sh does it in CI)"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"CI=true and {message}")
        pytest.skip(message)
    return dashboard_screenshot


def test_dashboard_views_show_violations_penalties_and_rewards(recipe, tmp_path, capsys):
    out = tmp_path / "dashboard.png"
    assert recipe.main(["--out", str(out), "--workdir", str(tmp_path / "run")]) == 0
    printed = capsys.readouterr().out
    assert "(again: 0)" in printed
    # main() returns 0 only if blocked records on disk == audit violation spans == runner violation
    # spans, and the views read back from the rendered pages show what the lines below check.
    traces = re.search(r"^traces table names: (.*)$", printed, re.M).group(1)
    search = re.search(r"^search table names: (.*)$", printed, re.M).group(1)
    final = float(re.search(r"^final reward in the store \(find_final_reward\): (\S+)$", printed, re.M).group(1))
    # The violation row names its policy, severity and penalty; the check row its verdict and tool.
    assert "agentos.violation: SQLPolicy (critical) penalty -100.0, blocked" in traces
    # The runner stores the checks with a violation (check_spans="violations", the default); the
    # allowed ones are in the audit copy below.
    assert "agentos.check: blocked database_query" in traces and "agentos.check: allowed database_query" not in traces
    # The reward row shows the value agentlightning's find_final_reward reads from the store.
    assert f"agentos.reward: final {final!r} (base " in traces and final < -90
    # The audit copy from the FlightRecorder is in the same table.
    assert "agent_os.policy_check: blocked by SQLPolicy (critical)" in traces
    # The name search for "violation" leaves the violation rows only.
    assert (
        "agentos.violation: SQLPolicy (critical)" in search
        and "agentos.check" not in search
        and "agentos.reward" not in search
    )
    # The rollouts table has no column a runner can set to mark violations (docs/audit.md says so);
    # the attempt metadata has the summary, and the violations command lists the rollouts.
    assert "rollouts table rows show governance: False" in printed
    assert re.search(r'^attempt metadata in the rollouts API: \{.*"violations": 1.*\}$', printed, re.M)
    assert "3 of 6 rollouts had violations" in printed and printed.count("/traces?rolloutId=") >= 3
    # The rollout itself carries the mark (its metadata, in the rollouts API and the rollout's JSON drawer).
    assert re.search(
        r'^rollout metadata in the rollouts API: \{.*"blocked_actions": 1.*"violations": 1.*\}$', printed, re.M
    )
    # docs/audit.md's one-shot screenshot command works: its flags drew the table, not the placeholder.
    assert "one-shot screenshot shows the rollouts table: True" in printed
    documented = (ROOT / "docs" / "audit.md").read_text()
    command = re.search(r"```text\n(chromium --headless[^`]*)```", documented).group(1)
    assert all(flag in command.split() for flag in recipe.ONE_SHOT_FLAGS), (command, recipe.ONE_SHOT_FLAGS)
    assert "--user-data-dir=" in command and "--screenshot=" in command
    for name in ("dashboard.png", "dashboard-search.png", "dashboard-rollouts.png", "dashboard-oneshot.png"):
        png = tmp_path / name
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000, name
