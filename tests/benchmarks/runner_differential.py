"""The runner's behaviour before and after a change, on the same scenarios, in separate processes.

Each side is a checkout of this repository (a ``git worktree`` of the commit to compare with, and
this one); each side runs every scenario below, one after the other, in an interpreter of its own
with ``agentlightning.contrib`` loaded from that checkout, against the real agentlightning store
and runner. What ``runner.step`` returned (or raised), every span of every rollout (name and
attributes, ids and times left out), the final reward, the status, the governance summary and
``runner.get_stats()`` are written as JSON and compared::

    git worktree add /tmp/runner-base 6023c1d
    .venv/bin/python tests/benchmarks/runner_differential.py --before /tmp/runner-base --after .

It prints the number of scenarios, rollouts, spans and values compared, and every difference.
Spans are compared as a multiset per rollout (name and attributes) and, separately, in the order
the store returns them; a rollout whose spans differ only in order is reported as such, with both
orders of span names. Exit status 1 if anything but the order differs.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Dict, List

SCENARIOS = [
    "litagent_reward_fn",
    "litagent_no_reward_fn",
    "task_action",
    "plain_function",
    "fail_on_violation",
    "base_exception",
    "threads",
    "ungoverned",
    "async_agent",
    "iter_queue",
]

#: The tests folder of this checkout: its ``governed_calls`` module serves the scenarios' agents.
TESTS_DIR = Path(__file__).resolve().parents[1]
#: Attributes whose values differ from run to run (ids, times, process-specific values).
_VOLATILE = ("id", "time", "timestamp", "session", "trace", "span", "duration", "pid", "host", "value_match")
#: Rollout and attempt ids inside span names (AgentOps names its session span after the rollout).
_ID_IN_NAME = re.compile(r"\b(ro|at)-[0-9a-f]+")


# ----------------------------------------------------------------------------- one side, one scenario
def _load_contrib(root: Path) -> None:
    """Import ``agentlightning.contrib`` from ``root`` (a checkout), whatever the venv maps it to."""
    import importlib.util

    import agentlightning  # noqa: F401

    package = root / "contrib" / "agentlightning" / "contrib"
    spec = importlib.util.spec_from_file_location(
        "agentlightning.contrib", package / "__init__.py", submodule_search_locations=[str(package)]
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules["agentlightning.contrib"] = module
    spec.loader.exec_module(module)


def _volatile(key: str) -> bool:
    key = key.lower()
    return any(part in key for part in _VOLATILE) and not key.startswith("agentlightning.reward")


def _plain(value: Any) -> Any:
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items() if not _volatile(str(k))}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return repr(value)


def _step_result(rollout: Any) -> Dict[str, Any]:
    """What step() returned, by the names both versions have (read without warnings)."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # The outcome's own values: rollout.governance since the rollout became a view of it, the rollout before.
        outcome = getattr(rollout, "governance", rollout)
        reward = getattr(outcome, "reward", None)
        return {
            "status": rollout.status,
            "mode": rollout.mode,
            "task_input": _plain(rollout.task_input),
            "task_output": _plain(rollout.task_output),
            "success": rollout.success,
            "violations": [
                [v.policy_name, v.severity.value, v.penalty, v.action_blocked, v.description]
                for v in rollout.violations
            ],
            "signals_sent": list(rollout.signals_sent),
            "total_penalty": rollout.total_penalty,
            "cost": outcome.cost,
            "agent_reward": rollout.agent_reward,
            "reward": reward.to_dict() if reward is not None else None,
            "governed": rollout.governed,
            "decisions": [
                [d.verdict.value, d.action.tool_name, _plain(dict(d.action.args))] for d in outcome.decisions
            ],
            "execution_time_ms_positive": rollout.execution_time_ms > 0,
        }


async def _store_view(store: Any) -> List[Dict[str, Any]]:
    from agentlightning.emitter import find_final_reward

    rows = []
    rollouts = sorted(await store.query_rollouts(), key=lambda r: r.start_time or 0.0)
    for rollout in rollouts:
        spans = await store.query_spans(rollout.rollout_id, "latest")
        attempt = await store.get_latest_attempt(rollout.rollout_id)
        rows.append(
            {
                "input": _plain(rollout.input),
                "status": rollout.status,
                "final_reward": find_final_reward(spans),
                "summary": _plain((attempt.metadata or {}).get("agentos")) if attempt else None,
                "spans": [
                    {
                        "name": _ID_IN_NAME.sub(r"\1-*", span.name),
                        "attributes": _plain(dict(span.attributes))
                        if span.name.startswith("agentos.") or "agentlightning.reward" in str(span.attributes)
                        else None,
                    }
                    for span in spans
                ],
            }
        )
    return rows


