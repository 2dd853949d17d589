"""Kemeny consensus (paper 002, Appendix Q, eq. 9-10): the order agreeing best with pairwise evidence.

Given C[i, j] = evidence that i is above j, find the order maximising the sum of C[i, j] over pairs
with i placed before j (equivalently minimising the weighted Kendall disagreement). Exact by dynamic
programming over subsets (Held-Karp style, O(2^n n^2)) for n <= ``exact_max`` (12 by default, 16 at
most); beyond that a stated heuristic: start from the Copeland order of C, then move single models to
their best position until no move improves (a local optimum, not a certified one).

Evidence: ``source="pairs"`` uses C = W + T/2 over graphs (each graph's outcome on each pair);
``source="rankings"`` uses per-graph rankings (paper 002, eq. 11). Optional per-graph weights
(eq. 10, weighted Kemeny).
"""

from __future__ import annotations

import numpy as np

from ..errors import LensError
from ..graphs import GraphStack
from .base import RankResult, check_stack, register, series
from .simple import graph_weights, ranking_preferences

EXACT_LIMIT = 16


def agreement(C: np.ndarray, order: list[int] | tuple[int, ...]) -> float:
    """Sum of C[i, j] over pairs where i comes before j in ``order``."""
    idx = np.asarray(order)
    sub = np.asarray(C, dtype=np.float64)[np.ix_(idx, idx)]
    return float(np.triu(sub, 1).sum())


def kemeny_exact(C: np.ndarray) -> list[int]:
    """Exact Kemeny order by DP over subsets: best[S] = best agreement placing S first."""
    C = np.asarray(C, dtype=np.float64)
    n = C.shape[0]
    full = (1 << n) - 1
    best = np.full(1 << n, -np.inf)
    choice = np.full(1 << n, -1, dtype=np.int64)
    best[0] = 0.0
    bits = np.array([1 << v for v in range(n)], dtype=np.int64)
    rowsum = C.sum(axis=1) - np.diag(C)
    for mask in range(1 << n):
        base = best[mask]
        if base == -np.inf:
            continue
        in_s = (mask & bits) != 0
        # placing v next: v beats everything not yet placed; gain = sum_{u not in S, u != v} C[v, u]
        placed_sum = C[:, in_s].sum(axis=1)
        gain = rowsum - placed_sum
        for v in np.flatnonzero(~in_s):
            nm = mask | (1 << int(v))
            val = base + gain[v]
            if val > best[nm]:
                best[nm] = val
                choice[nm] = v
    order: list[int] = []
    mask = full
    while mask:
        v = int(choice[mask])
        order.append(v)
        mask &= ~(1 << v)
    return order[::-1]


def kemeny_local(C: np.ndarray) -> list[int]:
    """Heuristic: Copeland start, then best single-model moves until no move improves agreement."""
    C = np.asarray(C, dtype=np.float64)
    n = C.shape[0]
    order = list(np.argsort(-(C - C.T).sum(axis=1), kind="stable"))
    cur = agreement(C, order)
    improved = True
    while improved:
        improved = False
        for v in range(n):
            rest = [u for u in order if u != v]
            best_pos, best_val = None, cur
            for p in range(n):
                cand = rest[:p] + [v] + rest[p:]
                val = agreement(C, cand)
                if val > best_val + 1e-12:
                    best_pos, best_val = p, val
            if best_pos is not None:
                order = rest[:best_pos] + [v] + rest[best_pos:]
                cur = best_val
                improved = True
    return [int(i) for i in order]


def kemeny_order(C: np.ndarray, exact_max: int = 12) -> tuple[list[int], bool]:
    """(order, exact): the exact Kemeny order when n <= exact_max, else the local-search heuristic."""
    if exact_max > EXACT_LIMIT:
        raise LensError(f"Exact Kemeny is limited to {EXACT_LIMIT} models (2^n subsets).")
    n = np.asarray(C).shape[0]
    if n <= exact_max:
        return kemeny_exact(C), True
    return kemeny_local(C), False


@register("kemeny", "Kemeny consensus order (exact DP for n <= 12, local search beyond)")
def kemeny(
    stack: GraphStack, *, source: str = "pairs", weights: np.ndarray | dict | None = None, exact_max: int = 12
) -> RankResult:
    check_stack(stack, "kemeny")
    if source == "pairs":
        alpha = graph_weights(stack, weights)
        C = np.einsum("t,tij->ij", alpha, stack.wins + 0.5 * stack.ties)
    elif source == "rankings":
        C = ranking_preferences(stack, weights)
    else:
        raise LensError(f"Unknown Kemeny evidence {source!r}; choose pairs or rankings.")
    order, exact = kemeny_order(C, exact_max)
    score = np.empty(stack.n)
    score[order] = np.arange(stack.n - 1, -1, -1, dtype=np.float64)
    details = {
        "score": "number of models placed below in the consensus order",
        "evidence": "W + T/2 over graphs" if source == "pairs" else "per-graph rankings (paper 002, eq. 11)",
        "exact": exact,
        "method": "DP over subsets" if exact else "Copeland start + single-model moves (local optimum)",
        "agreement": agreement(C, order),
        "weighted": weights is not None,
    }
    return RankResult("kemeny", series(stack.models, score), details, {"order": [stack.models[i] for i in order]})
