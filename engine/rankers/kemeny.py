"""Kemeny consensus (paper 002, Appendix Q, eq. 9-10): the order agreeing best with pairwise evidence.

Given C[i, j] = evidence that i is above j, find the order maximising the sum of C[i, j] over pairs
with i placed before j (equivalently minimising the weighted Kendall disagreement). Exact by dynamic
programming over subsets (Held-Karp style, O(2^n n^2)) for n <= ``exact_max`` (12 by default, 16 at
most); beyond that a stated heuristic: start from the Copeland order of C, then move single models to
their best position until no move improves (a local optimum, not a certified one).

Scores: the number of models placed below, averaged over every co-optimal order (exact) or inside
runs of neighbours no evidence separates (heuristic), so on data holding no preference (all ties, a
pure cycle) the models share a score and a rank instead of being ordered by name. The one order
shown (``extras["consensus_order"]``) is a representative: the co-optimal order first by name.

Evidence: ``source="pairs"`` uses C = W + T/2 over graphs (each graph's outcome on each pair);
``source="rankings"`` uses per-graph rankings (paper 002, eq. 11). Optional per-graph weights
(eq. 10, weighted Kemeny).
"""

from __future__ import annotations

import numpy as np

from engine.errors import LensError
from engine.graphs.stack import GraphStack
from engine.rankers.base import RankResult, check_stack, register, series
from engine.rankers.simple import graph_weights, ranking_preferences

EXACT_LIMIT = 16


def agreement(C: np.ndarray, order: list[int] | tuple[int, ...]) -> float:
    """Sum of C[i, j] over pairs where i comes before j in ``order``."""
    idx = np.asarray(order)
    sub = np.asarray(C, dtype=np.float64)[np.ix_(idx, idx)]
    return float(np.triu(sub, 1).sum())


def _bits(n: int) -> np.ndarray:
    """(2^n, n) 0/1 membership of every subset mask."""
    masks = np.arange(1 << n, dtype=np.int64)
    return ((masks[:, None] >> np.arange(n)) & 1).astype(np.float64)


def kemeny_exact_batch(C: np.ndarray, chunk_cells: int = 4_000_000) -> tuple[np.ndarray, np.ndarray]:
    """Exact Kemeny orders for B evidence matrices at once; returns (orders (B, n), co-optimal counts (B,)).

    The first two results of ``kemeny_dp_batch`` (its docstring states the DP and the tie-break)."""
    orders, counts, _ = kemeny_dp_batch(C, chunk_cells)
    return orders, counts


