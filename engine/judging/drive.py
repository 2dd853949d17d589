"""One ``Runner.drive`` call (``engine.judging.runner``): the units in flight, the cache lookups, the
bounded pool or the batch queue of a local backend, and who waits for which call."""

from __future__ import annotations

import contextlib
import time
from collections import deque
from collections.abc import Generator, Iterable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from itertools import islice
from typing import TYPE_CHECKING, Any

from engine.errors import LensError
from engine.judging.backends import (
    BackendStopped,
    ChatRequest,
    ChatResult,
    ConnectionFailed,
    ServerUnreachable,
)
from engine.judging.run_errors import STORE_ERRORS, GaveUp, Stopped

if TYPE_CHECKING:
    from engine.judging.runner import Runner

Unit = Generator[list[ChatRequest], list["ChatResult | None"], Any]


class UnitState:
    """One unit in flight: its generator and the results of its current step."""

    __slots__ = ("gen", "keys", "got", "need")

    def __init__(self, gen: Unit):
        self.gen = gen
        self.keys: list[str] = []
        self.got: dict[str, ChatResult | None] = {}
        self.need: set[str] = set()


class Drive:
    """One ``Runner.drive`` call: the waiting requests, the pool and who waits for which call.

    The store is touched only on *ticks*, each one store session (with ``keep_open=False`` opening
    and closing the file costs about 90 ms of CPU, so the session is shared by everything due):
    storing the calls finished since the last tick, handing their results to the units (whose
    verdict writes go into the same session), looking the units' next requests up in the cache and
    claiming them, polling calls another run holds, and renewing leases. A tick comes when finished
    calls have waited ``record_every_s`` and make a pool's worth (``concurrency``), or a second more
    (or nothing else can go on without them), when the requests
    ready to send run short, or when a poll or a renewal is due. Between ticks the loop only sends
    ready requests and collects answers, so the client's work per call is the HTTP call, its journal
    line and its share of one batched write. The ready queue holds about three record windows' worth of calls
    at the rate seen so far (``window``), so the servers are never left idle waiting for a tick and
    the ticks come about once per record window, whatever the rate.
    """

    PULL = 64  # units started per cache lookup
    RECORD_MAX = 4096  # finished calls stored at the latest in one group
    WINDOW_MAX = 8192  # requests ready to send at most (memory stays bounded at any rate)

    def __init__(self, runner: Runner, units: Iterable[Unit], on_done, on_tick=None):
        self.r = runner
        self.units = iter(units)
        self.on_done = on_done
        self.on_tick = on_tick  # Runner.drive: called in ticks, returns when it wants the next one
        self.tick_at = float("inf")
        self.exhausted = False
        self.batched = runner.backend.batch_size > 1
        self.limit = 1 if self.batched else runner.concurrency
        self.pull = getattr(runner, "pull_units", None) or self.PULL  # call shards: fewer store turns
        self.base_window = float("inf") if self.batched else max(2 * self.limit, self.pull)
        self.window = self.base_window
        self.waiters: dict[str, list[UnitState]] = {}  # key → units waiting for that call
        self.failed: set[str] = set()
        self.ready: deque[tuple[str, ChatRequest]] = deque()
        self.sorted = True
        self.inflight: dict[Future, list[tuple[str, ChatRequest]]] = {}
        self.held: dict[str, ChatRequest] = {}  # claimed by another live run: wait for its result
        self.given_up: list[str] = []  # calls that failed for good here, whose claims are to be dropped
        self.next_poll = 0.0
        self.started = time.monotonic()

    def _sender(self):
        """(submit, close): how a batch of requests is sent. An async backend's calls go to its event
        loop (``start``); others to a pool of ``limit`` worker threads."""
        r = self.r
        start = getattr(r.backend, "start", None)
        loop = start(self.limit) if start is not None and not self.batched else None
        if loop is not None:

            def close_loop() -> None:  # the calls in flight end (a stop cuts their retries short)
                wait(list(self.inflight))

            return (lambda items: loop.submit(r._call_async(items))), close_loop
        pool = ThreadPoolExecutor(max_workers=self.limit, thread_name_prefix="judge")
        return (lambda items: pool.submit(r._call, items)), (
            lambda: pool.shutdown(wait=True, cancel_futures=True)
        )

    def _grow_window(self) -> None:
        """Ready requests for about three record windows at the rate of calls so far, plus two rounds of
        the pool (at least the base window), so requests run short only at a record tick."""
        if self.batched:
            return
        rate = self.r.stats.made / max(time.monotonic() - self.started, 1e-3)
        want = int(3 * rate * max(self.r.record_every_s, 0.25)) + 2 * self.limit
        self.window = max(self.base_window, min(self.WINDOW_MAX, want))

    def run(self) -> None:
        """Send every pending call, renew leases, store results in ticks (class docstring); stop on the
        first fatal error."""
        r = self.r
        submit, close = self._sender()
        stopped: BaseException | None = None
        store_exc: BaseException | None = None  # the store failed: nothing new is sent, the run stops
        refused = False  # the store refused a write: the calls finishing from then on go to the journal
        next_renew = time.monotonic() + r.renew_s
        # finished calls not yet stored, written together once the oldest has waited record_every_s
        # (or nothing is in flight or ready to send, or RECORD_MAX wait): one store transaction per
        # group, not per call
        completed: list[tuple[str, ChatRequest, ChatResult]] = []
        deliveries: list[tuple[UnitState, str, ChatResult | None]] = []
        record_by = float("inf")
        try:
            while True:
                now = time.monotonic()
                going = stopped is None and store_exc is None
                idle = not self.inflight and not self.ready  # the units need these results to go on
                # a group is stored once its oldest call has waited record_every_s and it holds a
                # pool's worth of calls, or at the latest a second later: few ticks at low rates too
                record_due = bool(completed) and (
                    idle or not going or len(completed) >= self.RECORD_MAX
                    or (now >= record_by and (len(completed) >= self.limit or now >= record_by + 1.0))
                )
                fill_due = going and not self.exhausted and len(self.ready) < self.limit
                poll_due = going and bool(self.held) and now >= self.next_poll
                renew_due = going and now >= next_renew
                hook_due = going and now >= self.tick_at
                if record_due or deliveries or self.given_up or fill_due or poll_due or renew_due or hook_due:
                    with contextlib.ExitStack() as tick:
                        with contextlib.suppress(*STORE_ERRORS):  # a failing store fails below, named
                            tick.enter_context(r.store.session())
                        if record_due:
                            try:
                                r._record(completed, journal_only=refused)  # one transaction
                            except STORE_ERRORS as exc:  # the calls are in the journal; stop sending
                                store_exc, refused = store_exc or exc, True
                                r._stop.set()
                            else:  # a result reaches its units once its call is stored
                                for k, _req, res in completed:
                                    deliveries += [(st, k, res) for st in self.waiters.pop(k, [])]
                            completed, record_by = [], float("inf")
                            r._tick()
                        if self.given_up:
                            # another run waiting for these calls may try them itself; if the store
                            # fails, they are dropped when the run ends, or lapse
                            if store_exc is None:
                                with contextlib.suppress(*STORE_ERRORS):
                                    r.cache.release(self.given_up)
                            self.given_up = []
                        if store_exc is None:
                            try:
                                self._deliver(deliveries)
                                deliveries = []
                                if stopped is None:
                                    self._grow_window()
                                    self._fill()
                                    self._poll_held()
                                    if time.monotonic() >= next_renew:
                                        r.cache.renew()
                                        next_renew = time.monotonic() + r.renew_s
                                if self.on_tick is not None:
                                    self.tick_at = self.on_tick()
                            except STORE_ERRORS as exc:
                                store_exc = exc
                                r._stop.set()
                        deliveries = []  # units cannot go on without the store
                if stopped is None and store_exc is None:
                    self._submit(submit)
                if not self.inflight:
                    if completed and (stopped is not None or store_exc is not None):
                        continue  # stored (or journaled) at the next pass, then the loop ends
                    if (
                        stopped is not None
                        or store_exc is not None
                        or (self.exhausted and not self.ready and not self.held and not completed)
                    ):
                        break
                    if self.held and not self.ready and not completed:
                        time.sleep(r.poll_s)  # another run is making these calls; wait for its results
                    continue
                timeout = max(0.05, min(next_renew, self.tick_at) - time.monotonic())
                if self.held:
                    timeout = min(timeout, r.poll_s)
                if completed:
                    due_at = record_by if len(completed) >= self.limit else record_by + 1.0
                    timeout = min(timeout, max(0.0, due_at - time.monotonic()))
                finished, _ = wait(self.inflight, timeout=timeout, return_when=FIRST_COMPLETED)
                for fut in finished:
                    items = self.inflight.pop(fut)
                    try:
                        results = fut.result()
                    except BackendStopped as exc:
                        stopped = stopped or exc
                        r._stop.set()
                        continue
                    except Stopped:
                        continue
                    except (GaveUp, LensError) as exc:
                        r.stats.errors.append(str(exc))
                        for k, _req in items:
                            r.stats.failed += 1
                            self.failed.add(k)
                            deliveries += [(st, k, None) for st in self.waiters.pop(k, [])]
                        self.given_up += [k for k, _req in items]  # their claims are dropped at the tick
                        r._tick()
                        if stopped is None and isinstance(exc.__cause__, ConnectionFailed):
                            stopped = self._unreachable(exc.__cause__, len(items))
                        continue
                    # the units waiting for these calls stay in self.waiters until the calls are
                    # stored: a unit asking for one of them meanwhile joins them, not the pool
                    finished_calls = [(k, req, res) for (k, req), res in zip(items, results, strict=True)]
                    r._count(finished_calls)
                    if not completed:
                        record_by = time.monotonic() + r.record_every_s
                    completed += finished_calls
        finally:
            r._stop.set()
            close()  # the calls in flight end (nothing new starts)
            r._stop.clear()
            # interrupted (Ctrl-C): the calls that finished, and those that were in flight and have
            # now ended, are stored (or journaled) on the way out, not paid for again by the next run
            for fut, items in self.inflight.items():
                if not fut.cancelled() and fut.exception() is None:
                    ended = [(k, req, res) for (k, req), res in zip(items, fut.result(), strict=True)]
                    r._count(ended)
                    completed += ended
            with r.store.session() if completed else contextlib.nullcontext():
                if completed:
                    # journaled by _record; the interruption is raised
                    with contextlib.suppress(*STORE_ERRORS):
                        r._record(completed, journal_only=refused)
                with contextlib.suppress(
                    *STORE_ERRORS
                ):  # the leases lapse on their own once this process is gone
                    r.cache.release()
            with contextlib.suppress(OSError):  # removed when all its calls are stored
                r.close_journal()
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
            # one cache lookup for ``pull`` units, or for as many as fill half the window's gap (a unit
            # asks for about two calls): few lookups at any rate
            gap = self.window - len(self.ready)
            pull = self.pull if gap == float("inf") else max(self.pull, int(gap) // 4)
            batch = list(islice(self.units, pull))
            if not batch:
                self.exhausted = True
                break
            self._step([(UnitState(g), None) for g in batch])

    def _submit(self, submit) -> None:
        """Send ready requests while fewer than ``limit`` batches are in flight."""
        while self.ready and len(self.inflight) < self.limit:
            items = self._next_batch() if self.batched else [self.ready.popleft()]
            self.inflight[submit(items)] = items

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
    def _deliver(self, deliveries: Sequence[tuple[UnitState, str, ChatResult | None]]) -> None:
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

    def _step(self, items: Sequence[tuple[UnitState, list[ChatResult | None] | None]]) -> None:
        """Send results into units; look their next requests up in the cache in one query."""
        r = self.r
        queue = deque(items)
        while queue:
            asked: list[tuple[UnitState, list[ChatRequest]]] = []
            while queue:
                st, send = queue.popleft()
                try:
                    reqs = next(st.gen) if send is None else st.gen.send(send)  # next: a unit's start
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
            legacy = (
                {k: lk for k in fresh if (lk := r.legacy_key(reqs_of[k])) is not None}
                if fresh and r.legacy_lookups()
                else {}
            )
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
