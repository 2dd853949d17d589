"""Sandwich (robust) standard errors H^-1 G H^-1 for Bradley-Terry fits, with arena-rank 0.1.1's arithmetic
so that its intervals can be checked against ours (bench/check_arena_rank.py), and z-quantile intervals.

H is the loss's Hessian at the optimum, G the covariance of the per-battle gradients: where the model is
right they agree and the sandwich is H^-1; where battles vary more than the model says (judges that
disagree, pairs that are not transitive) G grows and so do the intervals. One matrix product replaces a
bootstrap's refits.

- Plain BT (arena-rank's ``BradleyTerry`` on its ``PairDataset``: identical (a, b, outcome) battles
  aggregated, no reweighting): per compared pair with p = P(lo beats hi), H_pair = p (1 - p) N_pair and
  G_pair = W_lo (1 - p)^2 + W_hi p^2 + T (1/2 - p)^2 (each battle's squared gradient: a battle's
  orientation does not change it), both spread over the pair's Laplacian entries; H gets
  1e-5 * (total battles) on its diagonal (the ratings' all-ones direction has no curvature, and G none
  either); covariance H^-1 G H^-1.
- Style-controlled BT (arena-rank's ``ContextualBradleyTerry``): per battle h = p (1 - p) w / N and
  g = ((y - p) w)^2 / N over the ratings, cross and feature blocks; H without the ridge, 1e-5 on its whole
  diagonal; G less (ridge^2 / N) (0, beta)(0, beta)^T; covariance H^-1 G H^-1 / N. arena-rank reports the
  ratings' errors from this matrix, and so do we. It reports none for beta, and this matrix would be
  wrong for it: beta is shrunk by the ridge, so its curvature includes the ridge's, and without it beta's
  intervals came out 7-9 times wider than its bootstrap's (docs/notes/audit-24.md). Beta's errors
  therefore come from the same sandwich with the ridge added to H's beta block (the penalised loss's
  Hessian), which matches the bootstrap spread (tests/test_sandwich.py).

Intervals: estimate -/+ z_(1 - (1 - level) / 2) * standard error (arena-rank's ``significance_level`` is
1 - level).
"""

from __future__ import annotations

import numpy as np

from engine.errors import LensError
from engine.rankers.style_bt import RIDGE, STYLE_MODELS_MAX, Battles, Design, StyleFit, assemble, design_of

HESSIAN_REG = 1e-5
"""arena-rank's ``hessian_reg``: added to the Hessian's diagonal (times the total battles for plain BT)."""

SANDWICH_MODELS_MAX = STYLE_MODELS_MAX
"""Most models the sandwich takes: it inverts a dense (n, n) Hessian."""


def z_quantile(level: float) -> float:
    """The standard normal quantile z with P(|Z| <= z) = level (1.96 for 0.95)."""
    if not 0.0 < level < 1.0:
        raise LensError(f"The confidence level must lie strictly between 0 and 1; got {level}.")
    from scipy.special import ndtri  # here, not at the top: scipy.special slows every command's start

    return float(ndtri(1.0 - (1.0 - level) / 2.0))


def sandwich_diagonal(H: np.ndarray, G: np.ndarray) -> np.ndarray:
    """diag(H^-1 G H^-1) for a symmetric H (one inverse and a row-wise product)."""
    Hi = np.linalg.inv(H)
    return np.einsum("ij,ji->i", Hi @ G, Hi)


def sandwich_matrix(H: np.ndarray, G: np.ndarray) -> np.ndarray:
    """The whole H^-1 G H^-1 for a symmetric H: the covariance of differences of estimates (a win rate
    against a baseline reads theta_m - theta_b, whose variance needs the off-diagonal term)."""
    Hi = np.linalg.inv(H)
    out = Hi @ G @ Hi
    return (out + out.T) / 2.0


def _laplacian(n: int, lo: np.ndarray, hi: np.ndarray, v: np.ndarray) -> np.ndarray:
    """sum_pairs v (e_lo - e_hi)(e_lo - e_hi)^T as a dense (n, n) matrix."""
    out = np.zeros((n, n))
    np.add.at(out, (lo, hi), -v)
    np.add.at(out, (hi, lo), -v)
    out[np.arange(n), np.arange(n)] += np.bincount(lo, weights=v, minlength=n) + np.bincount(hi, weights=v,
                                                                                          minlength=n)
    return out


def bt_sandwich(n: int, lo: np.ndarray, hi: np.ndarray, wins_lo: np.ndarray, wins_hi: np.ndarray,
                ties: np.ndarray, theta: np.ndarray, *, hessian_reg: float = HESSIAN_REG,
                covariance: bool = False) -> np.ndarray:
    """Standard errors (n,) of plain BT's natural-log strengths ``theta`` from per-pair counts (lo < hi,
    each pair once): arena-rank's ``BradleyTerry`` sandwich (module docstring); ``covariance``: the whole
    (n, n) matrix instead, whose diagonal is their squares."""
    if n > SANDWICH_MODELS_MAX:
        raise LensError(
            f"Sandwich intervals take at most {SANDWICH_MODELS_MAX:,} models (a dense Hessian is inverted); "
            f"this selection has {n:,}; use --ci bootstrap."
        )
    lo, hi = np.asarray(lo, dtype=np.int64), np.asarray(hi, dtype=np.int64)
    wl, wh, t = (np.asarray(v, dtype=np.float64) for v in (wins_lo, wins_hi, ties))
    from scipy.special import expit

    p = expit(theta[lo] - theta[hi])
    battles = wl + wh + t
    H = _laplacian(n, lo, hi, p * (1.0 - p) * battles)
    H[np.diag_indices(n)] += hessian_reg * float(battles.sum())
    G = _laplacian(n, lo, hi, wl * (1.0 - p) ** 2 + wh * p ** 2 + t * (0.5 - p) ** 2)
    if covariance:
        return sandwich_matrix(H, G)
    return np.sqrt(np.maximum(sandwich_diagonal(H, G), 0.0))


def style_sandwich(bt: Battles, fit: StyleFit, *, ridge: float = RIDGE, hessian_reg: float = HESSIAN_REG,
                   design: Design | None = None, covariance: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Standard errors (theta (n,), beta (k,)) of a style-controlled fit: arena-rank's
    ``ContextualBradleyTerry`` sandwich (module docstring); ``design``: the fit's, when shared;
    ``covariance``: (the ratings' (n, n) covariance, beta's standard errors) instead."""
    n, N = bt.n, len(bt)
    design = design or design_of(bt)
    bt = design.bt
    from scipy.special import expit

    p = expit(fit.theta[bt.a] - fit.theta[bt.b] + bt.x @ fit.beta)
    H = assemble(*design.blocks(p * (1.0 - p) * bt.w / N)[:3])
    H[np.diag_indices_from(H)] += hessian_reg
    G = assemble(*design.blocks(((bt.y - p) * bt.w) ** 2 / N)[:3])
    vec = np.concatenate([np.zeros(n), fit.beta])
    G -= (ridge ** 2 / N) * np.outer(vec, vec)
    penalised = H.copy()
    penalised[np.arange(n, H.shape[0]), np.arange(n, H.shape[0])] += ridge
    se_beta = np.sqrt(np.maximum(sandwich_diagonal(penalised, G)[n:] / N, 0.0))
    if covariance:
        return sandwich_matrix(H, G)[:n, :n] / N, se_beta
    return np.sqrt(np.maximum(sandwich_diagonal(H, G)[:n] / N, 0.0)), se_beta
