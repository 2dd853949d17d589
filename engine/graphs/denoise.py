"""Greedy weighted feedback-arc-set denoising of a preference graph (paper 002, Section 3.3, Algorithm 1).

Input: non-negative weights ``w[u, v]`` (an arc u -> v exists when w > 0, u preferred to v). The
greedy builds a vertex sequence: repeatedly peel every sink (prepended to the tail list), then every
source (appended to the head list), and when neither remains take the vertex with the largest weighted
out-minus-in degree (appended to the head). Arcs pointing backward in the final sequence form the
feedback arc set; removing them leaves a DAG. Algorithm 1 leaves ties among delta candidates open;
``greedy_fas_order`` / ``denoise`` give them to the lowest vertex index (stacks list models by name,
so: the first name), which makes the DAG depend on the names. The exact minimum is NP-hard; this is
the paper's heuristic.

``expected_descendants_batch`` is the name-independent reading (PGED's default): every delta tie is
broken uniformly at random and the descendant counts are averaged over all tie paths, exactly (each
path weighted by the product of 1/k over its ties among k candidates). Relabelling the vertices
permutes the result and changes nothing else. Sinks and sources are peeled all at once (their order
removes no arc). When a graph has more than ``max_paths`` tie paths (highly symmetric graphs, e.g.
two judges that disagree on every pair: n! paths), that graph uses the stated fallback, also
name-independent: the tied candidates are taken together and every arc into any of them from a live
vertex is removed (so arcs among them go both ways out).

``greedy_fas_order_batch`` runs the same greedy on G graphs at once, one vertex per step: a sink if
any (lowest index), else a source, else the largest delta. That is the same sequence as the nested
loops: removing a source never creates a sink and removing a sink never creates a source, so the
sink loop, then the source loop, then one delta choice is exactly "sink first, source second".
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from engine.graphs.reachability import closure_batch


@dataclass(frozen=True)
class Denoised:
    """The vertex sequence, the kept DAG weights, and the removed (backward) arcs as a bool mask."""

    order: tuple[int, ...]
    dag: np.ndarray
    removed: np.ndarray

    @property
    def removed_weight(self) -> float:
        """Total weight of the removed backward arcs: what denoising discarded."""
        return float(self.removed_weights.sum())

    @property
    def removed_weights(self) -> np.ndarray:
        """(n, n) input weights on the removed arcs, 0 elsewhere."""
        return np.where(self.removed, self._w, 0.0)

    _w: np.ndarray  # the input weights (kept for removed_weights)


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
    """Algorithm 1 on G graphs at once: (orders (G, n), DAG weights (G, n, n), removed arcs (G, n, n)
    bool)."""
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


DELTA_TIES = ("average", "name")
MAX_TIE_PATHS = 2048
TIE_RTOL = 1e-9


def _delta_step(arc: np.ndarray, w: np.ndarray, alive: np.ndarray):
    """One step of the greedy on rows: (live arcs, peel mask, delta-tied candidates, rows that pick)."""
    live = arc & alive[:, None, :] & alive[:, :, None]
    has_out, has_in = live.any(axis=2), live.any(axis=1)
    peel = alive & (~has_out | ~has_in)  # every current sink and source: they stay so until peeled
    live_w = np.where(live, w, 0.0)
    delta = np.where(alive, live_w.sum(axis=2) - live_w.sum(axis=1), -np.inf)
    top = delta.max(axis=1, keepdims=True)
    with np.errstate(invalid="ignore"):
        cand = alive & (delta >= top - TIE_RTOL * np.maximum(1.0, np.abs(top)))
    picks = alive.any(axis=1) & ~peel.any(axis=1)
    return live, peel, cand, picks


def _grouped_descendants(w: np.ndarray) -> np.ndarray:
    """The fallback: tied delta candidates taken together (arcs into any of them from live vertices
    removed)."""
    G, n, _ = w.shape
    arc = w > 0
    alive = np.ones((G, n), dtype=bool)
    removed = np.zeros((G, n, n), dtype=bool)
    for _ in range(n):
        if not alive.any():
            break
        live, peel, cand, picks = _delta_step(arc, w, alive)
        take = cand & picks[:, None]
        removed |= live & take[:, None, :]
        alive &= ~(peel | take)
    return descendant_counts_batch(arc & ~removed).astype(np.float64)


def expected_descendants_batch(w: np.ndarray, max_paths: int = MAX_TIE_PATHS, chunk_cells: int = 40_000_000):
    """Descendant counts averaged over every way of breaking Algorithm 1's delta ties, for G graphs.

    Returns (desc (G, n) float, paths (G,) number of tie paths (1 = no delta tie; 0 = fallback used),
    grouped (G,) bool = more than ``max_paths`` paths, so the grouped fallback of the module docstring
    gave the counts). Paths branch on one array of rows (graph, probability, live vertices, removed
    arcs); a row whose graph reaches ``max_paths`` rows is dropped and its graph recomputed grouped.
    Graphs go in chunks of at most ``chunk_cells`` / (max_paths * n^2) graphs (at least one), so the
    rows' (rows, n, n) arrays stay near ``chunk_cells`` cells whatever the number of graphs.
    """
    w = np.array(w, dtype=np.float64)
    if w.ndim != 3 or w.shape[1] != w.shape[2]:
        raise ValueError(f"expected a (G, n, n) array of arc weights, got shape {w.shape}")
    G, n, _ = w.shape
    w[:, np.arange(n), np.arange(n)] = 0.0
    desc = np.zeros((G, n))
    paths = np.zeros(G, dtype=np.int64)
    grouped = np.zeros(G, dtype=bool)
    step = max(1, chunk_cells // max(1, max_paths * n * n))
    for g0 in range(0, G, step):
        g1 = min(G, g0 + step)
        d, p, o = _expected_chunk(w[g0:g1], max_paths)
        desc[g0:g1], paths[g0:g1], grouped[g0:g1] = d, p, o
    if grouped.any():
        desc[grouped] = _grouped_descendants(w[grouped])
    return desc, paths, grouped


def _expected_chunk(w: np.ndarray, max_paths: int):
    G, n, _ = w.shape
    arc = w > 0
    gid = np.arange(G)
    prob = np.ones(G)
    alive = np.ones((G, n), dtype=bool)
    removed = np.zeros((G, n, n), dtype=bool)
    over = np.zeros(G, dtype=bool)
    for _ in range(n):
        if not alive.any():
            break
        live, peel, cand, picks = _delta_step(arc[gid], w[gid], alive)
        alive = alive & ~peel
        if picks.any():
            k = np.where(picks, cand.sum(axis=1), 1)
            row = np.repeat(np.arange(gid.size), k)
            u = np.where(picks[:, None], cand, np.eye(n, dtype=bool)[0][None].repeat(gid.size, 0))
            u = np.nonzero(u)[1]  # the candidate of each new row (vertex 0, unused, for rows that peel)
            gid, prob, alive, removed, live = (
                gid[row],
                prob[row] / k[row],
                alive[row],
                removed[row],
                live[row],
            )
            pick = picks[row]
            r = np.flatnonzero(pick)
            removed[r, :, u[r]] |= live[r, :, u[r]]
            alive[r, u[r]] = False
            count = np.bincount(gid, minlength=G)
            if (count > max_paths).any():
                over |= count > max_paths
                keep = ~over[gid]
                gid, prob, alive, removed = gid[keep], prob[keep], alive[keep], removed[keep]
    d_rows = descendant_counts_batch(arc[gid] & ~removed).astype(np.float64)
    desc = np.zeros((G, n))
    np.add.at(desc, gid, prob[:, None] * d_rows)
    paths = np.where(over, 0, np.bincount(gid, minlength=G))
    return desc, paths, over
