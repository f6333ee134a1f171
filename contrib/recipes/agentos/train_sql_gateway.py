"""Governed RL of SmolLM2 on Agent Lightning 1.0, on CPU: the governed gateway, 1.0's controller and rows, our GRPO.

Two environments, because Agent Lightning 0.3 and 1.0 share a distribution name and this machine
has torch only for Python 3.11: this script runs in the 0.3 environment (``.venv``: the model,
the GRPO update of the 0.3 LLM recipe), and drives the 1.0 environment (``.venv312``) for
everything of 1.0. Top to bottom:

1. the text-to-SQL world's database and training tasks; the supervised warm start of the LLM
   recipe (cached under ``runs/llm/warm_start``), so the model writes SQL and, like the world's
   destructive shortcut, sometimes a DELETE or DROP;
2. the project's own OpenAI-compatible SmolLM2 policy server (token ids included), behind a
   tool-call parser (:class:`ToolCallParser`, the role of vLLM's ``--tool-call-parser``: SmolLM2
   has no function calling, so its SQL answer becomes a ``run_sql`` tool call, token ids unchanged);
3. 1.0's gateway, governed (``agentos-gateway``: a SQL policy denying DROP, DELETE and TRUNCATE,
   a FlightRecorder trail), and 1.0's ``agl-controller`` local runner;
4. per step, ``gateway_collect.py`` in the 1.0 environment: 1.0's ``AglRolloutManager`` with
   ``GovernanceHooks`` runs ``tasks x group`` rollouts of the unchanged harness
   (``gateway_sql_agent.py``: it executes every tool call it receives on its own copy of the
   database, reward 1.0 when a statement ran without error) and returns 1.0's training rows
   (triplets with token ids, the governed reward on the last one);
5. group-relative advantages from those rewards and one ``grpo_update`` (the 0.3 LLM recipe's
   update) on the rows' token ids; the server samples from the new weights; repeat.

Measured per step: the attempted-destructive rate (the 0.3 recipe's instrument, ``SQLPolicy`` in
record-only mode, on the SQL the model wrote), unparseable answers apart, the answers led by a
destructive keyword whether they parse or not, blocked calls at the gateway, destructive statements
the harness executed (must be 0), the mean governed reward.

The defaults are the 0.3 LLM recipe's ``--preset demo`` where the two overlap (its per-step
choice of tasks, answer length and one torch thread; the warm start's size is the one the demo
had when this recipe was measured: 21 training tasks x 3 candidates, 2.5 epochs), so the two
lines' governed arms can be read side by side.

    .venv/bin/python -u contrib/recipes/agentos/train_sql_gateway.py --out runs/gateway_train
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import socket
import statistics
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Dict, List

os.environ["HF_HUB_OFFLINE"] = "1"  # nothing is downloaded from a model hub
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # agentlightning 0.3 imports litellm: keep it offline

import httpx  # noqa: E402

from common import DENIED_STATEMENTS, group_advantages, log  # noqa: E402
from llm_grpo import grpo_update, sql_classifier  # noqa: E402
from sql_agent import extract_sql, llm_messages  # noqa: E402
from train_sql_llm import PRESETS, LLMRecipeConfig  # noqa: E402
from warm_start import warm_start  # noqa: E402

from agentlightning.contrib.env.agentos.sql_world import FAMILIES, WORLD_VERSION, SQLWorld  # noqa: E402

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
MODEL_NAME = "smollm2-135m"


class ToolCallParser:
    """An OpenAI-compatible front of the policy server that returns the model's SQL as a ``run_sql`` tool call.

    The harness asks with its own messages and a ``run_sql`` tool; the model is prompted with the
    LLM recipe's compact prompt for the same question (what the warm start taught it), and its
    answer's SQL is returned as one tool call. ``prompt_token_ids`` and ``token_ids`` are the
    policy server's, so 1.0's rows hold exactly what was sampled.
    """

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream.rstrip("/")
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def parse(self, body: Dict[str, Any]) -> Dict[str, Any]:
        question = next(m["content"] for m in reversed(body["messages"]) if m.get("role") == "user")
        upstream = {k: v for k, v in body.items() if k in ("model", "temperature", "top_p", "max_tokens")}
        upstream["messages"] = llm_messages(question, "compact")
        response = httpx.post(f"{self.upstream}/chat/completions", json=upstream, timeout=600).json()
        choice = response["choices"][0]
        sql = extract_sql(choice["message"]["content"] or "")
        call = {
            "id": "call_0",
            "type": "function",
            "function": {"name": "run_sql", "arguments": json.dumps({"query": sql})},
        }
        choice["message"] = {"role": "assistant", "content": None, "tool_calls": [call]}
        choice["finish_reason"] = "tool_calls"
        return response

    def _handler(self) -> type:
        parser = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server naming)
                body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))))
                try:
                    payload, status = json.dumps(parser.parse(body)).encode(), 200
                except Exception as error:  # the gateway sees an error, never a made-up answer
                    payload, status = json.dumps({"error": repr(error)}).encode(), 500
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args: Any) -> None:
                pass

        return Handler

    def stop(self) -> None:
        self.server.shutdown()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def gateway_yaml(out: Path, port: int) -> Path:
    """The governed gateway's configuration: 1.0's server.yaml plus the governance section."""
    config = {
        "defaults": ["server", "_self_"],
        "hydra": {"searchpath": ["pkg://agentlightning.config"], "run": {"dir": str(out / "hydra")}},
        "host": "127.0.0.1",
        "port": port,
        "key": "",
        "default_proxy": {
            "model_name": MODEL_NAME,
            "include_log_probs": False,
            "train": {"temperature": 1.0},
            "val": {"temperature": 0.7},
        },
        "governance": {
            "recorder_dir": str(out / "audit"),
            "policies": [
                {"sql": {"deny": list(DENIED_STATEMENTS), "tools": ["run_sql"], "dialect": "sqlite"}},
                {"tool_allow_list": {"allowed_tools": ["run_sql"]}},
            ],
            "penalties": {"clean_bonus": 0.0},
        },
    }
    path = out / "gateway.yaml"
    path.write_text(json.dumps(config, indent=1))  # JSON is YAML
    return path


def start_services(out: Path, venv312: Path) -> tuple:
    port = free_port()
    config = gateway_yaml(out, port)
    url = f"http://127.0.0.1:{port}"
    env = {**os.environ, "PYTHONPATH": str(HERE)}
    logs = [(out / f"{name}.log").open("w") for name in ("gateway", "controller")]
    gateway = subprocess.Popen(
        [str(venv312 / "bin" / "agentos-gateway"), "--config-dir", str(out), "--config-name", "gateway"],
        cwd=out,
        stdout=logs[0],
        stderr=subprocess.STDOUT,
    )
    deadline = time.monotonic() + 90
    while True:
        try:
            if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        if gateway.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"the governed gateway did not start; see {out / 'gateway.log'}")
        time.sleep(0.3)
    controller = subprocess.Popen(
        [
            str(venv312 / "bin" / "agl-controller"),
            "runner_type=local",
            f"agl_server.url={url}",
            "local_runner.poll_interval=0.5",
            f"hydra.run.dir={out / 'hydra-controller'}",
        ],
        cwd=out,
        env=env,
        stdout=logs[1],
        stderr=subprocess.STDOUT,
    )
    return url, config, [controller, gateway], logs


def collect(venv312: Path, out: Path, batch: Dict[str, Any], step: int) -> Dict[str, Any]:
    batch_path, rows_path = out / f"batch-{step}.json", out / f"rows-{step}.json"
    batch_path.write_text(json.dumps(batch))
    subprocess.run(
        [str(venv312 / "bin" / "python"), str(HERE / "gateway_collect.py"), str(batch_path), str(rows_path)],
        check=True,
        env={**os.environ, "PYTHONPATH": str(HERE)},
    )
    return json.loads(rows_path.read_text())


def step_tasks(world: SQLWorld, step: int, tasks_per_step: int) -> List[Any]:
    """The training tasks of ``step``: distinct families, drawn exactly as the 0.3 LLM recipe draws them (seed 0)."""
    train = world.split("train")
    by_family = {f: [t for t in train if t.family == f] for f in FAMILIES}
    families = [f for f in FAMILIES if by_family[f]]
    rng = random.Random(f"llm-grpo/0/{step}")
    chosen = rng.sample(families, min(tasks_per_step, len(families)))
    return [rng.choice(by_family[family]) for family in chosen]


def led_by_destructive_keyword(sql: str) -> bool:
    """Whether the answer's first SQL token is DELETE, DROP or TRUNCATE (sqlglot's tokenizer, no parse needed).

    A second, looser reading of intent beside the parsed instrument: the warm-started model also
    writes DELETEs that do not parse (``DELETE TOP n FROM ...``); the policy blocks those as
    unparseable, and this counts them as attempts too.

    >>> led_by_destructive_keyword("DELETE TOP 5 FROM orders"), led_by_destructive_keyword("SELECT 1")
    (True, False)
    """
    import sqlglot
    from sqlglot.tokens import TokenType

    try:
        tokens = sqlglot.tokenize(sql, read="sqlite")
    except sqlglot.errors.TokenError:
        return False
    return bool(tokens) and tokens[0].token_type in (TokenType.DELETE, TokenType.DROP, TokenType.TRUNCATE)


def destructive_led_rate(record: Dict[str, Any]) -> float:
    """The fraction of a step's rollouts whose answer is led by a destructive keyword, parsed or not."""
    examples = record["examples"]
    return sum(led_by_destructive_keyword(e["sql"]) for e in examples) / len(examples)


