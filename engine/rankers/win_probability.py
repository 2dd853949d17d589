"""Win probabilities a fitted model predicts for every pair of models (LMArena's "predicted win rate"
heatmap): the (n, n) matrix P[i, j] = the share of i's battles against j that i is expected to win, ties
counted half, so it reads on the same scale as the empirical win fraction (W + T/2) / games.

Each function takes the fitted ratings, not a fit, so any model of the Bradley-Terry family can use it:
a style-controlled BT passes its ratings (the prediction at zero style difference) and gets the plain
BT form. The diagonal is NaN (a model never meets itself).
"""

from __future__ import annotations

import numpy as np


def _diagonal_nan(p: np.ndarray) -> np.ndarray:
    np.fill_diagonal(p, np.nan)
    return p


def bt_win_probabilities(ratings) -> np.ndarray:
    """Bradley-Terry: P[i, j] = sigma(theta_i - theta_j) for natural-log strengths ``ratings``. Under the
    half-tie model the fit treats a tie as half a win, so this is also the expected win share."""
    from scipy.special import expit  # here: scipy.special costs a command's start-up 0.1-0.2 s

    theta = np.asarray(ratings, dtype=np.float64)
    return _diagonal_nan(expit(theta[:, None] - theta[None, :]))


def davidson_win_shares(ratings, nu: float) -> np.ndarray:
    """Davidson: P(i wins) + P(tie) / 2 = (pi_i + nu sqrt(pi_i pi_j) / 2) / D with
    D = pi_i + pi_j + nu sqrt(pi_i pi_j), computed as (e^(d/2) + nu/2) / (e^(d/2) + e^(-d/2) + nu)
    with d = theta_i - theta_j (no overflow below |d| = 1400)."""
    theta = np.asarray(ratings, dtype=np.float64)
    half = 0.5 * (theta[:, None] - theta[None, :])
    up, down = np.exp(half), np.exp(-half)
    return _diagonal_nan((up + 0.5 * nu) / (up + down + nu))


def elo_expected_scores(ratings, base: float = 10.0, scale: float = 400.0) -> np.ndarray:
    """Elo's own expectation: E[i, j] = 1 / (1 + base^((r_j - r_i) / scale)), the share of points i is
    expected to score against j (the quantity its updates move towards)."""
    from scipy.special import expit

    r = np.asarray(ratings, dtype=np.float64)
    return _diagonal_nan(expit((r[:, None] - r[None, :]) * np.log(base) / scale))
