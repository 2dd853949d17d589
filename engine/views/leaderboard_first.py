"""The Leaderboard of a whole selection (no keep-K) without building every graph: the same board as
``engine.views.appstate.app_leaderboard`` on the selection's full SliderContext, for count rankers.

The board of a count ranker reads the selection's votes (``engine.ranking.count_board``). What it took from
the graphs is the cycle columns (bad triads and cycle share per model), and only graphs of three or more
models can hold a triad: a battle log of a million one-pair prompts has none, so building a million graphs
(most of the 33 s a first open cost at 1M battles) is not needed. ``cycle_context`` builds the graphs of at
least three models only (``Store.verdicts(graphs_of_at_least=3)``); each graph's triads depend on its own
verdicts alone, so the per-model sums over those graphs equal the sums over all graphs. The number of graphs
is the number of distinct graphs holding the votes (``Votes.n_graphs_total``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

    from engine.rankers.votes import Votes
    from engine.store.connection import Store
    from engine.views.appstate import AppBoard, SliderContext


DEFER_MIN_VOTES = 100_000
"""From this many votes up the Leaderboard shows the point board first and its bootstrap after (seconds at a
million votes); below, the bootstrap takes well under a second and the whole board comes in one pass."""


def first_open_applies(ranker: str, keep_k: int | None) -> bool:
    """Whether ``first_board`` gives this board: a count ranker over every graph of the selection."""
    from engine.rankers import ranker_object

    return keep_k is None and ranker_object(ranker).counts


def cycle_context(store: Store, dataset: str, judge: str | None,
                  category: str | None) -> SliderContext | None:
    """The SliderContext of the selection's graphs of three or more models (None when there is none)."""
    from engine.graphs.buckets import build_buckets
    from engine.views.appstate import SliderContext

    verdicts = store.verdicts(dataset, judge=judge, category=category, graphs_of_at_least=3)
    if verdicts.empty or (verdicts["winner"] == "invalid").all():
        return None
    return SliderContext.of(build_buckets(verdicts))


def cycle_columns(table: pd.DataFrame, ctx: SliderContext | None) -> pd.DataFrame:
    """``bad_triads`` and ``cycle_share`` per model of ``table`` (as ``appstate.model_cycle_columns`` over
    every graph): 0 and NaN for a model on no graph of ``ctx``."""
    import numpy as np

    from engine.views.appstate import model_cycle_columns

    if ctx is None:
        out = table.copy()
        out["bad_triads"] = np.zeros(len(out), dtype=np.int64)
        out["cycle_share"] = np.full(len(out), np.nan)
        return out
    known = table["model"].isin(ctx.stack.models).to_numpy()
    inner = model_cycle_columns(table[known], ctx, np.arange(ctx.stack.T))
    out = table.copy()
    out["bad_triads"] = np.zeros(len(out), dtype=np.int64)
    out["cycle_share"] = np.full(len(out), np.nan)
    out.loc[known, "bad_triads"] = inner["bad_triads"].to_numpy()
    out.loc[known, "cycle_share"] = inner["cycle_share"].to_numpy()
    return out


def first_board(
    votes: Votes,
    ctx: SliderContext | None,
    *,
    ranker: str,
    bootstrap: int,
    seed: int,
    reference: pd.Series | None = None,
    reference_note: str = "",
    extra_params: dict | None = None,
) -> AppBoard:
    """The board ``app_leaderboard(full context, keep_k=None, votes=votes, ...)`` shows, from the votes and
    the context of the graphs that can hold a triad (``cycle_context``)."""
    from engine.ranking.count_board import leaderboard_from_votes
    from engine.ranking.leaderboard import compare_to_reference
    from engine.views.appstate import AppBoard, with_reference

    n_graphs = votes.n_graphs_total()
    params = {"keep_k": None, "mu": None, "per_category": None, "pool": None, "threshold": None,
              "n_graphs_pool": n_graphs, **(extra_params or {})}
    board = leaderboard_from_votes(votes, ranker=ranker, bootstrap=bootstrap, seed=seed,
                                   extra_params={**params, "n_graphs": n_graphs})
    table = with_reference(cycle_columns(board.table, ctx), reference)
    dist = {} if reference is None else compare_to_reference(board, reference)
    return AppBoard(table, board.params, dist, reference_note)
