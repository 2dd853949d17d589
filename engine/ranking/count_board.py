"""The leaderboard from vote counts, never a graph stack: DuckDB → votes (or, where every verdict is its
own vote, pair counts straight away) → the ranker's count fit, with the count bootstrap's intervals.
Elo reads its votes in time, input or prompt order."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np

from engine.errors import LensError
from engine.frames import pd
from engine.rankers import fit_counts
from engine.rankers.votes import PairCounts, Votes
from engine.rankers.votes import votes as make_votes
from engine.ranking.board import (
    BoardRows,
    BoardSpec,
    Leaderboard,
    components_of,
    interval_columns,
    not_estimable_params,
    plain_values,
)

if TYPE_CHECKING:  # the bootstrap's modules load where a bootstrap runs, not with every board
    from engine.ranking.count_bootstrap import CountedBattles
    from engine.store.connection import Store
    from engine.store.sql import Relation


def leaderboard_from_votes(
    votes: Votes,
    spec: BoardSpec | None = None,
    *,
    extra_params: dict | None = None,
    kept: pd.DataFrame | None = None,
    **choices,
) -> Leaderboard:
    """Rank from votes and their pair counts (no graph stack): the count rankers' path.

    ``votes`` come from ``engine.ranking.vote_query`` (DuckDB) and ``engine.rankers.votes.votes``; the table's
    counts are votes (``UNIT_NOTES``). Models without a vote are left off the board. ``spec`` says how to
    rank (``choices``: keyword shorthand for its fields, e.g. ``ranker="elo"``).
    """
    return leaderboard_from_counts(
        votes.pair_counts(),
        votes,
        BoardSpec.of(spec, choices),
        n_votes=len(votes),
        n_verdicts=votes.n_verdicts,
        policy=votes.policy,
        extra_params=extra_params,
        kept=kept,
    )


def leaderboard_from_counts(
    pc: PairCounts,
    votes: Votes | CountedBattles | None,
    spec: BoardSpec,
    *,
    n_votes: int,
    n_verdicts: int,
    policy: str,
    extra_params: dict | None = None,
    kept: pd.DataFrame | None = None,
) -> Leaderboard:
    """Rank from vote pair counts (``votes``: the votes themselves, needed by Elo and the bootstrap, or the
    battles of a pair-count dataset, ``CountedBattles``, for the bootstrap); ``policy`` is how the votes'
    presentation orders were combined."""
    ranker, bootstrap, seed, level = spec.ranker, spec.bootstrap, spec.seed, spec.level
    obj = spec.obj
    if spec.ci is not None or spec.style_control:
        from engine.ranking.style_board import check_interval_choice

        check_interval_choice(spec)
    params = obj.check(spec.ranker_params)
    if int(bootstrap or 0) < 0:
        raise LensError(
            f"The number of bootstrap resamples must be 0 (no intervals) or more; got {bootstrap}."
        )
    if n_votes == 0:
        raise LensError("The selection holds no graph: no valid verdict matches the filters.")
    if (votes is None) and (bootstrap or obj.sequential):
        raise ValueError("The bootstrap and Elo need the votes, not only their pair counts.")
    seen = pc.votes > 0
    fit_votes = votes if isinstance(votes, Votes) else None  # counted battles: the counts are the fit's input
    dropped = [m for m, k in zip(pc.models, seen, strict=True) if not k]
    if dropped:
        if seen.sum() < 2:
            raise LensError(
                f"Only {int(seen.sum())} model(s) have a comparison in the selection; a ranking needs "
                "at least two."
            )
        pc = pc.restrict(seen)
        if isinstance(votes, Votes):  # Elo reads the votes' model codes: renumber them as the counts were
            fit_votes = votes.restrict_models(seen)  # (the bootstrap keeps all codes)
    res = fit_counts(ranker, pc, fit_votes, **params)
    models = list(pc.models)
    wins, losses, ties = pc.model_totals()
    games = wins + losses + ties
    columns = {
        "model": models,
        "score": res.scores_of(models),
        "wins": wins.astype(np.int64), "losses": losses.astype(np.int64), "ties": ties.astype(np.int64),
        "win_rate": np.divide(wins + 0.5 * ties, games, out=np.full(len(models), np.nan), where=games > 0),
        "n_graphs_model": pc.n_graphs, "votes": pc.votes, "n_prompts": pc.n_prompts,
        "rank": res.ranks_of(models),
    }
    boot = None
    if bootstrap and int(bootstrap) > 0:
        assert votes is not None  # refused on entry: the bootstrap resamples the votes themselves
        from engine.ranking.count_bootstrap import bootstrap_counts

        boot = bootstrap_counts(
            votes,
            ranker,
            int(bootstrap),
            int(seed),
            level=level,
            unit=spec.bootstrap_unit,
            models=tuple(models),
            ranker_params=params,
        )
    sandwich_why, covariance = None, None
    if spec.ci_method == "sandwich":  # intervals from the fit itself (engine.ranking.style_board)
        from engine.ranking.style_board import sandwich_columns

        cols, sandwich_why, covariance = sandwich_columns(pc, res, obj, params, level)
        columns.update(cols)
    else:
        columns.update(interval_columns(boot, list(models)))
    columns["component"], components = components_of((pc.lo, pc.hi), list(models))
    rows = BoardRows.ranked(columns)
    n_graphs = pc.n_graph_total
    info = {
        "ranker": ranker,
        "ranker_params": plain_values(params),
        "ranker_details": plain_values(
            {k: v for k, v in res.details.items() if not isinstance(v, np.ndarray)}
        ),
        "policy": policy,
        "keep_k": None,
        "mu": None,
        "per_category": None,
        "pool": None,
        "threshold": None,
        "keep_note": None,
        "n_graphs_pool": n_graphs,
        "n_graphs": n_graphs,
        "n_models": pc.n,
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
        "n_uncompared_pairs": pc.n * (pc.n - 1) // 2 - pc.n_pairs,
        "level": level if (bootstrap or spec.ci_method == "sandwich") else None,
        "ci_method": "sandwich" if spec.ci_method == "sandwich" else ("bootstrap" if bootstrap else None),
        "sandwich_not_estimable": sandwich_why,
        "unit": "votes",
        "n_votes": n_votes,
        "n_verdicts_valid": n_verdicts,
        "fit_from": "pair counts aggregated from the verdicts (no graph stack)",
        **(extra_params or {}),
    }
    return Leaderboard(rows, info, n_graphs, kept, res, boot, covariance)


def vote_fetch_order(spec: BoardSpec, columns) -> str | None:
    """The row order the ranker reads its votes in (``Ranker.vote_order``; None: any order), judged from
    whether the source has a timestamp column."""
    got = spec.obj.vote_order(spec.ranker_params, lambda: "tstamp" in set(columns))
    return None if got is None else got[0]


def ordered_votes(rows, spec: BoardSpec) -> Votes:
    """Votes of the rows combined by ``spec.policy``, with the order words of a ranker that reads them in
    order (``Ranker.vote_order``, judged from the rows' timestamps)."""
    v = make_votes(rows, spec.policy)
    got = spec.obj.vote_order(spec.ranker_params,
                              lambda: rows.when is not None and bool(np.isfinite(rows.when).any()))
    return v if got is None else replace(v, order_used=got[1])


def store_has_time(store: Store, dataset: str) -> bool:
    """Whether a verdict of the stored dataset ``dataset`` (any judge, any category) has a timestamp: what
    an order-dependent ranker's default order is judged from (``Ranker.vote_order``'s ``has_time``)."""
    from engine.ranking.vote_query import columns_of, store_relation
    from engine.store.datasets import relation_timestamp_count

    cols = columns_of(store.cursor(), store_relation(store, dataset))
    return "tstamp" in cols and relation_timestamp_count(store, store_relation(store, dataset)) > 0


def store_vote_order(store: Store, dataset: str, obj, ranker_params: dict) -> tuple[str, str] | None:
    """The order a ranker reads a stored dataset's votes in and its words for the board
    (``Ranker.vote_order``; None: any order). One decision for the command line (``count_leaderboard``)
    and the app (``app_pages._lens.votes_for``, with ``store_has_time`` cached), so an order-dependent
    ranker (Elo) reads the same votes in the same order in both; the timestamps are counted only when the
    ranker asks (never for an order-free one)."""
    return obj.vote_order(ranker_params, lambda: store_has_time(store, dataset))


def count_leaderboard(store: Store, dataset, judge, category, spec: BoardSpec) -> Leaderboard:
    """The count path of ``leaderboard``: DuckDB → VoteRows → votes → pair counts → fit."""
    from engine.graphs.stack import check_policy
    from engine.ranking.count_query import lean_pair_counts
    from engine.ranking.vote_query import store_relation, store_vote_rows

    check_policy(spec.policy)
    obj = spec.obj
    spec = replace(spec, ranker_params=obj.check(spec.ranker_params))
    order = store_vote_order(store, dataset, obj, spec.ranker_params)
    extra = {"dataset": dataset, "dataset_version": store.dataset_version(dataset), "judge": judge,
             "category": category}
    # the dataset's relation is looked up once (a pair-count check and the attached files: two queries) and
    # used by every read below, first where the first read needs it
    relation = None
    # the lean fetch when every verdict is its own vote: counts, and for a bootstrap the votes themselves
    if order is None:
        relation = store_relation(store, dataset)
        sc = lean_pair_counts(store.cursor(), relation, judge=judge, category=category,
                              votes_policy=spec.policy if spec.bootstrap else None)
        if sc is not None:
            if sc.n_votes == 0:
                no_valid_verdict(dataset, judge, category)
            extra.update(judges=filtered_judges(store, dataset, judge, relation),
                         n_invalid_verdicts=sc.n_invalid)
            return leaderboard_from_counts(
                sc.counts,
                sc.votes,
                spec,
                n_votes=sc.n_votes,
                n_verdicts=sc.n_verdicts,
                policy=spec.policy,
                extra_params=extra,
            )
    relation = store_relation(store, dataset) if relation is None else relation
    rows = store_vote_rows(store, dataset, judge=judge, category=category,
                           order_by=None if order is None else order[0], relation=relation)
    if len(rows) == 0:
        no_valid_verdict(dataset, judge, category)
    v = make_votes(rows, spec.policy)
    if order is not None:
        v = replace(v, order_used=order[1])
    extra.update(judges=filtered_judges(store, dataset, judge, relation), n_invalid_verdicts=rows.n_invalid)
    return leaderboard_from_votes(v, spec, extra_params=extra)


def no_valid_verdict(dataset, judge, category):
    """Refuse, in one sentence naming the filters, a selection without a valid verdict."""
    what = ", ".join(f"{k} {v!r}" for k, v in (("judge", judge), ("category", category)) if v is not None)
    raise LensError(f"Dataset {dataset!r} has no valid verdict{' for ' + what if what else ''}.")


def filtered_judges(store: Store, dataset: str, judge, relation: Relation | None = None) -> list[str]:
    """The judges of a dataset's verdicts, within the judge filter when one is given; ``relation``: the
    dataset's ``store_relation`` when the caller has it already."""
    from engine.ranking.vote_query import store_relation
    from engine.store.datasets import relation_judges

    judges = relation_judges(store, store_relation(store, dataset) if relation is None else relation)
    if judge is not None:
        judges = [j for j in judges if j in ([judge] if isinstance(judge, str) else list(judge))]
    return judges
