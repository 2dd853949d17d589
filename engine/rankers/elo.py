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
from engine.rankers.resample_draws import ResampleRepeats


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


RESAMPLE_CHUNK_VOTES = 8192
"""Votes laid out per chunk by the numpy step loop (``_resampled_numpy``): its step table holds about
this many steps per resample (three (steps, B) arrays of 8 bytes: about 20 MB at B = 100)."""

COMPILED_CHUNK_VOTES = 65536
"""Votes whose repeat counts the compiled loop holds at once: a (B, chunk) table of the bootstrap's
one-byte draws, about 6.5 MB at B = 100."""

COMPILED_FROM_VOTES = 0
"""From this many votes the compiled loop runs; below, the numpy step loop. The compiled loop
(``engine.rankers.elo_kernel``, llvmlite) costs about 50 ms of CPU once per process (import and
building the machine code) and about 25-40 ns per update, against 16-25 us per vote for one numpy step
over all B, and it rounds as ``elo_ratings`` does where numpy's SIMD ``power`` may not: it runs from
the first vote (docs/notes/cliproc-32.md). The numpy loop remains for an environment without llvmlite."""


def elo_ratings_resampled(
    i_idx: np.ndarray, j_idx: np.ndarray, s_i: np.ndarray, n: int, repeats,
    *, k: float = 4.0, base: float = 10.0, scale: float = 400.0, init: float = 1000.0,
    chunk: int | None = None, compiled: bool | None = None,
) -> np.ndarray:
    """Raw ratings (B, n) of B resamples of the outcomes (i, j, score of i).

    ``repeats(v0, v1)`` gives the (B, v1 - v0) number of times each resample reads outcomes v0..v1-1:
    resample b reads outcome v ``repeats[b, v]`` times in a row, in the outcomes' order, which is what
    ``elo_ratings(i[idx], j[idx], s[idx], n)`` with ``idx = np.repeat(np.arange(V), repeats[b])`` does (a
    bootstrap resample of the votes), with the same numbers to the bit. Elo is sequential, so the work
    is V x B updates whatever the layout: from ``COMPILED_FROM_VOTES`` votes (or ``compiled=True``) a
    compiled loop (``_resampled_steps`` as machine code: ``engine.rankers.elo_kernel``), below it or
    without llvmlite one numpy step per vote over all B resamples (``_resampled_numpy``; numpy's SIMD
    ``power`` may differ from ``elo_ratings``' in the last bit of a rating).
    ``chunk``: votes whose repeat counts are held at once (memory bound). Where
    ``repeats`` is a ``ResampleRepeats`` (the bootstrap's draws, drawn ahead in a thread), the compiled
    loop fits resample b as soon as its row is drawn, over all the votes at once (a row is V counts), so
    the draws of the next rows run beside it on another core; the numbers are the same, each resample's
    ratings depending only on its own row."""
    i_idx = np.ascontiguousarray(i_idx, dtype=np.int64)
    j_idx = np.ascontiguousarray(j_idx, dtype=np.int64)
    s_i = np.ascontiguousarray(s_i, dtype=np.float64)
    if compiled is None:
        compiled = i_idx.size >= COMPILED_FROM_VOTES
    if compiled:
        try:
            steps = _compiled_steps()
        except ImportError:  # llvmlite missing (an environment older than requirements.txt)
            compiled = False
    if not compiled:
        return _resampled_numpy(i_idx, j_idx, s_i, n, repeats, k=k, base=base, scale=scale, init=init,
                                chunk=chunk or RESAMPLE_CHUNK_VOTES)
    V = i_idx.size
    if V and (min(int(i_idx.min()), int(j_idx.min())) < 0 or max(int(i_idx.max()), int(j_idx.max())) >= n):
        raise ValueError("a vote's model index lies outside 0 .. n - 1")  # the compiled loop trusts them
    if isinstance(repeats, ResampleRepeats):  # resample by resample as its row is drawn (beside the draws)
        ratings = np.full((repeats.B, n), float(init))
        for b in range(repeats.B):
            reps = np.ascontiguousarray(repeats.rows(b, b + 1, 0, V))
            steps(ratings[b:b + 1], i_idx, j_idx, s_i, reps, 0, float(k), float(base), float(scale))
        return ratings
    chunk = chunk or COMPILED_CHUNK_VOTES
    first = np.ascontiguousarray(repeats(0, min(V, chunk)))
    ratings = np.full((first.shape[0], n), float(init))
    for v0 in range(0, V, chunk):
        reps = first if v0 == 0 else np.ascontiguousarray(repeats(v0, min(V, v0 + chunk)))
        steps(ratings, i_idx, j_idx, s_i, reps, v0, float(k), float(base), float(scale))
    return ratings


