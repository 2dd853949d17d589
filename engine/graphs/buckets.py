"""Graphs laid out by size: one dense stack per number of models, so a graph costs its own n_g².

A GraphStack keeps every graph over the dataset's n models, (T, n, n) per array. On a battle log
(one model pair per prompt, 100 models) that is 10,000 cells per graph for one fact, and the
per-graph analyses (cycle counts, triads, SCCs, entropy, the diagnostics) then spend T·n³ work on
empty rows. ``GraphBuckets`` holds the same graphs, with the same ``keys`` (one row per graph, in
key order), grouped by their number of models k: bucket k is a (T_k, k, k) stack over each graph's
own models, with ``members[g]`` the (ascending) indices of those models in ``models``. Local order
is global order, so "a < b < c in stack order" means the same in both layouts.

A graph's models are those in a compared pair (or with an edge: a hand-built stack may set edges
without ``observed``). Analyses run per bucket and scatter their results back by ``graph`` (the
graph's position in ``keys``); buckets below the size an analysis needs are skipped
(``at_least``): a 2-model graph can hold no cycle and no triad.

``dense()`` gives back the GraphStack (the few callers that need one model axis across graphs);
``as_buckets`` accepts either layout, so the analysis functions take both.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from engine.graphs.distinct import distinct_sorted
from engine.graphs.stack import (
    DEFAULT_POLICY,
    GraphCells,
    GraphStack,
    _empty_invalid_only,
    check_dense_size,
    graph_cells,
)


@dataclass(frozen=True, eq=False)
class Bucket:
    """The graphs of one size k: ``graph`` (T_k,) positions in the keys, ``members`` (T_k, k)
    model indices (ascending per row), ``adj`` / ``observed`` (T_k, k, k) bool and ``soft``
    (T_k, k, k) float (None without probabilities), with GraphStack's meanings."""

    graph: np.ndarray
    members: np.ndarray
    adj: np.ndarray
    observed: np.ndarray
    soft: np.ndarray | None = None

    @property
    def k(self) -> int:
        """Models per graph in this bucket (every graph of a bucket has the same count)."""
        return int(self.members.shape[1])

    @property
    def T(self) -> int:  # noqa: N802 - the papers' name for the number of graphs
        """Number of graphs in this bucket."""
        return int(self.graph.size)

    def local_stack(self, keys: pd.DataFrame, policy: str = DEFAULT_POLICY) -> GraphStack:
        """This bucket as a GraphStack over k placeholder models ``"0" … "k-1"`` (slots, not names:
        map slot s of graph g back with ``members[g, s]``); ``keys`` are the full keys."""
        return GraphStack(tuple(str(i) for i in range(self.k)), self.adj, self.observed,
                          keys.iloc[self.graph].reset_index(drop=True), policy, self.soft)


