"""Style-controlled Bradley-Terry: P(a beats b) = sigmoid(theta_a - theta_b + beta . z), z the battle's
style differences (the contextual Bradley-Terry of LMArena's "style control" board, arena-rank 0.1.1).

The convention is arena-rank's, so that its numbers can be checked against ours (bench/check_arena_rank.py):

- per feature (answer tokens, headers, lists, bold) z = (a - b) / (a + b), a total of 0 read as 1, in the
  battle's own orientation (model_a as shown, not an alphabetical one: the standardisation below
  subtracts the mean, which is a constant advantage of the side the battles name first);
- each z column standardised over the battles: mean 0, population standard deviation (ddof = 0; a
  standard deviation of 0 read as 1). LMArena's notebook divides by the sample deviation first and
  arena-rank's dataset divides again by the population one, so the net effect is ddof = 0;
- each battle weighted by 1 / max(battles of its unordered pair, 50), the weights then divided by their
  mean (arena-rank's ``ContextualPairDataset.from_pandas`` default; ``reweight=False`` gives weight 1);
- outcome 1 when a won, 0 when b won, 0.5 for a tie;
- loss = -mean(w * (y * l - softplus(l))) + 0.5 * ridge * ||beta||^2 with ridge 1.0 on beta only.

arena-rank minimises the loss by L-BFGS from zeros. The rating gradient sums to zero, so its ratings keep
sum zero; here a damped Newton method on the n + k parameters reaches the same optimum (the rating
block's null direction, all ones, is fixed by adding a constant to that block, which leaves a step with a
gradient of sum zero unchanged). Ratings are natural-log strengths with sum zero (arena-rank shows
1000 + 400 / ln 10 * theta).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from engine.errors import LensError

RIDGE = 1.0
"""arena-rank's ``ContextualBradleyTerry`` reg: 0.5 * RIDGE * ||beta||^2 is added to the mean loss."""

MIN_PAIR_COUNT = 50
"""arena-rank's ``min_pair_count``: a battle weighs 1 / max(battles of its pair, MIN_PAIR_COUNT)."""

STYLE_MODELS_MAX = 4000
"""Most models the style fit takes: its Newton system (and the sandwich's) is dense, (n + 4)^2 floats."""

STEP_TOL = 1e-9
"""Newton stops once no parameter moves by more than this (quadratic convergence: the error left is of
order STEP_TOL^2)."""

DECREMENT_TOL = 1e-20
"""...or once the Newton decrement g^T H^-1 g (twice the loss decrease the step promises) is below this:
the last step is then taken without a line search (the loss cannot tell the points apart in floating
point; the parameters are within about 1e-9 of the optimum)."""


def relative_differences(counts: np.ndarray) -> np.ndarray:
    """(N, 2k) per-side counts (a's k features, then b's) -> (N, k) (a - b) / (a + b), a total of 0 read
    as 1 (so two answers without headers differ by 0)."""
    c = np.asarray(counts, dtype=np.float64)
    k = c.shape[1] // 2
    a, b = c[:, :k], c[:, k:]
    total = a + b
    # a total of 0 (both counts 0, as counts are never negative) gives a difference of 0 either way
    return np.divide(a - b, total, out=np.zeros_like(total), where=total != 0)


def standardise(z: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Columns to mean 0 and population standard deviation 1 (ddof = 0, a deviation of 0 read as 1):
    (standardised, means, deviations)."""
    mean = z.mean(axis=0)
    std = z.std(axis=0)
    std = np.where(std == 0, 1.0, std)
    return (z - mean) / std, mean, std


def inverse_pair_weights(a: np.ndarray, b: np.ndarray, n: int, min_pair_count: int = MIN_PAIR_COUNT
                         ) -> np.ndarray:
    """Per battle 1 / max(battles of its unordered pair, ``min_pair_count``), divided by the mean weight:
    every pair of models counts about equally, however often it was sampled."""
    _, slot, counts = _pairs(a, b, n)
    w = 1.0 / np.maximum(counts[slot].astype(np.float64), float(min_pair_count))
    return w / w.mean()


def _pairs(a: np.ndarray, b: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(the unordered pairs' keys lo * n + hi, each battle's pair index, battles per pair)."""
    a64, b64 = np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64)
    key = np.minimum(a64, b64) * n + np.maximum(a64, b64)
    if n * n <= 1 << 22:  # few models: index the pairs by one bincount, no sort
        per = np.bincount(key, minlength=n * n)
        keys = np.flatnonzero(per)
        at = np.zeros(n * n, dtype=np.int64)
        at[keys] = np.arange(keys.size)
        return keys, at[key], per[keys]
    keys, slot, counts = np.unique(key, return_inverse=True, return_counts=True)
    return keys, slot.ravel(), counts


