"""Active judging measured by replay: ranking accuracy and bad triads versus calls spent (issue 27, point 5).

A ``ReplaySource`` is a dataset's stored verdicts as the pool of an active run (one item per verdict
row, answered by that row's winner, as ``judge --backend replay`` answers), with the full-data ranking
as the reference: the same Bradley-Terry fit (``fit_revealed``) on every item revealed. ``replay_curve``
walks one strategy and seed through the same ``select`` and ``fit_revealed`` the CLI's loop calls, one
batch at a time, and records after each batch the recovery numbers of the fit so far against the
reference (``engine.ranking.recovery``: Kendall tau distance, Spearman, top-1 and top-5 recovery), whether
the stopping rule holds (``separated``), and optionally the bad triads of the revealed tournament graphs
(counted by the project's graph builder and cycle counter, not by the strategy's own counter).

``start_one_order``: a starting state for re-judging experiments: one verdict revealed for every edge
(prompt, model pair), the order drawn at random, so every further call re-judges an edge.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pandas as pd

from engine.errors import LensError
from engine.judging.active.fit import ActiveFit, Revealed, fit_revealed, separated
from engine.judging.active.loop import ActivePlan, Steps
from engine.judging.active.pool import Pool, pool_from_verdicts
from engine.judging.active.select import check_strategy
from engine.ranking.recovery import recovery
from engine.store.connection import Store

CURVE_COLUMNS = ("strategy", "seed", "calls", "kendall", "spearman", "top1", "top5", "separated")
"""The columns of a curve table (``bad_triads`` is added when counted)."""


@dataclass(frozen=True, eq=False)
class ReplaySource:
    """A replay's pool, each item's stored winner and the full-data scores (the reference ranking);
    ``verdict_id``: each item's stored verdict, when it came from a store."""

    name: str
    pool: Pool
    winners: np.ndarray
    reference: np.ndarray
    verdict_id: np.ndarray | None = None


def measured(
    name: str, pool: Pool, winners: np.ndarray, verdict_id: np.ndarray | None = None
) -> ReplaySource:
    """``pool`` answered by ``winners``, with the reference: the BT fit on every item revealed."""
    full = Revealed.empty(pool)
    full.record_winners(np.arange(len(pool)), winners)
    return ReplaySource(name, pool, np.asarray(winners, dtype=object), fit_revealed(pool, full).scores,
                        verdict_id)


def store_source(store: Store, dataset: str, judge: str | None = None) -> ReplaySource:
    """SRC = ``dataset`` (of ``judge``) exactly as ``judge --backend replay --from-dataset SRC
    [--from-judge J]`` reads it (``engine.judging.active.replay.load_replay_source``: same items, same
    order), so a replay run and this harness walk the same path for one seed."""
    from engine.judging.active.replay import load_replay_source

    src = load_replay_source(store, dataset, judge=judge)
    return measured(dataset, src.pool, src.winner, src.verdict_id)


def replay_source(verdicts: pd.DataFrame, name: str) -> ReplaySource:
    """A verdict frame (canonical columns) as a replay pool, one item per row whose two models differ."""
    if verdicts.empty:
        raise LensError(f"{name} holds no verdicts to replay.")
    rows = verdicts[verdicts["model_a"] != verdicts["model_b"]].reset_index(drop=True)
    return measured(name, pool_from_verdicts(rows, what=name), rows["winner"].astype(str).to_numpy(object))


def verdict_rows(source: ReplaySource, items: np.ndarray) -> pd.DataFrame:
    """The canonical verdict rows of pool ``items`` (what a replay stores for them), from the pool alone."""
    pool = source.pool
    items = np.asarray(items, dtype=np.int64)
    inst = pool.prompt_table.iloc[pool.prompt[items]].reset_index(drop=True)
    return pd.DataFrame({
        "dataset": source.name,
        "judge": np.asarray(pool.judges, dtype=object)[pool.judge[items]],
        "prompt_id": inst["prompt_id"].astype(str).to_numpy(object),
        "variant": inst["variant"].to_numpy(),
        "turn": inst["turn"].to_numpy(),
        "variant_kind": inst["variant_kind"].fillna("original").to_numpy(object),
        "category": inst["category"].to_numpy(object),
        "model_a": np.asarray(pool.models, dtype=object)[pool.a[items]],
        "model_b": np.asarray(pool.models, dtype=object)[pool.b[items]],
        "winner": source.winners[items],
        "order": np.array(["AB", "BA", None], dtype=object)[np.where(pool.order[items] < 0, 2,
                                                                     pool.order[items])],
    })


def start_one_order(source: ReplaySource, seed: int) -> Revealed:
    """One item revealed per edge (prompt instance, unordered pair), drawn at random with ``seed``."""
    rng = np.random.default_rng([seed, 27])
    order = rng.permutation(len(source.pool))
    _, first = np.unique(source.pool.instance[order], return_index=True)
    revealed = Revealed.empty(source.pool)
    items = np.sort(order[first])
    revealed.record_winners(items, source.winners[items])
    return revealed


def bad_triads(source: ReplaySource, revealed: Revealed) -> int:
    """Bad 3-cycles (C3_bad) summed over the tournament graphs of the revealed verdicts."""
    from engine.graphs.cycles import cycle_counts_arrays
    from engine.graphs.stack import build_stack

    asked = np.flatnonzero(revealed.asked)
    if len(asked) == 0:
        return 0
    stack = build_stack(verdict_rows(source, asked), models=source.pool.models)
    return int(cycle_counts_arrays(stack.adj)["c3_bad"].sum())


