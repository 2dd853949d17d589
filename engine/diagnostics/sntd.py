"""Soft non-transitivity deviation SNTD (paper 001, eq. 3-5 and Appendix B.4), per model triple.

For a triple (a, b, c) in one graph with judge probabilities φ_xy = P(x beats y) on all three
pairs (``GraphStack.soft``: the mean over verdicts, so both presentation orders are averaged when
present), Bradley-Terry gives the quality gap s_xy = logit φ_xy. Under transitivity the third pair
is implied by the other two: φ̂_xy = σ(s_xz − s_yz). SNTD is the mean over the three pairs of the
Jensen-Shannon divergence between the Bernoulli laws (φ_xy, 1 − φ_xy) and (φ̂_xy, 1 − φ̂_xy).
It is 0 for an exactly transitive triple and does not depend on how the triple is ordered.
Two variants (``SNTD_VARIANTS``), both offered:

- ``averaged`` (default; what the app and ``diagnose`` show unless told otherwise): average the
  probabilities of both presentation orders first (issue 5), then one JSD of the averaged φ.
- ``per-order`` (paper 001's eq. 3 literally): the expectation is outside, E[JSD(φ ‖ φ̂)] over the
  judge's randomness, here its two presentation orders. Each pair contributes two draws — its mean
  probability when the model first by name was shown first, and when it was shown second — the three
  pairs of a triple are drawn independently, and SNTD is the mean of the triple's value over the
  2³ = 8 combinations of draws. A pair seen in one order only (or with no recorded order) has one
  draw, used for both; with one draw per pair the two variants coincide.

They agree when both orders give the same probabilities and differ otherwise (φ̂ is not linear in
φ, and the JSD is convex).
The logarithm base is a parameter (the paper does not state it; default 2, so JSD ≤ 1 bit).
Probabilities are clipped to [eps, 1 − eps] so that 0/1 outputs give finite gaps.
"""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd

from ..graphs import build_stack
from ..schema import GRAPH_KEY
from .verdict_pairs import order_flags

SNTD_VARIANTS: tuple[str, ...] = ("averaged", "per-order")
"""``averaged``: one JSD of the order-averaged probabilities; ``per-order``: paper 001's eq. 3, the
JSD averaged over the presentation orders (module docstring)."""


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
    val = _triple_sntd(s[:, a, b], s[:, b, c], s[:, a, c], eps, base)
    missing = np.isnan(s[:, a, b]) | np.isnan(s[:, b, c]) | np.isnan(s[:, a, c])
    return np.where(missing, np.nan, val), tri


def _triple_sntd(p_ab: np.ndarray, p_bc: np.ndarray, p_ac: np.ndarray, eps: float, base: float) -> np.ndarray:
    """Eq. 3-5 for arrays of the three pair probabilities of triples a < b < c."""
    p_ab, p_bc, p_ac = (np.clip(x, eps, 1 - eps) for x in (p_ab, p_bc, p_ac))
    logit = lambda p: np.log(p) - np.log1p(-p)  # noqa: E731
    sig = lambda x: 0.5 * (1.0 + np.tanh(0.5 * x))  # noqa: E731 - overflow-free logistic
    s_ab, s_bc, s_ac = logit(p_ab), logit(p_bc), logit(p_ac)
    hat_ab = sig(s_ac - s_bc)  # via c: s_ac - s_bc = γa - γb
    hat_bc = sig(s_ac - s_ab)  # via a: s_ba - s_ca = γb - γc
    hat_ac = sig(s_ab + s_bc)  # via b
    return (bernoulli_jsd(p_ab, hat_ab, base) + bernoulli_jsd(p_bc, hat_bc, base) + bernoulli_jsd(p_ac, hat_ac, base)) / 3.0


def sntd_arrays_per_order(soft2: np.ndarray, *, eps: float = 1e-6, base: float = 2.0) -> tuple[np.ndarray, np.ndarray]:
    """Paper 001's eq. 3 literally: ``soft2`` (2, T, n, n) holds each pair's probability in its two
    presentation orders (``order_soft``); the (T, K) SNTD is the mean over the 8 combinations of one
    draw per pair. Triples with a pair lacking a probability are NaN."""
    s2 = np.asarray(soft2, dtype=np.float64)
    n = s2.shape[-1]
    tri = triple_index(n)
    if len(tri) == 0:
        return np.zeros((s2.shape[1], 0)), tri
    a, b, c = tri[:, 0], tri[:, 1], tri[:, 2]
    total = np.zeros((s2.shape[1], len(tri)))
    for o_ab, o_bc, o_ac in itertools.product((0, 1), repeat=3):
        total += _triple_sntd(s2[o_ab][:, a, b], s2[o_bc][:, b, c], s2[o_ac][:, a, c], eps, base)
    missing = np.isnan(s2[0][:, a, b]) | np.isnan(s2[0][:, b, c]) | np.isnan(s2[0][:, a, c])
    return np.where(missing, np.nan, total / 8.0), tri