def _run_scenario(name: str, workdir: Path) -> Dict[str, Any]:  # noqa: C901 - one scenario per branch, top to bottom
    import asyncio
    import sqlite3

    import agentlightning as agl
    from agentlightning.emitter import emit_reward
    from agentlightning.store.memory import InMemoryLightningStore

    from agentlightning.contrib.kernel.agentos import GovernanceKernel, SQLPolicy
    from agentlightning.contrib.reward.agentos import PolicyReward
    from agentlightning.contrib.runner.agentos import AgentOSRunner, governed_tool

    if str(TESTS_DIR) not in sys.path:
        sys.path.append(str(TESTS_DIR))
    from governed_calls import (
        count_ran,
        outcome_in_thread,
        outcome_of,
    )  # imported once the checkout's contrib is loaded

    db = workdir / "shop.db"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)")
        conn.executemany("INSERT INTO users (name) VALUES (?)", [("ada",), ("bob",), ("eve",)])

    def execute_query(query: str) -> list:
        with sqlite3.connect(db) as conn:
            return conn.execute(query).fetchall()

    class _Bail(BaseException):
        pass

    class Scripted(agl.LitAgent):
        """Runs its task's queries; then returns, emits, returns a dict, raises or bails."""

        def rollout(self, task, resources, rollout):
            run = governed_tool("database_query", execute_query)
            if task.get("raise_on_block"):
                for query in task["queries"]:
                    run(query)  # a blocked query raises ActionBlockedError out of the agent
                ran = len(task["queries"])
            else:
                ran = count_ran(run, task["queries"])
            if task.get("crash"):
                raise RuntimeError("the agent crashed")
            if task.get("bail"):
                raise _Bail("the agent gave up")
            if "emit" in task:
                emit_reward(task["emit"])
                return None
            if task.get("dict"):
                return {"ran": ran}
            if task.get("none"):
                return None
            return ran / len(task["queries"])

    class Threaded(agl.LitAgent):
        def rollout(self, task, resources, rollout):
            return float(outcome_in_thread(governed_tool("database_query", execute_query), task[0]) == "ran")

    class Ungoverned(agl.LitAgent):
        def rollout(self, task, resources, rollout):
            execute_query(task)
            return 1.0

    class AsyncScripted(agl.LitAgent):
        async def rollout_async(self, task, resources, rollout):
            run = governed_tool("database_query", execute_query)
            outcomes = []
            for query in task:
                outcomes.append(outcome_of(run, query))
                await asyncio.sleep(0)
            return float(outcomes.count("ran"))

    clean, drop, delete = "SELECT name FROM users WHERE id = 1", "DROP TABLE users", "DELETE FROM users"
    kernel = GovernanceKernel([SQLPolicy(deny=["DROP", "DELETE"])])
    with_reward = {"reward_fn": PolicyReward(kernel)}
    plans = {
        "litagent_reward_fn": (
            Scripted(),
            with_reward,
            [
                {"queries": [clean]},
                {"queries": [drop]},
                {"queries": [drop, delete]},
                {"queries": [clean], "emit": 0.5},
                {"queries": [drop], "raise_on_block": True},
                {"queries": [clean], "crash": True},
                {"queries": [clean], "dict": True},
                {"queries": [drop], "none": True},
            ],
        ),
        "litagent_no_reward_fn": (
            Scripted(),
            {},
            [
                {"queries": [clean]},
                {"queries": [drop]},
                {"queries": [clean], "emit": 0.5},
                {"queries": [clean], "dict": True},
                {"queries": [clean], "none": True},
                {"queries": [drop], "crash": True},
            ],
        ),
        "task_action": (None, {}, [clean, drop, {"query": delete}]),
        "plain_function": (lambda task: {"rows": len(execute_query(task))}, {}, [clean, drop, delete]),
        "fail_on_violation": (Scripted(), {"fail_on_violation": True, **with_reward}, [{"queries": [clean, drop]}]),
        "base_exception": (Scripted(), with_reward, [{"queries": [drop], "bail": True}, {"queries": [clean]}]),
        "threads": (Threaded(), with_reward, [[drop], [clean]]),
        "ungoverned": (Ungoverned(), with_reward, [clean, clean]),
        "async_agent": (AsyncScripted(), with_reward, [[clean, drop], [clean]]),
    }

    async def by_step() -> Dict[str, Any]:
        agent, options, tasks = plans[name]
        runner = AgentOSRunner(kernel, log_violations=False, **options)
        if agent is not None:
            runner.init(agent)
        if not isinstance(agent, type(lambda: 0)) and agent is not None:
            store = InMemoryLightningStore()
            await store.add_resources({"prompt": agl.PromptTemplate(template="{q}", engine="f-string")})
            runner.init_worker(0, store)
        results = []
        for task in tasks:
            try:
                results.append({"returned": _step_result(await runner.step(task))})
            except BaseException as err:  # noqa: BLE001 - what step raised is part of the behaviour
                results.append({"raised": [type(err).__name__, str(err)]})
        return {"steps": results, "store": await _store_view(runner.get_store()), "stats": runner.get_stats()}

    async def by_iter() -> Dict[str, Any]:
        store = InMemoryLightningStore()
        await store.add_resources({"prompt": agl.PromptTemplate(template="{q}", engine="f-string")})
        tasks = [
            {"queries": [clean]},
            {"queries": [drop]},
            {"queries": [clean], "crash": True},
            {"queries": [drop], "bail": True},
            {"queries": [clean], "emit": 0.25},
        ]
        runner = AgentOSRunner(kernel, log_violations=False, poll_interval=0.05, max_rollouts=len(tasks), **with_reward)
        runner.init(Scripted())
        runner.init_worker(0, store)
        for task in tasks:
            await store.enqueue_rollout(input=task, mode="train")
        await runner.iter()
        return {"store": await _store_view(store), "stats": runner.get_stats()}

    return asyncio.run(by_iter() if name == "iter_queue" else by_step())


