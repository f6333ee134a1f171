"""Under Agent Lightning 1.0, the kernel's 0.3 sub-room says what it needs instead of a bare
"No module named 'agentlightning.store'"."""

from __future__ import annotations

import importlib

import pytest


@pytest.mark.parametrize("module", ["agl03", "agl03.stats", "agl03.spans", "agl03.reward_span"])
def test_the_03_sub_room_names_the_line_it_needs_and_how_to_install_it(module):
    with pytest.raises(ImportError, match=r"needs Agent Lightning 0\.3 .*pip install '\.\[agl03\]'"):
        importlib.import_module(f"agentlightning.contrib.kernel.agentos.{module}")


def test_the_kernel_core_still_imports_under_10():
    core = importlib.import_module("agentlightning.contrib.kernel.agentos")
    assert core.GovernanceKernel and core.RewardConfig