def order_soft(verdicts: pd.DataFrame, stack) -> np.ndarray:
    """(2, T, n, n) for the graphs of ``stack`` (built from ``verdicts``): P(i beats j) averaged over
    the verdicts where the pair's model first by name (lower index) was shown first [0] or second [1].
    A pair judged in one order only, or without a recorded order, uses what it has in both slots."""
    v = verdicts[verdicts["winner"] != "invalid"]
    v = v[v["model_a"].isin(stack.models) & v["model_b"].isin(stack.models)]
    rank = {m: i for i, m in enumerate(stack.models)}
    a_lower = v["model_a"].map(rank).to_numpy() < v["model_b"].map(rank).to_numpy()
    a_first = order_flags(v["order"]) if "order" in v.columns else np.full(len(v), np.nan)
    lower_first = np.where(a_lower, a_first, 1.0 - a_first)  # NaN stays NaN
    unknown = np.isnan(lower_first)
    want = stack.keys[list(GRAPH_KEY)].reset_index(drop=True)
    out = np.full((2, *stack.adj.shape), np.nan)
    for slot, keep in enumerate((unknown | (lower_first == 1.0), unknown | (lower_first == 0.0))):
        if not keep.any():
            continue
        sub = build_stack(v[keep], policy=stack.policy, models=stack.models)
        if sub.soft is None or len(sub.keys) == 0:
            continue
        got = sub.keys[list(GRAPH_KEY)].reset_index(drop=True).assign(_sub=np.arange(len(sub.keys)))
        where = want.assign(_t=np.arange(len(want))).merge(got, on=list(GRAPH_KEY), how="inner")
        out[slot, where["_t"].to_numpy()] = sub.soft[where["_sub"].to_numpy()]
    for slot in (0, 1):  # one order only: that order's probability is both draws
        gap = np.isnan(out[slot])
        out[slot][gap] = out[1 - slot][gap]
    return out


def sntd_triples(stack, *, eps: float = 1e-6, base: float = 2.0, variant: str = "averaged",
                 verdicts: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per graph and model triple with probabilities on all three pairs: key columns,
    graph (position in the stack), model_a < model_b < model_c (by stack order), sntd.
    ``variant="per-order"`` (paper 001's eq. 3 literally) needs the ``verdicts`` the stack was built from."""
    if variant not in SNTD_VARIANTS:
        raise ValueError(f"SNTD variant must be one of {', '.join(SNTD_VARIANTS)}; got {variant!r}.")
    soft = stack.soft if stack.soft is not None else np.full(stack.adj.shape, np.nan)
    if variant == "per-order":
        if verdicts is None:
            raise ValueError("The per-order SNTD needs the verdicts the stack was built from.")
        val, tri = sntd_arrays_per_order(order_soft(verdicts, stack), eps=eps, base=base)
    else:
        val, tri = sntd_arrays(soft, eps=eps, base=base)
    t_idx, k_idx = np.nonzero(~np.isnan(val))
    models = np.array(stack.models, dtype=object)
    keys = stack.keys.reset_index(drop=True)
    out = keys.iloc[t_idx].reset_index(drop=True)
    out.insert(0, "graph", t_idx.astype(np.int64))
    out["model_a"] = models[tri[k_idx, 0]] if len(k_idx) else []
    out["model_b"] = models[tri[k_idx, 1]] if len(k_idx) else []
    out["model_c"] = models[tri[k_idx, 2]] if len(k_idx) else []
    out["sntd"] = val[t_idx, k_idx]
    return out


def sntd_summary(stack, by: tuple[str, ...] = ("judge",), *, eps: float = 1e-6, base: float = 2.0,
                 variant: str = "averaged", verdicts: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per group: soft triples and mean SNTD (paper 001, Table 1 style aggregate); ``variant`` as in
    ``sntd_triples``."""
    t = sntd_triples(stack, eps=eps, base=base, variant=variant, verdicts=verdicts)
    cols = [*by, "soft_triples", "sntd_mean"]
    if t.empty:
        return pd.DataFrame(columns=cols)
    out = t.groupby(list(by), sort=True, dropna=False).agg(soft_triples=("sntd", "size"), sntd_mean=("sntd", "mean"))
    return out.reset_index()[cols]
