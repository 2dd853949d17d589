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
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from engine.diagnostics.verdict_pairs import order_flags
from engine.store.schema import GRAPH_KEY

if TYPE_CHECKING:
    from engine.graphs.buckets import GraphBuckets
    from engine.graphs.stack import GraphStack

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
    return (
        bernoulli_jsd(p_ab, hat_ab, base)
        + bernoulli_jsd(p_bc, hat_bc, base)
        + bernoulli_jsd(p_ac, hat_ac, base)
    ) / 3.0


def order_draws(verdicts: pd.DataFrame, models: tuple[str, ...]) -> pd.DataFrame:
    """Per graph key and pair lo < hi (positions in ``models``): ``p0`` / ``p1``, the mean P(lo beats
    hi) over the verdicts with lo shown first / second. A pair judged in one order only, or without a
    recorded order (counted in both), has the same value in both columns."""
    v = verdicts[(verdicts["winner"] != "invalid") & verdicts["prob_a"].notna()]
    v = v[v["model_a"].isin(models) & v["model_b"].isin(models)]
    pos = {m: i for i, m in enumerate(models)}
    ia, ib = v["model_a"].map(pos).to_numpy(), v["model_b"].map(pos).to_numpy()
    a_lo = ia < ib
    a_first = order_flags(v["order"]) if "order" in v.columns else np.full(len(v), np.nan)
    lo_first = np.where(a_lo, a_first, 1.0 - a_first)  # NaN (unknown order) stays NaN
    prob = v["prob_a"].to_numpy(dtype=np.float64)
    base = v[list(GRAPH_KEY)].reset_index(drop=True).assign(
        lo=np.where(a_lo, v["model_a"], v["model_b"]), hi=np.where(a_lo, v["model_b"], v["model_a"]),
        p=np.where(a_lo, prob, 1.0 - prob))
    keys = [*GRAPH_KEY, "lo", "hi"]
    draws = []
    for slot, keep in (
        (0, np.isnan(lo_first) | (lo_first == 1.0)),
        (1, np.isnan(lo_first) | (lo_first == 0.0)),
    ):
        draws.append(base[keep].groupby(keys, sort=False, dropna=False)["p"].mean().rename(f"p{slot}"))
    out = pd.concat(draws, axis=1).reset_index()
    out["p0"] = out["p0"].fillna(out["p1"])
    out["p1"] = out["p1"].fillna(out["p0"])
    return out


def per_order_sntd(triples: pd.DataFrame, verdicts: pd.DataFrame, models: tuple[str, ...], *,
                   eps: float = 1e-6, base: float = 2.0) -> np.ndarray:
    """Paper 001's eq. 3 literally for the rows of ``sntd_triples``: per triple, the mean over the 8
    combinations of one draw per pair (``order_draws``) of the triple's deviation."""
    if triples.empty:
        return np.zeros(0)
    d = order_draws(verdicts, models)
    cols = {}
    for x, y in (("model_a", "model_b"), ("model_b", "model_c"), ("model_a", "model_c")):
        m = triples[list(GRAPH_KEY)].assign(lo=triples[x].to_numpy(), hi=triples[y].to_numpy()).merge(
            d, on=[*GRAPH_KEY, "lo", "hi"], how="left")
        cols[(x, y)] = (m["p0"].to_numpy(np.float64), m["p1"].to_numpy(np.float64))
    ab, bc, ac = cols[("model_a", "model_b")], cols[("model_b", "model_c")], cols[("model_a", "model_c")]
    total = np.zeros(len(triples))
    for o_ab, o_bc, o_ac in itertools.product((0, 1), repeat=3):
        total += _triple_sntd(ab[o_ab], bc[o_bc], ac[o_ac], eps, base)
    return total / 8.0


MAX_CELLS = 1 << 20
"""At most this many (graph, triple) values are computed at once (~8 MB per float array), so the
memory of SNTD does not grow with graphs x C(n, 3)."""

NO_PROBABILITY = "no verdict carries a judge probability (prob_a), so SNTD is not defined"
"""The reason an SNTD result is empty when the stack has no probabilities at all."""


