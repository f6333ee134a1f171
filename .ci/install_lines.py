"""Run the README's install lines for one Agent Lightning line, exactly as written there.

    python .ci/install_lines.py agl03 --python .venv/bin/python
    python .ci/install_lines.py agl10 --python .venv312/bin/python

The README's install block (between ``<!-- install-lines -->`` and ``<!-- /install-lines -->``)
holds the commands a user types into an existing environment: from a clone, and from a wheel
built with ``python -m build``. Each command that names the line's extra (``[agl03]`` or
``[agl10]``), and each that names none (the wheel's build), runs in README order from the
repository root, with ``python`` meaning the given environment's interpreter; after each install
the line's room is imported from an empty directory, so the installed copy is what is imported.
.ci/run calls this on its freshly created environments before anything else is installed there,
so the first command of each line runs in a fresh environment.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List

ROOT = Path(__file__).resolve().parent.parent
BLOCK = re.compile(r"<!-- install-lines -->\n```bash\n(.*?)```\n<!-- /install-lines -->", re.DOTALL)
#: The module each line's install must make importable.
ROOMS = {"agl03": "agentlightning.contrib.runner.agentos", "agl10": "agentlightning.contrib.gateway.agentos"}


def install_lines(readme: str) -> Dict[str, List[str]]:
    """The README's install commands by Agent Lightning line; a command naming no line's extra
    (the wheel's build) belongs to both."""
    match = BLOCK.search(readme)
    if match is None:
        raise ValueError("the README has no <!-- install-lines --> block")
    commands = [line.split("  #")[0].strip() for line in match.group(1).splitlines()]
    commands = [c for c in commands if c and not c.startswith("#")]
    lines: Dict[str, List[str]] = {extra: [] for extra in ROOMS}
    for command in commands:
        named = [extra for extra in ROOMS if f"[{extra}]" in command]
        for extra in named or list(ROOMS):
            lines[extra].append(command)
    return lines


def kind(command: str) -> str:
    """``clone`` (the repository's directory) or ``wheel`` (building or installing the wheel)."""
    if "python -m build" in command or ".whl" in command:
        return "wheel"
    if re.search(r"'\.\[\w+\]'", command):
        return "clone"
    raise ValueError(f"an install command that is neither from the clone nor from a wheel: {command}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("line", choices=sorted(ROOMS))
    parser.add_argument("--python", required=True, help="the environment's interpreter that `python` stands for")
    parser.add_argument(
        "--reuse-wheel",
        action="store_true",
        help="skip the wheel's build when the wheel the next line installs is already in dist/ (built by the "
        "other line's run in the same CI run)",
    )
    args = parser.parse_args(argv)
    python = str(Path(args.python).absolute())
    env = dict(os.environ, PATH=f"{Path(python).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    commands = install_lines((ROOT / "README.md").read_text())[args.line]
    for index, command in enumerate(commands):
        started = time.monotonic()
        if args.reuse_wheel and "python -m build" in command:
            wheels = [w for c in commands[index + 1 :] for w in re.findall(r"dist/[^\[' ]+\.whl", c)]
            if wheels and all((ROOT / w).is_file() for w in wheels):
                print(f"install line ({args.line}, wheel): {command}: skipped, {wheels[0]} is built", flush=True)
                continue
        # `python` is the first word of every README line: the environment's interpreter runs it.
        words = [python if w == "python" else w for w in shlex.split(command.replace("&&", " && "))]
        script = " ".join(shlex.quote(w) if w != "&&" else w for w in words)
        print(f"install line ({args.line}, {kind(command)}): {command}", flush=True)
        subprocess.run(["bash", "-c", f"set -e; {script}"], cwd=ROOT, env=env, check=True)
        with tempfile.TemporaryDirectory() as empty:
            imported = subprocess.run(
                [python, "-c", f"import {ROOMS[args.line]} as m; print(m.__file__)"],
                cwd=empty,
                env=dict(env, LITELLM_LOCAL_MODEL_COST_MAP="True"),
                capture_output=True,
                text=True,
                check=False,
            )
        if imported.returncode != 0:
            print(imported.stderr[-2000:], file=sys.stderr)
            print(f"after `{command}`, {ROOMS[args.line]} does not import", file=sys.stderr)
            return 1
        print(f"  imports {imported.stdout.strip()} ({time.monotonic() - started:.0f} s)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
