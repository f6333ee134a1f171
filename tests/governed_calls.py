"""What became of a governed tool's calls, for the scripted agents of the tests, the load harness and
the runner's before/after differential: each call either ran or was blocked by the kernel.

A module of its own, importing only the runner room, so that a runner process (fork or spawn) and a
script that loads ``agentlightning.contrib`` from another checkout can import it.
"""

from __future__ import annotations

import threading
from typing import Any, Callable, Iterable, List

from agentlightning.contrib.runner.agentos import ActionBlockedError

__all__ = ["outcome_of", "outcome_in_thread", "count_ran"]


def outcome_of(run: Callable[..., Any], *args: Any, **kwargs: Any) -> str:
    """``"ran"`` when the governed tool ``run`` ran the call, ``"blocked"`` when the kernel blocked it
    (any other exception propagates)."""
    try:
        run(*args, **kwargs)
    except ActionBlockedError:
        return "blocked"
    return "ran"


def count_ran(run: Callable[..., Any], queries: Iterable[str], **kwargs: Any) -> int:
    """Calls ``run(query, **kwargs)`` for each query in order, skipping the blocked ones; how many ran."""
    return [outcome_of(run, query, **kwargs) for query in queries].count("ran")


def outcome_in_thread(run: Callable[..., Any], *args: Any, **kwargs: Any) -> str:
    """:func:`outcome_of` the call made from a ``threading.Thread`` of its own (started and joined)."""
    outcomes: List[str] = []
    thread = threading.Thread(target=lambda: outcomes.append(outcome_of(run, *args, **kwargs)))
    thread.start()
    thread.join()
    (outcome,) = outcomes  # nothing when the call raised something else: the thread printed it
    return outcome
