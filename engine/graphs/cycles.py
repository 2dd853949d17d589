"""Exact short-cycle counts of tournament graphs, batched over a whole stack (paper 000, App. A.2).

Definitions (paper 000, Appendix A.2). ``A`` is a graph's 0/1 adjacency (edge i → j: i beat j or
tied), ``B = A ∘ Aᵀ`` its tie edges. ``C3`` / ``C4`` count the directed simple 3- / 4-cycles of
``A``, each cycle once as a cyclic vertex sequence (a 4-vertex set can carry up to 6 of them: 3
cyclic orders × 2 directions; a tie pair i ↔ j is a 2-cycle and is not counted). ``C3_tie`` /
``C4_tie`` are the same counts on ``B`` (an all-tie triangle is 2 directed 3-cycles in ``B`` and
also 2 in ``A``); ``C3_bad = C3 − C3_tie``, ``C4_bad = C4 − C4_tie``. Missing pairs have no edge.

Closed forms used here (no enumeration; derived below and proved against brute force in
tests/test_cycles.py). For a loopless digraph a closed 3-walk i→j→k→i has i≠j, j≠k, k≠i, so it is
a 3-cycle seen from each of its 3 starting points:

    C3 = tr(A³) / 3.

A closed 4-walk i0→i1→i2→i3→i0 has consecutive vertices distinct; it is a 4-cycle (counted 4
times, once per start) unless i0 = i2 or i1 = i3, and both of those need reciprocal (tie) edges.
With d = row sums of B (tie degrees): walks with i0 = i2 only are Σ_v d_v (d_v − 1) (v = i0 with
two different tie neighbours i1, i3); the same number for i1 = i3 only; walks with both are
i→j→i→j→i, Σ_v d_v of them. Hence

    C4 = (tr(A⁴) − 2 Σ_v d_v² + Σ_v d_v) / 4,

and the same formula on B (whose tie degrees are the same d) gives C4_tie.

Kernel: one product per matrix, everything else elementwise. With P = A², tr(A³) = Σ_ij P_ji A_ij
and tr(A⁴) = Σ_ij P_ij P_ji, so one contiguous copy of Pᵀ turns both traces into row dot products
(no strided einsum); d_v = (A²)_vv (a tie i ↔ v is the 2-walk v→i→v), so the degrees and the
"has a tie" test come free; B = A ∘ Aᵀ elementwise; with Q = B², tr(B³) = Σ Q ∘ B and
tr(B⁴) = Σ Q ∘ Q (B is symmetric), computed only for graphs with a tie. The stack is processed
in chunks of about 256 KiB per float32 operand, so a chunk's arrays stay in the core's cache,
on two threads for large stacks (numpy releases the GIL in these calls) with BLAS itself kept
on one thread.

Exactness: P and Q are formed by float32 BLAS (entries ≤ n, all partial sums are integers
< 2^24); the dot products accumulate in float32 while the closed-walk bound n(n−1)^(k−1) is below
2^24 (n ≤ 64 for k = 4; every partial sum is a non-negative integer no larger than the total, so
the summation order does not matter) and in float64 beyond (exact up to 2^53, n < 9,000), then
are rounded to int64.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pandas as pd

from engine.blas import single_thread_blas
from engine.errors import LensError

COUNT_COLUMNS: tuple[str, ...] = ("c3", "c4", "c3_tie", "c4_tie", "c3_bad", "c4_bad")
_CHUNK_BYTES = 1 << 18
"""Float32 bytes per operand in one chunk of the stack (a few such arrays fit a core's L2)."""
_MIN_WORK_FOR_THREADS = 1 << 24
"""Multiply-adds (T·n³) below which a second thread costs more than it saves (~2,000 graphs at n = 20)."""


def as_adjacency(adj: np.ndarray) -> np.ndarray:
    """Validate a (T, n, n) adjacency stack and return it as bool with an empty diagonal."""
    a = np.asarray(adj)
    if a.ndim != 3 or a.shape[1] != a.shape[2]:
        raise LensError(f"An adjacency stack must have shape (T, n, n); got shape {a.shape}.")
    a = a.astype(bool, copy=True)
    idx = np.arange(a.shape[1])
    a[:, idx, idx] = False
    return a


def _square(a: np.ndarray) -> np.ndarray:
    """Batched A @ A for a (T, n, n) bool stack, exact in float32 (entries ≤ n)."""
    f = a.astype(np.float32)
    return np.matmul(f, f)


def _rowdot(x: np.ndarray, y: np.ndarray, dtype) -> np.ndarray:
    """Σ_ij x[t, i, j] · y[t, i, j] per graph t, both contiguous, accumulated in ``dtype``."""
    t = x.shape[0]
    x = x.reshape(t, -1).astype(dtype, copy=False)
    y = y.reshape(t, -1).astype(dtype, copy=False)
    if _VECDOT is not None:  # numpy >= 2: a plain SIMD dot per row
        return _VECDOT(x, y)
    return np.einsum("tk,tk->t", x, y)


_VECDOT = getattr(np, "vecdot", None)


def _chunk_terms(adj: np.ndarray, out: np.ndarray) -> None:
    """Write tr(A³), tr(A⁴), tr(B³), tr(B⁴), Σ_v d_v, Σ_v d_v² of each graph of a chunk into the
    (6, t) float64 ``out`` (see the module docstring for the identities)."""
    n = adj.shape[1]
    acc = np.float32 if n * (n - 1) ** 3 < 2**24 else np.float64
    f = (adj if adj.dtype == bool else adj.astype(bool)).astype(np.float32)
    idx = np.arange(n)
    f[:, idx, idx] = 0.0  # the diagonal is ignored
    ft = np.ascontiguousarray(f.transpose(0, 2, 1))
    p = np.matmul(f, f)
    pt = np.ascontiguousarray(p.transpose(0, 2, 1))
    out[0] = _rowdot(p, ft, acc)
    out[1] = _rowdot(p, pt, acc)
    out[4] = np.einsum("tii->t", p, dtype=acc)  # (A²)_vv = tie degree d_v
    out[5] = np.einsum("tii,tii->t", p, p, dtype=acc)
    out[2:4] = 0.0
    live = out[4] > 0  # graphs with at least one tie
    if not live.any():
        return
    bf = f * ft  # B = A ∘ Aᵀ
    if not live.all():
        live = np.flatnonzero(live)
        bf = bf[live]
    q = np.matmul(bf, bf)
    out[2, live] = _rowdot(q, bf, acc)
    out[3, live] = _rowdot(q, q, acc)


def _trace_terms(a: np.ndarray, threads: int | None = None) -> np.ndarray:
    """(6, T) float64: tr(A³), tr(A⁴), tr(B³), tr(B⁴), Σ d, Σ d² per graph, chunk by chunk.

    ``threads``: None picks 2 for a large stack (T·n³ ≥ 2^24, several chunks) on a machine with
    two cores or more, else 1.
    """
    T, n = a.shape[0], a.shape[1]
    out = np.zeros((6, T))
    if T == 0 or n == 0:
        return out
    chunk = max(1, _CHUNK_BYTES // (4 * n * n))
    starts = range(0, T, chunk)
    if threads is None:
        threads = 2 if T * n**3 >= _MIN_WORK_FOR_THREADS and (os.cpu_count() or 1) >= 2 else 1
    with single_thread_blas():
        if threads <= 1 or len(starts) < 2:
            for s in starts:
                _chunk_terms(a[s:s + chunk], out[:, s:s + chunk])
        else:
            with ThreadPoolExecutor(max_workers=threads) as pool:
                list(pool.map(lambda s: _chunk_terms(a[s:s + chunk], out[:, s:s + chunk]), starts))
    return out


def _to_int(x: np.ndarray) -> np.ndarray:
    return np.rint(x).astype(np.int64)


def cycle_counts_arrays(adj: np.ndarray, *, threads: int | None = None) -> dict[str, np.ndarray]:
    """C3, C4, C3_tie, C4_tie, C3_bad, C4_bad for every graph of a (T, n, n) bool stack.

    Returns a dict of int64 arrays of length T keyed by ``COUNT_COLUMNS``. The diagonal of
    ``adj`` is ignored; a pair with edges both ways is a tie (paper 000, Appendix A.2).
    ``threads``: worker threads over chunks of the stack (None: 2 for large stacks of n ≤ 64).
    """
    a = np.asarray(adj)
    if a.ndim != 3 or a.shape[1] != a.shape[2]:
        raise LensError(f"An adjacency stack must have shape (T, n, n); got shape {a.shape}.")
    tr3, tr4, tr3b, tr4b, sum_d, sum_d2 = _trace_terms(a, threads)
    deg_term = 2 * sum_d2 - sum_d
    c3 = _to_int(tr3 / 3.0)
    c4 = _to_int((tr4 - deg_term) / 4.0)
    c3t = _to_int(tr3b / 3.0)
    c4t = _to_int((tr4b - deg_term) / 4.0)
    return {"c3": c3, "c4": c4, "c3_tie": c3t, "c4_tie": c4t, "c3_bad": c3 - c3t, "c4_bad": c4 - c4t}


def cycle_counts(graphs) -> pd.DataFrame:
    """One row per graph of a GraphStack or GraphBuckets (key order, index 0..T-1), int64
    ``COUNT_COLUMNS``; computed per size bucket over each graph's own models (graphs of fewer than
    3 models hold no cycle and are not computed)."""
    from engine.graphs.buckets import as_buckets

    b = as_buckets(graphs)
    out = {c: np.zeros(b.T, dtype=np.int64) for c in COUNT_COLUMNS}
    for bk in b.at_least(3):
        counts = cycle_counts_arrays(bk.adj)
        for c in COUNT_COLUMNS:
            out[c][bk.graph] = counts[c]
    return pd.DataFrame(out, index=pd.RangeIndex(b.T))


def cycle_capacity(graphs) -> pd.DataFrame:
    """Per graph (key order): ``cap3`` / ``cap4``, the bad 3- / 4-cycles its compared pairs could
    carry at most, whatever the outcomes: a bad 3-cycle needs a fully compared triple (it carries
    at most one: engine/graphs/triads.py) and a bad 4-cycle an undirected 4-cycle of compared pairs (at
    most one: a strict edge fixes the direction). Counted with the closed forms above on the
    symmetric compared-pair matrix O, where every undirected cycle is two directed ones."""
    from engine.graphs.buckets import as_buckets

    b = as_buckets(graphs)
    cap3 = np.zeros(b.T, dtype=np.int64)
    cap4 = np.zeros(b.T, dtype=np.int64)
    for bk in b.at_least(3):
        adj = np.asarray(bk.adj, dtype=bool)
        o = np.asarray(bk.observed, dtype=bool) & (adj | adj.swapaxes(1, 2))
        counts = cycle_counts_arrays(o)
        cap3[bk.graph] = counts["c3"] // 2
        cap4[bk.graph] = counts["c4"] // 2
    return pd.DataFrame({"cap3": cap3, "cap4": cap4}, index=pd.RangeIndex(b.T))


def vertex_cycle_counts(adj: np.ndarray) -> dict[str, np.ndarray]:
    """Per-vertex directed 3-cycle counts: (T, n) int64 ``c3``, ``c3_tie``, ``c3_bad``.

    ``(A³)_vv`` counts the directed 3-cycles through v once each (starting at v); the same on B
    gives the tie cycles, and the difference is the number of bad triads containing v (each
    non-transitive triad carries exactly one non-tie directed 3-cycle, see engine/graphs/triads.py).
    """
    a = as_adjacency(adj)
    b = a & a.swapaxes(1, 2)
    out = {}
    for name, m in (("c3", a), ("c3_tie", b)):
        m2 = _square(m).astype(np.float64)
        out[name] = _to_int(np.einsum("tij,tji->ti", m2, m.astype(np.float64)))
    out["c3_bad"] = out["c3"] - out["c3_tie"]
    return out


def pair_cycle_counts(adj: np.ndarray) -> dict[str, np.ndarray]:
    """Per-pair directed 3-cycle counts: (T, n, n) symmetric int64 ``c3``, ``c3_tie``, ``c3_bad``.

    A directed 3-cycle on {i, j, k} uses exactly one of the edges i→j, j→i; the cycles through
    i→j are A_ij (A²)_ji. Summing both directions gives the cycles containing the pair {i, j}.
    """
    a = as_adjacency(adj)
    b = a & a.swapaxes(1, 2)
    out = {}
    for name, m in (("c3", a), ("c3_tie", b)):
        m2 = _square(m)
        through = m.astype(np.float32) * m2.swapaxes(1, 2)
        out[name] = _to_int(through + through.swapaxes(1, 2))
    out["c3_bad"] = out["c3"] - out["c3_tie"]
    return out
