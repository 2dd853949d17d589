"""Rank Centrality (Negahban, Oh and Shah, 2017), cited by paper 000, Section 2.

A random walk moves from i to j with probability (1 / d_max) * W~_ji / (W~_ij + W~_ji) (toward the
winner), W~ = W + T/2, d_max the largest number of distinct opponents; the rest stays at i. Scores are
the log of the stationary distribution, mean-centred. The stationary law is unique only when the
comparison digraph is strongly connected; otherwise ``alpha`` virtual ties per pair are added and
stated (``on_degenerate="raise"`` refuses).
"""

from __future__ import annotations

import numpy as np

from ..graphs import GraphStack
from .base import RankResult, centred, check_stack, register, series
from .bt import DEFAULT_ALPHA, regularise


def stationary(P: np.ndarray) -> np.ndarray:
    """Stationary distribution of a row-stochastic matrix (least squares on pi (P - I) = 0, sum pi = 1)."""
    n = P.shape[0]
    A = np.vstack([(P - np.eye(n)).T, np.ones((1, n))])
    b = np.zeros(n + 1)
    b[-1] = 1.0
    pi, *_ = np.linalg.lstsq(A, b, rcond=None)
    return np.clip(pi, 1e-300, None)


def transition_matrix(wt: np.ndarray) -> np.ndarray:
    n_ij = wt + wt.T
    frac = np.divide(wt.T, n_ij, out=np.zeros_like(wt), where=n_ij > 0)  # share of i-j games j won
    d_max = max(int((n_ij > 0).sum(axis=1).max()), 1)
    P = frac / d_max
    np.fill_diagonal(P, 0.0)
    np.fill_diagonal(P, 1.0 - P.sum(axis=1))
    return P


@register("rank-centrality", "Rank Centrality: stationary law of a walk toward winners (log, centred)")
def rank_centrality(
    stack: GraphStack, *, alpha: float = DEFAULT_ALPHA, on_degenerate: str = "regularize"
) -> RankResult:
    check_stack(stack, "rank-centrality")
    W, T = stack.win_tie_matrices()
    wt, bad = regularise((W + 0.5 * T)[None], alpha, on_degenerate)
    pi = stationary(transition_matrix(wt[0]))
    details = {
        "score": "log stationary probability, mean-centred",
        "regularisation": (
            f"the walk is not irreducible; added {alpha} virtual tie(s) to every pair" if bad[0] else "none"
        ),
    }
    return RankResult("rank-centrality", series(stack.models, centred(np.log(pi))), details)
