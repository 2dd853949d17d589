"""The leaderboard of a pair-count dataset (migration 074): the stored counts feed the count path
(``engine.ranking.count_board.leaderboard_from_counts``) as they are, with no verdict read.

What applies: every count ranker that reads only the pair counts (Bradley-Terry, Davidson, rank
centrality, win rate, Copeland, score-of-win, majority), the bootstrap as one multinomial over all the
battles (``engine.ranking.count_bootstrap.CountedBattles``) and the sandwich intervals of a logistic
ranker. What does not, each refused in one sentence: judge or category filters, keep-K and the graph
rankers (no prompts, so no per-prompt graph), Elo (no battle order), style control (no answers).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from engine.errors import LensError
from engine.rankers.votes import PairCounts
from engine.ranking.board import BoardSpec, Leaderboard
from engine.ranking.count_board import leaderboard_from_counts
from engine.ranking.count_bootstrap import CountedBattles
from engine.store.pair_counts import no_prompts, pair_count_rows

if TYPE_CHECKING:
    from engine.store.connection import Store


def stored_pair_counts(store: Store, dataset: str) -> PairCounts:
    """The dataset's counts as ``PairCounts`` over its models in name order: W from the wins, T from the
    ties plus the both-bad ties; per model its battles (no graph, no prompt: those counts are 0)."""
    rows = pair_count_rows(store, dataset)
    models = tuple(sorted(set(rows["model_a"]) | set(rows["model_b"])))
    code = {m: i for i, m in enumerate(models)}
    a = rows["model_a"].map(code).to_numpy(np.int64)
    b = rows["model_b"].map(code).to_numpy(np.int64)
    lo_first = a < b  # names sort as codes do, so always True; kept general
    lo, hi = np.where(lo_first, a, b), np.where(lo_first, b, a)
    wa, wb = rows["wins_a"].to_numpy(np.float64), rows["wins_b"].to_numpy(np.float64)
    wins_lo, wins_hi = np.where(lo_first, wa, wb), np.where(lo_first, wb, wa)
    ties = rows["ties"].to_numpy(np.float64) + rows["both_bad"].to_numpy(np.float64)
    order = np.argsort(lo * len(models) + hi, kind="stable")
    lo, hi, wins_lo, wins_hi, ties = lo[order], hi[order], wins_lo[order], wins_hi[order], ties[order]
    games = wins_lo + wins_hi + ties
    n = len(models)
    per_model = (np.bincount(lo, games, n) + np.bincount(hi, games, n)).astype(np.int64)
    zero = np.zeros(n, dtype=np.int64)
    return PairCounts(models, lo, hi, wins_lo, wins_hi, ties, per_model, zero, zero.copy(), 0)


def check_spec(spec: BoardSpec, dataset: str, judge=None, category=None) -> None:
    """Refuse, in one sentence, a choice a pair-count dataset cannot serve (module docstring)."""
    obj = spec.obj
    if judge is not None or category is not None:
        what = "judge" if judge is not None else "category"
        raise LensError(f"Dataset {dataset!r} holds pair counts with no {what}; drop the {what} filter.")
    if spec.keep_k is not None:
        raise LensError(no_prompts(dataset, "keep-K truncation"))
    if not obj.counts:
        raise LensError(no_prompts(dataset, f"the {spec.ranker} ranker"))
    if obj.sequential:
        raise LensError(f"Dataset {dataset!r} holds pair counts with no battle order; the {spec.ranker} "
                        "ranker reads battles in order (choose bt, davidson or another count ranker).")
    if spec.style_control:
        raise LensError(f"Dataset {dataset!r} holds pair counts with no answer texts; style control has "
                        "nothing to count.")
    if spec.bootstrap and spec.bootstrap_unit not in (None, "vote"):
        raise LensError(f"Dataset {dataset!r} holds pair counts with no {spec.bootstrap_unit}s; the "
                        "bootstrap resamples its battles (--bootstrap-unit vote).")


def pair_count_leaderboard(store: Store, dataset: str, spec: BoardSpec, *, judge=None,
                           category=None) -> Leaderboard:
    """Rank a pair-count dataset on the count path (module docstring)."""
    check_spec(spec, dataset, judge, category)
    if spec.ci is not None:
        from engine.ranking.style_board import check_interval_choice

        check_interval_choice(spec)
    pc = stored_pair_counts(store, dataset)
    n_battles = int(pc.votes.sum() // 2)
    battles = CountedBattles(pc) if spec.bootstrap else None
    if spec.bootstrap:
        from dataclasses import replace

        spec = replace(spec, bootstrap_unit="vote")
    extra = {"dataset": dataset, "dataset_version": store.dataset_version(dataset), "judge": None,
             "category": None, "judges": [], "n_invalid_verdicts": 0,
             "fit_from": "pair counts as imported (no prompts, no single verdicts)", "unit": "battles",
             "bootstrap_resamples": ("one multinomial over all battles (each battle drawn with replacement)"
                                     if spec.bootstrap else None)}
    return leaderboard_from_counts(pc, battles, spec, n_votes=n_battles, n_verdicts=n_battles,
                                   policy=spec.policy, extra_params=extra)


def selection_pair_counts(store: Store, dataset: str, *, judge=None, category=None,
                          policy: str | None = None) -> PairCounts:
    """The pair counts of a selection whatever the dataset holds: a pair-count dataset's stored counts,
    else the votes of its valid verdicts under the filters (the count path's own counts: the lean SQL
    fetch where every verdict is its own vote, else votes combined by ``policy``)."""
    from engine.graphs.stack import DEFAULT_POLICY
    from engine.rankers.votes import votes
    from engine.ranking.count_query import lean_pair_counts
    from engine.ranking.vote_query import store_relation, store_vote_rows
    from engine.store.pair_counts import is_pair_count_dataset

    if is_pair_count_dataset(store, dataset):
        check_spec(BoardSpec(), dataset, judge, category)
        return stored_pair_counts(store, dataset)
    sc = lean_pair_counts(store.cursor(), store_relation(store, dataset), judge=judge, category=category)
    if sc is not None:
        return sc.counts
    rows = store_vote_rows(store, dataset, judge=judge, category=category)
    return votes(rows, policy or DEFAULT_POLICY).pair_counts()
