"""AgentOSRunner's own cost per rollout and per governed call, in instructions and CPU time.

Run it on demand (pytest does not collect ``tests/benchmarks``)::

    python tests/benchmarks/bench_runner_overhead.py                      # callgrind, then native
    python tests/benchmarks/bench_runner_overhead.py --tree <checkout>    # another checkout's contrib
    python tests/benchmarks/bench_runner_overhead.py --no-callgrind --rounds 30

``bench_runner_throughput.py`` measures throughput with a realistic mix of new queries; on this
shared 2-CPU machine its wall clock swings more than the runner's own cost. This script isolates
that cost. Every arm has its own runner, its own ``InMemoryLightningStore`` and the default
``AgentOpsTracer``; the agent runs ``k`` calls of a tool (one SQLite query against a small real
database, one connection per call) and returns the reward 1.0, with no model time:

* ``plain k`` -- ``agentlightning.LitAgentRunner``; the tool is the plain function;
* ``governed k`` -- ``AgentOSRunner(GovernanceKernel([SQLPolicy(deny=[...], dialect="sqlite")]),
  log_violations=False)``; the tool is ``governed_tool("database_query", fn)``. With ``--audit``
  the kernel keeps a durable audit trail (``recorder=<tmp>/audit.db``, ``synchronous=FULL``: every
  decision committed before its call runs), the configuration in which the runner's throughput is compared
  with the plain runner's in docs/performance.md.

* ``alone k`` (with ``--audit --outcome-alone``, for ``k`` > 0) -- ``governed k`` with a pause of
  ``ALONE_PAUSE_S`` (twice the outcome's linger, see below) after each rollout, as model time
  would: each call's outcome is then committed alone, by the trail's committer thread. The pause
  is idle (no instructions, no CPU) but in the arm's wall time.

for ``k`` in ``--calls`` (0, 1 and 10 by default). The query is the same text every time
(``--first-seen``: a new one every call), so the kernel answers from its cache and what is left
is the runner's per-call work: binding, the frozen action, the record, the check's bookkeeping,
the held-back span. Rollouts are driven with ``await runner.step(task)``, as in
``bench_runner_throughput.py``.

Two measurements, side by side:

* **callgrind** (default; needs the Debian package ``valgrind`` and a C compiler): the script runs
  itself under ``valgrind --tool=callgrind`` with ``PYTHONHASHSEED=0``; after the imports, the
  set-up and a warm-up of every arm, each arm's batch of ``--count`` rollouts is one marked region
  (``callgrind_regions``), so only the rollouts count, on every thread: the tracer's span
  processor and the audit trail's committer too (regions used to count only the thread that
  opened them, so work another thread did was missing). An empty region's count is subtracted.
  Instructions are user space: the kernel's side of a system call (an fsync's) is not in them.
* **native**: ``--rounds`` rounds; in each, every arm runs ``--rollouts`` rollouts, in an order
  that rotates from round to round, with a garbage collection (untimed) before each batch. Per
  arm: the process's CPU time per rollout (``time.process_time``: every thread), median over
  rounds; the wall time per rollout, median over rounds; and the **paired ratio**, governed
  rollouts/s over plain rollouts/s with the same ``k`` in the same round (median [min-max]).

**The outcome's commit.** The audit records an allowed call's outcome (its result) after the call
ran; nothing waits for it. It shares the commit of the trail's next decision, or is committed alone
by the trail's committer thread ``OUTCOME_LINGER_S`` (50 ms) after it was queued when no decision
comes first. Rollouts run back to back natively share: the next rollout's check comes a few
milliseconds later (one commit per rollout with one call, counted). Under callgrind, which runs the
program over ten times slower, a rollout takes longer than 50 ms, so every outcome was committed
alone (two commits per rollout, counted): the count measured a commit the native run does not
make. So under callgrind the ``governed`` arms give the outcome ``CALLGRIND_OUTCOME_LINGER_S`` to
find its next decision, which reproduces the native commits; the ``alone`` arms measure the other
case, the one of a rollout with more than 50 ms between its calls (model time). Both print the
trail's **commits per rollout**, counted in a separate pass after the measurements (not in them),
so one can see which commits a figure holds.

Derived rows: **per rollout** -- governed 0 minus plain 0 (what a governed rollout costs before
any call); **per governed call** -- the slope over ``k`` of (governed k minus plain k), a
least-squares fit over the ``--calls`` values. The load average is printed before and after.
Nothing is asserted; the targets are stated in docs/performance.md.
"""

