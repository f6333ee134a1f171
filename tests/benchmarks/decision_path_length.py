"""The length of the kernel's decision path: the functions one ``kernel.check`` enters, per tree.

Run it on demand (pytest does not collect ``tests/benchmarks``)::

    python tests/benchmarks/decision_path_length.py                              # this tree
    python tests/benchmarks/decision_path_length.py --tree /tmp/before --tree .  # side by side
    python tests/benchmarks/decision_path_length.py --path                       # and the repeated path itself

Each ``--tree`` (a checkout or a ``git archive`` of any commit) is loaded in a child process of
its own. A kernel of one ``SQLPolicy`` checks ``database_query`` with a text it has not seen (the
first-seen check), then the same text again (the repeated check, its answer remembered), each
counted with ``sys.setprofile``: the Python functions entered (every ``call`` event), those of the
kernel package, and the distinct functions of the kernel package; and the lines of ``kernel.py``.
The first-seen count includes the SQL reader's parse, so its kernel column is the one to compare.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_common import print_table  # noqa: E402
from diff_hot_path import ROOT, load  # noqa: E402

TOOL = "database_query"
FIRST_SEEN = "SELECT name, total FROM orders WHERE customer_id = 42 ORDER BY total DESC LIMIT 5"


def entered(call: Any, kernel_dir: str) -> Dict[str, Any]:
    """The Python functions ``call()`` enters: all, the kernel package's, and the kernel's in order."""
    functions: List[str] = []

    def profile(frame: Any, event: str, arg: Any) -> None:
        if event == "call":
            code = frame.f_code
            functions.append(f"{code.co_filename}:{getattr(code, 'co_qualname', code.co_name)}")

    sys.setprofile(profile)
    try:
        call()
    finally:
        sys.setprofile(None)
    functions = functions[1:]  # the first is ``call`` itself
    in_kernel = [f[len(kernel_dir) + 1 :] for f in functions if f.startswith(kernel_dir + os.sep)]
    return {"all": len(functions), "kernel": len(in_kernel), "distinct": len(set(in_kernel)), "path": in_kernel}


def measure(tree: Path) -> Dict[str, Any]:
    package = load(tree)
    kernel_dir = str(Path(package.__file__).resolve().parent)
    kernel = package.GovernanceKernel([package.SQLPolicy(deny=["DROP", "DELETE", "TRUNCATE"])])
    kernel.check(TOOL, {"query": "SELECT 1"})  # the tool's plan worked out, first imports done
    first = entered(lambda: kernel.check(TOOL, {"query": FIRST_SEEN}), kernel_dir)
    repeated = entered(lambda: kernel.check(TOOL, {"query": FIRST_SEEN}), kernel_dir)
    lines = len((Path(kernel_dir) / "kernel.py").read_text().splitlines())
    return {"first-seen": first, "repeated": repeated, "kernel.py lines": lines}


def main(argv: Optional[Sequence[str]] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", type=Path, action="append", help="a source tree to measure (repeat for several)")
    parser.add_argument("--path", action="store_true", help="also print the kernel functions of the repeated check")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    trees = args.tree or [ROOT]
    if args.child:
        print(json.dumps(measure(trees[0])))
        return
    results = {}
    for tree in trees:
        done = subprocess.run(
            [sys.executable, str(Path(__file__)), "--child", "--tree", str(tree)],
            check=True,
            capture_output=True,
            text=True,
        )
        results[str(tree)] = json.loads(done.stdout.strip().splitlines()[-1])
    header = ["decision path"] + [str(tree) for tree in trees]
    rows = []
    for check in ("first-seen", "repeated"):
        for what, label in (("all", "Python functions entered"), ("kernel", "of the kernel"), ("distinct", "distinct")):
            rows.append([f"{check}: {label}"] + [f"{results[str(t)][check][what]:,}" for t in trees])
    rows.append(["kernel.py lines"] + [f"{results[str(t)]['kernel.py lines']:,}" for t in trees])
    print_table(header, rows)
    if args.path:
        for tree in trees:
            print(f"\nrepeated check, kernel functions entered in order ({tree}):")
            for function in results[str(tree)]["repeated"]["path"]:
                print(f"  {function}")


if __name__ == "__main__":
    main()
