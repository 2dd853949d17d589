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

and the same formula on B (whose tie degrees are the same d) gives C4_tie. Traces come from one
matrix product per graph: tr(A³) = Σ_ij (A²)_ij A_ji and tr(A⁴) = Σ_ij (A²)_ij (A²)_ji.

Exactness: A² is formed by float32 BLAS (entries ≤ n, all partial sums are integers < 2^24); the
trace sums accumulate in float32 while the closed-walk bound n(n−1)^(k−1) is below 2^24 (n ≤ 64
for k = 4) and in float64 beyond (exact up to 2^53, n < 9,000), then are rounded to int64.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .errors import LensError

COUNT_COLUMNS: tuple[str, ...] = ("c3", "c4", "c3_tie", "c4_tie", "c3_bad", "c4_bad")


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


def _trace_terms(a: np.ndarray, symmetric: bool = False) -> tuple[np.ndarray, ...]:
    """(tr(A³), tr(A⁴), Σ_v d_v, Σ_v d_v²) per graph as float64, from one batched float32 A².

    Graphs without a single edge are skipped (their terms are 0): for the tie matrix B this
    leaves out most of a typical stack at no cost. For a symmetric 0/1 matrix (B) the diagonal
    of B² is the degree vector d (returned summed and squared-summed; zeros when not symmetric),
    and the traces read B² row-wise.
    """
    T, n = a.shape[0], a.shape[1]
    tr3, tr4, sum_d, sum_d2 = np.zeros(T), np.zeros(T), np.zeros(T), np.zeros(T)
    live = np.flatnonzero(a.any(axis=(1, 2)))
    if live.size == 0:
        return tr3, tr4, sum_d, sum_d2
    f = (a if live.size == T else a[live]).astype(np.float32)
    a2 = np.matmul(f, f)
    # Every partial sum is an integer no larger than the closed-walk count n(n−1)^(k−1); float32
    # holds those exactly below 2^24, so accumulate in float32 while that bound allows.
    acc3 = np.float32 if n * (n - 1) ** 2 < 2**24 else np.float64
    acc4 = np.float32 if n * (n - 1) ** 3 < 2**24 else np.float64
    spec = "tij,tij->t" if symmetric else "tij,tji->t"  # contiguous reads when Aᵀ = A
    tr3[live] = np.einsum(spec, a2, f, dtype=acc3)
    tr4[live] = np.einsum(spec, a2, a2, dtype=acc4)
    if symmetric:
        d = np.diagonal(a2, axis1=1, axis2=2).astype(np.float64)
        sum_d[live] = d.sum(axis=1)
        sum_d2[live] = (d * d).sum(axis=1)
    return tr3, tr4, sum_d, sum_d2


def _to_int(x: np.ndarray) -> np.ndarray:
    return np.rint(x).astype(np.int64)


def cycle_counts_arrays(adj: np.ndarray) -> dict[str, np.ndarray]:
    """C3, C4, C3_tie, C4_tie, C3_bad, C4_bad for every graph of a (T, n, n) bool stack.

    Returns a dict of int64 arrays of length T keyed by ``COUNT_COLUMNS``. The diagonal of
    ``adj`` is ignored; a pair with edges both ways is a tie (paper 000, Appendix A.2).
    """
    a = as_adjacency(adj)
    b = a & a.swapaxes(1, 2)
    tr3, tr4, _, _ = _trace_terms(a)
    tr3b, tr4b, sum_d, sum_d2 = _trace_terms(b, symmetric=True)  # d_v = (B²)_vv
    deg_term = 2 * sum_d2 - sum_d
    c3 = _to_int(tr3 / 3.0)
    c4 = _to_int((tr4 - deg_term) / 4.0)
    c3t = _to_int(tr3b / 3.0)
    c4t = _to_int((tr4b - deg_term) / 4.0)
    return {"c3": c3, "c4": c4, "c3_tie": c3t, "c4_tie": c4t, "c3_bad": c3 - c3t, "c4_bad": c4 - c4t}


def cycle_counts(stack) -> pd.DataFrame:
    """One row per graph of a GraphStack (stack order, index 0..T-1), int64 ``COUNT_COLUMNS``."""
    counts = cycle_counts_arrays(stack.adj)
    return pd.DataFrame({c: counts[c] for c in COUNT_COLUMNS}, index=pd.RangeIndex(stack.T))


def vertex_cycle_counts(adj: np.ndarray) -> dict[str, np.ndarray]:
    """Per-vertex directed 3-cycle counts: (T, n) int64 ``c3``, ``c3_tie``, ``c3_bad``.

    ``(A³)_vv`` counts the directed 3-cycles through v once each (starting at v); the same on B
    gives the tie cycles, and the difference is the number of bad triads containing v (each
    non-transitive triad carries exactly one non-tie directed 3-cycle, see engine/triads.py).
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
