"""The model's own process of the 1.0 recipe: SmolLM2, its warm start, the GRPO update, the world's scorer.

``train_sql_gateway.py`` runs in the Agent Lightning 1.0 environment and imports nothing of the 0.3
line; everything that needs torch (and the 0.3 LLM recipe's model code) runs here, in the
environment that has it (``--model-python``, by default ``.venv/bin/python``), one process per arm,
started by the recipe and driven over local HTTP:

* the project's OpenAI-compatible SmolLM2 policy server (token ids included), behind a tool-call
  parser (:class:`ToolCallParser`): the model endpoint the gateway forwards to;
* the text-to-SQL world's task scorer (:class:`TaskScorer`), the harness's ``reward_url``;
* a control server answering ``{"op": ...}``: ``tasks`` (a step's training tasks, each with its
  own copy of the database), ``update`` (the SQL of each row's answer, group-relative advantages
  from the rows' trained rewards, one ``grpo_update`` on their token ids), ``heldout`` (greedy
  answers on the held-out tasks) and ``stop``.

When the model is ready it writes ``ready.json`` (the endpoints, the world's version) in its
output folder; the recipe waits for that file.

    python gateway_model.py <out>/model-config.json
"""

from __future__ import annotations

import json
import os
import random
import shutil
import sqlite3
import sys
import threading
from pathlib import Path
from typing import Any, Dict, List

os.environ["HF_HUB_OFFLINE"] = "1"  # nothing is downloaded from a model hub
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # agentlightning 0.3 imports litellm: keep it offline

import httpx  # noqa: E402

from common import ATTEMPTED, attempt_kind, group_advantages, log, sql_classifier  # noqa: E402
from gateway_services import JSONServer  # noqa: E402
from llm_config import LLMRecipeConfig  # noqa: E402
from sql_agent import extract_sql, llm_messages, task_reward  # noqa: E402

from agentlightning.contrib.env.agentos.sql_world import FAMILIES, WORLD_VERSION, SQLWorld  # noqa: E402

MODEL_NAME = "smollm2-135m"


class ToolCallParser:
    """An OpenAI-compatible front of the policy server that returns the model's SQL as a ``run_sql`` tool call.

    The harness asks with its own messages and a ``run_sql`` tool; the model is prompted with the
    LLM recipe's compact prompt for the same question (what the warm start taught it), and its
    answer's SQL is returned as one tool call. ``prompt_token_ids`` and ``token_ids`` are the
    policy server's, so 1.0's rows hold exactly what was sampled. An error is a 500 for the
    gateway, never a made-up answer.
    """

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream.rstrip("/")
        self.server = JSONServer(self.parse).start()

    @property
    def endpoint(self) -> str:
        return self.server.endpoint

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

    def stop(self) -> None:
        self.server.stop()


class TaskScorer:
    """The text-to-SQL world's own task reward for what the harness executed (``"reward_url"`` of its task).

    The 0.3 recipe's agent scores an answer by running it in the world's sandbox, checking the
    task's outcome and adding the brevity bonus (``task_reward``); the harness knows nothing of the
    world, so it posts what it executed here and posts the reward this answers. Nothing executed (a
    blocked call, or no tool call) scores 0.0, as in the 0.3 agent. Each statement runs in a
    transaction that is rolled back, on the sandbox's in-memory copy.
    """

    def __init__(self, world: SQLWorld) -> None:
        self.world = world
        self.sandbox = world.sandbox()
        self.lock = threading.Lock()
        self.server = JSONServer(self.answer).start()

    @property
    def endpoint(self) -> str:
        return self.server.endpoint + "/reward"

    def answer(self, body: Dict[str, Any]) -> Dict[str, Any]:
        executed = body.get("executed") or []
        if not executed:
            return {"reward": 0.0, "correct": False}
        correct, reward = self.score(str(body["task_id"]), executed[-1])
        return {"reward": reward, "correct": correct}

    def score(self, task_id: str, sql: str) -> tuple:
        """``(correct, reward)`` of ``sql`` for the task, exactly as the 0.3 recipe's ``SQLAgent`` computes them."""
        spec = self.world.task(task_id)
        with self.lock:
            self.sandbox.begin()
            try:
                correct = self.sandbox.check(spec, self.sandbox.execute(sql))
            except (sqlite3.Error, ValueError):  # the 0.3 agent: no result, reward 0.0
                return False, 0.0
            finally:
                self.sandbox.rollback()
        return correct, task_reward(correct, sql)

    def stop(self) -> None:
        self.server.stop()


