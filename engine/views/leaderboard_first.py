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
    import numpy as np
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
                  category: str | None, votes: Votes | None = None) -> SliderContext | None:
    """The SliderContext of the selection's graphs of three or more models (None when there is none).

    ``votes``: the selection's votes when the caller holds them (the Leaderboard read them already): when
    they and the selection's invalid verdicts show every graph over one pair of models
    (``graphs_over_one_pair``), there is no such graph and nothing more is read (the read of the graphs of
    3+ models groups every verdict in SQL: a second of CPU on a million-battle log that has none)."""
    from engine.graphs.buckets import build_buckets
    from engine.views.appstate import SliderContext

    if votes is not None and graphs_over_one_pair(store, dataset, judge, category, votes):
        return None
    verdicts = store.verdicts(dataset, judge=judge, category=category, graphs_of_at_least=3)
    if verdicts.empty or (verdicts["winner"] == "invalid").all():
        return None
    return SliderContext.of(build_buckets(verdicts))


def graphs_over_one_pair(store: Store, dataset: str, judge: str | None, category: str | None,
                         votes: Votes) -> bool:
    """Whether every graph of the selection, valid and invalid verdicts alike, is over a single pair of
    models, so none names three models (``Store.verdicts(graphs_of_at_least=3)`` would read nothing).

    A graph's verdicts name three or more models exactly when two of them are over different pairs (a verdict
    never pairs a model with itself). The valid verdicts' pairs and graph keys are the votes' (a vote is
    verdicts of one pair in one graph); the invalid ones' are read here (``invalid_graph_pairs``), keyed
    by the same 64-bit hash of the graph key. Two graphs sharing a hash can only look like one graph of two
    pairs: the answer is then False and the caller reads the graphs."""
    import numpy as np

    from engine.rankers.votes import holds

    bad_graph, bad_lo, bad_hi = invalid_graph_pairs(store, dataset, judge=judge, category=category)
    # only a graph held twice can be over two pairs: a graph two votes share (the votes' sorted graph keys,
    # sorted once for the board's counts too) or one an invalid verdict is in; the votes in neither are left
    # out before the sort (a battle log: a few thousand of a million)
    runs = votes.graph_runs()
    bad_keys = np.unique(bad_graph)
    take = runs.shared() | holds(votes.graph, bad_keys) if bad_keys.size else runs.shared()
    names = np.array(sorted(set(votes.models) | set(bad_lo) | set(bad_hi)), dtype=object)
    code = np.searchsorted(names, np.array(votes.models, dtype=object)).astype(np.int64)
    n = np.int64(max(len(names), 1))
    pair = np.concatenate([code[votes.lo[take]] * n + code[votes.hi[take]],
                           np.searchsorted(names, bad_lo).astype(np.int64) * n
                           + np.searchsorted(names, bad_hi).astype(np.int64)])
    graph = np.concatenate([np.asarray(votes.graph[take], dtype=np.uint64), bad_graph])
    order = np.argsort(graph)
    g, p = graph[order], pair[order]
    return not bool(((g[1:] == g[:-1]) & (p[1:] != p[:-1])).any())


def invalid_graph_pairs(store: Store, dataset: str, *, judge: str | None = None,
                        category: str | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per invalid verdict of the selection: the 64-bit hash of its graph key
    (``engine.ranking.vote_query.GRAPH_HASH``, as the votes carry it) and its pair of models by name, the
    lesser first (uint64, object, object arrays; empty when every verdict is valid)."""
    import numpy as np

    from engine.ranking.vote_query import GRAPH_HASH
    from engine.store.sql import params

    rel = store.verdict_relation(dataset, judge=judge, category=category)
    got = store.cursor().execute(
        f"SELECT {GRAPH_HASH} AS g, least(model_a, model_b) AS lo, greatest(model_a, model_b) AS hi "
        f"FROM {rel} WHERE winner = 'invalid'", params(rel)).fetchnumpy()
    return (np.asarray(got["g"], dtype=np.uint64), np.asarray(got["lo"], dtype=object),
            np.asarray(got["hi"], dtype=object))


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
