"""Batched bootstrap fits on a graph stack: resampling weights (B, T) → (B, n) scores of every resample at
once.

A bootstrap resample of T graphs is a vector of draw counts c (one per graph); every statistic built from
sums over graphs is then one matrix product c @ (per-graph contributions), and the fit runs on all B
resamples together. Each function here is the batched form of one ranker on a graph stack, called by that
ranker's object (``engine.rankers.objects.Ranker.batched_bootstrap``); for every row of ``c`` it equals the
ranker's single fit on the stack with graph t repeated c[t] times (``tests/test_ranker_objects.py`` checks
that against the refit). Each returns ``(scores (B, n), n_regularised, n_unconverged, how)``, ``how`` the
words for the bootstrap's ``method``.
"""

from __future__ import annotations

import numpy as np

from engine.graphs.stack import GraphStack
from engine.rankers.base import distinct_rows, single_thread_blas
from engine.rankers.bt import DEFAULT_ALPHA, fit_bt_batch_info
from engine.rankers.elspr import cleaned_contributions
from engine.rankers.kemeny import kemeny_scores_batch
from engine.rankers.pged import (
    AGGREGATES,
    DELTA_TIES,
    FAS_METHODS,
    MODES,
    PROMPT_TIES,
    ensemble_descendants,
    pged_per_prompt_scores,
    question_ids,
)
from engine.rankers.simple import (
    borda_points,
    borda_scores,
    graph_weights,
    pairwise_majority_scores,
    ranking_above,
)

BatchFit = tuple[np.ndarray, int, int, str]
"""(B, n) scores, resamples regularised, resamples unconverged, how they were fitted (words)."""


def weighted_sums(c: np.ndarray, per_graph: np.ndarray) -> np.ndarray:
    """(B, T) counts @ (T, n, n) per-graph arrays → (B, n, n) resampled sums (one product)."""
    T, n, _ = per_graph.shape
    return (c.astype(np.float64) @ per_graph.reshape(T, n * n).astype(np.float64)).reshape(-1, n, n)


def pooled_sums(g: np.ndarray, per_graph: np.ndarray, alpha: np.ndarray) -> np.ndarray:
    """``weighted_sums(g, per_graph)`` summed over the distinct per-graph arrays: each one's total weight
    first, then one product over the distinct arrays (a battle log's 27,000 one-pair graphs hold a few
    hundred). Only with whole-number graph weights and per-graph entries in halves, where every partial
    sum is exact in float64 whatever the order, so the sums are the unpooled ones to the bit; otherwise
    ``weighted_sums`` itself."""
    T, n, _ = per_graph.shape
    flat = np.asarray(per_graph, dtype=np.float64).reshape(T, n * n)
    if T == 0 or not np.array_equal(alpha, np.round(alpha)):
        return weighted_sums(g, per_graph)
    first, inverse = distinct_rows(flat)
    kinds = flat[first]
    if not (np.array_equal(kinds * 2, np.round(kinds * 2))
            and np.abs(g).sum(axis=1).max() * max(1.0, np.abs(kinds).max()) < 2.0**50):
        return weighted_sums(g, per_graph)
    by_row = np.argsort(inverse, kind="stable")
    starts = np.flatnonzero(np.r_[True, np.diff(inverse[by_row]) != 0])
    pooled = np.add.reduceat(np.asarray(g, dtype=np.float64)[:, by_row], starts, axis=1)  # whole: exact
    return (pooled @ kinds).reshape(-1, n, n)


def half_tie_sums(stack: GraphStack, c: np.ndarray) -> np.ndarray:
    """(B, n, n) resampled W + T/2 in one float32 product over the graphs drawn at least once.

    Exact: every entry is a sum of halves far below 2**24, so float32 loses nothing, and graphs never
    drawn (all of them but one per distinct pattern when the draw pooled identical graphs) add nothing."""
    n = stack.n
    drawn = np.flatnonzero(np.asarray(c).any(axis=0))
    contrib = (stack.wins[drawn].astype(np.float32) + np.float32(0.5) * stack.ties[drawn]).reshape(
        drawn.size, n * n
    )
    return (np.asarray(c)[:, drawn].astype(np.float32) @ contrib).reshape(-1, n, n).astype(np.float64)


def borda_batch(stack: GraphStack, c: np.ndarray, *, weights=None, normalize: bool = False) -> BatchFit:
    """Weight score / Borda: counts @ per-graph points (over the attainable points when normalised)."""
    points, attainable = borda_points(stack)
    g = c * graph_weights(stack, weights)[None]
    return borda_scores(points, attainable, g, normalize, strict=False), 0, 0, "counts @ per-graph points"


