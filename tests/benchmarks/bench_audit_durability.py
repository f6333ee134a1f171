"""The durable audit trail against SQLite's own per-commit floor, before and after, in one run.

Run it on demand (pytest does not collect ``tests/benchmarks``)::

    python tests/benchmarks/bench_audit_durability.py                    # 1 and 8 threads
    python tests/benchmarks/bench_audit_durability.py --n 3000 --threads 1 8 --rounds 3 --base <commit>
    python tests/benchmarks/bench_audit_durability.py --n 500 --rounds 3 --disk quiet contended
    python tests/benchmarks/bench_audit_durability.py --callgrind --n 200   # instructions per decision

Rows, interleaved in rounds (``--rounds``) so a noisy shared machine slows them alike:

* ``SQLite floor, plain table`` -- one thread, WAL, ``synchronous=FULL``, one 400-byte row per
  commit into a table with nothing but its rowid: SQLite's own per-commit floor on this disk.
* ``SQLite floor, audit_log table`` -- the same into the FlightRecorder's own table (its unique
  trace id, three indexes and AUTOINCREMENT), with a row of the audit's size: the floor for a
  record in the store of record's format.
* ``before (<base>)`` -- ``AuditTrail`` of the audit at ``--base`` (its files loaded from git: ``audit/``
  or, before that room, ``audit*.py``), durable; under ``--callgrind`` also sealed with a key.
* ``durable (default)`` / ``durable, writer thread`` / ``durable, sealed (key)`` -- this tree's
  ``AuditTrail``, ``synchronous=FULL``: committing on the checking threads (the default), by its
  writer thread (``committer="thread"``), and sealed with a key.

``--disk quiet contended`` runs every row twice: as is, then while another process writes 4 KB
and fsyncs it in a loop on the same file system (the disk shared with other jobs' fsyncs).
``--busy-cpus 2`` keeps both CPUs of the project's 2-CPU VM from idling (processes spinning at
nice 19, which take CPU only when nothing else wants it): there a commit whose fsync completes
while every CPU idles returned after about 4 ms, against 0.16-0.23 ms with a CPU busy, so without
them a row's rate depends on whether its own threads happened to keep a CPU busy.
``--simulated-fsync 128 70`` replaces every fsync of the process (preloaded with ``LD_PRELOAD``)
by 128 us of CPU and a 70 us sleep: a disk of fixed latency without other jobs' stalls, so that
the pipeline of group commit can be compared on a shared machine (with ``--dir`` on tmpfs).

Each audit row is one kernel (``SQLPolicy(deny=["DROP"])``, parse cache warm, one decision in ten
blocked) whose ``T`` threads make ``--n`` checks in all, each recorded and committed before it
returns. Figures: decisions per second (wall), **CPU per decision** (the process's CPU time, every
thread, over the decisions: a committer thread, SQLite and the kernel's system calls included), the
process's context switches per decision (voluntary and involuntary: a hand-off between threads
costs two or more), the records per commit (the decisions over the trail's transactions; the
floors commit one each),
and the median and p99 latency of the allowed checks (of each commit, for the floors). The
summary states the targets' ratios: one writer against the floor, by throughput and by median
latency (which a disk shared with other jobs' fsyncs disturbs less than the throughput: a few
stalls of tens of milliseconds halve a row's rate), 8 threads against one, and the CPU the audit
adds beyond the floor's own CPU per commit. Timing targets are not asserted.
"""

from __future__ import annotations

import argparse
import atexit
import hashlib
import importlib
import json
import os
import re
import resource
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import types
import uuid
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional

sys.path.insert(0, str(Path(__file__).resolve().parent))

from agent_os import FlightRecorder  # noqa: E402
from bench_common import print_table  # noqa: E402
from callgrind_regions import instrument, region, run_counted  # noqa: E402

from agentlightning.contrib.kernel.agentos import Action, GovernanceKernel, SQLPolicy  # noqa: E402
from agentlightning.contrib.kernel.agentos.audit import AuditTrail, open_flight_recorder  # noqa: E402

