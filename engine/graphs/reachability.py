"""Reachability in a batch of digraphs: the reflexive-transitive closure, for denoising (is an arc still
implied?) and ELSPR (which models a graph orders at all); and the components of the comparison
graph, for the leaderboard (scores of models never linked by a chain of comparisons are not
comparable)."""

from __future__ import annotations

import numpy as np

from engine.blas import single_thread_blas


def closure_batch(adj: np.ndarray) -> np.ndarray:
    """Reflexive-transitive closure of a (B, n, n) bool adjacency by repeated squaring (log2 n steps)."""
    a = np.asarray(adj, dtype=bool)
    n = a.shape[-1]
    reach = a | np.eye(n, dtype=bool)
    steps = max(1, int(np.ceil(np.log2(max(n, 2)))))
    with single_thread_blas():
        for _ in range(steps):
            r = reach.astype(np.float32)
            reach = (r @ r) > 0
    return reach


def strongly_connected_batch(adj: np.ndarray) -> np.ndarray:
    """(B, n, n) bool adjacency → (B,) bool: is each digraph strongly connected? (the BT and Davidson
    maximum-likelihood estimates exist only where the wins' graph is)."""
    a = np.asarray(adj, dtype=bool)
    n = a.shape[-1]
    return np.asarray(closure_batch(a).reshape(a.shape[0], n * n).all(axis=1))  # asarray: typed as an array


def comparison_components(compared) -> np.ndarray:
    """(n,) component of each model in the undirected comparison graph (``compared``: (n, n) bool,
    dense or scipy sparse, True where the pair has a verdict): 1 = the component with the most models,
    equal sizes by their first model (models are sorted by name), so the labels never depend on the
    input order. Memory grows with the compared pairs (scipy's csgraph), not with n^2 beyond the input."""
    from scipy import sparse
    from scipy.sparse.csgraph import connected_components

    graph = sparse.csr_matrix(compared, dtype=np.int8)
    n = graph.shape[0]
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    _, raw = connected_components(graph, directed=False)
    size = np.bincount(raw)
    first = np.full(size.size, n, dtype=np.int64)
    np.minimum.at(first, raw, np.arange(n))
    order = np.lexsort((first, -size))  # biggest first, then by first model
    label = np.empty(size.size, dtype=np.int64)
    label[order] = np.arange(1, size.size + 1)
    return label[raw]