@dataclass(frozen=True)
class Battles:
    """The style fit's input, one row per battle: model codes ``a``/``b`` (a as the battle names it
    first), ``y`` a's outcome (1, 0, 0.5), ``x`` (N, k) standardised style differences, ``w`` weights
    (mean 1), and the raw differences' ``mean``/``std`` the standardisation used."""

    n: int
    a: np.ndarray
    b: np.ndarray
    y: np.ndarray
    x: np.ndarray
    w: np.ndarray
    mean: np.ndarray
    std: np.ndarray
    reweighted: bool = True

    @classmethod
    def of_counts(cls, n: int, a: np.ndarray, b: np.ndarray, y: np.ndarray, counts: np.ndarray, *,
                  reweight: bool = True, min_pair_count: int = MIN_PAIR_COUNT) -> Battles:
        """Battles from per-side raw counts (N, 2k): relative differences, standardised, weighted."""
        c = np.asarray(counts, dtype=np.float64)
        if c.ndim != 2 or c.shape[1] % 2 or c.shape[0] != np.size(a):
            raise ValueError(f"expected (battles, 2k) per-side counts, got shape {c.shape}")
        if not np.isfinite(c).all() or (c < 0).any():
            raise ValueError("style counts must be finite and not negative (leave out the battles without "
                             "them; the ingest refuses negative ones)")
        x, mean, std = standardise(relative_differences(c))
        a64, b64 = np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64)
        w = inverse_pair_weights(a64, b64, n, min_pair_count) if reweight else np.ones(a64.size)
        return cls(n, a64, b64, np.asarray(y, dtype=np.float64), x, w, mean, std, reweight)

    def __len__(self) -> int:
        return int(self.a.size)

    def take(self, idx: np.ndarray) -> Battles:
        """The battles at positions ``idx`` (repeats kept: a bootstrap resample), features and weights as
        they are (arena-rank's contextual bootstrap resamples the prepared rows)."""
        return Battles(self.n, self.a[idx], self.b[idx], self.y[idx], self.x[idx], self.w[idx], self.mean,
                       self.std, self.reweighted)


@dataclass(frozen=True)
class StyleFit:
    """``theta`` (n,) natural-log strengths with sum zero, ``beta`` (k,) the style coefficients (per
    standard deviation of each relative difference), the loss at the optimum and the solver's record."""

    theta: np.ndarray
    beta: np.ndarray
    loss: float
    iterations: int
    converged: bool


def loss(bt: Battles, theta: np.ndarray, beta: np.ndarray, ridge: float = RIDGE) -> float:
    """arena-rank's contextual loss: -mean(w (y l - softplus(l))) + 0.5 ridge ||beta||^2."""
    logit = theta[bt.a] - theta[bt.b] + bt.x @ beta
    ll = bt.y * logit - np.logaddexp(0.0, logit)
    return float(-np.mean(bt.w * ll) + 0.5 * ridge * (beta @ beta))