@dataclass(frozen=True, eq=False)
class GraphBuckets:
    """The graphs of a GraphStack, bucketed by their number of models (module docstring)."""

    models: tuple[str, ...]
    keys: pd.DataFrame
    buckets: tuple[Bucket, ...]
    policy: str = DEFAULT_POLICY
    invalid_only: pd.DataFrame = field(default_factory=_empty_invalid_only)

    @property
    def T(self) -> int:  # noqa: N802
        """Number of graphs over all buckets."""
        return len(self.keys)

    @property
    def n(self) -> int:
        """Number of distinct models over all graphs."""
        return len(self.models)

    @property
    def sizes(self) -> np.ndarray:
        """(T,) int64: each graph's number of models."""
        out = np.zeros(self.T, dtype=np.int64)
        for b in self.buckets:
            out[b.graph] = b.k
        return out

    @property
    def has_soft(self) -> bool:
        """Whether any graph carries a judge probability."""
        return any(b.soft is not None and not np.isnan(b.soft).all() for b in self.buckets)

    def at_least(self, k: int) -> tuple[Bucket, ...]:
        """The buckets whose graphs have at least ``k`` models (the graphs that can hold a
        k-vertex structure: 3 for a cycle or a triad)."""
        return tuple(b for b in self.buckets if b.k >= k)

    def n_below(self, k: int) -> int:
        """How many graphs have fewer than ``k`` models."""
        return int(sum(b.T for b in self.buckets if b.k < k))

    def subset(self, index) -> GraphBuckets:
        """The graphs at positional ``index`` (ascending, no repeats), positions renumbered."""
        idx = np.asarray(index, dtype=np.int64)
        new_pos = np.full(self.T, -1, dtype=np.int64)
        new_pos[idx] = np.arange(idx.size)
        out = []
        for b in self.buckets:
            keep = new_pos[b.graph] >= 0
            if keep.any():
                out.append(Bucket(new_pos[b.graph[keep]], b.members[keep], b.adj[keep], b.observed[keep],
                                  None if b.soft is None else b.soft[keep]))
        return GraphBuckets(self.models, self.keys.iloc[idx].reset_index(drop=True), tuple(out), self.policy,
                            self.invalid_only)

    def win_tie_matrices(self) -> tuple[np.ndarray, np.ndarray]:
        """(n, n) float64 W (graphs where i beat j) and Tm (graphs where they tied), summed over the
        graphs bucket by bucket: GraphStack.win_tie_matrices without the (T, n, n) stack."""
        n = self.n
        w = np.zeros(n * n, dtype=np.float64)
        tm = np.zeros(n * n, dtype=np.float64)
        for b in self.buckets:
            at = (b.members[:, :, None] * n + b.members[:, None, :]).reshape(-1)
            back = b.adj.swapaxes(1, 2)
            w += np.bincount(at, weights=(b.adj & ~back).reshape(-1), minlength=n * n)
            tm += np.bincount(at, weights=(b.adj & back).reshape(-1), minlength=n * n)
        return w.reshape(n, n), tm.reshape(n, n)

    def locate(self, t: int) -> tuple[Bucket, int]:
        """(the bucket holding graph ``t``, its row in that bucket)."""
        for b in self.buckets:
            hit = np.flatnonzero(b.graph == int(t))
            if hit.size:
                return b, int(hit[0])
        raise IndexError(f"no graph {t} among {self.T}")

    def one(self, t: int) -> GraphStack:
        """Graph ``t`` alone as a (1, k, k) GraphStack over its own k models (real names, global
        order): what a single-graph view (the inspector) needs, never the (T, n, n) stack."""
        b, r = self.locate(t)
        models = tuple(self.models[i] for i in b.members[r])
        soft = None if b.soft is None else b.soft[r : r + 1]
        return GraphStack(models, b.adj[r : r + 1], b.observed[r : r + 1],
                          self.keys.iloc[[int(t)]].reset_index(drop=True), self.policy, soft)

    def dense(self) -> GraphStack:
        """The same graphs as one (T, n, n) GraphStack over every model; refused in one sentence first
        beyond ``engine.graphs.stack.DENSE_CELL_LIMIT`` cells."""
        T, n = self.T, self.n
        check_dense_size(T, n)
        adj = np.zeros((T, n, n), dtype=bool)
        observed = np.zeros((T, n, n), dtype=bool)
        soft = None
        if any(b.soft is not None for b in self.buckets):
            soft = np.full((T, n, n), np.nan)
        for b in self.buckets:
            g = b.graph[:, None, None]
            r, c = b.members[:, :, None], b.members[:, None, :]
            adj[g, r, c] = b.adj
            observed[g, r, c] = b.observed
            if soft is not None and b.soft is not None:
                soft[g, r, c] = b.soft
        return GraphStack(self.models, adj, observed, self.keys, self.policy, soft, self.invalid_only)


def _bucket(
    graph: np.ndarray,
    members: np.ndarray,
    rows: np.ndarray,
    cols: np.ndarray,
    local_t: np.ndarray,
    adj_vals: tuple[np.ndarray, np.ndarray],
    soft_vals: tuple[np.ndarray, np.ndarray] | None,
) -> Bucket:
    """A bucket from per-cell local coordinates (each cell written in both directions)."""
    T_k, k = members.shape
    adj = np.zeros((T_k, k, k), dtype=bool)
    observed = np.zeros((T_k, k, k), dtype=bool)
    observed[local_t, rows, cols] = True
    observed[local_t, cols, rows] = True
    adj[local_t, rows, cols] = adj_vals[0]
    adj[local_t, cols, rows] = adj_vals[1]
    soft = None
    if soft_vals is not None:
        soft = np.full((T_k, k, k), np.nan)
        soft[local_t, rows, cols] = soft_vals[0]
        soft[local_t, cols, rows] = soft_vals[1]
    return Bucket(graph, members, adj, observed, soft)


