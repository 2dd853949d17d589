"""Rank Centrality (Negahban, Oh and Shah, 2017), cited by paper 000, Section 1.1.

A random walk moves from i to j with probability (1 / d_max) * W~_ji / (W~_ij + W~_ji) (toward the
winner), W~ = W + T/2, d_max the largest number of distinct opponents; the rest stays at i. Scores are
the log of the stationary distribution, mean-centred. The stationary law is unique only when the
comparison digraph is strongly connected; otherwise ``alpha`` virtual ties per pair are added and
stated (``on_degenerate="raise"`` refuses).
"""

from __future__ import annotations

import numpy as np

from engine.graphs.stack import GraphStack
from engine.rankers.base import RankResult, centred, check_stack, register, series, single_thread_blas
from engine.rankers.bt import DEFAULT_ALPHA, regularise


def stationary_batch(P: np.ndarray) -> np.ndarray:
    """(B, n, n) row-stochastic, irreducible → (B, n) stationary laws, one batched linear solve."""
    B, n, _ = P.shape
    A = (P - np.eye(n)[None]).swapaxes(1, 2).copy()
    A[:, -1, :] = 1.0
    b = np.zeros((B, n, 1))
    b[:, -1, 0] = 1.0
    pi = np.linalg.solve(A, b)[:, :, 0]
    return np.clip(pi, 1e-300, None)


def transition_batch(wt: np.ndarray) -> np.ndarray:
    """(B, n, n) W~ → (B, n, n) walk toward winners: P_ij = W~_ji / (W~_ij + W~_ji) / d_max, rest stays."""
    B, n, _ = wt.shape
    n_ij = wt + wt.swapaxes(1, 2)
    frac = np.divide(wt.swapaxes(1, 2), n_ij, out=np.zeros_like(wt), where=n_ij > 0)  # share j won
    d_max = np.maximum((n_ij > 0).sum(axis=2).max(axis=1), 1).astype(np.float64)
    P = frac / d_max[:, None, None]
    idx = np.arange(n)
    P[:, idx, idx] = 0.0
    P[:, idx, idx] = 1.0 - P.sum(axis=2)
    return P


def rank_centrality_batch(
    wtilde: np.ndarray, alpha: float = DEFAULT_ALPHA, on_degenerate: str = "regularize"
):
    """(B, n, n) W~ → ((B, n) mean-centred log stationary laws, (B,) regularised) in one array pass."""
    wt, bad = regularise(wtilde, alpha, on_degenerate)
    with single_thread_blas():
        pi = stationary_batch(transition_batch(wt))
    return centred(np.log(pi)), bad


@register("rank-centrality", "Rank Centrality: stationary law of a walk toward winners (log, centred)")
def rank_centrality(
    stack: GraphStack, *, alpha: float = DEFAULT_ALPHA, on_degenerate: str = "regularize"
) -> RankResult:
    """Rank Centrality on the stack's W + T/2: log stationary probabilities, mean-centred."""
    check_stack(stack, "rank-centrality")
    W, T = stack.win_tie_matrices()
    score, bad = rank_centrality_batch((W + 0.5 * T)[None], alpha, on_degenerate)
    details = {
        "score": "log stationary probability, mean-centred",
        "regularisation": (
            f"the comparison digraph is not strongly connected (no unique stationary law); added {alpha} "
            "virtual tie(s) to every pair"
            if bad[0]
            else "none"
        ),
        "alpha": alpha if bad[0] else 0.0,
    }
    return RankResult("rank-centrality", series(stack.models, score[0]), details)
