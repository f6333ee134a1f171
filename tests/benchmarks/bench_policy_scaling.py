"""How the cost of a governance decision grows: with the number of rules, and with query length.

Run it on demand (pytest does not collect ``tests/benchmarks``)::

    python tests/benchmarks/bench_policy_scaling.py                         # seed 0, about a minute
    python tests/benchmarks/bench_policy_scaling.py --n 1000 --seed 7 --json /tmp/scaling.json --plot /tmp/scaling.png

Everything is timed per decision with ``time.perf_counter_ns``, in one process. Within a phase
the approaches are interleaved query by query in a rotating order, so a noisy shared machine
slows them all alike; every phase also times a no-op call through the same harness (the floor,
included in every figure). Each approach is warmed up on other queries first. No timing target
is asserted: this only reports.

The garbage collector stays on, as in real use. Before each part's timing, every object alive
after set-up (about a million: agentlightning imports litellm) is moved to the permanent
generation with ``gc.freeze()``, as a long-running trainer can do once after start-up. Without
it a full collection scans the whole heap, and parsing long SQL allocates trees big enough to
trigger many full collections of 0.5-1.5 s each on a small machine: they then dominate part 2
and even push decisions past the kernel's ``policy_timeout_s`` (``--no-freeze`` shows that).
Collections are timed with ``gc.callbacks``: the full (generation-2) ones are reported per part,
and each timed call knows how much collection ran inside it.

Part 1 -- rule count (1, 10, 100 rules)
---------------------------------------
``GovernanceKernel.check`` without a recorder, on ``--n`` distinct SQL actions of the workload of
``bench_kernel_decisions.py`` (tool ``database_query``; SELECT / UPDATE / INSERT / DELETE / DROP /
evasions), first-seen (each query new to every parse cache) and repeated (a fresh copy of the
same text again: all parse-cache hits, but the new ``str`` is hashed and compared, as when an
agent sends the same query again). What a "rule" is:

* ``mixed``: what a real configuration looks like. One ``SQLPolicy(deny=[DROP, DELETE,
  TRUNCATE])`` governs the database tool; the other N-1 rules are policies about *other* tools or
  about the run, cycling through ``ToolAllowListPolicy`` (an allow-list that also names the
  database tool, as it must), ``CostControlPolicy`` (a budget; actions cost $0 so it never
  blocks) and ``SQLPolicy`` on another SQL tool (``warehouse_<i>_query``). The kernel consults
  every one of them on every action (``evaluate``, then ``on_allowed`` when allowed), but only the
  first parses SQL.
* ``all-SQL``: the worst case. N ``SQLPolicy`` instances, all on the same database tool, each
  with its own deny list (DROP/DELETE/TRUNCATE, then ALTER, GRANT+REVOKE, ATTACH+DETACH, PRAGMA,
  CREATE, ... in rotation). Analyses are cached per (text, dialect) and shared by every SQLPolicy
  in the process, so a first-seen query is parsed once for all N (the ``parses/action`` column
  counts the shared cache's misses). To keep "first-seen" first-seen although every row sees the
  same texts, the shared cache is emptied before each first-seen call (inside the timing: a
  fraction of a microsecond with a one-entry cache).
* ``agent_os``: Agent OS's own ``PolicyEngine.check_violation`` (called directly) with N rules.
  ``check_violation`` ignores ``add_custom_rule`` rules (only ``validate_request`` applies them)
  and ``blocked_patterns`` (a list nothing reads); its only per-rule loop is over the role's
  ``ConditionalPermission`` list (``add_conditional_permission``), so a rule here is one
  conditional permission (a context-attribute condition that holds). ``agent_os mixed``: one on
  the database tool, N-1 on other tools; ``agent_os all``: all N on the database tool (each is
  evaluated). Its allow-list is a set look-up and its SQL regexes run on every call; it keeps no
  cache, so first-seen and repeated cost the same.

Part 2 -- query length (about 50, 200, 1k, 5k, 20k, 100k characters)
-------------------------------------------------------------------
Distinct SELECTs grown, deterministically from ``--seed``, by adding predicates, ``IN`` lists of
5-40 numbers, parenthesised ``OR`` groups and joins until the next piece would pass the target
(so a query is at most its target, and within ``SQLPolicy``'s default ``max_query_chars`` of
100,000). Per length, interleaved: ``sqlglot.tokenize``, ``sqlglot.parse`` (which tokenizes,
then parses), ``SQLPolicy.check_sql`` first-seen (parse + the policy's analysis), ``kernel.check``
first-seen and repeated (one SQLPolicy), and Agent OS ``check_violation``. Each approach gets its
own copy of every text. The breakdown of a first-seen check uses medians of each call's time
minus the garbage collection inside it, and shows that collection apart: tokenize; parser =
parse - tokenize; analysis = check_sql - parse (walking the tree, naming statement kinds, the
cache, the hash); kernel = kernel.check - check_sql; GC. ``--chars`` bounds the characters
timed per length (fewer queries at the longer lengths, at least 15). The texts of all lengths
are interleaved over the whole phase as well, so a slow stretch of the machine hits every
length alike.
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import os
import random
import re
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

# agentlightning imports litellm, which otherwise fetches its model cost map over the network.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
sys.path.insert(0, str(Path(__file__).resolve().parent))

import sqlglot  # noqa: E402
from agent_control_plane.policy_engine import Condition, ConditionalPermission  # noqa: E402
from agent_os import PolicyEngine  # noqa: E402
from bench_common import environment, print_table, require_at_least  # noqa: E402
from bench_kernel_decisions import DENY, PREDICATES, ROLE, TOOL, build_workload  # noqa: E402

from agentlightning.contrib.kernel.agentos import (  # noqa: E402
    Action,
    CostControlPolicy,
    GovernanceKernel,
    Policy,
    SQLPolicy,
    ToolAllowListPolicy,
)
from agentlightning.contrib.kernel.agentos.sql.policy import _shared_analysis  # noqa: E402

RULE_COUNTS = (1, 10, 100)
LENGTHS = (50, 200, 1_000, 5_000, 20_000, 100_000)
WARMUP_QUERIES = 100
MAX_SAMPLES_PER_LENGTH = 200
MIN_SAMPLES_PER_LENGTH = 15
#: Deny lists of the all-SQL configuration, in rotation (the first is the kernel's usual one).
DENY_LISTS: Tuple[Tuple[str, ...], ...] = (
    DENY,
    ("ALTER",),
    ("GRANT", "REVOKE"),
    ("ATTACH", "DETACH"),
    ("PRAGMA",),
    ("CREATE",),
    ("DROP",),
    ("TRUNCATE", "COPY"),
    ("MERGE",),
    ("DELETE",),
)
OTHER_TOOLS = ("search", "send_email", "read_file", "http_get", "python")


def fresh(text: str) -> str:
    """An equal but distinct ``str`` object (its hash not yet computed), as a new request carries."""
    return (text + " ")[:-1]


# ----------------------------------------------------------------------------- timing


class GCClock:
    """Time spent in the garbage collector, via ``gc.callbacks``: the total over all generations
    (so each timed call can subtract what ran inside it) and, while armed, each full
    (generation-2) collection."""

    def __init__(self) -> None:
        self.total_ns = 0
        self.full_pauses_ms: List[float] = []
        self.armed = False
        self._started = 0

    def install(self) -> None:
        if self._callback not in gc.callbacks:
            gc.callbacks.append(self._callback)

    def _callback(self, phase: str, info: Dict[str, Any]) -> None:
        if phase == "start":
            self._started = time.perf_counter_ns()
            return
        spent = time.perf_counter_ns() - self._started
        self.total_ns += spent
        if self.armed and info.get("generation") == 2:
            self.full_pauses_ms.append(spent / 1e6)

    def arm(self) -> None:
        self.full_pauses_ms = []
        self.armed = True

    def disarm(self) -> None:
        self.armed = False

    def summary(self) -> Dict[str, Any]:
        p = self.full_pauses_ms
        return {
            "full_collections": len(p),
            "median_ms": statistics.median(p) if p else 0.0,
            "max_ms": max(p) if p else 0.0,
            "total_s": sum(p) / 1000,
        }

    def line(self) -> str:
        s = self.summary()
        if not s["full_collections"]:
            return "full (gen-2) garbage collections while timing: none"
        return (
            f"full (gen-2) garbage collections while timing: {s['full_collections']}, "
            f"pause median {s['median_ms']:,.0f} ms, "
            f"max {s['max_ms']:,.0f} ms, {s['total_s']:,.1f} s in all ({len(gc.get_objects()):,} objects tracked now)"
        )


GC_CLOCK = GCClock()


def settle_gc(freeze: bool) -> None:
    """Collect, then (``freeze``) move every object alive now to the permanent generation, so the
    full collections during timing scan only what the decisions themselves allocate. Then start
    recording full collections."""
    gc.collect()
    if freeze:
        gc.freeze()
    GC_CLOCK.install()
    GC_CLOCK.arm()


@dataclass
class Series:
    """One timed approach: a call per item, its per-call times (and GC time inside) and verdicts."""

    label: str
    call: Callable[[int], Any]
    is_blocked: Callable[[Any], bool] = lambda _: False
    samples_ns: List[int] = field(default_factory=list)
    gc_ns: List[int] = field(default_factory=list)  # garbage collection inside each call
    blocked: List[bool] = field(default_factory=list)
    reasons: Dict[str, int] = field(default_factory=dict)  # why calls were blocked, with counts

    def time_one(self, i: int, clock: Callable[[], int] = time.perf_counter_ns) -> None:
        collected = GC_CLOCK.total_ns
        started = clock()
        result = self.call(i)
        self.samples_ns.append(clock() - started)
        self.gc_ns.append(GC_CLOCK.total_ns - collected)
        blocked = self.is_blocked(result)
        self.blocked.append(blocked)
        if blocked:
            reason = why(result)
            self.reasons[reason] = self.reasons.get(reason, 0) + 1

    @property
    def mean_us(self) -> float:
        return statistics.fmean(self.samples_ns) / 1000

    @property
    def max_us(self) -> float:
        return max(self.samples_ns) / 1000

    @property
    def median_us(self) -> float:
        return statistics.median(self.samples_ns) / 1000

    @property
    def net_median_us(self) -> float:
        """Median of each call's time minus the garbage collection inside it."""
        return statistics.median(t - g for t, g in zip(self.samples_ns, self.gc_ns, strict=True)) / 1000

    @property
    def gc_mean_us(self) -> float:
        return statistics.fmean(self.gc_ns) / 1000

    @property
    def p99_us(self) -> float:
        ordered = sorted(self.samples_ns)
        return ordered[max(0, math.ceil(0.99 * len(ordered)) - 1)] / 1000


