"""`agl store` (agentlightning's store server and dashboard) as a child process of a recipe, on loopback."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Callable, Iterator, List, Optional

import portpicker


def agl_store_command(port: int) -> List[str]:
    """The command line of ``agl store`` on 127.0.0.1:``port``, from this interpreter's environment."""
    agl_bin = Path(sys.executable).with_name("agl")
    program = (
        [str(agl_bin)] if agl_bin.exists() else [sys.executable, "-c", "from agentlightning.cli import main; main()"]
    )
    return [*program, "store", "--host", "127.0.0.1", "--port", str(port), "--log-level", "WARNING"]


def store_healthy(url: str) -> bool:
    """Whether the ``agl store`` at ``url`` answers its health check."""
    try:
        with urllib.request.urlopen(f"{url}/v1/agl/health", timeout=1) as response:
            return response.status == 200
    except OSError:
        return False


def wait_until_healthy(
    process: subprocess.Popen,
    healthy: Callable[[], bool],
    where: str,
    timeout: float,
    log: Callable[[], str],
    poll_s: float = 0.2,
) -> None:
    """Return once ``healthy()``: the ``agl store`` that ``process`` runs answers at ``where``. A
    ``RuntimeError`` ending with ``log()`` (where its output is, or the output's tail) if the process
    exits first or ``timeout`` s pass."""
    deadline = time.monotonic() + timeout
    while not healthy():
        if process.poll() is not None:
            raise RuntimeError(f"agl store exited with code {process.returncode}; {log()}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"agl store did not answer at {where} within {timeout} s; {log()}")
        time.sleep(poll_s)  # the server is still importing agentlightning


@contextlib.contextmanager
def agl_store_server(log_path: Path, *, port: Optional[int] = None, timeout: float = 90.0) -> Iterator[str]:
    """Run ``agl store --host 127.0.0.1 --port <port>`` (a free port by default) for the ``with``
    block; yields its URL once ``/v1/agl/health`` answers, stops the server when the block ends.
    The server's output goes to ``log_path``."""
    port = port or portpicker.pick_unused_port()
    url = f"http://127.0.0.1:{port}"
    with open(log_path, "w") as log:
        process = subprocess.Popen(agl_store_command(port), stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_until_healthy(process, lambda: store_healthy(url), url, timeout, lambda: f"see {log_path}")
        yield url
    finally:
        stop_process(process, timeout=15)


def stop_process(process: subprocess.Popen, *, timeout: float) -> None:
    """Terminate ``process`` and wait for it; kill it if it has not exited within ``timeout`` s."""
    process.terminate()
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
