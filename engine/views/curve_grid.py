"""The Truncation page's sensitivity curves of one selection, memoised and computed ahead of the sliders.

A keep-K move needs the μ curve at the new K, a μ move the keep-K curve at the new μ: fits the move paid for
before its rerun could end (vicuna80 pooled: 0.3-1.4 s of CPU for a keep-K curve, ~50 ms for a μ curve). The
sliders' values are discrete (K = 1 … T, 17 μ steps), so the curves form a finite grid: ``CurveGrid`` keeps
every curve it has made, once per selection, and ``CurveGrid.warm`` has one background thread make the
curves around the sliders' setting (the neighbouring μ steps and K values first) while the reader looks at
the page, so the next move finds its curve made.

Every curve is made by the call a slider move made before (``keep_k_view`` and ``mu_view``), whichever
thread makes it, with the selection's ``engine.experiments.curves.FitCache``: a curve fits only the cells
(kept graphs at one x) no earlier curve of the grid fitted, a μ curve's cells being keep-K curves' cells, and
a curve taken from the grid is the curve made from scratch, to the last digit (tests/test_curve_grid.py). A
curve asked for while the thread is making it is waited for, not made twice.
A keep-K curve is a function of the order keep-K puts the pool in
(``engine.experiments.curves.keep_k_orders``), not of μ itself: μ steps whose orders are equal (vicuna80
gpt-4: 11 orders for the 17 steps; all judges pooled: 16) share one curve, made once.
"""

from __future__ import annotations

import contextlib
import hashlib
import threading
from abc import ABC, abstractmethod
from collections.abc import Hashable, Sequence
from concurrent.futures import Future

import numpy as np
import pandas as pd

from engine.foreground import background, checkpoint, waiting

KEEP_K_REACH = 8
"""How many K on each side of the keep-K slider's value ``CurveGrid.warm`` makes the μ curves of (~50 ms
of CPU each on vicuna80): a reader stepping K with the keyboard finds them made."""

MU_REACH = 2
"""How many μ steps on each side of the μ slider's value ``CurveGrid.warm`` makes the keep-K curves of
(a pooled vicuna80 keep-K curve: ~1.4 s of CPU from nothing, 0.3-1 s with the points earlier curves
fitted): the next step either way, and the one after."""

_ONE_AT_A_TIME = threading.Lock()
"""Held while a background thread makes an item: the server's grids (curves and kept boards, one each per
selection, shared by its sessions) warm one item at a time, so warming never takes more than one core
however many are open."""


