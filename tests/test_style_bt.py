"""The style-controlled Bradley-Terry fit (engine/rankers/style_bt.py) against an independent scipy fit of
arena-rank's contextual loss, written here from its definition: features (a - b) / (a + b) with a total of
0 read as 1, standardised with ddof = 0, inverse pair-count weights floored at 50 and divided by their mean,
ridge 1.0 on beta only, ties 0.5, the mean log-likelihood."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from scipy.optimize import minimize

from engine.errors import LensError
from engine.rankers.bt import fit_bt_pairs
from engine.rankers.style_bt import Battles, bootstrap_style, fit_style_bt
from engine.rankers.votes import PairCounts


def battles(seed: int = 0, n: int = 6, N: int = 400, beta=(0.8, 0.3, 0.0, -0.4), tie_share: float = 0.15,
            verbose: int | None = None):
    """Random battles with per-side counts (tokens in the hundreds, markdown counts small, some zero);
    ``verbose``: a model whose answers are five times longer (it wins by length alone)."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, n, N)
    b = (a + rng.integers(1, n, N)) % n
    a[: N // 3], b[: N // 3] = 0, 1  # one pair sampled far more often (past the weights' floor of 50)
    counts = rng.poisson(2.0, (N, 8)).astype(float)
    counts[:, [0, 4]] = rng.integers(20, 900, (N, 2))
    if verbose is not None:
        counts[a == verbose, 0] *= 5
        counts[b == verbose, 4] *= 5
    rel = (counts[:, :4] - counts[:, 4:]) / np.maximum(counts[:, :4] + counts[:, 4:], 1)
    theta = rng.normal(0, 0.8, n)
    p = 1 / (1 + np.exp(-(theta[a] - theta[b] + rel @ np.asarray(beta))))
    u = rng.random(N)
    y = np.where(u < tie_share, 0.5, (rng.random(N) < p).astype(float))
    return n, a, b, y, counts


def reference_fit(n, a, b, y, counts, *, reweight=True, ddof=0, ridge_ratings=0.0):
    """arena-rank's loss written out here (loops over a dict of pair counts; no code shared with the
    engine) and minimised by scipy's BFGS with its analytic gradient: (theta with sum 0, beta)."""
    k = counts.shape[1] // 2
    z = np.empty((len(a), k))
    for f in range(k):
        for r in range(len(a)):
            tot = counts[r, f] + counts[r, k + f]
            z[r, f] = (counts[r, f] - counts[r, k + f]) / (tot if tot != 0 else 1.0)
    sd = z.std(axis=0, ddof=ddof)
    x = (z - z.mean(axis=0)) / np.where(sd == 0, 1.0, sd)
    if reweight:
        pairs = [frozenset((int(i), int(j))) for i, j in zip(a, b, strict=True)]
        per_pair = Counter(pairs)
        w = np.array([1.0 / max(per_pair[pair], 50) for pair in pairs])
        w = w / w.mean()
    else:
        w = np.ones(len(a))
    N = len(a)

    def f(v):
        th, be = v[:n], v[n:]
        lg = th[a] - th[b] + x @ be
        val = -np.mean(w * (y * lg - np.logaddexp(0, lg))) + 0.5 * be @ be + 0.5 * ridge_ratings * th @ th
        r = w * (y - 1 / (1 + np.exp(-lg))) / N
        g_th = -(np.bincount(a, r, n) - np.bincount(b, r, n)) + ridge_ratings * th
        return val, np.concatenate([g_th, -x.T @ r + be])

    out = minimize(f, np.zeros(n + k), jac=True, method="BFGS", options={"gtol": 1e-13, "maxiter": 5000})
    th = out.x[:n]
    return th - th.mean(), out.x[n:]


def test_fit_equals_an_independent_scipy_fit_of_arena_ranks_loss():
    """Kills: ddof 1 in the standardisation, the ridge on the ratings, unweighted rows, ties as 0 or 1,
    a sum instead of a mean (each moves theta or beta by more than 1e-5 here, ten times the tolerance)."""
    n, a, b, y, counts = battles()
    fit = fit_style_bt(Battles.of_counts(n, a, b, y, counts))
    theta, beta = reference_fit(n, a, b, y, counts)
    assert fit.converged
    np.testing.assert_allclose(fit.theta, theta, atol=1e-6)
    np.testing.assert_allclose(fit.beta, beta, atol=1e-6)
    assert abs(fit.theta.sum()) < 1e-12
    # the reference itself tells the planted bugs apart at this size
    for planted in ({"ddof": 1}, {"reweight": False}, {"ridge_ratings": 1.0}):
        wrong = reference_fit(n, a, b, y, counts, **planted)
        assert max(np.abs(wrong[0] - theta).max(), np.abs(wrong[1] - beta).max()) > 1e-5


def test_unweighted_fit_equals_its_reference_and_many_pairs_weigh_each_pair_alike():
    n, a, b, y, counts = battles(seed=3, n=4, N=300)
    fit = fit_style_bt(Battles.of_counts(n, a, b, y, counts, reweight=False))
    theta, beta = reference_fit(n, a, b, y, counts, reweight=False)
    np.testing.assert_allclose(fit.theta, theta, atol=1e-6)
    np.testing.assert_allclose(fit.beta, beta, atol=1e-6)
    # floor at 50: pairs seen fewer than 50 times all weigh 1/50; the frequent pair weighs 1/its count
    bt = Battles.of_counts(n, a, b, y, counts)
    frequent = np.minimum(a, b) * n + np.maximum(a, b) == 1
    k = int(frequent.sum())
    expect = np.where(frequent, 1.0 / k, 1.0 / 50)
    np.testing.assert_allclose(bt.w, expect / expect.mean())


def test_constant_features_give_beta_zero_and_plain_bradley_terry():
    """With no style variation beta is 0 and the ratings are plain half-tie BT's (alpha 0) on the same
    battles: kills a tie coded other than 0.5 and a sign error in the orientation."""
    n, a, b, y, _ = battles(seed=5, n=5, N=500)
    counts = np.ones((a.size, 8))
    fit = fit_style_bt(Battles.of_counts(n, a, b, y, counts, reweight=False))
    np.testing.assert_allclose(fit.beta, 0.0, atol=1e-12)
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    y_lo = np.where(a < b, y, 1 - y)
    pc = PairCounts.of_votes(tuple("mnopq"), lo, hi, np.sign(y_lo - 0.5).astype(int), votes=None,
                             n_graphs=None, n_prompts=None)
    plain = fit_bt_pairs(n, pc.wtilde_pairs(), alpha=0.0).scores.to_numpy()
    np.testing.assert_allclose(fit.theta, plain, atol=1e-8)


def test_orientation_matters_only_through_the_mean():
    """Swapping a battle's sides (a <-> b, y -> 1 - y, counts swapped) in every battle leaves the fit as it
    is (the mean flips sign with the features); swapping only some changes the standardisation's mean."""
    n, a, b, y, counts = battles(seed=7)
    base = fit_style_bt(Battles.of_counts(n, a, b, y, counts))
    swapped = fit_style_bt(Battles.of_counts(n, b, a, 1 - y, np.hstack([counts[:, 4:], counts[:, :4]])))
    np.testing.assert_allclose(swapped.theta, base.theta, atol=1e-9)
    np.testing.assert_allclose(swapped.beta, base.beta, atol=1e-9)


def test_a_model_that_never_loses_is_refused_in_one_sentence():
    n, a, b, y, counts = battles(seed=2, n=4, N=200)
    y = np.where(a == 0, 1.0, np.where(b == 0, 0.0, y))
    with pytest.raises(LensError, match="never loses"):
        fit_style_bt(Battles.of_counts(n, a, b, y, counts))


def test_bootstrap_refits_match_a_refit_from_zeros():
    """A warm-started resample refit is the refit from zeros (to the solver's tolerance)."""
    n, a, b, y, counts = battles(seed=11, N=300)
    bt = Battles.of_counts(n, a, b, y, counts)
    fit = fit_style_bt(bt)
    thetas, betas, bad = bootstrap_style(bt, fit, 3, seed=4)
    rng = np.random.default_rng(4)
    again = fit_style_bt(bt.take(rng.integers(0, len(bt), len(bt))))
    assert bad == 0
    np.testing.assert_allclose(thetas[0], again.theta, atol=1e-9)
    np.testing.assert_allclose(betas[0], again.beta, atol=1e-9)
