"""Greedy weighted feedback-arc-set denoising of a preference graph (paper 002, Section 3.3, Algorithm 1).

Input: non-negative weights ``w[u, v]`` (an arc u -> v exists when w > 0, u preferred to v). The
greedy builds a vertex sequence: repeatedly peel every sink (prepended to the tail list), then every
source (appended to the head list), and when neither remains take the vertex with the largest weighted
out-minus-in degree (appended to the head). Arcs pointing backward in the final sequence form the
feedback arc set; removing them leaves a DAG. Ties among candidates go to the lowest vertex index,
so the result is deterministic. The exact minimum is NP-hard; this is the paper's heuristic.

``greedy_fas_order_batch`` runs the same greedy on G graphs at once, one vertex per step: a sink if
any (lowest index), else a source, else the largest delta. That is the same sequence as the nested
loops: removing a source never creates a sink and removing a sink never creates a source, so the
sink loop, then the source loop, then one delta choice is exactly "sink first, source second".
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Denoised:
    """The vertex sequence, the kept DAG weights, and the removed (backward) arcs as a bool mask."""

    order: tuple[int, ...]
    dag: np.ndarray
    removed: np.ndarray

    @property
    def removed_weight(self) -> float:
        return float(self.removed_weights.sum())

    @property
    def removed_weights(self) -> np.ndarray:
        return np.where(self.removed, self._w, 0.0)

    _w: np.ndarray = None  # the input weights (kept for removed_weights)


def greedy_fas_order(w: np.ndarray) -> tuple[int, ...]:
    """The vertex sequence of Algorithm 1 (sinks to the back, sources to the front, else max delta)."""
    w = np.asarray(w, dtype=np.float64).copy()
    np.fill_diagonal(w, 0.0)
    n = w.shape[0]
    arc = w > 0
    alive = np.ones(n, dtype=bool)
    head: list[int] = []
    tail: list[int] = []
    while alive.any():
        while True:  # peel sinks: no outgoing arc to a live vertex
            out_deg = (arc & alive[None, :]).sum(axis=1)
            sinks = np.flatnonzero(alive & (out_deg == 0))
            if sinks.size == 0:
                break
            u = int(sinks[0])
            tail.insert(0, u)
            alive[u] = False
        while True:  # peel sources: no incoming arc from a live vertex
            in_deg = (arc & alive[:, None]).sum(axis=0)
            sources = np.flatnonzero(alive & (in_deg == 0))
            if sources.size == 0:
                break
            u = int(sources[0])
            head.append(u)
            alive[u] = False
        if not alive.any():
            break
        live_w = w * alive[None, :] * alive[:, None]
        delta = np.where(alive, live_w.sum(axis=1) - live_w.sum(axis=0), -np.inf)
        u = int(np.argmax(delta))
        head.append(u)
        alive[u] = False
    return tuple(head + tail)


def greedy_fas_order_batch(w: np.ndarray) -> np.ndarray:
    """(G, n, n) weights → (G, n) vertex sequences of Algorithm 1, one array step per removed vertex."""
    w = np.array(w, dtype=np.float64)
    if w.ndim != 3 or w.shape[1] != w.shape[2]:
        raise ValueError(f"expected a (G, n, n) array of arc weights, got shape {w.shape}")
    G, n, _ = w.shape
    idx = np.arange(n)
    w[:, idx, idx] = 0.0
    arc = w > 0
    alive = np.ones((G, n), dtype=bool)
    order = np.empty((G, n), dtype=np.int64)
    head = np.zeros(G, dtype=np.int64)
    tail = np.full(G, n - 1, dtype=np.int64)
    rows = np.arange(G)
    for _ in range(n):
        live = arc & alive[:, None, :] & alive[:, :, None]
        sinks = alive & ~live.any(axis=2)
        sources = alive & ~live.any(axis=1)
        live_w = np.where(live, w, 0.0)
        delta = np.where(alive, live_w.sum(axis=2) - live_w.sum(axis=1), -np.inf)
        has_sink = sinks.any(axis=1)
        u = np.where(has_sink, np.argmax(sinks, axis=1),
                     np.where(sources.any(axis=1), np.argmax(sources, axis=1), np.argmax(delta, axis=1)))
        at = np.where(has_sink, tail, head)
        order[rows, at] = u
        tail -= has_sink
        head += ~has_sink
        alive[rows, u] = False
    return order


def backward_arcs(w: np.ndarray, order: tuple[int, ...] | list[int]) -> np.ndarray:
    """Bool mask of arcs (w > 0) that point from a later to an earlier vertex of ``order``."""
    w = np.asarray(w, dtype=np.float64)
    pos = np.empty(len(order), dtype=np.int64)
    pos[list(order)] = np.arange(len(order))
    return (w > 0) & (pos[:, None] > pos[None, :])


def denoise(w: np.ndarray) -> Denoised:
    """Algorithm 1 of paper 002: the greedy order, the DAG without backward arcs, and what was removed."""
    w = np.asarray(w, dtype=np.float64).copy()
    np.fill_diagonal(w, 0.0)
    order = greedy_fas_order(w)
    removed = backward_arcs(w, order)
    dag = np.where(removed, 0.0, w)
    return Denoised(order, dag, removed, w)


def denoise_batch(w: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Algorithm 1 on G graphs at once: (orders (G, n), DAG weights (G, n, n), removed arcs (G, n, n) bool)."""
    w = np.array(w, dtype=np.float64)
    G, n, _ = w.shape
    w[:, np.arange(n), np.arange(n)] = 0.0
    order = greedy_fas_order_batch(w)
    pos = np.empty_like(order)
    np.put_along_axis(pos, order, np.arange(n)[None].repeat(G, 0), axis=1)
    removed = (w > 0) & (pos[:, :, None] > pos[:, None, :])
    return order, np.where(removed, 0.0, w), removed


def descendant_counts_batch(dag: np.ndarray) -> np.ndarray:
    """(G, n, n) DAG weights → (G, n) number of other vertices reachable from each vertex (eq. 5)."""
    from .rankers.base import closure_batch

    reach = closure_batch(np.asarray(dag) > 0)
    return reach.sum(axis=2) - 1


def descendant_counts(dag: np.ndarray) -> np.ndarray:
    """desc(v) = number of other vertices reachable from v (paper 002, eq. 5)."""
    a = np.asarray(dag) > 0
    n = a.shape[0]
    reach = a | np.eye(n, dtype=bool)
    for _ in range(max(1, int(np.ceil(np.log2(max(n, 2)))))):
        r = reach.astype(np.float32)
        reach = (r @ r) > 0
    return reach.sum(axis=1) - 1


def is_acyclic(w: np.ndarray) -> bool:
    """True when the digraph of w > 0 has no directed cycle (no vertex reaches itself in >= 1 step)."""
    a = (np.asarray(w) > 0).astype(np.float32)
    n = a.shape[0]
    reach = a.copy()
    for _ in range(max(1, int(np.ceil(np.log2(max(n, 2)))))):
        reach = ((reach + reach @ reach) > 0).astype(np.float32)
    return not bool(np.diag(reach).any())
