"""What the app shows for a pair-count dataset (issue 25, point 7): its leaderboard from the stored counts
(``engine.ranking.pair_count_board``, no graph stack) with the reference columns an uploaded dataset gets,
and the majority tournament of any selection for the Cycles page."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

from engine.views.appstate import AppBoard, with_reference

if TYPE_CHECKING:
    from engine.store.connection import Store


def pair_count_app_board(store: Store, dataset: str, *, ranker: str, bootstrap: int, seed: int,
                         reference: pd.Series | None, reference_note: str) -> AppBoard:
    """The Leaderboard page's board of a pair-count dataset: the count path's table, the rank on the
    reference and the distance to it where a reference is mapped."""
    from engine.ranking.leaderboard import compare_to_reference, leaderboard

    board = leaderboard(store, dataset, ranker=ranker, bootstrap=bootstrap, seed=seed)
    dist = {} if reference is None else compare_to_reference(board, reference)
    table = board.table.assign(  # no prompt and no graph in pair counts: shown empty, not 0
        n_prompts=pd.array([pd.NA] * len(board.table), dtype="Int64"),
        n_graphs_model=pd.array([pd.NA] * len(board.table), dtype="Int64"))
    return AppBoard(with_reference(table, reference), board.params, dist, reference_note)


def majority_view(store: Store, dataset: str, *, judge=None, category=None, policy: str | None = None):
    """(summary sentences, per-model table, best supported 3-cycles) of the selection's majority
    tournament (``engine.diagnostics.majority_tournament``), verdicts or pair counts alike."""
    from engine.diagnostics.majority_tournament import majority_tournament, summary_sentences
    from engine.ranking.pair_count_board import selection_pair_counts

    mt = majority_tournament(selection_pair_counts(store, dataset, judge=judge, category=category,
                                                   policy=policy))
    return summary_sentences(mt.summary()), mt.per_model(), mt.cycles()
