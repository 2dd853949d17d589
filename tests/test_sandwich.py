"""Sandwich standard errors (engine/rankers/sandwich.py) against the direct formula written here on the
battles themselves: dense per-battle gradient rows U, the Hessian by central finite differences of the
loss's gradient (no Laplacian assembly shared with the engine), arena-rank's corrections (1e-5 on the
Hessian's diagonal, times the total battles for plain BT; G less (ridge^2 / N) (0, beta)(0, beta)^T, and
/ N for the style fit)."""

from __future__ import annotations

import numpy as np

from engine.rankers.bt import fit_bt_pairs
from engine.rankers.sandwich import bt_sandwich, style_sandwich, z_quantile
from engine.rankers.style_bt import Battles, fit_style_bt
from engine.rankers.votes import PairCounts
from tests.test_style_bt import battles


def fd_hessian(grad, v: np.ndarray, h: float = 1e-5) -> np.ndarray:
    """Central finite differences of a gradient function: the Hessian, symmetrised."""
    m = v.size
    out = np.empty((m, m))
    for i in range(m):
        e = np.zeros(m)
        e[i] = h
        out[:, i] = (grad(v + e) - grad(v - e)) / (2 * h)
    return (out + out.T) / 2


def incidence(n: int, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    u = np.zeros((a.size, n))
    u[np.arange(a.size), a] = 1.0
    u[np.arange(a.size), b] -= 1.0
    return u


def test_style_sandwich_equals_the_direct_formula():
    """The ratings' errors are arena-rank's (the Hessian without the ridge); beta's come from the penalised
    Hessian (the ridge on its beta block). Kills: G without the ridge correction, the ridge inside the
    ratings' Hessian, beta's errors without it, no / N, no hessian_reg (each moves a standard error by more
    than the 1e-6 relative tolerance here)."""
    n, a, b, y, counts = battles(seed=21)
    bt = Battles.of_counts(n, a, b, y, counts)
    fit = fit_style_bt(bt)
    N, k = len(bt), bt.x.shape[1]
    U = np.hstack([incidence(n, a, b), bt.x])

    def grad(v):  # gradient of the mean weighted log-loss without the ridge
        p = 1 / (1 + np.exp(-(U @ v)))
        return -U.T @ (bt.w * (bt.y - p)) / N

    v = np.concatenate([fit.theta, fit.beta])
    H = fd_hessian(grad, v) + 1e-5 * np.eye(n + k)
    p = 1 / (1 + np.exp(-(U @ v)))
    G = U.T @ (U * (((bt.y - p) * bt.w) ** 2 / N)[:, None])
    G -= np.outer(np.r_[np.zeros(n), fit.beta], np.r_[np.zeros(n), fit.beta]) / N
    Hi = np.linalg.inv(H)
    Hr = np.linalg.inv(H + np.diag(np.r_[np.zeros(n), np.ones(k)]))  # the penalised loss's Hessian
    se = np.sqrt(np.diag(Hi @ G @ Hi) / N)
    se_pen = np.sqrt(np.diag(Hr @ G @ Hr) / N)
    se_theta, se_beta = style_sandwich(bt, fit)
    np.testing.assert_allclose(se_theta, se[:n], rtol=1e-6)
    np.testing.assert_allclose(se_beta, se_pen[n:], rtol=1e-6)
    # the planted bugs the tolerance must catch, measured on the reference itself
    G0 = G + np.outer(np.r_[np.zeros(n), fit.beta], np.r_[np.zeros(n), fit.beta]) / N
    no_correction = np.sqrt(np.diag(Hr @ G0 @ Hr) / N)[n:]  # (it moves the ratings' errors by ~1e-7 only)
    assert np.abs(no_correction / se_pen[n:] - 1).max() > 1e-5
    assert np.abs(se_pen[:n] / se[:n] - 1).max() > 1e-5  # the ridge inside the ratings' Hessian
    assert np.abs(se[n:] / se_pen[n:] - 1).max() > 1e-5  # beta's errors without the ridge


def test_style_sandwich_beta_errors_match_the_bootstrap_spread():
    """Beta is shrunk by the ridge, so its sandwich must include the ridge's curvature: its standard errors
    then match the spread of beta over refits on battles resampled with replacement (within 25 %, for
    200 resamples of 6,000 battles); without the ridge they come out several times wider (kills that)."""
    rng = np.random.default_rng(5)
    n, N = 8, 6000
    a = rng.integers(0, n, N)
    b = (a + rng.integers(1, n, N)) % n
    x = rng.normal(size=(N, 2))
    theta = np.linspace(-1, 1, n)
    p = 1 / (1 + np.exp(-(theta[a] - theta[b] + x @ np.array([0.4, -0.2]))))
    y = (rng.random(N) < p).astype(float)
    bt = Battles(n, a, b, y, x, np.ones(N), np.zeros(2), np.ones(2), False)
    fit = fit_style_bt(bt)
    _se_theta, se_beta = style_sandwich(bt, fit)
    draws = []
    for _ in range(200):
        i = rng.integers(0, N, N)
        draws.append(fit_style_bt(Battles(n, a[i], b[i], y[i], x[i], np.ones(N), np.zeros(2), np.ones(2),
                                          False)).beta)
    spread = np.std(draws, axis=0, ddof=1)
    np.testing.assert_allclose(se_beta, spread, rtol=0.25)


def test_plain_bt_sandwich_equals_the_direct_formula_on_the_battles():
    """Plain BT (alpha 0): per-battle gradients (y - p) and curvature p (1 - p), the Hessian 1e-5 x the
    total battles on its diagonal (arena-rank's BradleyTerry, unweighted). Kills: ties' gradient taken as
    a win's, the regularisation without the battle count, G built from the pair totals instead of the
    battles."""
    n, a, b, y, _ = battles(seed=8, n=5, N=600)
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    y_lo = np.where(a < b, y, 1 - y)
    pc = PairCounts.of_votes(tuple("vwxyz"), lo, hi, np.sign(y_lo - 0.5).astype(int), votes=None,
                             n_graphs=None, n_prompts=None)
    theta = fit_bt_pairs(n, pc.wtilde_pairs(), alpha=0.0).scores.to_numpy()
    U = incidence(n, a, b)
    N = a.size

    def grad(v):  # gradient of the summed log-loss (BradleyTerry's Hessian is not divided by N)
        return -U.T @ (y - 1 / (1 + np.exp(-(U @ v))))

    H = fd_hessian(grad, theta) + 1e-5 * N * np.eye(n)
    p = 1 / (1 + np.exp(-(U @ theta)))
    G = U.T @ (U * ((y - p) ** 2)[:, None])
    Hi = np.linalg.inv(H)
    se = np.sqrt(np.diag(Hi @ G @ Hi))
    got = bt_sandwich(n, pc.lo, pc.hi, pc.wins_lo, pc.wins_hi, pc.ties, theta)
    np.testing.assert_allclose(got, se, rtol=1e-6)
    # the gradient at the optimum sums to zero over each model's battles: the fit is the MLE
    assert np.abs(grad(theta)).max() < 1e-8


def test_sandwich_is_the_inverse_hessian_when_the_model_is_right():
    """On outcomes that are their own probabilities (G = H without regularisation) the sandwich reduces to
    H^-1 on the ratings' zero-sum subspace: the errors equal the pseudo-inverse's (to the 1e-5 ridge)."""
    n = 4
    lo, hi = np.array([0, 0, 0, 1, 1, 2]), np.array([1, 2, 3, 2, 3, 3])
    theta = np.array([0.6, 0.2, -0.1, -0.7])
    p = 1 / (1 + np.exp(-(theta[lo] - theta[hi])))
    m = 1e6
    wl, wh = p * m, (1 - p) * m  # expected counts: the MLE is theta itself
    got = bt_sandwich(n, lo, hi, wl, wh, np.zeros(6), theta)
    L = np.zeros((n, n))
    for i, j, v in zip(lo, hi, p * (1 - p) * m, strict=True):
        L[i, i] += v
        L[j, j] += v
        L[i, j] -= v
        L[j, i] -= v
    np.testing.assert_allclose(got, np.sqrt(np.diag(np.linalg.pinv(L))), rtol=1e-3)


def test_z_quantile():
    assert abs(z_quantile(0.95) - 1.959963984540054) < 1e-12
    assert abs(z_quantile(0.9) - 1.6448536269514722) < 1e-12
