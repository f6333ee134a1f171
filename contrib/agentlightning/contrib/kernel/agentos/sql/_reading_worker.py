"""A worker process that reads SQL texts for ``bounded.read_in_worker`` (run as a script).

argv: the kernel package's folder, and the parent's ``sys.path``. The packages above the SQL
readers (``agentlightning``, ``agentlightning.contrib``, ...) are set up as plain namespaces over
their folders, so their ``__init__`` modules (agentlightning's own costs seconds and loads a
proxy server) never run: only the readers and what they import do.

Requests on stdin, answers on stdout, each a length-prefixed pickle: ``(module:function, args)``
in, ``(True, value)`` or ``(False, reason)`` out. The function must be one of the SQL package's.
"""

import importlib
import os
import pickle
import struct
import sys
import types

_HEADER = struct.Struct("!Q")
_PACKAGE = "agentlightning.contrib.kernel.agentos"


def _set_up(kernel_root: str, parent_path: str) -> None:
    sys.path[:] = [p for p in parent_path.split(os.pathsep) if p]
    folders = [kernel_root]
    for _ in range(3):
        folders.insert(0, os.path.dirname(folders[0]))
    for name, folder in zip(
        ("agentlightning", "agentlightning.contrib", "agentlightning.contrib.kernel", _PACKAGE), folders
    ):
        module = types.ModuleType(name)
        module.__path__ = [folder]
        sys.modules[name] = module


def _read_exactly(stream, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = stream.read(size - len(data))
        if not chunk:
            raise EOFError
        data += chunk
    return data


def main() -> None:
    _set_up(sys.argv[1], sys.argv[2])
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    importlib.import_module(_PACKAGE + ".sql.policy")  # before the first request: not its time
    stdout.write(b"R")
    stdout.flush()
    while True:
        try:
            (length,) = _HEADER.unpack(_read_exactly(stdin, _HEADER.size))
            target, args = pickle.loads(_read_exactly(stdin, length))
        except EOFError:
            return
        try:
            module_name, function_name = target.split(":")
            if not module_name.startswith(_PACKAGE + ".sql."):
                raise ValueError(f"{target} is not a function of the SQL readers")
            value = getattr(importlib.import_module(module_name), function_name)(*args)
            answer = pickle.dumps((True, value), protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as err:  # noqa: BLE001 - reported to the parent, which fails closed
            answer = pickle.dumps((False, f"{type(err).__name__}: {err}"), protocol=pickle.HIGHEST_PROTOCOL)
        stdout.write(_HEADER.pack(len(answer)) + answer)
        stdout.flush()


if __name__ == "__main__":
    main()
