"""Names that moved: a package's ``__getattr__`` that still returns them, with a warning naming the new import.

Each room keeps its core classes at the top and the rest in submodules. A name that left the top
keeps working where it was, through :func:`moved_names`, and says where it lives now, so that no
import breaks silently.

>>> import warnings
>>> __getattr__ = moved_names("rooms.example", {"sqrt": "math"})
>>> with warnings.catch_warnings(record=True) as caught:
...     warnings.simplefilter("always")
...     root = __getattr__("sqrt")
>>> root(9.0), str(caught[0].message)
(3.0, 'rooms.example.sqrt moved: import it as `from math import sqrt`; the old name will be removed')
"""

from __future__ import annotations

import sys
import warnings
from importlib import import_module
from typing import Any, Callable, Mapping

__all__ = ["moved_names"]


def moved_names(package: str, moved: Mapping[str, str], *, hint: str = "") -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package``: each name of ``moved`` is imported from the module
    ``moved[name]`` (``"module:new_name"`` when it was renamed too) with a ``DeprecationWarning``
    naming that import; any other name is an ``AttributeError``. ``hint`` is added to the
    ``ImportError`` when the module cannot be imported."""

    def __getattr__(name: str) -> Any:
        if name not in moved:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module_name, _, new_name = moved[name].partition(":")
        new_name = new_name or name
        # ``from package import name`` asks twice: importlib's hasattr check, then the import itself.
        # Only the second one is the user's line, so only it warns.
        if sys._getframe(1).f_code.co_name != "_handle_fromlist":
            warnings.warn(
                f"{package}.{name} moved: import it as `from {module_name} import {new_name}`; "
                "the old name will be removed",
                DeprecationWarning,
                stacklevel=2,
            )
        try:
            module = import_module(module_name)
        except ImportError as error:
            raise ImportError(f"{name} is in {module_name}, which cannot be imported here ({error}){hint}") from error
        return getattr(module, new_name)

    return __getattr__