BASE = "ee006cb"
KERNEL_PACKAGE = "agentlightning.contrib.kernel.agentos"
KERNEL_DIR = "contrib/agentlightning/contrib/kernel/agentos"
ROW_CHARS = 400  # about a record's tool_args here (the query, the envelope)


def _is_audit_file(relative: str) -> bool:
    """A file of the audit in either layout: the audit room ``audit/`` or, before it, ``audit*.py``."""
    return relative.startswith("audit/") or (relative.startswith("audit") and "/" not in relative)


def trail_before(base: str) -> Callable[..., Any]:
    """The ``AuditTrail`` class of the audit at commit ``base``, with that commit's record, seal and signing.

    The commit's audit files (``kernel/agentos/audit/`` or, before the room, ``kernel/agentos/audit*.py``)
    are copied from git into a directory that is the path of a package of their own, so their relative
    imports among themselves find that commit's files whichever layout it has. What they import from
    outside the audit (``actions``, ``violations``) is this tree's module, so the kernel's decisions are
    the classes the old trail checks them against."""
    root = Path(__file__).resolve().parents[2]

    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True).stdout

    relatives = [p[len(KERNEL_DIR) + 1 :] for p in git("ls-tree", "-r", "--name-only", base, KERNEL_DIR + "/").split()]
    audit_files = [r for r in relatives if r.endswith(".py") and _is_audit_file(r)]
    if not audit_files:
        raise SystemExit(f"--base {base}: no audit files under {KERNEL_DIR}")
    directory = Path(tempfile.mkdtemp(prefix=f"audit-{base}-"))
    atexit.register(shutil.rmtree, directory, True)
    outside = set()
    for relative in audit_files:
        source = git("show", f"{base}:{KERNEL_DIR}/{relative}")
        (directory / relative).parent.mkdir(parents=True, exist_ok=True)
        (directory / relative).write_text(source)
        depth = relative.count("/")  # dots that lead back to the kernel package: 1 at its top, 2 in audit/
        for dots, name in re.findall(r"^\s*from (\.+)(\w+)", source, flags=re.M):
            if len(dots) == depth + 1 and not _is_audit_file(name):
                outside.add(name)
    name = f"{KERNEL_PACKAGE}._audit_before"
    package = types.ModuleType(name)
    package.__path__ = [str(directory)]
    sys.modules[name] = package
    for module in outside:
        sys.modules[f"{name}.{module}"] = importlib.import_module(f"{KERNEL_PACKAGE}.{module}")
    trail = "audit.trail" if (directory / "audit").is_dir() else "audit"
    return importlib.import_module(f"{name}.{trail}").AuditTrail


def floor_writer(directory: Path, n: int, audit_table: bool) -> Callable[[], None]:
    """SQLite alone: a function that makes ``n`` commits of one row each, WAL, synchronous=FULL."""
    path = directory / f"floor-{time.monotonic_ns()}.db"
    if audit_table:
        FlightRecorder(db_path=str(path)).close()  # its schema, as the trail writes into it
    conn = sqlite3.connect(str(path), isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=FULL")
    text, digest = "x" * ROW_CHARS, "0" * 64
    if audit_table:
        sql = (
            "INSERT INTO audit_log (trace_id, timestamp, agent_id, tool_name, tool_args, policy_verdict, "
            "entry_hash, previous_hash, content_hash) VALUES (?, ?, 'agent', 'database_query', ?, 'allowed', ?, ?, ?)"
        )
    else:
        conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, x TEXT)")
        sql = "INSERT INTO t (x) VALUES (?)"
    rows = [
        (str(uuid.uuid4()), datetime.now(timezone.utc).isoformat(), text, digest, digest, digest)
        if audit_table
        else (text,)
        for _ in range(n)
    ]

    def commit_each(latencies: Optional[List[int]] = None) -> None:
        for row in rows:
            began = time.perf_counter_ns()
            conn.execute("BEGIN IMMEDIATE")
            conn.execute(sql, row)
            conn.execute("COMMIT")
            if latencies is not None:
                latencies.append(time.perf_counter_ns() - began)
        conn.close()

    return commit_each


