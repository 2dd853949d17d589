"""ELSPR non-transitivity and preference clarity (paper 004, Section 3.2, eq. 2-6), per graph.

Edge convention. ELSPR draws an edge from the loser to the winner, so its in-degree d_in(v)
counts the opponents v beat (or tied). The engine draws ``i → j`` when i beat j (a tie is both
edges), so ELSPR's d_in(v) is our *out*-degree (row sum of ``adj``), and an ELSPR edge entering a
component is one of our edges leaving it. SCCs are the same under either convention.

- Non-transitive SCC (eq. 2): a component with more than 2 vertices in which at least one pair is
  not a tie (a pair of reciprocal edges). An all-tie triangle is consistent.
- ρ_non-trans (eq. 3): vertices in non-transitive SCCs over all vertices, summed over a set of graphs.
- H² (eq. 4): with SCCs as communities, volume v(S) = Σ_{v∈S} d_in(v), v(G) the total,
  ``H² = −Σ_S g_S/v(G)·log2(v(S)/v(G)) − Σ_v d_in(v)/v(G)·log2(d_in(v)/v(S(v)))``, where g_S counts
  edges entering S from outside that are not between two singleton SCCs; 0·log 0 is taken as 0.
- τ = H² / log2 n (eq. 5), n the graph's vertices; τ_avg is the mean over graphs (eq. 6).

A graph's vertices are the models compared in it (a model of the stack that a graph never saw is
not counted). ELSPR assumes complete graphs; on an incomplete one a missing pair is simply no edge.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from engine.graphs.structure import scc_membership

if TYPE_CHECKING:
    from engine.graphs.buckets import GraphBuckets
    from engine.graphs.stack import GraphStack


def nontransitive_vertices(adj: np.ndarray) -> np.ndarray:
    """(T, n) bool: the vertex lies in an SCC of size > 2 that is not all ties (paper 004, eq. 2)."""
    a = np.asarray(adj, dtype=bool)
    n = a.shape[-1]
    mutual = scc_membership(a)
    size = mutual.sum(axis=-1)
    tie = a & a.swapaxes(-1, -2)
    not_tie = (~tie & ~np.eye(n, dtype=bool)).astype(np.float32)
    m = mutual.astype(np.float32)
    # pairs (u, v), u ≠ v, inside i's component that are not ties
    nontie_pairs = np.einsum("tiu,tuv,tiv->ti", m, not_tie, m)
    return (size > 2) & (nontie_pairs > 0)


def structural_entropy(adj: np.ndarray) -> np.ndarray:
    """(T,) two-dimensional structural entropy H² of each graph (paper 004, eq. 4), in bits."""
    a = np.asarray(adj, dtype=bool)
    mutual = scc_membership(a)
    single = mutual.sum(axis=-1) == 1  # (T, n)
    d = a.sum(axis=-1).astype(np.float64)  # ELSPR in-degree = our out-degree
    vol_g = d.sum(axis=-1)  # (T,)
    vol_s = np.einsum("tij,tj->ti", mutual.astype(np.float64), d)  # volume of each vertex's SCC
    both_single = single[:, :, None] & single[:, None, :]
    leaving = a & ~mutual & ~both_single  # our edges out of a component = ELSPR edges into it
    e_out = leaving.sum(axis=-1).astype(np.float64)  # per vertex; summed over S gives g_S
    with np.errstate(divide="ignore", invalid="ignore"):
        safe_g = np.where(vol_g > 0, vol_g, 1.0)[:, None]
        inter = np.where(e_out > 0, e_out / safe_g * np.log2(np.where(vol_s > 0, vol_s, 1.0) / safe_g), 0.0)
        intra = np.where(
            d > 0, d / safe_g * np.log2(np.where(d > 0, d, 1.0) / np.where(vol_s > 0, vol_s, 1.0)), 0.0
        )
    h = -(inter.sum(axis=-1) + intra.sum(axis=-1))
    return np.where(vol_g > 0, h, 0.0) + 0.0  # + 0.0 turns -0.0 into 0.0


def entropy_table(stack: GraphStack | GraphBuckets) -> pd.DataFrame:
    """One row per graph: key columns, n_vertices, nontransitive_vertices, largest non-transitive
    SCC share, h2 and tau (NaN for graphs with fewer than 2 vertices). ``stack``: a GraphStack or
    GraphBuckets; each graph is computed over its own models (absent models add nothing to H²)."""
    from engine.graphs.buckets import as_buckets

    b = as_buckets(stack)
    nv = np.zeros(b.T, dtype=np.int64)
    nt = np.zeros(b.T, dtype=np.int64)
    h2 = np.zeros(b.T)
    for bk in b.buckets:
        if bk.k == 0:
            continue
        present = np.asarray(bk.observed, dtype=bool).any(axis=-1)
        nv[bk.graph] = present.sum(axis=-1)
        nt[bk.graph] = (nontransitive_vertices(bk.adj) & present).sum(axis=-1)
        h2[bk.graph] = structural_entropy(bk.adj)
    with np.errstate(divide="ignore", invalid="ignore"):
        tau = np.where(nv >= 2, h2 / np.log2(np.maximum(nv, 2)), np.nan)
    out = b.keys.reset_index(drop=True).copy()
    out["n_vertices"] = nv
    out["nontransitive_vertices"] = nt
    out["h2"] = h2
    out["tau"] = tau
    return out


def entropy_summary(stack: GraphStack | GraphBuckets, by: tuple[str, ...] = ("judge",)) -> pd.DataFrame:
    """Per group (default per judge): graphs, ρ_non-trans (eq. 3), τ_avg (eq. 6), mean H², over
    the graphs of at least 3 models (a graph of 2 can have no non-transitive component; counting
    its vertices would only dilute ρ_non-trans)."""
    table = entropy_table(stack)
    table = table[table["n_vertices"] >= 3]
    if table.empty:
        return pd.DataFrame(columns=[*by, "graphs", "rho_nontrans", "tau_avg", "h2_mean"])
    g = table.groupby(list(by), sort=True, dropna=False)
    out = g.agg(
        graphs=("tau", "size"),
        nt=("nontransitive_vertices", "sum"),
        nv=("n_vertices", "sum"),
        tau_avg=("tau", "mean"),
        h2_mean=("h2", "mean"),
    ).reset_index()
    out["rho_nontrans"] = out["nt"] / out["nv"]
    return out[[*by, "graphs", "rho_nontrans", "tau_avg", "h2_mean"]]
