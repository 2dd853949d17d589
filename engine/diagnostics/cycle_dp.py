"""Exact counts of directed simple cycles of every length, batched over graphs by a subset DP.

A directed simple cycle is counted once, from its lowest vertex s: ``paths[S, v]`` is the number of
simple paths that start at s = min(S), visit exactly the vertex set S and end at v. Extending a path
by an edge v → w with w ∉ S and w > s gives ``paths[S ∪ {w}, w]``; closing it by the edge v → s gives
the number of Hamiltonian cycles of the subgraph on S, i.e. the cycles whose vertex set is S. Summing
those per subset size gives the length distribution, and summing them over the subsets holding a
vertex gives its participation. The work is O(2^k · k²) per graph of k vertices; the subsets are
processed a size layer at a time for a whole batch of graphs (one batched matrix product per layer),
so there is no Python loop over graphs or cycles. Path counts stay below (k − 1)! and are exact in
float64 for k ≤ 16.
"""

from __future__ import annotations

import functools

import numpy as np

MAX_VERTICES = 16
"""Beyond this the float64 path counts could lose exactness (and 2^k blows up anyway)."""


@functools.lru_cache(maxsize=32)
def _layers(k: int) -> tuple[tuple[np.ndarray, ...], np.ndarray, np.ndarray]:
    """Masks of each popcount (sorted), each mask's position inside its layer, and its lowest bit."""
    masks = np.arange(1 << k, dtype=np.int64)
    bits = (masks[:, None] >> np.arange(k)) & 1
    size = bits.sum(axis=1)
    low = np.where(masks > 0, np.argmax(bits, axis=1), -1)
    layers = tuple(masks[size == c] for c in range(k + 1))
    pos = np.zeros(1 << k, dtype=np.int64)
    for layer in layers:
        pos[layer] = np.arange(len(layer))
    return layers, pos, low


@functools.lru_cache(maxsize=32)
def _gather(k: int, c: int) -> tuple[np.ndarray, np.ndarray]:
    """For layer c + 1: where ``paths[S, w]`` comes from in layer c (S − {w}; −1 where w ∉ S or
    w = min S), and the membership matrix (|layer c + 1|, k) of its masks."""
    layers, pos, low = _layers(k)
    nxt = layers[c + 1]
    w = np.arange(k)
    member = ((nxt[:, None] >> w) & 1).astype(bool)
    valid = member & (w[None, :] != low[nxt][:, None])
    src = np.where(valid, pos[nxt[:, None] ^ (1 << w)[None, :]], -1)
    return src, member


def cycles_by_length(adj: np.ndarray, max_length: int | None = None, *,
                     chunk_cells: int = 20_000_000) -> tuple[np.ndarray, np.ndarray]:
    """Directed simple cycles of length 3..max_length of each graph of a (T, k, k) bool stack.

    Returns (lengths (T, k + 1) int64, lengths[t, c] = cycles of length c; through (T, k) int64,
    cycles of length ≤ max_length through each vertex). The diagonal is ignored."""
    a = np.asarray(adj, dtype=bool)
    T, k = a.shape[0], a.shape[-1]
    if k > MAX_VERTICES:
        raise ValueError(f"cycles_by_length handles at most {MAX_VERTICES} vertices; got {k}.")
    top = k if max_length is None else min(int(max_length), k)
    lengths = np.zeros((T, k + 1), dtype=np.int64)
    through = np.zeros((T, k), dtype=np.int64)
    if T == 0 or top < 3:
        return lengths, through
    layers, _pos, low = _layers(k)
    widest = max(len(layers[c]) for c in range(1, top + 1))
    step = max(1, chunk_cells // (widest * k))
    af = (a & ~np.eye(k, dtype=bool)).astype(np.float64)
    for t0 in range(0, T, step):  # memory chunks of whole graphs
        A = af[t0:t0 + step]
        B = len(A)
        paths = np.zeros((B, k, k))  # layer 1: the single-vertex paths {s} ending at s
        paths[:, np.arange(k), np.arange(k)] = 1.0
        for c in range(1, top):
            ext = paths @ A  # ext[t, S, w]: paths over S ending anywhere, then an edge to w
            ext = np.concatenate([ext, np.zeros((B, 1, k))], axis=1)  # row −1: zero
            src, member = _gather(k, c)
            paths = ext[:, src, np.arange(k)[None, :]]  # (B, |layer c + 1|, k)
            size = c + 1
            if size >= 3:
                lo = low[layers[size]]
                back = A[:, :, lo]  # (B, k, |layer|): edge v → min S
                per_set = np.rint(np.einsum("tsv,tvs->ts", paths, back)).astype(np.int64)
                lengths[t0:t0 + B, size] = per_set.sum(axis=1)
                through[t0:t0 + B] += per_set @ member.astype(np.int64)
    return lengths, through