def evaluate_heldout(policy: Any, tokenizer: Any, world: SQLWorld, scorer: TaskScorer, max_new_tokens: int) -> Dict:
    """Greedy answers of the model on every held-out task, measured as the 0.3 LLM recipe measures them.

    One answer per task by greedy decoding (deterministic: both arms' "before" are the same
    answers), straight from the model, not through a gateway: this measures the policy, whichever
    line trained it. Attempted destructive counts a DROP, DELETE or TRUNCATE parsed or not
    (:func:`attempt_kind`); accuracy is the world's check, on a rolled-back sandbox.
    """
    from policy_model import prompt_ids

    tasks = world.split("heldout")
    prompts = [prompt_ids(tokenizer, llm_messages(t.question, "compact")) for t in tasks]
    responses = policy.generate(prompts, temperature=0.0, max_new_tokens=max_new_tokens, seed=0)
    classify = sql_classifier()
    answers = []
    for task, response in zip(tasks, responses):
        sql = extract_sql(tokenizer.decode(response, skip_special_tokens=True))
        correct, _ = scorer.score(task.task_id, sql) if sql.strip() else (False, 0.0)
        answers.append(
            {"task_id": task.task_id, "family": task.family, "sql": sql, "class": classify(sql), "correct": correct}
        )
    n = len(answers)
    return {
        "tasks": n,
        "attempted_destructive": sum(attempt_kind(a["class"], a["sql"]) in ATTEMPTED for a in answers) / n,
        "unparseable": sum(a["class"] == "unparseable" for a in answers) / n,
        "accuracy": sum(a["correct"] for a in answers) / n,
        "answers": answers,
    }


def step_tasks(world: SQLWorld, step: int, tasks_per_step: int, families_allowed: tuple = ()) -> List[Any]:
    """The training tasks of ``step``: distinct families, drawn exactly as the 0.3 LLM recipe draws them (seed 0).

    ``families_allowed`` (none: every family) is the 0.3 recipe's ``--train-families``.
    """
    train = [t for t in world.split("train") if not families_allowed or t.family in families_allowed]
    by_family = {f: [t for t in train if t.family == f] for f in FAMILIES}
    families = [f for f in FAMILIES if by_family[f]]
    rng = random.Random(f"llm-grpo/0/{step}")
    chosen = rng.sample(families, min(tasks_per_step, len(families)))
    return [rng.choice(by_family[family]) for family in chosen]


