"""Exact minimum weighted feedback arc set by dynamic programming over vertex subsets.

Why: PGED denoises a preference graph by removing a feedback arc set (engine.graphs.denoise runs the
greedy of paper 002's Algorithm 1). The greedy is a heuristic: it can remove more arc weight than
needed. This module finds the true minimum, for graphs small enough, so PGED can use it
(``fas="exact"``) and ``diagnose`` can report how far the greedy is from it.

Input: non-negative weights ``w[u, v]`` (an arc u -> v exists when w > 0; u preferred to v). A vertex
order keeps the arcs that point forward and removes the backward ones; every minimum feedback arc set
is the backward arc set of some order, so the minimum is the cheapest order. With ``F[S]`` the least
backward weight among orders of the vertex subset S alone,

    F[{}] = 0,   F[S] = min over v in S of  F[S - v] + sum_{s in S - v} w[v, s]

(v placed last in S: its arcs to the earlier vertices of S point backward). F[all vertices] is the
minimum. The table has 2^n entries and each costs n terms, so time is O(2^n n^2) with the cost sums
done as one matrix product per layer of subsets of equal size, and memory O(2^n) per graph plus one
layer's (subsets, n) arrays. ``EXACT_FAS_MAX_N`` = 20 bounds it (measured in docs/notes/fas-25.md).

Only vertices with at least one arc take part: an isolated vertex removes no arc wherever it goes, so
the size that counts against the limit is the number of vertices that touch an arc.

Several orders may reach the minimum, and several minimum arc sets may exist. ``count`` is how many
optimal orders of the vertices with arcs there are (the same recurrence, summing the counts of the
optimal choices). Two rules pick the DAG that is kept: the representative order (at each position,
the lowest-index vertex that can start an optimal completion: with models listed by name, ties go to
the first name), and the average over every distinct minimum arc set, each equally likely
(``exact_descendants_batch``), which does not depend on the names. Every minimum arc set F is the
backward set of each topological order of the DAG it leaves (such an order's backward arcs lie in F,
and cost no less than F), so enumerating optimal orders reaches every minimum set; two adjacent
vertices with no arc between them can be swapped without changing the backward set, so only one of
the two orders is enumerated, and repeated sets are then removed. In a tournament (every pair joined
by an arc) optimal orders and minimum sets correspond one to one.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from engine.graphs.denoise import descendant_counts_batch

EXACT_FAS_MAX_N = 20
"""The most vertices with arcs that the exact subset DP takes (2^20 subsets: about 1 s and 0.2 GB,
docs/notes/fas-25.md); larger graphs use the greedy (the callers say so)."""

MAX_ENUMERATED_ORDERS = 2048
"""When enumerating the minimum arc sets of a graph needs more than this many optimal orders at once,
``exact_descendants_batch`` uses the representative order for that graph (and says so)."""

COST_RTOL = 1e-9
"""Two order costs within this relative tolerance are equal (weights are sums of float graph weights)."""

_DP_CELLS = 1 << 22
"""Graphs go through the DP in chunks of about this many (graph, subset, vertex) cells (32 MB of float64
per array), and row arrays of the enumeration stay near this many (row, vertex, vertex) cells."""

_ENUM_GRAPHS = 64
"""Graphs enumerated together for their minimum arc sets (rows: at most this times the row cap)."""


@dataclass(frozen=True)
class MinFas:
    """The exact minimum of G graphs: ``weight`` (G,) removed weight, ``n_arcs`` (G,) removed arcs of
    the representative order, ``count`` (G,) optimal orders (float: can exceed 2^53 in principle),
    ``order`` (G, n) the representative orders, ``removed`` (G, n, n) its backward arcs, and
    ``solved`` (G,) False where the graph had more than ``max_n`` vertices with arcs (then every other
    field of that graph is NaN / -1 / False)."""

    weight: np.ndarray
    n_arcs: np.ndarray
    count: np.ndarray
    order: np.ndarray
    removed: np.ndarray
    solved: np.ndarray


def _clean(w: np.ndarray) -> np.ndarray:
    w = np.array(w, dtype=np.float64)
    if w.ndim != 3 or w.shape[1] != w.shape[2]:
        raise ValueError(f"expected a (G, n, n) array of arc weights, got shape {w.shape}")
    if (w < 0).any() or not np.isfinite(w).all():
        raise ValueError("arc weights must be finite and non-negative")
    n = w.shape[1]
    w[:, np.arange(n), np.arange(n)] = 0.0
    return w


def active_vertices(w: np.ndarray) -> np.ndarray:
    """(G, n) bool: the vertices with at least one arc (in or out) in each graph of (G, n, n) weights."""
    arc = np.asarray(w) > 0
    return np.asarray(arc.any(axis=2) | arc.any(axis=1), dtype=bool)


def _subset_tables(w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """F (G, 2^k) least backward weight per subset and C (G, 2^k) number of orders reaching it, for
    (G, k, k) weights over k vertices (all of them active)."""
    G, k, _ = w.shape
    size = 1 << k
    masks = np.arange(size, dtype=np.int64)
    vbit = np.int64(1) << np.arange(k, dtype=np.int64)
    bits = (masks[:, None] & vbit[None, :]) != 0
    pop = bits.sum(axis=1)
    F = np.full((G, size), np.inf)
    C = np.zeros((G, size))
    F[:, 0] = 0.0
    C[:, 0] = 1.0
    wt = w.swapaxes(1, 2)
    for layer in range(1, k + 1):
        T = masks[pop == layer]
        inside = bits[T]  # (L, k): v in T
        # c[g, l, v] = sum over s in T of w[g, v, s]: v's arcs to the others of T (w's diagonal is 0)
        c = inside.astype(np.float64)[None] @ wt
        prev_idx = T[:, None] ^ vbit[None, :]  # T - v for v in T (a superset of T otherwise: masked)
        tot = np.where(inside[None], F[:, prev_idx] + c, np.inf)
        best = tot.min(axis=2)
        F[:, T] = best
        tol = COST_RTOL * np.maximum(1.0, np.abs(best))
        opt = inside[None] & (tot <= (best + tol)[:, :, None])
        C[:, T] = np.where(opt, C[:, prev_idx], 0.0).sum(axis=2)
    return F, C


def _first_choices(w: np.ndarray, F: np.ndarray, gid: np.ndarray, rest: np.ndarray) -> np.ndarray:
    """(R, k) bool: vertices v of the remaining set ``rest`` (R,) that can come next in an optimal order
    of rows whose graphs are ``gid`` (R,): F[rest - v] + (arcs from the rest into v) == F[rest]."""
    k = w.shape[1]
    vbit = np.int64(1) << np.arange(k, dtype=np.int64)
    inside = (rest[:, None] & vbit[None, :]) != 0
    into = np.empty(inside.shape)  # arcs s -> v from the vertices s still to come
    step = max(1, _DP_CELLS // max(1, k * k))
    for a in range(0, gid.size, step):
        into[a:a + step] = np.einsum("rs,rsv->rv", inside[a:a + step].astype(np.float64), w[gid[a:a + step]])
    after = F[gid[:, None], rest[:, None] ^ vbit[None, :]]
    tot = np.where(inside, after + into, np.inf)
    here = F[gid, rest]
    return inside & (tot <= (here + COST_RTOL * np.maximum(1.0, np.abs(here)))[:, None])


def _representative_orders(w: np.ndarray, F: np.ndarray) -> np.ndarray:
    """(G, k) the optimal order taking, at each position, the lowest-index vertex that can come next."""
    G, k, _ = w.shape
    gid = np.arange(G)
    rest = np.full(G, (1 << k) - 1, dtype=np.int64)
    order = np.empty((G, k), dtype=np.int64)
    for pos in range(k):
        v = np.argmax(_first_choices(w, F, gid, rest), axis=1)
        order[:, pos] = v
        rest ^= np.int64(1) << v
    return order


def _canonical_optimal_orders(
    w: np.ndarray, F: np.ndarray, graphs: np.ndarray, max_rows: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Optimal orders of the listed graphs, enough to reach every minimum arc set: (graph of each row
    (R,), order (R, k), over (G,) bool = graphs dropped for needing more than ``max_rows`` rows).

    Two adjacent vertices with no arc between them may come in either order at the same cost and with
    the same backward arcs, so only the order with the lower index first is kept. Every minimum arc set
    F still appears: the order that always takes the lowest-index vertex with no kept arc into it from
    the vertices still to come orders such a pair by index. Rows can still repeat an arc set (the caller
    removes repeats)."""
    G, k, _ = w.shape
    joined = (w > 0) | (w > 0).swapaxes(1, 2)
    gid = np.asarray(graphs, dtype=np.int64)
    rest = np.full(gid.size, (1 << k) - 1, dtype=np.int64)
    order = np.empty((gid.size, 0), dtype=np.int64)
    over = np.zeros(G, dtype=bool)
    for pos in range(k):
        ok = _first_choices(w, F, gid, rest)
        if pos:
            last = order[:, -1]
            free = ~joined[gid, last]  # (R, k): no arc between the last placed vertex and v
            ok &= ~(free & (np.arange(k)[None, :] < last[:, None]))
        row, v = np.nonzero(ok)
        gid, rest = gid[row], rest[row] ^ (np.int64(1) << v)
        order = np.concatenate([order[row], v[:, None]], axis=1)
        big = np.bincount(gid, minlength=G) > max_rows
        if big.any():
            over |= big
            keep = ~big[gid]
            gid, rest, order = gid[keep], rest[keep], order[keep]
    return gid, order, over


