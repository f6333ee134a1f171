"""What the Agent Lightning 1.0 recipe and its tests share: the gateway's configuration and processes, a JSON server.

Plain standard library and httpx, so it imports in both environments (the recipe's 0.3 one, where
the model runs, and the 1.0 one, where the tests run):

* :func:`free_port`;
* :func:`server_config`: 1.0's server keys (host, port, key, the default proxy) with an optional
  ``governance`` section, as the gateway's YAML gives them;
* :func:`gateway_command` and :func:`controller_command`: the governed ``agentos-gateway`` (or
  1.0's own ``agl-server``, ungoverned) and the ``agl-controller`` local runner, as commands;
* :func:`start_gateway_and_controller` and :func:`wait_healthy`: both processes started, the
  gateway healthy first;
* :class:`JSONServer`: a threaded local HTTP server answering each JSON POST with a function of
  its body (the recipe's tool-call parser and the tests' scripted model are two such functions).

>>> config = server_config(8080, "policy")
>>> (config["port"], config["default_proxy"]["model_name"], "governance" in config)
(8080, 'policy', False)
>>> controller_command(Path("bin"), "http://127.0.0.1:8080", Path("hydra"))[:3]
['bin/agl-controller', 'runner_type=local', 'agl_server.url=http://127.0.0.1:8080']
"""

from __future__ import annotations

import json
import socket
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import IO, Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

import httpx


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def server_config(port: int, model_name: str, governance: Optional[Mapping[str, Any]] = None) -> Dict[str, Any]:
    """1.0's server keys for a local gateway in front of ``model_name``, plus ``governance`` when given."""
    config: Dict[str, Any] = {
        "host": "127.0.0.1",
        "port": port,
        "key": "",
        "default_proxy": {
            "model_name": model_name,
            "include_log_probs": False,
            "train": {"temperature": 1.0},
            "val": {"temperature": 0.7},
        },
    }
    if governance is not None:
        config["governance"] = dict(governance)
    return config


def gateway_command(bin_dir: Path, config: Path, governed: bool = True) -> List[str]:
    """The governed gateway (``agentos-gateway``) or 1.0's own (``agl-server``), from a Hydra config file."""
    program = "agentos-gateway" if governed else "agl-server"
    return [str(bin_dir / program), "--config-dir", str(config.parent), "--config-name", config.stem]


def controller_command(bin_dir: Path, url: str, hydra_dir: Path) -> List[str]:
    """1.0's ``agl-controller`` local runner, polling the gateway at ``url`` for rollouts to start."""
    return [
        str(bin_dir / "agl-controller"),
        "runner_type=local",
        f"agl_server.url={url}",
        "local_runner.poll_interval=0.5",
        f"hydra.run.dir={hydra_dir}",
    ]


def wait_healthy(url: str, process: subprocess.Popen, seconds: float = 180) -> None:
    """Until ``url/healthz`` answers 200; a process that exits first is reported at once."""
    # Generous: on the shared 2-core machine at load average 12, run under nice, the gateway's start-up (1.0's
    # imports, hydra) took more than 60 s.
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{process.args} exited with {process.returncode}")
        try:
            if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            time.sleep(0.2)
    raise RuntimeError(f"{url} did not become healthy in {seconds:.0f} s")


def start_gateway_and_controller(
    bin_dir: Path,
    config: Path,
    url: str,
    logs: Tuple[IO[str], IO[str]],
    env: Mapping[str, str],
    governed: bool = True,
) -> List[subprocess.Popen]:
    """The gateway (healthy) and then the controller, run in ``config``'s folder; the caller terminates both."""
    gateway = subprocess.Popen(
        gateway_command(bin_dir, config, governed), cwd=config.parent, stdout=logs[0], stderr=subprocess.STDOUT
    )
    processes = [gateway]
    try:
        wait_healthy(url, gateway)
        processes.append(
            subprocess.Popen(
                controller_command(bin_dir, url, config.parent / "hydra-controller"),
                cwd=config.parent,
                env=dict(env),
                stdout=logs[1],
                stderr=subprocess.STDOUT,
            )
        )
    except BaseException:
        stop_processes(processes)
        raise
    return processes


def stop_processes(processes: Sequence[subprocess.Popen]) -> None:
    for process in reversed(processes):
        process.terminate()
        process.wait(timeout=30)


class JSONServer:
    """A local threaded HTTP server: every POST's JSON body goes to ``answer``, whose dict is the JSON reply.

    An exception in ``answer`` is a 500 with the error, never a made-up answer.

    >>> with JSONServer(lambda body: {"echo": body}) as server:
    ...     httpx.post(server.endpoint + "/chat/completions", json={"a": 1}).json()
    {'echo': {'a': 1}}
    """

    def __init__(self, answer: Callable[[Dict[str, Any]], Dict[str, Any]]) -> None:
        self.answer = answer
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def start(self) -> "JSONServer":
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def __enter__(self) -> "JSONServer":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def _handler(self) -> type:
        answer = self.answer

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server naming)
                body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
                try:
                    payload, status = json.dumps(answer(body)).encode(), 200
                except Exception as error:
                    payload, status = json.dumps({"error": repr(error)}).encode(), 500
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args: Any) -> None:
                pass

        return Handler