class WarmGrid(ABC):
    """Items (curves, boards) each made once, and a background thread making them ahead of the sliders.

    ``_make(item)`` (a subclass's) makes one item from its hashable key; ``_get`` makes it once (a second
    ask while it is being made waits for it, a Future), ``_start(plan)`` has one daemon thread make the
    plan's items in order, replacing the previous plan (the reader moved), skipping those made. An
    error is not kept: the page asks again and shows it. Thread-safe: sessions and the thread share it."""

    _thread_name = "lens-warm-grid"

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._made: dict[Hashable, Future] = {}
        self._plan: list[Hashable] = []
        self._thread: threading.Thread | None = None

    def _has(self, item: Hashable) -> bool:
        """Whether ``item`` is made (not merely being made)."""
        with self._lock:
            fut = self._made.get(item)
        return fut is not None and fut.done() and fut.exception() is None

    def _start(self, plan: list) -> None:
        """Replace the thread's plan with ``plan`` (items already made are left out) and start the thread
        when it is not running. Returns at once."""
        with self._lock:
            self._plan = [p for p in dict.fromkeys(plan) if p not in self._made]
            # ``_run`` clears ``_thread`` under the lock as it leaves: a thread still alive but past its last
            # look at the plan is not taken to be working through this one
            if self._plan and self._thread is None:
                self._thread = threading.Thread(target=self._run, name=self._thread_name, daemon=True)
                self._thread.start()

    def join(self, timeout: float | None = None) -> None:
        """Wait until the background thread has made every item of its plan (tests, benchmarks)."""
        with self._lock:
            thread = self._thread
        if thread is not None:
            thread.join(timeout)

    def _run(self) -> None:
        with background():  # pauses for the page's runs (``engine.foreground``): a move's rerun goes first
            self._work()

    def _work(self) -> None:
        try:
            while True:
                checkpoint()
                with self._lock:
                    while self._plan and self._plan[0] in self._made:
                        self._plan.pop(0)
                    if not self._plan:
                        self._thread = None
                        return
                    item = self._plan.pop(0)
                # an error is not kept (``_get``): the page asks for that item again and shows it itself
                with _ONE_AT_A_TIME, contextlib.suppress(Exception):
                    self._get(item)
        finally:  # however it ends, a later plan starts a new thread
            with self._lock:
                if self._thread is threading.current_thread():
                    self._thread = None

    def _get(self, item: Hashable):
        """The item (made here unless made or being made elsewhere, then waited for)."""
        with self._lock:
            fut = self._made.get(item)
            mine = fut is None
            if mine:
                fut = self._made[item] = Future()
        if mine:
            assert fut is not None
            try:
                fut.set_result(self._make(item))
            except BaseException as exc:
                with self._lock:  # an error is not kept: the next ask tries again
                    del self._made[item]
                fut.set_exception(exc)
                raise
        assert fut is not None
        if not fut.done():  # made by another thread (the warming one): it must not pause while we wait
            with waiting():
                return fut.result()
        return fut.result()

    @abstractmethod
    def _make(self, item):
        """Make one item of the grid (a curve, a board): each grid says how."""


def warm_plan(keep_k: int, steps: Sequence[float], here: int, ahead: int, *, k_max: int,
              reach: int = KEEP_K_REACH, mu_reach: int = MU_REACH) -> list[tuple[str, float]]:
    """The curves ``CurveGrid.warm`` has made, in order, at K = ``keep_k`` and μ = ``steps[here]``: those two
    settings' curves, then by distance d = 1, 2, … the μ curves at K ± d (d ≤ ``reach``, within 1 …
    ``k_max``; ~50 ms each), each distance followed by one keep-K curve (up to ~1 s each) of the ``mu_reach``
    steps ahead (``ahead``: +1 up the steps, -1 down), nearest first, then of those behind. A reader moving
    μ one way meets the steps ahead next: a curve behind is usually one made already (the step just left)."""
    ks = [here + side * d for side in (ahead, -ahead) for d in range(1, mu_reach + 1)]
    keep = [("k", steps[i]) for i in ks if 0 <= i < len(steps)]
    plan: list[tuple[str, float]] = [("k", steps[here]), ("mu", int(keep_k))]
    for d in range(1, max(reach, len(keep)) + 1):  # at each distance the cheap μ curves first
        if d <= reach:
            plan += [("mu", k) for k in (int(keep_k) - d, int(keep_k) + d) if 1 <= k <= int(k_max)]
        plan += keep[d - 1:d]
    return plan