def pairwise_majority_batch(
    stack: GraphStack, c: np.ndarray, *, weights=None, normalize: bool = False
) -> BatchFit:
    """Pairwise majority of per-graph rankings: counts @ per-graph "ranked above" matrices."""
    g = c * graph_weights(stack, weights)[None]
    present = np.asarray(stack.observed.any(axis=2), dtype=np.float64)
    ranked = weighted_sums(g, present[:, :, None] * present[:, None, :]) > 0
    out = pairwise_majority_scores(weighted_sums(g, ranking_above(stack)), ranked, normalize, strict=False)
    return out, 0, 0, "counts @ per-graph 'ranked above' matrices"


def kemeny_batch(stack: GraphStack, c: np.ndarray, *, source: str = "pairs", weights=None,
                 exact_max: int = 12) -> BatchFit | None:
    """Kemeny: counts @ per-graph evidence, then one subset DP vectorised over B (local search beyond
    ``exact_max`` models); None for a source it does not know (the single fit names the mistake)."""
    if source not in ("pairs", "rankings"):
        return None
    alpha = graph_weights(stack, weights)
    g = c * alpha[None]
    per_graph = stack.wins + 0.5 * stack.ties if source == "pairs" else ranking_above(stack)
    scores, _, exact, _ = kemeny_scores_batch(pooled_sums(g, per_graph, alpha), exact_max)
    how = "one subset DP vectorised over B" if exact else "local search per resample"
    return scores, 0, 0, f"counts @ per-graph evidence, {how}"


def elspr_batch(
    stack: GraphStack, c: np.ndarray, *, alpha: float = DEFAULT_ALPHA, on_degenerate: str = "regularize"
) -> BatchFit:
    """ELSPR: its cleaned pairs are fixed per graph, so BT on counts @ the cleaned wins and ties."""
    cw, ct, _ = cleaned_contributions(stack)
    with single_thread_blas():
        fit = fit_bt_batch_info(weighted_sums(c, cw + 0.5 * ct), alpha=alpha, on_degenerate=on_degenerate)
    return (fit.scores, int(fit.regularised.sum()), int((~fit.converged).sum()),
            "fixed cleaned pairs per graph, one batched BT fit")


def pged_batch(stack: GraphStack, c: np.ndarray, *, weights=None, mode: str = "per-prompt",
               aggregate: str = "weight-score", prompt_ties: str = "average", delta_ties: str = "average",
               exact_max: int = 12, fas: str = "greedy") -> BatchFit | None:
    """PGED: global mode = Algorithm 1 on B ensembles at once. Per-prompt mode: the per-question rankings
    are fixed whenever every graph of a question is drawn equally often (prompt resampling, or one graph
    per question), so only the aggregation weights change (question multiplicities); otherwise the B x Q
    per-question ensembles are denoised in one batched pass, each question weighted by the mean draw count
    of its graphs. None for a word it does not know (the single fit names the mistake)."""
    if (
        mode not in MODES
        or aggregate not in AGGREGATES
        or prompt_ties not in PROMPT_TIES
        or delta_ties not in DELTA_TIES
        or fas not in FAS_METHODS
    ):
        return None
    alpha = graph_weights(stack, weights)
    if mode == "global":
        desc = ensemble_descendants(weighted_sums(c * alpha[None], stack.wins), delta_ties, fas)[0]
        how = "Algorithm 1" if fas == "greedy" else "the minimum feedback arc set"
        return desc, 0, 0, f"{how} on all B ensembles at once"
    q_of_t, qkeys = question_ids(stack)
    n_q = len(qkeys)
    cf = c.astype(np.float64)
    size = np.bincount(q_of_t, minlength=n_q).astype(np.float64)
    from scipy import sparse  # here, not at the top: scipy.sparse costs the plain leaderboard's start

    member = sparse.csr_matrix((np.ones(stack.T), (np.arange(stack.T), q_of_t)), shape=(stack.T, n_q))
    m = np.asarray(cf @ member) / size[None]  # mean draw count of each question's graphs
    by_q = np.argsort(q_of_t, kind="stable")  # each question's graphs side by side
    by_q = by_q[size[q_of_t[by_q]] > 1]  # a question of one graph draws its graphs equally often anyway
    fixed = True  # every graph of each question drawn equally often
    if by_q.size:
        starts = np.flatnonzero(np.r_[True, np.diff(q_of_t[by_q]) != 0])
        drawn = cf[:, by_q]
        most, least = np.maximum.reduceat(drawn, starts, axis=1), np.minimum.reduceat(drawn, starts, axis=1)
        fixed = bool((most == least).all())
    score, _ = pged_per_prompt_scores(stack, alpha, m, g=None if fixed else cf, aggregate=aggregate,
                                      prompt_ties=prompt_ties, exact_max=exact_max, delta_ties=delta_ties,
                                      fas=fas)
    if fixed:
        return score, 0, 0, "fixed per-question rankings, aggregation weighted by question multiplicities"
    return (
        score,
        0,
        0,
        (
            "B x Q per-question ensembles denoised in one batched pass, questions weighted by the "
            "mean draw count of their graphs"
        ),
    )
