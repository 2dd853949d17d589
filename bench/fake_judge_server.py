"""A stand-in for one GPU's inference server (vLLM / SGLang) in the judging benchmarks.

Serves ``POST .../chat/completions`` on 127.0.0.1 (a free port, printed as the first line of
stdout) with HTTP/1.1 keep-alive, on one asyncio loop with a hand-written request reader, so the
server costs little CPU per reply and is rarely what a benchmark of the client measures. Every
reply takes ``--delay`` seconds, and at most ``--slots`` replies are worked on at once (the
requests beyond wait for a slot), like a GPU server whose batch holds that many sequences: one
server then gives at most ``slots / delay`` calls per second (its fixed capacity), whatever the
client does. ``--delay 0`` answers at once (the client-bound case).

The reply is a chat completion with token counts and the top log-probabilities of its first token
(so the soft protocol's letters are read as from a real server): a pairwise verdict ``[[A]]`` for
a pairwise prompt, the letter ``A`` for a soft one. The client does all its usual work (HTTP, JSON,
cache writes). On SIGTERM/SIGINT it prints its own CPU seconds (user + system) as the last line of
stdout with the requests it answered, so a benchmark can leave the server's CPU out of the client's.

    python bench/fake_judge_server.py --delay 0.2 --slots 10     # 50 calls/s, like one small GPU
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import time
from pathlib import Path


def reply_bytes(body: bytes) -> bytes:
    """The HTTP response (status line, headers, JSON) for one chat-completion request body."""
    try:
        req = json.loads(body or b"{}")
    except ValueError:
        req = {}
    msgs = req.get("messages") or []
    prompt = sum(len(m.get("content", "")) for m in msgs if isinstance(m, dict)) // 4
    text = "A" if req.get("logprobs") else "A is more precise. [[A]]"
    choice: dict = {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
    if req.get("logprobs"):
        top = [{"token": t, "logprob": lp} for t, lp in (("A", -0.2), ("B", -1.8), ("C", -4.0))]
        choice["logprobs"] = {"content": [{"token": "A", "logprob": -0.2, "top_logprobs": top}]}
    doc = {
        "id": "fake",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": req.get("model", "fake"),
        "choices": [choice],
        "usage": {"prompt_tokens": prompt, "completion_tokens": 8, "total_tokens": prompt + 8},
    }
    data = json.dumps(doc).encode()
    head = f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(data)}\r\n\r\n"
    return head.encode() + data


async def serve(delay_s: float, slots: int, count_file: str | None = None) -> None:
    """Answer chat completions on a free loopback port until stopped; print the port first."""
    gate = asyncio.Semaphore(slots)
    served = [0]

    async def answer(body: bytes) -> bytes:
        served[0] += 1
        if delay_s > 0:
            async with gate:
                await asyncio.sleep(delay_s)
        return reply_bytes(body)

    async def connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n")[1:]:
                    name, _, value = line.partition(b":")
                    if name.strip().lower() == b"content-length":
                        length = int(value.strip())
                body = await reader.readexactly(length) if length else b""
                writer.write(await answer(body))
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError,
                asyncio.CancelledError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(connection, "127.0.0.1", 0, backlog=1024)
    print(server.sockets[0].getsockname()[1], flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    async def report() -> None:  # the requests answered so far, for a benchmark that acts on them
        while count_file:
            Path(count_file + ".new").write_text(str(served[0]))
            os.replace(count_file + ".new", count_file)
            await asyncio.sleep(0.2)

    reporter = asyncio.create_task(report())
    async with server:
        await stop.wait()
    reporter.cancel()
    t = os.times()
    print(f"cpu_s {t.user + t.system:.3f} requests {served[0]}", flush=True)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--delay", type=float, default=0.2, help="seconds per reply (0: at once)")
    ap.add_argument("--slots", type=int, default=1000, help="replies worked on at once")
    ap.add_argument("--count-file", help="write the number of requests answered here every 0.2 s")
    a = ap.parse_args()
    try:  # where installed, uvloop's event loop: about twice the replies per CPU second
        import uvloop

        uvloop.install()
    except ImportError:
        pass
    asyncio.run(serve(a.delay, a.slots, a.count_file))