def kemeny_dp_batch(
    C: np.ndarray, chunk_cells: int = 4_000_000
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Exact Kemeny for B evidence matrices: (orders (B, n), co-optimal counts (B,), mean below (B, n)).

    Dynamic programming over subsets R of the models, by subset size: h[R] = best agreement of an
    order of R alone = max over v in R of (sum_{u in R} C[v, u] + h[R - v]) (v placed first in R).
    Tie-break of the one order returned (stated): among co-optimal orders the one whose sequence of
    model indices (= model names, stacks are sorted by name) is smallest, built front to back by taking
    the smallest v that keeps the optimum. ``count[R]`` adds up the optimal choices, so the number of
    co-optimal orders comes for free. Values within 1e-9 * max(1, |h|) count as equal.

    ``mean below``: per model, the number of models placed below it averaged over every co-optimal
    order, each counted once. A step from R placing v first is on ``ways_in[R] * count[R - v]`` optimal
    orders, where ``ways_in[R]`` counts the optimal ways to place the models outside R in front (a
    second pass from the full set down); v then has |R| - 1 models below it. Models the evidence does
    not separate get equal values (all ties: (n - 1) / 2 each; a 3-cycle: 1 each), so no name decides.
    """
    C = np.array(C, dtype=np.float64)
    if C.ndim == 2:
        C = C[None]
    B, n, _ = C.shape
    C[:, np.arange(n), np.arange(n)] = 0.0
    if n == 0:
        return np.zeros((B, 0), dtype=np.int64), np.ones(B), np.zeros((B, 0))
    full = (1 << n) - 1
    bits = _bits(n)
    member = bits.astype(bool)
    size = bits.sum(axis=1).astype(np.int64)
    vbit = 1 << np.arange(n, dtype=np.int64)
    orders = np.empty((B, n), dtype=np.int64)
    counts = np.empty(B)
    below = np.zeros((B, n))
    step = max(1, chunk_cells // ((1 << n) * n))
    for b0 in range(0, B, step):
        c = C[b0:b0 + step]
        nb = c.shape[0]
        rowsum = np.einsum("mu,bvu->bmv", bits, c)  # rowsum[b, R, v] = sum_{u in R} C[v, u]
        h = np.full((nb, 1 << n), -np.inf)
        cnt = np.zeros((nb, 1 << n))
        h[:, 0], cnt[:, 0] = 0.0, 1.0

        def optimal_steps(masks: np.ndarray, h=h, rowsum=rowsum):
            """(values, optimal) of placing each v first in each mask: (nb, masks, n) each."""
            prev = masks[:, None] ^ vbit[None, :]
            inside = member[masks]
            vals = np.where(inside[None], rowsum[:, masks, :] + h[:, prev.clip(0, full)], -np.inf)
            best = vals.max(axis=2)
            opt = vals >= best[:, :, None] - 1e-9 * np.maximum(1.0, np.abs(best[:, :, None]))
            return vals, best, opt & inside[None], prev.clip(0, full)

        for k in range(1, n + 1):
            masks = np.flatnonzero(size == k)
            _, best, opt, prev = optimal_steps(masks)
            h[:, masks] = best
            cnt[:, masks] = np.where(opt, cnt[:, prev], 0.0).sum(axis=2)
        ways_in = np.zeros((nb, 1 << n))
        ways_in[:, full] = 1.0
        for k in range(n, 0, -1):
            masks = np.flatnonzero(size == k)
            _, _, opt, prev = optimal_steps(masks)
            on = np.where(opt, ways_in[:, masks, None] * cnt[:, prev], 0.0)  # optimal orders per step
            below[b0:b0 + nb] += on.sum(axis=1) * (k - 1)
            flow = np.where(opt, ways_in[:, masks, None], 0.0)
            for v in range(n):  # masks of one size differ, so each target R - v is hit once per v
                ways_in[:, prev[:, v]] += flow[:, :, v] * member[masks, v][None]
        rows = np.arange(nb)
        R = np.full(nb, full, dtype=np.int64)
        for pos in range(n):
            vals = np.where(
                member[R], rowsum[rows, R, :] + h[rows[:, None], R[:, None] ^ vbit[None, :]], -np.inf
            )
            target = h[rows, R]
            ok = vals >= target[:, None] - 1e-9 * np.maximum(1.0, np.abs(target[:, None]))
            v = np.argmax(ok, axis=1)
            orders[b0:b0 + nb, pos] = v
            R = R ^ vbit[v]
        counts[b0:b0 + nb] = cnt[:, full]
        below[b0:b0 + nb] /= cnt[:, full][:, None]
    return orders, counts, below


def kemeny_exact(C: np.ndarray) -> list[int]:
    """Exact Kemeny order (the stated tie-break: smallest model-index sequence among co-optimal orders)."""
    orders, _ = kemeny_exact_batch(np.asarray(C, dtype=np.float64)[None])
    return [int(v) for v in orders[0]]


def kemeny_local(C: np.ndarray, max_sweeps: int | None = None) -> list[int]:
    """Heuristic: Copeland start, then best single-model moves until no move improves agreement.

    For a model v taken out of the order, placing it before the p-th remaining model agrees with
    sum(C[u, v] for the first p) + sum(C[v, u] for the rest): one cumulative sum gives every position,
    so a sweep over the models costs O(n^2), not the O(n^4) of scoring each candidate order afresh.
    The best position is the first of the largest gain; a move is made only when it improves by more
    than 1e-12. ``max_sweeps`` (default n) bounds the sweeps; every move strictly improves, so the
    search ends either way."""
    C = np.asarray(C, dtype=np.float64)
    n = C.shape[0]
    order = [int(i) for i in np.argsort(-(C - C.T).sum(axis=1), kind="stable")]
    for _ in range(n if max_sweeps is None else max_sweeps):
        improved = False
        for v in range(n):
            rest = np.asarray([u for u in order if u != v], dtype=np.int64)
            above = np.concatenate([[0.0], np.cumsum(C[rest, v])])  # rest[:p] placed above v
            below = np.concatenate([np.cumsum(C[v, rest][::-1])[::-1], [0.0]])  # rest[p:] below v
            gain = above + below
            now = order.index(v)
            best = int(np.argmax(gain))
            if gain[best] > gain[now] + 1e-12:
                order = [*rest[:best].tolist(), v, *rest[best:].tolist()]
                improved = True
        if not improved:
            break
    return order


def kemeny_local_batch(C: np.ndarray) -> np.ndarray:
    """``kemeny_local`` of B evidence matrices at once: (B, n) orders, each the one ``kemeny_local(C[b])``
    returns. Every sweep takes the models in the same order for all B; model v's gains are the same
    cumulative sums, its move the same first best position under the same 1e-12 rule. A sweep that moves
    nothing leaves an order as it was, and so would every later one: sweeping on until no resample moves
    (at most n sweeps, as ``kemeny_local``'s bound) changes no order that had already stopped."""
    C = np.asarray(C, dtype=np.float64)
    B, n, _ = C.shape
    orders = np.array([np.argsort(-(C[b] - C[b].T).sum(axis=1), kind="stable") for b in range(B)],
                      dtype=np.int64).reshape(B, n)
    rows = np.arange(B)[:, None]
    slot = np.arange(n)[None, :]
    for _ in range(n):
        improved = np.zeros(B, dtype=bool)
        for v in range(n):
            keep = orders != v
            now = np.argmin(keep, axis=1)  # v's position
            rest = orders[keep].reshape(B, n - 1)
            above = np.concatenate([np.zeros((B, 1)), np.cumsum(C[rows, rest, v], axis=1)], axis=1)
            below = np.concatenate([np.cumsum(C[rows, v, rest][:, ::-1], axis=1)[:, ::-1], np.zeros((B, 1))],
                                   axis=1)
            gain = above + below
            best = np.argmax(gain, axis=1)
            move = gain[np.arange(B), best] > gain[np.arange(B), now] + 1e-12
            if move.any():
                b_ = best[:, None]
                placed = np.where(slot < b_, np.pad(rest, ((0, 0), (0, 1)))[:, :n],
                                  np.where(slot == b_, v, np.pad(rest, ((0, 0), (1, 0)))[:, :n]))
                orders = np.where(move[:, None], placed, orders)
                improved |= move
        if not improved.any():
            break
    return orders


def kemeny_order(C: np.ndarray, exact_max: int = 12) -> tuple[list[int], bool]:
    """(order, exact): the exact Kemeny order when n <= exact_max, else the local-search heuristic."""
    orders, exact, _ = kemeny_orders_batch(np.asarray(C, dtype=np.float64)[None], exact_max)
    return [int(v) for v in orders[0]], exact


def kemeny_orders_batch(C: np.ndarray, exact_max: int = 12) -> tuple[np.ndarray, bool, np.ndarray]:
    """(orders (B, n), exact, co-optimal counts (B,), NaN when heuristic) for B evidence matrices."""
    if exact_max > EXACT_LIMIT:
        raise LensError(f"Exact Kemeny is limited to {EXACT_LIMIT} models (2^n subsets).")
    C = np.asarray(C, dtype=np.float64)
    B, n, _ = C.shape
    if n <= exact_max:
        orders, counts = kemeny_exact_batch(C)
        return orders, True, counts
    return kemeny_local_batch(C), False, np.full(B, np.nan)


def kemeny_scores_batch(
    C: np.ndarray, exact_max: int = 12
) -> tuple[np.ndarray, np.ndarray, bool, np.ndarray]:
    """(scores (B, n), orders (B, n), exact, co-optimal counts (B,), NaN when heuristic).

    The score is the number of models placed below, averaged over every co-optimal order when exact
    (``kemeny_dp_batch``); beyond ``exact_max`` the local-search order's positions, averaged inside
    each run of neighbours that no evidence separates (``balanced_runs``). Either way models the data
    do not separate share a score, so the ranks never follow the model names."""
    C = np.asarray(C, dtype=np.float64)
    B, n, _ = C.shape
    if exact_max > EXACT_LIMIT:
        raise LensError(f"Exact Kemeny is limited to {EXACT_LIMIT} models (2^n subsets).")
    if n <= exact_max:
        orders, counts, below = kemeny_dp_batch(C)
        return below, orders, True, counts
    orders, _, counts = kemeny_orders_batch(C, exact_max)
    scores = scores_from_orders(orders)
    for b in range(B):
        for run in balanced_runs(C[b], orders[b]):
            scores[b, run] = scores[b, run].mean()
    return scores, orders, False, counts


def balanced_runs(C: np.ndarray, order: np.ndarray) -> list[np.ndarray]:
    """Maximal runs of neighbours in ``order`` whose every pair has equal evidence both ways
    (C[i, j] = C[j, i]): any permutation of such a run has the same agreement, so its models are not
    separated by the data. Runs of one model are left out."""
    runs: list[np.ndarray] = []
    cur: list[int] = []
    for v in (int(x) for x in order):
        scale = 1e-9 * max(1.0, float(np.abs(C[v]).max()))
        if cur and all(abs(C[v, u] - C[u, v]) <= scale for u in cur):
            cur.append(v)
            continue
        if len(cur) > 1:
            runs.append(np.asarray(cur))
        cur = [v]
    if len(cur) > 1:
        runs.append(np.asarray(cur))
    return runs


def scores_from_orders(orders: np.ndarray) -> np.ndarray:
    """(B, n) orders → (B, n) scores: the number of models placed below each model."""
    orders = np.asarray(orders, dtype=np.int64)
    B, n = orders.shape
    score = np.empty((B, n))
    np.put_along_axis(score, orders, np.arange(n - 1, -1, -1, dtype=np.float64)[None].repeat(B, 0), axis=1)
    return score


def kemeny_evidence(stack: GraphStack, source: str, weights: np.ndarray | dict | None) -> np.ndarray:
    """C (n, n) for the stack: W + T/2 over graphs ("pairs") or per-graph rankings ("rankings")."""
    if source == "pairs":
        alpha = graph_weights(stack, weights)
        return np.einsum("t,tij->ij", alpha, stack.wins + 0.5 * stack.ties)
    if source == "rankings":
        return ranking_preferences(stack, weights)
    raise LensError(f"Unknown Kemeny evidence {source!r}; choose pairs or rankings.")


TIE_BREAK = ("none for the scores (each is averaged over every co-optimal order, so models the evidence "
             "does not separate share a rank); the consensus order shown is the co-optimal order whose "
             "sequence of models is first by model name")


@register("kemeny", "Kemeny consensus order (exact DP for n <= 12, local search beyond)")
def kemeny(
    stack: GraphStack, *, source: str = "pairs", weights: np.ndarray | dict | None = None, exact_max: int = 12
) -> RankResult:
    """The order disagreeing least with the pairwise evidence: exact up to ``exact_max`` models, else local
    search."""
    check_stack(stack, "kemeny")
    C = kemeny_evidence(stack, source, weights)
    scores, orders, exact, counts = kemeny_scores_batch(C[None], exact_max)
    order = [int(v) for v in orders[0]]
    details = {
        "score": "number of models placed below in the consensus order"
        + (", averaged over every co-optimal order" if exact else
           ", averaged inside runs of neighbours the evidence does not separate"),
        "evidence": "W + T/2 over graphs" if source == "pairs" else "per-graph rankings (paper 002, eq. 11)",
        "exact": exact,
        "method": "DP over subsets" if exact else "Copeland start + single-model moves (local optimum)",
        "agreement": agreement(C, order),
        "tie_break": TIE_BREAK
        if exact
        else "heuristic: Copeland order (stable by model name), first improving move",
        "co_optimal_orders": int(counts[0]) if exact else None,
        "weighted": weights is not None,
    }
    return RankResult(
        "kemeny", series(stack.models, scores[0]), details,
        {"consensus_order": [stack.models[i] for i in order]},
    )
