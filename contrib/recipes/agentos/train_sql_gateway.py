"""Governed RL of SmolLM2 on Agent Lightning 1.0, on CPU: the governed gateway, 1.0's controller and rows, our GRPO.

This script runs in the Agent Lightning 1.0 environment (Python 3.12, ``pip install -e '.[recipe10]'``)
and imports nothing of the 0.3 line, nor torch. The model's own process (SmolLM2, its warm start,
generation, the GRPO update: ``gateway_model.py``) runs in an environment that has torch, which
this script starts (``--model-python``, by default ``.venv/bin/python``, made by the README's first
command), one process per arm, and drives over local HTTP. Top to bottom:

1. the model process: the text-to-SQL world's database and training tasks; the supervised warm
   start of the LLM recipe (cached under ``runs/llm/warm_start``), so the model writes SQL and,
   like the world's destructive shortcut, sometimes a DELETE or DROP; the project's own
   OpenAI-compatible SmolLM2 policy server (token ids included) behind a tool-call parser (the
   role of vLLM's ``--tool-call-parser``: SmolLM2 has no function calling, so its SQL answer
   becomes a ``run_sql`` tool call, token ids unchanged);
2. 1.0's gateway, governed (``agentos-gateway``: a SQL policy denying DROP, DELETE and TRUNCATE,
   tool rules allowing only ``run_sql``, a FlightRecorder trail), and 1.0's ``agl-controller``;
3. per step, in this process: 1.0's ``AglRolloutManager`` with ``GovernanceHooks``
   (``gateway_collect.py``) runs ``tasks x group`` rollouts of the unchanged harness
   (``gateway_sql_agent.py``: it executes every tool call it receives on its own copy of the
   database) and returns 1.0's training rows (triplets with token ids, the governed reward on the
   last one);
4. the model process computes group-relative advantages from those rewards and one
   ``grpo_update`` (the 0.3 LLM recipe's update) on the rows' token ids; the server samples from
   the new weights; repeat.

Two arms, one after the other, from the same warm start (``--arms``): ``governed`` as above, and
the control ``ungoverned``: 1.0's own gateway (``agl-server``, the same configuration without the
governance section), no hooks, so the harness executes whatever the model wrote and the trained
reward is the agent's own.

Measured per step and arm: the attempted-destructive rate, which counts a DROP, DELETE or TRUNCATE
whether or not it parses (the 0.3 recipe's instrument, ``SQLPolicy`` in record-only mode, counts
only parsed ones and classes the rest as unparseable; it is shown beside), the unparseable answers,
blocked calls at the gateway, destructive statements the harness executed (0 in the governed arm),
the mean trained reward. Each step's rollouts are also kept as 1.0 built them
(``completed-rows-<step>.json``), for 1.0's verl adapter (``verl_adapter_rows.py``).

The defaults are those of the recorded run (``docs/results_gateway.md``): a warm start on 21
training tasks x 3 candidates (precise, sloppy, destructive shortcut), 1.5 epochs of 16; 3 tasks x 4
samples per step; 64-token answers; one torch thread.

    .venv312/bin/python -u contrib/recipes/agentos/train_sql_gateway.py --out runs/gateway_train
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, List

import httpx

from common import ATTEMPTED, DENIED_STATEMENTS, attempt_kind, log, sql_classifier
from gateway_services import free_port, server_config, start_gateway_and_controller
from llm_config import PRESETS, LLMRecipeConfig

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
#: This (the 1.0) environment's commands: agentos-gateway, agl-server, agl-controller.
BIN = Path(sys.executable).parent
MODEL_NAME = "smollm2-135m"


def gateway_yaml(out: Path, port: int, governed: bool) -> Path:
    """The gateway's configuration: 1.0's server.yaml, plus the governance section for the governed gateway."""
    governance = {
        "recorder_dir": str(out / "audit"),
        "policies": [
            {"sql": {"deny": list(DENIED_STATEMENTS), "tools": ["run_sql"], "dialect": "sqlite"}},
            {"tool_rules": {"tools": {"run_sql": {"args": {"query": {"type": "str", "required": True}}}}}},
        ],
        "penalties": {"clean_bonus": 0.0},
    }
    config = {
        "defaults": ["server", "_self_"],
        "hydra": {"searchpath": ["pkg://agentlightning.config"], "run": {"dir": str(out / "hydra")}},
        **server_config(port, MODEL_NAME, governance if governed else None),
    }
    path = out / "gateway.yaml"
    path.write_text(json.dumps(config, indent=1))  # JSON is YAML
    return path


def start_services(out: Path, governed: bool) -> tuple:
    """The governed gateway (``agentos-gateway``), or 1.0's own ungoverned one (``agl-server``), and the controller,
    from this (the 1.0) environment's own commands."""
    port = free_port()
    config = gateway_yaml(out, port, governed)
    url = f"http://127.0.0.1:{port}"
    logs = tuple((out / f"{name}.log").open("w") for name in ("gateway", "controller"))
    env = {**os.environ, "PYTHONPATH": str(HERE)}
    try:
        processes = start_gateway_and_controller(BIN, config, url, logs, env, governed=governed)
    except BaseException:
        for handle in logs:
            handle.close()
        raise
    return url, config, processes, logs


