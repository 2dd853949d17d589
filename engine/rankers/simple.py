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
"""

from __future__ import annotations

import numpy as np

from ..errors import LensError
from ..graphs import GraphStack
from .base import RankResult, adjacency_frame, check_stack, register, series


@register("winrate", "share of comparisons won, ties counting one half")
def winrate(stack: GraphStack) -> RankResult:
    check_stack(stack, "winrate")
    W, T = stack.win_tie_matrices()
    games = (W + W.T + T).sum(axis=1)
    score = np.divide(W.sum(axis=1) + 0.5 * T.sum(axis=1), games, out=np.full(stack.n, np.nan), where=games > 0)
    if np.isnan(score).any():
        missing = [m for m, s in zip(stack.models, score, strict=True) if np.isnan(s)]
        raise LensError(f"Win rate is undefined for models never compared in this selection: {', '.join(missing)}.")
    return RankResult("winrate", series(stack.models, score), {"score": "(wins + ties/2) / comparisons"})


def majority_graph(W: np.ndarray, compared: np.ndarray) -> np.ndarray:
    """Majority graph from strict wins (paper 000, Appendix A.3): exact majorities are bidirectional."""
    adj = (W > W.T) | ((W == W.T) & compared)
    np.fill_diagonal(adj, False)
    return adj


@register("copeland", "Copeland on the majority graph: pairs won + half the exact majorities")
def copeland(stack: GraphStack) -> RankResult:
    check_stack(stack, "copeland")
    W, _ = stack.win_tie_matrices()
    compared = stack.observed.any(axis=0)
    adj = majority_graph(W, compared)
    strict = adj & ~adj.T
    tie = adj & adj.T
    score = strict.sum(axis=1) + 0.5 * tie.sum(axis=1)
    return RankResult(
        "copeland", series(stack.models, score),
        {"score": "pairs won by strict-win majority + half the exact majorities (paper 000, A.3)"},
        {"graph": adjacency_frame(stack.models, adj)},
    )


@register("scorewin", "score-of-win: out-degree of the majority graph, exact majorities both ways")
def scorewin(stack: GraphStack) -> RankResult:
    check_stack(stack, "scorewin")
    W, _ = stack.win_tie_matrices()
    adj = majority_graph(W, stack.observed.any(axis=0))
    return RankResult(
        "scorewin", series(stack.models, adj.sum(axis=1)),
        {"score": "out-degree of the strict-win majority graph, exact majorities as two edges (paper 000, A.3)"},
        {"graph": adjacency_frame(stack.models, adj)},
    )


def graph_rankings(stack: GraphStack) -> tuple[np.ndarray, np.ndarray]:
    """Per-graph competition ranks (T, n) by in-graph wins + ties/2, and the presence mask (T, n)."""
    score = stack.wins.sum(axis=2) + 0.5 * stack.ties.sum(axis=2)
    present = stack.observed.any(axis=2)
    s = np.where(present, score, -np.inf)
    ranks = 1 + (s[:, None, :] > s[:, :, None]).sum(axis=2)
    return ranks, present


def graph_weights(stack: GraphStack, weights: np.ndarray | dict | None) -> np.ndarray:
    """Per-graph weights alpha_t: None → 1, an array of length T, or a dict judge → weight."""
    if weights is None:
        return np.ones(stack.T)
    if isinstance(weights, dict):
        judges = stack.keys["judge"].astype(str)
        unknown = sorted(set(judges) - set(weights))
        if unknown:
            raise LensError(f"No weight given for judge(s) {', '.join(unknown)}.")
        return judges.map(weights).to_numpy(np.float64)
    w = np.asarray(weights, dtype=np.float64)
    if w.shape != (stack.T,):
        raise LensError(f"Expected {stack.T} graph weights, got {w.size}.")
    if (w < 0).any():
        raise LensError("Graph weights must be non-negative.")
    return w


@register("borda", "weight score / Borda over per-graph rankings (paper 002, Appendix Q)")
def borda(stack: GraphStack, *, weights: np.ndarray | dict | None = None) -> RankResult:
    check_stack(stack, "borda")
    ranks, present = graph_rankings(stack)
    length = present.sum(axis=1, keepdims=True)
    points = np.where(present, length - ranks + 1, 0).astype(np.float64)
    alpha = graph_weights(stack, weights)
    score = alpha @ points
    return RankResult(
        "borda", series(stack.models, score),
        {"score": "sum over graphs of alpha_t (l_t - r_t + 1) (paper 002, eq. 7-8)", "weighted": weights is not None},
    )


def ranking_preferences(stack: GraphStack, weights: np.ndarray | dict | None = None) -> np.ndarray:
    """C[i, j] = sum_t alpha_t 1{graph t ranks i strictly above j} (paper 002, eq. 11-12)."""
    ranks, present = graph_rankings(stack)
    alpha = graph_weights(stack, weights)
    both = present[:, :, None] & present[:, None, :]
    above = (ranks[:, :, None] < ranks[:, None, :]) & both
    return np.einsum("t,tij->ij", alpha, above.astype(np.float64))


@register("pairwise-majority", "Copeland on the (weighted) majority of per-graph rankings (paper 002, Q)")
def pairwise_majority(stack: GraphStack, *, weights: np.ndarray | dict | None = None) -> RankResult:
    check_stack(stack, "pairwise-majority")
    C = ranking_preferences(stack, weights)
    won = (C > C.T).sum(axis=1)
    tied = ((C == C.T) & ~np.eye(stack.n, dtype=bool)).sum(axis=1)
    return RankResult(
        "pairwise-majority", series(stack.models, won + 0.5 * tied),
        {"score": "pairs where a (weighted) majority of graph rankings put the model above, + half the draws",
         "weighted": weights is not None},
    )
