"""Callgrind instruction counts of marked regions of a Python process (run on demand).

Wall clock on a shared 2-CPU machine swings by tens of percent; the number of instructions a
call executes does not. This module counts them with valgrind's callgrind, for marked regions
only, so imports and set-up are not in the figures.

How the regions are marked: a tiny C library (compiled on first use with ``cc`` from the source
below, into a cache directory) issues callgrind's client requests, the documented way for a
program to steer callgrind (``valgrind/callgrind.h``). The process runs under::

    valgrind --tool=callgrind --instr-atstart=no --collect-atstart=yes ...

so nothing is instrumented until :func:`instrument` (after the imports). ``with region("label"):``
zeroes the counters at the start and dumps them at the end to a file whose description carries
the label; :func:`read_regions` returns ``{label: instructions}`` from those files. A region
counts **every thread** of the process: an audit trail's committer, a tracer's span processor,
anything that runs while the region is open. (Regions used to switch collection on and off with
``CALLGRIND_TOGGLE_COLLECT``; callgrind keeps that switch per thread, so only the thread that
opened the region was counted, and work handed to another thread vanished from the figures.)
Work between regions is counted too, but zeroed when the next region opens, so it never reaches a
dump. The ctypes calls that open and close a region cost a few hundred instructions, the same for
every region; the benchmarks subtract an empty region's count. ``PYTHONHASHSEED`` is fixed by the
caller, so set and dict iteration orders, and with them the instruction counts, repeat from run
to run.

Outside valgrind (``RUNNING_ON_VALGRIND`` is 0) the requests do nothing, so the same script runs
natively for wall-clock figures.

Needs the Debian packages ``valgrind`` (which ships ``callgrind.h``) and a C compiler.
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Sequence

_SOURCE = r"""
#include <valgrind/callgrind.h>
void region_begin(void) { CALLGRIND_ZERO_STATS; }
void region_end(const char *label) { CALLGRIND_DUMP_STATS_AT(label); }
void instrument(void) { CALLGRIND_START_INSTRUMENTATION; }
int on_valgrind(void) { return RUNNING_ON_VALGRIND; }
"""

_LIBRARY: Optional[ctypes.CDLL] = None


def _library() -> ctypes.CDLL:
    global _LIBRARY
    if _LIBRARY is not None:
        return _LIBRARY
    if not Path("/usr/include/valgrind/callgrind.h").exists():
        raise RuntimeError("valgrind/callgrind.h not found: install valgrind (apt-get install -y valgrind)")
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        raise RuntimeError("no C compiler (cc) to build the callgrind region marker: apt-get install -y gcc")
    digest = hashlib.sha256(_SOURCE.encode()).hexdigest()[:16]
    cache = Path(tempfile.gettempdir()) / f"agentos-callgrind-regions-{digest}"
    built = cache / "libregions.so"
    if not built.exists():
        cache.mkdir(parents=True, exist_ok=True)
        source = cache / "regions.c"
        source.write_text(_SOURCE)
        partial = cache / f"libregions.{os.getpid()}.so"
        subprocess.run([compiler, "-O1", "-shared", "-fPIC", "-o", str(partial), str(source)], check=True)
        partial.replace(built)
    library = ctypes.CDLL(str(built))
    library.region_end.argtypes = [ctypes.c_char_p]
    _LIBRARY = library
    return library


def on_valgrind() -> bool:
    """Whether this process runs under valgrind."""
    return bool(_library().on_valgrind())


def instrument() -> None:
    """Start callgrind's instrumentation (call once, after the imports and set-up)."""
    _library().instrument()


@contextlib.contextmanager
def region(label: str) -> Iterator[None]:
    """Count the instructions every thread executes inside the block, dumped under ``label``."""
    library = _library()
    encoded = label.encode()
    library.region_begin()
    try:
        yield
    finally:
        library.region_end(encoded)


def valgrind_command(out_dir: Path) -> List[str]:
    """The command prefix that runs a Python process with regions counted into ``out_dir``."""
    if shutil.which("valgrind") is None:
        raise RuntimeError("valgrind not found: install it (apt-get install -y valgrind)")
    return [
        "valgrind",
        "--tool=callgrind",
        "--instr-atstart=no",
        "--collect-atstart=yes",
        f"--callgrind-out-file={out_dir}/callgrind.out.%p",
    ]


_DESC = re.compile(r"^desc: Trigger: Client Request: (.*)$", re.MULTILINE)
_TOTAL = re.compile(r"^(?:summary|totals): (\d+)", re.MULTILINE)


def read_regions(out_dir: Path) -> Dict[str, int]:
    """``{label: instructions}`` of every region dumped in ``out_dir`` (a label used twice is an error)."""
    found: Dict[str, int] = {}
    for path in sorted(out_dir.glob("callgrind.out.*")):
        text = path.read_text(errors="replace")
        label = _DESC.search(text)
        total = _TOTAL.search(text)
        if label is None or total is None:
            continue  # the dump at program exit (nothing collected outside regions)
        name = label.group(1).strip()
        if name in found:
            raise ValueError(f"region label {name!r} dumped twice")
        found[name] = int(total.group(1))
    return found


def run_counted(argv: Sequence[str], env: Dict[str, str]) -> Dict[str, int]:
    """Run ``argv`` (a Python command) under callgrind; its regions' instruction counts."""
    with tempfile.TemporaryDirectory(prefix="agentos-callgrind-") as tmp:
        out_dir = Path(tmp)
        subprocess.run([*valgrind_command(out_dir), *argv], env=env, check=True, stderr=subprocess.DEVNULL)
        return read_regions(out_dir)


def per_call(raw: Dict[str, int]) -> Dict[str, float]:
    """Instructions per call of each region of :func:`run_counted`'s answer whose label is ``NAME|CALLS``, less
    the ``empty`` region's (what an empty region costs)."""
    counts = dict(raw)
    empty = counts.pop("empty", 0)
    out = {}
    for label, total in counts.items():
        name, calls = label.rsplit("|", 1)
        out[name] = (total - empty) / int(calls)
    return out
