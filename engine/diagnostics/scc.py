"""Strongly connected components of every graph in a stack at once, via boolean reachability.

Why here: ELSPR's non-transitivity (paper 004, Section 3.2) and the order-permutation stress test
(paper 003, Appendix A.1.1) both need, per graph, which vertices are mutually reachable. Instead of
running Tarjan per graph, the reflexive-transitive closure of all T graphs is formed by ⌈log2 n⌉
batched boolean squarings of ``A + I``; two vertices share an SCC when each reaches the other.
SCCs do not depend on the edge direction convention (reversing every edge keeps them).
"""

from __future__ import annotations

import numpy as np


def reachability(adj: np.ndarray) -> np.ndarray:
    """(T, n, n) bool: ``reach[t, i, j]`` when j can be reached from i in graph t (i reaches i)."""
    a = np.asarray(adj, dtype=bool)
    n = a.shape[-1]
    reach = a | np.eye(n, dtype=bool)
    steps = 1
    while steps < n:  # paths of length < 2*steps are covered after each squaring
        f = reach.astype(np.float32)
        reach = np.matmul(f, f) > 0
        steps *= 2
    return reach


def mutual_reach(adj: np.ndarray) -> np.ndarray:
    """(T, n, n) bool: i and j lie in the same strongly connected component of graph t."""
    r = reachability(adj)
    return r & r.swapaxes(-1, -2)


def component_labels(mutual: np.ndarray) -> np.ndarray:
    """(T, n) int: each vertex's SCC named by the smallest vertex index in it."""
    return np.argmax(mutual, axis=-1)
