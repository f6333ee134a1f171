"""Memory figures of a runner process: sampled in the runner, summarised by the driver."""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import json
import statistics
import sys
import threading
import time
import tracemalloc
from pathlib import Path
from typing import Any, Dict, List, Optional

import psutil

import agentlightning as agl

from agentlightning.contrib.kernel.agentos import GovernanceKernel


class _MallInfo2(ctypes.Structure):
    _fields_ = [
        (n, ctypes.c_size_t)
        for n in (
            "arena",
            "ordblks",
            "smblks",
            "hblks",
            "hblkhd",
            "usmblks",
            "fsmblks",
            "uordblks",
            "fordblks",
            "keepcost",
        )
    ]


def _native_memory() -> Dict[str, Optional[int]]:
    """What lives outside Python's allocator: SQLite's own allocations (page caches of every
    connection in this process) and glibc's heap (``mallinfo2``: in use, free, mmapped)."""
    out: Dict[str, Optional[int]] = {
        "sqlite_bytes": None,
        "malloc_in_use": None,
        "malloc_free": None,
        "malloc_mmap": None,
    }
    with contextlib.suppress(Exception):
        lib = ctypes.CDLL(ctypes.util.find_library("sqlite3"))
        lib.sqlite3_memory_used.restype = ctypes.c_int64
        out["sqlite_bytes"] = int(lib.sqlite3_memory_used())
    with contextlib.suppress(Exception):
        libc = ctypes.CDLL("libc.so.6")
        libc.mallinfo2.restype = _MallInfo2
        info = libc.mallinfo2()
        out.update(malloc_in_use=int(info.uordblks), malloc_free=int(info.fordblks), malloc_mmap=int(info.hblkhd))
    return out


def _trace_data_bytes(trace_data: Dict[str, Dict[str, Any]]) -> int:
    """Approximate bytes held by Agent OS FlightRecorder's ``_trace_data`` (dict, entries, strings)."""
    total = sys.getsizeof(trace_data)
    for key, entry in trace_data.items():
        total += sys.getsizeof(key) + sys.getsizeof(entry) + sum(sys.getsizeof(v) for v in entry.values())
    return total


class SamplingHook(agl.Hook):
    """Samples the worker's memory every ``every`` rollouts into a JSON Lines file."""

    def __init__(self, path: Path, every: int, kernel: GovernanceKernel, *, trace_memory: bool = False) -> None:
        super().__init__()
        self.path = Path(path)
        self.every = max(1, int(every))
        self.kernel = kernel
        self.rollouts = 0
        self.started = time.monotonic()
        self.process = psutil.Process()
        self.trace_memory = trace_memory
        self._baseline: Any = None

    def sample(self, label: str = "") -> Dict[str, Any]:
        memory = self.process.memory_full_info()
        recorder = self.kernel.recorder
        trace_data = getattr(recorder, "_trace_data", {}) if recorder is not None else {}
        row = {
            "rollouts": self.rollouts,
            "t": round(time.monotonic() - self.started, 3),
            "rss": memory.rss,
            "uss": memory.uss,
            "threads": threading.active_count(),
            "trace_data_entries": len(trace_data),
            "trace_data_bytes": _trace_data_bytes(trace_data),
            "python_blocks": sys.getallocatedblocks(),
            **_native_memory(),
            "label": label,
        }
        if self.trace_memory and tracemalloc.is_tracing():
            row["traced_bytes"] = tracemalloc.get_traced_memory()[0]
            if self._baseline is None:
                if self.rollouts >= self.every:  # after warm-up: the reference for "what grew"
                    self._baseline = tracemalloc.take_snapshot()
            else:
                diff = tracemalloc.take_snapshot().compare_to(self._baseline, "lineno")
                grown = sorted(diff, key=lambda d: -d.size_diff)[:8]
                row["grown_since_baseline"] = [[str(d.traceback[0]), d.size_diff, d.count_diff] for d in grown]
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "a") as f:
            f.write(json.dumps(row) + "\n")
        return row

    async def on_rollout_end(self, *, agent: Any, runner: Any, rollout: Any, spans: Any) -> None:
        self.rollouts += 1
        if self.rollouts % self.every == 0:
            self.sample()


def rss_report(samples_dir: Path, warmup_fraction: float = 0.2) -> Dict[str, Any]:
    """First / last / max RSS and USS per worker, and the slope after warm-up (least squares, MiB
    per 1000 rollouts), with what Agent OS's FlightRecorder keeps in ``_trace_data``."""
    mib = 1024 * 1024
    report = {}
    for path in sorted(samples_dir.glob("*.jsonl")):
        rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        if not rows:
            continue
        total = max(r["rollouts"] for r in rows)
        warm = [r for r in rows if r["rollouts"] >= warmup_fraction * total]

        def slope(key: str, digits: int, warm: List[Dict[str, Any]] = warm) -> Optional[float]:
            xs = [r["rollouts"] for r in warm]
            if len(set(xs)) < 2:
                return None
            mx, my = statistics.fmean(xs), statistics.fmean(r[key] for r in warm)
            num = sum((x - mx) * (r[key] - my) for x, r in zip(xs, warm))
            den = sum((x - mx) ** 2 for x in xs)
            return round(num / den * 1000 / mib, digits)

        def in_mib(row: Dict[str, Any], key: str, digits: int) -> Optional[float]:
            return None if row.get(key) is None else round(row[key] / mib, digits)

        report[path.stem] = {
            "samples": len(rows),
            "rollouts": total,
            "rss_first_mib": round(rows[0]["rss"] / mib, 1),
            "rss_last_mib": round(rows[-1]["rss"] / mib, 1),
            "rss_max_mib": round(max(r["rss"] for r in rows) / mib, 1),
            "uss_first_mib": round(rows[0]["uss"] / mib, 1),
            "uss_last_mib": round(rows[-1]["uss"] / mib, 1),
            "rss_slope_mib_per_1000_rollouts": slope("rss", 2),
            "uss_slope_mib_per_1000_rollouts": slope("uss", 2),
            "trace_data_entries_last": rows[-1]["trace_data_entries"],
            "trace_data_mib_last": round(rows[-1]["trace_data_bytes"] / mib, 2),
            "trace_data_slope_mib_per_1000_rollouts": slope("trace_data_bytes", 3),
            "python_blocks_first": rows[0].get("python_blocks"),
            "python_blocks_last": rows[-1].get("python_blocks"),
            "sqlite_mib_first": in_mib(rows[0], "sqlite_bytes", 2),
            "sqlite_mib_last": in_mib(rows[-1], "sqlite_bytes", 2),
            "malloc_in_use_mib_first": in_mib(rows[0], "malloc_in_use", 1),
            "malloc_in_use_mib_last": in_mib(rows[-1], "malloc_in_use", 1),
            "malloc_free_mib_last": in_mib(rows[-1], "malloc_free", 1),
            "threads_first": rows[0]["threads"],
            "threads_last": rows[-1]["threads"],
        }
        traced = [r for r in rows if "grown_since_baseline" in r]
        if traced:
            baseline_at = next(r["rollouts"] for r in rows if "traced_bytes" in r and r["rollouts"] > 0)
            report[path.stem]["tracemalloc"] = {
                "baseline_at_rollouts": baseline_at,
                "last_at_rollouts": traced[-1]["rollouts"],
                "traced_mib_per_sample": [
                    [r["rollouts"], in_mib(r, "traced_bytes", 2)] for r in rows if "traced_bytes" in r
                ],
                "top_growth_sites": traced[-1]["grown_since_baseline"],
            }
    return report
