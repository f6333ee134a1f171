"""An unknown keyword argument answered with the names it may have meant."""

from __future__ import annotations

import difflib
from typing import Iterable

__all__ = ["unknown_keyword_error"]


def unknown_keyword_error(callee: str, given: str, valid: Iterable[str]) -> TypeError:
    """Python's own message for an unexpected keyword, with "did you mean" and the valid names.

    >>> print(unknown_keyword_error("PolicyReward", "base_reward", ["kernel", "base_reward_fn"]))  # doctest: +ELLIPSIS
    PolicyReward() got an unexpected keyword argument 'base_reward' (did you mean 'base_reward_fn'?); its ...
    """
    names = sorted(set(valid))
    close = difflib.get_close_matches(given, names, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return TypeError(
        f"{callee}() got an unexpected keyword argument {given!r}{hint}; its keyword arguments: {', '.join(names)}"
    )
