"""Executes model calls: cache first, then the backend through one bounded pool, with retries.

Work arrives as *units*: generators that yield a list of requests, receive the list of results
(``None`` for a call that failed after all retries), may yield again (the hybrid protocol's scoring
stage) and finally return a value, handed to ``on_done`` as soon as the unit finishes. ``drive``
feeds every unit's requests through one pool of at most ``concurrency`` requests in flight (API
backends) or one batch at a time (local batched backends, whose waiting requests are sorted by
length so a batch pads little). Identical requests of different units share one call.

Each request is first looked up in the call cache. Worker threads only talk to the backend: the
calling thread stores finished calls in DuckDB the moment they arrive (the calls that finished
together in one transaction), so the runner is the store's one writer and a SIGKILL loses at most
the calls still in flight.

Transient failures are retried with exponential backoff and jitter (a delay drawn between half and
all of ``backoff_s * 2**(attempt-1)``, capped at ``max_backoff_s``), or after the server's own
``Retry-After`` when it sent one (capped at ``max_retry_after_s``). An authentication or unknown-model
error stops the run: nothing new is sent, backoff sleeps end at once, calls already in flight are
still stored, and the error is raised. So does an unreachable server: when no call of the runner has
succeeded yet and ``unreachable_after`` distinct calls (3) have each failed for good because no
connection could be made, the run stops with ``ServerUnreachable`` (one sentence: the URL and the
cause) instead of retrying every other call for minutes or hours. Cache hits are not calls: they are
served as always, and a run whose first calls succeeded never trips this. A server that takes
connections but never answers is caught the same way (``ServerStalled``): when no call has succeeded
yet and ``unreachable_after`` distinct calls have each timed out, the run stops at once.

Before a request is sent it is claimed in the cache (``CallCache.claim``); a request another live run
has claimed is not sent: the runner polls the cache until that run stores it (or its claim lapses,
and then makes it itself), so runs of any datasets that need one call pay for it once. The claims are
renewed while the run goes on and dropped when it ends.

When the store cannot take the finished calls (busy past the lock wait, disk full), they go to a
journal beside the store (``journal``), nothing new is sent, the calls in flight are journaled as
they finish, and the run stops with one sentence (``StoreUnavailable``). The next runner on that
store files the journals into the cache before its first lookup.
"""

from __future__ import annotations

import random
import threading
import time
from collections import deque
from collections.abc import Callable, Generator, Iterable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field, replace
from itertools import islice
from typing import Any

import duckdb

from engine.errors import LensError, is_disk_full
from engine.judging import journal
from engine.judging.backends import (
    Backend,
    BackendStopped,
    ChatRequest,
    ChatResult,
    ConnectionFailed,
    NoReply,
    RetryableError,
    ServerUnreachable,
)
from engine.judging.cache import CallCache, call_key, call_rows
from engine.store.connection import Store, StoreBusy, StoreError

STORE_ERRORS = (StoreError, duckdb.Error, OSError)


class ServerStalled(BackendStopped):
    """The first calls of a run all timed out: the server takes connections but does not answer."""


class StoreUnavailable(LensError):
    """The store could not take a run's finished calls; they were kept in a journal."""


def store_problem(store: Store, exc: BaseException) -> str:
    """Why the store could not be written, in a few words (busy, disk full, or the cause)."""
    if isinstance(exc, StoreBusy):
        return f"it stayed in use by another process past the {store.lock_wait_s:g} s lock wait"
    if is_disk_full(exc):
        return f"the disk holding {store.path.parent} is full (or a file-size limit was reached)"
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return f"the write failed ({first})"

Unit = Generator[list[ChatRequest], list["ChatResult | None"], Any]


