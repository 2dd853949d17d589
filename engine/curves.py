"""Sensitivity curves: distance to the reference as a function of keep-K or of mu, with bands.

Paper 000, Section 4.2 (Figures 2, 3, 5): for each K (every K from 1 to the pool size) or each mu
(a log grid), keep the K graphs of smallest S_mu per category, rank them with half-tie
Bradley-Terry, and measure the four distances of Appendix C.2 to the reference. The point value
uses the kept graphs once; the band is the 2.5-97.5 % range over ``resamples`` bootstrap draws of
the kept set (as many graphs as kept, with replacement). The ``macro`` rows average the categories
per resample. Pools: ``perturbed`` (originals + paraphrases, default), ``sampling`` (originals +
sampling replicates: the control of Figure 6) or ``all``. Bootstrap draws repeat graphs, so the
band usually sits a little above the point value (a resample holds fewer distinct graphs).
Every fit of a curve — all K (or mu) × categories × resamples — is one batched call.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from .errors import LensError
from .graphs import GraphStack
from .resampling import (
    DEFAULT_SEED,
    DISTANCES,
    MACRO,
    ProtocolParams,
    _category_positions,
    _is_original,
    _is_sample,
    _kept,
    _reference_for,
    _scores_for_counts,
    common_models,
    distances_for_scores,
    draw_counts,
    flat_matrices,
    reference_ranks,
)
from .truncation import keep_order, truncation_scores

DEFAULT_MU_GRID: tuple[float, ...] = tuple(float(x) for x in np.logspace(-2, 2, 17))
"""0.01 … 100, four points per decade: four decades around the paper's mu = 1."""


POOLS: tuple[str, ...] = ("perturbed", "sampling", "all")
"""perturbed: originals + paraphrases (the main pool); sampling: originals + sampling replicates
(the sampling-only control of paper 000, Figure 6); all: every graph."""


def _pools(stack: GraphStack, per_category: bool, pool: str = "perturbed") -> dict[str, np.ndarray]:
    """Positions of the chosen pool, by category (or one ``all`` group)."""
    if pool not in POOLS:
        raise LensError(f"Unknown pool {pool!r}; choose one of {', '.join(POOLS)}.")
    samp, orig = _is_sample(stack), _is_original(stack)
    member = {"perturbed": ~samp, "sampling": orig | samp, "all": np.ones(stack.T, dtype=bool)}[pool]
    groups = _category_positions(stack) if per_category else {"all": np.arange(stack.T)}
    out = {c: pos[member[pos]] for c, pos in groups.items()}
    out = {c: pos for c, pos in out.items() if pos.size}
    if not out:
        raise LensError(f"The {pool} pool is empty for this selection.")
    return out


def _evaluate(
    stack: GraphStack,
    reference: pd.Series | Mapping[str, pd.Series],
    cells: list[tuple[float, str, np.ndarray]],
    param: str,
    resamples: int,
    seed: int,
) -> pd.DataFrame:
    """Point + bootstrap distances for every (x, category, kept positions) cell, in one batch."""
    cats = sorted({c for _, c, _ in cells})
    models = common_models(stack, reference, cats)
    st = stack.restrict_models(models)
    refs = {c: reference_ranks(_reference_for(reference, c), models) for c in cats}
    rng = np.random.default_rng(seed)
    T, R = st.T, resamples
    blocks = []
    for _, _, kept in cells:
        point = np.zeros((1, T))
        point[0, kept] = 1.0
        blocks.append(point)
        if R:
            blocks.append(draw_counts(rng, kept, kept.size, R, True, T))
    counts = np.concatenate(blocks, axis=0)
    scores = _scores_for_counts(counts, flat_matrices(st), st.n, "bt", ProtocolParams())
    per = 1 + R
    dist: dict[int, dict[str, np.ndarray]] = {}
    for cat in cats:
        ids = [i for i, (_, c, _) in enumerate(cells) if c == cat]
        rows = np.concatenate([np.arange(i * per, (i + 1) * per) for i in ids])
        d = distances_for_scores(scores[rows], refs[cat])
        for a, i in enumerate(ids):
            dist[i] = {k: v[a * per:(a + 1) * per] for k, v in d.items()}
    out = []
    xs = list(dict.fromkeys(x for x, _, _ in cells))
    for x in xs:
        ids = [i for i, (xx, _, _) in enumerate(cells) if xx == x]
        for dname in DISTANCES:
            boots = []
            for i in ids:
                v = dist[i][dname]
                boots.append(v[1:])
                out.append(_row(param, x, cells[i][1], dname, v[0], v[1:], cells[i][2].size))
            if len(ids) > 1:
                point = float(np.mean([dist[i][dname][0] for i in ids]))
                out.append(_row(param, x, MACRO, dname, point, np.mean(boots, axis=0) if R else np.array([]),
                                int(sum(cells[i][2].size for i in ids))))
    frame = pd.DataFrame(out)
    frame.attrs["models"] = models
    return frame


