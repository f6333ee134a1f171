"""The policy being trained, served to the runners as an OpenAI-compatible endpoint with token ids.

Agent Lightning's VERL algorithm serves the model it trains through vLLM and publishes the address
as the ``main_llm`` resource; agents call it with an ordinary OpenAI client, the runner's tracer
records the call as a span, and ``TracerTraceToTriplet`` turns that span into a (prompt, response,
reward) triplet *with token ids*. This module does the same on CPU for a ``transformers`` model:

* ``POST /v1/chat/completions``: messages -> the model's chat template -> prompt token ids ->
  sampled response. Concurrent requests are batched (left-padded) for throughput.
* The response carries the token ids the way vLLM does with ``return_token_ids``: a top-level
  ``prompt_token_ids`` and ``choices[0].token_ids``. agentlightning's AgentOps instrumentation
  (``agentlightning/instrumentation/agentops.py``) copies exactly these into the
  ``openai.chat.completion`` span as ``prompt_token_ids`` and ``response_token_ids``, which the
  adapter reads. The response ids are the sampled ids, end token included: what is trained on is
  what was sampled, not a re-tokenisation of the text.
* ``GET /v1/models`` lists the served model; ``GET /health`` answers ``ok``.

The server runs in the algorithm's process on threads (HTTP handlers + one generation worker);
the algorithm holds :attr:`PolicyServer.lock` while it updates the weights, so no batch is ever
sampled from half-updated weights.
"""

from __future__ import annotations

import json
import queue
import threading
import time
import uuid
from dataclasses import KW_ONLY, dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Dict, List, Optional


@dataclass
class _Job:
    prompt: List[int]
    temperature: float
    top_p: float
    max_tokens: int
    done: threading.Event = field(default_factory=threading.Event)
    response: Optional[List[int]] = None
    error: Optional[str] = None


@dataclass
class ServerStats:
    """Counters of what the server generated (reset with :meth:`PolicyServer.reset_stats`)."""

    requests: int = 0
    batches: int = 0
    prompt_tokens: int = 0
    generated_tokens: int = 0
    generation_seconds: float = 0.0

    def tokens_per_second(self) -> float:
        """Generated tokens per second of generation (prefill included in the time)."""
        return self.generated_tokens / self.generation_seconds if self.generation_seconds > 0 else 0.0