def _resampled_steps(ratings, i_idx, j_idx, s_i, reps, v0, k, base, scale):  # pragma: no cover (reference)
    """Advance every resample's ratings (``ratings``: (B, n), in place) over votes v0 .. v0 + L - 1, where
    resample b reads vote v0 + t ``reps[b, t]`` times in a row. The statements are ``elo_ratings``'s, in
    its order, so each row gets the same floating-point operations as the sequential Elo of that
    resample's repeated votes. What ``_compiled_steps`` runs as machine code (``elo_kernel.ELO_IR`` is
    this function, statement for statement); kept in Python as its readable statement."""
    n_resamples, n_votes = reps.shape
    for b in range(n_resamples):
        r = ratings[b]
        for t in range(n_votes):
            a = i_idx[v0 + t]
            h = j_idx[v0 + t]
            s = s_i[v0 + t]
            for _ in range(reps[b, t]):
                e = 1.0 / (1.0 + base ** ((r[h] - r[a]) / scale))
                delta = k * (s - e)
                r[a] += delta
                r[h] -= delta


def _compiled_steps():
    """``_resampled_steps`` as machine code (``engine.rankers.elo_kernel``, imported here, not at the top:
    only Elo's bootstrap needs it). Strict IEEE arithmetic and the C library's ``pow``, as Python's
    ``**`` calls it, so the compiled loop rounds as ``elo_ratings`` does. Built once per process (about
    15-35 ms of CPU); raises ImportError without llvmlite."""
    from engine.rankers.elo_kernel import compiled_elo_steps

    return compiled_elo_steps()


def _resampled_numpy(
    i_idx: np.ndarray, j_idx: np.ndarray, s_i: np.ndarray, n: int, repeats,
    *, k: float, base: float, scale: float, init: float, chunk: int,
) -> np.ndarray:
    """``elo_ratings_resampled`` as one numpy step per vote: step t updates every resample's own t-th
    outcome at once. Ratings live in one flat array, one gather fetches the B pairs, the update runs
    over B, one scatter writes them back (the same floating-point operations in the same order as
    ``elo_ratings``). A resample whose chunk holds fewer steps than the longest pads with steps on two
    spare slots whose update is exactly zero (equal ratings, score one half)."""
    V = i_idx.size
    first = np.asarray(repeats(0, min(V, chunk)), dtype=np.int64)
    B = first.shape[0]
    width = n + 2  # each resample's ratings, then the two spare slots of the padding steps
    flat = np.full(B * width, float(init))
    offset = np.arange(B, dtype=np.int64) * width
    pair = np.empty(2 * B)
    r_i, r_j, x = pair[:B], pair[B:], np.empty(B)
    for v0 in range(0, V, chunk):
        v1 = min(V, v0 + chunk)
        reps = first if v0 == 0 else np.asarray(repeats(v0, v1), dtype=np.int64)
        per_b = reps.sum(axis=1)
        steps = int(per_b.max()) if B else 0
        vote = np.repeat(np.tile(np.arange(v0, v1), B), reps.ravel())  # resample by resample, in order
        row = np.repeat(np.arange(B), per_b)
        pos = np.arange(vote.size) - np.repeat(np.cumsum(per_b) - per_b, per_b)
        slots = np.empty((steps, 2, B), dtype=np.int64)
        slots[:, 0, :] = offset + n
        slots[:, 1, :] = offset + n + 1
        slots[pos, 0, row] = offset[row] + i_idx[vote]
        slots[pos, 1, row] = offset[row] + j_idx[vote]
        at = slots.reshape(steps, 2 * B)
        score = np.full((steps, B), 0.5)
        score[pos, row] = s_i[vote]
        for t in range(steps):
            where = at[t]
            flat.take(where, out=pair)
            np.subtract(r_j, r_i, out=x)  # as elo_ratings: 1 / (1 + base ** ((r_j - r_i) / scale))
            np.divide(x, scale, out=x)
            np.power(base, x, out=x)
            np.add(x, 1.0, out=x)
            np.divide(1.0, x, out=x)
            np.subtract(score[t], x, out=x)  # delta = k * (s - e)
            np.multiply(x, k, out=x)
            np.add(r_i, x, out=r_i)
            np.subtract(r_j, x, out=r_j)
            flat.put(where, pair)
    return flat.reshape(B, width)[:, :n].copy()