def run_interleaved(series: Sequence[Series], count: int) -> None:
    """Time every series on items 0..count-1, one item at a time, rotating who goes first."""
    for i in range(count):
        shift = i % len(series)
        for s in (*series[shift:], *series[:shift]):
            s.time_one(i)


def decided(decision: Any) -> bool:
    return bool(decision.blocked)


def denied(reason: Optional[str]) -> bool:
    return reason is not None


def why(result: Any) -> str:
    """A short, number-free reason for a blocked result (a Decision, violations, or a string)."""
    if hasattr(result, "violations"):
        result = [v for v in result.violations if v.action_blocked]
    if isinstance(result, list) and result:
        result = result[0].description
    text = str(result)
    if "policy_timeout_s" in text or "timed out" in text:
        return text.split(" (failing")[0] + " (failing closed)"
    return re.sub(r"\d+", "N", text)[:90]


# ----------------------------------------------------------------------------- part 1: rules


def mixed_policies(n_rules: int, cache: bool) -> List[Policy]:
    """One SQLPolicy on the database tool, then N-1 policies about other tools or the run."""
    policies: List[Policy] = [SQLPolicy(deny=DENY, cache=cache)]
    for i in range(1, n_rules):
        kind = i % 3
        if kind == 1:
            tools = [TOOL, *OTHER_TOOLS[: 1 + i % len(OTHER_TOOLS)], f"tool_{i}"]
            policies.append(ToolAllowListPolicy(tools, name=f"allow_list_{i}"))
        elif kind == 2:
            policies.append(
                CostControlPolicy(max_cost_usd=10.0 + i, scope="rollout" if i % 2 else "run", name=f"budget_{i}")
            )
        else:
            policies.append(
                SQLPolicy(
                    deny=DENY_LISTS[i % len(DENY_LISTS)],
                    tools=[f"warehouse_{i}_query"],
                    name=f"sql_warehouse_{i}",
                    cache=cache,
                )
            )
    return policies


