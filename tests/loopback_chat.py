"""An OpenAI-compatible chat server on loopback, as source for the fresh interpreters some tests
start, and the way they start them.

``LOOPBACK_CHAT_SERVER`` is pasted into a child script (after ``json``, ``threading`` and
``http.server``'s ``BaseHTTPRequestHandler`` and ``ThreadingHTTPServer`` are imported there): it
starts ``server``, whose every chat completion answers ``SELECT 1``.
"""

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Dict

LOOPBACK_CHAT_SERVER = """\
class ChatCompletions(BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers["Content-Length"]))
        body = json.dumps({
            "id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": "policy",
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "SELECT 1"}}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5},
        }).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


server = ThreadingHTTPServer(("127.0.0.1", 0), ChatCompletions)
threading.Thread(target=server.serve_forever, daemon=True).start()
"""


def run_child_script(tmp_path: Path, script: str, files: Dict[str, str], *args: str) -> dict:
    """Run ``script`` with ``args`` in a fresh interpreter in ``tmp_path`` (with ``files`` written
    there and on its path, AgentOps' own logging quiet); what it printed last, read as JSON."""
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    env = {
        **os.environ,
        "PYTHONPATH": str(tmp_path),
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "AGENTOPS_LOGGING_TO_FILE": "False",
        "AGENTOPS_LOG_LEVEL": "ERROR",
    }
    done = subprocess.run(
        [sys.executable, "-c", script, *args], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(done.stdout.strip().splitlines()[-1])