def _chunked_values(soft: np.ndarray, eps: float, base: float, max_cells: int):
    """(graph rows, triple indices, values) of the defined SNTDs of ``soft`` (T, k, k), computed in
    blocks of at most ``max_cells`` (graph, triple) cells; graphs without any probability skipped."""
    k = soft.shape[-1]
    tri = triple_index(k)
    rows = np.flatnonzero(~np.isnan(soft).all(axis=(1, 2)))
    if len(tri) == 0 or len(rows) == 0:
        return
    tri_step = max(1, min(len(tri), max_cells))
    graph_step = max(1, max_cells // tri_step)
    for g0 in range(0, len(rows), graph_step):
        block = rows[g0:g0 + graph_step]
        s = soft[block]
        for k0 in range(0, len(tri), tri_step):
            part = tri[k0:k0 + tri_step]
            a, b, c = part[:, 0], part[:, 1], part[:, 2]
            p_ab, p_bc, p_ac = s[:, a, b], s[:, b, c], s[:, a, c]
            ok = ~(np.isnan(p_ab) | np.isnan(p_bc) | np.isnan(p_ac))
            t_idx, k_idx = np.nonzero(ok)
            if len(t_idx):
                val = _triple_sntd(p_ab[ok], p_bc[ok], p_ac[ok], eps, base)
                yield block[t_idx], k0 + k_idx, val


def sntd_triples(
    stack: GraphStack | GraphBuckets,
    *,
    eps: float = 1e-6,
    base: float = 2.0,
    variant: str = "averaged",
    verdicts: pd.DataFrame | None = None,
    max_cells: int = MAX_CELLS,
) -> pd.DataFrame:
    """One row per graph and model triple with probabilities on all three pairs: key columns,
    graph (position in the stack), model_a < model_b < model_c (by stack order), sntd.
    ``stack``: a GraphStack or GraphBuckets (each graph's triples over its own models).
    ``variant="per-order"`` (paper 001's eq. 3 literally) needs the ``verdicts`` the stack was built from.
    Without any probability the result is empty and ``attrs["reason"]`` says why (nothing is
    allocated per triple); otherwise at most ``max_cells`` (graph, triple) values are held at once."""
    if variant not in SNTD_VARIANTS:
        raise ValueError(f"SNTD variant must be one of {', '.join(SNTD_VARIANTS)}; got {variant!r}.")
    if variant == "per-order" and verdicts is None:
        raise ValueError("The per-order SNTD needs the verdicts the stack was built from.")
    from engine.graphs.buckets import as_buckets

    b = as_buckets(stack)
    g_all, tri_all, val_all = [], [], []
    with_soft = [(bk, bk.soft) for bk in b.at_least(3) if bk.soft is not None]
    for bk, soft in with_soft:
        tri = triple_index(bk.k)
        for t_idx, k_idx, val in _chunked_values(soft, eps, base, max_cells):
            g_all.append(bk.graph[t_idx])
            tri_all.append(np.take_along_axis(bk.members[t_idx], tri[k_idx], axis=1))
            val_all.append(val)
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
    if variant == "per-order" and verdicts is not None:  # None was refused above
        out["sntd"] = per_order_sntd(out, verdicts, tuple(b.models), eps=eps, base=base)
    if not with_soft:
        out.attrs["reason"] = NO_PROBABILITY
    return out


def sntd_summary(
    stack: GraphStack | GraphBuckets,
    by: tuple[str, ...] = ("judge",),
    *,
    eps: float = 1e-6,
    base: float = 2.0,
    variant: str = "averaged",
    verdicts: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """Per group: soft triples and mean SNTD (paper 001, Table 1 style aggregate); ``variant`` as in
    ``sntd_triples``."""
    t = sntd_triples(stack, eps=eps, base=base, variant=variant, verdicts=verdicts)
    cols = [*by, "soft_triples", "sntd_mean"]
    if t.empty:
        out = pd.DataFrame(columns=cols)
        out.attrs.update(t.attrs)
        return out
    out = t.groupby(list(by), sort=True, dropna=False).agg(
        soft_triples=("sntd", "size"), sntd_mean=("sntd", "mean")
    )
    return out.reset_index()[cols]
