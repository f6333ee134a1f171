"""Shared pytest set-up for the tests and the doctests in contrib/."""

import os

# litellm (imported by agentlightning) fetches a model cost map from the network unless told not to.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("AGENTOPS_LOGGING_TO_FILE", "False")
os.environ.setdefault("AGENTOPS_LOG_LEVEL", "ERROR")
# Nothing comes from a model hub in the tests. train_sql_gateway.py sets the same at import, so
# collecting the recipes' doctests leaves the environment as it is.
os.environ["HF_HUB_OFFLINE"] = "1"

# The property tests' size (tests/test_adversarial_sql.py): the "full" profile (200 generated
# scripts per property) in every run unless told otherwise, so plain `pytest` and .ci/run check
# all of them; the "quick" one (25 each, the same derandomized start) for the day-to-day run,
# chosen with hypothesis's own option: `pytest -m "not e2e" --hypothesis-profile=quick`.
# The Agent Lightning 1.0 environment has no hypothesis (it runs no property test).
try:
    from hypothesis import settings as _hypothesis_settings
except ImportError:  # pragma: no cover - the 1.0 environment
    _hypothesis_settings = None
if _hypothesis_settings is not None:
    _hypothesis_settings.register_profile("full", max_examples=200)
    _hypothesis_settings.register_profile("quick", max_examples=25)
    _hypothesis_settings.load_profile("full")

# One environment holds one Agent Lightning line (both are the distribution `agentlightning`).
# The 1.0 gateway room and tests/lightning1 need 1.0 (Python >= 3.12); the 0.3 rooms, their tests
# and the 0.3 modules of the kernel need 0.3. What this environment cannot import is left out of
# collection and named in the report header; .ci/run runs each line in its own environment.
from importlib import metadata  # noqa: E402


def _agentlightning_version():
    try:
        return metadata.version("agentlightning")
    except metadata.PackageNotFoundError:
        return None


AGENTLIGHTNING_VERSION = _agentlightning_version()
LIGHTNING_1 = AGENTLIGHTNING_VERSION is not None and AGENTLIGHTNING_VERSION.split(".")[0] == "1"
_KERNEL = "contrib/agentlightning/contrib/kernel/agentos"
if LIGHTNING_1:
    collect_ignore = [
        "contrib/agentlightning/contrib/runner",
        "contrib/agentlightning/contrib/reward",
        "contrib/agentlightning/contrib/env",
        "contrib/agentlightning/contrib/adapter",
        f"{_KERNEL}/agl03",
        # The recipes drive agentlightning 0.3's Trainer (the gateway recipe starts its 1.0 gateway
        # as a separate process); their doctests run in the 0.3 environment.
        "contrib/recipes/agentos",
    ]
    _OTHER_LINE = "agentlightning 0.3 (the Python 3.11 environment of .ci/run)"
else:
    collect_ignore = [
        "contrib/agentlightning/contrib/gateway",
        "tests/lightning1",
        # The recipe that reads the 1.0 gateway's hooks (the 1.0 process of train_sql_gateway.py).
        "contrib/recipes/agentos/gateway_collect.py",
    ]
    _OTHER_LINE = "agentlightning 1.0 (the Python 3.12 environment of .ci/run)"


def pytest_report_header(config):
    return f"agentlightning {AGENTLIGHTNING_VERSION}: not collected here, they need {_OTHER_LINE}: " + ", ".join(
        collect_ignore
    )
