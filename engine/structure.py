"""Per-graph structure of a GraphStack, batched: draw rate, largest SCC, bad-triad participation.

Draw rate is the share of compared pairs that tied. The largest strongly connected component
(paper 000, Appendix C.2, Figure 4; paper 004) comes from the reachability closure R = (I ∨ A)^(n−1), built by
repeated boolean squaring on the whole (T, n, n) stack: i and j share a component iff R_ij ∧ R_ji.
Bad-triad participation counts, per model and per pair, the non-transitive triads (paper 001,
App. B.1; engine/triads.py) that contain them, from the per-vertex and per-pair non-tie 3-cycle
counts of engine/cycles.py (each bad triad carries exactly one non-tie directed 3-cycle).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .cycles import COUNT_COLUMNS, as_adjacency, cycle_counts_arrays, pair_cycle_counts, vertex_cycle_counts
from .graphs import KEY_COLUMNS


def compared_pairs(stack) -> np.ndarray:
    """(T, n, n) bool, symmetric: the pair was compared in the graph (observed, with an edge)."""
    adj = np.asarray(stack.adj, dtype=bool)
    return np.asarray(stack.observed, dtype=bool) & (adj | adj.swapaxes(1, 2))


def draw_rate(stack) -> np.ndarray:
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


def largest_scc(stack) -> np.ndarray:
    """(T,) int64: size of the largest strongly connected component of each graph (0 if n = 0)."""
    adj = stack.adj if hasattr(stack, "adj") else stack
    member = scc_membership(adj)
    if member.shape[1] == 0:
        return np.zeros(member.shape[0], dtype=np.int64)
    return member.sum(axis=2).max(axis=1).astype(np.int64)


def n_models(stack) -> np.ndarray:
    """(T,) int64: models with at least one compared pair in the graph."""
    return compared_pairs(stack).any(axis=2).sum(axis=1).astype(np.int64)


def graph_table(stack) -> pd.DataFrame:
    """One row per graph (stack order): key columns, n_verdicts, n_invalid, n_models, n_pairs,
    c3, c4, c3_tie, c4_tie, c3_bad, c4_bad, draw_rate, largest_scc."""
    keys = stack.keys.reset_index(drop=True)
    cols = [c for c in (*KEY_COLUMNS, "n_verdicts", "n_invalid") if c in keys.columns]
    out = keys[cols].copy()
    out["n_models"] = n_models(stack)
    out["n_pairs"] = (compared_pairs(stack).sum(axis=(1, 2)) // 2).astype(np.int64)
    counts = cycle_counts_arrays(stack.adj)
    for c in COUNT_COLUMNS:
        out[c] = counts[c]
    out["draw_rate"] = draw_rate(stack)
    out["largest_scc"] = largest_scc(stack)
    return out


def bad_triad_participation(stack) -> tuple[pd.DataFrame, pd.DataFrame]:
    """How often each model and each pair sits in a bad (non-transitive) triad, over the stack.

    per_model: model, bad_triads (summed over graphs), graphs (graphs where the model was
    compared at least once), graphs_with_bad (graphs where it is in ≥ 1 bad triad),
    participation_rate = graphs_with_bad / graphs (NaN if never compared); stack model order.
    per_pair: model_a, model_b (a before b in stack order), bad_triads, graphs (graphs where the
    pair was compared), graphs_with_bad, participation_rate; one row per unordered pair.
    """
    models = list(stack.models)
    n = len(models)
    pairs = compared_pairs(stack)
    per_v = vertex_cycle_counts(stack.adj)["c3_bad"]  # (T, n)
    present = pairs.any(axis=2)
    graphs = present.sum(axis=0).astype(np.int64)
    with_bad = (per_v > 0).sum(axis=0).astype(np.int64)
    rate = np.full(n, np.nan)
    np.divide(with_bad, graphs, out=rate, where=graphs > 0)
    per_model = pd.DataFrame({
        "model": models,
        "bad_triads": per_v.sum(axis=0).astype(np.int64),
        "graphs": graphs,
        "graphs_with_bad": with_bad,
        "participation_rate": rate,
    })

    per_p = pair_cycle_counts(stack.adj)["c3_bad"]  # (T, n, n) symmetric
    iu, ju = np.triu_indices(n, 1)
    p_graphs = pairs[:, iu, ju].sum(axis=0).astype(np.int64)
    p_with_bad = (per_p[:, iu, ju] > 0).sum(axis=0).astype(np.int64)
    p_rate = np.full(len(iu), np.nan)
    np.divide(p_with_bad, p_graphs, out=p_rate, where=p_graphs > 0)
    names = np.asarray(models, dtype=object)
    per_pair = pd.DataFrame({
        "model_a": names[iu],
        "model_b": names[ju],
        "bad_triads": per_p[:, iu, ju].sum(axis=0).astype(np.int64),
        "graphs": p_graphs,
        "graphs_with_bad": p_with_bad,
        "participation_rate": p_rate,
    }).astype({"model_a": str, "model_b": str})
    return per_model.astype({"model": str}), per_pair