@dataclass
class RunStats:
    """Counters for one runner (over all its ``drive`` / ``call`` rounds)."""

    made: int = 0
    cached: int = 0
    failed: int = 0
    retries: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    units_done: int = 0
    waits_cut_short: int = 0  # backoff sleeps ended early by a stop
    delays: list[float] = field(default_factory=list)  # every backoff delay, in seconds
    errors: list[str] = field(default_factory=list)
    unreachable: int = 0  # calls that failed for good without ever connecting
    journaled: int = 0  # finished calls kept in the journal because the store could not take them
    filed: int = 0  # journaled calls of earlier runs filed into the cache by this runner
    waited: int = 0  # calls another live run had claimed, waited for instead of paid for

    def failure_sentence(self) -> str | None:
        """One sentence for the end of a run with failed calls (how many, the last cause); else None."""
        if not self.failed:
            return None
        calls = "call" if self.failed == 1 else "calls"
        last = self.errors[-1] if self.errors else "no cause recorded"
        return (
            f"{self.failed} {calls} failed after all retries ({self.made} made, {self.cached} cached), "
            f"the last with: {last}; run the same command again to retry only the failed ones."
        )


class Runner:
    """Runs units of ``ChatRequest`` lists through the cache and one backend; see the module docstring."""

    def __init__(
        self,
        store: Store,
        backend: Backend,
        *,
        concurrency: int = 4,
        max_retries: int = 5,
        backoff_s: float = 1.0,
        max_backoff_s: float = 30.0,
        max_retry_after_s: float = 300.0,
        price_per_mtok: tuple[float, float] = (0.0, 0.0),
        progress: bool = False,
        run_id: int | None = None,
        jitter_seed: int | None = None,
        unreachable_after: int = 3,
        poll_s: float = 0.25,
        renew_s: float = 30.0,
    ):
        if concurrency < 1:
            raise LensError("Concurrency must be at least 1.")
        if unreachable_after < 1:
            raise LensError("unreachable_after must be at least 1.")
        if max_retries < 0:
            raise LensError("The number of retries cannot be negative.")
        self.store, self.backend = store, backend
        self.cache = CallCache(store)
        self.concurrency = concurrency
        self.max_retries, self.backoff_s, self.max_backoff_s = max_retries, backoff_s, max_backoff_s
        self.max_retry_after_s = max_retry_after_s
        self.price = price_per_mtok
        self.progress, self.run_id = progress, run_id
        self.unreachable_after = unreachable_after
        self.poll_s, self.renew_s = poll_s, renew_s
        self.stats = RunStats()
        self._journal_filed = False
        self.journal_file = None
        self._stalled = 0  # attempts that timed out while no call of this runner had succeeded
        self._succeeded = False
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._rng = random.Random(jitter_seed)
        self._bar = None

    @property
    def identity(self) -> str:
        return getattr(self.backend, "identity", self.backend.name)

    @property
    def server(self) -> str | None:
        """The server part of the call key (``None`` for a local backend)."""
        return getattr(self.backend, "server", None)

    def key(self, req: ChatRequest) -> str:
        return call_key(self.identity, self.backend.model, self.normalise(req), self.server)

    def legacy_key(self, req: ChatRequest) -> str | None:
        """The key this request had before the server was part of it (``None``: unchanged)."""
        if self.server is None:
            return None
        return call_key(self.identity, self.backend.model, self.normalise(req))

    def file_journals(self) -> int:
        """File the journals of earlier runs on this store into the cache (once per runner)."""
        if self._journal_filed or str(self.store.path) == ":memory:":
            return 0
        self._journal_filed = True
        n = journal.file_pending(self.store.path, self.cache.put_rows)
        self.stats.filed += n
        return n

    def normalise(self, req: ChatRequest) -> ChatRequest:
        """``req`` as this backend can serve it: ``logprob_tokens`` dropped unless it reports them."""
        if req.decoding.logprob_tokens and not getattr(self.backend, "full_logprobs", False):
            return replace(req, decoding=replace(req.decoding, logprob_tokens=()))
        own = getattr(self.backend, "normalise", None)  # the local backend: letters need one token
        return own(req) if own is not None else req

    # -- public ---------------------------------------------------------------------------------
    @contextmanager
    def progress_bar(self, total: int | None, desc: str, unit: str = "pair"):
        """One bar for everything driven inside the block (units done of ``total``, with call stats)."""
        if not self.progress or self._bar is not None:
            yield
            return
        from tqdm import tqdm

        self._bar = tqdm(total=total, desc=desc, unit=unit, leave=True, dynamic_ncols=True)
        try:
            yield
        finally:
            self._bar.close()
            self._bar = None

    def drive(
        self,
        units: Iterable[Unit],
        on_done: Callable[[Any], None] | None = None,
        *,
        total: int | None = None,
        desc: str = "calls",
        unit: str = "call",
    ) -> None:
        """Run every unit to completion; ``on_done(value)`` gets each unit's return value as it finishes."""
        self.file_journals()
        ctx = self.progress_bar(total, desc, unit) if self._bar is None else nullcontext()
        with ctx:
            _Drive(self, units, on_done).run()

    def call(self, requests: list[ChatRequest], desc: str = "calls") -> list[ChatResult | None]:
        """Results in the order of ``requests``; ``None`` where a call failed after all retries."""
        out: list[ChatResult | None] = [None] * len(requests)

        def one(i: int, req: ChatRequest):
            (res,) = yield [req]
            return i, res

        def done(v) -> None:
            out[v[0]] = v[1]

        self.drive((one(i, r) for i, r in enumerate(requests)), done, total=len(requests), desc=desc)
        return out

    # -- used by the driver ---------------------------------------------------------------------
    def _tick(self, units: int = 0) -> None:
        if self._bar is None:
            return
        s = self.stats
        if units:
            self._bar.update(units)
        self._bar.set_postfix(
            made=s.made,
            cached=s.cached,
            failed=s.failed,
            tokens=s.prompt_tokens + s.completion_tokens,
            cost=f"${s.cost_usd:.4f}",
            refresh=False,
        )

    def _record(self, calls: list[tuple[str, ChatRequest, ChatResult]], journal_only: bool = False) -> None:
        """Store calls that just completed (one transaction) and count them; when the store cannot
        take them, append them to the journal and raise the store's error."""
        rows = call_rows(calls, self.identity, self.backend.model, self.run_id, self.server)
        failure: BaseException | None = None
        if not journal_only:
            try:
                self.cache.put_rows(rows)
            except STORE_ERRORS as exc:
                failure = exc
        if journal_only or failure is not None:
            self._journal(rows)
        self._count(calls)
        if failure is not None:
            raise failure

    def _journal(self, rows: list[dict]) -> None:
        path = journal.journal_path(self.store.path)
        try:
            journal.append(path, rows)
        except OSError as exc:
            raise StoreUnavailable(
                f"{len(rows)} finished calls could be stored neither in {self.store.path} nor in the journal "
                f"{path} ({exc.strerror or exc}); they are lost and a rerun pays for them again."
            ) from exc
        self.stats.journaled += len(rows)
        self.journal_file = path

    def store_lost(self, exc: BaseException) -> StoreUnavailable:
        """The one sentence for a run stopped because the store could not take its calls."""
        kept = (
            f"the {self.stats.journaled} finished calls not yet stored are kept in {self.journal_file} and "
            "the next run on this store files them into the cache"
            if self.stats.journaled
            else "no finished call was lost"
        )
        then = "free some space and rerun" if is_disk_full(exc) else "rerun when the store is free"
        return StoreUnavailable(
            f"The judge run stopped because the store at {self.store.path} could not be written: "
            f"{store_problem(self.store, exc)}; {kept}; {then}."
        )

    def _count(self, calls: list[tuple[str, ChatRequest, ChatResult]]) -> None:
        s = self.stats
        for _key, _req, res in calls:
            s.made += 1
            s.prompt_tokens += res.prompt_tokens
            s.completion_tokens += res.completion_tokens
            s.cost_usd += (res.prompt_tokens * self.price[0] + res.completion_tokens * self.price[1]) / 1e6

    def backoff_delay(self, attempt: int, retry_after: float | None) -> float:
        """Seconds to wait before retry ``attempt`` (1-based); see the module docstring."""
        with self._lock:
            u = self._rng.random()
        if retry_after is not None:
            wait_s = min(retry_after, self.max_retry_after_s)
            return wait_s + u * min(1.0, 0.1 * wait_s)
        base = min(self.max_backoff_s, self.backoff_s * 2 ** (attempt - 1))
        return base * (0.5 + 0.5 * u)

    def _with_retries(self, reqs: list[ChatRequest]) -> list[ChatResult]:
        """Call the backend (in a worker thread), retrying transient failures."""
        attempt = 0
        while True:
            if self._stop.is_set():
                raise _Stopped()
            try:
                res = self.backend.complete(reqs)
            except RetryableError as exc:
                if isinstance(exc, NoReply):
                    self._check_stall(exc)
                attempt += 1
                if attempt > self.max_retries:
                    raise _GaveUp(f"gave up after {attempt} attempts: {exc}") from exc
                delay = self.backoff_delay(attempt, exc.retry_after)
                with self._lock:
                    self.stats.retries += 1
                    self.stats.delays.append(delay)
                if self._stop.wait(delay):  # a stop (bad key, unknown model) ends the sleep at once
                    with self._lock:
                        self.stats.waits_cut_short += 1
                    raise _Stopped() from exc
                continue
            self._succeeded = True
            if attempt:
                res = [
                    ChatResult(
                        r.text, r.top_logprobs, r.prompt_tokens, r.completion_tokens, r.latency_s, attempt + 1
                    )
                    for r in res
                ]
            return res

    def _check_stall(self, exc: NoReply) -> None:
        """Stop the run when its first ``unreachable_after`` attempts all timed out (module docstring)."""
        with self._lock:
            if self._succeeded or self.stats.made:
                return
            self._stalled += 1
            n = self._stalled
        if n >= self.unreachable_after:
            self._stop.set()
            raise ServerStalled(
                f"The server at {exc.url} takes connections but sent no complete reply within the "
                f"{exc.timeout_s:g} s timeout to any of the first {n} attempts; check that it is serving "
                "the model, or raise --timeout."
            ) from exc


