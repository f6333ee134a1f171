"""Runner processes of one driver, forked from a forkserver that imported agentlightning once.

``import agentlightning`` costs about 10 s of CPU per process on a 2-core machine; a runner forked
from the warm forkserver is connected in 1-2 s (agentlightning's own ``Trainer`` forks its runner
processes too).
"""

from __future__ import annotations

import contextlib
import json
import multiprocessing
import os
import signal
import time
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence

from .worker import WorkerSpec, worker_main


def worker_context() -> Any:
    """The forkserver context whose server has imported agentlightning (and the runner's module) once."""
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(
        [
            "agentlightning",
            "agentlightning.contrib.runner.agentos",
            "agentlightning.contrib.adapter.agentos",
            "agentops.instrumentation.providers.openai.instrumentor",  # what each runner's tracer imports at init
            "openai.resources",
            "sqlglot",
            "psutil",
            worker_main.__module__,
        ]
    )
    return ctx


def warm_up_forkserver() -> None:
    """Start the forkserver now (its import of agentlightning overlaps with the store's start)."""
    from multiprocessing import forkserver

    worker_context()
    forkserver.ensure_running()


def wait_for(predicate: Callable[[], Any], timeout: float, what: str, interval: float = 0.05) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)


class WorkerPool:
    """Runner processes of one driver; :meth:`close` kills whatever is still alive."""

    def __init__(self, ctx: Any = None) -> None:
        self.ctx = ctx or worker_context()
        self.workers: Dict[str, Any] = {}
        self.specs: Dict[str, WorkerSpec] = {}

    def start(self, specs: Sequence[WorkerSpec], *, ready_timeout: float = 180.0) -> Dict[str, float]:
        """Fork the workers and wait until each is connected and waiting for SIGUSR1."""
        t0 = time.monotonic()
        for spec in specs:
            if spec.name in self.workers:
                raise ValueError(f"worker {spec.name} already started")
            for key in ("ready", "done"):
                spec.paths[key].unlink(missing_ok=True)
            process = self.ctx.Process(target=worker_main, args=(spec,), name=f"runner-{spec.name}", daemon=True)
            process.start()
            self.workers[spec.name] = process
            self.specs[spec.name] = spec
        ready = {}
        for spec in specs:
            process = self.workers[spec.name]

            def is_ready(spec: WorkerSpec = spec, process: Any = process) -> bool:
                if process.exitcode is not None:
                    log = spec.paths["log"].read_text()[-3000:] if spec.paths["log"].exists() else ""
                    raise RuntimeError(f"worker {spec.name} exited with {process.exitcode} before it was ready: {log}")
                return spec.paths["ready"].exists()

            wait_for(is_ready, ready_timeout, f"worker {spec.name} to be ready")
            ready[spec.name] = time.monotonic() - t0
        return ready

    def pid(self, name: str) -> int:
        return self.workers[name].pid

    def release(self, names: Optional[Iterable[str]] = None) -> None:
        for name in names if names is not None else list(self.workers):
            os.kill(self.pid(name), signal.SIGUSR1)

    def kill(self, name: str) -> None:
        os.kill(self.pid(name), signal.SIGKILL)
        self.workers[name].join(timeout=30)

    def stop(self, names: Optional[Iterable[str]] = None, *, timeout: float = 60.0) -> Dict[str, Dict[str, Any]]:
        """SIGTERM (stop after the current rollout), wait up to ``timeout``; SIGKILL whoever is left."""
        names = list(names if names is not None else self.workers)
        t0 = time.monotonic()
        for name in names:
            if self.workers[name].exitcode is None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(self.pid(name), signal.SIGTERM)
        result = {}
        for name in names:
            process = self.workers[name]
            process.join(timeout=max(0.0, timeout - (time.monotonic() - t0)))
            exited = process.exitcode is not None
            if not exited:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(process.pid, signal.SIGKILL)
                process.join(timeout=30)
            done_path = self.specs[name].paths["done"]
            result[name] = {
                "exited_after_sigterm": exited,
                "exit_s": round(time.monotonic() - t0, 2) if exited else None,
                "exitcode": process.exitcode,
                "done": json.loads(done_path.read_text()) if done_path.exists() else None,
            }
        return result

    def close(self) -> None:
        for process in self.workers.values():
            if process.exitcode is None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(process.pid, signal.SIGKILL)
                process.join(timeout=30)


def make_specs(
    scenario_dir: Path,
    store_url: str,
    names: Sequence[str],
    *,
    kind: str = "sql",
    first_worker_id: int = 0,
    **options: Any,
) -> List[WorkerSpec]:
    return [
        WorkerSpec(
            name=name,
            worker_id=first_worker_id + i,
            kind=kind,
            scenario_dir=str(scenario_dir),
            store_url=store_url,
            driver_pid=os.getpid(),
            **options,
        )
        for i, name in enumerate(names)
    ]
