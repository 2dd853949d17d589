"""Reachability in a batch of digraphs: the reflexive-transitive closure, for denoising (is an arc still
implied?) and ELSPR (which models a graph orders at all)."""

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
