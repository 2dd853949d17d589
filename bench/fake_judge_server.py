"""A stand-in for one GPU's inference server (vLLM / SGLang) in the judging benchmark.

Serves ``POST /v1/chat/completions`` on 127.0.0.1 (a free port, printed as the first line of
stdout). Every reply takes ``--delay`` seconds, and at most ``--slots`` replies are worked on at
once (the requests beyond wait for a slot), like a GPU server whose batch holds that many
sequences: one server then gives at most slots / delay calls per second, whatever the client
does. The reply is a fixed pairwise verdict with token counts, so the client does all its usual
work (HTTP, JSON, cache writes). Run by bench/judging.py in a separate process, so the client's
CPU time is the client's alone.

    python bench/fake_judge_server.py --delay 0.2 --slots 1000
"""

from __future__ import annotations

import argparse
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def serve(delay_s: float, slots: int) -> None:
    """Answer chat completions on a free loopback port until killed; print the port first."""
    gate = threading.BoundedSemaphore(slots)

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *a):  # quiet
            pass

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
            with gate:
                time.sleep(delay_s)
            prompt = sum(len(m.get("content", "")) for m in body.get("messages", [])) // 4
            reply = {
                "id": "fake",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": body.get("model", "fake"),
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": "A is more precise. [[A]]"},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {"prompt_tokens": prompt, "completion_tokens": 8, "total_tokens": prompt + 8},
            }
            data = json.dumps(reply).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    server.request_queue_size = 256
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--delay", type=float, default=0.2)
    ap.add_argument("--slots", type=int, default=1000)
    a = ap.parse_args()
    serve(a.delay, a.slots)
