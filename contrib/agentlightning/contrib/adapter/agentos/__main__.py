"""``python -m agentlightning.contrib.adapter.agentos ship --store-url URL AUDIT_DIR``: send the
records of FlightRecorder files the store lacks, each once (see :mod:`.shipper`)."""

import sys

from .shipper import main

if __name__ == "__main__":
    sys.exit(main())
