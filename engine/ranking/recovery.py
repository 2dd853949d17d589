"""How well a ranking fitted from part of the data recovers the full-data ranking (issue 27, point 5).

Four numbers per estimate, each against one reference ranking of the same models (scores, higher =
better), batched over B estimates:

- ``kendall``: Kendall tau distance, the share of model pairs the two rankings order oppositely, where
  a pair tied in either ranking counts 1/2. That is the expected distance when every tie is broken
  uniformly at random (independently in the two rankings), so an estimate that knows nothing (all
  scores equal) scores 1/2, as a random order does, never 0. Without ties it is (1 - tau) / 2.
- ``spearman``: Spearman's rank correlation on average ranks (tied scores share their mean rank), as
  ``scipy.stats.spearmanr`` computes it; a ranking with every score equal carries no order and gets 0
  (scipy: NaN).
- ``top1`` and ``top5`` (any ``k``): the expected share of the reference's top k that the estimate's
  top k holds, both top-k sets drawn by breaking ties uniformly at random: sum over models of
  P(in the estimate's top k) * P(in the reference's top k), divided by k. A model in a tied group that
  straddles place k is in the top k with probability (places left) / (group size).

Why tie-aware: early in active judging many models have no verdicts yet and tie at the prior's score;
counting those ties as agreement would make the smallest budgets look best.
"""

from __future__ import annotations

import numpy as np

from engine.errors import LensError
from engine.ranking.distances import RANK_RTOL, fractional_ranks

RECOVERY_METRICS: tuple[str, ...] = ("kendall", "spearman", "top1", "top5")
"""Column names of ``recovery``'s result, in the order reports show them."""


def _tie_groups(scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(B, n) scores -> (above, size): per model, how many score strictly higher and its tie group's size.

    Ties are the leaderboard's (``fractional_ranks``: scores within RANK_RTOL of each other along the
    sorted order), read back from the average ranks: a group of g models after ``above`` others has
    average rank above + (g + 1) / 2 and g equal members.
    """
    ranks = fractional_ranks(scores, rtol=RANK_RTOL)
    same = np.abs(ranks[:, :, None] - ranks[:, None, :]) < 1e-9
    size = same.sum(axis=2).astype(np.float64)
    above = ranks - (size + 1.0) / 2.0
    return above, size


def top_k_probability(scores: np.ndarray, k: int) -> np.ndarray:
    """(B, n) -> (B, n): each model's chance to be in the top ``k`` when ties are broken at random."""
    above, size = _tie_groups(np.atleast_2d(np.asarray(scores, dtype=np.float64)))
    return np.clip((k - above) / size, 0.0, 1.0)


def _pair_signs(ranks: np.ndarray) -> np.ndarray:
    """(B, n) ranks -> (B, n, n) sign(rank_j - rank_i): +1 when i is ahead of j, 0 for a tie."""
    return np.sign(ranks[:, None, :] - ranks[:, :, None])


def recovery(
    scores: np.ndarray, ref_scores: np.ndarray, ks: tuple[int, ...] = (1, 5)
) -> dict[str, np.ndarray]:
    """The recovery numbers (module docstring) of B estimates (B, n) against one reference (n,).

    Both are scores over the same n models in the same column order. Returns ``kendall``, ``spearman``
    and ``top{k}`` for each k in ``ks``, each an array of B values.
    """
    est = np.atleast_2d(np.asarray(scores, dtype=np.float64))
    ref = np.asarray(ref_scores, dtype=np.float64)
    n = ref.size
    if est.shape[1] != n:
        raise LensError(f"The estimate ranks {est.shape[1]} models and the reference {n}; they must match.")
    if n < 2:
        raise LensError("Ranking recovery needs at least two models.")
    if not (np.isfinite(est).all() and np.isfinite(ref).all()):
        raise LensError("Ranking recovery needs finite scores for every model.")
    r_est = fractional_ranks(est)
    r_ref = fractional_ranks(ref[None, :])
    s_est, s_ref = _pair_signs(r_est), _pair_signs(r_ref)
    product = s_est * s_ref
    # discordant 1, concordant 0, a tie on either side 1/2; each unordered pair is seen twice
    pair_cost = np.where(product < 0, 1.0, np.where(product > 0, 0.0, 0.5))
    pair_cost[:, np.arange(n), np.arange(n)] = 0.0
    kendall = pair_cost.sum(axis=(1, 2)) / (n * (n - 1))
    d_est = r_est - r_est.mean(axis=1, keepdims=True)
    d_ref = r_ref - r_ref.mean(axis=1, keepdims=True)
    norm = np.sqrt((d_est**2).sum(axis=1) * (d_ref**2).sum(axis=1))
    spearman = np.divide((d_est * d_ref).sum(axis=1), norm, out=np.zeros(est.shape[0]), where=norm > 0)
    out = {"kendall": kendall, "spearman": spearman}
    for k in ks:
        if not 1 <= k <= n:
            raise LensError(f"Top-{k} recovery needs 1 <= k <= {n} models.")
        p_est, p_ref = top_k_probability(est, k), top_k_probability(ref[None, :], k)
        out[f"top{k}"] = (p_est * p_ref).sum(axis=1) / k
    return out
