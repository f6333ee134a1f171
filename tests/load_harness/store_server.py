"""A real ``agl store`` server process on loopback that a run can stop and start again."""

from __future__ import annotations

import contextlib
import datetime
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, Optional

# The recipes' agl store helpers (the tests run the recipes' own code).
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "contrib" / "recipes" / "agentos"))
from agl_store_server import agl_store_command, store_healthy, wait_until_healthy  # noqa: E402


class StoreServer:
    """A real ``agl store`` subprocess (in-memory backend) on 127.0.0.1:``port``."""

    def __init__(self, port: int, log_path: Path) -> None:
        self.port = port
        self.url = f"http://127.0.0.1:{port}"
        self.log_path = Path(log_path)
        self.process: Optional[subprocess.Popen] = None
        self._starting_since: Optional[float] = None

    def launch(self) -> None:
        """Start the process (returns at once; :meth:`wait_healthy` waits for it)."""
        if self.process is not None and self.process.poll() is None:
            raise RuntimeError("agl store is already running")
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "a") as log:
            log.write(f"\n--- agl store start {datetime.datetime.now().isoformat()} ---\n")
            log.flush()
            self.process = subprocess.Popen(
                agl_store_command(self.port),
                stdout=log,
                stderr=subprocess.STDOUT,
                env=os.environ.copy(),
                start_new_session=True,
            )
        self._starting_since = time.monotonic()

    def healthy(self) -> bool:
        return store_healthy(self.url)

    def wait_healthy(self, timeout: float = 180.0) -> float:
        """Seconds from :meth:`launch` until ``/v1/agl/health`` answers."""
        assert self.process is not None and self._starting_since is not None
        try:
            wait_until_healthy(
                self.process, self.healthy, self.url, timeout, lambda: self.log_path.read_text()[-3000:], poll_s=0.1
            )
        except RuntimeError:
            self.close()
            raise
        return time.monotonic() - self._starting_since

    def start(self, timeout: float = 180.0) -> float:
        self.launch()
        return self.wait_healthy(timeout)

    def stop(self, timeout: float = 30.0) -> Dict[str, Any]:
        """Terminate the server (SIGTERM) and wait for it; SIGKILL after ``timeout``."""
        if self.process is None or self.process.poll() is not None:
            return {
                "returncode": None if self.process is None else self.process.returncode,
                "stop_s": 0.0,
                "killed": False,
            }
        started = time.monotonic()
        self.process.terminate()
        killed = False
        try:
            self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            killed = True
            self._kill_group()
            self.process.wait(timeout=10)
        return {"returncode": self.process.returncode, "stop_s": time.monotonic() - started, "killed": killed}

    def log_since_last_start(self) -> str:
        text = self.log_path.read_text(errors="replace") if self.log_path.exists() else ""
        return text.rsplit("--- agl store start", 1)[-1]

    def _kill_group(self) -> None:
        if self.process is None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signal.SIGKILL)

    def close(self) -> None:
        """Make sure nothing is left running (for finalizers)."""
        if self.process is not None and self.process.poll() is None:
            self.stop(timeout=10)
        self._kill_group()
