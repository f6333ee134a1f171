"""Import time of the kernel core, by ``python -X importtime``: median of N fresh interpreters each.

    .venv/bin/python tests/benchmarks/bench_import_time.py 3

Each row: the seconds in all, those of agentlightning's ``__init__`` (run first, as the parent
package of ``agentlightning.contrib``) and the rest. Needs ``.venv`` (0.3) and ``.venv312`` (1.0)
at the repository's root. docs/performance.md, "Importing the kernel core", has the figures.
"""

import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
N = int(sys.argv[1]) if len(sys.argv) > 1 else 3
ENV = dict(os.environ, LITELLM_LOCAL_MODEL_COST_MAP="True")
ROOT = str(REPO / "contrib" / "agentlightning")
# The kernel core with the three packages above it as plain namespaces over their folders: what the
# core itself costs, without agentlightning's __init__ (the SQL reading worker sets itself up so).
STUB = (
    "import sys, types\n"
    f"for name, folder in (('agentlightning', {ROOT!r}), ('agentlightning.contrib', {ROOT + '/contrib'!r}),"
    f" ('agentlightning.contrib.kernel', {ROOT + '/contrib/kernel'!r})):\n"
    "    module = types.ModuleType(name); module.__path__ = [folder]; sys.modules[name] = module\n"
    "import agentlightning.contrib.kernel.agentos\n"
)
CASES = {
    "0.3: import agentlightning.contrib.kernel.agentos": (
        ".venv/bin/python",
        "import agentlightning.contrib.kernel.agentos",
    ),
    "0.3: import agentlightning (its __init__ alone)": (".venv/bin/python", "import agentlightning"),
    "1.0: import agentlightning.contrib.kernel.agentos": (
        ".venv312/bin/python",
        "import agentlightning.contrib.kernel.agentos",
    ),
    "1.0: import agentlightning (its __init__ alone)": (".venv312/bin/python", "import agentlightning"),
    "0.3 environment, the core alone (parents as namespaces)": (".venv/bin/python", STUB),
}


def run(python: str, code: str) -> dict:
    err = subprocess.run(
        [str(REPO / python), "-X", "importtime", "-c", code], env=ENV, capture_output=True, text=True
    ).stderr
    cum = {}
    for line in err.splitlines():
        m = re.match(r"import time:\s+(\d+) \|\s+(\d+) \|(\s*)(\S+)", line)
        if m:
            cum[m.group(4)] = int(m.group(2)) / 1e6
            if len(m.group(3)) == 1:
                cum["<total>"] = cum.get("<total>", 0.0) + int(m.group(2)) / 1e6
    return cum


if __name__ == "__main__":
    for label, (python, code) in CASES.items():
        runs = [run(python, code) for _ in range(N)]
        total = statistics.median(r["<total>"] for r in runs)
        al = statistics.median(r.get("agentlightning", 0.0) for r in runs)
        print(
            f"{label}: {total:.2f} s in all, of which agentlightning/__init__ {al:.2f} s, the rest {total - al:.2f} s"
        )
