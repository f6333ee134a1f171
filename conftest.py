"""Shared pytest set-up for the tests and the doctests in contrib/."""

import os

# litellm (imported by agentlightning) fetches a model cost map from the network unless told not to.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
