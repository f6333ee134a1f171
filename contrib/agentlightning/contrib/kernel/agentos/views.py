"""Read-through properties: a record shows a field of an object it holds under a name of its own.

A step record holds the kernel's :class:`Decision` and the step's :class:`GovernedReward`; an
outcome of the runner holds a decision. Each shows some of their fields as its own attributes;
:func:`forwarded` states that in one line, where a property would take four.

>>> from types import SimpleNamespace
>>> class Step:
...     allowed = forwarded("decision.allowed", "The kernel allowed the action.")
...     def __init__(self, decision):
...         self.decision = decision
>>> Step(SimpleNamespace(allowed=True)).allowed, Step.allowed.__doc__
(True, 'The kernel allowed the action.')
"""

from __future__ import annotations

from operator import attrgetter
from typing import Optional

__all__ = ["forwarded"]


def forwarded(path: str, doc: Optional[str] = None) -> property:
    """A read-only property whose value is the dotted attribute ``path`` of the instance."""
    return property(attrgetter(path), doc=doc or f"``{path}``.")
