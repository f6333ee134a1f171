"""What a command line says when it cannot reach an ``agl store`` server (one sentence for every room's command).

>>> for part in unreachable_store("read", "http://127.0.0.1:4747", ConnectionRefusedError("refused")).split(". "):
...     print(part)
cannot read the agl store at http://127.0.0.1:4747: ConnectionRefusedError: refused
Is `agl store --port <port>` running there?
"""

from __future__ import annotations

__all__ = ["unreachable_store"]


def unreachable_store(verb: str, store_url: str, error: BaseException, consequence: str = "") -> str:
    """One line naming what failed, where, the error and the usual fix; ``consequence`` says what
    the failure means for the user's data."""
    line = (
        f"cannot {verb} the agl store at {store_url}: {type(error).__name__}: {error}. "
        "Is `agl store --port <port>` running there?"
    )
    return f"{line} {consequence}" if consequence else line