class _GaveUp(Exception):
    pass


class _Stopped(Exception):
    pass


class _State:
    """One unit in flight: its generator and the results of its current step."""

    __slots__ = ("gen", "keys", "got", "need")

    def __init__(self, gen: Unit):
        self.gen = gen
        self.keys: list[str] = []
        self.got: dict[str, ChatResult | None] = {}
        self.need: set[str] = set()


class _Drive:
    """One ``Runner.drive`` call: the waiting requests, the pool and who waits for which call."""

    PULL = 64  # units started per cache lookup

    def __init__(self, runner: Runner, units: Iterable[Unit], on_done):
        self.r = runner
        self.units = iter(units)
        self.on_done = on_done
        self.exhausted = False
        self.batched = runner.backend.batch_size > 1
        self.limit = 1 if self.batched else runner.concurrency
        self.window = float("inf") if self.batched else max(2 * self.limit, self.PULL)
        self.waiters: dict[str, list[_State]] = {}  # key → units waiting for that call
        self.failed: set[str] = set()
        self.ready: deque[tuple[str, ChatRequest]] = deque()
        self.sorted = True
        self.inflight: dict[Future, list[tuple[str, ChatRequest]]] = {}
        self.held: dict[str, ChatRequest] = {}  # claimed by another live run: wait for its result
        self.given_up: list[str] = []  # calls that failed for good here, whose claims are to be dropped
        self.next_poll = 0.0

    def run(self) -> None:
        r = self.r
        pool = ThreadPoolExecutor(max_workers=self.limit, thread_name_prefix="judge")
        stopped: BaseException | None = None
        store_exc: BaseException | None = None  # the store refused a write: finished calls go to the journal
        next_renew = time.monotonic() + r.renew_s
        try:
            while True:
                if stopped is None and store_exc is None:
                    try:
                        self._fill()
                        self._poll_held()
                        if time.monotonic() >= next_renew:
                            r.cache.renew()
                            next_renew = time.monotonic() + r.renew_s
                    except STORE_ERRORS as exc:
                        store_exc = exc
                        r._stop.set()
                    else:
                        self._submit(pool)
                if not self.inflight:
                    if stopped is not None or store_exc is not None or (self.exhausted and not self.ready and not self.held):
                        break
                    if self.held and not self.ready:
                        time.sleep(r.poll_s)  # another run is making these calls; wait for its results
                    continue
                timeout = r.poll_s if self.held else max(0.05, next_renew - time.monotonic())
                finished, _ = wait(self.inflight, timeout=timeout, return_when=FIRST_COMPLETED)
                deliveries: list[tuple[_State, str, ChatResult | None]] = []
                completed: list[tuple[str, ChatRequest, ChatResult]] = []
                for fut in finished:
                    items = self.inflight.pop(fut)
                    try:
                        results = fut.result()
                    except BackendStopped as exc:
                        stopped = stopped or exc
                        r._stop.set()
                        continue
                    except _Stopped:
                        continue
                    except (_GaveUp, LensError) as exc:
                        r.stats.errors.append(str(exc))
                        for k, _req in items:
                            r.stats.failed += 1
                            self.failed.add(k)
                            deliveries += [(st, k, None) for st in self.waiters.pop(k, [])]
                        self.given_up += [k for k, _req in items]  # their claims are dropped below
                        r._tick()
                        if stopped is None and isinstance(exc.__cause__, ConnectionFailed):
                            stopped = self._unreachable(exc.__cause__, len(items))
                        continue
                    for (k, req), res in zip(items, results, strict=True):
                        completed.append((k, req, res))
                        deliveries += [(st, k, res) for st in self.waiters.pop(k, [])]
                if self.given_up and store_exc is None:
                    try:  # another run waiting for these calls may try them itself
                        r.cache.release(self.given_up)
                    except STORE_ERRORS:
                        pass  # they are dropped when the run ends, or lapse
                    self.given_up = []
                if completed:
                    try:
                        r._record(completed, journal_only=store_exc is not None)  # one transaction
                    except STORE_ERRORS as exc:  # the calls are in the journal; stop sending
                        store_exc = store_exc or exc
                        r._stop.set()
                    r._tick()
                if store_exc is not None:
                    continue  # units cannot go on without the store; in-flight calls are journaled
                try:
                    self._deliver(deliveries)
                except STORE_ERRORS as exc:
                    store_exc = exc
                    r._stop.set()
        finally:
            r._stop.set()
            pool.shutdown(wait=True, cancel_futures=True)
            r._stop.clear()
            try:
                r.cache.release()
            except STORE_ERRORS:
                pass  # the leases lapse on their own once this process is gone
        if store_exc is not None:
            raise r.store_lost(store_exc) from store_exc
        if stopped is not None:
            raise stopped

    def _poll_held(self) -> None:
        """Calls another run claimed: take the ones it stored, claim again the ones it gave up."""
        r = self.r
        now = time.monotonic()
        if not self.held or now < self.next_poll:
            return
        self.next_poll = now + r.poll_s
        hits = r.cache.get_many(sorted(self.held))
        deliveries = []
        for k, res in hits.items():
            self.held.pop(k, None)
            r.stats.cached += 1
            r.stats.waited += 1
            deliveries += [(st, k, res) for st in self.waiters.pop(k, [])]
        if self.held:
            mine, _ = r.cache.claim(sorted(self.held))
            for k in sorted(mine):
                self.ready.append((k, self.held.pop(k)))
                self.sorted = False
        if hits:
            r._tick()
        self._deliver(deliveries)

    def _unreachable(self, cause: ConnectionFailed, calls: int) -> ServerUnreachable | None:
        """Count calls that never connected; the stop error once the breaker trips (module docstring)."""
        r = self.r
        r.stats.unreachable += calls
        if r.stats.made or r.stats.unreachable < r.unreachable_after:
            return None
        r._stop.set()  # nothing new is sent; sleeping retries wake at once
        n = r.stats.unreachable
        return ServerUnreachable(
            f"Cannot reach {cause.url}: {cause.cause} (the first {n} calls all failed after "
            f"{r.max_retries + 1} attempts each and none succeeded); start the server or check --base-url."
        )

    # -- feeding --------------------------------------------------------------------------------
    def _fill(self) -> None:
        """Start units until enough requests wait (all of them for a batched backend)."""
        while not self.exhausted and len(self.ready) < self.window:
            batch = list(islice(self.units, self.PULL))
            if not batch:
                self.exhausted = True
                break
            self._step([(_State(g), None) for g in batch])

    def _submit(self, pool: ThreadPoolExecutor) -> None:
        r = self.r
        while self.ready and len(self.inflight) < self.limit:
            if self.batched:
                items = self._next_batch()
            else:
                items = [self.ready.popleft()]
            fut = pool.submit(r._with_retries, [req for _, req in items])
            self.inflight[fut] = items

    def _next_batch(self) -> list[tuple[str, ChatRequest]]:
        """Up to batch_size waiting requests with one decoding, longest prompts first (or in the
        backend's ``batch_order``: the local backend puts prompts with a shared prefix together)."""
        if not self.sorted:
            order = getattr(self.r.backend, "batch_order", None) or (lambda q: -q.size())
            self.ready = deque(sorted(self.ready, key=lambda kr: (kr[1].decoding.group_key(), order(kr[1]))))
            self.sorted = True
        bs = max(1, int(self.r.backend.batch_size))  # re-read: an out-of-memory fallback shrinks it
        first = self.ready.popleft()
        items = [first]
        group = first[1].decoding.group_key()
        while self.ready and len(items) < bs and self.ready[0][1].decoding.group_key() == group:
            items.append(self.ready.popleft())
        return items

    # -- advancing units ------------------------------------------------------------------------
    def _deliver(self, deliveries: list[tuple[_State, str, ChatResult | None]]) -> None:
        resume = []
        for st, k, res in deliveries:
            if k not in st.need:
                continue
            st.got[k] = res
            st.need.discard(k)
            if not st.need:
                resume.append((st, [st.got[x] for x in st.keys]))
        if resume:
            self._step(resume)

    def _step(self, items: list[tuple[_State, list | None]]) -> None:
        """Send results into units; look their next requests up in the cache in one query."""
        r = self.r
        queue = deque(items)
        while queue:
            asked: list[tuple[_State, list[ChatRequest]]] = []
            while queue:
                st, send = queue.popleft()
                try:
                    reqs = st.gen.send(send)
                except StopIteration as stop:
                    r.stats.units_done += 1
                    if self.on_done is not None:
                        self.on_done(stop.value)
                    r._tick(1)
                    continue
                reqs = [r.normalise(q) for q in reqs]
                st.keys = [r.key(q) for q in reqs]
                st.got, st.need = {}, set()
                asked.append((st, reqs))
            fresh = {k for st, _ in asked for k in st.keys if k not in self.waiters and k not in self.failed}
            reqs_of = {k: q for st, reqs in asked for k, q in zip(st.keys, reqs, strict=True)}
            legacy = {k: lk for k in fresh if (lk := r.legacy_key(reqs_of[k])) is not None}
            hits = r.cache.get_many(sorted(fresh), legacy) if fresh else {}
            r.stats.cached += len(hits)
            to_make = sorted(fresh - hits.keys())
            claimed, _held = r.cache.claim(to_make) if to_make else (set(), set())
            for st, reqs in asked:
                for k, q in zip(st.keys, reqs, strict=True):
                    if k in hits:
                        st.got[k] = hits[k]
                    elif k in self.failed:
                        st.got[k] = None
                    elif k in self.waiters:
                        if st not in self.waiters[k]:
                            self.waiters[k].append(st)
                        st.need.add(k)
                    else:
                        self.waiters[k] = [st]
                        st.need.add(k)
                        if k in claimed:
                            self.ready.append((k, q))
                            self.sorted = False
                        else:  # stored or claimed by another run since the lookup: wait for it
                            self.held[k] = q
                if not st.need:
                    queue.append((st, [st.got[k] for k in st.keys]))
            if hits:
                r._tick()