class CurveGrid(WarmGrid):
    """One selection's keep-K curves (by μ) and μ curves (by K), each made once (``keep_k_frame``,
    ``mu_frame``), and a background thread making them ahead of the sliders (``warm``).

    ``stack``: the selection's dense GraphStack; ``reference``: its reference ratings; ``curve_mus``: the
    μ values a μ curve is drawn over; ``resamples`` and ``seed``: the curves' draws. Thread-safe: the
    page's sessions and the warming thread share one grid."""

    _thread_name = "lens-curve-grid"

    def __init__(self, stack, reference, *, curve_mus: Sequence[float], resamples: int, seed: int) -> None:
        super().__init__()
        self.stack, self.reference = stack, reference
        self.curve_mus = tuple(float(m) for m in curve_mus)
        self.resamples, self.seed = int(resamples), int(seed)
        from engine.experiments.curves import FitCache

        self._fits = FitCache()  # every curve's cells, shared by the keep-K and μ curves
        self._cycles: tuple | None = None  # the stack's cycle tables, for the keep-K orders
        self._here: int | None = None  # the μ step of the latest ``warm``, and the way the μ slider went
        self._ahead = 1
        self._by_order: dict[str, tuple[str, float]] = {}  # keep-K orders' digest -> item making it

    def _order_key(self, mu: float) -> str:
        """A digest of the keep-K orders at ``mu`` (``keep_k_orders`` on the perturbed pool, pooled as
        ``keep_k_view`` keeps): equal digests, equal keep-K curves."""
        from engine.experiments.curves import keep_k_orders
        from engine.graphs.cycles import cycle_capacity, cycle_counts

        if self._cycles is None:  # two threads may both count: the same tables, kept once
            self._cycles = (cycle_counts(self.stack), cycle_capacity(self.stack))
        counts, capacity = self._cycles
        orders = keep_k_orders(self.stack, mu=mu, per_category=False, pool="perturbed", counts=counts,
                               capacity=capacity)[3]
        h = hashlib.blake2b(digest_size=16)
        for group, order in orders.items():
            h.update(group.encode() + b"\0" + np.ascontiguousarray(order, dtype=np.int64).tobytes() + b"\0")
        return h.hexdigest()

    def keep_k_frame(self, mu: float) -> pd.DataFrame:
        """The keep-K curve at ``mu`` (``engine.views.truncation_view.keep_k_view``'s frame), made once."""
        return self._get(("k", float(mu))).copy()

    def mu_frame(self, keep_k: int) -> pd.DataFrame:
        """The μ curve at K = ``keep_k`` over ``curve_mus`` (``engine.views.truncation_view.mu_view``'s
        frame), made once."""
        return self._get(("mu", int(keep_k))).copy()

    def has(self, kind: str, x: float) -> bool:
        """Whether the curve (``"k"``, μ) or (``"mu"``, K) is made (not merely being made)."""
        return self._has((kind, x))

    def warm(self, keep_k: int, mu: float, *, k_max: int, mus: Sequence[float], reach: int = KEEP_K_REACH,
             mu_reach: int = MU_REACH) -> None:
        """Have the background thread make the curves a next move from (``keep_k``, ``mu``) needs, nearest
        first (``warm_plan``), the keep-K curves ahead in the μ slider's last direction of travel (up the
        steps ``mus`` until it first moves down) before those behind. A new call replaces the plan of the
        previous one (the reader moved); curves already made are skipped. Returns at once."""
        steps = [float(m) for m in mus]
        here = min(range(len(steps)), key=lambda i: abs(steps[i] - float(mu)))
        with self._lock:
            if self._here is not None and here != self._here:
                self._ahead = 1 if here > self._here else -1
            self._here, ahead = here, self._ahead
        self._start(warm_plan(int(keep_k), steps, here, ahead, k_max=int(k_max), reach=reach,
                              mu_reach=mu_reach))

    def _make(self, item: tuple[str, float]) -> pd.DataFrame:
        from engine.views.truncation_view import keep_k_view, mu_view

        kind, x = item
        if kind == "mu":
            return mu_view(self.stack, self.reference, k=int(x), mus=self.curve_mus, resamples=self.resamples,
                           seed=self.seed, fits=self._fits)
        try:
            key = self._order_key(float(x))
        except Exception:  # the curve's own call says what is wrong (e.g. an empty pool), in its words
            key = None
        if key is not None:
            with self._lock:
                owner = self._by_order.setdefault(key, item)
            if owner != item:  # another μ's orders, the same: its curve (made, or being made: waited for)
                return self._get(owner)
        return keep_k_view(self.stack, self.reference, mu=float(x), resamples=self.resamples, seed=self.seed,
                           fits=self._fits)
