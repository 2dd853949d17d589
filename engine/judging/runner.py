"""Executes model calls: cache first, then the backend through one bounded pool, with retries.

Work arrives as *units*: generators that yield a list of requests, receive the list of results
(``None`` for a call that failed after all retries), may yield again (the hybrid protocol's scoring
stage) and finally return a value, handed to ``on_done`` as soon as the unit finishes. ``drive``
feeds every unit's requests through one pool of at most ``concurrency`` requests in flight (API
backends) or one batch at a time (local batched backends, whose waiting requests are sorted by
length so a batch pads little). Identical requests of different units share one call.

Each request is first looked up in the call cache. Worker threads only talk to the backend: the
calling thread stores finished calls in DuckDB, so the runner is the store's one writer. Each answer
is first appended to the run's journal by the worker thread that received it (``journal``: written
through to the operating system before the answer is handed on), then calls that finish within
``record_every_s`` (0.25 s) of each other are stored in one transaction (a store that lets go of its
file between writes pays about 90 ms of CPU to open, write and close it, so every store access of
that moment shares one session: ``drive``), and a result reaches its
unit only once its call is stored (a unit asking for a call that waits to be stored waits for it
too). A SIGKILL therefore loses only the calls still in flight: the answered ones are in the store
or the journal, which the next run files. Ctrl-C sends nothing new, lets the calls in flight end and
stores them with the finished ones on the way out.

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

When the store cannot take the finished calls (busy past the lock wait, disk full), they stay in the
journal (fsynced; beside the store, or in its second location when the store's disk is full, which
the sentence names), nothing new is sent, the calls in flight are journaled as they finish, and the
run stops with one sentence (``StoreUnavailable``). The next runner on that store files the journals
into the cache before its first lookup.
"""

from __future__ import annotations

