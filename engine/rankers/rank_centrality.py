"""Rank Centrality (Negahban, Oh and Shah, 2017), cited by paper 000, Section 1.1.

A random walk moves from i to j with probability (1 / d_max) * W~_ji / (W~_ij + W~_ji) (toward the
winner), W~ = W + T/2, d_max the largest number of distinct opponents; the rest stays at i. Scores are
the log of the stationary distribution, mean-centred. The stationary law is unique only when the
comparison digraph is strongly connected; otherwise ``alpha`` virtual ties per pair are added and
stated (``on_degenerate="raise"`` refuses). Above ``DENSE_MODELS_MAX`` models the stationary law is
solved on the sparse chain of the compared pairs (``rank_centrality_pairs``), never an (n, n) array.
"""

from __future__ import annotations

import numpy as np

from engine.graphs.stack import GraphStack
from engine.rankers.base import RankResult, centred, check_stack, register, series, single_thread_blas
from engine.rankers.bt import DEFAULT_ALPHA, regularise, regularise_pairs
from engine.rankers.bt_solvers import DENSE_MODELS_MAX

STATIONARY_RTOL = 1e-13
"""Relative residual at which the sparse stationary law's linear system is taken as solved (GMRES)."""


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
    """(B, n, n) W~ → ((B, n) mean-centred log stationary laws, (B,) regularised) in one array pass
    (above ``DENSE_MODELS_MAX`` models one ``rank_centrality_pairs`` fit per matrix: the dense solve is
    O(n^3))."""
    w = np.asarray(wtilde, dtype=np.float64)
    if w.ndim == 3 and w.shape[1] > DENSE_MODELS_MAX:
        fits = []
        for wk in w:
            i, j = np.nonzero(np.triu((wk + wk.T) > 0, 1))
            fits.append(rank_centrality_pairs(w.shape[1], (i, j, wk[i, j], wk[j, i]), alpha, on_degenerate))
        return (np.concatenate([s for s, _ in fits]).reshape(len(fits), w.shape[1]),
                np.concatenate([b for _, b in fits]).astype(bool))
    wt, bad = regularise(wtilde, alpha, on_degenerate)
    with single_thread_blas():
        pi = stationary_batch(transition_batch(wt))
    return centred(np.log(pi)), bad


def stationary_pairs(n: int, i: np.ndarray, j: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The walk's stationary law from the compared pairs (i < j, a = W~_ij, b = W~_ji), never an (n, n)
    array: with P_ij = W~_ji / N_ij / d_max off the diagonal, pi solves (I - P^T + 1 1^T) pi = 1 (the
    balance equations plus sum(pi) = 1; nonsingular for an irreducible chain), by Jacobi-preconditioned
    GMRES on the sparse P (O(pairs + n) memory)."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.linalg import LinearOperator, gmres

    n_ij = a + b
    deg = np.bincount(i, minlength=n) + np.bincount(j, minlength=n)
    d_max = float(max(deg.max(initial=0), 1))
    to_j = b / n_ij / d_max  # i -> j: the share j won
    to_i = a / n_ij / d_max  # j -> i: the share i won
    # P^T: entry (dest, src)
    pt = coo_matrix((np.concatenate([to_j, to_i]), (np.concatenate([j, i]), np.concatenate([i, j]))),
                    shape=(n, n)).tocsr()
    leave = np.bincount(i, to_j, n) + np.bincount(j, to_i, n)  # 1 - P_ii

    def matvec(x: np.ndarray) -> np.ndarray:
        x = np.ravel(x)
        return leave * x - pt @ x + x.sum()

    op = LinearOperator((n, n), matvec=matvec, dtype=np.float64)
    pre = LinearOperator((n, n), matvec=lambda x: np.ravel(x) / (leave + 1.0), dtype=np.float64)
    pi, _ = gmres(op, np.ones(n), x0=np.full(n, 1.0 / n), rtol=STATIONARY_RTOL, atol=0.0, restart=50,
                  maxiter=max(200, n), M=pre)
    return np.clip(pi, 1e-300, None)


def rank_centrality_pairs(
    n: int, pairs: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray], alpha: float = DEFAULT_ALPHA,
    on_degenerate: str = "regularize",
) -> tuple[np.ndarray, np.ndarray]:
    """``rank_centrality_batch`` for one fit from the compared pairs (i, j, a, b: i < j, a = W~_ij,
    b = W~_ji), as
    ((1, n) scores, (1,) regularised): the dense kernel up to ``DENSE_MODELS_MAX`` models (its numbers),
    ``stationary_pairs`` above (memory O(pairs + n))."""
    i, j = np.asarray(pairs[0], dtype=np.int64), np.asarray(pairs[1], dtype=np.int64)
    a, b = pairs[2], pairs[3]
    if n <= DENSE_MODELS_MAX:
        w = np.zeros((1, n, n))
        w[0, i, j], w[0, j, i] = a, b
        return rank_centrality_batch(w, alpha, on_degenerate)
    i, j, a, b, bad = regularise_pairs(n, i, j, a, b, alpha, on_degenerate, ranker="Rank Centrality")
    return centred(np.log(stationary_pairs(n, i, j, a, b)))[None], np.array([bad])


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