def _copy(revealed: Revealed) -> Revealed:
    return Revealed(revealed.asked.copy(), revealed.wins_a.copy(), revealed.wins_b.copy(),
                    revealed.ties.copy(), dict(revealed.memory))


@dataclass
class ReplayState:
    """Where a replay stands after a batch: calls spent, what was revealed, the fit on it, the generator."""

    spent: int
    revealed: Revealed
    fit: ActiveFit
    rng: np.random.Generator


def replay_steps(
    source: ReplaySource,
    strategy: str,
    seed: int,
    budget: int,
    batch: int,
    *,
    top_k: int | None = None,
    start: Revealed | None = None,
) -> Iterator[ReplayState]:
    """The replay loop: the state before the first batch, then after each batch until ``budget`` calls.

    The batches are the CLI's own (``engine.judging.active.loop.Steps``: ``select`` on the current fit with
    ``rng = numpy.random.default_rng(seed)``), answered by the stored winners, then refitted.
    ``start``: verdicts known before the run (not counted as calls). The state is updated in place.
    """
    check_strategy(strategy)
    if budget < 0 or batch < 1:
        raise LensError(f"A replay needs a budget >= 0 and a batch >= 1; got {budget} and {batch}.")
    revealed = Revealed.empty(source.pool) if start is None else _copy(start)
    # the CLI's own batch walk (one call per replayed item), never stopping early
    steps = Steps(source.pool, ActivePlan(strategy, budget, batch, seed, top_k=top_k), revealed,
                  spent=lambda: state.spent)
    state = ReplayState(0, revealed, steps.refit(), steps.rng)
    yield state
    for items in steps:
        revealed.record_winners(items, source.winners[items])
        state.spent += len(items)
        state.fit = steps.refit()
        yield state


def replay_curve(
    source: ReplaySource,
    strategy: str,
    seed: int,
    budget: int,
    batch: int,
    *,
    top_k: int | None = None,
    start: Revealed | None = None,
    count_bad_triads: bool = False,
) -> pd.DataFrame:
    """One strategy's run on ``source`` (``replay_steps``): a row per batch, ``calls`` spent so far; the
    first row (calls 0) describes the start."""
    if budget < 1 or batch < 1 or batch > budget:
        raise LensError(f"A replay needs 1 <= batch <= budget; got batch {batch} and budget {budget}.")
    rows = []
    for state in replay_steps(source, strategy, seed, budget, batch, top_k=top_k, start=start):
        row = {"strategy": strategy, "seed": seed, "calls": state.spent}
        row.update({k: float(v[0]) for k, v in recovery(state.fit.scores[None], source.reference).items()})
        row["separated"] = separated(state.fit, top_k)
        if count_bad_triads:
            row["bad_triads"] = bad_triads(source, state.revealed)
        rows.append(row)
    return pd.DataFrame(rows)


def replay_curves(
    source: ReplaySource,
    strategies: tuple[str, ...],
    seeds: tuple[int, ...],
    budget: int,
    batch: int,
    **kw,
) -> pd.DataFrame:
    """``replay_curve`` for every strategy and seed, stacked."""
    runs = [replay_curve(source, s, seed, budget, batch, **kw) for s in strategies for seed in seeds]
    return pd.concat(runs, ignore_index=True)


HIGHER_IS_BETTER = {"kendall": False, "spearman": True, "top1": True, "top5": True, "bad_triads": False}


def on_grid(curves: pd.DataFrame, grid: np.ndarray) -> pd.DataFrame:
    """Each run's state at every ``grid`` call count: its row after the last batch that ended within it.

    Strategies end batches at different counts (``swim`` asks one model pair's items at a time), so
    curves are compared on one grid; a run's value holds until its next batch ends.
    """
    out = []
    for _, run in curves.groupby(["strategy", "seed"], sort=False):
        calls = run["calls"].to_numpy()
        at = np.searchsorted(calls, grid, side="right") - 1
        keep = at >= 0
        part = run.iloc[at[keep]].copy()
        part["calls"] = np.asarray(grid)[keep]
        out.append(part)
    return pd.concat(out, ignore_index=True)


def mean_curve(curves: pd.DataFrame, metric: str) -> pd.DataFrame:
    """Calls x strategy table of ``metric`` averaged over seeds (curves on one grid: ``on_grid``)."""
    return curves.pivot_table(index="calls", columns="strategy", values=metric, aggfunc="mean")


def calls_to_match(curves: pd.DataFrame, strategy: str, baseline: str, metric: str, at: int) -> float:
    """The fewest calls at which ``strategy``'s seed-mean ``metric`` is at least as good as ``baseline``'s
    at ``at`` calls (NaN when it never is within the curve); ``curves`` on one grid (``on_grid``)."""
    table = mean_curve(curves, metric)
    if at not in table.index:
        raise LensError(f"The curves have no point at {at} calls.")
    target = table.loc[at, baseline]
    mine = table[strategy]
    good = mine >= target if HIGHER_IS_BETTER[metric] else mine <= target
    hits = mine.index[good.to_numpy()]
    return float(hits.min()) if len(hits) else float("nan")