def _backward(w: np.ndarray, order: np.ndarray) -> np.ndarray:
    """(R, k, k) bool: arcs of w (R, k, k) that point backward in the orders (R, k)."""
    R, k = order.shape
    pos = np.empty_like(order)
    np.put_along_axis(pos, order, np.broadcast_to(np.arange(k), (R, k)).copy(), axis=1)
    return (w > 0) & (pos[:, :, None] > pos[:, None, :])


def _by_size(w: np.ndarray, max_n: int):
    """Group graphs by their number of active vertices k <= max_n: yields (graph indices, vertex indices
    (G_k, k) ascending, the (G_k, k, k) weights among them), in chunks that keep the DP table bounded."""
    act = active_vertices(w)
    k_of = act.sum(axis=1)
    for k in np.unique(k_of):
        if k > max_n:
            continue
        g = np.flatnonzero(k_of == k)
        idx = np.sort(np.argsort(~act[g], axis=1, kind="stable")[:, :k], axis=1)
        step = max(1, _DP_CELLS // ((1 << int(k)) * max(1, int(k))))
        for a in range(0, g.size, step):
            gs, ix = g[a:a + step], idx[a:a + step]
            yield gs, ix, w[gs[:, None, None], ix[:, :, None], ix[:, None, :]]


def min_fas_batch(w: np.ndarray, max_n: int = EXACT_FAS_MAX_N) -> MinFas:
    """The exact minimum weighted feedback arc set of each of G graphs (G, n, n) with at most ``max_n``
    vertices with arcs (module docstring); graphs above it are left unsolved (``solved`` False)."""
    w = _clean(w)
    G, n, _ = w.shape
    weight = np.full(G, np.nan)
    n_arcs = np.full(G, -1, dtype=np.int64)
    count = np.full(G, np.nan)
    order = np.full((G, n), -1, dtype=np.int64)
    removed = np.zeros((G, n, n), dtype=bool)
    solved = np.zeros(G, dtype=bool)
    for gs, ix, sub in _by_size(w, max_n):
        k = ix.shape[1]
        F, C = _subset_tables(sub)
        rep = _representative_orders(sub, F)
        back = _backward(sub, rep)
        weight[gs], count[gs], solved[gs] = F[:, -1], C[:, -1], True
        n_arcs[gs] = back.sum(axis=(1, 2))
        removed[gs[:, None, None], ix[:, :, None], ix[:, None, :]] = back
        full = ix[np.arange(gs.size)[:, None], rep]  # the active vertices in order, then the isolated ones
        for r, g in enumerate(gs):
            rest = np.setdiff1d(np.arange(n), ix[r], assume_unique=True)
            order[g] = np.concatenate([full[r], rest]) if k < n else full[r]
    return MinFas(weight, n_arcs, count, order, removed, solved)


def _distinct(gid: np.ndarray, kept: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rows of (graph, kept arc set) with repeats removed: (graph (U,), kept (U, k, k))."""
    packed = np.packbits(kept.reshape(kept.shape[0], -1), axis=1)
    key = np.concatenate([gid[:, None].astype(">i8").view(np.uint8), packed], axis=1)
    _, first = np.unique(np.ascontiguousarray(key).view(f"V{key.shape[1]}").ravel(), return_index=True)
    return gid[first], kept[first]


def exact_descendants_batch(
    w: np.ndarray, max_n: int = EXACT_FAS_MAX_N, max_sets: int = MAX_ENUMERATED_ORDERS
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Descendant counts in the DAG left by a minimum feedback arc set, for G graphs (G, n, n).

    Every minimum arc set counts equally: desc = mean over the distinct minimum feedback arc sets of
    the descendants in the DAG they leave. Returns (desc (G, n) float, sets (G,) the number of
    minimum arc sets averaged over (0 where another rule gave the counts), representative (G,) bool =
    the enumeration needed more than ``max_sets`` rows (``_canonical_optimal_orders``), so the
    representative order's DAG gave the counts, solved (G,) bool = at most ``max_n`` vertices with
    arcs; unsolved graphs get NaN counts for the caller to fill, e.g. with the greedy).
    ``max_sets=0`` uses the representative order for every graph.
    """
    w = _clean(w)
    G, n, _ = w.shape
    desc = np.full((G, n), np.nan)
    sets = np.zeros(G, dtype=np.int64)
    rep_used = np.zeros(G, dtype=bool)
    solved = np.zeros(G, dtype=bool)
    for gs, ix, sub in _by_size(w, max_n):
        F, _ = _subset_tables(sub)
        local = np.zeros((gs.size, ix.shape[1]))
        few = np.zeros(gs.size, dtype=bool)
        k = ix.shape[1]
        step = max(1, _DP_CELLS // max(1, k * k))
        for e0 in range(0, gs.size if max_sets > 0 else 0, _ENUM_GRAPHS):
            e = np.arange(e0, min(gs.size, e0 + _ENUM_GRAPHS))
            gid, order, over = _canonical_optimal_orders(sub, F, e, max_sets)
            few[e] = ~over[e]
            parts = []
            for a in range(0, gid.size, step):  # rows' (R, k, k) arrays stay bounded
                g_a, o_a = gid[a:a + step], order[a:a + step]
                parts.append(_distinct(g_a, (sub[g_a] > 0) & ~_backward(sub[g_a], o_a)))
            if not parts:
                continue
            g_u, kept = _distinct(np.concatenate([g for g, _ in parts]),
                                  np.concatenate([kp for _, kp in parts]))
            count = np.bincount(g_u, minlength=gs.size)
            for a in range(0, g_u.size, step):
                g_a = g_u[a:a + step]
                np.add.at(local, g_a, descendant_counts_batch(kept[a:a + step]) / count[g_a, None])
            sets[gs[e]] = np.where(few[e], count[e], 0)
        if (~few).any():
            rows = np.flatnonzero(~few)
            rep = _representative_orders(sub[rows], F[rows])
            kept = (sub[rows] > 0) & ~_backward(sub[rows], rep)
            local[rows] = descendant_counts_batch(kept)
            rep_used[gs[rows]] = max_sets > 0
        out = np.zeros((gs.size, n))
        out[np.arange(gs.size)[:, None], ix] = local
        desc[gs] = out
        solved[gs] = True
    return desc, sets, rep_used, solved
