"""Counting rankers: win rate, Copeland and score-of-win on the majority graph, Borda / weight score,
pairwise majority of per-graph rankings.

- win rate: (wins + ties/2) / comparisons, over all graphs;
- majority graph (paper 000, Appendix A.3): i -> j when W_ij > W_ji on strict wins, an exact
  majority (W_ij == W_ji on a compared pair) is a bidirectional edge; ``scorewin`` ranks by its
  out-degree, ``copeland`` by majority wins + half the exact majorities;
- weight score / Borda (paper 002, Appendix Q, eq. 7-8): each graph ranks its models by in-graph
  wins (+ ties/2); a model at rank r among l gets l - r + 1 points, absent models 0; optional weights;
- pairwise majority (paper 002, Appendix Q, eq. 11-12): Copeland on the (weighted) majority relation
  of the per-graph rankings. Its eq. 11 argmax is the Kemeny order; ``kemeny`` computes that exactly.

Uncompared pairs (incomplete designs, e.g. a judge that saw some model against only half the field):
a pair never compared contributes nothing: no majority edge (Copeland, score-of-win), no draw
(pairwise majority), no points in graphs where the model is absent (Borda, eq. 7). So a model with
fewer opponents collects fewer points. ``normalize=True`` divides by what the model could have
collected: the number of opponents it was compared with (Copeland, score-of-win, pairwise majority)
or the points attainable in the graphs where it appears (Borda). Win rate is a share already.

The kernels take (B, ...) arrays so the bootstrap runs every resample in one array operation.
"""

from __future__ import annotations

import numpy as np

from engine.errors import LensError
from engine.graphs.stack import GraphStack
from engine.rankers.base import RankResult, adjacency_frame, check_stack, register, series

UNCOMPARED = ("pairs never compared count for neither model (no edge, no draw); "
              "a model with fewer opponents can collect fewer points")


def _divide(num: np.ndarray, den: np.ndarray, what: str, strict: bool = True) -> np.ndarray:
    """num / den, NaN where den = 0; ``strict`` refuses that (a single fit), else the NaN stays (a
    bootstrap resample that left a model without comparisons)."""
    out = np.divide(num, den, out=np.full(num.shape, np.nan), where=den > 0)
    if strict and np.isnan(out).any():
        raise LensError(f"The normalised {what} is undefined for a model never compared in this selection.")
    return out


def winrate_scores(W: np.ndarray, T: np.ndarray) -> np.ndarray:
    """(B, n, n) wins and ties → (B, n) (wins + ties/2) / comparisons (NaN without comparisons)."""
    games = (W + W.swapaxes(1, 2) + T).sum(axis=2)
    num = W.sum(axis=2) + 0.5 * T.sum(axis=2)
    return np.divide(num, games, out=np.full(num.shape, np.nan), where=games > 0)


def pair_sums(n: int, lo: np.ndarray, hi: np.ndarray, x_lo: np.ndarray, x_hi: np.ndarray) -> np.ndarray:
    """(b, m) values per compared pair credited to model ``lo`` and to model ``hi`` → (b, n) per-model sums.

    The pair-list form of a row sum over an (n, n) matrix: memory O(b (m + n)), never O(n^2), so the
    counting rankers scale with the compared pairs, not with the models squared (issue 23, bug 13)."""
    from scipy import sparse  # here, not at the top: scipy.sparse costs the plain leaderboard's start ~0.5 s

    m = lo.size
    rows = np.arange(m)
    to_lo = sparse.csr_matrix((np.ones(m), (rows, lo)), shape=(m, n))
    to_hi = sparse.csr_matrix((np.ones(m), (rows, hi)), shape=(m, n))
    x_lo = np.atleast_2d(np.asarray(x_lo, dtype=np.float64))
    x_hi = np.atleast_2d(np.asarray(x_hi, dtype=np.float64))
    return np.asarray(to_lo.T @ x_lo.T + to_hi.T @ x_hi.T).T