def all_sql_policies(n_rules: int, cache: bool) -> List[SQLPolicy]:
    """N SQLPolicies on the same database tool, each with its own deny list and parse cache."""
    return [
        SQLPolicy(deny=DENY_LISTS[i % len(DENY_LISTS)], name="SQLPolicy" if i == 0 else f"sql_{i}", cache=cache)
        for i in range(n_rules)
    ]


def agent_os_engine(n_rules: int, all_on_tool: bool) -> PolicyEngine:
    """A PolicyEngine whose role may use the database tool, with N conditional permissions."""
    engine = PolicyEngine()
    other = [f"tool_{i}" for i in range(n_rules)]
    engine.add_constraint(ROLE, [TOOL, *other])
    engine.set_agent_context(ROLE, {"tenant": "acme", "clearance": 5, "region": "eu"})
    conditions = (
        lambda i: Condition("tenant", "eq", "acme"),
        lambda i: Condition("clearance", "gte", i % 5),
        lambda i: Condition("region", "in", ["eu", "us"]),
    )
    for i in range(n_rules):
        tool = TOOL if (all_on_tool or i == 0) else other[i]
        engine.add_conditional_permission(ROLE, ConditionalPermission(tool, [conditions[i % len(conditions)](i)]))
    return engine


def cache_misses(policies: Sequence[Policy]) -> int:
    """Misses of the process-wide SQL analysis cache so far (0 for rows without an SQLPolicy)."""
    if not any(isinstance(p, SQLPolicy) for p in policies):
        return 0
    return _shared_analysis.cache_info().misses