from __future__ import annotations

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("AGENTOPS_LOGGING_TO_FILE", "False")
os.environ.setdefault("AGENTOPS_LOG_LEVEL", "ERROR")

import argparse  # noqa: E402
import asyncio  # noqa: E402
import gc  # noqa: E402
import importlib.util  # noqa: E402
import json  # noqa: E402
import logging  # noqa: E402
import random  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple  # noqa: E402

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))

from bench_common import print_table, require_at_least  # noqa: E402
from callgrind_regions import instrument, on_valgrind, region, run_counted  # noqa: E402

TOOL = "database_query"
DENY = ["DROP", "DELETE", "TRUNCATE"]
REPEATED_QUERY = "SELECT id, name, price FROM products WHERE category = 'books' ORDER BY price LIMIT 5"
WARMUP_ROLLOUTS = 10
#: Under callgrind, how long a queued outcome waits for the next decision's commit (the product's
#: 50 ms, scaled by more than callgrind's slowdown): the commits of a native run (see the docstring).
CALLGRIND_OUTCOME_LINGER_S = 30.0
#: The ``alone`` arms' pause after each rollout (twice the product's outcome linger of 50 ms).
ALONE_PAUSE_S = 0.1
#: Rollouts per arm of the pass that counts the audit's commits.
COMMIT_COUNT_ROLLOUTS = 20


