"""What a process forked from this one renews before it runs anything.

Only the forking thread goes on in a child, with a copy of the parent's memory: a lock another
thread held at the fork would stay held there for ever, and a kernel's decision-id prefix would
give the child's decisions the very ids its parent gives its own. Each owner of such state
registers its renewal here. The hook is installed in ``os.register_at_fork`` once per process, by
the first registration (not at import: importing the kernel changes nothing).
"""

from __future__ import annotations

import os
import weakref
from typing import Any, Callable, List

__all__ = ["renew_in_child", "renew_in_child_while_alive"]

_INSTALLED = False
#: Renewals of module state (a module's lock), in the order they were registered.
_RENEWALS: List[Callable[[], None]] = []
#: Renewals of objects' state, forgotten with their object (every kernel of this process).
_OWNERS: "weakref.WeakKeyDictionary[Any, Callable[[Any], None]]" = weakref.WeakKeyDictionary()


def _in_child() -> None:
    for renewal in list(_RENEWALS):
        renewal()
    for owner, renewal in list(_OWNERS.items()):
        renewal(owner)


def _install() -> None:
    """Install :func:`_in_child`, once per process.

    No lock: one held by another thread at the fork would stay held in the child; two threads
    registering at once at most install the hook twice (then each child renews twice, which is harmless).
    """
    global _INSTALLED
    if not _INSTALLED:
        _INSTALLED = True
        os.register_at_fork(after_in_child=_in_child)


def renew_in_child(renewal: Callable[[], None]) -> None:
    """Call ``renewal()`` in every process forked from this one, before anything runs there."""
    _install()
    _RENEWALS.append(renewal)


def renew_in_child_while_alive(owner: Any, renewal: Callable[[Any], None]) -> None:
    """Call ``renewal(owner)`` in every process forked from this one while ``owner`` lives."""
    _install()
    _OWNERS[owner] = renewal
