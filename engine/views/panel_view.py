"""The Leaderboard page's board of the judge panel: the same store path as ``leaderboard --ranker panel``
(``engine.ranking.panel_board`` through ``engine.ranking.leaderboard``), so the page shows the CLI's scores,
Wald intervals from the fit's observed information, and each judge's reliability and side bias.

Why not the graph path: a graph stack has combined the two presentation orders, so fitted there the panel
could not see a side bias and its intervals came from a bootstrap of refits; the page then showed other
numbers than the command. keep-K is refused here exactly as the CLI refuses it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

from engine.views.appstate import AppBoard, with_reference

if TYPE_CHECKING:
    from engine.store.connection import Store

JUDGE_COLUMNS = ("judge", "verdicts", "reliability", "reliability_low", "reliability_high",
                 "side_bias", "side_bias_low", "side_bias_high")
"""The per-judge table the page shows under the panel's board (``engine.rankers.panel`` judge_table)."""


def panel_app_board(store: Store, dataset: str, *, judge=None, category=None, keep_k: int | None = None,
                    reference: pd.Series | None = None, reference_note: str = "") -> AppBoard:
    """The panel's leaderboard of the selection as the app shows it (module docstring), the rank on the
    reference beside it where one is mapped."""
    from engine.ranking.leaderboard import compare_to_reference, leaderboard

    board = leaderboard(store, dataset, ranker="panel", keep_k=keep_k, judge=judge, category=category)
    dist = {} if reference is None else compare_to_reference(board, reference)
    return AppBoard(with_reference(board.table, reference), board.params, dist, reference_note)


def panel_judges(board: AppBoard) -> pd.DataFrame:
    """Each judge's verdicts, reliability and side bias (0.5 = none; above 0.5 favours the answer shown
    first) with 95 % intervals, from the board's fit details; a judge whose side is unknown shows NaN."""
    rows = board.params["ranker_details"]["judges"]
    return pd.DataFrame(rows, columns=list(JUDGE_COLUMNS)).astype(
        {c: "float64" for c in JUDGE_COLUMNS[2:]})


def is_panel_board(board: AppBoard) -> bool:
    """Whether ``board`` is the panel's store-path board (intervals from the fit, not a bootstrap)."""
    from engine.rankers.objects import ranker_object
    from engine.ranking.panel_board import CI_METHOD

    name = board.params.get("ranker")
    fitted = board.params.get("ci_method") == CI_METHOD
    return bool(name) and ranker_object(str(name)).judged_verdicts and fitted
