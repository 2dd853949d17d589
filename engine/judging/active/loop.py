"""The active judging loop: select a batch, judge it through the runner, refit, until the budget is
spent, the pool is empty or (``--stop-when separated[:K]``) the top K are separated.

Each batch's items become runner units (a replay call, or the run's protocol on a pair of answers),
driven through ``Runner.drive``: every call is looked up in the call cache first, journaled when
answered and stored, exactly as in any judge run. A run killed mid-way and started again with the
same command walks the same path (the strategy sees the same revealed verdicts batch after batch,
since the first batches' calls now come from the cache) and pays only for the calls that were never
answered; with the same seed, budget and store it asks the same calls.

The budget counts calls asked (cached or not): an item costs its protocol's calls (1 for a replay or
``single``, 2 for ``swapped``/``soft``, 2 or 4 for ``hybrid``, whose extra scoring calls may overrun
the last batch by 2 per item). A batch takes at most ``batch`` calls' worth of items and never more
than the budget has left.

Verdicts are written as in ``judge_run`` (``VerdictWriter``: replace per pair instance, never
doubled). Items whose stored rows share one pair instance (a battle log's repeated battles of one
prompt, three annotators' votes on one pair) are written
together at the end of each batch with every row of that instance revealed so far, so each write
replaces the instance's rows by all of them.
"""

from __future__ import annotations

import contextlib
import math
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from engine.errors import LensError
from engine.judging.active.fit import ActiveFit, Revealed, fit_revealed, separated, uncertainty_summary
from engine.judging.active.pool import Pool
from engine.judging.active.select import check_strategy, select
from engine.judging.persist import finish_run, run_status, start_run
from engine.judging.pipeline import VerdictWriter
from engine.judging.run_errors import STORE_ERRORS
from engine.judging.runner import Runner, RunStats
from engine.store.connection import Store

BATCHES_BY_DEFAULT = 20
"""Without --batch, the budget is spent in this many batches (refits)."""


@dataclass(frozen=True)
class ActivePlan:
    """What an active run is asked to do: strategy, budget and batch in calls, seed, stopping rule."""

    strategy: str
    budget: int
    batch: int
    seed: int = 0
    stop: bool = False
    top_k: int | None = None


def parse_stop(text: str | None) -> tuple[bool, int | None]:
    """``separated`` or ``separated:K`` (K >= 1) as (stop early, K); None: never stop early."""
    if text is None:
        return False, None
    head, _, k = text.strip().partition(":")
    if head != "separated" or (k and not k.isdigit()) or (k and int(k) < 1):
        raise LensError(
            f"--stop-when takes separated or separated:K with K a whole number of at least 1, not {text!r}."
        )
    return True, int(k) if k else None


def make_plan(strategy: str | None, budget: int | None, batch: int | None, seed: int = 0,
              stop_when: str | None = None) -> ActivePlan:
    """The plan from the command line, or one sentence naming what is wrong with it."""
    if strategy is None:
        raise LensError("--budget, --batch and --stop-when need --select STRATEGY.")
    check_strategy(strategy)
    if budget is None:
        raise LensError("--select needs --budget N, the number of judge calls to spend.")
    if budget <= 0:
        raise LensError(f"--budget must be at least 1 call, not {budget}.")
    if batch is not None and batch <= 0:
        raise LensError(f"--batch must be at least 1 call, not {batch}.")
    if batch is not None and batch > budget:
        raise LensError(f"--batch {batch} is larger than --budget {budget}; a batch cannot spend more than "
                        "the whole budget.")
    stop, top_k = parse_stop(stop_when)
    return ActivePlan(strategy, budget, batch or math.ceil(budget / BATCHES_BY_DEFAULT), seed, stop, top_k)


class ItemSource(Protocol):
    """Where items come from and how one is asked: ``ReplaySource`` or ``JobSource``."""

    @property
    def pool(self) -> Pool:
        """The items."""

    def unit(self, i: int):
        """A runner unit asking item ``i``; it returns (i, verdict rows)."""


