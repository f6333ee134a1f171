"""The time this process spent in garbage collection, so a collection is not a policy's time.

A full collection in a process that imported agentlightning scans about a million objects and can
take a second. The kernel subtracts the collections that ran while an inline policy was asked from
the policy's time before comparing it with ``policy_timeout_s``: a collection must not block a
harmless action.
"""

from __future__ import annotations

import gc
import threading
import time
from typing import Any, Dict, Optional

from .after_fork import renew_in_child

__all__ = ["GarbageCollectionClock", "gc_clock"]


class GarbageCollectionClock:
    """Total seconds spent in garbage collection since it was installed, from ``gc.callbacks``."""

    def __init__(self) -> None:
        self.total_s = 0.0
        self._started = 0.0
        gc.callbacks.append(self._on_gc)

    def _on_gc(self, phase: str, info: Dict[str, Any]) -> None:
        if phase == "start":
            self._started = time.perf_counter()
        else:
            self.total_s += time.perf_counter() - self._started


_CLOCK: Optional[GarbageCollectionClock] = None
_LOCK = threading.Lock()
_RENEWED_IN_CHILDREN = False


def _new_lock_in_child() -> None:
    # A lock another thread held at the fork would stay held in the child, and the child's next
    # kernel would wait on it for ever.
    global _LOCK
    _LOCK = threading.Lock()


def gc_clock() -> GarbageCollectionClock:
    """The process's one garbage-collection clock, installed in ``gc.callbacks`` by the first
    kernel (not at import: importing the kernel changes nothing)."""
    global _CLOCK, _RENEWED_IN_CHILDREN
    if not _RENEWED_IN_CHILDREN:  # first: a fork while another thread holds the lock must renew it
        _RENEWED_IN_CHILDREN = True
        renew_in_child(_new_lock_in_child)
    with _LOCK:
        if _CLOCK is None:
            _CLOCK = GarbageCollectionClock()
        return _CLOCK
