"""The batched Bradley-Terry Newton kernel (engine.rankers.bt) against slow twins and choix.

The protocols and curves fit tens of thousands of BT models with warm starts, chunks and an
active set; these tests pin down that none of that changes the solution.
"""

from __future__ import annotations

import contextlib

import choix
import numpy as np
import pytest

from engine.rankers.bt import fit_bt_batch, fit_bt_batch_info, regularise
from engine.rankers.bt_solvers import _ll_pairs, _loglik, mm_batch, newton_batch, spd_solve


def random_wtilde(B, n, seed, density=1.0, scale=6):
    """Half-tie win matrices of random tournaments: integer wins plus halves for ties."""
    rng = np.random.default_rng(seed)
    strength = rng.normal(0, 1.5, (B, n))
    games = rng.integers(1, scale + 1, (B, n, n)) * (rng.random((B, n, n)) < density)
    games = np.triu(games, 1)
    games = games + games.swapaxes(1, 2)
    p = 1 / (1 + np.exp(-(strength[:, :, None] - strength[:, None, :])))
    wins = rng.binomial(np.triu(games, 1), p)
    ties = np.triu(rng.binomial(games - wins, 0.2), 1)
    losses = np.triu(games, 1) - wins - ties
    w = wins + 0.5 * ties + (losses + 0.5 * ties).swapaxes(1, 2)
    return w.astype(np.float64)


def test_pair_loglik_equals_the_dense_twin():
    rng = np.random.default_rng(0)
    w = random_wtilde(40, 6, 1)
    theta = rng.normal(0, 4, (40, 6))
    i, j = np.triu_indices(6, 1)
    d = theta[:, i] - theta[:, j]
    got = _ll_pairs(d, np.exp(-np.abs(d)), w[:, i, j] + w[:, j, i], w[:, j, i])
    np.testing.assert_allclose(got, _loglik(theta, w), rtol=1e-12)


def test_spd_solve_matches_numpy():
    rng = np.random.default_rng(1)
    a = rng.normal(size=(50, 9, 9))
    m = a @ a.swapaxes(1, 2) + 0.1 * np.eye(9)
    rhs = rng.normal(size=(50, 9))
    np.testing.assert_allclose(spd_solve(m, rhs), np.linalg.solve(m, rhs[:, :, None])[:, :, 0], atol=1e-10)
    # and against the systems themselves (the line above is numpy's own solve, as the function is now)
    x = spd_solve(m, rhs)
    np.testing.assert_allclose(np.einsum("bij,bj->bi", m, x), rhs, atol=1e-9)


def test_spd_solve_takes_a_matrix_that_is_not_positive_definite_alone():
    """One matrix of the batch is indefinite: it is solved all the same (LU), and every other system's
    solution is the same bits as in a batch without it."""
    rng = np.random.default_rng(2)
    a = rng.normal(size=(12, 7, 7))
    m = a @ a.swapaxes(1, 2) + 0.1 * np.eye(7)
    rhs = rng.normal(size=(12, 7))
    bad = m.copy()
    bad[5] = np.diag([1.0, -2.0, 3.0, 1.0, 1.0, 1.0, 1.0])
    got = spd_solve(bad, rhs)
    np.testing.assert_allclose(got[5], rhs[5] / np.diag(bad[5]), rtol=1e-14)
    keep = np.arange(12) != 5
    np.testing.assert_array_equal(got[keep], spd_solve(m[keep], rhs[keep]))
    for b in (0, 11):
        np.testing.assert_array_equal(got[b], spd_solve(m[b:b + 1], rhs[b:b + 1])[0])


def test_newton_matches_choix_and_reaches_the_optimum():
    w = random_wtilde(30, 8, 2)
    wr, bad = regularise(w, 0.1)
    theta, _, conv = newton_batch(wr)
    assert conv.all()
    for b in range(30):
        ref = choix.ilsr_pairwise_dense(wr[b], tol=1e-13, max_iter=100_000)
        np.testing.assert_allclose(theta[b], ref - ref.mean(), atol=1e-7)
    # the gradient at the returned point is at round-off level (one Newton step after the stop rule)
    d = theta[:, :, None] - theta[:, None, :]
    grad = wr.sum(axis=2) - ((wr + wr.swapaxes(1, 2)) / (1 + np.exp(-d))).sum(axis=2)
    assert np.abs(grad).max() < 1e-9 * wr.sum(axis=(1, 2)).max()


@pytest.mark.parametrize("spread", [0.1, 3.0, 30.0])
def test_any_warm_start_gives_the_cold_solution(spread):
    w = random_wtilde(200, 7, 3, density=0.8)
    cold = fit_bt_batch(w)
    rng = np.random.default_rng(4)
    warm = fit_bt_batch(w, theta0=cold + rng.normal(0, spread, cold.shape))
    assert np.abs(warm - cold).max() < 1e-10
    far = fit_bt_batch(w, theta0=rng.normal(0, spread, cold.shape))
    assert np.abs(far - cold).max() < 1e-10


def test_chunks_and_batch_composition_do_not_change_a_fit():
    w = random_wtilde(300, 6, 5, density=0.6)  # some sparse: regularised fits mixed in
    info = fit_bt_batch_info(w)
    assert info.regularised.any() and not info.regularised.all() and info.converged.all()
    for chunk in (1, 7, 256, 1000):
        np.testing.assert_allclose(fit_bt_batch(w, chunk=chunk), info.scores, atol=1e-12)
    np.testing.assert_allclose(fit_bt_batch(w[::-1])[::-1], info.scores, atol=1e-12)
    theta_mm, _, conv = mm_batch(regularise(w, 0.1)[0], tol=1e-13)
    assert conv.all()
    np.testing.assert_allclose(info.scores, theta_mm, atol=1e-8)