@dataclass(frozen=True)
class ActiveReport:
    """What an active run did and where it stopped."""

    run_id: int
    dataset: str
    plan: ActivePlan
    calls: int  # calls asked by the chosen items (cached or made)
    items: int
    batches: int
    verdicts: int
    invalid: int
    stop_reason: str  # separated | budget | pool
    fit: ActiveFit
    summary: dict
    stats: RunStats
    status: str = "done"

    def sentence(self) -> str:
        """Why the run stopped and how uncertain the ranking is there, in one sentence."""
        s = self.summary
        k = "all models" if self.plan.top_k is None else f"the top {self.plan.top_k}"
        why = {
            "separated": f"every adjacent pair of {k} has separated intervals",
            "budget": f"the budget of {self.plan.budget} calls is spent",
            "pool": "every call the pool offers has been asked",
        }[self.stop_reason]
        return (
            f"Stopped after {self.calls} calls in {self.batches} batches because {why}; "
            f"{s['separated_pairs']} of {s['adjacent_pairs']} adjacent pairs of {k} are separated at "
            f"{self.fit.level:.0%}, intervals {s['mean_ci_width']:.3f} wide on average "
            f"(widest {s['max_ci_width']:.3f}, log-strength units)."
        )


def row_counts(pool: Pool, i: int, rows: list[dict]) -> tuple[float, float, float]:
    """(wins of item ``i``'s model a, wins of its model b, ties) in its verdict rows (invalid: none)."""
    first = pool.models[pool.a[i]]
    wa = wb = t = 0.0
    for r in rows:
        w = r["winner"]
        if w == "tie":
            t += 1
        elif w in ("A", "B"):
            a_won = (w == "A") == (r["model_a"] == first)
            wa, wb = (wa + 1, wb) if a_won else (wa, wb + 1)
    return wa, wb, t


def _counted(unit, calls: list[int]):
    """``unit`` unchanged, adding the calls it asks to ``calls[0]``."""
    send = None
    try:
        while True:
            reqs = unit.send(send)
            calls[0] += len(reqs)
            send = yield reqs
    except StopIteration as stop:
        return stop.value


