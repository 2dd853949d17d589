"""Online Elo (paper 001's Elo conversion; the arena's classic rating), stated K-factor and order.

Each pairwise outcome of each graph updates the two ratings: expected score
E_i = 1 / (1 + base^((R_j - R_i) / scale)), R_i += K (S_i - E_i) with S = 1 win, 1/2 tie, 0 loss.
Order: graphs in stack order (sorted by graph key), inside a graph the pairs (i, j), i < j, in model
order; ``seed`` shuffles the graph order instead. Elo is sequential by nature, so this loops over
outcomes. Scores are ratings minus their mean (the initial rating is reported).
"""

from __future__ import annotations

import numpy as np

from engine.errors import LensError
from engine.graphs.stack import GraphStack
from engine.rankers.base import RankResult, centred, check_stack, register, series


def elo_ratings(
    i_idx: np.ndarray, j_idx: np.ndarray, s_i: np.ndarray, n: int,
    *, k: float = 4.0, base: float = 10.0, scale: float = 400.0, init: float = 1000.0,
) -> np.ndarray:
    """Sequential Elo over outcomes (i, j, score of i) in the given order; returns raw ratings (n,)."""
    r = [init] * n
    for a, b, s in zip(i_idx.tolist(), j_idx.tolist(), s_i.tolist(), strict=True):
        e = 1.0 / (1.0 + base ** ((r[b] - r[a]) / scale))
        delta = k * (s - e)
        r[a] += delta
        r[b] -= delta
    return np.asarray(r)


def stack_outcomes(stack: GraphStack, order: np.ndarray | None = None) -> tuple[np.ndarray, ...]:
    """Outcomes (i, j, score of i) with i < j, graph by graph in ``order`` (default stack order)."""
    order = np.arange(stack.T) if order is None else order
    iu = np.triu(np.ones((stack.n, stack.n), dtype=bool), 1)
    obs = stack.observed[order] & iu
    t, i, j = np.nonzero(obs)  # row-major: graph, then i, then j
    a = stack.adj[order]
    win_i = a[t, i, j].astype(np.float64)
    win_j = a[t, j, i].astype(np.float64)
    s = np.where(win_i == win_j, 0.5, win_i)
    return i, j, s


@register("elo", "online Elo (K=4, base 10, scale 400, init 1000; graph order by key)")
def elo(
    stack: GraphStack, *, k: float = 4.0, base: float = 10.0, scale: float = 400.0, init: float = 1000.0,
    seed: int | None = None, order: str | None = None,
) -> RankResult:
    """Elo over the graph edges of a stack, graph by graph in key order (``order=prompt``; the time and
    input orders need the verdicts: the leaderboard's count path, ``engine.rankers.objects.Elo``)."""
    check_stack(stack, "elo")
    if order not in (None, "prompt"):
        if order in ("time", "input"):
            raise LensError(
                f"Elo order={order} needs the verdicts in source order; a graph stack is ordered by "
                "graph key (order=prompt). Use the leaderboard, which ranks Elo from the verdicts."
            )
        raise LensError(f"Elo order={order!r} is not one of time, input, prompt.")
    play = None if seed is None else np.random.default_rng(seed).permutation(stack.T)
    i, j, s = stack_outcomes(stack, play)
    r = elo_ratings(i, j, s, stack.n, k=k, base=base, scale=scale, init=init)
    details = {
        "k_factor": k,
        "base": base,
        "scale": scale,
        "init": init,
        "n_updates": int(len(s)),
        "order": "graphs sorted by key, pairs by model order"
        if seed is None
        else f"graphs shuffled with seed {seed}",
        "mean_rating": float(r.mean()),
    }
    return RankResult("elo", series(stack.models, centred(r)), details)
