"""``python -m agentlightning.contrib.runner.agentos violations --store-url URL``: the rollouts of an
``agl store`` that had violations (see :mod:`.report`)."""

import os
import sys

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # importing agentlightning must not reach for the network

if __name__ == "__main__":
    from .report import main

    sys.exit(main())