class ModelProcess:
    """One arm's model: the warm-started policy, its server behind the tool-call parser, the control server."""

    def __init__(self, config: Dict[str, Any]) -> None:
        import torch

        from llm_grpo import grpo_update
        from policy_model import PolicyModel
        from policy_server import PolicyServer
        from smollm import load_model, load_tokenizer
        from warm_start import warm_start

        self.config = config
        self.out = Path(config["out"])
        self.grpo = LLMRecipeConfig(**{k: tuple(v) if isinstance(v, list) else v for k, v in config["grpo"].items()})
        self.grpo_update = grpo_update
        self.world = SQLWorld.create(self.out / "shop.db", 0, overwrite=True)
        self.scorer = TaskScorer(self.world) if config["reward"] == "task" or config["eval_heldout"] else None
        torch.set_num_threads(self.grpo.threads)
        if config["no_warm_start"]:
            self.warm_start, base, self.tokenizer = {"skipped": True}, load_model(), load_tokenizer()
        else:  # built once and cached; every arm starts from the same weights
            ws = warm_start(self.world, self.grpo, Path(config["warm_start_cache"]))
            self.warm_start, base, self.tokenizer = ws.record, ws.model, ws.tokenizer
        # The RL adapters exactly as the 0.3 LLM recipe adds them.
        self.policy = PolicyModel(
            base,
            self.tokenizer,
            lora_rank=self.grpo.lora_rank,
            lora_alpha=self.grpo.lora_alpha,
            precision=self.grpo.precision,
        )
        log(f"policy ready ({self.policy.precision}); load average {os.getloadavg()}")
        self.optimizer = torch.optim.AdamW(
            self.policy.trainable_parameters(), lr=self.grpo.learning_rate, weight_decay=0.0
        )
        self.server = PolicyServer(self.policy, MODEL_NAME, max_new_tokens=self.grpo.max_new_tokens).start()
        self.tool_parser = ToolCallParser(self.server.endpoint)
        self.stopped = threading.Event()
        self.control = JSONServer(self.answer).start()

    def ready(self) -> Dict[str, Any]:
        return {
            "control": self.control.endpoint,
            "model_endpoint": self.tool_parser.endpoint,
            "reward_url": self.scorer.endpoint if self.scorer is not None else None,
            "world_version": WORLD_VERSION,
            "warm_start": self.warm_start,
        }

    def answer(self, body: Dict[str, Any]) -> Dict[str, Any]:
        op = body.get("op")
        if op == "tasks":
            return self.tasks(int(body["step"]))
        if op == "update":
            return self.update(body["rows"], body["tasks"])
        if op == "heldout":
            with self.server.lock:
                return evaluate_heldout(self.policy, self.tokenizer, self.world, self.scorer, self.grpo.max_new_tokens)
        if op == "stop":
            self.stopped.set()
            return {"stopping": True}
        raise ValueError(f"unknown op {op!r}; the ops are tasks, update, heldout, stop")

    def tasks(self, step: int) -> Dict[str, Any]:
        """The step's tasks and one rollout input per sample, each on its own copy of the database."""
        chosen = step_tasks(self.world, step, self.grpo.tasks_per_step, self.grpo.train_families)
        inputs = []
        reward = {"reward_url": self.scorer.endpoint} if self.config["reward"] == "task" else {"reward": "executed"}
        for task in chosen:
            for sample in range(self.grpo.group_size):
                db = self.out / "dbs" / f"{step}-{task.task_id}-{sample}.db"
                db.parent.mkdir(exist_ok=True)
                shutil.copy(self.world.db_path, db)
                inputs.append(
                    {
                        "task_id": task.task_id,
                        "question": task.question,
                        "db_path": str(db),
                        "log_path": str(db.with_suffix(".jsonl")),
                        "max_turns": 1,
                        **reward,
                    }
                )
        return {"tasks": [t.task_id for t in chosen], "inputs": inputs}

    def update(self, rows: List[Dict[str, Any]], tasks: List[str]) -> Dict[str, Any]:
        """Each row's answer as SQL, then one GRPO update from the rows' trained rewards (grouped by task)."""
        sqls = []
        for row in rows:
            triplet = row["triplets"][-1] if row["triplets"] else None
            text = self.tokenizer.decode(triplet["response_ids"], skip_special_tokens=True) if triplet else ""
            sqls.append(extract_sql(text) if triplet else "")
        samples = []
        for task_id in tasks:
            group = [r for r in rows if r["input"]["task_id"] == task_id and r["triplets"]]
            advantages = group_advantages([r["final_reward"] for r in group], self.grpo.adv_std_floor)
            for row, advantage in zip(group, advantages):
                samples.extend((t["prompt_ids"], t["response_ids"], advantage) for t in row["triplets"])
        with self.server.lock:
            update = self.grpo_update(self.policy, self.optimizer, samples, self.grpo)
        return {"sqls": sqls, "update": update}

    def close(self) -> None:
        for server in (self.control, self.tool_parser, self.server, self.scorer):
            if server is not None:
                server.stop()


def main(argv: List[str] | None = None) -> None:
    config_path = Path((argv or sys.argv[1:])[0])
    config = json.loads(config_path.read_text())
    process = ModelProcess(config)
    try:
        ready = config_path.with_name("ready.json")
        ready.with_suffix(".tmp").write_text(json.dumps(process.ready()))
        ready.with_suffix(".tmp").replace(ready)  # whole, or not there
        process.stopped.wait()
    finally:
        process.close()


if __name__ == "__main__":
    main()
