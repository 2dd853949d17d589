"""The leaderboard service: store → graphs → (keep-K by S_mu) → ranker → table with bootstrap CIs.

One call describes exactly what produced a table (``params``): dataset and its version, judge and
category filters, combine policy, truncation (K, mu, per category, threshold), ranker and its
parameters, bootstrap B and seed. Truncation uses ``engine.graphs.cycles`` and ``engine.graphs.truncation``
(paper 000, Section 3.1); W and T follow eq. 3-4.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from engine.errors import LensError
from engine.frames import pd
from engine.graphs.stack import GraphStack, graph_cells, stack_from_cells
from engine.rankers import rank
from engine.rankers.base import ranks_from_scores
from engine.ranking.board import (
    TABLE_COLUMNS,
    BoardSpec,
    Leaderboard,
    components_of,
    frame_columns,
    interval_columns,
    not_estimable_params,
    plain_values,
)
from engine.ranking.count_board import (
    count_leaderboard,
    leaderboard_from_votes,
    ordered_votes,
    vote_fetch_order,
)
from engine.ranking.distances import all_distances
from engine.ranking.vote_query import frame_vote_rows

if TYPE_CHECKING:
    from engine.store.connection import Store



def truncate(
    stack: GraphStack, keep_k: int, mu: float = 1.0, per_category: bool = False, pool: str = "perturbed"
):
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
    spec: BoardSpec | None = None,
    *,
    extra_params: dict | None = None,
    **choices,
) -> Leaderboard:
    """Rank a stack (optionally truncated to keep-K) and tabulate scores, CIs and win/loss/tie counts.

    ``spec`` says how (``choices``: keyword shorthand for its fields, e.g. ``ranker="borda", keep_k=10``).
    Only models compared in the ranked graphs are ranked: after keep-K (or a filter) a model without
    any comparison would otherwise get a score from regularisation alone (BT's virtual ties put four
    unseen guanacos 3rd with every judge pooled and K = 10). Dropped models are listed in
    ``params["dropped_models"]`` and in a note. ``spec.bootstrap_unit``: graph or prompt (None: the
    ranker's own unit, ``engine.ranking.bootstrap.default_unit``).
    """
    spec = BoardSpec.of(spec, choices)
    if spec.style_control or spec.ci == "sandwich":
        raise LensError("Style control and sandwich intervals are fitted from votes, not from a graph stack "
                        "(use leaderboard() or leaderboard_from_votes).")
    ranker, keep_k, mu, per_category, pool = spec.ranker, spec.keep_k, spec.mu, spec.per_category, spec.pool
    bootstrap, seed, level = spec.bootstrap, spec.seed, spec.level
    params = dict(spec.ranker_params)
    n_pool = stack.T
    threshold, keep_note, kept_table = None, None, None
    if int(bootstrap or 0) < 0:
        raise LensError(
            f"The number of bootstrap resamples must be 0 (no intervals) or more; got {bootstrap}."
        )
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
            "win_rate": np.divide(
                wins + 0.5 * ties, games, out=np.full(len(models), np.nan), where=games > 0
            ),
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
        from engine.ranking.bootstrap import bootstrap as run_bootstrap

        boot = run_bootstrap(stack, ranker, int(bootstrap), int(seed), level=level, unit=spec.bootstrap_unit,
                             **params)
    table = table.assign(**frame_columns(interval_columns(boot, models), len(models)))
    table["component"], components = components_of(stack.observed.any(axis=0), models)
    table = table.sort_values(["rank", "model"], kind="stable")
    table = table[list(TABLE_COLUMNS)].reset_index(drop=True)
    info = {
        "ranker": ranker,
        "ranker_params": plain_values(params),
        "ranker_details": plain_values(
            {k: v for k, v in res.details.items() if not isinstance(v, np.ndarray)}
        ),
        "policy": stack.policy,
        "keep_k": keep_k,
        "mu": mu if keep_k is not None else None,
        "per_category": per_category if keep_k is not None else None,
        "pool": pool if keep_k is not None else None,
        "threshold": plain_values(threshold),
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
        "bootstrap_not_estimable": not_estimable_params(boot),
        "components": components,
        "n_uncompared_pairs": int(((~stack.observed.any(axis=0)) & ~np.eye(stack.n, dtype=bool)).sum() // 2),
        "level": level if bootstrap else None,
        **(extra_params or {}),
    }
    info.setdefault("unit", "graphs")
    kept = kept_table if kept_table is not None else stack.keys.copy()
    return Leaderboard(table, info, stack.T, kept, res, boot)


def _prompts_per_model(stack: GraphStack) -> np.ndarray:
    """Per model: the distinct prompt ids of the graphs it took part in."""
    present = np.asarray(stack.observed.any(axis=2))
    if stack.T == 0:
        return np.zeros(stack.n, dtype=np.int64)
    from engine.graphs.distinct import distinct_sorted

    q, prompts = pd.factorize(stack.keys["prompt_id"].astype(str))
    graph, model = np.nonzero(present)
    # one sorted distinct over every (model, prompt) cell, not one np.unique per model (numpy's
    # hash-table unique over a million graphs, once per model)
    cells = distinct_sorted(model.astype(np.int64) * max(len(prompts), 1) + q[graph])
    return np.bincount(cells // max(len(prompts), 1), minlength=stack.n).astype(np.int64)


def compared_models_only(stack: GraphStack, after_keep_k: bool = False) -> tuple[GraphStack, list[str]]:
    """The stack over the models compared in at least one of its graphs, and the models dropped."""
    seen = np.asarray(stack.observed.any(axis=(0, 2)))
    dropped = [m for m, s in zip(stack.models, seen, strict=True) if not s]
    if not dropped:
        return stack, []
    kept = [m for m, s in zip(stack.models, seen, strict=True) if s]
    if len(kept) < 2:
        where = "the graphs keep-K kept" if after_keep_k else "the selection"
        raise LensError(
            f"Only {len(kept)} model(s) ({', '.join(kept) or 'none'}) have a comparison in {where}; "
            "a ranking needs at least two."
        )
    return stack.restrict_models(kept), dropped


def leaderboard(
    store: Store,
    dataset: str,
    spec: BoardSpec | None = None,
    *,
    judge: str | list[str] | None = None,
    category: str | list[str] | None = None,
    **choices,
) -> Leaderboard:
    """The leaderboard of a stored dataset under the given filters, ranked as ``spec`` says (``choices``:
    keyword shorthand for its fields, e.g. ``ranker="elo", keep_k=15``).

    Count rankers (``RANKER_OBJECTS[r].counts``) without keep-K read vote counts from DuckDB and never
    build a graph stack; with keep-K the graphs pick the kept keys and only their verdicts are counted.
    Graph rankers rank the graph stack, after ``Ranker.check_size`` has refused a selection beyond the
    dense stack's or the ranker's own limit (before anything of size graphs x models^2 exists).
    """
    spec = BoardSpec.of(spec, choices)
    obj, keep_k = spec.obj, spec.keep_k
    if obj.judged_verdicts:  # issue 28, the panel: verdicts with their judges and orders
        from engine.ranking.panel_board import panel_leaderboard

        return panel_leaderboard(store, dataset, spec, judge=judge, category=category)
    from engine.store.pair_counts import is_pair_count_dataset

    if store.has_dataset(dataset) and is_pair_count_dataset(store, dataset):  # counts, no verdict (issue 25)
        from engine.ranking.pair_count_board import pair_count_leaderboard

        return pair_count_leaderboard(store, dataset, spec, judge=judge, category=category)
    if spec.style_control or spec.ci is not None:
        from engine.ranking.style_board import check_interval_choice, style_leaderboard

        check_interval_choice(spec)
        if spec.style_control:
            return style_leaderboard(store, dataset, judge, category, spec)
    if obj.counts and keep_k is None:
        return count_leaderboard(store, dataset, judge, category, spec)
    if obj.counts:  # keep-K, then the kept graphs' votes: the selection read in pieces, never held whole
        return _kept_count_board(store, dataset, spec, judge, category)
    verdicts = store.verdicts(dataset, judge=judge, category=category)
    if verdicts.empty or (verdicts["winner"] == "invalid").all():
        what = ", ".join(f"{k} {v!r}" for k, v in (("judge", judge), ("category", category)) if v is not None)
        raise LensError(f"Dataset {dataset!r} has no valid verdict{' for ' + what if what else ''}.")
    cells = graph_cells(verdicts, policy=spec.policy)
    if keep_k is not None:  # refuse keep-K where no graph can hold a cycle before any (T, n, n) array
        from engine.graphs.buckets import buckets_from_cells
        from engine.graphs.truncation import keep_k_graphs

        keep_k_graphs(buckets_from_cells(cells), keep_k, mu=spec.mu, per_category=spec.per_category,
                      pool=spec.pool)
    extra = {
        "dataset": dataset,
        "dataset_version": store.dataset_version(dataset),
        "judge": judge,
        "judges": sorted(verdicts["judge"].dropna().unique().tolist()),
        "category": category,
        "n_invalid_verdicts": int((verdicts["winner"] == "invalid").sum()),
    }
    # refused in one sentence before any (T, n, n) array: the dense stack's and the ranker's own limits
    obj.check_size(len(cells.models), cells.keys, obj.check(spec.ranker_params))
    return leaderboard_from_stack(stack_from_cells(cells), spec, extra_params=extra)


def _kept_count_board(store: Store, dataset: str, spec: BoardSpec, judge, category) -> Leaderboard:
    """A count ranker's keep-K board: keep-K over the selection read in pieces
    (``engine.ranking.keep_k_pieces``), then the kept graphs' votes, coded over the whole selection's models
    (a model none of the kept graphs compared is dropped from the board and named, as before)."""
    from engine.ranking.keep_k_pieces import keep_k_in_pieces

    got = keep_k_in_pieces(store, dataset, spec, judge=judge, category=category)
    sel, verdicts = got.kept, got.verdicts
    rows = frame_vote_rows(verdicts, order_by=vote_fetch_order(spec, verdicts.columns))
    vts = ordered_votes(rows.over_models(got.models, got.n_invalid), spec)
    threshold = sel.threshold if not isinstance(sel.threshold, pd.Series) else sel.threshold.to_dict()
    extra = {
        "dataset": dataset,
        "dataset_version": store.dataset_version(dataset),
        "judge": judge,
        "judges": got.judges,
        "category": category,
        "n_invalid_verdicts": got.n_invalid,
        "keep_k": spec.keep_k,
        "mu": spec.mu,
        "per_category": spec.per_category,
        "pool": spec.pool,
        "threshold": plain_values(threshold),
        "keep_note": sel.note or None,
        "n_graphs_pool": sel.n_pool,
    }
    board = leaderboard_from_votes(vts, spec, extra_params=extra, kept=sel.table)
    if board.params.get("dropped_models"):
        board.params["dropped_after_keep_k"] = True
    return board


def compare_to_reference(board: Leaderboard, reference: pd.Series) -> dict[str, Any]:
    """The four ranking distances between a leaderboard and reference ratings, on shared models."""
    ref_ranks = ranks_from_scores(reference.astype(np.float64))
    out: dict[str, Any] = all_distances(board.ranks, ref_ranks)
    shared = [m for m in board.table["model"] if m in set(reference.index)]
    out["models"] = " ".join(shared)
    return out
