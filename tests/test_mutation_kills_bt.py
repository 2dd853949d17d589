"""Half-tie BT's documented regularisation and its empty batch (mutation pass survivors), each
against a second computation: choix on the hand-regularised matrix, the shape of the input."""

from __future__ import annotations

import choix
import numpy as np

from engine.rankers.bt import fit_bt, fit_bt_batch


def test_the_default_regularisation_is_alpha_one_tenth_virtual_ties():
    # model 0 never loses: no MLE; the documented default adds 0.1 virtual ties (0.05 to each side)
    W = np.array([[0, 3, 2, 4], [0, 0, 2, 1], [0, 1, 0, 3], [0, 2, 1, 0]], dtype=float)
    T = np.array([[0, 0, 0, 0], [0, 0, 0, 2], [0, 0, 0, 1], [0, 2, 1, 0]], dtype=float)
    res = fit_bt(W, T, list("abcd"))
    assert res.details["alpha"] == 0.1
    wt = W + 0.5 * T + 0.05 * (1 - np.eye(4))
    ref = choix.ilsr_pairwise_dense(wt, tol=1e-13, max_iter=1_000_000)
    np.testing.assert_allclose(res.scores.to_numpy(), ref - ref.mean(), atol=1e-7)


def test_an_empty_batch_gives_an_empty_fit():
    # regularise's strong-connectivity check reshaped (0, n, n) to (0, -1), which numpy refuses
    for n in (2, 5):
        assert fit_bt_batch(np.zeros((0, n, n))).shape == (0, n)
