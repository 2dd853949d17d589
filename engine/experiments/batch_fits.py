"""Rankers fitted on many W~ rows at once (the resampling protocols' and curves' inner loop):
Bradley-Terry on half-tie win matrices with identical draws fitted once, and Copeland on majority graphs.
"""

from __future__ import annotations

import numpy as np

from engine.graphs.stack import GraphStack


def copeland_majority_batch(
    wins: np.ndarray, tie_value: float = 1.0, compared: np.ndarray | None = None
) -> np.ndarray:
    """Score-of-win on majority graphs, batched: (B, n, n) strict-win counts → (B, n) scores.

    The majority graph has i → j when i beat j in more graphs than j beat i, and both edges when
    the counts are equal (an exact majority, paper 000 Appendix A.3); the score is the out-degree
    with an exact majority credited ``tie_value`` (1 = plain out-degree as ``rankers`` ``scorewin``,
    0.5 = classic Copeland as ``rankers`` ``copeland``). Pairs never compared (``compared`` False,
    (B, n, n)) have no edge; without ``compared`` every pair counts as compared.
    """
    from engine.rankers.simple import copeland_scores  # the one Copeland kernel (rankers copeland / scorewin)

    w = np.asarray(wins, dtype=np.float64)
    seen = np.ones(w.shape, dtype=bool) if compared is None else np.asarray(compared, dtype=bool)
    return copeland_scores(w, seen, tie_value, normalize=False, strict=False)


def unique_rows(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(first index of each distinct row, inverse map): identical draws are fitted once.

    Rows are grouped by a random projection (fast) and the grouping is then checked exactly; if
    two different rows ever shared a projection, nothing is merged.
    """
    counts = np.asarray(counts)
    if counts.shape[0] == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    h = counts @ np.random.default_rng(0).random(counts.shape[1])
    _, first, inverse = np.unique(h, return_index=True, return_inverse=True)
    inverse = inverse.ravel()
    if not np.array_equal(counts, counts[first[inverse]]):
        return np.arange(counts.shape[0]), np.arange(counts.shape[0])
    return first, inverse


def bt_scores_info(wt: np.ndarray, theta0: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(B, n, n) half-tie win matrices → ((B, n) BT log-strengths, (B,) converged flags); equal
    matrices with equal starts are fitted once.

    ``theta0`` (B, n) warm-starts each fit (e.g. a draw from the fit of the graphs it was drawn from); the
    result does not depend on it beyond round-off. A fit whose
    flag is False stopped at the solver's iteration cap (``engine.rankers.bt.newton_batch``).
    """
    from engine.rankers.bt import fit_bt_batch_info

    wt = np.asarray(wt, dtype=np.float64)
    B, n, _ = wt.shape
    if B == 0:
        return np.zeros((0, n)), np.zeros(0, dtype=bool)
    first, inverse = unique_rows(wt.reshape(B, n * n))
    start = None
    if theta0 is not None:
        # a fit's last bits depend on its start: a matrix met again with another start (another cell's draw,
        # started from that cell's point fit) is fitted again
        start = np.asarray(theta0, dtype=np.float64).reshape(B, n)
        other = np.flatnonzero(~(start[first[inverse]] == start).all(axis=1))
        if other.size:
            inverse = inverse.copy()
            inverse[other] = first.size + np.arange(other.size)
            first = np.concatenate([first, other])
        start = start[first]
    fit = fit_bt_batch_info(wt[first], theta0=start)
    return fit.scores[inverse], np.asarray(fit.converged, dtype=bool)[inverse]


def bt_scores(wt: np.ndarray, theta0: np.ndarray | None = None) -> np.ndarray:
    """(B, n, n) half-tie win matrices → (B, n) BT log-strengths (``bt_scores_info`` without the flags)."""
    return bt_scores_info(wt, theta0)[0]


def flat_matrices(stack: GraphStack) -> dict[str, np.ndarray]:
    """Per graph, flattened (T, n²) strict wins, half-tie wins W + T/2 (paper 000, Section 3.2)
    and the compared-pair mask."""
    wins = stack.wins.astype(np.float64)
    ties = stack.ties.astype(np.float64)
    T, n = stack.T, stack.n
    return {"wins": wins.reshape(T, n * n), "wtilde": (wins + 0.5 * ties).reshape(T, n * n),
            "observed": stack.observed.astype(np.float64).reshape(T, n * n)}


__all__ = ["bt_scores", "bt_scores_info", "copeland_majority_batch", "flat_matrices", "unique_rows"]
