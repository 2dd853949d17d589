"""Per-graph structure of a GraphStack, batched: draw rate, largest SCC, bad-triad participation.

Draw rate is the share of compared pairs that tied. The largest strongly connected component
(paper 000, Appendix C.2, Figure 4; paper 004) comes from the reachability closure R = (I ∨ A)^(n−1), built by
repeated boolean squaring on the whole (T, n, n) stack: i and j share a component iff R_ij ∧ R_ji.
Bad-triad participation counts, per model and per pair, the non-transitive triads (paper 001,
App. B.1; engine/graphs/triads.py) that contain them, from the per-vertex and per-pair non-tie 3-cycle
counts of engine/graphs/cycles.py (each bad triad carries exactly one non-tie directed 3-cycle).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from engine.graphs.cycles import (
    COUNT_COLUMNS,
    as_adjacency,
    cycle_counts_arrays,
    pair_cycle_counts,
    vertex_cycle_counts,
)
from engine.graphs.stack import KEY_COLUMNS

if TYPE_CHECKING:
    from engine.graphs.stack import GraphStack


def compared_pairs(stack: GraphStack) -> np.ndarray:
    """(T, n, n) bool, symmetric: the pair was compared in the graph (observed, with an edge)."""
    adj = np.asarray(stack.adj, dtype=bool)
    return np.asarray(stack.observed, dtype=bool) & (adj | adj.swapaxes(1, 2))


def draw_rate(stack: GraphStack) -> np.ndarray:
    """(T,) float: tied pairs / compared pairs per graph; NaN for a graph with no compared pair."""
    pairs = compared_pairs(stack)
    n_pairs = pairs.sum(axis=(1, 2)) // 2
    n_ties = (stack.ties & pairs).sum(axis=(1, 2)) // 2
    out = np.full(len(n_pairs), np.nan)
    np.divide(n_ties, n_pairs, out=out, where=n_pairs > 0)
    return out


def scc_membership(adj: np.ndarray) -> np.ndarray:
    """(T, n, n) bool: i and j lie in the same strongly connected component (i ~ i always).

    Reachability by squaring: after k squarings R holds every path of length < 2^k, so
    ceil(log2(n)) squarings reach the closure; the loop stops early once no graph changes.
    Products are float32 counts (exact: entries ≤ n), thresholded back to bool.
    """
    a = as_adjacency(adj)
    n = a.shape[1]
    r = a | np.eye(n, dtype=bool)[None]
    length = 1
    while length < n - 1:
        f = r.astype(np.float32)
        nxt = np.matmul(f, f) > 0
        length *= 2
        if np.array_equal(nxt, r):
            break
        r = nxt
    return r & r.swapaxes(1, 2)


def largest_scc(stack: GraphStack | np.ndarray) -> np.ndarray:
    """(T,) int64: size of the largest strongly connected component of each graph (0 if n = 0);
    ``stack`` may also be the (T, n, n) adjacency itself."""
    adj = stack if isinstance(stack, np.ndarray) else stack.adj
    member = scc_membership(adj)
    if member.shape[1] == 0:
        return np.zeros(member.shape[0], dtype=np.int64)
    return member.sum(axis=2).max(axis=1).astype(np.int64)


def n_models(stack: GraphStack) -> np.ndarray:
    """(T,) int64: models with at least one compared pair in the graph."""
    return compared_pairs(stack).any(axis=2).sum(axis=1).astype(np.int64)


def graph_table(graphs) -> pd.DataFrame:
    """One row per graph (key order): key columns, n_verdicts, n_invalid, n_models, n_pairs,
    c3, c4, c3_tie, c4_tie, c3_bad, c4_bad, draw_rate, largest_scc.

    ``graphs``: a GraphStack or engine.graphs.buckets.GraphBuckets; computed bucket by bucket, each
    graph over its own models (a graph of fewer than 3 models has no cycle: its counts are 0
    without computing them)."""
    from engine.graphs.buckets import as_buckets

    b = as_buckets(graphs)
    keys = b.keys.reset_index(drop=True)
    cols = [c for c in (*KEY_COLUMNS, "n_verdicts", "n_invalid") if c in keys.columns]
    out = keys[cols].copy()
    T = b.T
    n_mod = np.zeros(T, dtype=np.int64)
    n_pairs = np.zeros(T, dtype=np.int64)
    counts = {c: np.zeros(T, dtype=np.int64) for c in COUNT_COLUMNS}
    rate = np.full(T, np.nan)
    scc = np.full(T, 1 if b.n else 0, dtype=np.int64)  # an empty graph: every vertex alone
    for bk in b.buckets:
        local = bk.local_stack(keys, b.policy)
        g = bk.graph
        n_mod[g] = n_models(local)
        n_pairs[g] = compared_pairs(local).sum(axis=(1, 2)) // 2
        rate[g] = draw_rate(local)
        if bk.k >= 1:
            scc[g] = largest_scc(local)
        if bk.k >= 3:
            cc = cycle_counts_arrays(bk.adj)
            for c in COUNT_COLUMNS:
                counts[c][g] = cc[c]
    out["n_models"] = n_mod
    out["n_pairs"] = n_pairs
    for c in COUNT_COLUMNS:
        out[c] = counts[c]
    out["draw_rate"] = rate
    out["largest_scc"] = scc
    return out


def bad_triad_participation(graphs) -> tuple[pd.DataFrame, pd.DataFrame]:
    """How often each model and each pair sits in a bad (non-transitive) triad, over the graphs.

    Graphs of fewer than 3 models are left out (they hold no triad). per_model: model, bad_triads
    (summed over graphs), graphs (graphs where the model was compared at least once), graphs_with_bad (graphs
    where it is in ≥ 1 bad triad),
    participation_rate = graphs_with_bad / graphs (NaN if never compared); stack model order.
    per_pair: model_a, model_b (a before b in stack order), bad_triads, graphs (graphs where the
    pair was compared), graphs_with_bad, participation_rate; one row per unordered pair.
    ``graphs``: a GraphStack or GraphBuckets (computed per bucket, scattered onto the models).
    """
    from engine.graphs.buckets import as_buckets

    b = as_buckets(graphs)
    models = list(b.models)
    n = len(models)
    graphs_m = np.zeros(n, dtype=np.int64)
    bad_m = np.zeros(n, dtype=np.int64)
    with_bad_m = np.zeros(n, dtype=np.int64)
    graphs_p = np.zeros((n, n), dtype=np.int64)
    bad_p = np.zeros((n, n), dtype=np.int64)
    with_bad_p = np.zeros((n, n), dtype=np.int64)
    for bk in b.at_least(3):  # a graph of 2 models holds no triad: it would only dilute the rates
        local = bk.local_stack(b.keys, b.policy)
        pairs = compared_pairs(local)
        mem = bk.members
        np.add.at(graphs_m, mem, pairs.any(axis=2).astype(np.int64))
        r, c = mem[:, :, None], mem[:, None, :]
        np.add.at(graphs_p, (r, c), pairs.astype(np.int64))
        per_v = vertex_cycle_counts(bk.adj)["c3_bad"]  # (T_k, k)
        np.add.at(bad_m, mem, per_v)
        np.add.at(with_bad_m, mem, (per_v > 0).astype(np.int64))
        per_p = pair_cycle_counts(bk.adj)["c3_bad"]  # (T_k, k, k) symmetric
        np.add.at(bad_p, (r, c), per_p)
        np.add.at(with_bad_p, (r, c), (per_p > 0).astype(np.int64))
    rate = np.full(n, np.nan)
    np.divide(with_bad_m, graphs_m, out=rate, where=graphs_m > 0)
    per_model = pd.DataFrame({
        "model": models,
        "bad_triads": bad_m,
        "graphs": graphs_m,
        "graphs_with_bad": with_bad_m,
        "participation_rate": rate,
    })
    iu, ju = np.triu_indices(n, 1)
    p_graphs = graphs_p[iu, ju]
    p_rate = np.full(len(iu), np.nan)
    np.divide(with_bad_p[iu, ju], p_graphs, out=p_rate, where=p_graphs > 0)
    names = np.asarray(models, dtype=object)
    per_pair = pd.DataFrame({
        "model_a": names[iu],
        "model_b": names[ju],
        "bad_triads": bad_p[iu, ju],
        "graphs": p_graphs,
        "graphs_with_bad": with_bad_p[iu, ju],
        "participation_rate": p_rate,
    }).astype({"model_a": str, "model_b": str})
    return per_model.astype({"model": str}), per_pair
