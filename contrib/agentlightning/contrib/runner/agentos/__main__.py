"""``python -m agentlightning.contrib.runner.agentos violations --store-url URL``: the rollouts of an
``agl store`` that had violations (see :mod:`.report`)."""

import sys

from .report import main

if __name__ == "__main__":
    sys.exit(main())
