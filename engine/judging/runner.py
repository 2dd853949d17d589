"""Executes model calls: cache first, then the backend with concurrency, retries and progress.

Each unique request is looked up in the call cache; only missing ones reach the backend. API
backends run in a thread pool (``concurrency`` requests in flight); batched local backends get
whole batches. Transient failures (429, 5xx, timeouts) are retried with exponential backoff; an
authentication error stops the run at once. Worker threads only talk to the backend: the calling
thread stores every finished call in DuckDB as soon as it arrives, so the runner is the store's one
writer and a SIGKILL loses at most the calls still in flight.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass, field

from ..errors import LensError
from ..store import Store
from .backends import AuthenticationFailed, Backend, ChatRequest, ChatResult, RetryableError
from .cache import CallCache, call_key


@dataclass
class RunStats:
    """Counters for one runner (over all its ``call`` batches)."""

    made: int = 0
    cached: int = 0
    failed: int = 0
    retries: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    errors: list[str] = field(default_factory=list)


class Runner:
    """Runs ``ChatRequest`` lists through the cache and one backend; see the module docstring."""

    def __init__(
        self,
        store: Store,
        backend: Backend,
        *,
        concurrency: int = 4,
        max_retries: int = 5,
        backoff_s: float = 1.0,
        max_backoff_s: float = 30.0,
        price_per_mtok: tuple[float, float] = (0.0, 0.0),
        progress: bool = False,
        run_id: int | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ):
        if concurrency < 1:
            raise LensError("Concurrency must be at least 1.")
        self.store, self.backend = store, backend
        self.cache = CallCache(store)
        self.concurrency = concurrency
        self.max_retries, self.backoff_s, self.max_backoff_s = max_retries, backoff_s, max_backoff_s
        self.price = price_per_mtok
        self.progress, self.run_id, self._sleep = progress, run_id, sleep
        self.stats = RunStats()
        self._stop = threading.Event()

    def key(self, req: ChatRequest) -> str:
        return call_key(self.backend.name, self.backend.model, req)

    # -- public ---------------------------------------------------------------------------------
    def call(self, requests: list[ChatRequest], desc: str = "calls") -> list[ChatResult | None]:
        """Results in the order of ``requests``; ``None`` where a call failed after all retries."""
        keys = [self.key(r) for r in requests]
        unique = dict(zip(keys, requests, strict=True))
        done = self.cache.get_many(list(unique))
        self.stats.cached += len(done)
        todo = [(k, r) for k, r in unique.items() if k not in done]
        bar = self._bar(len(unique), len(done), desc)
        try:
            if self.backend.batch_size > 1:
                self._run_batched(todo, done, bar)
            else:
                self._run_pool(todo, done, bar)
        finally:
            if bar is not None:
                bar.close()
        return [done.get(k) for k in keys]

    # -- internals ------------------------------------------------------------------------------
    def _bar(self, total: int, initial: int, desc: str):
        if not self.progress:
            return None
        from tqdm import tqdm

        return tqdm(total=total, initial=initial, desc=desc, unit="call", leave=True)

    def _tick(self, bar) -> None:
        if bar is None:
            return
        s = self.stats
        bar.update(1)
        bar.set_postfix(
            made=s.made,
            cached=s.cached,
            failed=s.failed,
            tokens=s.prompt_tokens + s.completion_tokens,
            cost=f"${s.cost_usd:.4f}",
            refresh=False,
        )

    def _record(self, key: str, req: ChatRequest, res: ChatResult, done: dict) -> None:
        self.cache.put(key, self.backend.name, self.backend.model, req, res, self.run_id)
        done[key] = res
        s = self.stats
        s.made += 1
        s.prompt_tokens += res.prompt_tokens
        s.completion_tokens += res.completion_tokens
        s.cost_usd += (res.prompt_tokens * self.price[0] + res.completion_tokens * self.price[1]) / 1e6

    def _with_retries(self, reqs: list[ChatRequest]) -> list[ChatResult]:
        """Call the backend, retrying transient failures with exponential backoff."""
        attempt = 0
        while True:
            if self._stop.is_set():
                raise _Stopped()
            try:
                res = self.backend.complete(reqs)
            except RetryableError as exc:
                attempt += 1
                if attempt > self.max_retries:
                    raise _GaveUp(f"gave up after {attempt} attempts: {exc}") from exc
                self.stats.retries += 1
                self._sleep(min(self.max_backoff_s, self.backoff_s * 2 ** (attempt - 1)))
                continue
            if attempt:
                res = [
                    ChatResult(
                        r.text, r.top_logprobs, r.prompt_tokens, r.completion_tokens, r.latency_s, attempt + 1
                    )
                    for r in res
                ]
            return res

    def _run_batched(self, todo, done, bar) -> None:
        groups: dict = {}
        for k, r in todo:
            groups.setdefault(r.decoding, []).append((k, r))
        bs = self.backend.batch_size
        for items in groups.values():
            for i in range(0, len(items), bs):
                chunk = items[i : i + bs]
                try:
                    results = self._with_retries([r for _, r in chunk])
                except _GaveUp as exc:
                    self.stats.failed += len(chunk)
                    self.stats.errors.append(str(exc))
                    continue
                for (k, r), res in zip(chunk, results, strict=True):
                    self._record(k, r, res, done)
                    self._tick(bar)

    def _run_pool(self, todo, done, bar) -> None:
        if not todo:
            return
        pool = ThreadPoolExecutor(max_workers=self.concurrency, thread_name_prefix="judge")
        pending = {pool.submit(self._with_retries, [r]): (k, r) for k, r in todo}
        auth: BaseException | None = None
        try:
            while pending:
                finished, _ = wait(pending, return_when=FIRST_COMPLETED)
                for fut in finished:
                    k, r = pending.pop(fut)
                    try:
                        (res,) = fut.result()
                    except AuthenticationFailed as exc:
                        auth = auth or exc
                        self._stop.set()
                        continue
                    except _Stopped:
                        continue
                    except (_GaveUp, LensError) as exc:
                        self.stats.failed += 1
                        self.stats.errors.append(str(exc))
                        self._tick(bar)
                        continue
                    self._record(k, r, res, done)
                    self._tick(bar)
        finally:
            self._stop.set()
            pool.shutdown(wait=True, cancel_futures=True)
            self._stop.clear()
        if auth is not None:
            raise auth


class _GaveUp(Exception):
    pass


class _Stopped(Exception):
    pass
