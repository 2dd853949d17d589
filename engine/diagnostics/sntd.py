"""Soft non-transitivity deviation SNTD (paper 001, eq. 3-5 and Appendix B.4), per model triple.

For a triple (a, b, c) in one graph with judge probabilities φ_xy = P(x beats y) on all three
pairs (``GraphStack.soft``: the mean over verdicts, so both presentation orders are averaged when
present), Bradley-Terry gives the quality gap s_xy = logit φ_xy. Under transitivity the third pair
is implied by the other two: φ̂_xy = σ(s_xz − s_yz). SNTD is the mean over the three pairs of the
Jensen-Shannon divergence between the Bernoulli laws (φ_xy, 1 − φ_xy) and (φ̂_xy, 1 − φ̂_xy).
It is 0 for an exactly transitive triple and does not depend on how the triple is ordered.
Order averaging: we average the probabilities of both presentation orders first (issue 5) and take
one JSD of the averaged φ; paper 001's eq. 3 puts the expectation outside, E[JSD(φ ‖ φ̂)] over the
judge's randomness (orders). The two agree when both orders give the same probabilities and differ
otherwise (φ̂ is not linear in φ, and the JSD is convex).
The logarithm base is a parameter (the paper does not state it; default 2, so JSD ≤ 1 bit).
Probabilities are clipped to [eps, 1 − eps] so that 0/1 outputs give finite gaps.
"""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd


def triple_index(n: int) -> np.ndarray:
    """(K, 3) int: every vertex triple a < b < c of n vertices."""
    if n < 3:
        return np.zeros((0, 3), dtype=np.int64)
    return np.array(list(itertools.combinations(range(n), 3)), dtype=np.int64)


def bernoulli_jsd(p: np.ndarray, q: np.ndarray, base: float = 2.0) -> np.ndarray:
    """Jensen-Shannon divergence between Bernoulli(p) and Bernoulli(q), elementwise."""
    p = np.asarray(p, dtype=np.float64)
    q = np.asarray(q, dtype=np.float64)
    m = 0.5 * (p + q)

    def _kl_terms(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(x > 0, x * np.log(np.where(x > 0, x, 1.0) / np.where(y > 0, y, 1.0)), 0.0)

    kl_pm = _kl_terms(p, m) + _kl_terms(1 - p, 1 - m)
    kl_qm = _kl_terms(q, m) + _kl_terms(1 - q, 1 - m)
    return np.maximum(0.5 * (kl_pm + kl_qm), 0.0) / np.log(base)


def sntd_arrays(soft: np.ndarray, *, eps: float = 1e-6, base: float = 2.0) -> tuple[np.ndarray, np.ndarray]:
    """(T, K) SNTD of every triple of ``triple_index(n)`` in every graph, and (K, 3) the triples.
    Triples with a pair lacking a probability are NaN."""
    s = np.asarray(soft, dtype=np.float64)
    n = s.shape[-1]
    tri = triple_index(n)
    if len(tri) == 0:
        return np.zeros((s.shape[0], 0)), tri
    a, b, c = tri[:, 0], tri[:, 1], tri[:, 2]
    p_ab = np.clip(s[:, a, b], eps, 1 - eps)
    p_bc = np.clip(s[:, b, c], eps, 1 - eps)
    p_ac = np.clip(s[:, a, c], eps, 1 - eps)
    logit = lambda p: np.log(p) - np.log1p(-p)  # noqa: E731
    sig = lambda x: 0.5 * (1.0 + np.tanh(0.5 * x))  # noqa: E731 - overflow-free logistic
    s_ab, s_bc, s_ac = logit(p_ab), logit(p_bc), logit(p_ac)
    hat_ab = sig(s_ac - s_bc)  # via c: s_ac - s_bc = γa - γb
    hat_bc = sig(s_ac - s_ab)  # via a: s_ba - s_ca = γb - γc
    hat_ac = sig(s_ab + s_bc)  # via b
    val = (bernoulli_jsd(p_ab, hat_ab, base) + bernoulli_jsd(p_bc, hat_bc, base) + bernoulli_jsd(p_ac, hat_ac, base)) / 3.0
    missing = np.isnan(s[:, a, b]) | np.isnan(s[:, b, c]) | np.isnan(s[:, a, c])
    return np.where(missing, np.nan, val), tri


def sntd_triples(stack, *, eps: float = 1e-6, base: float = 2.0) -> pd.DataFrame:
    """One row per graph and model triple with probabilities on all three pairs: key columns,
    graph (position in the stack), model_a < model_b < model_c (by stack order), sntd.
    ``stack``: a GraphStack or GraphBuckets (each graph's triples over its own models)."""
    from ..graph_buckets import as_buckets

    b = as_buckets(stack)
    g_all, tri_all, val_all = [], [], []
    for bk in b.at_least(3):
        if bk.soft is None:
            continue
        val, tri = sntd_arrays(bk.soft, eps=eps, base=base)
        t_idx, k_idx = np.nonzero(~np.isnan(val))
        g_all.append(bk.graph[t_idx])
        tri_all.append(np.take_along_axis(bk.members[t_idx], tri[k_idx], axis=1))
        val_all.append(val[t_idx, k_idx])
    g = np.concatenate(g_all) if g_all else np.zeros(0, np.int64)
    glob = np.concatenate(tri_all) if tri_all else np.zeros((0, 3), np.int64)
    val = np.concatenate(val_all) if val_all else np.zeros(0)
    order = np.lexsort((glob[:, 2], glob[:, 1], glob[:, 0], g))
    g, glob, val = g[order], glob[order], val[order]
    models = np.array(b.models, dtype=object)
    keys = b.keys.reset_index(drop=True)
    out = keys.iloc[g].reset_index(drop=True)
    out.insert(0, "graph", g.astype(np.int64))
    out["model_a"] = models[glob[:, 0]] if len(g) else []
    out["model_b"] = models[glob[:, 1]] if len(g) else []
    out["model_c"] = models[glob[:, 2]] if len(g) else []
    out["sntd"] = val
    return out


def sntd_summary(stack, by: tuple[str, ...] = ("judge",), *, eps: float = 1e-6, base: float = 2.0) -> pd.DataFrame:
    """Per group: soft triples and mean SNTD (paper 001, Table 1 style aggregate)."""
    t = sntd_triples(stack, eps=eps, base=base)
    cols = [*by, "soft_triples", "sntd_mean"]
    if t.empty:
        return pd.DataFrame(columns=cols)
    out = t.groupby(list(by), sort=True, dropna=False).agg(soft_triples=("sntd", "size"), sntd_mean=("sntd", "mean"))
    return out.reset_index()[cols]