# ----------------------------------------------------------------------------- comparing the two sides
def _side(root: Path) -> Dict[str, Any]:
    with tempfile.TemporaryDirectory() as workdir:
        env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "AGENTOPS_LOGGING_TO_FILE": "False"}
        done = subprocess.run(
            [sys.executable, __file__, "--side", "--root", str(root), "--workdir", workdir],
            capture_output=True,
            text=True,
            env=env,
            cwd=workdir,
            timeout=600,
        )
        if done.returncode != 0:
            raise RuntimeError(f"the scenarios at {root} failed:\n{done.stderr[-4000:]}")
        return json.loads(done.stdout.strip().splitlines()[-1])


def _differences(before: Any, after: Any, path: str = "") -> List[str]:
    if isinstance(before, dict) and isinstance(after, dict):
        found = []
        for key in sorted(set(before) | set(after)):
            found += _differences(before.get(key, "<missing>"), after.get(key, "<missing>"), f"{path}.{key}")
        return found
    if isinstance(before, list) and isinstance(after, list) and len(before) == len(after):
        return [d for i, (b, a) in enumerate(zip(before, after)) for d in _differences(b, a, f"{path}[{i}]")]
    return [] if before == after else [f"{path}: {before!r} -> {after!r}"]


def _count_values(value: Any) -> int:
    if isinstance(value, dict):
        return sum(_count_values(v) for v in value.values())
    if isinstance(value, list):
        return sum(_count_values(v) for v in value) or 1
    return 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", type=Path, help="checkout of the code before the change")
    parser.add_argument("--after", type=Path, default=Path("."), help="checkout of the code after it")
    parser.add_argument("--side", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--root", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--workdir", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.side:
        import logging

        logging.disable(logging.CRITICAL)
        _load_contrib(args.root.resolve())
        results = {}
        for scenario in SCENARIOS:
            (args.workdir / scenario).mkdir()
            results[scenario] = _run_scenario(scenario, args.workdir / scenario)
        print(json.dumps(results))
        return 0
    sides = {"before": _side(args.before.resolve()), "after": _side(args.after.resolve())}
    totals = {"scenarios": 0, "rollouts": 0, "spans": 0, "values": 0}
    differing, reordered = 0, 0
    for scenario in SCENARIOS:
        before, after = sides["before"][scenario], sides["after"][scenario]
        totals["scenarios"] += 1
        totals["rollouts"] += len(after["store"])
        totals["spans"] += sum(len(row["spans"]) for row in after["store"])
        totals["values"] += _count_values(after)
        found = _differences(_spans_as_multisets(before), _spans_as_multisets(after))
        order = [
            (i, [s["name"] for s in b["spans"]], [s["name"] for s in a["spans"]])
            for i, (b, a) in enumerate(zip(before["store"], after["store"]))
            if b["spans"] != a["spans"]
        ]
        print(
            f"{scenario}: {len(found)} difference(s); {len(order)} rollout(s) whose spans differ in order only"
            if not found
            else f"{scenario}: {len(found)} difference(s)"
        )
        for line in found:
            print(f"  {line}")
        if not found:
            for index, names_before, names_after in order:
                print(f"  rollout {index} span order: {names_before} -> {names_after}")
        differing += bool(found)
        reordered += len(order) if not found else 0
    print(
        f"compared {totals['scenarios']} scenarios, {totals['rollouts']} rollouts, {totals['spans']} spans, "
        f"{totals['values']} values: {differing} scenario(s) differ; {reordered} rollout(s) differ in span order only"
    )
    return 1 if differing else 0


def _spans_as_multisets(side: Dict[str, Any]) -> Dict[str, Any]:
    """``side`` with each rollout's spans sorted (so only their content is compared)."""
    rows = [
        {**row, "spans": sorted(row["spans"], key=lambda s: json.dumps(s, sort_keys=True))} for row in side["store"]
    ]
    return {**side, "store": rows}


if __name__ == "__main__":
    sys.exit(main())
