"""What an active run knows between batches: the verdicts revealed so far, the Bradley–Terry fit on
them with analytic intervals, and the stopping test.

``Revealed`` holds, per pool item, whether it was asked and the verdict counts it returned (model a's
wins, model b's wins, ties; a swapped item returns two verdicts, an invalid verdict or a failed call
none). ``fit_revealed`` fits half-tie BT (wins + ties/2, the project's one kernel
``engine.rankers.bt.fit_bt_pairs_info``, with its regularisation: ``alpha`` virtual ties on every
pair while the comparison graph is not strongly connected, so the first batches have finite scores)
and takes the covariance of the log-strengths from the Fisher information: the Laplacian ``L`` of
the compared pairs weighted by ``n_ij p_ij (1 - p_ij)`` (the virtual ties included when they were
added), inverted under the mean-zero constraint, ``Σ = (L + J/M)^-1 - J/M`` with J the all-ones
matrix (exact for a connected graph, which the fit guarantees). Intervals are score ± z·sqrt(Σ_ii)
at ``level`` (z = 1.96 for 0.95): the model-based (not sandwich) standard errors, cheap enough to
recompute after every batch and the same matrix the ``uncertainty`` strategy plans with.

``separated(fit, top_k)``: rank the models by score; the top K are settled when every adjacent pair
(rank r, rank r+1) for r = 1 … min(K, M-1) has disjoint intervals (the lower end of rank r above the
upper end of rank r+1). So K = M (the default) asks that every neighbour pair be separated, and K < M
also asks that the K-th be separated from the (K+1)-th: the top-K set is then settled too.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from engine.judging.active.pool import Pool

DEFAULT_LEVEL = 0.95


@dataclass(eq=False)
class Revealed:
    """Per pool item: asked or not, and the verdict counts it returned (module docstring).

    ``memory`` is where a strategy with a plan (``swim``) keeps it between batches; it is rebuilt the
    same way from the same seed, so a resumed run walks the same path.
    """

    asked: np.ndarray
    wins_a: np.ndarray
    wins_b: np.ndarray
    ties: np.ndarray
    memory: dict = field(default_factory=dict)

    @classmethod
    def empty(cls, pool: Pool) -> Revealed:
        n = len(pool)
        return cls(np.zeros(n, dtype=bool), np.zeros(n, np.float32), np.zeros(n, np.float32),
                   np.zeros(n, np.float32))

    @property
    def n_asked(self) -> int:
        return int(self.asked.sum())

    def record(self, items, wins_a=None, wins_b=None, ties=None) -> None:
        """Mark ``items`` asked and add their verdict counts (arrays like ``items``; None: no verdict)."""
        items = np.asarray(items, dtype=np.int64)
        self.asked[items] = True
        for arr, add in ((self.wins_a, wins_a), (self.wins_b, wins_b), (self.ties, ties)):
            if add is not None:
                np.add.at(arr, items, np.asarray(add, dtype=np.float32))

    def record_winners(self, items, winners) -> None:
        """Mark ``items`` asked with one verdict each: ``winners`` are "A", "B", "tie" (else no verdict)."""
        w = np.asarray(winners, dtype=object)
        self.record(items, w == "A", w == "B", w == "tie")


@dataclass(frozen=True, eq=False)
class ActiveFit:
    """BT log-strengths (mean-centred), their covariance and intervals at ``level``."""

    models: tuple[str, ...]
    scores: np.ndarray
    cov: np.ndarray
    level: float
    z: float
    verdicts: float  # valid verdicts behind the fit (ties count 1)
    regularised: bool

    @property
    def se(self) -> np.ndarray:
        return np.sqrt(np.maximum(np.diag(self.cov), 0.0))

    @property
    def lo(self) -> np.ndarray:
        return self.scores - self.z * self.se

    @property
    def hi(self) -> np.ndarray:
        return self.scores + self.z * self.se

    def ranking(self) -> np.ndarray:
        """Model indices best first (equal scores by model order)."""
        return np.argsort(-self.scores, kind="stable")


def counts_matrix(pool: Pool, revealed: Revealed) -> np.ndarray:
    """(M, M) half-tie wins W~[i, j] = wins of i over j + ties / 2 over the revealed items."""
    m = pool.n_models
    # only the items with a verdict count: the same sums (an item without one adds exactly 0), without
    # a weighted pass over every item of a million-item pool after each batch
    has = np.flatnonzero((revealed.wins_a != 0) | (revealed.wins_b != 0) | (revealed.ties != 0))
    a, b = pool.a[has].astype(np.int64), pool.b[has].astype(np.int64)
    half = 0.5 * revealed.ties[has].astype(np.float64)
    w = np.bincount(a * m + b, weights=revealed.wins_a[has] + half, minlength=m * m)
    w += np.bincount(b * m + a, weights=revealed.wins_b[has] + half, minlength=m * m)
    return w.reshape(m, m)


def fisher_covariance(n: int, i: np.ndarray, j: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """(L + J/n)^-1 - J/n for the Laplacian L of pairs (i, j) with ``weight``: the covariance of mean-zero
    log-strengths when L is the Fisher information of a connected comparison graph."""
    lap = np.zeros((n, n))
    np.add.at(lap, (i, j), -weight)
    np.add.at(lap, (j, i), -weight)
    lap[np.diag_indices(n)] -= lap.sum(axis=1)
    ones = np.full((n, n), 1.0 / n)
    cov = np.linalg.inv(lap + ones) - ones
    return (cov + cov.T) / 2.0


def fit_counts(models: tuple[str, ...], w: np.ndarray, *, level: float = DEFAULT_LEVEL) -> ActiveFit:
    """The BT fit and Fisher covariance (module docstring) of a half-tie win matrix ``w``."""
    from engine.rankers.bt import DEFAULT_ALPHA, fit_bt_pairs_info
    from engine.rankers.sandwich import z_quantile

    n = len(models)
    z = z_quantile(level)
    if n < 2:
        return ActiveFit(models, np.zeros(n), np.zeros((n, n)), level, z, float(w.sum()), False)
    i, j = np.nonzero(np.triu((w + w.T) > 0, 1))
    fit = fit_bt_pairs_info(n, i, j, w[i, j], w[j, i])
    theta = fit.scores[0]
    regularised = bool(fit.regularised[0])
    nij = w + w.T
    if regularised:  # the fit added alpha virtual ties to every pair; so does its information
        nij = nij + DEFAULT_ALPHA
        np.fill_diagonal(nij, 0.0)
    i, j = np.nonzero(np.triu(nij > 0, 1))
    p = 1.0 / (1.0 + np.exp(-(theta[i] - theta[j])))
    cov = fisher_covariance(n, i, j, nij[i, j] * p * (1.0 - p))
    return ActiveFit(models, theta, cov, level, z, float(w.sum()), regularised)


def fit_revealed(pool: Pool, revealed: Revealed, *, level: float = DEFAULT_LEVEL) -> ActiveFit:
    """The BT fit with intervals on the verdicts revealed so far (module docstring)."""
    return fit_counts(pool.models, counts_matrix(pool, revealed), level=level)


def adjacent_overlaps(fit: ActiveFit, top_k: int | None = None) -> np.ndarray:
    """For r = 1 … min(K, M-1): whether the intervals of ranks r and r+1 overlap (bool array)."""
    order = fit.ranking()
    k = len(order) if top_k is None else max(1, int(top_k))
    r = np.arange(min(k, len(order) - 1))
    return fit.lo[order[r]] <= fit.hi[order[r + 1]]


def separated(fit: ActiveFit, top_k: int | None = None) -> bool:
    """The stopping test: every adjacent pair of the top ``top_k`` (default all) has disjoint intervals."""
    return not adjacent_overlaps(fit, top_k).any()


def uncertainty_summary(fit: ActiveFit, top_k: int | None = None) -> dict:
    """How settled the ranking is: adjacent pairs of the top K separated (of how many) and the mean and
    largest interval width over the top K models (log-strength units)."""
    over = adjacent_overlaps(fit, top_k)
    order = fit.ranking()
    top = order[: len(order) if top_k is None else max(1, int(top_k))]
    width = (fit.hi - fit.lo)[top]
    return {
        "separated_pairs": int((~over).sum()),
        "adjacent_pairs": len(over),
        "mean_ci_width": float(width.mean()) if len(width) else 0.0,
        "max_ci_width": float(width.max()) if len(width) else 0.0,
    }
