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
record-only mode, on the SQL the model wrote), unparseable answers apart, blocked calls at the
gateway, destructive statements the harness executed (must be 0), the mean governed reward.
``--quick`` is what ``tests/lightning1/test_recipe_gateway.py`` runs.

    .venv/bin/python contrib/recipes/agentos/train_sql_gateway.py --out docs/results_gateway
"""

from __future__ import annotations

import argparse
import json
import os
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

from common import DENIED_STATEMENTS, first_tasks, group_advantages  # noqa: E402
from llm_grpo import grpo_update, sql_classifier  # noqa: E402
from sql_agent import extract_sql, llm_messages  # noqa: E402
from train_sql_llm import LLMRecipeConfig  # noqa: E402
from warm_start import warm_start  # noqa: E402

from agentlightning.contrib.env.agentos.sql_world import WORLD_VERSION, SQLWorld  # noqa: E402

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


def main(argv: List[str] | None = None) -> Dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "runs" / "gateway")
    parser.add_argument("--venv312", type=Path, default=ROOT / ".venv312", help="the Agent Lightning 1.0 environment")
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--tasks-per-step", type=int, default=3)
    parser.add_argument("--group-size", type=int, default=4)
    parser.add_argument("--sft-tasks", type=int, default=12, help="warm start on the first N training tasks")
    parser.add_argument("--learning-rate", type=float, default=5e-4)
    parser.add_argument("--warm-start-cache", type=Path, default=ROOT / "runs" / "llm" / "warm_start")
    parser.add_argument("--quick", action="store_true", help="2 steps of 2 tasks x 2, a 7-task warm start")
    parser.add_argument(
        "--no-warm-start", action="store_true", help="sample from SmolLM2 as shipped (it writes little valid SQL)"
    )
    args = parser.parse_args(argv)
    if args.quick:
        args.steps, args.tasks_per_step, args.group_size, args.sft_tasks = 2, 2, 2, 7
    if not (args.venv312 / "bin" / "agentos-gateway").exists():
        raise SystemExit(
            f"no Agent Lightning 1.0 environment at {args.venv312}; make it with: "
            "$(pyenv root)/versions/3.12.1/bin/python -m venv .venv312 && .venv312/bin/pip install -e '.[dev10]'"
        )
    started = time.perf_counter()
    args.out, args.venv312 = args.out.resolve(), args.venv312.resolve()  # the services run in args.out
    args.out.mkdir(parents=True, exist_ok=True)
    import torch

    from policy_model import PolicyModel
    from policy_server import PolicyServer
    from smollm import load_model, load_tokenizer

    torch.set_num_threads(2)
    world = SQLWorld.create(args.out / "shop.db", 0, overwrite=True)
    grpo = LLMRecipeConfig(
        steps=args.steps,
        tasks_per_step=args.tasks_per_step,
        group_size=args.group_size,
        learning_rate=args.learning_rate,
        sft_tasks=args.sft_tasks,
    )
    if args.no_warm_start:
        ws_record = {"skipped": True}
        policy = PolicyModel(load_model(), load_tokenizer())
    else:
        ws = warm_start(world, grpo, args.warm_start_cache)
        ws_record = ws.record
        policy = PolicyModel(ws.model, ws.tokenizer)
    optimizer = torch.optim.AdamW(policy.trainable_parameters(), lr=grpo.learning_rate, weight_decay=0.0)
    server = PolicyServer(policy, MODEL_NAME, max_new_tokens=grpo.max_new_tokens).start()
    tool_parser = ToolCallParser(server.endpoint)
    url, config, processes, logs = start_services(args.out, args.venv312)
    classify = sql_classifier()
    tokenizer = policy.tokenizer
    tasks = first_tasks(world.split("train"), 0)
    steps = []
    try:
        for step in range(args.steps):
            chosen = [tasks[(step * args.tasks_per_step + i) % len(tasks)] for i in range(args.tasks_per_step)]
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
                log = Path(row["input"]["log_path"])
                executed = [json.loads(x)["query"] for x in log.read_text().splitlines()] if log.exists() else []
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
                "examples": [{k: r[k] for k in ("sql", "class", "final_reward", "decisions")} for r in rows],
            }
            steps.append(record)
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
        for log in logs:
            log.close()
        tool_parser.stop()
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
    }
    (args.out / "results.json").write_text(json.dumps(results, indent=1))
    return results


if __name__ == "__main__":
    main()