def check_connected(bt: Battles) -> None:
    """Refuse, in one sentence, battles whose comparison digraph (a -> b when a won or tied against b) is
    not strongly connected: a model that never loses (or never wins) has no finite strength, and the
    ridge holds only beta."""
    from engine.rankers.bt import strongly_connected_pairs

    keys, slot, _ = _pairs(bt.a, bt.b, bt.n)
    a_is_lo = bt.a < bt.b
    y_lo = np.where(a_is_lo, bt.y, 1.0 - bt.y)
    won_lo = np.bincount(slot, weights=y_lo, minlength=keys.size)
    won_hi = np.bincount(slot, weights=1.0 - y_lo, minlength=keys.size)
    if not strongly_connected_pairs(bt.n, keys // bt.n, keys % bt.n, won_lo, won_hi):
        raise LensError(
            "The style-controlled Bradley-Terry fit has no finite optimum for this selection: some model "
            "never loses (or never wins), or some groups of models were never compared; select a "
            "strongly connected part (e.g. by judge or category)."
        )


class Design:
    """What every Newton step reuses: the battles sorted by their unordered pair (``bt``: the same
    battles, the loss does not depend on their order), where each pair's battles start, and each
    battle's side sign (+1 when a is the pair's lower code), so that every rating sum is one pass of
    contiguous segment sums over the battles and then sums over the pairs."""

    def __init__(self, bt: Battles) -> None:
        n = bt.n
        keys, slot, counts = _pairs(bt.a, bt.b, n)
        order = np.argsort(slot, kind="stable")
        self.bt = bt.take(order)
        self.lo, self.hi = keys // n, keys % n
        self.starts = np.r_[0, np.cumsum(counts)[:-1]].astype(np.int64)
        sign = np.where(self.bt.a < self.bt.b, 1.0, -1.0)
        self.sign = sign
        self.sx = self.bt.x * sign[:, None]

    def _to_models(self, per_pair: np.ndarray) -> np.ndarray:
        """Per pair sums t_p (P,) or (P, c) -> per model: + t_p at lo, - t_p at hi."""
        n = self.bt.n
        if per_pair.ndim == 1:
            return np.bincount(self.lo, per_pair, n) - np.bincount(self.hi, per_pair, n)
        return np.column_stack([self._to_models(per_pair[:, c]) for c in range(per_pair.shape[1])])

    def blocks(self, h: np.ndarray, r: np.ndarray | None = None
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]:
        """sum_rows h (e_a - e_b, x)(e_a - e_b, x)^T as its blocks: ratings (n, n) (a weighted graph
        Laplacian), cross (n, k) and features (k, k); with ``r``, also D^T r = sum_rows r (e_a - e_b).
        ``h`` and ``r`` are per battle of ``self.bt`` (sorted)."""
        n, k = self.bt.n, self.bt.x.shape[1]
        M = np.empty((h.size, 1 + k + (r is not None)))
        M[:, 0] = h
        np.multiply(self.sx, h[:, None], out=M[:, 1:1 + k])
        if r is not None:
            np.multiply(self.sign, r, out=M[:, 1 + k])
        S = np.add.reduceat(M, self.starts, axis=0)
        off = S[:, 0]
        rr = np.zeros((n, n))
        rr[self.lo, self.hi] = -off
        rr[self.hi, self.lo] = -off
        rr[np.arange(n), np.arange(n)] = np.bincount(self.lo, off, n) + np.bincount(self.hi, off, n)
        cross = self._to_models(S[:, 1:1 + k])
        ff = self.sx.T @ M[:, 1:1 + k]
        return rr, cross, ff, (None if r is None else self._to_models(S[:, 1 + k]))


def design_of(bt: Battles) -> Design:
    """The battles' ``Design``, built once and shared by the fit and its sandwich."""
    return Design(bt)


def assemble(rr: np.ndarray, cross: np.ndarray, ff: np.ndarray) -> np.ndarray:
    """The (n + k, n + k) symmetric matrix of its ratings, cross and feature blocks."""
    return np.block([[rr, cross], [cross.T, ff]])


def _evaluate(bt: Battles, theta: np.ndarray, beta: np.ndarray, ridge: float) -> tuple[float, np.ndarray]:
    """(the loss, P(a beats b) per battle) with one exponential per battle."""
    logit = theta[bt.a] - theta[bt.b] + bt.x @ beta
    e = np.exp(-np.abs(logit))
    softplus = np.maximum(logit, 0.0) + np.log1p(e)
    p = np.where(logit >= 0, 1.0, e) / (1.0 + e)
    value = float(-np.mean(bt.w * (bt.y * logit - softplus)) + 0.5 * ridge * (beta @ beta))
    return value, p


def fit_style_bt(bt: Battles, *, ridge: float = RIDGE, max_iter: int = 100, start: StyleFit | None = None,
                 check: bool = True, design: Design | None = None) -> StyleFit:
    """Minimise ``loss`` by damped Newton (backtracking on the loss) from zeros (or ``start``: the optimum
    does not depend on it); the ratings keep sum zero, where arena-rank's L-BFGS from zeros ends up.
    ``check``: refuse a selection without a finite optimum first (``check_connected``); ``design``: the
    battles' ``design_of``, when the caller shares it with the sandwich."""
    n, N = bt.n, len(bt)
    if n > STYLE_MODELS_MAX:
        raise LensError(
            f"The style-controlled fit takes at most {STYLE_MODELS_MAX:,} models (its Newton system is "
            f"dense); this selection has {n:,}."
        )
    if N == 0:
        raise LensError("The style-controlled fit has no battle to fit.")
    if check:
        check_connected(bt)
    k = bt.x.shape[1]
    design = design or design_of(bt)
    bt = design.bt
    theta = np.zeros(n) if start is None else start.theta.copy()
    beta = np.zeros(k) if start is None else start.beta.copy()
    current, p = _evaluate(bt, theta, beta, ridge)
    converged = False
    it = 0
    for it in range(1, max_iter + 1):  # noqa: B007 (the count is reported)
        r = bt.w * (bt.y - p) / N
        rr, cross, ff, sums = design.blocks(bt.w * p * (1.0 - p) / N, r)
        assert sums is not None
        g = np.concatenate([-sums, ridge * beta - bt.x.T @ r])
        rr += rr.trace() / (n * n)  # the all-ones direction: any positive constant; a zero-sum step stays so
        step = -_solve_spd(assemble(rr, cross, ff + ridge * np.eye(k)), g)
        step[:n] -= step[:n].mean()
        slope = float(g @ step)
        if -slope <= DECREMENT_TOL:
            theta, beta = theta + step[:n], beta + step[n:]
            converged = True
            break
        t = 1.0
        while True:
            new_theta, new_beta = theta + t * step[:n], beta + t * step[n:]
            new, new_p = _evaluate(bt, new_theta, new_beta, ridge)
            if new <= current + 1e-4 * t * slope or t < 1e-12:
                break
            t *= 0.5
        moved = t * float(np.abs(step).max())
        if new > current and moved > STEP_TOL:  # no decrease even along a tiny step: round-off level
            converged = abs(slope) <= 1e-20
            break
        theta, beta, current, p = new_theta, new_beta, new, new_p
        if moved <= STEP_TOL:
            converged = True
            break
    theta = theta - theta.mean()
    return StyleFit(theta, beta, current, it, converged)


def _solve_spd(H: np.ndarray, g: np.ndarray) -> np.ndarray:
    """H^-1 g for a symmetric positive definite H (Cholesky; a general solve if round-off breaks it)."""
    from scipy.linalg import LinAlgError, cho_factor, cho_solve

    try:
        return cho_solve(cho_factor(H), g)
    except LinAlgError:
        return np.linalg.solve(H, g)


def bootstrap_style(bt: Battles, fit: StyleFit, B: int, seed: int, *, ridge: float = RIDGE
                    ) -> tuple[np.ndarray, np.ndarray, int]:
    """B refits on battles drawn with replacement (the prepared rows resampled, as arena-rank's contextual
    bootstrap does), each warm-started from ``fit``: (B, n) thetas, (B, k) betas, unconverged refits.
    A resample without a finite optimum gives NaN there."""
    rng = np.random.default_rng(seed)
    N = len(bt)
    thetas, betas, bad = np.full((B, bt.n), np.nan), np.full((B, bt.x.shape[1]), np.nan), 0
    for r in range(B):
        sample = bt.take(rng.integers(0, N, N))
        try:
            f = fit_style_bt(sample, ridge=ridge, start=fit)
        except LensError:
            bad += 1
            continue
        thetas[r], betas[r] = f.theta, f.beta
        bad += int(not f.converged)
    return thetas, betas, bad
