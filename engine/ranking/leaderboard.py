"""The leaderboard service: store → graphs → (keep-K by S_mu) → ranker → table with bootstrap CIs.

One call describes exactly what produced a table (``params``): dataset and its version, judge and
category filters, combine policy, truncation (K, mu, per category, threshold), ranker and its
parameters, bootstrap B and seed. Truncation uses ``engine.graphs.cycles`` and ``engine.graphs.truncation``
(paper 000, Section 3.1); W and T follow eq. 3-4.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from engine.errors import LensError
from engine.graphs.stack import DEFAULT_POLICY, GraphStack, graph_cells, stack_from_cells
from engine.rankers import RankResult, fit_counts, rank, ranker_object
from engine.rankers.base import ranks_from_scores
from engine.rankers.objects import ELO_ORDERS
from engine.rankers.votes import Votes
from engine.rankers.votes import votes as make_votes
from engine.ranking.bootstrap import BootstrapResult
from engine.ranking.bootstrap import bootstrap as run_bootstrap
from engine.ranking.count_bootstrap import bootstrap_counts
from engine.ranking.distances import all_distances
from engine.ranking.vote_query import frame_vote_rows, key_hashes

COUNTING_RANKERS = ("copeland", "scorewin", "majority", "borda", "pairwise-majority")

TABLE_COLUMNS = (
    "rank", "model", "score", "ci_low", "ci_high", "rank_low", "rank_high", "wins", "losses", "ties",
    "win_rate", "n_graphs_model", "votes", "n_prompts",
)
"""wins / losses / ties / votes count votes on the count path (params["unit"] == "votes") and graph
edges on the stack path ("graphs"); on data with one verdict pair per graph and pair they agree."""

UNIT_NOTES = {
    "votes": ("counts are votes: one per judge, annotator and battle on a pair in a graph (its two presentation "
              "orders combined by the policy); repeated votes count"),
    "graphs": "counts are graph edges: all verdicts on a pair in one graph combined by the policy into one",
}


@dataclass(frozen=True)
class Leaderboard:
    """``table`` (one row per model, best first), ``params`` (what produced it), the graphs ranked
    (``kept``: with keep-K, the kept-graph table in keep order with each graph's S_mu)."""

    table: pd.DataFrame
    params: dict[str, Any]
    n_graphs: int
    kept: pd.DataFrame
    result: RankResult = field(repr=False)
    bootstrap: BootstrapResult | None = field(default=None, repr=False)

    @property
    def ranks(self) -> pd.Series:
        return self.table.set_index("model")["rank"]

    @property
    def scores(self) -> pd.Series:
        return self.table.set_index("model")["score"]


def _plain(v: Any) -> Any:
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if isinstance(v, dict):
        return {k: _plain(x) for k, x in v.items()}
    return v


def truncate(stack: GraphStack, keep_k: int, mu: float = 1.0, per_category: bool = False, pool: str = "perturbed"):
    """Keep the K graphs with the smallest S_mu = C3_bad + mu C4_bad (paper 000, Section 3.1).

    Scores come from the graphs as judged; ``pool`` says which variants compete (``perturbed``:
    originals and paraphrases, as the paper's Trunc; ``sampling``; ``all``). Returns the kept
    sub-stack and ``engine.graphs.truncation.KeptGraphs`` (kept-graph table, threshold S_K, notes).
    """
    from engine.graphs.truncation import keep_k_graphs

    kept = keep_k_graphs(stack, keep_k, mu=mu, per_category=per_category, pool=pool)
    return stack.subset(kept.index), kept


def leaderboard_from_stack(
    stack: GraphStack,
    *,
    ranker: str = "bt",
    keep_k: int | None = None,
    mu: float = 1.0,
    per_category: bool = False,
    pool: str = "perturbed",
    bootstrap: int = 0,
    seed: int = 0,
    ranker_params: dict | None = None,
    level: float = 0.95,
    extra_params: dict | None = None,
    bootstrap_unit: str | None = None,
) -> Leaderboard:
    """Rank a stack (optionally truncated to keep-K) and tabulate scores, CIs and win/loss/tie counts.

    Only models compared in the ranked graphs are ranked: after keep-K (or a filter) a model without
    any comparison would otherwise get a score from regularisation alone (BT's virtual ties put four
    unseen guanacos 3rd with every judge pooled and K = 10). Dropped models are listed in
    ``params["dropped_models"]`` and in a note. ``bootstrap_unit``: graph or prompt (None: the
    ranker's own unit, ``engine.ranking.bootstrap.default_unit``).
    """
    params = dict(ranker_params or {})
    n_pool = stack.T
    threshold, keep_note, kept_table = None, None, None
    if int(bootstrap or 0) < 0:
        raise LensError(f"The number of bootstrap resamples must be 0 (no intervals) or more; got {bootstrap}.")
    if stack.T == 0:
        raise LensError("The selection holds no graph: no valid verdict matches the filters.")
    if keep_k is not None:
        stack, sel = truncate(stack, keep_k, mu, per_category, pool)
        threshold = sel.threshold if not isinstance(sel.threshold, pd.Series) else sel.threshold.to_dict()
        n_pool, keep_note, kept_table = sel.n_pool, sel.note or None, sel.table
    stack, dropped = compared_models_only(stack, keep_k is not None)
    res = rank(stack, ranker, **params)
    models = list(stack.models)
    W, T = stack.win_tie_matrices()
    wins, losses, ties = W.sum(axis=1), W.sum(axis=0), T.sum(axis=1)
    games = wins + losses + ties
    scores = res.scores.reindex(models)
    table = pd.DataFrame(
        {
            "model": models,
            "score": scores.to_numpy(np.float64),
            "wins": wins.astype(np.int64),
            "losses": losses.astype(np.int64),
            "ties": ties.astype(np.int64),
            "win_rate": np.divide(wins + 0.5 * ties, games, out=np.full(len(models), np.nan), where=games > 0),
            "n_graphs_model": stack.observed.any(axis=2).sum(axis=0).astype(np.int64),
            "votes": games.astype(np.int64),
            "n_prompts": _prompts_per_model(stack),
        }
    )
    # ranks: a ranker's stated total order when it has one (PGED's name tie-break, Kemeny's order),
    # else competition ranks of the scores with the float tolerance of ranks_from_scores
    table["rank"] = res.ranks.reindex(models).to_numpy()
    boot = None
    if bootstrap and int(bootstrap) > 0:
        boot = run_bootstrap(stack, ranker, int(bootstrap), int(seed), level=level, unit=bootstrap_unit, **params)
        sci, rci = boot.scores_ci.reindex(models), boot.ranks_ci.reindex(models)
        table["ci_low"], table["ci_high"] = sci["low"].to_numpy(), sci["high"].to_numpy()
        table["rank_low"], table["rank_high"] = rci["low"].to_numpy(), rci["high"].to_numpy()
    else:
        table["ci_low"] = table["ci_high"] = np.nan
        table["rank_low"] = table["rank_high"] = pd.array([pd.NA] * len(models), dtype="Int64")
    table = table.sort_values(["rank", "model"], kind="stable")
    table = table[list(TABLE_COLUMNS)].reset_index(drop=True)
    info = {
        "ranker": ranker,
        "ranker_params": _plain(params),
        "ranker_details": _plain({k: v for k, v in res.details.items() if not isinstance(v, np.ndarray)}),
        "policy": stack.policy,
        "keep_k": keep_k,
        "mu": mu if keep_k is not None else None,
        "per_category": per_category if keep_k is not None else None,
        "pool": pool if keep_k is not None else None,
        "threshold": _plain(threshold),
        "keep_note": keep_note,
        "n_graphs_pool": n_pool,
        "n_graphs": stack.T,
        "n_models": stack.n,
        "dropped_models": dropped,
        "bootstrap": int(bootstrap or 0),
        "seed": int(seed) if bootstrap else None,
        "bootstrap_unit": boot.unit if boot is not None else None,
        "bootstrap_method": boot.method if boot is not None else None,
        "bootstrap_n_regularised": boot.n_regularised if boot is not None else None,
        "bootstrap_n_unconverged": boot.n_unconverged if boot is not None else None,
        "bootstrap_n_undefined": boot.n_undefined if boot is not None else None,
        "n_uncompared_pairs": int(((~stack.observed.any(axis=0)) & ~np.eye(stack.n, dtype=bool)).sum() // 2),
        "level": level if bootstrap else None,
        **(extra_params or {}),
    }
    info.setdefault("unit", "graphs")
    kept = kept_table if kept_table is not None else stack.keys.copy()
    return Leaderboard(table, info, stack.T, kept, res, boot)


def _prompts_per_model(stack: GraphStack) -> np.ndarray:
    """Per model: the distinct prompt ids of the graphs it took part in."""
    present = stack.observed.any(axis=2)
    if stack.T == 0:
        return np.zeros(stack.n, dtype=np.int64)
    q = pd.factorize(stack.keys["prompt_id"].astype(str))[0]
    out = np.zeros(stack.n, dtype=np.int64)
    for i in range(stack.n):
        out[i] = np.unique(q[present[:, i]]).size
    return out


def leaderboard_from_votes(
    votes: Votes,
    *,
    ranker: str = "bt",
    bootstrap: int = 0,
    seed: int = 0,
    ranker_params: dict | None = None,
    level: float = 0.95,
    extra_params: dict | None = None,
    bootstrap_unit: str | None = None,
    kept: pd.DataFrame | None = None,
) -> Leaderboard:
    """Rank from votes and their pair counts (no graph stack): the count rankers' path.

    ``votes`` come from ``engine.ranking.vote_query`` (DuckDB) and ``engine.rankers.votes.votes``; the table's
    counts are votes (``UNIT_NOTES``). Models without a vote are left off the board.
    """
    obj = ranker_object(ranker)
    params = obj.check(dict(ranker_params or {}))
    if int(bootstrap or 0) < 0:
        raise LensError(f"The number of bootstrap resamples must be 0 (no intervals) or more; got {bootstrap}.")
    if len(votes) == 0:
        raise LensError("The selection holds no graph: no valid verdict matches the filters.")
    pc = votes.pair_counts()
    seen = pc.votes > 0
    dropped = [m for m, k in zip(pc.models, seen, strict=True) if not k]
    if dropped:
        if seen.sum() < 2:
            raise LensError(f"Only {int(seen.sum())} model(s) have a comparison in the selection; a ranking needs "
                            "at least two.")
        pc = pc.restrict(seen)
    res = fit_counts(ranker, pc, votes, **params)
    models = list(pc.models)
    wins, losses, ties = pc.W.sum(axis=1), pc.W.sum(axis=0), pc.T.sum(axis=1)
    games = wins + losses + ties
    table = pd.DataFrame({
        "model": models,
        "score": res.scores.reindex(models).to_numpy(np.float64),
        "wins": wins.astype(np.int64), "losses": losses.astype(np.int64), "ties": ties.astype(np.int64),
        "win_rate": np.divide(wins + 0.5 * ties, games, out=np.full(len(models), np.nan), where=games > 0),
        "n_graphs_model": pc.n_graphs, "votes": pc.votes, "n_prompts": pc.n_prompts,
    })
    table["rank"] = res.ranks.reindex(models).to_numpy()
    boot = None
    if bootstrap and int(bootstrap) > 0:
        boot = bootstrap_counts(votes, ranker, int(bootstrap), int(seed), level=level, unit=bootstrap_unit,
                                models=tuple(models), **params)
        sci, rci = boot.scores_ci.reindex(models), boot.ranks_ci.reindex(models)
        table["ci_low"], table["ci_high"] = sci["low"].to_numpy(), sci["high"].to_numpy()
        table["rank_low"], table["rank_high"] = rci["low"].to_numpy(), rci["high"].to_numpy()
    else:
        table["ci_low"] = table["ci_high"] = np.nan
        table["rank_low"] = table["rank_high"] = pd.array([pd.NA] * len(models), dtype="Int64")
    table = table.sort_values(["rank", "model"], kind="stable")[list(TABLE_COLUMNS)].reset_index(drop=True)
    n_graphs = pc.n_graph_total
    info = {
        "ranker": ranker, "ranker_params": _plain(params),
        "ranker_details": _plain({k: v for k, v in res.details.items() if not isinstance(v, np.ndarray)}),
        "policy": votes.policy, "keep_k": None, "mu": None, "per_category": None, "pool": None, "threshold": None,
        "keep_note": None, "n_graphs_pool": n_graphs, "n_graphs": n_graphs, "n_models": pc.n,
        "dropped_models": dropped, "bootstrap": int(bootstrap or 0), "seed": int(seed) if bootstrap else None,
        "bootstrap_unit": boot.unit if boot is not None else None,
        "bootstrap_method": boot.method if boot is not None else None,
        "bootstrap_n_regularised": boot.n_regularised if boot is not None else None,
        "bootstrap_n_unconverged": boot.n_unconverged if boot is not None else None,
        "bootstrap_n_undefined": boot.n_undefined if boot is not None else None,
        "n_uncompared_pairs": int((~pc.compared & ~np.eye(pc.n, dtype=bool)).sum() // 2),
        "level": level if bootstrap else None,
        "unit": "votes", "n_votes": len(votes), "n_verdicts_valid": votes.n_verdicts,
        "fit_from": "pair counts aggregated from the verdicts (no graph stack)",
        **(extra_params or {}),
    }
    kept_frame = kept if kept is not None else pd.DataFrame()
    return Leaderboard(table, info, n_graphs, kept_frame, res, boot)


def compared_models_only(stack: GraphStack, after_keep_k: bool = False) -> tuple[GraphStack, list[str]]:
    """The stack over the models compared in at least one of its graphs, and the models dropped."""
    seen = stack.observed.any(axis=(0, 2))
    dropped = [m for m, s in zip(stack.models, seen, strict=True) if not s]
    if not dropped:
        return stack, []
    kept = [m for m, s in zip(stack.models, seen, strict=True) if s]
    if len(kept) < 2:
        where = "the graphs keep-K kept" if after_keep_k else "the selection"
        raise LensError(f"Only {len(kept)} model(s) ({', '.join(kept) or 'none'}) have a comparison in {where}; "
                        "a ranking needs at least two.")
    return stack.restrict_models(kept), dropped


def leaderboard(
    store,
    dataset: str,
    *,
    judge: str | list[str] | None = None,
    category: str | list[str] | None = None,
    ranker: str = "bt",
    keep_k: int | None = None,
    mu: float = 1.0,
    per_category: bool = False,
    pool: str = "perturbed",
    bootstrap: int = 0,
    seed: int = 0,
    policy: str = DEFAULT_POLICY,
    ranker_params: dict | None = None,
    level: float = 0.95,
    bootstrap_unit: str | None = None,
) -> Leaderboard:
    """The leaderboard of a stored dataset under the given filters, truncation and ranker.

    Count rankers (``RANKER_OBJECTS[r].counts``) without keep-K read vote counts from DuckDB and never
    build a graph stack; with keep-K the graphs pick the kept keys and only their verdicts are counted.
    Graph rankers rank the graph stack.
    """
    obj = ranker_object(ranker)
    if obj.counts and keep_k is None:
        return _count_leaderboard(store, dataset, judge, category, ranker, bootstrap, seed, policy,
                                  dict(ranker_params or {}), level, bootstrap_unit)
    verdicts = store.verdicts(dataset, judge=judge, category=category)
    if verdicts.empty or (verdicts["winner"] == "invalid").all():
        what = ", ".join(f"{k} {v!r}" for k, v in (("judge", judge), ("category", category)) if v is not None)
        raise LensError(f"Dataset {dataset!r} has no valid verdict{' for ' + what if what else ''}.")
    cells = graph_cells(verdicts, policy=policy)
    if keep_k is not None:  # refuse keep-K where no graph can hold a cycle before any (T, n, n) array
        from engine.graphs.buckets import buckets_from_cells
        from engine.graphs.truncation import keep_k_graphs

        keep_k_graphs(buckets_from_cells(cells), keep_k, mu=mu, per_category=per_category, pool=pool)
    stack = stack_from_cells(cells)
    extra = {
        "dataset": dataset,
        "dataset_version": store.dataset_version(dataset),
        "judge": judge,
        "judges": sorted(verdicts["judge"].dropna().unique().tolist()),
        "category": category,
        "n_invalid_verdicts": int((verdicts["winner"] == "invalid").sum()),
    }
    if obj.counts and keep_k is not None:
        if stack.T == 0:
            raise LensError("The selection holds no graph: no valid verdict matches the filters.")
        _, sel = truncate(stack, keep_k, mu, per_category, pool)
        kept_keys = sel.table
        rows = frame_vote_rows(verdicts, order_by=_elo_fetch_order(ranker, ranker_params, verdicts.columns))
        kept_hash = key_hashes(kept_keys)
        vts = _votes(rows.take(np.isin(rows.graph, kept_hash)), policy, ranker, ranker_params)
        threshold = sel.threshold if not isinstance(sel.threshold, pd.Series) else sel.threshold.to_dict()
        extra.update({"keep_k": keep_k, "mu": mu, "per_category": per_category, "pool": pool,
                      "threshold": _plain(threshold), "keep_note": sel.note or None, "n_graphs_pool": sel.n_pool})
        board = leaderboard_from_votes(vts, ranker=ranker, bootstrap=bootstrap, seed=seed, ranker_params=ranker_params,
                                       level=level, extra_params=extra, bootstrap_unit=bootstrap_unit, kept=kept_keys)
        if board.params.get("dropped_models"):
            board.params["dropped_after_keep_k"] = True
        return board
    return leaderboard_from_stack(
        stack, ranker=ranker, keep_k=keep_k, mu=mu, per_category=per_category, pool=pool, bootstrap=bootstrap, seed=seed,
        ranker_params=ranker_params, level=level, extra_params=extra, bootstrap_unit=bootstrap_unit,
    )


def _elo_fetch_order(ranker: str, params: dict | None, columns) -> str | None:
    """The row order Elo needs: ``order`` when given, else time when the source has timestamps, else input."""
    if ranker != "elo":
        return None
    order = (params or {}).get("order")
    if order is not None and order not in ELO_ORDERS:
        raise LensError(f"Elo order={order!r} is not one of {', '.join(ELO_ORDERS)}.")
    if order is None:
        order = "time" if "tstamp" in set(columns) else "input"
    return order


ORDER_WORDS = {
    "time": "by timestamp (source order among equal or missing times)",
    "input": "source order (file, line)",
    "prompt": "graph key, then model pair (no time order used)",
}


def _votes(rows, policy: str, ranker: str, params: dict | None) -> Votes:
    """Votes of the rows; for Elo, in the order asked for (``prompt``: graph key then pair)."""
    from dataclasses import replace

    v = make_votes(rows, policy)
    if ranker != "elo":
        return v
    order = (params or {}).get("order")
    has_time = rows.when is not None and bool(np.isfinite(rows.when).any())
    if order == "time" and not has_time:
        return replace(v, order_used=ORDER_WORDS["input"] + "; order=time asked, but no verdict has a timestamp")
    if order is None:
        order = "time" if has_time else "input"
    return replace(v, order_used=ORDER_WORDS[order])


def _count_leaderboard(store, dataset, judge, category, ranker, bootstrap, seed, policy, params, level, unit):
    """The count path of ``leaderboard``: DuckDB → VoteRows → votes → pair counts → fit."""
    from engine.graphs.stack import COMBINE_POLICIES
    from engine.ranking.vote_query import columns_of, store_relation, store_vote_rows
    from engine.store.datasets import relation_judges, relation_timestamp_count

    if policy not in COMBINE_POLICIES:
        raise ValueError(f"Unknown combine policy {policy!r}; choose one of {', '.join(COMBINE_POLICIES)}.")
    params = ranker_object(ranker).check(params)
    order, order_words = None, None
    if ranker == "elo":
        order = params.get("order")
        if order in (None, "time"):
            cols = columns_of(store.cursor(), store_relation(store, dataset))
            has_time = "tstamp" in cols and relation_timestamp_count(store, store_relation(store, dataset)) > 0
            if order == "time" and not has_time:
                order_words = ORDER_WORDS["input"] + "; order=time asked, but no verdict has a timestamp"
            order = "time" if has_time else "input"
        order_words = order_words or ORDER_WORDS[order]
    fetch = {"time": "time", "input": "input", "prompt": "prompt"}.get(order) if order else None
    rows = store_vote_rows(store, dataset, judge=judge, category=category, order_by=fetch)
    if len(rows) == 0:
        what = ", ".join(f"{k} {v!r}" for k, v in (("judge", judge), ("category", category)) if v is not None)
        raise LensError(f"Dataset {dataset!r} has no valid verdict{' for ' + what if what else ''}.")
    from dataclasses import replace

    v = make_votes(rows, policy)
    if ranker == "elo":
        v = replace(v, order_used=order_words)
    judges = relation_judges(store, store_relation(store, dataset))
    if judge is not None:
        judges = [j for j in judges if j in ([judge] if isinstance(judge, str) else list(judge))]
    extra = {"dataset": dataset, "dataset_version": store.dataset_version(dataset), "judge": judge,
             "judges": judges, "category": category, "n_invalid_verdicts": rows.n_invalid}
    return leaderboard_from_votes(v, ranker=ranker, bootstrap=bootstrap, seed=seed, ranker_params=params,
                                  level=level, extra_params=extra, bootstrap_unit=unit)


def compare_to_reference(board: Leaderboard, reference: pd.Series) -> dict[str, Any]:
    """The four ranking distances between a leaderboard and reference ratings, on shared models."""
    ref_ranks = ranks_from_scores(reference.astype(np.float64))
    out: dict[str, Any] = all_distances(board.ranks, ref_ranks)
    shared = [m for m in board.table["model"] if m in set(reference.index)]
    out["models"] = " ".join(shared)
    return out