def floor_row(directory: Path, n: int, audit_table: bool) -> Dict[str, Any]:
    commit_each = floor_writer(directory, n, audit_table)
    latencies: List[int] = []
    switches, cpu, began = context_switches(), time.process_time(), time.perf_counter()
    commit_each(latencies)
    wall, cpu = time.perf_counter() - began, time.process_time() - cpu
    switches = context_switches() - switches
    return {"allowed": latencies, "decisions": n, "wall": wall, "cpu": cpu, "records": n, "switches": switches}


def context_switches() -> int:
    """The process's context switches so far, voluntary and involuntary, every thread."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_nvcsw + usage.ru_nivcsw


def audit_row(make_trail: Callable[[Path], Any], directory: Path, n: int, threads: int) -> Dict[str, Any]:
    path = directory / f"audit-{time.monotonic_ns()}.db"
    policy = SQLPolicy(deny=["DROP"])
    kernel = GovernanceKernel([policy])
    kernel.audit = trail = make_trail(path)
    commits = [0]
    transaction = getattr(trail, "_transaction", None)  # one call per commit (absent in older trails)

    def counted_transaction(*args: Any) -> Any:
        commits[0] += 1
        return transaction(*args)

    if transaction is not None:
        trail._transaction = counted_transaction  # on the instance: this tree's trail and --base's alike
    queries = [Action.sql("DROP TABLE t" if i % 10 == 9 else f"SELECT {i % 10} FROM t") for i in range(10)]
    for action in queries:
        kernel.check(action)  # the parse cache warm
    commits[0] = 0
    per_thread = n // threads
    latencies: List[List[int]] = [[] for _ in range(threads)]
    start = threading.Barrier(threads + 1)

    def work(index: int) -> None:
        out = latencies[index]
        start.wait()
        for i in range(per_thread):
            action = queries[(i + index) % 10]
            began = time.perf_counter_ns()
            decision = kernel.check(action)
            took = time.perf_counter_ns() - began
            if decision.allowed:
                out.append(took)

    workers = [threading.Thread(target=work, args=(i,)) for i in range(threads)]
    for worker in workers:
        worker.start()
    start.wait()
    switches, cpu, began = context_switches(), time.process_time(), time.perf_counter()
    for worker in workers:
        worker.join()
    wall, cpu = time.perf_counter() - began, time.process_time() - cpu
    switches = context_switches() - switches
    committed = commits[0]
    kernel.audit.close()
    conn = sqlite3.connect(str(path))
    records = conn.execute("SELECT COUNT(*) FROM audit_log").fetchone()[0]
    conn.close()
    allowed = sorted(x for out in latencies for x in out)
    timed = per_thread * threads
    return {
        "allowed": allowed,
        "decisions": timed + len(queries),
        "wall": wall,
        "cpu": cpu,
        "records": records,
        "timed": timed,
        "switches": switches,
        "commits": committed if transaction is not None else None,
    }


def counted(base: str, n: int) -> None:
    """Under callgrind: one region per trail, ``n`` decisions each; every thread counts (a
    committer thread's work, SQLite and its system-call wrappers; not the kernel's side of the calls)."""
    before = trail_before(base)
    directory = Path(tempfile.mkdtemp(prefix="bench-audit-cg-", dir="."))
    queries = [Action.sql("DROP TABLE t" if i % 10 == 9 else f"SELECT {i % 10} FROM t") for i in range(10)]
    kernels = {"check alone (no audit)": GovernanceKernel([SQLPolicy(deny=["DROP"])])}
    for name, make in (
        (f"before ({base}), durable", lambda p: before(open_flight_recorder(p))),
        ("durable (default)", lambda p: AuditTrail(open_flight_recorder(p))),
        ("durable, writer thread", lambda p: AuditTrail(open_flight_recorder(p), committer="thread")),
        (f"before ({base}), sealed (key)", lambda p: before(open_flight_recorder(p), key="k" * 64)),
        ("durable, sealed (key)", lambda p: AuditTrail(open_flight_recorder(p), key="k" * 64)),
    ):
        kernels[name] = GovernanceKernel([SQLPolicy(deny=["DROP"])])
        kernels[name].audit = make(directory / f"{len(kernels)}.db")
    for kernel in kernels.values():
        for i in range(50):
            kernel.check(queries[i % 10])
    floors = {
        "SQLite floor, plain table": floor_writer(directory, n, False),
        "SQLite floor, audit_log table": floor_writer(directory, n, True),
    }
    instrument()
    with region("empty"):
        pass
    for name, commit_each in floors.items():
        with region(name):
            commit_each()
    for name, kernel in kernels.items():
        with region(name):
            for i in range(n):
                kernel.check(queries[i % 10])
    for kernel in kernels.values():
        kernel.close()


def callgrind_table(base: str, n: int) -> Dict[str, float]:
    env = dict(os.environ, PYTHONHASHSEED="0")
    counts = run_counted([sys.executable, __file__, "--counted", "--base", base, "--n", str(n)], env)
    empty = counts.pop("empty", 0)
    per = {name: (total - empty) / n for name, total in counts.items()}
    alone = per["check alone (no audit)"]
    rows = [
        [
            name,
            f"{value / 1000:,.1f} k",
            "(a commit)" if name.startswith("SQLite") else f"{(value - alone) / 1000:+,.1f} k",
        ]
        for name, value in per.items()
        if value != alone
    ]
    print(f"\ninstructions per decision under callgrind (user space, every thread; {n} decisions per row)")
    print_table(["", "instructions", "the audit's part"], rows)
    return per


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=2000, help="decisions per row and round")
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 8])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument(
        "--disk",
        nargs="+",
        choices=["quiet", "contended"],
        default=["quiet"],
        help="contended: another process writes and fsyncs a file in a loop on the same file system meanwhile",
    )
    parser.add_argument("--dir", default=None, help="where the files go (default: a temp dir under the cwd)")
    parser.add_argument(
        "--busy-cpus",
        type=int,
        default=0,
        help="this many processes spin at nice 19 meanwhile, so no CPU idles while a commit waits for its fsync "
        "(on the 2-CPU VM a commit that waited with the CPUs idle took 4 ms, 0.16-0.23 ms with them busy)",
    )
    parser.add_argument("--base", default=BASE, help="the commit whose AuditTrail is 'before'")
    parser.add_argument(
        "--simulated-fsync",
        nargs=2,
        type=int,
        metavar=("SPIN_US", "SLEEP_US"),
        default=None,
        help="every fsync of the process spins SPIN_US and sleeps SLEEP_US instead of syncing (a disk of fixed "
        "latency, without other jobs' stalls; e.g. 128 70: an ext4 fsync's CPU here, then the device)",
    )
    parser.add_argument("--json", default=None, help="also write the figures to this file")
    parser.add_argument("--callgrind", action="store_true", help="instructions per decision only (valgrind)")
    parser.add_argument("--counted", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.simulated_fsync is not None:
        simulate_fsync(*args.simulated_fsync)
    if args.counted:
        return counted(args.base, args.n)
    if args.callgrind:
        per = callgrind_table(args.base, min(args.n, 300))
        if args.json:
            Path(args.json).write_text(json.dumps({"instructions_per_decision": per}, indent=1))
        return
    directory = Path(args.dir or tempfile.mkdtemp(prefix="bench-audit-", dir="."))
    before = trail_before(args.base)
    audits = {
        f"before ({args.base}), durable": lambda p: before(open_flight_recorder(p)),
        "durable (default)": lambda p: AuditTrail(open_flight_recorder(p)),
        "durable, writer thread": lambda p: AuditTrail(open_flight_recorder(p), committer="thread"),
        "durable, sealed (key)": lambda p: AuditTrail(open_flight_recorder(p), key="k" * 64),
    }
    floors = {"SQLite floor, plain table": False, "SQLite floor, audit_log table": True}
    df = subprocess.run(["df", "-T", str(directory)], capture_output=True, text=True).stdout.splitlines()
    print(f"files in {directory} ({df[-1].split()[1] if df else 'file system unknown'}); load {os.getloadavg()}")
    spinners = [
        subprocess.Popen(["nice", "-n", "19", sys.executable, "-c", "while True: pass"]) for _ in range(args.busy_cpus)
    ]
    atexit.register(lambda: [spinner.kill() for spinner in spinners])
    figures: Dict[str, Dict[str, float]] = {}
    for disk in args.disk:
        contender = start_contender(directory) if disk == "contended" else None
        try:
            for threads in args.threads:
                measure(disk, threads, args, directory, floors, audits, figures)
        finally:
            if contender is not None:
                contender.kill()
                contender.wait()
        summarize(disk, args, floors, figures)
    print(f"\nload at the end {os.getloadavg()}")
    if args.json:
        Path(args.json).write_text(json.dumps({"load": os.getloadavg(), "figures": figures}, indent=1))


#: ``fsync`` and ``fdatasync`` of a disk of fixed latency, preloaded (``LD_PRELOAD``) into the bench's process.
_SIMULATED_FSYNC = r"""
#include <stdlib.h>
#include <time.h>
static long long now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000LL + t.tv_nsec;
}
static int disk(void) {
    static long spin = -1, nap = 0;
    if (spin < 0) { spin = atol(getenv("SIMULATED_FSYNC_SPIN_US")); nap = atol(getenv("SIMULATED_FSYNC_SLEEP_US")); }
    long long end = now() + spin * 1000LL;
    while (now() < end) {}
    struct timespec t = {0, nap * 1000L};
    if (nap > 0) nanosleep(&t, 0);
    return 0;
}
int fdatasync(int fd) { (void)fd; return disk(); }
int fsync(int fd) { (void)fd; return disk(); }
"""


def simulate_fsync(spin_us: int, sleep_us: int) -> None:
    """Run this bench again with every fsync replaced by ``spin_us`` of CPU and ``sleep_us`` of sleep
    (the library compiled with ``cc`` on first use); returns once the process is the preloaded one."""
    if spin_us < 0 or sleep_us < 0 or sleep_us >= 1_000_000:
        raise SystemExit("--simulated-fsync: SPIN_US and SLEEP_US must be >= 0, SLEEP_US under 1,000,000")
    digest = hashlib.sha256(_SIMULATED_FSYNC.encode()).hexdigest()[:16]
    library = Path(tempfile.gettempdir()) / f"bench-audit-simulated-fsync-{digest}.so"
    if os.environ.get("LD_PRELOAD") == str(library):
        return
    if not library.exists():
        source = library.with_suffix(".c")
        source.write_text(_SIMULATED_FSYNC)
        partial = library.with_suffix(f".{os.getpid()}.so")
        subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-o", str(partial), str(source)], check=True)
        partial.replace(library)
    env = dict(
        os.environ,
        LD_PRELOAD=str(library),
        SIMULATED_FSYNC_SPIN_US=str(spin_us),
        SIMULATED_FSYNC_SLEEP_US=str(sleep_us),
    )
    os.execve(sys.executable, [sys.executable, *sys.argv], env)


#: Another process's durable writes: a 4 KB write and an fsync in a loop, on the same file system.
CONTENDER = """
import os, sys
fd = os.open(os.path.join(sys.argv[1], "contender.bin"), os.O_WRONLY | os.O_CREAT, 0o644)
block = os.urandom(4096)
while True:
    os.pwrite(fd, block, 0)
    os.fsync(fd)
