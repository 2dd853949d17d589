"""Distances between two rankings of the same models (paper 000, Section 4.1 and Appendix C.2).

All four are normalised to [0, 1] (0 = identical order):
- spearman: d_rho = (1 - rho_S) / 2 with rho_S = 1 - 6 sum d_i^2 / (n (n^2 - 1));
- kendall: share of model pairs ordered strictly oppositely, 2 / (n (n - 1)) * #discordant;
- footrule: sum |r_i - r*_i| / floor(n^2 / 2);
- chebyshev: max |r_i - r*_i| / (n - 1).
Only models present in both rankings count; both are re-ranked 1..n on those shared models. Ties:
tied models get their average rank (so a reversed untied order is exactly 1 for spearman), and a
pair tied in either ranking is not discordant for kendall.
"""

from __future__ import annotations

import numpy as np

from engine.errors import LensError
from engine.frames import pd

DISTANCES: tuple[str, ...] = ("spearman", "kendall", "footrule", "chebyshev")
RANK_RTOL = 1e-9
"""Scores closer than RANK_RTOL·max(1, |score|) are tied (as the leaderboard's ranks): solver
round-off is not an order. Tied models are then ordered by model position."""


def _shared(r: pd.Series, r_ref: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """Average ranks (1 = best) of the shared models in both rankings, in the same model order."""
    r = pd.Series(r).dropna()
    r_ref = pd.Series(r_ref).dropna()
    shared = [m for m in r.index if m in set(r_ref.index)]
    if len(shared) < 2:
        raise LensError(
            f"The two rankings share {len(shared)} model(s); a ranking distance needs at least two in common."
        )
    a = rankdata(r.loc[shared].to_numpy(np.float64), method="average")
    b = rankdata(r_ref.loc[shared].to_numpy(np.float64), method="average")
    return a, b


def rankdata(x: np.ndarray, method: str = "average", axis: int = -1) -> np.ndarray:
    """Average ranks (1..n, ties share their mean) along ``axis``, as scipy.stats.rankdata gives.

    Written with numpy so the first leaderboard does not load scipy.stats (seconds on a busy box);
    rows holding NaN go to scipy (its NaN rule), which is then loaded.
    """
    if method != "average":
        raise ValueError("only average ranks are used here")
    x = np.asarray(x, dtype=np.float64)
    if np.isnan(x).any():
        from scipy.stats import rankdata as scipy_rankdata

        return scipy_rankdata(x, method="average", axis=axis)
    x = np.moveaxis(x, axis, -1)
    n = x.shape[-1]
    order = np.argsort(x, axis=-1, kind="stable")
    xs = np.take_along_axis(x, order, axis=-1)
    pos = np.broadcast_to(np.arange(n), xs.shape)
    starts = np.ones(xs.shape, dtype=bool)
    starts[..., 1:] = xs[..., 1:] != xs[..., :-1]
    ends = np.ones(xs.shape, dtype=bool)
    ends[..., :-1] = starts[..., 1:]
    first = np.maximum.accumulate(np.where(starts, pos, 0), axis=-1)
    last = np.flip(np.minimum.accumulate(np.flip(np.where(ends, pos, n), axis=-1), axis=-1), axis=-1)
    out = np.empty(xs.shape, dtype=np.float64)
    np.put_along_axis(out, order, (first + last) / 2.0 + 1.0, axis=-1)
    return np.moveaxis(out, -1, axis)


def distances_batch(ranks: np.ndarray, ref_ranks: np.ndarray) -> dict[str, np.ndarray]:
    """All four distances for B rankings (B, n) against one reference (n,) on the same n models."""
    r = rankdata(np.atleast_2d(np.asarray(ranks, dtype=np.float64)), method="average", axis=1)
    ref = rankdata(np.asarray(ref_ranks, dtype=np.float64), method="average")
    n = r.shape[1]
    if n < 2:
        raise LensError("A ranking distance needs at least two models.")
    d = r - ref[None, :]
    rho = 1.0 - 6.0 * (d**2).sum(axis=1) / (n * (n * n - 1))
    sr = np.sign(r[:, :, None] - r[:, None, :])
    sref = np.sign(ref[:, None] - ref[None, :])
    discordant = ((sr * sref[None]) < 0).sum(axis=(1, 2)) / 2.0
    return {
        "spearman": (1.0 - rho) / 2.0,
        "kendall": 2.0 * discordant / (n * (n - 1)),
        "footrule": np.abs(d).sum(axis=1) / np.floor(n * n / 2.0),
        "chebyshev": np.abs(d).max(axis=1) / (n - 1),
    }


def _one(name: str, r: pd.Series, r_ref: pd.Series) -> float:
    a, b = _shared(r, r_ref)
    return float(distances_batch(a[None], b)[name][0])


def spearman_distance(r: pd.Series, r_ref: pd.Series) -> float:
    """Normalised Spearman rho distance (1 - rho) / 2 on the shared models."""
    return _one("spearman", r, r_ref)


def kendall_distance(r: pd.Series, r_ref: pd.Series) -> float:
    """Share of shared-model pairs the two rankings order strictly oppositely."""
    return _one("kendall", r, r_ref)


def footrule_distance(r: pd.Series, r_ref: pd.Series) -> float:
    """Spearman footrule sum |r_i - r*_i| normalised by floor(n^2 / 2)."""
    return _one("footrule", r, r_ref)


def chebyshev_distance(r: pd.Series, r_ref: pd.Series) -> float:
    """Largest rank displacement normalised by n - 1."""
    return _one("chebyshev", r, r_ref)


def all_distances(r: pd.Series, r_ref: pd.Series) -> dict[str, float]:
    """The four distances plus the number of shared models they were computed on."""
    a, b = _shared(r, r_ref)
    out = {k: float(v[0]) for k, v in distances_batch(a[None], b).items()}
    out["n_shared"] = len(a)
    return out


# ----------------------------------------------------------------------------- batches of rankings


def ordinal_ranks(scores: np.ndarray, rtol: float = RANK_RTOL) -> np.ndarray:
    """(B, n) scores → (B, n) ranks 1..n (1 = best); tied scores ordered by model position.

    A deterministic total order, so every distance compares two permutations. Scores closer than
    ``rtol·max(1, |s|)`` count as tied (along the sorted scores, so a chain of near-equal scores is
    one tie group): fits that are tied in exact arithmetic but differ by solver round-off — or by
    the start a warm-started solver came from — get the same ranks.
    """
    s = np.atleast_2d(np.asarray(scores, dtype=np.float64))
    B, n = s.shape
    order = np.argsort(-s, axis=1, kind="stable")
    srt = np.take_along_axis(s, order, axis=1)
    gap = srt[:, :-1] - srt[:, 1:]
    new_group = gap > rtol * np.maximum(1.0, np.abs(srt[:, :-1]))
    gid_sorted = np.zeros((B, n), dtype=np.int64)
    gid_sorted[:, 1:] = np.cumsum(new_group, axis=1)
    gid = np.empty_like(gid_sorted)
    np.put_along_axis(gid, order, gid_sorted, axis=1)
    pos = np.argsort(gid * n + np.arange(n)[None, :], axis=1)
    ranks = np.empty((B, n), dtype=np.int64)
    np.put_along_axis(ranks, pos, np.arange(1, n + 1)[None, :].repeat(B, axis=0), axis=1)
    return ranks


def fractional_ranks(scores: np.ndarray, rtol: float = RANK_RTOL) -> np.ndarray:
    """(B, n) scores → (B, n) float ranks (1 = best), tied scores sharing their average rank.

    The same tie groups as ``ordinal_ranks`` (scores within ``rtol·max(1, |s|)`` along the sorted
    order), but a group of g models at positions k+1..k+g all get k + (g+1)/2, so the result does
    not depend on model names or positions (as ``engine.ranking.distances`` ranks for ``compare``).
    """
    s = np.atleast_2d(np.asarray(scores, dtype=np.float64))
    B, n = s.shape
    order = np.argsort(-s, axis=1, kind="stable")
    srt = np.take_along_axis(s, order, axis=1)
    starts = np.ones((B, n), dtype=bool)
    starts[:, 1:] = (srt[:, :-1] - srt[:, 1:]) > rtol * np.maximum(1.0, np.abs(srt[:, :-1]))
    ends = np.ones((B, n), dtype=bool)
    ends[:, :-1] = starts[:, 1:]
    pos = np.arange(n)[None, :].repeat(B, axis=0)
    first = np.maximum.accumulate(np.where(starts, pos, 0), axis=1)  # group start, per sorted slot
    last = np.minimum.accumulate(np.where(ends, pos, n - 1)[:, ::-1], axis=1)[:, ::-1]  # group end
    ranks = np.empty((B, n), dtype=np.float64)
    np.put_along_axis(ranks, order, 0.5 * (first + last) + 1.0, axis=1)
    return ranks


def permutation_distances(ranks: np.ndarray, ref_ranks: np.ndarray) -> dict[str, np.ndarray]:
    """The four distances of paper 000 (App. C.2) for (B, n) permutation ranks against one (n,) permutation.

    The fast path for ordinal ranks (no ties): equal to ``engine.ranking.distances.distances_batch`` there.
    """
    r = np.atleast_2d(np.asarray(ranks, dtype=np.int64))
    ref = np.asarray(ref_ranks, dtype=np.int64)
    n = r.shape[1]
    if n < 2:
        raise LensError("A ranking distance needs at least two models.")
    d = (r - ref[None, :]).astype(np.float64)
    by_ref = r[:, np.argsort(ref)]  # columns in reference order: discordant pairs are inversions
    inv = np.triu(by_ref[:, :, None] > by_ref[:, None, :], 1).sum(axis=(1, 2))
    return {
        "spearman": 3.0 * (d * d).sum(axis=1) / (n * (n * n - 1)),
        "kendall": 2.0 * inv / (n * (n - 1)),
        "footrule": np.abs(d).sum(axis=1) / np.floor(n * n / 2.0),
        "chebyshev": np.abs(d).max(axis=1) / (n - 1),
    }


def distances_for_scores(scores: np.ndarray, ref_ranks: np.ndarray) -> dict[str, np.ndarray]:
    """All four distances of paper 000 (Section 4.1, App. C.2) for (B, n) scores against a reference.

    Tied scores share their average rank (``fractional_ranks``; distances as ``engine.ranking.distances``
    and ``compare`` take them), never an order by model name: rows without a tie take the
    permutation fast path, rows with one ``engine.ranking.distances.distances_batch``.
    """
    ranks = fractional_ranks(scores)
    ref = np.asarray(ref_ranks)
    srt = np.sort(ranks, axis=1)
    tied = (srt[:, 1:] == srt[:, :-1]).any(axis=1)  # a group of 3 shares the whole number k + 2
    if not tied.any():
        return permutation_distances(ranks.astype(np.int64), ref)
    out = {k: np.empty(len(ranks)) for k in DISTANCES}
    for rows, fn in ((~tied, lambda r: permutation_distances(r.astype(np.int64), ref)),
                     (tied, lambda r: distances_batch(r, ref))):
        if rows.any():
            for k, val in fn(ranks[rows]).items():
                out[k][rows] = val
    return out
