"""An OpenAI-compatible chat server on loopback, as source for the fresh interpreters some tests start.

``LOOPBACK_CHAT_SERVER`` is pasted into a child script (after ``json``, ``threading`` and
``http.server``'s ``BaseHTTPRequestHandler`` and ``ThreadingHTTPServer`` are imported there): it
starts ``server``, whose every chat completion answers ``SELECT 1``.
"""

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