def pure_newton_step(theta, w):
    """Dense twin: one undamped Newton step of the BT log-likelihood for a single (n, n) matrix."""
    d = theta[:, None] - theta[None, :]
    p = 1 / (1 + np.exp(-d))
    n_ij = w + w.T
    g = w.sum(axis=1) - (n_ij * p).sum(axis=1)
    c = n_ij * p * (1 - p)
    lap = np.diag(c.sum(axis=1)) - c
    return np.linalg.solve(lap + 1 / theta.size, g)


def test_a_step_that_lowers_the_likelihood_is_taken_back():
    # lopsided counts: the MLE is far from 0, so the first Newton steps are long and checked
    w = np.array([[0, 40, 40, 40], [0.5, 0, 30, 30], [0.5, 1, 0, 25], [0.5, 1, 1, 0]], dtype=float)
    ref = choix.ilsr_pairwise_dense(w, tol=1e-13, max_iter=1_000_000)
    theta, it, conv = newton_batch(w[None])
    assert conv.all() and it < 30
    np.testing.assert_allclose(theta[0], ref - ref.mean(), atol=1e-7)
    # from this start a plain Newton step (even shortened to the spread cap) lowers the likelihood,
    # so the backtracking branch has to act, and the fit still ends at the optimum
    start = np.array([1.0, -1.0, -6.0, -4.0])
    step = pure_newton_step(start, w)
    short = step * min(1.0, 8.0 / (step.max() - step.min()))
    for s in (step, short):
        assert _loglik((start + s)[None], w[None])[0] < _loglik(start[None], w[None])[0]
    theta, _, conv = newton_batch(w[None], theta0=start[None])
    assert conv.all()
    np.testing.assert_allclose(theta[0], ref - ref.mean(), atol=1e-7)


def test_a_big_batch_split_over_two_threads_is_each_fit_alone_bit_for_bit(monkeypatch):
    """200 fits of 40 models (some regularised) are THREAD_PAIRS of work and more: a foreground call splits
    them over two threads; a background one (the app's warming) fits its four parts one by one on its own
    thread until a page's run waits for background work, then the rest on two; every fit is the same bits
    as fitted alone, every way."""
    import threading

    from engine import foreground
    from engine.rankers import bt_solvers

    monkeypatch.setattr("os.cpu_count", lambda: 2)
    w = random_wtilde(200, 40, 11, density=0.15)
    # the fits that take the most iterations last: the batch's count must come from the second part too
    w = w[np.argsort([fit_bt_batch_info(w[k:k + 1]).iterations for k in range(len(w))], kind="stable")]
    assert bt_solvers.newton_threads(200, 40) == 2
    calls: list[tuple[str, int]] = []  # (thread, fits) of each newton_batch call
    page_waits = threading.Event()  # set: the first call enters ``waiting()``, as a page's run would
    real = bt_solvers.newton_batch

    def seen(*args, **kwargs):
        if page_waits.is_set() and not calls:
            stack.enter_context(foreground.waiting())
        calls.append((threading.current_thread().name, len(args[0])))
        return real(*args, **kwargs)

    monkeypatch.setattr("engine.rankers.bt.newton_batch", seen)
    both = fit_bt_batch_info(w)
    names = {name for name, _ in calls}
    assert len(names) == 2 and all(n.startswith("lens-newton") for n in names)
    assert both.regularised.any() and not both.regularised.all() and both.converged.all()
    alone = [fit_bt_batch_info(w[k:k + 1]) for k in range(len(w))]
    each = np.concatenate([f.scores for f in alone])
    assert np.array_equal(both.scores.view(np.int64), each.view(np.int64))
    assert both.iterations == max(f.iterations for f in alone)  # the slowest fit's, whichever part held it
    assert max(f.iterations for f in alone[:100]) < both.iterations
    # warm starts, each row its own: the second half's fits must get the second half's starts
    starts = both.scores + np.random.default_rng(12).normal(0, 0.05, (200, 40))  # near: kept, not cold
    warm = fit_bt_batch_info(w, theta0=starts)
    warm_alone = np.concatenate([fit_bt_batch_info(w[k:k + 1], theta0=starts[k:k + 1]).scores
                                 for k in range(len(w))])
    assert np.array_equal(warm.scores.view(np.int64), warm_alone.view(np.int64))
    here = threading.current_thread().name
    calls.clear()
    with foreground.background():
        one = fit_bt_batch_info(w)
    assert calls == [(here, 50)] * 4  # one thread, four parts
    assert np.array_equal(one.scores.view(np.int64), both.scores.view(np.int64))
    assert one.iterations == both.iterations
    # a page's run starts waiting while the first part is fitted: the three left go on two threads
    calls.clear()
    page_waits.set()
    with contextlib.ExitStack() as stack, foreground.background():
        waited = fit_bt_batch_info(w)
    assert calls[0] == (here, 50) and sorted(n for _, n in calls[1:]) == [50, 50, 50]
    assert {name for name, _ in calls[1:]} <= names and len({name for name, _ in calls[1:]}) == 2
    assert not foreground.awaited()
    assert np.array_equal(waited.scores.view(np.int64), both.scores.view(np.int64))
    assert waited.iterations == both.iterations
    assert fit_bt_batch_info(np.zeros((0, 40, 40))).scores.shape == (0, 40)  # an empty batch: no part