def buckets_from_cells(cells: GraphCells) -> GraphBuckets:
    """Bucket combined cells by each graph's number of models (memory: Σ_g n_g² cells)."""
    n, T = len(cells.models), cells.T
    if T == 0:
        return GraphBuckets(cells.models, cells.keys, (), cells.policy, cells.invalid_only)
    # every (graph, model) that appears in a cell, sorted by graph then model
    gm = distinct_sorted(np.concatenate([cells.t * n + cells.lo, cells.t * n + cells.hi]))
    g_of, m_of = gm // n, gm % n
    size = np.bincount(g_of, minlength=T)
    start = np.r_[0, np.cumsum(size)[:-1]]
    slot_lo = np.searchsorted(gm, cells.t * n + cells.lo) - start[cells.t]
    slot_hi = np.searchsorted(gm, cells.t * n + cells.hi) - start[cells.t]
    out = []
    for k in np.unique(size):
        graph = np.flatnonzero(size == k)
        local = np.full(T, -1, dtype=np.int64)
        local[graph] = np.arange(graph.size)
        members = m_of[(start[graph][:, None] + np.arange(k)[None, :]).reshape(-1)].reshape(graph.size, k)
        sel = np.flatnonzero(size[cells.t] == k)
        o = cells.outcome[sel]
        soft_vals = None if cells.p_lo is None else (cells.p_lo[sel], 1.0 - cells.p_lo[sel])
        out.append(_bucket(graph, members, slot_lo[sel], slot_hi[sel], local[cells.t[sel]], (o >= 0, o <= 0),
                           soft_vals))
    return GraphBuckets(cells.models, cells.keys, tuple(out), cells.policy, cells.invalid_only)


def build_buckets(verdicts: pd.DataFrame, *, policy: str = DEFAULT_POLICY,
                  models: list[str] | tuple[str, ...] | None = None) -> GraphBuckets:
    """The graphs of ``verdicts`` bucketed by size; the same graphs, keys and edges as
    ``engine.graphs.stack.build_stack`` with the same arguments, never a (T, n, n) array."""
    return buckets_from_cells(graph_cells(verdicts, policy=policy, models=models))


def buckets_from_stack(stack: GraphStack) -> GraphBuckets:
    """Bucket a dense GraphStack (a graph's models: those in an observed pair or on an edge)."""
    adj = np.asarray(stack.adj, dtype=bool)
    obs = np.asarray(stack.observed, dtype=bool)
    n = adj.shape[1]
    off = ~np.eye(n, dtype=bool)
    touched = (adj | obs) & off
    present = touched.any(axis=2) | touched.any(axis=1)  # (T, n)
    size = present.sum(axis=1)
    soft = stack.soft
    if soft is not None and np.isnan(soft).all():
        soft = None
    out = []
    for k in np.unique(size):
        graph = np.flatnonzero(size == k)
        members = (
            np.nonzero(present[graph])[1].reshape(graph.size, k) if k else np.zeros((graph.size, 0), np.int64)
        )
        g = graph[:, None, None]
        r, c = members[:, :, None], members[:, None, :]
        out.append(Bucket(graph, members.astype(np.int64), adj[g, r, c], obs[g, r, c],
                          None if soft is None else soft[g, r, c]))
    return GraphBuckets(tuple(stack.models), stack.keys.reset_index(drop=True), tuple(out), stack.policy,
                        stack.invalid_only)


def as_buckets(graphs) -> GraphBuckets:
    """``graphs`` as GraphBuckets (a GraphStack is bucketed; GraphBuckets pass through)."""
    return graphs if isinstance(graphs, GraphBuckets) else buckets_from_stack(graphs)


__all__ = [
    "Bucket",
    "GraphBuckets",
    "as_buckets",
    "build_buckets",
    "buckets_from_cells",
    "buckets_from_stack",
]