def load_contrib(tree: Path) -> None:
    """Import ``agentlightning.contrib`` from the checkout ``tree``, whatever the venv maps it to."""
    import agentlightning  # noqa: F401

    package = tree / "contrib" / "agentlightning" / "contrib"
    spec = importlib.util.spec_from_file_location(
        "agentlightning.contrib", package / "__init__.py", submodule_search_locations=[str(package)]
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["agentlightning.contrib"] = module
    spec.loader.exec_module(module)


@dataclass
class Arm:
    label: str
    calls: int
    governed: bool
    runner: Any
    store: Any
    kind: str = ""  # "plain", "governed" or "alone" (the outcome committed alone)
    outcome_linger_s: Optional[float] = None  # the audit's OUTCOME_LINGER_S while it runs (None: the product's)
    pause_s: float = 0.0  # idle after each rollout (the ``alone`` arms)
    cpu_ms: List[float] = field(default_factory=list)  # per rollout, one per counted round
    wall_ms: List[float] = field(default_factory=list)  # per rollout, one per counted round
    failed: int = 0


class CallingAgent:
    """Built lazily (agentlightning is imported after ``--tree`` is loaded)."""

    @staticmethod
    def make(tool: Callable[..., Any]) -> Any:
        import agentlightning as agl

        class Agent(agl.LitAgent):
            """Calls ``tool`` once per query of its task; reward 1.0."""

            def rollout(self, task: Dict[str, Any], resources: Any, rollout: Any) -> float:
                for query in task["queries"]:
                    tool(query, db=task["db"])
                return 1.0

        return Agent()


class Bench:
    """The arms and their tasks, in one event loop."""

    def __init__(
        self,
        calls: Sequence[int],
        first_seen: bool,
        tmp: Path,
        seed: int,
        audit: bool = False,
        outcome_alone: bool = False,
        outcome_linger_s: Optional[float] = None,
    ) -> None:
        self.audit = audit
        self.outcome_alone = outcome_alone and audit
        self.outcome_linger_s = outcome_linger_s  # the governed arms' (None: the product's)
        self.calls = list(calls)
        self.first_seen = first_seen
        self.tmp = tmp
        self.random = random.Random(seed)
        self.arms: List[Arm] = []
        self.kernel: Any = None

    async def start(self) -> None:
        from bench_runner_throughput import build_database, run_sql

        import agentlightning as agl
        from agentlightning.store.memory import InMemoryLightningStore

        from agentlightning.contrib.kernel.agentos import GovernanceKernel, SQLPolicy
        from agentlightning.contrib.runner.agentos import AgentOSRunner, governed_tool

        self.db = self.tmp / "shop.db"
        build_database(self.db, 0)
        governed = governed_tool(TOOL, run_sql)
        recorder = self.tmp / "audit.db" if self.audit else None
        self.kernel = GovernanceKernel([SQLPolicy(deny=DENY, dialect="sqlite")], recorder=recorder)
        for calls in self.calls:
            kinds = ["plain", "governed"] + (["alone"] if self.outcome_alone and calls > 0 else [])
            for kind in kinds:
                if kind == "plain":
                    runner = agl.LitAgentRunner(agl.AgentOpsTracer())
                    agent = CallingAgent.make(run_sql)
                else:
                    runner = AgentOSRunner(self.kernel, log_violations=False)
                    agent = CallingAgent.make(governed)
                store = InMemoryLightningStore()
                await store.add_resources({"prompt": agl.PromptTemplate(template="{q}", engine="f-string")})
                runner.init(agent)
                runner.init_worker(0, store)
                linger = self.outcome_linger_s if kind == "governed" else None
                pause = ALONE_PAUSE_S if kind == "alone" else 0.0
                self.arms.append(Arm(f"{kind} {calls}", calls, kind != "plain", runner, store, kind, linger, pause))

    def tasks(self, calls: int, count: int) -> List[Dict[str, Any]]:
        from bench_runner_throughput import read_query

        def query() -> str:
            return read_query(self.random) if self.first_seen else REPEATED_QUERY

        return [{"db": str(self.db), "queries": [query() for _ in range(calls)]} for _ in range(count)]

    async def run(self, arm: Arm, tasks: Sequence[Dict[str, Any]]) -> None:
        self.set_outcome_linger(arm)
        for task in tasks:
            rollout = await arm.runner.step(task)
            arm.failed += rollout.status != "succeeded"
            if arm.pause_s:
                await asyncio.sleep(arm.pause_s)

    async def timed(self, arm: Arm, tasks: Sequence[Dict[str, Any]]) -> None:
        gc.collect()
        cpu, wall = time.process_time(), time.perf_counter()
        await self.run(arm, tasks)
        arm.wall_ms.append((time.perf_counter() - wall) / len(tasks) * 1e3)
        arm.cpu_ms.append((time.process_time() - cpu) / len(tasks) * 1e3)

    def set_outcome_linger(self, arm: Arm) -> None:
        """The audit's outcome linger while ``arm`` runs (the product's, unless the arm sets one)."""
        if self.audit and arm.governed:
            from agentlightning.contrib.kernel.agentos.audit import trail

            if not hasattr(self, "product_linger_s"):
                self.product_linger_s = trail.OUTCOME_LINGER_S
            linger = self.product_linger_s if arm.outcome_linger_s is None else arm.outcome_linger_s
            if trail.OUTCOME_LINGER_S != linger:
                trail.OUTCOME_LINGER_S = linger
                audit = getattr(self.kernel, "audit", None)
                wakes = getattr(audit, "_committer_wakes", None)
                if wakes is not None:  # the committer's wait was timed by the previous linger: it times it anew
                    with wakes:
                        wakes.notify()

    async def commits_per_rollout(self, arm: Arm, count: int = COMMIT_COUNT_ROLLOUTS) -> float:
        """The audit's commits per rollout of ``arm`` over ``count`` rollouts (outside any measurement:
        the trail's transaction is wrapped to count it; the last rollout's outcome, committed after
        the count, is not in it)."""
        audit = getattr(self.kernel, "audit", None)
        if not (self.audit and arm.governed) or audit is None:
            return 0.0
        audit.flush()
        commits = [0]
        transaction = audit._transaction

        def counted(*args: Any, **kwargs: Any) -> Any:
            commits[0] += 1
            return transaction(*args, **kwargs)

        audit._transaction = counted
        try:
            await self.run(arm, self.tasks(arm.calls, count))
        finally:
            del audit._transaction
        audit.flush()
        return commits[0] / count

    def stop(self) -> None:
        for arm in self.arms:
            arm.runner.teardown_worker(0)
            arm.runner.teardown()
        self.kernel.close()


# ----------------------------------------------------------------------------- the two measurements
async def count_child(calls: Sequence[int], count: int, first_seen: bool, audit: bool, outcome_alone: bool) -> None:
    """Under callgrind: one region per arm, ``count`` rollouts each; then the audit's commits per
    rollout of each governed arm, written as ``commits <label> <n>`` lines to the file ``COMMITS_FILE``."""
    with tempfile.TemporaryDirectory(prefix="bench-runner-overhead-", dir=".") as tmp:
        bench = Bench(calls, first_seen, Path(tmp), 0, audit, outcome_alone, CALLGRIND_OUTCOME_LINGER_S)
        await bench.start()
        for arm in bench.arms:
            await bench.run(arm, bench.tasks(arm.calls, WARMUP_ROLLOUTS))
        instrument()
        with region("empty"):
            pass
        for arm in bench.arms:
            tasks = bench.tasks(arm.calls, count)
            await bench.run(arm, bench.tasks(arm.calls, 3))
            gc.collect()
            with region(f"{arm.label}|{count}"):
                await bench.run(arm, tasks)
        commits = {arm.label: await bench.commits_per_rollout(arm) for arm in bench.arms if arm.governed}
        bench.stop()
    if os.environ.get("COMMITS_FILE"):
        Path(os.environ["COMMITS_FILE"]).write_text("".join(f"commits {k}|{v}\n" for k, v in commits.items()))


async def native(
    calls: Sequence[int], rounds: int, rollouts: int, first_seen: bool, seed: int, audit: bool, outcome_alone: bool
) -> Tuple[List[Arm], Dict[str, float]]:
    with tempfile.TemporaryDirectory(prefix="bench-runner-overhead-", dir=".") as tmp:
        bench = Bench(calls, first_seen, Path(tmp), seed, audit, outcome_alone)
        await bench.start()
        for arm in bench.arms:
            await bench.run(arm, bench.tasks(arm.calls, WARMUP_ROLLOUTS))
        for index in range(rounds):
            shift = index % len(bench.arms)
            for arm in (*bench.arms[shift:], *bench.arms[:shift]):
                await bench.timed(arm, bench.tasks(arm.calls, rollouts))
        commits = {arm.label: await bench.commits_per_rollout(arm) for arm in bench.arms if arm.governed}
        bench.stop()
        return bench.arms, commits


def slope(points: Sequence[Tuple[float, float]]) -> float:
    """Least-squares slope of ``(x, y)`` points."""
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    return sum((x - mx) * (y - my) for x, y in points) / sum((x - mx) ** 2 for x in xs)


def derived(per_arm: Dict[Tuple[str, int], float], calls: Sequence[int]) -> Tuple[float, float]:
    """(governed 0 - plain 0, slope over k of governed k - plain k)."""
    extra = [(k, per_arm[("governed", k)] - per_arm[("plain", k)]) for k in calls]
    fixed = dict(extra).get(0, float("nan"))
    return fixed, slope(extra) if len(calls) > 1 else float("nan")


def main(argv: Optional[Sequence[str]] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, nargs="+", default=[0, 1, 10], help="governed calls per rollout")
    parser.add_argument("--count", type=int, default=20, help="rollouts per arm under callgrind (default: 20)")
    parser.add_argument("--rounds", type=int, default=15, help="native rounds (default: 15)")
    parser.add_argument("--rollouts", type=int, default=30, help="native rollouts per arm per round (default: 30)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the first-seen queries (default: 0)")
    parser.add_argument("--first-seen", action="store_true", help="a new query every call (the parse counts)")
    parser.add_argument("--audit", action="store_true", help="the governed kernel keeps a durable audit trail")
    parser.add_argument(
        "--outcome-alone",
        action="store_true",
        help="with --audit: also the arms whose calls' outcomes are each committed alone (see the docstring)",
    )
    parser.add_argument("--tree", type=Path, default=ROOT, help="the checkout whose contrib is measured")
    parser.add_argument("--no-callgrind", action="store_true", help="native figures only")
    parser.add_argument("--no-native", action="store_true", help="callgrind figures only")
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write the figures to this JSON file")
    parser.add_argument("--child-count", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    require_at_least(parser, args, count=1, rounds=1, rollouts=1)
    if any(k < 0 for k in args.calls) or len(set(args.calls)) != len(args.calls):
        parser.error("--calls must be distinct numbers >= 0")
    logging.getLogger("agentlightning").setLevel(logging.ERROR)
    tree = args.tree.resolve()
    load_contrib(tree)

    if args.child_count:
        if not on_valgrind():
            raise SystemExit("--child-count runs under valgrind only (the parent starts it)")
        asyncio.run(count_child(args.calls, args.count, args.first_seen, args.audit, args.outcome_alone))
        return

    load_before = os.getloadavg()
    instructions: Dict[Tuple[str, int], float] = {}
    commits_callgrind: Dict[str, float] = {}
    if not args.no_callgrind:
        with tempfile.TemporaryDirectory(prefix="bench-runner-overhead-commits-") as scratch:
            commits_file = Path(scratch) / "commits"
            env = dict(
                os.environ, PYTHONHASHSEED="0", LITELLM_LOCAL_MODEL_COST_MAP="True", COMMITS_FILE=str(commits_file)
            )
            command = [sys.executable, str(Path(__file__)), "--child-count", "--count", str(args.count)]
            command += ["--tree", str(tree), "--calls", *map(str, args.calls)]
            command += ["--first-seen"] if args.first_seen else []
            command += ["--audit"] if args.audit else []
            command += ["--outcome-alone"] if args.outcome_alone else []
            raw = run_counted(command, env)
            if commits_file.exists():
                for line in commits_file.read_text().splitlines():
                    label, value = line.removeprefix("commits ").rsplit("|", 1)
                    commits_callgrind[label] = float(value)
        empty = raw.pop("empty", 0)
        for label, total in raw.items():
            name, count = label.rsplit("|", 1)
            kind, calls = name.split()
            instructions[(kind, int(calls))] = (total - empty) / int(count)
    load_middle = os.getloadavg()
    arms: List[Arm] = []
    commits_native: Dict[str, float] = {}
    if not args.no_native:
        arms, commits_native = asyncio.run(
            native(args.calls, args.rounds, args.rollouts, args.first_seen, args.seed, args.audit, args.outcome_alone)
        )
    load_after = os.getloadavg()

    cpu = {(a.kind, a.calls): statistics.median(a.cpu_ms) for a in arms}
    wall = {(a.kind, a.calls): statistics.median(a.wall_ms) for a in arms}
    paired: Dict[Tuple[str, int], List[float]] = {}
    for arm in arms:
        plain = next(p for p in arms if not p.governed and p.calls == arm.calls)
        paired[(arm.kind, arm.calls)] = [p / a for a, p in zip(arm.wall_ms, plain.wall_ms, strict=True)]

    print(
        f"tree {tree}; query {'new every call' if args.first_seen else 'repeated (cache hit)'}; "
        f"{'durable audit' if args.audit else 'no audit'}; "
        f"load average (1, 5, 15 min): before {load_before}, after callgrind {load_middle}, after native {load_after}"
    )
    kinds = ["plain", "governed"] + (["alone"] if args.outcome_alone and args.audit else [])
    keys = [(kind, k) for k in args.calls for kind in kinds if not (kind == "alone" and k == 0)]
    rows = []
    for key in keys:
        label = f"{key[0]} {key[1]}"
        ratio = paired.get(key)
        rows.append(
            [
                label,
                f"{instructions[key] / 1e6:.3f}" if key in instructions else "-",
                f"{instructions[('plain', key[1])] / instructions[key]:.3f}" if key in instructions else "-",
                f"{cpu[key]:.3f}" if key in cpu else "-",
                f"{wall[key]:.3f}" if key in wall else "-",
                f"{statistics.median(ratio):.3f} [{min(ratio):.2f}-{max(ratio):.2f}]" if ratio else "-",
                f"{commits_callgrind[label]:.2f}" if label in commits_callgrind else "-",
                f"{commits_native[label]:.2f}" if label in commits_native else "-",
            ]
        )
    print_table(
        [
            "arm (calls/rollout)",
            "M instr/rollout",
            "plain/arm (instr)",
            "CPU ms/rollout",
            "wall ms/rollout",
            "paired",
            "commits (callgrind)",
            "commits (native)",
        ],
        rows,
    )
    summary: Dict[str, Any] = {}
    for name, figures, unit in (("instructions", instructions, 1.0), ("cpu_ms", cpu, 1.0), ("wall_ms", wall, 1.0)):
        if figures:
            fixed, per_call = derived(figures, args.calls)
            summary[name] = {"per_rollout": fixed * unit, "per_call": per_call * unit}
    print()
    if "instructions" in summary:
        print(
            f"instructions: governed over plain per rollout, no call {summary['instructions']['per_rollout']:,.0f}; "
            f"per governed call (slope) {summary['instructions']['per_call']:,.0f}"
        )
    if "cpu_ms" in summary:
        print(
            f"CPU: governed over plain per rollout with no call {summary['cpu_ms']['per_rollout']:+.3f} ms; "
            f"per governed call (slope) {summary['cpu_ms']['per_call']:+.3f} ms"
        )
    failed = sum(a.failed for a in arms)
    if arms:
        print(f"rollouts that did not succeed: {failed}")
    if args.json is not None:
        args.json.write_text(
            json.dumps(
                {
                    "settings": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
                    "load": {"before": load_before, "after_callgrind": load_middle, "after": load_after},
                    "instructions_per_rollout": {f"{kind} {k}": v for (kind, k), v in instructions.items()},
                    "cpu_ms_per_rollout": {f"{kind} {k}": v for (kind, k), v in cpu.items()},
                    "wall_ms_per_rollout": {f"{kind} {k}": v for (kind, k), v in wall.items()},
                    "paired_ratio_median": {f"{kind} {k}": statistics.median(v) for (kind, k), v in paired.items()},
                    "audit_commits_per_rollout": {"callgrind": commits_callgrind, "native": commits_native},
                    "derived": summary,
                    "failed_rollouts": failed,
                },
                indent=2,
            )
            + "\n"
        )


if __name__ == "__main__":
    main()
