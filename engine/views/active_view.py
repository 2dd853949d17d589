"""The app's "which calls next" panel: for the chosen dataset replayed as a pool, the accuracy-vs-calls
curves of the strategies, and the next batch the chosen strategy would send, each call with why.

The dataset's stored verdicts are the pool (``engine.views.active_curves.ReplaySource``: one item per
verdict, answered by its stored winner, as ``judge --backend replay`` does). ``next_batch`` replays the
chosen strategy for ``spent`` calls with ``seed`` (so what the panel shows is what a replay run with
that seed would do next) and lists the batch ``select`` returns, with the facts each strategy decides
on: both models' current ranks and BT interval overlap, the fitted chance that model_a wins and its
p(1 - p) (the information one verdict brings), the verdicts the pair has so far, and the bad triads of
the prompt's revealed graph through that edge (what ``cycles`` re-judges). ``REASONS`` says in one
sentence per strategy how it chose (from i27core's strategy definitions, engine/judging/active/select.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from engine.errors import LensError
from engine.judging.active.fit import uncertainty_summary
from engine.judging.active.select import STRATEGIES, check_strategy, edge_bad_triads, select
from engine.store.connection import Store
from engine.views.active_curves import ReplaySource, on_grid, replay_curve, replay_steps, store_source

REASONS = {
    "random": "drawn uniformly at random among the calls not made yet.",
    "round-robin": "model pairs in turn, so every pair gets its k-th verdict before any gets a (k+1)-th.",
    "swim": "SWIM: models join one at a time; a newcomer meets the ranked models closest to its current "
            "score.",
    "uncertainty": "the pairs whose next verdicts carry the most expected information about the scores: "
                   "close pairs (p(1 - p) near 1/4) whose difference is still poorly known, each batch "
                   "spread over many pairs.",
    "cycles": "re-judgings (the other order, another judge) of the unsettled edges on the most bad triads of "
              "their prompt's graph; then edges with no bad triad, then edges not judged yet.",
}
"""How each strategy chooses, in one sentence (shown above the next batch)."""

PANEL_SEEDS = (0, 1, 2)
"""Seeds behind the panel's curves (docs/notes/i27measure-27.md uses five)."""


def dataset_source(store: Store, dataset: str, judge: str | None) -> ReplaySource:
    """The chosen dataset's verdicts (of ``judge``; every category, as a replay reads them) as a replay
    pool; one sentence when it cannot be one."""
    from engine.store.pair_counts import is_pair_count_dataset

    if is_pair_count_dataset(store, dataset):
        raise LensError(
            f"Dataset {dataset!r} holds pair counts, not single verdicts; active judging replays single "
            "verdicts (expand the counts into battles first, as bench/active_pools.py does)."
        )
    source = store_source(store, dataset, judge)
    if source.pool.n_models < 2:
        raise LensError(f"Dataset {dataset!r} compares fewer than two models here; there is nothing to rank.")
    return source


def panel_curves(
    source: ReplaySource, budget: int, batch: int,
    strategies: tuple[str, ...] = STRATEGIES, seeds: tuple[int, ...] = PANEL_SEEDS,
) -> pd.DataFrame:
    """Every strategy's recovery numbers after each ``batch`` calls up to ``budget``, for each seed."""
    check_budget(source, budget, batch)
    runs = [replay_curve(source, s, seed, budget, batch) for s in strategies for seed in seeds]
    return on_grid(pd.concat(runs, ignore_index=True), np.arange(0, budget + 1, batch))


def check_budget(source: ReplaySource, budget: int, batch: int) -> None:
    """One sentence for a budget or batch the pool cannot take."""
    if budget < 1:
        raise LensError(f"The budget must be at least 1 call, not {budget}.")
    if not 1 <= batch <= budget:
        raise LensError(f"A batch must hold between 1 call and the budget ({budget:,}), not {batch:,}.")
    if budget > len(source.pool):
        raise LensError(f"The pool holds {len(source.pool):,} calls, fewer than the budget of {budget:,}.")


@dataclass(frozen=True)
class NextBatch:
    """The calls ``strategy`` would send next after ``spent`` calls (``table``) and the state behind it."""

    strategy: str
    spent: int
    table: pd.DataFrame
    separated_pairs: int
    adjacent_pairs: int
    mean_ci_width: float


def next_batch(source: ReplaySource, strategy: str, spent: int, batch: int, seed: int = 0) -> NextBatch:
    """The batch ``strategy`` sends after ``spent`` calls with ``seed``, each call with the facts behind it
    (module docstring)."""
    check_strategy(strategy)
    if spent < 0 or spent >= len(source.pool):
        raise LensError(f"Calls already spent must be between 0 and {len(source.pool) - 1:,}, not {spent:,}.")
    if batch < 1:
        raise LensError(f"A batch must hold at least 1 call, not {batch:,}.")
    pool = source.pool
    *_, state = replay_steps(source, strategy, seed, spent, batch)
    revealed, fit, rng = state.revealed, state.fit, state.rng
    items = select(strategy, pool, revealed, batch, rng, fit=fit)
    rank = np.empty(pool.n_models, dtype=np.int64)
    rank[fit.ranking()] = np.arange(1, pool.n_models + 1)
    a, b = pool.a[items].astype(np.int64), pool.b[items].astype(np.int64)
    p = 1.0 / (1.0 + np.exp(-(fit.scores[a] - fit.scores[b])))
    overlap = (fit.lo[a] <= fit.hi[b]) & (fit.lo[b] <= fit.hi[a])
    asked_pairs = np.bincount(pool.pair_id[revealed.asked], minlength=len(pool.pair_values))
    insts, bad = edge_bad_triads(pool, revealed)
    at = np.searchsorted(insts, pool.instance[items])
    known = (at < len(insts)) & (insts[np.minimum(at, max(len(insts) - 1, 0))] == pool.instance[items]) \
        if len(insts) else np.zeros(len(items), dtype=bool)
    edge_bad = np.where(known, bad[np.minimum(at, max(len(insts) - 1, 0))] if len(insts) else 0, 0)
    prompts = pool.prompt_table.iloc[pool.prompt[items]].reset_index(drop=True)
    order_code = np.where(pool.order[items] < 0, 2, pool.order[items])
    order = np.array(["AB", "BA", "either"], dtype=object)[order_code]
    table = pd.DataFrame({
        "prompt_id": prompts["prompt_id"].to_numpy(object),
        "variant": prompts["variant"].to_numpy(np.int64),
        "turn": prompts["turn"].to_numpy(np.int64),
        "model_a": np.asarray(pool.models, dtype=object)[a],
        "model_b": np.asarray(pool.models, dtype=object)[b],
        "order": order,
        "judge": np.asarray(pool.judges, dtype=object)[pool.judge[items]],
        "rank_a": rank[a],
        "rank_b": rank[b],
        "p_a_wins": p,
        "information": p * (1.0 - p),
        "intervals_overlap": overlap,
        "pair_calls_so_far": asked_pairs[pool.pair_id[items]],
        "edge_judged": known,
        "edge_bad_triads": edge_bad,
    })
    summary = uncertainty_summary(fit)
    return NextBatch(strategy, int(revealed.n_asked), table, summary["separated_pairs"],
                     summary["adjacent_pairs"], summary["mean_ci_width"])