import asyncio
import random
import sys
import threading
import time
from collections.abc import Callable, Iterable
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from engine.errors import LensError, is_disk_full
from engine.judging import journal
from engine.judging.backends import (
    Backend,
    ChatRequest,
    ChatResult,
    NoReply,
    RetryableError,
)
from engine.judging.cache import CallCache, call_key, call_rows
from engine.judging.call_rows import has_serverless_calls
from engine.judging.drive import Drive, Unit
from engine.judging.run_errors import (
    STORE_ERRORS,
    GaveUp,
    ServerStalled,
    Stopped,
    StoreUnavailable,
    store_problem,
)
from engine.judging.shards import SHARD_PULL_UNITS, merge_left_behind
from engine.store.connection import Store


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
        record_every_s: float = 0.25,
        call_shards: bool = False,
        keep_shards: bool = False,
    ):
        if concurrency < 1:
            raise LensError("Concurrency must be at least 1.")
        if unreachable_after < 1:
            raise LensError("unreachable_after must be at least 1.")
        if max_retries < 0:
            raise LensError("The number of retries cannot be negative.")
        self.store, self.backend = store, backend
        # call_shards: engine.judging.shards; keep_shards: this run's shards are left for one writer
        self.cache = CallCache(store, shards=call_shards, keep_shards=keep_shards)
        self.pull_units = SHARD_PULL_UNITS if call_shards else None  # units per cache lookup (Drive)
        self.concurrency = concurrency
        self.max_retries, self.backoff_s, self.max_backoff_s = max_retries, backoff_s, max_backoff_s
        self.max_retry_after_s = max_retry_after_s
        self.price = price_per_mtok
        self.progress, self.run_id = progress, run_id
        self.unreachable_after = unreachable_after
        self.poll_s, self.renew_s = poll_s, renew_s
        self.record_every_s = record_every_s
        self.stats = RunStats()
        self._journal_filed = False
        in_memory = str(store.path) == ":memory:"
        self.journal: journal.CallJournal | None = None if in_memory else journal.CallJournal(store.path)
        self.journal_error: str | None = None  # why no location could take the journal, if so
        self.journal_file: Path | None = None
        self._stalled = 0  # attempts that timed out while no call of this runner had succeeded
        self._succeeded = False
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._rng = random.Random(jitter_seed)
        self._rows: dict[str, dict] = {}  # answered calls' rows until they are stored
        self._legacy_calls: bool | None = None  # whether the store holds calls keyed without a server
        self._bar: Any = None  # the tqdm bar while progress_bar's block runs

    @property
    def identity(self) -> str:
        """The backend's name in the call key (its identity when it has one)."""
        return getattr(self.backend, "identity", self.backend.name)

    @property
    def server(self) -> str | None:
        """The server part of the call key (``None`` for a local backend)."""
        return getattr(self.backend, "server", None)

    def key(self, req: ChatRequest) -> str:
        """The cache key of ``req`` on this backend, model and server."""
        return call_key(self.identity, self.backend.model, self.normalise(req), self.server)

    def legacy_key(self, req: ChatRequest) -> str | None:
        """The key this request had before the server was part of it (``None``: unchanged)."""
        if self.server is None:
            return None
        return call_key(self.identity, self.backend.model, self.normalise(req))

    def legacy_lookups(self) -> bool:
        """Whether requests are also looked up by their ``legacy_key``: only when the store holds calls
        stored before the server was part of the key (checked once per ``drive``; a second hash per
        call saved otherwise)."""
        if self.server is None:
            return False
        if self._legacy_calls is None:
            self._legacy_calls = has_serverless_calls(self.store)
        return self._legacy_calls

    def file_journals(self) -> int:
        """File the journals of earlier runs on this store, and the call shards of killed ones
        (``shards.merge_left_behind``), into the cache (once per runner)."""
        if self._journal_filed or str(self.store.path) == ":memory:":
            return 0
        self._journal_filed = True
        n = journal.file_pending(self.store.path, self.cache.put_rows)
        if not self.cache.keeps_shards:  # a keep-shards run reads shards as they are (one writer files them)
            n += merge_left_behind(self.store)
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

        # the bar redraws itself with "\r": below the CLI's escaping (engine/terminal.py), it shows
        # only its own counts
        err = getattr(sys.stderr, "unescaped", sys.stderr)
        bar = self._bar = tqdm(total=total, desc=desc, unit=unit, leave=True, dynamic_ncols=True, file=err)
        try:
            yield
        finally:
            bar.close()
            self._bar = None

    def drive(
        self,
        units: Iterable[Unit],
        on_done: Callable[[Any], None] | None = None,
        *,
        total: int | None = None,
        desc: str = "calls",
        unit: str = "call",
        on_tick: Callable[[], float] | None = None,
    ) -> None:
        """Run every unit to completion; ``on_done(value)`` gets each unit's return value as it finishes.
        ``on_tick()`` runs inside store ticks (after the results of the tick reached their units) and
        returns the monotonic time by which it wants the next tick (``inf``: none): a verdict writer's
        due flush, so verdicts of finished pairs reach the store even while every call in flight waits
        on a slow server."""
        self.file_journals()
        self._legacy_calls = None  # looked up again by this drive's first legacy_key
        ctx = self.progress_bar(total, desc, unit) if self._bar is None else nullcontext()
        with ctx:
            Drive(self, units, on_done, on_tick).run()

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

    def _call(self, items: list[tuple[str, ChatRequest]]) -> list[ChatResult]:
        """Make the calls ``items`` (in a worker thread, with retries) and journal them the moment they
        are answered, before anything else sees them: a kill from then on cannot make them be paid
        again (``journal``). A journal no location can take is noted; the store still gets the calls."""
        results = self._with_retries([req for _, req in items])
        self._journal_answered(items, results)
        return results

    async def _call_async(self, items: list[tuple[str, ChatRequest]]) -> list[ChatResult]:
        """``_call`` on the backend's event loop: the same retries and journaling, no thread per call."""
        results = [await self._with_retries_async(req) for _, req in items]
        self._journal_answered(items, results)
        return results

    def _journal_answered(self, items: list[tuple[str, ChatRequest]], results: list[ChatResult]) -> None:
        """Append answered calls to the journal; their rows are kept until ``_record`` stores them
        (built once per call)."""
        rows = call_rows(
            [(k, req, res) for (k, req), res in zip(items, results, strict=True)],
            self.identity, self.backend.model, self.run_id, self.server,
        )  # fmt: skip
        with self._lock:
            self._rows.update((r["call_key"], r) for r in rows)
        if self.journal is not None:
            try:
                self.journal.record(rows)
            except journal.JournalUnwritable as exc:
                with self._lock:
                    self.journal_error = str(exc)

    def _record(self, calls: list[tuple[str, ChatRequest, ChatResult]], journal_only: bool = False) -> None:
        """Store finished calls (one transaction; the driver counted them as they finished) and tell the
        journal they are stored; when the store cannot take them, make sure the journal holds them
        (durably) and raise the store's error."""
        with self._lock:  # rows built when the calls were answered (``_journal_answered``)
            kept = [self._rows.pop(k, None) for k, _req, _res in calls]
        missing = [c for c, row in zip(calls, kept, strict=True) if row is None]
        rows = [row for row in kept if row is not None]
        rows += call_rows(missing, self.identity, self.backend.model, self.run_id, self.server)
        failure: BaseException | None = None
        if not journal_only:
            try:
                self.cache.put_rows(rows)
            except STORE_ERRORS as exc:
                failure = exc
            else:
                if self.journal is not None:
                    self.journal.stored(r["call_key"] for r in rows)
                return
        self._journal([r for r in rows if self.journal is None or not self.journal.holds(r["call_key"])])
        if failure is not None:
            raise failure

    def _journal(self, rows: list[dict]) -> None:
        """Keep calls the store could not take in the journal (only the unstored ones, fsynced)."""
        jr = self.journal or journal.CallJournal(self.store.path)
        self.journal = jr
        try:
            jr.record(rows, durable=True)
            jr.keep_unstored()
        except journal.JournalUnwritable as exc:
            raise StoreUnavailable(
                f"{jr.unstored + len(rows)} finished calls could be stored neither in {self.store.path} nor "
                f"in a journal ({exc}); they are lost and a rerun pays for them again."
            ) from exc
        self.stats.journaled = jr.unstored
        self.journal_file = jr.path

    def close_journal(self) -> None:
        """End of a drive: the journal file is removed when every call in it is stored."""
        if self.journal is not None:
            self.journal.close()

    def store_lost(self, exc: BaseException) -> StoreUnavailable:
        """The one sentence for a run stopped because the store could not take its calls."""
        jr = self.journal
        moved = (
            f" (the journal's first place, beside the store, could not be written: {jr.moved_because})"
            if jr is not None and jr.moved_because and self.stats.journaled
            else ""
        )
        kept = (
            f"the {self.stats.journaled} finished calls not yet stored are kept in {self.journal_file}"
            f"{moved} and the next run on this store files them into the cache"
            if self.stats.journaled
            else "no finished call was lost"
        )
        then = "free some space and rerun" if is_disk_full(exc) else "rerun when the store is free"
        return StoreUnavailable(
            f"The judge run stopped because the store at {self.store.path} could not be written: "
            f"{store_problem(self.store, exc)}; {kept}; {then}."
        )

    def _count(self, calls: list[tuple[str, ChatRequest, ChatResult]]) -> None:
        """Count finished calls (made, tokens, cost) as they finish, before their group is stored: the
        unreachable-server breaker asks whether any call has succeeded yet."""
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
                raise Stopped()
            try:
                res = self.backend.complete(reqs)
            except RetryableError as exc:
                attempt += 1
                if self._stop.wait(self._retry_delay(exc, attempt)):  # a stop ends the sleep at once
                    self._cut_short(exc)
                continue
            return self._succeeded_after(res, attempt)

    async def _with_retries_async(self, req: ChatRequest) -> ChatResult:
        """``_with_retries`` for one request on the backend's event loop (``complete_async``)."""
        attempt = 0
        while True:
            if self._stop.is_set():
                raise Stopped()
            try:
                res = await self.backend.complete_async(req)  # type: ignore[attr-defined]
            except RetryableError as exc:
                attempt += 1
                until = time.monotonic() + self._retry_delay(exc, attempt)
                while (left := until - time.monotonic()) > 0:  # a stop ends the sleep within 50 ms
                    if self._stop.is_set():
                        self._cut_short(exc)
                    await asyncio.sleep(min(left, 0.05))
                continue
            return self._succeeded_after([res], attempt)[0]

    def _retry_delay(self, exc: RetryableError, attempt: int) -> float:
        """The wait before retry ``attempt`` after ``exc`` (counted in the stats); ``GaveUp`` past
        ``max_retries``, ``ServerStalled`` when the first attempts all timed out."""
        if isinstance(exc, NoReply):
            self._check_stall(exc)
        if attempt > self.max_retries:
            raise GaveUp(f"gave up after {attempt} attempt{'s' if attempt != 1 else ''}: {exc}") from exc
        delay = self.backoff_delay(attempt, exc.retry_after)
        with self._lock:
            self.stats.retries += 1
            self.stats.delays.append(delay)
        return delay

    def _cut_short(self, exc: BaseException) -> None:
        """A backoff sleep ended by a stop (bad key, unknown model, Ctrl-C): counted, then ``Stopped``."""
        with self._lock:
            self.stats.waits_cut_short += 1
        raise Stopped() from exc

    def _succeeded_after(self, res: list[ChatResult], attempt: int) -> list[ChatResult]:
        """Results of a call that succeeded after ``attempt`` failed attempts (``attempts`` set)."""
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
