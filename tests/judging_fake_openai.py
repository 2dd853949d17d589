"""A scripted OpenAI-compatible chat server on a free loopback port, for the judging tests.

It implements ``POST /v1/chat/completions`` (with ``logprobs``/``top_logprobs``) over plain
http.server, so the real ``openai`` client talks to it over real HTTP. Its replies follow fixed,
documented rules, so each test can compute the expected verdicts another way:

- pairwise prompts: the longer answer wins (``[[A]]``/``[[B]]``, equal lengths ``[[TIE]]``); the
  reply first restates the format (``[[A]] or [[B]]``) so parsers must take the *last* tag;
  a question containing ``BIASED`` always gets ``[[A]]`` (pure position bias);
- score prompts: ``[[s]]`` with s = min(5, 1 + len(answer) // 400); a question containing
  ``BADSCORE`` gets ``[[s + 5]]`` instead (outside 1–5, so unparsable) and, like ``BIASED``,
  ``[[A]]`` for every pairwise prompt, so the hybrid protocol has to score it;
- soft prompts: the letter of the longer answer, top logprobs A: log p, B: log(1-p) with
  p = len(first) / (len(first) + len(second));
- paraphrase prompts: a JSON array of k strings "<text> (rewording i)"; equivalence prompts: YES for
  odd-numbered candidates, NO for even;
- a question containing ``HUGE`` gets a reply of ``huge_chars`` characters with its tag at the end;
- a question containing ``GARBAGE`` gets text without any verdict tag; ``RATE429`` gets a 429 on the
  first attempt; ``FLAKY500`` gets a 500 on the first two attempts; ``RETRYAFTER`` gets a 429 with
  a ``Retry-After: <retry_after>`` header on the first attempt;
- malformed 200 replies: ``NONJSON`` always gets a body that is not JSON, ``NOCHOICES`` always a JSON
  body without ``choices``, ``ONCEBAD`` a non-JSON body on the first attempt only;
- ``SLOW`` in the message makes that reply take ``slow_s`` seconds; ``AUTH401`` gets a 401;
  the model name ``missing-model`` gets a 404 (model not found); ``fail_if`` (a substring) always
  gets a 500;
- ``TRICKLE`` in the message: a 200 whose body (``trickle_bytes`` long) is sent one byte every
  ``trickle_s`` seconds; ``trickled`` counts the bytes that went out before the client hung up;
- ``delay_s`` makes every reply slow; ``api_key`` set means other keys get a 401; ``port`` (0: any
  free one) lets a new server take the address of one that was stopped;
- ``hold`` = n: each of the first n requests waits until n requests have been in flight at once (or
  ``hold_timeout_s`` passed), so the peak in flight shows whether a client really keeps n open;
- ``gate``: a ``threading.Event``, set (open) at the start; while a test clears it, every request
  is counted on arrival and then waits (up to five minutes) until it is set again, so a test can keep
  a run going for as long as it needs without guessing at timings; ``at_gate`` counts those waiting.

It counts requests per message body, in-flight requests and their maximum, and keeps each request's
JSON body (``bodies``) and query string (``queries``).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

_SECTION = re.compile(r"=== (QUESTION|ANSWER A|ANSWER B|ANSWER) ===\n(.*?)(?=\n\n=== |\Z)", re.S)


class _Server(ThreadingHTTPServer):
    """http.server's threading server with a listen backlog of 128 instead of socketserver's 5: a client
    that opens dozens of connections at once (concurrency 48) would otherwise have the ones past the
    backlog dropped by the kernel and retried a second or more later (TCP's SYN retransmit), which made
    the in-flight peak test wait out its hold timeout and, on a loaded machine, miss its peak."""

    request_queue_size = 128


def sections(user: str) -> dict[str, str]:
    return {m.group(1): m.group(2) for m in _SECTION.finditer(user)}


def score_of(answer: str) -> int:
    return min(5, 1 + len(answer) // 400)


class FakeOpenAI:
    def __init__(
        self,
        delay_s: float = 0.0,
        api_key: str | None = None,
        *,
        slow_s: float = 1.0,
        retry_after: str = "1",
        fail_if: str | None = None,
        hold: int | None = None,
        hold_timeout_s: float = 5.0,
        gate_after: int | None = None,
        trickle_s: float = 0.2,
        trickle_bytes: int = 200,
        port: int = 0,
        huge_chars: int = 1_100_000,
    ):
        self.delay_s = delay_s
        self.api_key = api_key
        self.slow_s, self.retry_after, self.fail_if = slow_s, retry_after, fail_if
        self.hold, self.hold_timeout_s = hold, hold_timeout_s
        self.trickle_s, self.trickle_bytes = trickle_s, trickle_bytes
        self.trickled = 0
        self.huge_chars = huge_chars
        self.gate = threading.Event()
        self.gate.set()
        self.gate_after = gate_after  # the gate closes by itself when request gate_after + 1 arrives
        self.bodies: list[dict] = []
        self.queries: list[str] = []  # each request's query string (the part after ``?``)
        self.seen: Counter[str] = Counter()
        self.statuses: Counter[int] = Counter()
        self.inflight = 0
        self.max_inflight = 0
        self.at_gate = 0  # requests waiting for the gate to open
        self.arrivals = 0
        self.lock = threading.Lock()
        self.cond = threading.Condition(self.lock)
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):  # keep test output quiet
                pass

            def do_POST(self):
                outer._handle(self)

        self.httpd = _Server(("127.0.0.1", port), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        # serve_forever checks for shutdown() once per poll interval (0.5 s by default): every `with`
        # block's exit waited out most of one, ~0.4 s a test, on ~150 servers a suite run
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.02,), daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()

    @property
    def total(self) -> int:
        return sum(self.seen.values())

    # -- request handling ------------------------------------------------------------------------
    def _send(self, h, status: int, body: dict | bytes, headers: dict | None = None) -> None:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        with self.lock:
            self.statuses[status] += 1
        self._leave(h)  # before the reply goes out: the client may send its next request on reading it
        try:
            h.send_response(status)
            h.send_header("Content-Type", "application/json")
            h.send_header("Content-Length", str(len(data)))
            for k, v in (headers or {}).items():
                h.send_header(k, v)
            h.end_headers()
            h.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (its timeout)
            pass

    def _leave(self, h) -> None:
        """Count this request out of `inflight` once (the reply is decided; the handler may still run)."""
        if getattr(h, "_lens_inflight", False):
            h._lens_inflight = False
            with self.cond:
                self.inflight -= 1

    def _handle(self, h) -> None:
        body = json.loads(h.rfile.read(int(h.headers["Content-Length"])))
        path, _, query = h.path.partition("?")
        with self.lock:
            self.bodies.append(body)
            self.queries.append(query)
        if path != "/v1/chat/completions":
            return self._send(h, 404, {"error": {"message": "not found"}})
        if self.api_key is not None and h.headers.get("Authorization") != f"Bearer {self.api_key}":
            return self._send(h, 401, {"error": {"message": "bad key", "type": "invalid_request_error"}})
        if body.get("model") == "missing-model":
            msg = {"message": "The model `missing-model` does not exist", "code": "model_not_found"}
            return self._send(h, 404, {"error": msg})
        key = hashlib.sha256(json.dumps(body["messages"], sort_keys=True).encode()).hexdigest()
        with self.cond:
            self.seen[key] += 1
            attempt = self.seen[key]
            self.arrivals += 1
            if self.gate_after is not None and self.arrivals == self.gate_after + 1:
                self.gate.clear()  # at an exact request, whatever the client's speed
            self.inflight += 1
            h._lens_inflight = True
            self.max_inflight = max(self.max_inflight, self.inflight)
            self.cond.notify_all()
            if self.hold and self.arrivals <= self.hold:  # the first `hold` requests wait for each other
                # until the peak has reached `hold` (a latch: the in-flight count itself drops again as
                # soon as the first of them replies, before every waiter has woken to see it)
                self.cond.wait_for(lambda: self.max_inflight >= self.hold, timeout=self.hold_timeout_s)
        try:
            if not self.gate.is_set():
                with self.lock:
                    self.at_gate += 1
                self.gate.wait(timeout=300)
                with self.lock:
                    self.at_gate -= 1
            if self.delay_s:
                time.sleep(self.delay_s)
            user = body["messages"][-1]["content"]
            if "SLOW" in user:
                time.sleep(self.slow_s)
            if "TRICKLE" in user:
                return self._trickle(h)
            if "AUTH401" in user:
                return self._send(h, 401, {"error": {"message": "bad key", "type": "invalid_request_error"}})
            if self.fail_if is not None and self.fail_if in user:
                return self._send(h, 500, {"error": {"message": "always failing"}})
            if "RATE429" in user and attempt == 1:
                return self._send(h, 429, {"error": {"message": "slow down"}})
            if "RETRYAFTER" in user and attempt == 1:
                return self._send(h, 429, {"error": {"message": "wait"}}, {"Retry-After": self.retry_after})
            if "FLAKY500" in user and attempt <= 2:
                return self._send(h, 500, {"error": {"message": "boom"}})
            if "NONJSON" in user or ("ONCEBAD" in user and attempt == 1):
                return self._send(h, 200, b"<html>upstream proxy error</html>")
            if "NOCHOICES" in user:
                return self._send(
                    h, 200, {"id": "c1", "object": "chat.completion", "created": 0, "model": "m"}
                )
            text, top = self._reply(user, body)
            choice = {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": "stop",
                "logprobs": None,
            }
            if body.get("logprobs") and top is not None:
                choice["logprobs"] = {
                    "content": [
                        {
                            "token": text,
                            "logprob": top[0][1],
                            "bytes": None,
                            "top_logprobs": [{"token": t, "logprob": lp, "bytes": None} for t, lp in top],
                        }
                    ]
                }
            usage = {"prompt_tokens": len(user) // 4, "completion_tokens": max(1, len(text) // 4)}
            usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
            resp = {
                "id": "c1",
                "object": "chat.completion",
                "created": 0,
                "model": body["model"],
                "choices": [choice],
                "usage": usage,
            }
            return self._send(h, 200, resp)
        finally:
            self._leave(h)

    def _trickle(self, h) -> None:
        """Headers at once, then the body one byte at a time (never a complete reply in time)."""
        try:
            h.send_response(200)
            h.send_header("Content-Type", "application/json")
            h.send_header("Content-Length", str(self.trickle_bytes))
            h.end_headers()
            h.wfile.flush()
            for _ in range(self.trickle_bytes):
                h.wfile.write(b" ")
                h.wfile.flush()
                with self.lock:
                    self.trickled += 1
                time.sleep(self.trickle_s)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def _reply(self, user: str, body: dict):
        s = sections(user)
        q = s.get("QUESTION", "")
        if "GARBAGE" in q:
            return "Both answers have merits and I would rather not choose.", None
        if "HUGE" in q:  # a runaway reply: over the store's text limit, the verdict tag at its very end
            return "x" * self.huge_chars + " [[A]]", None
        if "Reply with a JSON array holding exactly" in user:
            k = int(re.search(r"Produce (\d+) different", user).group(1))
            text = user.split("<<<TEXT\n", 1)[1].split("\nTEXT>>>", 1)[0]
            return json.dumps([f"{text} (rewording {i})" for i in range(1, k + 1)]), None
        if "candidate rewordings" in user:
            n = int(re.search(r"and (\d+) numbered candidate", user).group(1))
            return json.dumps(["YES" if i % 2 == 1 else "NO" for i in range(1, n + 1)]), None
        if "ANSWER" in s:
            sc = score_of(s["ANSWER"]) + (5 if "BADSCORE" in q else 0)
            return f"Judging by length alone. Score: [[{sc}]]", None
        a, b = s.get("ANSWER A", ""), s.get("ANSWER B", "")
        if "Reply with exactly one" in user:
            p = len(a) / (len(a) + len(b))
            letter = "A" if p >= 0.5 else "B"
            top = [("A", math.log(p)), ("B", math.log(1 - p)), ("The", math.log(1e-4))]
            top.sort(key=lambda t: -t[1] if t[0] == letter else 0)
            return letter, top
        if "BIASED" in q or "BADSCORE" in q:
            tag = "[[A]]"
        else:
            tag = "[[A]]" if len(a) > len(b) else "[[B]]" if len(b) > len(a) else "[[TIE]]"
        return (
            f"The format is [[A]] or [[B]]. A has {len(a)} characters, B has {len(b)}.\nVerdict: {tag}",
            None,
        )