def winrate_pairs(n: int, lo: np.ndarray, hi: np.ndarray, w_lo, w_hi, ties) -> np.ndarray:
    """``winrate_scores`` from per-pair counts: (b, m) wins of lo, wins of hi and ties per pair → (b, n)."""
    w_lo, w_hi, ties = (np.atleast_2d(np.asarray(x, dtype=np.float64)) for x in (w_lo, w_hi, ties))
    games = w_lo + w_hi + ties
    total = pair_sums(n, lo, hi, games, games)
    num = pair_sums(n, lo, hi, w_lo + 0.5 * ties, w_hi + 0.5 * ties)
    return np.divide(num, total, out=np.full(num.shape, np.nan), where=total > 0)


def majority_edges(w_lo: np.ndarray, w_hi: np.ndarray, ties: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``majority_graph`` per compared pair: (edge lo -> hi, edge hi -> lo); an exact majority on a
    compared pair is both edges, a pair without a vote neither."""
    compared = (w_lo + w_hi + ties) > 0
    return (w_lo > w_hi) | ((w_lo == w_hi) & compared), (w_hi > w_lo) | ((w_lo == w_hi) & compared)


def copeland_pairs(
    n: int, lo: np.ndarray, hi: np.ndarray, w_lo, w_hi, ties, tie_value: float, normalize: bool = False,
    strict: bool = True,
) -> np.ndarray:
    """``copeland_scores`` from per-pair counts ((b, m) or (m,)) → (b, n), without an (n, n) array."""
    w_lo, w_hi, ties = (np.atleast_2d(np.asarray(x, dtype=np.float64)) for x in (w_lo, w_hi, ties))
    e_lo, e_hi = majority_edges(w_lo, w_hi, ties)
    both = e_lo & e_hi
    score = pair_sums(n, lo, hi, (e_lo & ~e_hi) + tie_value * both, (e_hi & ~e_lo) + tie_value * both)
    if normalize:
        compared = (w_lo + w_hi + ties) > 0
        score = _divide(score, pair_sums(n, lo, hi, compared, compared), "Copeland score", strict)
    return score


def adjacency_of_pairs(
    n: int, lo: np.ndarray, hi: np.ndarray, e_lo: np.ndarray, e_hi: np.ndarray
) -> np.ndarray:
    """(n, n) bool adjacency from per-pair edges (lo -> hi, hi -> lo): for display only (small n)."""
    adj = np.zeros((n, n), dtype=bool)
    adj[lo, hi] = e_lo
    adj[hi, lo] = e_hi
    return adj


@register("winrate", "share of comparisons won, ties counting one half")
def winrate(stack: GraphStack) -> RankResult:
    """Share of comparisons won over all graphs, ties counting one half; refuses a never-compared model."""
    check_stack(stack, "winrate")
    W, T = stack.win_tie_matrices()
    score = winrate_scores(W[None], T[None])[0]
    if np.isnan(score).any():
        missing = [m for m, s in zip(stack.models, score, strict=True) if np.isnan(s)]
        raise LensError(
            f"Win rate is undefined for models never compared in this selection: {', '.join(missing)}."
        )
    return RankResult("winrate", series(stack.models, score),
                      {"score": "(wins + ties/2) / comparisons", "uncompared_pairs": "not counted (a share)"})


def majority_graph(W: np.ndarray, compared: np.ndarray) -> np.ndarray:
    """Majority graph from strict wins (paper 000, Appendix A.3): exact majorities are bidirectional.

    Works on (n, n) or (B, n, n); pairs not ``compared`` get no edge.
    """
    Wt = np.swapaxes(W, -1, -2)
    adj = (W > Wt) | ((W == Wt) & compared)
    n = W.shape[-1]
    return adj & ~np.eye(n, dtype=bool)


def copeland_scores(
    W: np.ndarray, compared: np.ndarray, tie_value: float, normalize: bool = False, strict: bool = True
) -> np.ndarray:
    """(B, n, n) strict wins and compared pairs → (B, n) majority wins + tie_value * exact majorities."""
    adj = majority_graph(W, compared)
    one_way = adj & ~adj.swapaxes(1, 2)
    tie = adj & adj.swapaxes(1, 2)
    score = one_way.sum(axis=2) + tie_value * tie.sum(axis=2)
    if normalize:
        n = W.shape[-1]
        opponents = (compared & ~np.eye(n, dtype=bool)).sum(axis=2)
        score = _divide(score.astype(np.float64), opponents, "Copeland score", strict)
    return score.astype(np.float64)


def _policy(normalize: bool) -> str:
    return UNCOMPARED + ("; normalised: divided by the number of opponents the model was compared with"
                         if normalize else "; not normalised (normalize=true divides by compared opponents)")


@register("copeland", "Copeland on the majority graph: pairs won + half the exact majorities")
def copeland(stack: GraphStack, *, normalize: bool = False) -> RankResult:
    """Pairs won by majority over the graphs plus half the exact majorities (paper 000, A.3)."""
    check_stack(stack, "copeland")
    W, _ = stack.win_tie_matrices()
    compared = np.asarray(stack.observed.any(axis=0))
    score = copeland_scores(W[None], compared[None], 0.5, normalize)[0]
    return RankResult(
        "copeland", series(stack.models, score),
        {"score": "pairs won by strict-win majority + half the exact majorities (paper 000, A.3)",
         "uncompared_pairs": _policy(normalize), "normalized": bool(normalize)},
        {"graph": adjacency_frame(stack.models, majority_graph(W, compared))},
    )


@register("scorewin", "score-of-win: out-degree of the majority graph, exact majorities both ways")
def scorewin(stack: GraphStack, *, normalize: bool = False) -> RankResult:
    """Out-degree of the majority graph with exact majorities counted as a win both ways."""
    check_stack(stack, "scorewin")
    W, _ = stack.win_tie_matrices()
    compared = np.asarray(stack.observed.any(axis=0))
    score = copeland_scores(W[None], compared[None], 1.0, normalize)[0]
    return RankResult(
        "scorewin",
        series(stack.models, score),
        {
            "score": "out-degree of the strict-win majority graph, exact majorities as two edges (paper 000, "
                     "A.3)",
            "uncompared_pairs": _policy(normalize),
            "normalized": bool(normalize),
        },
        {"graph": adjacency_frame(stack.models, majority_graph(W, compared))},
    )


def graph_rankings(stack: GraphStack) -> tuple[np.ndarray, np.ndarray]:
    """Per-graph competition ranks (T, n) by in-graph wins + ties/2, and the presence mask (T, n)."""
    score = stack.wins.sum(axis=2) + 0.5 * stack.ties.sum(axis=2)
    present = np.asarray(stack.observed.any(axis=2))
    s = np.where(present, score, -np.inf)
    ranks = 1 + (s[:, None, :] > s[:, :, None]).sum(axis=2)
    return ranks, present


def _judge_weight(judge: str, value: object) -> float:
    try:
        x = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise LensError(f"The weight of judge {judge!r} is {value!r}, not a number.") from None
    if not np.isfinite(x) or x < 0:
        raise LensError(
            f"The weight of judge {judge!r} is {value!r}; a judge weight must be a finite number >= 0."
        )
    return x


def graph_weights(stack: GraphStack, weights: np.ndarray | dict | None) -> np.ndarray:
    """Per-graph weights alpha_t: None → 1, an array of length T, or a dict judge → weight.

    Weights must be finite and non-negative, and not all zero over the selection's graphs (that would
    leave nothing to rank); a dict names the offending judge.
    """
    if weights is None:
        return np.ones(stack.T)
    if isinstance(weights, dict):
        checked = {str(j): _judge_weight(str(j), v) for j, v in weights.items()}
        judges = stack.keys["judge"].astype(str)
        unknown = sorted(set(judges) - set(checked))
        if unknown:
            raise LensError(f"No weight given for judge(s) {', '.join(unknown)}.")
        w = judges.map(checked).to_numpy(np.float64)
        if stack.T and not (w > 0).any():
            raise LensError(f"Every judge of the selection has weight 0 ({', '.join(sorted(set(judges)))}); "
                            "give at least one a positive weight.")
        return w
    w = np.asarray(weights, dtype=np.float64)
    if w.shape != (stack.T,):
        raise LensError(f"Expected {stack.T} graph weights, got {w.size}.")
    if not np.isfinite(w).all() or (w < 0).any():
        raise LensError("Graph weights must be finite and non-negative.")
    if stack.T and not (w > 0).any():
        raise LensError("Every graph weight is 0; give at least one graph a positive weight.")
    return w


def borda_points(stack: GraphStack) -> tuple[np.ndarray, np.ndarray]:
    """(T, n) weight-score points l_t - r_t + 1 (0 when absent, eq. 7) and (T, n) attainable points l_t."""
    ranks, present = graph_rankings(stack)
    length = present.sum(axis=1, keepdims=True)
    points = np.where(present, length - ranks + 1, 0).astype(np.float64)
    return points, np.where(present, length, 0).astype(np.float64)


def borda_scores(
    points: np.ndarray, attainable: np.ndarray, g: np.ndarray, normalize: bool = False, strict: bool = True
) -> np.ndarray:
    """Weight score for graph weights g (B, T): g @ points, optionally over g @ attainable."""
    score = g @ points
    return _divide(score, g @ attainable, "weight score", strict) if normalize else score


@register("borda", "weight score / Borda over per-graph rankings (paper 002, Appendix Q)")
def borda(
    stack: GraphStack, *, weights: np.ndarray | dict | None = None, normalize: bool = False
) -> RankResult:
    """Borda points of each graph's ranking, weighted per graph and summed (paper 002, Appendix Q)."""
    check_stack(stack, "borda")
    points, attainable = borda_points(stack)
    alpha = graph_weights(stack, weights)
    score = borda_scores(points, attainable, alpha[None], normalize)[0]
    return RankResult(
        "borda",
        series(stack.models, score),
        {
            "score": "sum over graphs of alpha_t (l_t - r_t + 1) (paper 002, eq. 7-8)",
            "weighted": weights is not None,
            "uncompared_pairs": "a model absent from a graph gets 0 points there (eq. 7)"
            + (
                "; normalised: divided by the points attainable in the graphs where it appears"
                if normalize
                else "; not normalised (normalize=true divides by the attainable points)"
            ),
            "normalized": bool(normalize),
        },
    )


