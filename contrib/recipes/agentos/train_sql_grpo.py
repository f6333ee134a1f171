"""Governed RL training of a text-to-SQL agent on CPU, governed vs ungoverned, several seeds.

    python contrib/recipes/agentos/train_sql_grpo.py            # both arms, 5 seeds (a few minutes)
    python contrib/recipes/agentos/train_sql_grpo.py --quick    # smoke run (under a minute)
    python contrib/recipes/agentos/train_sql_grpo.py --store-url http://127.0.0.1:4747   # into a running `agl store`

What runs, top to bottom:

1. Build the text-to-SQL world: a real SQLite shop database (customers, products, orders,
   order items; about 23,000 rows, deterministic from ``--world-seed``) and 60 tasks in 7
   families with a train and a held-out split. Three families are *temptations*: the question
   accepts deleting the rows as well as the soft delete/cancel, and the ``DELETE`` is shorter;
   only the governed arm's policy forbids it.
2. For each arm, one real ``agentlightning.Trainer`` run (client-server strategy, ``--runners``
   runner processes, an in-memory store served on a free local port, or the ``agl store`` at
   ``--store-url`` so its dashboard shows the run) with the tabular GRPO
   ``@algo`` of ``grpo.py`` and the agent of ``sql_agent.py``:
   * governed: ``AgentOSRunner(kernel, reward_fn=PolicyReward(kernel))`` with
     ``SQLPolicy(deny=["DROP", "DELETE", "TRUNCATE"])``; the agent's SQL goes through
     ``governed_tool``;
   * ungoverned: the plain ``LitAgentRunner``, the same agent and algorithm, no kernel.
   All seeds of an arm train side by side in that run.
3. Report per arm (mean and spread over seeds): attempted-violation rate per epoch, destructive
   statements executed against the database and rows destroyed, held-out accuracy before and
   after training, wall time. Writes ``results.json`` and ``training_curves.png`` to ``--out``.
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
import statistics
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, Dict, List, Optional

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # litellm must not reach for the network

import portpicker  # noqa: E402

import agentlightning as agl  # noqa: E402
from agentlightning.execution.client_server import ClientServerExecutionStrategy  # noqa: E402
from agentlightning.store.client_server import LightningStoreClient  # noqa: E402
from common import (  # noqa: E402
    config_record,
    log,
    mean_sd,
    parse_config,
    plot_mean_sd,
    restart_clock,
    save_results,
    sql_kernel,
)
from grpo import TabularRecipeConfig, make_grpo_algorithm  # noqa: E402
from sql_agent import SQLAgent  # noqa: E402

from agentlightning.contrib.env.agentos.sql_world import SQLWorld  # noqa: E402
from agentlightning.contrib.reward.agentos import PolicyReward  # noqa: E402
from agentlightning.contrib.runner.agentos import AgentOSRunner  # noqa: E402
from agentlightning.contrib.runner.agentos.shutdown import RunnersFirstStrategy  # noqa: E402
from agentlightning.contrib.runner.agentos.tracing import ImportSafeAgentOpsTracer  # noqa: E402

#: Named sets of settings (``--preset NAME``; options given beside it override them).
PRESETS: Dict[str, Dict[str, Any]] = {
    "quick": {"seeds": (0,), "epochs": 3, "group_size": 3},  # what tests/test_recipe_sql_grpo.py runs
}


def parse_args(argv: Optional[List[str]] = None) -> TabularRecipeConfig:
    """The recipe's settings from the command line (``--help`` lists them); ``--quick`` is ``--preset quick``.

    >>> parse_args(["--quick", "--epochs", "2"]).epochs
    2
    """
    return parse_config(
        TabularRecipeConfig,
        argv,
        presets=PRESETS,
        aliases={"--quick": ["--preset", "quick"]},
        description=__doc__.split("\n\n")[0],
    )


def check_store_url(url: str, timeout: float = 5.0) -> None:
    """Fail early, with the fix, if no ``agl store`` answers at ``url``."""
    try:
        with urllib.request.urlopen(f"{url}/v1/agl/health", timeout=timeout) as response:
            if response.status == 200:
                return
            problem = f"HTTP {response.status}"
    except urllib.error.HTTPError as err:
        problem = f"HTTP {err.code} (is this an agl store?)"
    except (OSError, ValueError) as err:
        problem = str(getattr(err, "reason", err))
    raise SystemExit(
        f"--store-url {url}: no agl store answers there ({problem}). Start one first, e.g. "
        f"`agl store --host 127.0.0.1 --port 4747`, or leave out --store-url to use a private in-memory store."
    )


def train(algorithm: Any, runner: Any, agent: Any, config: TabularRecipeConfig) -> None:
    """One ``Trainer.fit``: against the ``agl store`` at ``--store-url`` (the Trainer serves no store
    and binds no port; algorithm and runner processes are clients of that store), or with the
    Trainer's own in-memory store served on a free port (never agentlightning's default 4747, which
    ``agl store`` uses by default too)."""
    if config.store_url is None:
        port = portpicker.pick_unused_port()
        strategy = RunnersFirstStrategy(n_runners=config.runners)  # the runners stop before the store
        agl.Trainer(algorithm=algorithm, runner=runner, strategy=strategy, port=port).fit(agent)
        return
    store = LightningStoreClient(config.store_url)
    try:
        strategy = ClientServerExecutionStrategy(n_runners=config.runners, managed_store=False)
        agl.Trainer(algorithm=algorithm, runner=runner, store=store, strategy=strategy).fit(agent)
    finally:
        asyncio.run(store.close())


def run_arm(arm: str, world: SQLWorld, config: TabularRecipeConfig) -> Dict[str, Any]:
    """One Trainer run: every seed of ``arm`` trained side by side."""
    result_path = config.out / f"{arm}.json"
    algorithm = make_grpo_algorithm(config, world, arm, result_path)
    log(f"[{arm}] starting the Trainer: {config.runners} runner processes")
    if arm == "governed":
        kernel = sql_kernel()
        runner: agl.LitAgentRunner = AgentOSRunner(
            kernel,
            reward_fn=PolicyReward(kernel),
            audit_dir=config.out / "audit",
            log_violations=False,
            poll_interval=0.05,
        )
    else:
        runner = agl.LitAgentRunner(ImportSafeAgentOpsTracer(), poll_interval=0.05)
    agent = SQLAgent(str(world.db_path), config.world_seed, governed=arm == "governed")
    started = time.perf_counter()
    train(algorithm, runner, agent, config)
    result = json.loads(result_path.read_text())
    result["wall_seconds"] = time.perf_counter() - started
    result_path.write_text(json.dumps(result, indent=1))
    return result


def summarize(result: Dict[str, Any]) -> Dict[str, Any]:
    """Per-arm summary over seeds."""
    seeds = [str(s) for s in result["config"]["seeds"]]
    epochs = result["config"]["epochs"]
    rate_by_epoch = [
        [m["attempted_violation_rate"] for m in result["epochs"] if m["epoch"] == e] for e in range(epochs)
    ]
    acc_by_epoch = [[m["accuracy"] for m in result["epochs"] if m["epoch"] == e] for e in range(epochs)]
    executed = [
        sum(m["destructive_executed"] for m in result["epochs"] if str(m["seed"]) == s)
        + result["heldout_before"][s]["destructive_executed"]
        + result["heldout_after"][s]["destructive_executed"]
        for s in seeds
    ]
    destroyed = [
        sum(m["rows_destroyed"] for m in result["epochs"] if str(m["seed"]) == s)
        + result["heldout_before"][s]["rows_destroyed"]
        + result["heldout_after"][s]["rows_destroyed"]
        for s in seeds
    ]
    return {
        "arm": result["arm"],
        "seeds": result["config"]["seeds"],
        "violation_rate_by_epoch": {
            "mean": [statistics.fmean(v) for v in rate_by_epoch],
            "sd": [statistics.pstdev(v) for v in rate_by_epoch],
        },
        "accuracy_by_epoch": {
            "mean": [statistics.fmean(v) for v in acc_by_epoch],
            "sd": [statistics.pstdev(v) for v in acc_by_epoch],
        },
        "first_epoch_violation_rate": rate_by_epoch[0],
        "final_epoch_violation_rate": rate_by_epoch[-1],
        "destructive_executed": executed,
        "rows_destroyed": destroyed,
        "heldout_accuracy_before": [result["heldout_before"][s]["accuracy"] for s in seeds],
        "heldout_accuracy_after": [result["heldout_after"][s]["accuracy"] for s in seeds],
        "failed_rollouts": sum(m["failed_rollouts"] for m in result["epochs"]),
        "wall_seconds": result["wall_seconds"],
    }


def print_table(summaries: List[Dict[str, Any]]) -> None:
    rows = [
        ("attempted-violation rate, first epoch", lambda s: mean_sd(s["first_epoch_violation_rate"])),
        ("attempted-violation rate, last epoch", lambda s: mean_sd(s["final_epoch_violation_rate"])),
        ("destructive statements executed", lambda s: mean_sd(s["destructive_executed"])),
        ("rows destroyed", lambda s: mean_sd(s["rows_destroyed"])),
        ("held-out accuracy before", lambda s: mean_sd(s["heldout_accuracy_before"])),
        ("held-out accuracy after", lambda s: mean_sd(s["heldout_accuracy_after"])),
        ("wall time (s, all seeds)", lambda s: f"{s['wall_seconds']:.1f}"),
    ]
    print(f"\n{'metric (mean ± sd over seeds)':40s}" + "".join(f"{s['arm']:>22s}" for s in summaries))
    for label, cell in rows:
        print(f"{label:40s}" + "".join(f"{cell(s):>22s}" for s in summaries))


def plot(summaries: List[Dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    for summary, color in zip(summaries, ("tab:green", "tab:red")):
        for ax, key in zip(axes, ("violation_rate_by_epoch", "accuracy_by_epoch")):
            plot_mean_sd(ax, summary[key], color, summary["arm"], alpha=0.2)
    axes[0].set(title="Attempted-violation rate (training rollouts)", xlabel="epoch", ylabel="fraction of rollouts")
    axes[1].set(title="Task accuracy (training rollouts)", xlabel="epoch", ylabel="fraction correct", ylim=(0, 1.05))
    for ax in axes:
        ax.grid(alpha=0.3)
        ax.legend()
    seeds = summaries[0]["seeds"]
    fig.suptitle(f"Text-to-SQL GRPO on CPU, mean ± sd over seeds {seeds}")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: Optional[List[str]] = None) -> Dict[str, Any]:
    restart_clock()
    config = parse_args(argv)
    config.out.mkdir(parents=True, exist_ok=True)
    if config.store_url is not None:
        check_store_url(config.store_url)
    started = time.perf_counter()
    world = SQLWorld.create(config.out / "shop.db", config.world_seed)
    log(
        f"world: {world.db_path} (seed {config.world_seed}), "
        f"{len(world.split('train'))} train / {len(world.split('heldout'))} held-out tasks; "
        f"arms {list(config.arms)}, seeds {list(config.seeds)}, {config.epochs} epochs, group size {config.group_size}"
    )
    summaries = [summarize(run_arm(arm, world, config)) for arm in config.arms]
    print_table(summaries)
    results = {
        "command": " ".join([Path(sys.argv[0]).name, *(argv if argv is not None else sys.argv[1:])]),
        "args": config_record(config),
        "summaries": summaries,
        "total_seconds": time.perf_counter() - started,
    }
    save_results(results, config.out, functools.partial(plot, summaries) if config.plot else None)
    if config.store_url is not None:
        print(
            f"dashboard: {config.store_url}/rollouts   rollouts with violations: "
            f"python -m agentlightning.contrib.runner.agentos violations --store-url {config.store_url}"
        )
    return results


if __name__ == "__main__":
    main()
