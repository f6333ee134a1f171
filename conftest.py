"""Shared pytest set-up for the tests and the doctests in contrib/."""

import os

# litellm (imported by agentlightning) fetches a model cost map from the network unless told not to.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("AGENTOPS_LOGGING_TO_FILE", "False")
os.environ.setdefault("AGENTOPS_LOG_LEVEL", "ERROR")