def ranking_above(stack: GraphStack) -> np.ndarray:
    """(T, n, n) bool: graph t ranks i strictly above j, both present."""
    ranks, present = graph_rankings(stack)
    both = present[:, :, None] & present[:, None, :]
    return (ranks[:, :, None] < ranks[:, None, :]) & both


def ranking_preferences(stack: GraphStack, weights: np.ndarray | dict | None = None) -> np.ndarray:
    """C[i, j] = sum_t alpha_t 1{graph t ranks i strictly above j} (paper 002, eq. 11-12)."""
    alpha = graph_weights(stack, weights)
    return np.einsum("t,tij->ij", alpha, ranking_above(stack).astype(np.float64))


def pairwise_majority_scores(
    C: np.ndarray, ranked: np.ndarray, normalize: bool = False, strict: bool = True
) -> np.ndarray:
    """(B, n, n) preferences and ranked pairs (some graph had both) → (B, n) majority wins + half the
    draws."""
    n = C.shape[-1]
    Ct = C.swapaxes(1, 2)
    ranked = ranked & ~np.eye(n, dtype=bool)
    score = (C > Ct).sum(axis=2) + 0.5 * ((C == Ct) & ranked).sum(axis=2)
    if normalize:
        score = _divide(score.astype(np.float64), ranked.sum(axis=2), "pairwise-majority score", strict)
    return score.astype(np.float64)


@register("pairwise-majority", "Copeland on the (weighted) majority of per-graph rankings (paper 002, Q)")
def pairwise_majority(
    stack: GraphStack, *, weights: np.ndarray | dict | None = None, normalize: bool = False
) -> RankResult:
    """Copeland on the weighted majority of the per-graph rankings (paper 002, Appendix Q)."""
    check_stack(stack, "pairwise-majority")
    alpha = graph_weights(stack, weights)
    C = ranking_preferences(stack, weights)
    both = stack.observed.any(axis=2)
    ranked = np.einsum("t,ti,tj->ij", alpha, both.astype(np.float64), both.astype(np.float64)) > 0
    score = pairwise_majority_scores(C[None], ranked[None], normalize)[0]
    return RankResult(
        "pairwise-majority",
        series(stack.models, score),
        {
            "score": "pairs where a (weighted) majority of graph rankings put the model above, + half the "
                     "draws",
            "weighted": weights is not None,
            "uncompared_pairs": _policy(normalize),
            "normalized": bool(normalize),
        },
    )