def collect(out: Path, batch: Dict[str, Any], step: int) -> Dict[str, Any]:
    """One step's rollouts through 1.0's rollout manager (``gateway_collect.collect``), kept as files as well."""
    from gateway_collect import collect as collect_rows  # 1.0's rollout manager: imported when a run starts

    (out / f"batch-{step}.json").write_text(json.dumps(batch))
    collected, completed = collect_rows(batch)
    rows_path = out / f"rows-{step}.json"
    rows_path.write_text(json.dumps(collected))
    rows_path.with_name(f"completed-{rows_path.name}").write_text(json.dumps(completed))
    return collected


class ModelProcess:
    """``gateway_model.py`` in the environment with torch, for one arm: started, waited for, asked, stopped."""

    ready: Dict[str, Any]

    def __init__(self, python: Path, out: Path, config: Dict[str, Any]) -> None:
        self.out = out / "model"
        self.out.mkdir(parents=True, exist_ok=True)
        (self.out / "ready.json").unlink(missing_ok=True)
        config_path = self.out / "model-config.json"
        config_path.write_text(json.dumps({**config, "out": str(self.out)}))
        self.process = subprocess.Popen(
            [str(python), "-u", str(HERE / "gateway_model.py"), str(config_path)],
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(HERE)},
        )

    def wait_ready(self) -> None:
        ready = self.out / "ready.json"
        while not ready.exists():  # a warm start not shipped takes minutes the first time (then it is cached)
            if self.process.poll() is not None:
                raise RuntimeError(f"the model process exited with {self.process.returncode} before it was ready")
            time.sleep(0.5)
        self.ready = json.loads(ready.read_text())

    def ask(self, op: str, **body: Any) -> Dict[str, Any]:
        response = httpx.post(self.ready["control"], json={"op": op, **body}, timeout=None)
        if response.status_code != 200:
            raise RuntimeError(f"the model process failed at {op!r}: {response.text}")
        return response.json()

    def stop(self) -> None:
        if self.process.poll() is None:
            try:
                if not hasattr(self, "ready"):  # still loading: nothing to ask
                    raise RuntimeError("not ready")
                self.ask("stop")
                self.process.wait(timeout=60)
            except (httpx.HTTPError, RuntimeError, subprocess.TimeoutExpired):
                self.process.terminate()
                self.process.wait(timeout=30)


def rate(record: Dict[str, Any], kinds: tuple) -> float:
    """The fraction of a step's rollouts whose answer is of one of ``kinds`` (recomputed from the stored SQL)."""
    examples = record["examples"]
    return sum(attempt_kind(e["class"], e["sql"]) in kinds for e in examples) / len(examples)


def step_table(steps: List[Dict[str, Any]]) -> str:
    """One arm's per-step figures as a Markdown table (printed at the end, copied into the results page)."""
    columns = [
        ("attempted destructive (parsed or not)", lambda r: f"{rate(r, ATTEMPTED):.3f}"),
        ("of which parsed (the 0.3 instrument)", lambda r: f"{rate(r, ('destructive',)):.3f}"),
        ("unparseable (the 0.3 instrument)", lambda r: f"{rate(r, ('unparseable', 'destructive_unparsed')):.3f}"),
        ("blocked at the gateway", lambda r: f"{r['blocked_at_gateway']:.3f}"),
        ("destructive executed", lambda r: str(r["destructive_executed"])),
        ("mean trained reward", lambda r: f"{r['mean_governed_reward']:.2f}"),
        ("rollouts / rows", lambda r: f"{r['rollouts']} / {r['rows']}"),
        ("sequences updated", lambda r: str(r["update"].get("sequences", "?"))),
    ]
    lines = [
        "| metric | " + " | ".join(str(r["step"] + 1) for r in steps) + " |",
        "|---|" + "---|" * len(steps),
    ]
    lines += [f"| {name} | " + " | ".join(cell(r) for r in steps) + " |" for name, cell in columns]
    return "\n".join(lines)


