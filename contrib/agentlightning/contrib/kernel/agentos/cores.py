"""Where a governing process runs: the cores it may use, and a process placed on one of them.

Governance runs in processes of its own where the GIL would serialise it: the 1.0 gateway's check
workers, the 0.3 runner's processes. Left to the scheduler, such a process's threads (checks, the
audit trail's commits, a tracer's) move between cores several times a second of work, and each move
starts on cold caches: measured, a check cost about 10-16% more CPU floating than on a core of its
own, with the same instructions (docs/performance.md, "Checks on one core and on two"). So a room
that runs one process per core can place each on its own core.

Placing is never a condition of safety: where the system refuses it (a cpuset changed, not Linux),
the process runs where the system places it, slower and governed all the same.

>>> available_cores() >= 1 and all(isinstance(core, int) for core in usable_cores())
True
"""

from __future__ import annotations

import os
from typing import List

__all__ = ["available_cores", "run_on_core", "usable_cores"]


def usable_cores() -> List[int]:
    """The cores this process may run on, in order (its affinity, as ``taskset`` or a container's cpuset
    sets it); empty where the system does not say (not Linux)."""
    try:
        return sorted(os.sched_getaffinity(0))
    except AttributeError:
        return []


def available_cores() -> int:
    """How many cores this process may run on (at least one)."""
    return len(usable_cores()) or os.cpu_count() or 1


def run_on_core(core: int) -> bool:
    """Place every thread of this process on ``core`` (threads started later inherit it from the thread
    that starts them). False where the system refuses (no such core any more, no ``/proc``, not Linux):
    the process then runs where the system places it."""
    try:
        for task in os.listdir("/proc/self/task"):
            try:
                os.sched_setaffinity(int(task), {core})
            except ProcessLookupError:  # a thread that ended since the listing
                continue
    except (OSError, AttributeError):
        return False
    return True