def _row(param: str, x: float, cat: str, dname: str, point: float, boots: np.ndarray, kept: int) -> dict:
    if boots.size:
        lo, hi = np.quantile(boots, [0.025, 0.975])
        mean = float(boots.mean())
    else:
        lo = hi = mean = float(point)
    return {param: x, "category": cat, "distance": dname, "point": float(point), "mean": mean,
            "ci_low": float(lo), "ci_high": float(hi), "n_kept": kept}


def keep_k_curve(
    stack: GraphStack,
    reference: pd.Series | Mapping[str, pd.Series],
    ks: list[int] | range | None = None,
    *,
    mu: float = 1.0,
    lam3: float = 1.0,
    lam4: float | None = None,
    per_category: bool = True,
    pool: str = "perturbed",
    resamples: int = 100,
    seed: int = DEFAULT_SEED,
) -> pd.DataFrame:
    """Distance to the reference for every K (default 1 … the largest pool), paper 000 Fig. 2/5.

    K is per category when ``per_category`` (a category smaller than K keeps all its graphs;
    ``n_kept`` says how many were kept). Columns: k, category, distance, point, mean, ci_low,
    ci_high, n_kept.
    """
    from .cycles import cycle_counts

    pools = _pools(stack, per_category, pool)
    order = keep_order(truncation_scores(cycle_counts(stack), mu=mu, lam3=lam3, lam4=lam4), stack.keys)
    kmax = max(p.size for p in pools.values())
    ks = list(range(1, kmax + 1)) if ks is None else [int(k) for k in ks]
    if not ks or min(ks) < 1:
        raise LensError(f"Every K of a keep-K curve must be ≥ 1; got {ks}.")
    cells = [(k, c, _kept(pos, order, k)) for k in ks for c, pos in pools.items()]
    return _evaluate(stack, reference, cells, "k", resamples, seed)


def mu_curve(
    stack: GraphStack,
    reference: pd.Series | Mapping[str, pd.Series],
    mus: list[float] | tuple[float, ...] | np.ndarray = DEFAULT_MU_GRID,
    *,
    k: int = 25,
    per_category: bool = True,
    pool: str = "perturbed",
    resamples: int = 100,
    seed: int = DEFAULT_SEED,
) -> pd.DataFrame:
    """Distance to the reference against mu in S_mu = C3_bad + mu·C4_bad at fixed K (paper 000 Fig. 3).

    Columns: mu, category, distance, point, mean, ci_low, ci_high, n_kept.
    """
    from .cycles import cycle_counts

    counts = cycle_counts(stack)
    pools = _pools(stack, per_category, pool)
    mus = [float(m) for m in mus]
    if not mus or any(not np.isfinite(m) or m < 0 for m in mus):
        raise LensError(f"Every mu of a mu curve must be a finite number ≥ 0; got {mus}.")
    if int(k) != k or k < 1:
        raise LensError(f"K must be a whole number ≥ 1; got {k!r}.")
    cells = []
    for m in mus:
        order = keep_order(truncation_scores(counts, mu=m), stack.keys)
        cells += [(m, c, _kept(pos, order, int(k))) for c, pos in pools.items()]
    return _evaluate(stack, reference, cells, "mu", resamples, seed)