@dataclass(eq=False)
class PolicyServer:
    """Serve a :class:`policy_model.PolicyModel` on ``http://host:port/v1``.

    Args:
        policy: the model to sample from (its bf16 generation copy).
        model_name: the name ``/v1/models`` reports (requests may name any version of it).
        host, port: where to listen (port 0: a free one).
        max_batch: most requests sampled together.
        batch_window_s: after a request arrives, how long to wait for more before sampling.
        max_new_tokens: upper bound on ``max_tokens`` of any request.
        seed: base of the sampling seeds (batch ``i`` samples with ``seed + i``).
    """

    policy: Any = field(repr=False)
    model_name: str
    _: KW_ONLY
    host: str = "127.0.0.1"
    port: int = 0
    max_batch: int = 16
    batch_window_s: float = 0.25
    max_new_tokens: int = 128
    seed: int = 0

    def __post_init__(self) -> None:
        if self.max_batch < 1 or self.max_new_tokens < 1:
            raise ValueError("max_batch and max_new_tokens must be >= 1")
        self.lock = threading.Lock()
        self.stats = ServerStats()
        self._jobs: "queue.Queue[_Job]" = queue.Queue()
        self._stop = threading.Event()
        self._batch_index = 0
        server = ThreadingHTTPServer((self.host, self.port), self._handler_class())
        server.daemon_threads = True
        self._http = server
        self._threads: List[threading.Thread] = []

    @property
    def endpoint(self) -> str:
        host, port = self._http.server_address[:2]
        return f"http://{host}:{port}/v1"

    def start(self) -> "PolicyServer":
        """Start the HTTP and generation threads; returns self."""
        for target, name in (
            (self._http.serve_forever, "policy-server-http"),
            (self._generate_loop, "policy-server-generate"),
        ):
            thread = threading.Thread(target=target, name=name, daemon=True)
            thread.start()
            self._threads.append(thread)
        return self

    def stop(self) -> None:
        """Stop serving (pending requests get a 503)."""
        self._stop.set()
        self._http.shutdown()
        self._http.server_close()
        for thread in self._threads:
            thread.join(timeout=10)

    def reset_stats(self) -> ServerStats:
        """Return the counters so far and start new ones."""
        stats, self.stats = self.stats, ServerStats()
        return stats

    # -- generation
    def submit(
        self,
        prompt: List[int],
        *,
        temperature: float = 1.0,
        top_p: float = 1.0,
        max_tokens: int = 128,
        timeout: float = 600.0,
    ) -> List[int]:
        """Sample a response to ``prompt`` (token ids) through the batching queue; returns its token ids."""
        job = _Job(list(prompt), float(temperature), float(top_p), min(int(max_tokens), self.max_new_tokens))
        self._jobs.put(job)
        if not job.done.wait(timeout):
            raise TimeoutError(f"no response within {timeout} s")
        if job.error is not None:
            raise RuntimeError(job.error)
        assert job.response is not None
        return job.response

    def _generate_loop(self) -> None:
        while not self._stop.is_set():
            try:
                first = self._jobs.get(timeout=0.1)
            except queue.Empty:
                continue
            batch = [first]
            deadline = time.monotonic() + self.batch_window_s
            while len(batch) < self.max_batch:
                try:
                    batch.append(self._jobs.get(timeout=max(0.0, deadline - time.monotonic())))
                    deadline = time.monotonic() + self.batch_window_s  # more may be on their way
                except queue.Empty:
                    break
            # Requests with different sampling settings are sampled in separate batches.
            by_setting: Dict[tuple, List[_Job]] = {}
            for job in batch:
                by_setting.setdefault((job.temperature, job.top_p, job.max_tokens), []).append(job)
            for (temperature, top_p, max_tokens), jobs in by_setting.items():
                self._run(jobs, temperature, top_p, max_tokens)

    def _run(self, jobs: List[_Job], temperature: float, top_p: float, max_tokens: int) -> None:
        try:
            with self.lock:
                started = time.perf_counter()
                seed = self.seed + self._batch_index
                self._batch_index += 1
                responses = self.policy.generate(
                    [j.prompt for j in jobs], temperature=temperature, top_p=top_p, max_new_tokens=max_tokens, seed=seed
                )
                elapsed = time.perf_counter() - started
            self.stats.batches += 1
            self.stats.requests += len(jobs)
            self.stats.prompt_tokens += sum(len(j.prompt) for j in jobs)
            self.stats.generated_tokens += sum(len(r) for r in responses)
            self.stats.generation_seconds += elapsed
            for job, response in zip(jobs, responses):
                job.response = response
                job.done.set()
        except Exception as exc:  # every waiting request gets the error, the loop goes on
            for job in jobs:
                job.error = f"{type(exc).__name__}: {exc}"
                job.done.set()

    # -- HTTP
    def _completion(self, body: Dict[str, Any]) -> Dict[str, Any]:
        from policy_model import prompt_ids

        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            raise ValueError("'messages' must be a non-empty list of chat messages")
        if int(body.get("n", 1)) != 1:
            raise ValueError("only n=1 is served (one sample per request)")
        tokenizer = self.policy.tokenizer
        prompt = prompt_ids(tokenizer, [{"role": m["role"], "content": m["content"]} for m in messages])
        response = self.submit(
            prompt,
            temperature=float(body.get("temperature", 1.0)),
            top_p=float(body.get("top_p", 1.0)),
            max_tokens=int(body.get("max_tokens") or body.get("max_completion_tokens") or self.max_new_tokens),
        )
        finished = bool(response) and response[-1] == self.policy.end_id
        text = tokenizer.decode(response, skip_special_tokens=True)
        return {
            "id": f"chatcmpl-{uuid.uuid4().hex}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": str(body.get("model", self.model_name)),
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text},
                    "finish_reason": "stop" if finished else "length",
                    "token_ids": response,  # vLLM's return_token_ids field
                }
            ],
            "prompt_token_ids": prompt,  # vLLM's return_token_ids field
            "usage": {
                "prompt_tokens": len(prompt),
                "completion_tokens": len(response),
                "total_tokens": len(prompt) + len(response),
            },
        }

    def _handler_class(self) -> type:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _send(self, status: int, payload: Dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:  # noqa: N802 (http.server naming)
                if self.path.rstrip("/").endswith("/models"):
                    self._send(
                        200,
                        {
                            "object": "list",
                            "data": [{"id": server.model_name, "object": "model", "owned_by": "agentos-recipe"}],
                        },
                    )
                elif self.path.rstrip("/").endswith("/health"):
                    self._send(200, {"status": "ok"})
                else:
                    self._send(404, {"error": {"message": f"no route {self.path}"}})

            def do_POST(self) -> None:  # noqa: N802
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self._send(404, {"error": {"message": f"no route {self.path}; use /v1/chat/completions"}})
                    return
                try:
                    body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                    self._send(200, server._completion(body))
                except (ValueError, KeyError, TypeError) as exc:
                    self._send(400, {"error": {"message": f"{type(exc).__name__}: {exc}"}})
                except Exception as exc:
                    self._send(500, {"error": {"message": f"{type(exc).__name__}: {exc}"}})

            def log_message(self, *args: Any) -> None:
                pass

        return Handler