@dataclass
class RuleRow:
    config: str
    rules: int
    first_seen: Series
    repeated: Series
    warm: Callable[[int], Any]  # the same approach on a warm-up query
    policies: Sequence[Policy] = ()
    parses_per_action: Optional[float] = None


def measure_rules(n: int, seed: int, freeze: bool) -> Tuple[List[RuleRow], Series, Series, float]:
    queries = build_workload(n + WARMUP_QUERIES, seed)
    workload, warmup = [q.sql for q in queries[:n]], [q.sql for q in queries[n:]]
    # cache turns the shared analysis cache on or off; its size is fixed.
    cache = True
    rows: List[RuleRow] = []

    def kernel_row(config: str, rules: int, policies: List[Policy]) -> RuleRow:
        kernel = GovernanceKernel(policies)
        first = [Action(TOOL, {"query": fresh(q)}) for q in workload]
        again = [Action(TOOL, {"query": fresh(q)}) for q in workload]

        def first_seen(i: int) -> Any:
            _shared_analysis.cache_clear()  # every row sees the same texts: make this one new
            return kernel.check(first[i])

        return RuleRow(
            config,
            rules,
            Series(f"{config} {rules}", first_seen, decided),
            Series(f"{config} {rules}", lambda i: kernel.check(again[i]), decided),
            lambda i: kernel.check(Action(TOOL, {"query": warmup[i]})),
            policies,
        )

    def engine_row(config: str, rules: int, engine: PolicyEngine) -> RuleRow:
        first = [{"query": fresh(q)} for q in workload]
        again = [{"query": fresh(q)} for q in workload]
        return RuleRow(
            config,
            rules,
            Series(f"{config} {rules}", lambda i: engine.check_violation(ROLE, TOOL, first[i]), denied),
            Series(f"{config} {rules}", lambda i: engine.check_violation(ROLE, TOOL, again[i]), denied),
            lambda i: engine.check_violation(ROLE, TOOL, {"query": warmup[i]}),
        )

    for rules in RULE_COUNTS:
        rows.append(kernel_row("kernel mixed", rules, mixed_policies(rules, cache)))
        rows.append(kernel_row("kernel all-SQL", rules, list(all_sql_policies(rules, cache))))
        rows.append(engine_row("agent_os mixed", rules, agent_os_engine(rules, all_on_tool=False)))
        rows.append(engine_row("agent_os all", rules, agent_os_engine(rules, all_on_tool=True)))

    started = time.perf_counter()
    for _ in range(2):  # first pass: cache misses; second: hits
        for i in range(len(warmup)):
            for row in rows:
                row.warm(i)
    for row in rows:  # parses per first-seen action, counted untimed: the cache is shared by all rows
        if row.policies:
            _shared_analysis.cache_clear()
            kernel = GovernanceKernel(list(row.policies))
            parses = 0
            for query in workload[:50]:
                _shared_analysis.cache_clear()  # also zeroes the cache's statistics
                kernel.check(Action(TOOL, {"query": fresh(query)}))
                parses += cache_misses(row.policies)
            row.parses_per_action = parses / min(50, len(workload))
    settle_gc(freeze)
    floor_first = Series("no-op call", lambda i: None)
    run_interleaved([*(row.first_seen for row in rows), floor_first], len(workload))
    filler = GovernanceKernel([SQLPolicy(deny=DENY)])
    for query in workload:  # the first-seen phase leaves the cache empty: fill it for the repeated rows
        filler.check(Action(TOOL, {"query": query}))
    floor_again = Series("no-op call", lambda i: None)
    run_interleaved([*(row.repeated for row in rows), floor_again], len(workload))
    GC_CLOCK.disarm()
    return rows, floor_first, floor_again, time.perf_counter() - started