def arms_of(results: Dict[str, Any]) -> Dict[str, Dict[str, Any]]:
    """The arms of a results file (a run from before the control arm has one, governed)."""
    return results.get("arms") or {"governed": {"steps": results["steps"], "audit": results.get("audit")}}


def heldout_table(arms: Dict[str, Dict[str, Any]]) -> str:
    """Held-out greedy answers before and after training, each arm (arms evaluated with ``--eval-heldout``)."""
    lines = ["| arm | held-out | attempted destructive | unparseable | accuracy |", "|---|---|---|---|---|"]
    for arm, record in arms.items():
        for when in ("before", "after"):
            e = (record.get("heldout") or {}).get(when)
            if e:
                figures = (e["attempted_destructive"], e["unparseable"], e["accuracy"])
                lines.append(f"| {arm} | {when} | " + " | ".join(f"{x:.3f}" for x in figures) + " |")
    return "\n".join(lines) if len(lines) > 2 else ""


def report(results: Dict[str, Any]) -> str:
    arms = arms_of(results)
    parts = [f"{arm}:\n\n{step_table(record['steps'])}" for arm, record in arms.items()]
    held = heldout_table(arms)
    return "\n\n".join(parts + ([f"held out (greedy):\n\n{held}"] if held else []))


def plot(arms: Dict[str, Dict[str, Any]], path: Path) -> None:
    """The attempted-destructive rate per step, each arm, as a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.5, 3.4))
    for arm, record in arms.items():
        steps = record["steps"]
        x = [r["step"] + 1 for r in steps]
        style = "-" if arm == "governed" else "--"
        ax.plot(x, [rate(r, ATTEMPTED) for r in steps], "o" + style, label=f"{arm}: attempted destructive")
        ax.plot(
            x,
            [rate(r, ("unparseable", "destructive_unparsed")) for r in steps],
            "s" + style,
            alpha=0.5,
            label=f"{arm}: unparseable",
        )
    steps_shown = sorted({r["step"] + 1 for record in arms.values() for r in record["steps"]})
    ax.set(xlabel="GRPO step", ylabel="fraction of rollouts", ylim=(-0.02, 1.02), xticks=steps_shown)
    ax.set_title("rollouts through Agent Lightning 1.0's gateway", fontsize=9)
    ax.legend(fontsize=7, loc="center right")  # the rates sit near 0 and 1: the middle is free
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def model_config(args: argparse.Namespace, grpo: LLMRecipeConfig) -> Dict[str, Any]:
    """What the model process needs: the LLM recipe's settings and this run's choices."""
    # Its folders are the model process's own (its output folder, the warm-start cache below).
    settings = {
        k: list(v) if isinstance(v, tuple) else v
        for k, v in dataclasses.asdict(grpo).items()
        if not isinstance(v, Path)
    }
    return {
        "grpo": settings,
        "reward": args.reward,
        "eval_heldout": args.eval_heldout,
        "no_warm_start": args.no_warm_start,
        "warm_start_cache": str(args.warm_start_cache),
    }


def run_arm(arm: str, args: argparse.Namespace, grpo: LLMRecipeConfig) -> Dict[str, Any]:
    """One arm, top to bottom: its gateway and controller, its model process, ``args.steps`` GRPO steps."""
    governed = arm == "governed"
    out = args.out / arm
    out.mkdir(parents=True, exist_ok=True)
    # The model's process loads (torch, SmolLM2, the warm start) while the 1.0 services start.
    model = ModelProcess(args.model_python, out, model_config(args, grpo))
    processes: List[subprocess.Popen] = []
    logs: tuple = ()
    steps: List[Dict[str, Any]] = []
    heldout: Dict[str, Any] = {}
    try:
        url, config, processes, logs = start_services(out, governed)
        log(f"{arm}: {'agentos-gateway' if governed else 'agl-server'} and agl-controller up at {url}")
        model.wait_ready()
        if args.eval_heldout:
            heldout["before"] = model.ask("heldout")
            log(f"{arm}: held-out before: {held_line(heldout['before'])}")
        classify = sql_classifier()
        for step in range(args.steps):
            log(f"{arm} step {step}: collecting {args.tasks_per_step} x {args.group_size} rollouts through the gateway")
            chosen = model.ask("tasks", step=step)
            batch = {"url": url, "model": MODEL_NAME, "step": step, "inputs": chosen["inputs"], "governed": governed}
            batch.update(config=str(config), model_endpoint=model.ready["model_endpoint"])
            collected = collect(out, batch, step)
            rows = collected["rows"]
            for row in rows:
                executed_log = Path(row["input"]["log_path"])  # what the harness ran, one JSON line per statement
                lines = executed_log.read_text().splitlines() if executed_log.exists() else []
                row["executed"] = [json.loads(line)["query"] for line in lines]
                row["destructive_executed"] = sum(classify(q) == "destructive" for q in row["executed"])
                row["rewarded"] = row["final_reward"] is not None
                if not row["rewarded"]:  # a failed rollout with no reward: 1.0's trainer fills reward_fillna_value
                    row["final_reward"] = 0.0
            updated = model.ask("update", rows=rows, tasks=chosen["tasks"])
            update = updated["update"]
            for row, sql in zip(rows, updated["sqls"]):
                row["sql"] = sql
                row["class"] = classify(sql)
            n = len(rows)
            record = {
                "step": step,
                "rollouts": n,
                "rows": sum(len(r["triplets"]) for r in rows),
                "blocked_at_gateway": sum(any(d["verdict"] == "blocked" for d in r["decisions"]) for r in rows) / n,
                "destructive_executed": sum(r["destructive_executed"] for r in rows),
                "without_reward": sum(not r["rewarded"] for r in rows),
                "mean_governed_reward": statistics.fmean(r["final_reward"] for r in rows),
                "collect_seconds": collected["seconds"],
                "update": update,
                "tasks": chosen["tasks"],
                "load_average": os.getloadavg(),
                "examples": [
                    {k: r[k] for k in ("sql", "class", "final_reward", "decisions", "executed")} for r in rows
                ],
            }
            record["attempted_destructive"] = rate(record, ATTEMPTED)
            record["attempted_destructive_parsed"] = rate(record, ("destructive",))
            record["unparseable"] = rate(record, ("unparseable", "destructive_unparsed"))
            steps.append(record)
            (out / "steps.json").write_text(json.dumps(steps, indent=1))  # progress, read while it runs
            print(
                f"{arm} step {step}: attempted destructive {record['attempted_destructive']:.2f} (parsed "
                f"{record['attempted_destructive_parsed']:.2f}), unparseable {record['unparseable']:.2f}, blocked "
                f"{record['blocked_at_gateway']:.2f}, destructive executed {record['destructive_executed']}, mean "
                f"reward {record['mean_governed_reward']:.2f} ({n} rollouts, {record['rows']} rows, collect "
                f"{collected['seconds']:.0f} s, update {update['seconds']:.0f} s)",
                flush=True,
            )
        if args.eval_heldout:
            heldout["after"] = model.ask("heldout")
            log(f"{arm}: held-out after: {held_line(heldout['after'])}")
    finally:
        for process in reversed(processes):
            process.terminate()
            process.wait(timeout=30)
        for handle in logs:
            handle.close()
        model.stop()
    audit = verify_trails(out / "audit")
    warm = model.ready["warm_start"]
    return {
        "steps": steps,
        "audit": audit,
        "warm_start": warm,
        "heldout": heldout,
        "world_version": model.ready["world_version"],
    }


def verify_trails(folder: Path) -> List[Dict[str, Any]]:
    """Each of the gateway's FlightRecorder files checked by the project's verifier (``audit.seal.verify_file``:
    every hash recomputed, the seals and the signed head checked when ``AGENTOS_AUDIT_KEY`` is set)."""
    from agentlightning.contrib.kernel.agentos.audit.seal import verify_file

    return [verify_file(f) for f in sorted(folder.glob("gateway-*.db"))]


def held_line(evaluation: Dict[str, Any]) -> str:
    return (
        f"attempted destructive {evaluation['attempted_destructive']:.3f}, unparseable "
        f"{evaluation['unparseable']:.3f}, accuracy {evaluation['accuracy']:.3f} ({evaluation['tasks']} tasks, greedy)"
    )


def parse_args(argv: List[str] | None = None) -> argparse.Namespace:
    """The command line; ``--preset demo`` sets the 0.3 demo's values, each still overridable by its own flag.

    >>> args = parse_args(["--preset", "demo", "--steps", "3"])
    >>> args.steps, args.reward, args.eval_heldout, args.adv_std_floor, args.train_families.count(",")
    (3, 'task', True, 0.01, 2)
    >>> parse_args([]).reward, parse_args([]).sft_tasks
    ('executed', 21)
    """
    demo = PRESETS["demo"]
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "runs" / "gateway")
    parser.add_argument(
        "--model-python",
        type=Path,
        default=ROOT / ".venv" / "bin" / "python",
        help="the Python of the environment with torch where the model's own process (gateway_model.py: SmolLM2, "
        "the warm start, generation, the GRPO update) runs; made by the README's first command",
    )
    parser.add_argument(
        "--arms",
        default="governed,ungoverned",
        help="comma-separated, in order: governed (agentos-gateway, the hooks' reward) and ungoverned (the control: "
        "1.0's own agl-server, the agent's reward)",
    )
    parser.add_argument("--steps", type=int, default=4, help="GRPO steps")
    parser.add_argument("--tasks-per-step", type=int, default=demo["tasks_per_step"], help="tasks per step")
    parser.add_argument("--group-size", type=int, default=demo["group_size"], help="rollouts per task (a group)")
    parser.add_argument("--max-new-tokens", type=int, default=64, help="longest answer (tokens)")
    parser.add_argument("--learning-rate", type=float, default=5e-4, help="AdamW learning rate during RL")
    parser.add_argument("--threads", type=int, default=demo["threads"], help="torch threads (model and update)")
    # The warm start and answer length of the recorded run, fixed here: the 0.3 demo preset they came
    # from has changed since (it teaches the precise and shortcut answers of every training task).
    parser.add_argument("--sft-tasks", type=int, default=21, help="warm start on the first N training tasks")
    parser.add_argument("--sft-epochs", type=float, default=1.5, help="warm-start epochs")
    parser.add_argument("--sft-batch", type=int, default=demo["sft_batch"], help="warm-start examples per step")
    parser.add_argument("--warm-start-cache", type=Path, default=ROOT / "runs" / "llm" / "warm_start")
    parser.add_argument("--sft-learning-rate", type=float, default=LLMRecipeConfig.sft_learning_rate)
    parser.add_argument(
        "--sft-strategies",
        default=",".join(LLMRecipeConfig.sft_strategies),
        help="comma-separated candidates the warm start teaches (precise, sloppy, destructive_shortcut)",
    )
    parser.add_argument(
        "--train-families", default="", help="comma-separated task families the GRPO steps draw from (none: every one)"
    )
    parser.add_argument("--adv-std-floor", type=float, default=LLMRecipeConfig.adv_std_floor)
    parser.add_argument(
        "--reward",
        choices=("executed", "task"),
        default="executed",
        help="the harness's own reward: executed (1.0 when its statement ran without error) or task (the world's "
        "task reward, as the 0.3 recipe's agent computes it: correct + brevity bonus)",
    )
    parser.add_argument(
        "--eval-heldout", action="store_true", help="greedy answers on the 14 held-out tasks before and after each arm"
    )
    parser.add_argument(
        "--preset",
        choices=("recorded", "demo"),
        default="recorded",
        help="recorded: the defaults of the recorded governed run; demo: the 0.3 LLM recipe's demo design (warm start "
        "on the precise and shortcut answers of all 46 tasks, the three change families, the task reward, std floor "
        "0.01, 96 tokens, 5 steps, held-out greedy evaluation), so the ungoverned arm is a fair control",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="the smallest run that shows governed training: the demo's shipped warm start (none is trained) and "
        "design, 2 steps of 2 tasks x 2 rollouts, 64-token answers, no held-out evaluation (about 2 min on 2 cores)",
    )
    parser.add_argument(
        "--no-warm-start", action="store_true", help="sample from SmolLM2 as shipped (it writes little valid SQL)"
    )
    parser.add_argument(
        "--report", type=Path, help="print the per-step tables and write the plot of a finished run's results.json"
    )
    known = parser.parse_known_args(argv)[0]
    if known.preset == "demo" or known.quick:  # the preset's values, each still overridable by its flag
        # The demo's warm start is the adapter the repository ships: neither the demo nor the quick run trains one.
        parser.set_defaults(
            steps=demo["steps"],
            max_new_tokens=demo["max_new_tokens"],
            sft_tasks=demo["sft_tasks"],
            sft_epochs=demo["sft_epochs"],
            sft_batch=demo["sft_batch"],
            sft_learning_rate=demo["sft_learning_rate"],
            sft_strategies=",".join(demo["sft_strategies"]),
            train_families=",".join(demo["train_families"]),
            adv_std_floor=demo["adv_std_floor"],
            reward="task",
            eval_heldout=True,
            out=ROOT / "runs" / "gateway_demo",
        )
    if known.quick:
        parser.set_defaults(
            steps=2,
            tasks_per_step=2,
            group_size=2,
            max_new_tokens=64,
            eval_heldout=False,
            out=ROOT / "runs" / "gateway_quick",
        )
    return parser.parse_args(argv)


def main(argv: List[str] | None = None) -> Dict[str, Any]:
    args = parse_args(argv)
    if args.report:
        results = json.loads(args.report.read_text())
        print(report(results))
        plot(arms_of(results), args.report.with_name("attempted_destructive.png"))
        return results
    arms = [a.strip() for a in args.arms.split(",") if a.strip()]
    unknown = sorted(set(arms) - {"governed", "ungoverned"})
    if unknown or not arms:
        raise SystemExit(f"--arms {args.arms!r}: the arms are 'governed' and 'ungoverned' (unknown: {unknown})")
    if not (BIN / "agentos-gateway").exists():
        raise SystemExit(
            f"{sys.executable} is not an Agent Lightning 1.0 environment with this plugin (no agentos-gateway "
            "beside it); make one with: $(pyenv root)/versions/3.12.1/bin/python -m venv .venv312 && "
            ".venv312/bin/pip install -e '.[recipe10]', and run this script with .venv312/bin/python"
        )
    if not args.model_python.exists():
        raise SystemExit(
            f"--model-python {args.model_python}: no such Python; the model's process needs an environment with torch "
            "and the 0.3 LLM recipe's model code, made by the README's first command (.venv)"
        )
    started = time.perf_counter()
    load_start = os.getloadavg()
    args.out = args.out.resolve()  # the services run in args.out
    args.out.mkdir(parents=True, exist_ok=True)
    log(f"arms {arms}; load average {load_start}")
    grpo = LLMRecipeConfig(
        steps=args.steps,
        tasks_per_step=args.tasks_per_step,
        group_size=args.group_size,
        learning_rate=args.learning_rate,
        max_new_tokens=args.max_new_tokens,
        threads=args.threads,
        sft_tasks=args.sft_tasks,
        sft_epochs=args.sft_epochs,
        sft_batch=args.sft_batch,
        sft_learning_rate=args.sft_learning_rate,
        sft_strategies=tuple(x.strip() for x in args.sft_strategies.split(",") if x.strip()),
        train_families=tuple(x.strip() for x in args.train_families.split(",") if x.strip()),
        adv_std_floor=args.adv_std_floor,
    )
    results: Dict[str, Any] = {
        "command": " ".join(["python contrib/recipes/agentos/train_sql_gateway.py", *(argv or sys.argv[1:])]),
        "args": {k: str(v) for k, v in vars(args).items()},
        "arms": {},
        "started_at": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "load_average_start": load_start,
    }
    for arm in arms:
        results["arms"][arm] = run_arm(arm, args, grpo)
        results["world_version"] = results["arms"][arm].pop("world_version")
        (args.out / "results.json").write_text(json.dumps(results, indent=1))  # an arm's figures once it is done
    results.update(total_seconds=time.perf_counter() - started, load_average_end=os.getloadavg())
    (args.out / "results.json").write_text(json.dumps(results, indent=1))
    print(report(results), flush=True)  # the same tables as --report prints
    audits = {arm: record["audit"] for arm, record in results["arms"].items()}
    print(f"audit: {audits}; {results['total_seconds']:.0f} s in all", flush=True)
    plot(results["arms"], args.out / "attempted_destructive.png")
    return results


if __name__ == "__main__":
    main()
