"""A plain asyncio HTTP client for JSON POSTs, run on one event-loop thread of its own.

The judge's server backend used to send each call from its own worker thread through the ``openai``
package: about 4 ms of CPU per call in that client alone (its pydantic reply models, the httpx stack
and thread switches between up to ``--concurrency`` threads), which capped one process near 200
calls/s. Here every request of a run is a coroutine on one loop (``aiohttp``: its HTTP parser is
compiled), so the requests in flight cost no thread each and a call costs well under a millisecond
of client CPU (bench/judging.py ``cli``; docs/notes/i29client-29.md).

``LoopThread`` owns the loop and one ``aiohttp.ClientSession`` (keep-alive connections, at most
``limit`` open, each server sharing the pool); ``submit(coro)`` hands a coroutine to it from any
thread and returns a ``concurrent.futures.Future``, so the runner waits on loop calls exactly as it
waits on a thread pool's. ``post_json`` sends one request and returns (status, headers, body) with
a whole-request ``timeout_s`` (a server that trickles bytes cannot stretch a call past it).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import urllib.request
import weakref
from collections.abc import Coroutine, Mapping
from concurrent.futures import Future
from typing import Any

import aiohttp


def _run(loop: asyncio.AbstractEventLoop) -> None:
    """The loop thread's body: run until stopped, then close the loop."""
    try:
        loop.run_forever()
    finally:
        loop.close()


def _shutdown(loop: asyncio.AbstractEventLoop, box: dict) -> None:
    """Close the session and stop the loop, from any thread, without waiting (also run when the
    ``LoopThread`` is garbage-collected: no thread or open connection outlives its backend)."""

    async def bye() -> None:
        session = box.pop("session", None)
        if session is not None and not session.closed:
            await session.close()
        loop.stop()

    with contextlib.suppress(RuntimeError):  # the loop is closed already
        loop.call_soon_threadsafe(lambda: loop.create_task(bye()))


class LoopThread:
    """An asyncio loop on a daemon thread with one HTTP session; see the module docstring."""

    def __init__(self, limit: int = 256):
        self.limit = max(1, int(limit))
        self.loop = asyncio.new_event_loop()
        self._box: dict = {}  # the session, reachable by the finaliser without this object
        self._thread = threading.Thread(target=_run, args=(self.loop,), name="judge-http", daemon=True)
        self._thread.start()
        self._finalizer = weakref.finalize(self, _shutdown, self.loop, self._box)

    def submit(self, coro: Coroutine[Any, Any, Any]) -> Future:
        """Run ``coro`` on the loop; its result (or exception) arrives in the returned future."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def session(self) -> aiohttp.ClientSession:
        """The loop's session (made on first use, inside the loop)."""
        session = self._box.get("session")
        if session is None or session.closed:
            connector = aiohttp.TCPConnector(limit=self.limit, limit_per_host=0, ttl_dns_cache=300)
            # the proxy settings of the environment (HTTP(S)_PROXY, NO_PROXY), as the openai client
            # honours them, but only when some are set: aiohttp then looks them up per request
            proxies = bool(urllib.request.getproxies())
            session = self._box["session"] = aiohttp.ClientSession(connector=connector, trust_env=proxies)
        return session

    async def post_json(
        self, url: str, body: bytes, headers: Mapping[str, str], params: Mapping[str, str] | None,
        timeout_s: float,
    ) -> tuple[int, Mapping[str, str], bytes]:
        """POST ``body`` (JSON bytes) to ``url``; (status, response headers, response body), all read
        within ``timeout_s`` (``asyncio.TimeoutError`` past it)."""
        timeout = aiohttp.ClientTimeout(total=timeout_s)
        async with self.session().post(
            url, data=body, headers=headers, params=params, timeout=timeout
        ) as resp:
            return resp.status, resp.headers, await resp.read()

    def close(self) -> None:
        """Close the session and stop the loop (what is still in flight is cancelled); waits for the
        thread unless called from it."""
        self._finalizer()
        if threading.current_thread() is not self._thread:
            self._thread.join(timeout=5)