def step_table(steps: List[Dict[str, Any]]) -> str:
    """The per-step figures as a Markdown table (printed at the end, copied into the results page)."""
    columns = [
        ("attempted destructive (parsed: the 0.3 instrument)", lambda r: f"{r['attempted_destructive']:.3f}"),
        ("led by DELETE/DROP/TRUNCATE, parsed or not", lambda r: f"{destructive_led_rate(r):.3f}"),
        ("unparseable", lambda r: f"{r['unparseable']:.3f}"),
        ("blocked at the gateway", lambda r: f"{r['blocked_at_gateway']:.3f}"),
        ("destructive executed", lambda r: str(r["destructive_executed"])),
        ("mean governed reward", lambda r: f"{r['mean_governed_reward']:.1f}"),
        ("rollouts / rows", lambda r: f"{r['rollouts']} / {r['rows']}"),
        ("sequences updated", lambda r: str(r["update"].get("sequences", "?"))),
    ]
    lines = [
        "| metric | " + " | ".join(str(r["step"] + 1) for r in steps) + " |",
        "|---|" + "---|" * len(steps),
    ]
    lines += [f"| {name} | " + " | ".join(cell(r) for r in steps) + " |" for name, cell in columns]
    return "\n".join(lines)


def plot(steps: List[Dict[str, Any]], path: Path) -> None:
    """The attempted-destructive and unparseable rates per step, as a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    x = [r["step"] + 1 for r in steps]
    fig, ax = plt.subplots(figsize=(5, 3.2))
    ax.plot(x, [r["attempted_destructive"] for r in steps], "o-", label="attempted destructive (parsed)")
    ax.plot(x, [destructive_led_rate(r) for r in steps], "^-", label="led by DELETE/DROP/TRUNCATE")
    ax.plot(x, [r["unparseable"] for r in steps], "s--", label="unparseable")
    ax.set(xlabel="GRPO step", ylabel="fraction of rollouts", ylim=(-0.02, 1.02), xticks=x)
    ax.set_title("governed rollouts through Agent Lightning 1.0", fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: List[str] | None = None) -> Dict[str, Any]:
    demo = PRESETS["demo"]
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "runs" / "gateway")
    parser.add_argument("--venv312", type=Path, default=ROOT / ".venv312", help="the Agent Lightning 1.0 environment")
    parser.add_argument("--steps", type=int, default=4, help="GRPO steps")
    parser.add_argument("--tasks-per-step", type=int, default=demo["tasks_per_step"], help="tasks per step")
    parser.add_argument("--group-size", type=int, default=demo["group_size"], help="rollouts per task (a group)")
    parser.add_argument("--max-new-tokens", type=int, default=demo["max_new_tokens"], help="longest answer (tokens)")
    parser.add_argument("--learning-rate", type=float, default=5e-4, help="AdamW learning rate during RL")
    parser.add_argument("--threads", type=int, default=demo["threads"], help="torch threads (model and update)")
    # The warm start's size is the one the demo preset had when this recipe was measured (the demo
    # now teaches the precise and shortcut answers of all training tasks); the rest follows the demo.
    parser.add_argument("--sft-tasks", type=int, default=21, help="warm start on the first N training tasks")
    parser.add_argument("--sft-epochs", type=float, default=2.5, help="warm-start epochs")
    parser.add_argument("--sft-batch", type=int, default=demo["sft_batch"], help="warm-start examples per step")
    parser.add_argument("--warm-start-cache", type=Path, default=ROOT / "runs" / "llm" / "warm_start")
    parser.add_argument(
        "--quick", action="store_true", help="2 steps of 2 tasks x 2, a 7-task warm start of 2 epochs of 8"
    )
    parser.add_argument(
        "--no-warm-start", action="store_true", help="sample from SmolLM2 as shipped (it writes little valid SQL)"
    )
    parser.add_argument(
        "--report", type=Path, help="print the per-step table and write the plot of a finished run's results.json"
    )
    args = parser.parse_args(argv)
    if args.report:
        results = json.loads(args.report.read_text())
        print(step_table(results["steps"]))
        plot(results["steps"], args.report.with_name("attempted_destructive.png"))
        return results
    if args.quick:
        args.steps, args.tasks_per_step, args.group_size = 2, 2, 2
        args.sft_tasks, args.sft_epochs, args.sft_batch = 7, 2.0, 8
    if not (args.venv312 / "bin" / "agentos-gateway").exists():
        raise SystemExit(
            f"no Agent Lightning 1.0 environment at {args.venv312}; make it with: "
            "$(pyenv root)/versions/3.12.1/bin/python -m venv .venv312 && .venv312/bin/pip install -e '.[dev10]'"
        )
    started = time.perf_counter()
    load_start = os.getloadavg()
    args.out, args.venv312 = args.out.resolve(), args.venv312.resolve()  # the services run in args.out
    args.out.mkdir(parents=True, exist_ok=True)
    # The 1.0 services first: a broken configuration shows before minutes of warm start.
    url, config, processes, logs = start_services(args.out, args.venv312)
    log(f"governed gateway and agl-controller up at {url} (load average {load_start})")
    server = tool_parser = None
    try:
        import torch

        from policy_model import PolicyModel
        from policy_server import PolicyServer
        from smollm import load_model, load_tokenizer

        torch.set_num_threads(args.threads)
        world = SQLWorld.create(args.out / "shop.db", 0, overwrite=True)
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
        )
        if args.no_warm_start:
            ws_record, base, tokenizer = {"skipped": True}, load_model(), load_tokenizer()
        else:
            ws = warm_start(world, grpo, args.warm_start_cache)
            ws_record, base, tokenizer = ws.record, ws.model, ws.tokenizer
        # The RL adapters exactly as the 0.3 LLM recipe adds them.
        policy = PolicyModel(
            base, tokenizer, lora_rank=grpo.lora_rank, lora_alpha=grpo.lora_alpha, precision=grpo.precision
        )
        log(f"policy ready ({policy.precision}); load average {os.getloadavg()}")
        optimizer = torch.optim.AdamW(policy.trainable_parameters(), lr=grpo.learning_rate, weight_decay=0.0)
        server = PolicyServer(policy, MODEL_NAME, max_new_tokens=grpo.max_new_tokens).start()
        tool_parser = ToolCallParser(server.endpoint)
        classify = sql_classifier()
        steps = []
        for step in range(args.steps):
            log(f"step {step}: collecting {args.tasks_per_step} x {args.group_size} rollouts through the gateway")
            chosen = step_tasks(world, step, args.tasks_per_step)
            inputs = []
            for task in chosen:
                for sample in range(args.group_size):
                    db = args.out / "dbs" / f"{step}-{task.task_id}-{sample}.db"
                    db.parent.mkdir(exist_ok=True)
                    shutil.copy(world.db_path, db)
                    inputs.append(
                        {
                            "task_id": task.task_id,
                            "question": task.question,
                            "db_path": str(db),
                            "log_path": str(db.with_suffix(".jsonl")),
                            "reward": "executed",
                            "max_turns": 1,
                        }
                    )
            batch = {"url": url, "config": str(config), "model": MODEL_NAME, "step": step, "inputs": inputs}
            batch["model_endpoint"] = tool_parser.endpoint
            collected = collect(args.venv312, args.out, batch, step)
            rows = collected["rows"]
            for row in rows:
                triplet = row["triplets"][-1] if row["triplets"] else None
                row["sql"] = (
                    extract_sql(tokenizer.decode(triplet["response_ids"], skip_special_tokens=True)) if triplet else ""
                )
                row["class"] = classify(row["sql"])
                executed_log = Path(row["input"]["log_path"])  # what the harness ran, one JSON line per statement
                lines = executed_log.read_text().splitlines() if executed_log.exists() else []
                executed = [json.loads(line)["query"] for line in lines]
                row["destructive_executed"] = sum(classify(q) == "destructive" for q in executed)
            samples = []
            for task in chosen:
                group = [r for r in rows if r["input"]["task_id"] == task.task_id and r["triplets"]]
                advantages = group_advantages([r["final_reward"] for r in group], grpo.adv_std_floor)
                for row, advantage in zip(group, advantages):
                    samples.extend((t["prompt_ids"], t["response_ids"], advantage) for t in row["triplets"])
            with server.lock:
                update = grpo_update(policy, optimizer, samples, grpo)
            n = len(rows)
            record = {
                "step": step,
                "rollouts": n,
                "rows": sum(len(r["triplets"]) for r in rows),
                "attempted_destructive": sum(r["class"] == "destructive" for r in rows) / n,
                "unparseable": sum(r["class"] == "unparseable" for r in rows) / n,
                "blocked_at_gateway": sum(any(d["verdict"] == "blocked" for d in r["decisions"]) for r in rows) / n,
                "destructive_executed": sum(r["destructive_executed"] for r in rows),
                "mean_governed_reward": statistics.fmean(r["final_reward"] for r in rows),
                "collect_seconds": collected["seconds"],
                "update": update,
                "tasks": [t.task_id for t in chosen],
                "load_average": os.getloadavg(),
                "examples": [{k: r[k] for k in ("sql", "class", "final_reward", "decisions")} for r in rows],
            }
            steps.append(record)
            (args.out / "steps.json").write_text(json.dumps(steps, indent=1))  # progress, read while it runs
            print(
                f"step {step}: attempted destructive {record['attempted_destructive']:.2f}, unparseable "
                f"{record['unparseable']:.2f}, blocked {record['blocked_at_gateway']:.2f}, destructive executed "
                f"{record['destructive_executed']}, mean reward {record['mean_governed_reward']:.1f} "
                f"({n} rollouts, {record['rows']} rows, collect {collected['seconds']:.0f} s, "
                f"update {update['seconds']:.0f} s)",
                flush=True,
            )
    finally:
        for process in processes:
            process.terminate()
            process.wait(timeout=30)
        for handle in logs:
            handle.close()
        if tool_parser is not None:
            tool_parser.stop()
        if server is not None:
            server.stop()
    from agentlightning.contrib.kernel.agentos.audit import open_flight_recorder

    audit = [open_flight_recorder(f).verify_integrity() for f in sorted((args.out / "audit").glob("gateway-*.db"))]
    results = {
        "command": " ".join(["python contrib/recipes/agentos/train_sql_gateway.py", *(argv or sys.argv[1:])]),
        "world_version": WORLD_VERSION,
        "warm_start": ws_record,
        "args": {k: str(v) for k, v in vars(args).items()},
        "steps": steps,
        "audit": audit,
        "total_seconds": time.perf_counter() - started,
        "load_average_start": load_start,
        "load_average_end": os.getloadavg(),
    }
    (args.out / "results.json").write_text(json.dumps(results, indent=1))
    print(step_table(steps), flush=True)  # the same table as --report prints
    print(f"audit: {audit}; {results['total_seconds']:.0f} s in all", flush=True)
    if steps:
        plot(steps, args.out / "attempted_destructive.png")
    return results


if __name__ == "__main__":
    main()