class Steps:
    """The batches of a plan, one at a time: iterating yields each batch's chosen items, after checking
    the stopping rule on the fit of what ``revealed`` holds; the caller records each batch's verdicts in
    ``revealed`` before asking for the next. ``spent()`` gives the calls asked so far. ``reason`` says
    why it ended (separated, budget or pool) and ``batches`` how many it yielded.

    The CLI's run (``active_run``) and an in-process simulation (``simulate``) walk the same steps, so
    for one seed they choose the same items."""

    def __init__(self, pool: Pool, plan: ActivePlan, revealed: Revealed, spent: Callable[[], int]):
        self.pool, self.plan, self.revealed, self.spent = pool, plan, revealed, spent
        self.rng = np.random.default_rng(plan.seed)
        self.batches = 0
        self.reason = "budget"
        self._fit: ActiveFit | None = None  # ``refit``'s, used for the next batch

    def refit(self) -> ActiveFit:
        """The fit of what ``revealed`` holds now (after the caller recorded a batch); the next batch is
        chosen on this same fit, computed once (a caller that reports the fit after every batch)."""
        self._fit = fit_revealed(self.pool, self.revealed)
        return self._fit

    def __iter__(self) -> Iterator[np.ndarray]:
        pool, plan = self.pool, self.plan
        while True:
            fit = self._fit if self._fit is not None else fit_revealed(pool, self.revealed)
            self._fit = None
            if plan.stop and separated(fit, plan.top_k):
                self.reason = "separated"
                return
            left = plan.budget - self.spent()
            if left < pool.calls_per_item:
                self.reason = "budget"
                return
            n = max(1, min(plan.batch, left) // pool.calls_per_item)
            chosen = select(plan.strategy, pool, self.revealed, n, self.rng, top_k=plan.top_k, fit=fit)
            if len(chosen) == 0:
                self.reason = "pool"
                return
            yield chosen
            self.batches += 1


@dataclass(frozen=True)
class Simulation:
    """An in-process run of a plan: the items asked batch by batch, what was revealed, why it stopped."""

    batches: list[np.ndarray]
    revealed: Revealed
    reason: str


def simulate(pool: Pool, winners: np.ndarray, plan: ActivePlan) -> Simulation:
    """Walk ``plan`` over ``pool`` answering item i with ``winners[i]`` (A, B, tie or invalid), one call per
    item: the same steps as ``judge --backend replay`` on a ``ReplaySource`` with these winners (its
    ``pool`` and ``winner``), without the runner or the store (for benchmarks and the app's curves)."""
    revealed = Revealed.empty(pool)
    steps = Steps(pool, plan, revealed, spent=lambda: revealed.n_asked * pool.calls_per_item)
    asked = []
    for chosen in steps:
        revealed.record_winners(chosen, winners[chosen])
        asked.append(chosen)
    return Simulation(asked, revealed, steps.reason)


class _Writers:
    """One ``VerdictWriter`` per judge, and the rows of pair instances shared by several items (module
    docstring), rewritten whole at the end of each batch."""

    def __init__(self, store: Store, dataset: str, pool: Pool, source: str, every: int, every_s: float):
        self.pool = pool
        self.writers = {j: VerdictWriter(store, dataset, j, source, every=every, every_s=every_s)
                        for j in pool.judges}
        m = pool.n_models
        key = ((pool.judge.astype(np.int64) * (int(pool.prompt.max()) + 1) + pool.prompt) * (m * m)
               + pool.a.astype(np.int64) * m + pool.b)
        _, inverse, counts = np.unique(key, return_inverse=True, return_counts=True)
        self.key = inverse
        self.shared = counts[inverse] > 1
        self.rows: dict[int, list[dict]] = defaultdict(list)
        self.touched: dict[int, str] = {}
        self.verdicts = self.invalid = 0

    def add(self, i: int, rows: list[dict]) -> None:
        self.verdicts += len(rows)
        self.invalid += sum(r["winner"] == "invalid" for r in rows)
        judge = self.pool.judges[self.pool.judge[i]]
        if not self.shared[i]:
            self.writers[judge].add(rows)
            return
        k = int(self.key[i])
        self.rows[k].extend(rows)
        self.touched[k] = judge

    def end_batch(self) -> None:
        """Write the batch: the shared instances' rows, then every writer's buffer (one transaction each)."""
        for k, judge in self.touched.items():
            self.writers[judge].add(self.rows[k])
        self.touched = {}
        for w in self.writers.values():
            w.flush()

    def flush(self) -> None:
        self.end_batch()


def active_run(
    store: Store,
    dataset: str,
    runner: Runner,
    source: ItemSource,
    plan: ActivePlan,
    *,
    protocol: str | None,
    source_label: str,
    params: dict | None = None,
    force: bool = False,
    flush_every_s: float = 2.0,
) -> ActiveReport:
    """Run ``plan`` over ``source``'s pool with ``runner`` as one recorded judge run into ``dataset``.

    Verdicts are written at the end of each batch, and within a batch every ``flush_every_s`` seconds
    (a slow model judge's dataset grows while it runs); the calls behind them are cached as they finish.
    """
    pool = source.pool
    check_strategy(plan.strategy)
    run_id = start_run(store, "judge", dataset, runner.backend.name, runner.backend.model, protocol,
                       params or {}, force=force)
    runner.run_id = run_id
    writers = _Writers(store, dataset, pool, source_label, 1 << 62, flush_every_s)
    revealed = Revealed.empty(pool)
    calls = [0]
    steps = Steps(pool, plan, revealed, spent=lambda: calls[0])
    error: BaseException | None = None

    def done(value) -> None:
        i, rows = value
        writers.add(i, rows)
        revealed.record([i], *([x] for x in row_counts(pool, i, rows)))

    try:
        with runner.progress_bar(plan.budget // pool.calls_per_item, f"judge ({plan.strategy})", "item"):
            for chosen in steps:
                runner.drive((_counted(source.unit(int(i)), calls) for i in chosen), done)
                revealed.asked[chosen] = True  # a failed call counts as asked: a rerun retries it
                writers.end_batch()
        writers.flush()
    except BaseException as exc:
        error = exc
        with contextlib.suppress(Exception):  # the first error is the one to report
            writers.flush()  # items that finished before the error are real verdicts
        raise
    finally:
        try:
            finish_run(store, run_id, runner.stats, run_status(runner.stats, error))
        except STORE_ERRORS:
            if error is None:
                raise
    fit = fit_revealed(pool, revealed)
    return ActiveReport(run_id, dataset, plan, calls[0], revealed.n_asked, steps.batches, writers.verdicts,
                        writers.invalid, steps.reason, fit, uncertainty_summary(fit, plan.top_k),
                        runner.stats, run_status(runner.stats))