def report_rules(rows: List[RuleRow], floor_first: Series, floor_again: Series, n: int) -> Dict[str, Any]:
    print(
        f"== Part 1: per-action cost vs number of rules -- {n} distinct SQL actions per row, warm-up {WARMUP_QUERIES}"
    )
    table = []
    for row in rows:
        parses = "-" if row.parses_per_action is None else f"{row.parses_per_action:.2f}"
        table.append(
            [
                f"{row.config}",
                row.rules,
                row.first_seen.median_us,
                row.first_seen.p99_us,
                row.repeated.median_us,
                row.repeated.p99_us,
                parses,
                sum(row.first_seen.blocked),
            ]
        )
    print_table(
        [
            "configuration",
            "rules",
            "first-seen med us",
            "p99 us",
            "repeated med us",
            "p99 us",
            "parses/action",
            "blocked",
        ],
        table,
    )
    print(
        f"harness floor (timer + a no-op call): median {floor_first.median_us:.2f} us (first-seen phase), "
        f"{floor_again.median_us:.2f} us (repeated phase)"
    )

    configs = list(dict.fromkeys(row.config for row in rows))
    by = {(row.config, row.rules): row for row in rows}
    slopes = []
    for config in configs:
        lo, hi = by[(config, RULE_COUNTS[0])], by[(config, RULE_COUNTS[-1])]
        span = RULE_COUNTS[-1] - RULE_COUNTS[0]
        slopes.append(
            [
                config,
                (hi.first_seen.median_us - lo.first_seen.median_us) / span,
                (hi.repeated.median_us - lo.repeated.median_us) / span,
                hi.first_seen.median_us / lo.first_seen.median_us,
                hi.repeated.median_us / lo.repeated.median_us,
            ]
        )
    print(
        f"\ncost of each extra rule, from {RULE_COUNTS[0]} to {RULE_COUNTS[-1]} rules "
        f"(difference of medians / {RULE_COUNTS[-1] - RULE_COUNTS[0]}):"
    )
    print_table(
        [
            "configuration",
            "first-seen us/rule",
            "repeated us/rule",
            f"first-seen x{RULE_COUNTS[-1]}/x{RULE_COUNTS[0]}",
            "repeated ratio",
        ],
        slopes,
        float_format=",.2f",
    )

    checks = []
    mixed = [by[("kernel mixed", r)] for r in RULE_COUNTS]
    checks.append(
        (
            "kernel mixed: same verdicts at 1, 10, 100 rules, first-seen and repeated",
            all(m.first_seen.blocked == mixed[0].first_seen.blocked == m.repeated.blocked for m in mixed),
        )
    )
    for label, ok in checks:
        print(f"{label}: {'yes' if ok else 'NO'}")
    for row in rows:
        for series in (row.first_seen, row.repeated):
            for reason, count in series.reasons.items():
                if "policy_timeout_s" in reason:
                    print(f"  {row.config} {row.rules} rules: {count}x blocked because {reason}")
    print()
    return {
        "rows": [
            {
                "config": row.config,
                "rules": row.rules,
                "first_seen_median_us": row.first_seen.median_us,
                "first_seen_p99_us": row.first_seen.p99_us,
                "repeated_median_us": row.repeated.median_us,
                "repeated_p99_us": row.repeated.p99_us,
                "parses_per_action": row.parses_per_action,
                "blocked": sum(row.first_seen.blocked),
            }
            for row in rows
        ],
        "per_extra_rule_us": {s[0]: {"first_seen": s[1], "repeated": s[2]} for s in slopes},
        "harness_floor_us": {"first_seen_phase": floor_first.median_us, "repeated_phase": floor_again.median_us},
        "checks": {label: ok for label, ok in checks},
    }


# ----------------------------------------------------------------------------- part 2: length


def long_select(r: random.Random, target: int) -> str:
    """A SELECT of at most ``target`` characters, grown piece by piece from a short base."""
    tables: List[Tuple[str, str]] = [("users", "u")]
    joins: List[str] = []
    where: List[str] = [f"u.id = {r.randint(1, 99999)}"]
    size = len("SELECT u.id, u.email FROM users u WHERE ") + len(where[0])
    if size > target:  # the shortest query there is
        return f"SELECT u.id FROM users u WHERE {where[0]}"
    head = "SELECT u.id, u.email FROM users u"
    k = 0

    def piece() -> Tuple[str, str, Optional[Tuple[str, str]]]:
        """(where the text goes, the text, the (table, alias) a join adds)."""
        roll = r.random()
        table, alias = r.choice(tables)
        if roll < 0.12:
            joined = r.choice(("orders", "sessions", "tickets"))
            a = f"{joined[0]}{k}"
            return "join", f" LEFT JOIN {joined} {a} ON {a}.user_id = u.id", (joined, a)
        if roll < 0.35:
            values = ", ".join(str(r.randint(1, 99999)) for _ in range(r.randint(5, 40)))
            return "where", f"{alias}.id IN ({values})", None
        if roll < 0.55:
            t2, a2 = r.choice(tables)
            return "where", f"({alias}.{r.choice(PREDICATES[table])(r)} OR {a2}.{r.choice(PREDICATES[t2])(r)})", None
        return "where", f"{alias}.{r.choice(PREDICATES[table])(r)}", None

    misses = 0
    while misses < 20:
        k += 1
        kind, text, added = piece()
        extra = len(text) + (len(" AND ") if kind == "where" else 0)
        if size + extra > target:
            misses += 1
            continue
        size += extra
        if added is not None:
            joins.append(text)
            tables.append(added)
        else:
            where.append(text)
    sql = head + "".join(joins) + " WHERE " + " AND ".join(where)
    assert len(sql) == size <= target, (len(sql), size, target)
    return sql


