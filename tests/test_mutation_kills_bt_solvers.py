"""The BT Newton solver's safeguards, each against the closed form it rests on (mutation pass
survivors: the step-acceptance constant, the MLE spread bound, the cold-start test).

The fits themselves are pinned in test_bt_kernel.py; these pin the pieces that only decide how the
solver gets there, which a planted bug could break without moving any well-behaved fit.
"""

from __future__ import annotations

import numpy as np

from engine.rankers.bt_solvers import SAFE_SPREAD, _loglik, cold_rows, mle_spread_bound, newton_batch


def pair_arrays(w: np.ndarray):
    """(a, b) = (W~_ij, W~_ji) over the pairs i < j of a (B, n, n) stack, the solver's layout."""
    i, j = np.triu_indices(w.shape[1], 1)
    return w[:, i, j], w[:, j, i]


def test_safe_spread_is_inside_the_self_concordance_bound():
    # a step of spread c is safe while phi(c) = (e^c - c - 1) / c^2 < 1; find where phi reaches 1
    def phi(c: float) -> float:
        return (np.exp(c) - c - 1) / c**2

    lo, hi = 1.0, 3.0
    for _ in range(100):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if phi(mid) < 1 else (lo, mid)
    # the bound the module states for SAFE_SPREAD ("c < 1.79") is the true root, rounded down
    import inspect
    import re

    import engine.rankers.bt_solvers as solvers

    stated = float(re.search(r"< 1 for c < ([0-9.]+)", inspect.getsource(solvers)).group(1))
    assert lo - 0.01 < stated <= lo
    assert 0 < SAFE_SPREAD < stated


def test_mle_spread_bound_is_the_closed_form_and_holds():
    # hand-worked: n = 3, pairs (0,1), (0,2), (1,2); w_min = 1, N = 21: bound = 2 log(42)
    a = np.array([[1.0, 2.0, 3.0]])
    b = np.array([[4.0, 5.0, 6.0]])
    np.testing.assert_allclose(mle_spread_bound(a, b), [2 * np.log(42.0)], rtol=1e-12)
    # and it bounds the fitted spread of lopsided, strongly connected data
    rng = np.random.default_rng(7)
    w = np.exp(rng.uniform(-2, 7, (60, 5, 5)))
    w[:, np.arange(5), np.arange(5)] = 0
    theta, _, conv = newton_batch(w)
    assert conv.all()
    spread = theta.max(axis=1) - theta.min(axis=1)
    bound = mle_spread_bound(*pair_arrays(w))
    assert (spread <= bound).all()
    assert (spread > 0.25 * bound).any()  # data lopsided enough for a loose bound to show


def test_cold_rows_compares_with_zeros_and_with_twice_the_bound():
    # two models, 1000 wins to 1: the bound is log(2 * 1001) = 7.6, the MLE spread log(1000) = 6.9
    w = np.array([[[0.0, 1000.0], [1.0, 0.0]]])
    a, b = pair_arrays(w)
    bound = mle_spread_bound(a, b)[0]
    np.testing.assert_allclose(bound, np.log(2002.0))

    def cold(theta):
        theta = np.asarray(theta, dtype=float)[None]
        d = theta[:, :1] - theta[:, 1:]
        return bool(cold_rows(theta, d, np.exp(-np.abs(d)), a, b)[0])

    zero_ll = _loglik(np.zeros((1, 2)), w)[0]
    for theta in ([3.0, -3.0], [0.0, 0.0], [-0.5, 0.5], [-3.0, 3.0], [8.0, -8.0], [20.0, -20.0]):
        t = np.array(theta)
        worse_than_zeros = _loglik(t[None], w)[0] < zero_ll
        too_far = t.max() - t.min() > 2 * bound
        assert cold(t) == (worse_than_zeros or too_far), theta
    # the spread test alone: spread 16 > 2 * 7.6 while far likelier than zeros
    assert _loglik(np.array([[8.0, -8.0]]), w)[0] > zero_ll and cold([8.0, -8.0])