"""


def start_contender(directory: Path) -> subprocess.Popen:
    contender = subprocess.Popen([sys.executable, "-c", CONTENDER, str(directory)])
    time.sleep(0.5)  # its fsyncs under way before the first row
    return contender


def measure(
    disk: str,
    threads: int,
    args: argparse.Namespace,
    directory: Path,
    floors: Dict[str, bool],
    audits: Dict[str, Callable[[Path], Any]],
    figures: Dict[str, Dict[str, float]],
) -> None:
    names = ([*floors] if threads == 1 else []) + [*audits]
    results: Dict[str, List[Dict[str, Any]]] = {name: [] for name in names}
    for _ in range(args.rounds):
        for name in names:
            if name in floors:
                results[name].append(floor_row(directory, args.n, floors[name]))
            else:
                results[name].append(audit_row(audits[name], directory, args.n, threads))
    rows = []
    for name, runs in results.items():
        assert all(r["records"] == r["decisions"] for r in runs), f"{name}: records missing"
        timed = sum(r.get("timed", r["decisions"]) for r in runs)
        wall, cpu = sum(r["wall"] for r in runs), sum(r["cpu"] for r in runs)
        allowed = sorted(x for r in runs for x in r["allowed"])
        figure = {
            "per_s": timed / wall,
            "cpu_us": 1e6 * cpu / timed,
            "median_us": statistics.median(allowed) / 1000 if allowed else float("nan"),
            "p99_us": allowed[int(len(allowed) * 0.99)] / 1000 if allowed else float("nan"),
            "switches": sum(r["switches"] for r in runs) / timed,
            "records_per_commit": records_per_commit(runs, timed),
        }
        figures[f"{name} @{threads} {disk}"] = figure
        rows.append(
            [
                name,
                figure["per_s"],
                figure["cpu_us"],
                figure["records_per_commit"],
                figure["switches"],
                figure["median_us"],
                figure["p99_us"],
            ]
        )
    print(
        f"\n{disk} disk, {threads} thread(s), {args.n} decisions x {args.rounds} rounds per row (1 in 10 blocked); "
        f"load {os.getloadavg()[0]:.1f}"
    )
    print_table(
        [
            "",
            "decisions/s",
            "CPU us/decision",
            "records/commit",
            "switches/decision",
            "median latency us",
            "p99 latency us",
        ],
        rows,
    )


def records_per_commit(runs: List[Dict[str, Any]], timed: int) -> float:
    """The decisions over the commits of ``runs`` (a floor's: one each; nan when the trail's were not counted)."""
    commits = [r.get("commits", r["decisions"]) for r in runs]
    return float("nan") if None in commits else timed / max(1, sum(commits))


def summarize(
    disk: str, args: argparse.Namespace, floors: Dict[str, bool], figures: Dict[str, Dict[str, float]]
) -> None:
    """The targets' ratios on ``disk``, for each trail that ran on it."""
    floor = figures.get(f"SQLite floor, audit_log table @1 {disk}")
    if floor is None:
        return
    print(f"\ntargets, {disk} disk (against the audit_log floor, {floor['per_s']:,.0f} commits/s):")
    for name in ("durable (default)", "durable, writer thread", f"before ({args.base}), durable"):
        one = figures.get(f"{name} @1 {disk}")
        if one is None:
            continue
        line = (
            f"  {name}: one writer {one['per_s'] / floor['per_s']:.2f}x the floor (by median latency "
            f"{floor['median_us'] / one['median_us']:.2f}x), CPU {one['cpu_us']:.0f} us per decision"
        )
        for threads in args.threads:
            many = figures.get(f"{name} @{threads} {disk}")
            if threads != 1 and many is not None:
                line += (
                    f"; {threads} threads {many['per_s'] / one['per_s']:.2f}x one writer, "
                    f"CPU {many['cpu_us']:.0f} us per decision"
                )
        print(line)


if __name__ == "__main__":
    main()