def length_workload(seed: int, chars: int) -> Dict[int, List[str]]:
    r = random.Random(seed)
    out: Dict[int, List[str]] = {}
    for target in LENGTHS:
        count = max(MIN_SAMPLES_PER_LENGTH, min(MAX_SAMPLES_PER_LENGTH, chars // target))
        seen: Dict[str, None] = {}
        while len(seen) < count:
            seen.setdefault(long_select(r, target))
        out[target] = list(seen)
    return out


@dataclass
class LengthRow:
    target: int
    chars: float  # median length
    series: Dict[str, Series]
    floor: Series


LENGTH_APPROACHES = (
    "sqlglot.tokenize",
    "sqlglot.parse",
    "SQLPolicy.check_sql first-seen",
    "kernel.check first-seen",
    "kernel.check repeated",
    "agent_os check_violation",
)


def measure_lengths(texts: Dict[int, List[str]], seed: int, freeze: bool) -> Tuple[List[LengthRow], float]:
    """Time every approach on every text. The lengths are interleaved too: the texts of each
    length are spread evenly over the whole phase, so slow stretches hit every length alike."""
    started = time.perf_counter()
    warm_r = random.Random(seed + 1)
    warm_texts = [long_select(warm_r, t) for t in (50, 200, 1_000, 5_000) for _ in range(3)]
    # First-seen: policies that bypass the process-wide analysis cache (the warm kernel fills it).
    cold_policy = SQLPolicy(deny=DENY, cache=False)
    cold_kernel = GovernanceKernel([SQLPolicy(deny=DENY, cache=False)])
    warm_kernel = GovernanceKernel([SQLPolicy(deny=DENY)])  # the shared analysis cache (fixed size), as by default
    engine = PolicyEngine()
    engine.add_constraint(ROLE, [TOOL])
    for _ in range(2):
        for text in warm_texts:  # exercise every path, misses and hits, outside the measured texts
            sqlglot.tokenize(text)
            sqlglot.parse(text)
            cold_policy.check_sql(text)
            cold_kernel.check(Action(TOOL, {"query": text}))
            warm_kernel.check(Action(TOOL, {"query": text}))
            engine.check_violation(ROLE, TOOL, {"query": text})

    rows: List[LengthRow] = []
    for target, queries in texts.items():
        for text in queries:  # the repeated kernel has seen every measured text once
            warm_kernel.check(Action(TOOL, {"query": fresh(text)}))
        own = {name: [fresh(q) for q in queries] for name in LENGTH_APPROACHES}
        actions = {
            name: [Action(TOOL, {"query": q}) for q in own[name]]
            for name in ("kernel.check first-seen", "kernel.check repeated")
        }
        args = [{"query": q} for q in own["agent_os check_violation"]]

        def calls(own=own, actions=actions, args=args) -> Dict[str, Tuple[Callable[[int], Any], Callable[[Any], bool]]]:
            return {
                "sqlglot.tokenize": (lambda i: sqlglot.tokenize(own["sqlglot.tokenize"][i]), lambda _: False),
                "sqlglot.parse": (lambda i: sqlglot.parse(own["sqlglot.parse"][i]), lambda _: False),
                "SQLPolicy.check_sql first-seen": (
                    lambda i: cold_policy.check_sql(own["SQLPolicy.check_sql first-seen"][i]),
                    bool,
                ),
                "kernel.check first-seen": (
                    lambda i: cold_kernel.check(actions["kernel.check first-seen"][i]),
                    decided,
                ),
                "kernel.check repeated": (lambda i: warm_kernel.check(actions["kernel.check repeated"][i]), decided),
                "agent_os check_violation": (lambda i: engine.check_violation(ROLE, TOOL, args[i]), denied),
            }

        series = {name: Series(f"{name} {target}", call, blocked) for name, (call, blocked) in calls().items()}
        rows.append(
            LengthRow(target, statistics.median(len(q) for q in queries), series, Series("no-op call", lambda i: None))
        )

    settle_gc(freeze)
    schedule = sorted(
        ((i + 0.5) / len(texts[row.target]), r, i) for r, row in enumerate(rows) for i in range(len(texts[row.target]))
    )
    for k, (_, r, i) in enumerate(schedule):
        row_series = [*rows[r].series.values(), rows[r].floor]
        shift = k % len(row_series)
        for s in (*row_series[shift:], *row_series[:shift]):
            s.time_one(i)
    GC_CLOCK.disarm()
    return rows, time.perf_counter() - started


def fitted_slope(xs: Sequence[float], ys: Sequence[float]) -> float:
    """Least-squares slope of ys on xs."""
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum((x - mx) ** 2 for x in xs)


def report_lengths(rows: List[LengthRow]) -> Dict[str, Any]:
    print("== Part 2: per-action cost vs query length (SELECTs; median us per call)")
    short_names = {
        "sqlglot.tokenize": "tokenize",
        "sqlglot.parse": "parse",
        "SQLPolicy.check_sql first-seen": "check_sql 1st",
        "kernel.check first-seen": "kernel 1st",
        "kernel.check repeated": "kernel repeated",
        "agent_os check_violation": "agent_os",
    }
    print_table(
        ["target chars", "median chars", "queries", *short_names.values(), "floor"],
        [
            [
                f"{row.target:,}",
                f"{row.chars:,.0f}",
                len(row.series["sqlglot.parse"].samples_ns),
                *(row.series[k].median_us for k in short_names),
                row.floor.median_us,
            ]
            for row in rows
        ],
    )
    blocked = {}
    for row in rows:
        for name, series in row.series.items():
            for reason, count in series.reasons.items():
                key = (name, f"{row.target:,}", reason)
                blocked[key] = blocked.get(key, 0) + count
    if blocked:
        print("blocked (every query is a plain SELECT that no rule denies):")
        for (name, target, reason), count in blocked.items():
            print(f"  {name} at {target} chars, {count}x: {reason}")
    else:
        print("blocked: none (every query is a plain SELECT that no rule denies)")
    print(
        "kernel.check first-seen, mean / max us (the mean carries the garbage collector's pauses): "
        + "; ".join(
            f"{row.target:,}: {row.series['kernel.check first-seen'].mean_us:,.0f} / "
            f"{row.series['kernel.check first-seen'].max_us:,.0f}"
            for row in rows
        )
    )

    print("\nus per 1000 characters (median / median length x 1000):")
    print_table(
        ["target chars", *short_names.values()],
        [[f"{row.target:,}", *(row.series[k].median_us / row.chars * 1000 for k in short_names)] for row in rows],
        float_format=",.2f",
    )
    big = [row for row in rows if row.target >= 1_000]
    lo, hi = rows[-3], rows[-1]
    stats = {"median": lambda x: x.median_us, "net of GC": lambda x: x.net_median_us}
    slopes = {
        stat: {
            k: fitted_slope([row.chars for row in big], [get(row.series[k]) for row in big]) * 1000 for k in short_names
        }
        for stat, get in stats.items()
    }
    exponents = {
        stat: {k: math.log(get(hi.series[k]) / get(lo.series[k])) / math.log(hi.chars / lo.chars) for k in short_names}
        for stat, get in stats.items()
    }
    print_table(
        ["fit over >= 1k chars", *short_names.values()],
        [
            ["us per 1000 chars (least squares, medians)", *slopes["median"].values()],
            ["us per 1000 chars (least squares, net of GC)", *slopes["net of GC"].values()],
            [f"growth exponent {lo.target:,} -> {hi.target:,}, medians", *exponents["median"].values()],
            [f"growth exponent {lo.target:,} -> {hi.target:,}, net of GC", *exponents["net of GC"].values()],
        ],
        float_format=",.2f",
    )
    print(
        "(growth exponent 1 = linear; 'net of GC' = median of each call's time minus the garbage collection inside it)"
    )

    print("\nwhere a first-seen kernel.check goes (medians net of GC; GC = mean garbage collection inside a call):")
    breakdown = []
    cells = []
    for row in rows:
        s = {k: row.series[k].net_median_us for k in short_names}
        gc_us = row.series["kernel.check first-seen"].gc_mean_us
        parts = {
            "tokenize": s["sqlglot.tokenize"],
            "parser": s["sqlglot.parse"] - s["sqlglot.tokenize"],
            "analysis": s["SQLPolicy.check_sql first-seen"] - s["sqlglot.parse"],
            "kernel": s["kernel.check first-seen"] - s["SQLPolicy.check_sql first-seen"],
            "gc": gc_us,
        }
        total = s["kernel.check first-seen"] + gc_us
        breakdown.append({"target": row.target, "total_us": total, **parts})
        cells.append([f"{row.target:,}", total, *(f"{v:,.1f} ({100 * v / total:.0f}%)" for v in parts.values())])
    print_table(["target chars", "total us", "tokenize us", "parser us", "analysis us", "kernel us", "GC us"], cells)
    print(
        "(tokenize = sqlglot.tokenize; parser = sqlglot.parse - tokenize; analysis = check_sql - parse, "
        "i.e. the tree walk,\n"
        " the cache and the hash; kernel = kernel.check - check_sql; "
        "differences of medians of separately timed calls,\n"
        " so a small part can come out negative)\n"
    )
    return {
        "rows": [
            {
                "target_chars": row.target,
                "median_chars": row.chars,
                "queries": len(row.series["sqlglot.parse"].samples_ns),
                "median_us": {k: row.series[k].median_us for k in short_names},
                "net_of_gc_median_us": {k: row.series[k].net_median_us for k in short_names},
                "gc_mean_us": {k: row.series[k].gc_mean_us for k in short_names},
                "mean_us": {k: row.series[k].mean_us for k in short_names},
                "max_us": {k: row.series[k].max_us for k in short_names},
                "harness_floor_us": row.floor.median_us,
            }
            for row in rows
        ],
        "us_per_1000_chars_fit": slopes,
        "growth_exponent": exponents,
        "breakdown_us": breakdown,
        "blocked": [{"approach": k[0], "target_chars": k[1], "reason": k[2], "count": v} for k, v in blocked.items()],
    }


# ----------------------------------------------------------------------------- plot and main


def plot(path: Path, rules: Dict[str, Any], lengths: Dict[str, Any]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(14, 5.5))
    configs = list(dict.fromkeys(r["config"] for r in rules["rows"]))
    for config in configs:
        rows = [r for r in rules["rows"] if r["config"] == config]
        xs = [r["rules"] for r in rows]
        (line,) = left.plot(xs, [r["first_seen_median_us"] for r in rows], marker="o", label=f"{config} first-seen")
        if not config.startswith("agent_os"):
            left.plot(
                xs,
                [r["repeated_median_us"] for r in rows],
                marker="s",
                linestyle="--",
                color=line.get_color(),
                label=f"{config} repeated",
            )
    left.set(xscale="log", yscale="log", xlabel="rules", ylabel="median us per action", title="cost vs number of rules")
    left.legend(fontsize=7)
    left.grid(True, which="both", alpha=0.3)
    xs = [r["median_chars"] for r in lengths["rows"]]
    for name in next(iter(lengths["rows"]))["median_us"]:
        right.plot(xs, [r["median_us"][name] for r in lengths["rows"]], marker="o", label=name)
    right.set(
        xscale="log",
        yscale="log",
        xlabel="query length (characters)",
        ylabel="median us per call",
        title="cost vs query length",
    )
    right.legend(fontsize=7)
    right.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: Optional[Sequence[str]] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=400, help="distinct SQL actions per rule-count row (default: 400)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the query generators (default: 0)")
    parser.add_argument(
        "--chars", type=int, default=1_500_000, help="characters timed per query length (default: 1500000)"
    )
    parser.add_argument(
        "--no-freeze",
        action="store_true",
        help="do not gc.freeze() the set-up objects before timing (full collections then scan the whole heap)",
    )
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write the figures to this JSON file")
    parser.add_argument("--plot", type=Path, metavar="PATH.png", help="also draw the figures (log-log) to this PNG")
    args = parser.parse_args(argv)
    require_at_least(parser, args, n=1, chars=1)

    env = environment("sqlglotc", "agent-os-kernel")
    print(f"Governance cost scaling -- seed={args.seed}, n={args.n}, chars per length={args.chars:,}")
    freeze = "no (--no-freeze)" if args.no_freeze else "yes, after set-up, before each part's timing"
    print(
        f"{env['python']} on {env['platform']}, {env['cpus']} CPUs; gc enabled: {gc.isenabled()}, gc.freeze(): {freeze}"
    )
    sqlglotc = f"yes (sqlglotc {env['sqlglotc']})" if env["sqlglotc_in_use"] else "no (pure-Python parser)"
    tokenizer_compiled = not str(getattr(sqlglot.tokens.tokenizer_core, "__file__", ".py")).endswith(".py")
    print(
        f"sqlglot {env['sqlglot']}, compiled parser in use: {sqlglotc}, "
        f"compiled tokenizer: {'yes' if tokenizer_compiled else 'no'}; agent-os-kernel {env['agent_os_kernel']}\n"
    )

    rule_rows, floor_first, floor_again, rules_s = measure_rules(args.n, args.seed, not args.no_freeze)
    rules = report_rules(rule_rows, floor_first, floor_again, args.n)
    print(GC_CLOCK.line() + "\n")
    rules["gc"] = GC_CLOCK.summary()
    texts = length_workload(args.seed, args.chars)
    length_rows, lengths_s = measure_lengths(texts, args.seed, not args.no_freeze)
    lengths = report_lengths(length_rows)
    print(GC_CLOCK.line() + "\n")
    lengths["gc"] = GC_CLOCK.summary()
    print(f"part 1 took {rules_s:.1f} s, part 2 {lengths_s:.1f} s (warm-up included)")

    if args.json is not None:
        payload = {
            "seed": args.seed,
            "n": args.n,
            "chars": args.chars,
            "gc_freeze": not args.no_freeze,
            "environment": env,
            "rules": rules,
            "lengths": lengths,
        }
        args.json.write_text(json.dumps(payload, indent=2) + "\n")
        print(f"figures written to {args.json}")
    if args.plot is not None:
        plot(args.plot, rules, lengths)
        print(f"plot written to {args.plot}")


if __name__ == "__main__":
    main()
