"""Which calls to make next: ``select(strategy, pool, revealed, batch, rng)`` returns indices of pool
items not asked yet (at most ``batch``; fewer only when fewer are left, or for ``swim``, whose batch
is the rest of one comparison). Every strategy is a function
of the pool, what was revealed and the random generator alone, so one seed gives one path.

- ``random``: ``batch`` items uniformly at random among those not asked.
- ``round-robin``: model pairs in turn (pairs in name order; within a pair, items in pool order), so
  after k rounds every pair that has k items has k of them asked: balanced coverage, no randomness.
- ``swim``: SWIM's insertion order (``engine.judging.schedule``; paper 001, Appendix E): models join
  in a random order; a newcomer first meets a random ranked model, then the ranked models closest to
  it in the current BT score, ``opponents_for(s)`` = ceil(max(log2 s, 1)) opponents when ``s`` are
  ranked, each comparison asking every item of that pair (every prompt, order and judge) before the
  next opponent is chosen on the refitted scores. A batch holds items of one comparison only (the
  next opponent depends on its outcome). Here the scores come from the fit on everything revealed
  (models not yet joined sit at the regularised fit's centre and are never opponents), and a ranked
  model with no item against the newcomer is skipped. When every model has joined, the rest of the
  budget goes round-robin.
- ``uncertainty``: the pairs whose next verdicts shrink the uncertainty of the ranking the most.
  Criterion: the expected reduction of the summed variance of the *adjacent* score differences that
  are not separated yet (ranks r and r+1 in the current ranking with overlapping intervals, r < K
  for ``top_k`` K; all adjacent pairs of the top K when all are separated), under the Gaussian
  (Laplace) approximation of the BT fit with covariance Σ (``fit.fisher_covariance``). One verdict
  on models (i, j) adds Fisher information w = p_ij (1 - p_ij) along u = e_i - e_j (the BT model's
  information for one comparison), so c verdicts reduce the variance of a target difference t by
  c w (u' Σ t)^2 / (1 + c w u' Σ u) (Sherman–Morrison). Source: the A-optimal design criterion of
  optimal experimental design applied to the BT model's Fisher information, restricted to the
  neighbour pairs that decide the ranking, with the p(1 - p) weighting the issue names; the
  projection on neighbour differences is ours. A batch is built greedily: up to ``STEPS`` (32)
  times, the best pair receives ceil(batch / STEPS) items (or what it has left) and Σ is updated as
  if their information had arrived (the expected information does not depend on the outcome), so
  the next step sees the diminished return. Within a pair the items (prompts, orders, judges) are
  drawn at random.
- ``cycles``: re-judge the edges that carry the most bad (non-transitive) triads. Each prompt
  instance's tournament graph is built from the revealed verdicts (several verdicts of one edge
  combined by plurality: agreeing orders give that winner, disagreeing ones a tie, as the project's
  graphs do, ``engine.graphs.stack.combine_counts``); an item whose edge (prompt, unordered pair)
  already has a verdict scores the number of bad triads of its graph that contain that edge
  (``engine.graphs.cycles.pair_cycle_counts``, C3 − C3_tie per pair); asking it (the other
  presentation order, another judge or annotator) can turn that edge into a tie or flip it, removing
  up to that many contradictions with one call. Items are taken by that score, highest first (ties
  at random), at most one per edge in a batch while other edges remain; then re-judgings of edges
  in no bad triad, then items of edges with no verdict yet, at random. Source: paper 002's ActiveGED
  idea (spend re-judging where the graph's contradictions are), generalised from a fixed graph
  denoiser to choosing which calls to make; the triad counts are the project's own.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from engine.errors import LensError
from engine.judging.active.fit import ActiveFit, Revealed, adjacent_overlaps, fit_revealed
from engine.judging.active.pool import Pool

STRATEGIES = ("random", "round-robin", "swim", "uncertainty", "cycles")
STEPS = 32
"""Greedy steps of the uncertainty strategy per batch (each a rank-one update of the covariance)."""
CYCLE_CHUNK_CELLS = 1 << 22
"""Adjacency cells (graphs x models x models) the cycles strategy counts triads of at once."""


def check_strategy(strategy: str) -> None:
    """One sentence for a strategy that does not exist."""
    if strategy not in STRATEGIES:
        raise LensError(f"Unknown strategy {strategy!r}; choose one of {', '.join(STRATEGIES)}.")


def select(
    strategy: str,
    pool: Pool,
    revealed: Revealed,
    batch: int,
    rng: np.random.Generator,
    *,
    top_k: int | None = None,
    fit: ActiveFit | None = None,
) -> np.ndarray:
    """Indices (int64, sorted) of at most ``batch`` pool items not asked yet, chosen by ``strategy``
    (module docstring). ``fit``: the current fit when the caller has it (else it is computed when the
    strategy needs one); ``top_k``: the K of the stopping rule, which ``uncertainty`` aims at."""
    check_strategy(strategy)
    if batch < 1:
        raise LensError(f"A batch must hold at least 1 call, not {batch}.")
    avail = np.flatnonzero(~revealed.asked)
    if len(avail) == 0:
        return avail.astype(np.int64)
    batch = min(int(batch), len(avail))
    chosen = _STRATEGIES[strategy](pool, revealed, avail, batch, rng, top_k, fit)
    return np.sort(np.asarray(chosen, dtype=np.int64))


def _random(pool, revealed, avail, batch, rng, top_k, fit) -> np.ndarray:
    return rng.choice(avail, size=batch, replace=False)


def _round_robin(pool, revealed, avail, batch, rng, top_k, fit) -> np.ndarray:
    pid = pool.pair_id
    done = np.bincount(pid[revealed.asked], minlength=len(pool.pair_values))
    mine = pid[avail]
    order = np.argsort(mine, kind="stable")  # grouped by pair, pool order inside a pair
    grouped = mine[order]
    starts = np.searchsorted(grouped, grouped, side="left")
    rounds = done[grouped] + (np.arange(len(grouped)) - starts)
    pick = np.lexsort((avail[order], grouped, rounds))[:batch]
    return avail[order][pick]


def _take_from_pairs(pool, avail, take: np.ndarray, rng) -> np.ndarray:
    """``take[p]`` items of each pair p, drawn at random among ``avail``."""
    pid = pool.pair_id[avail]
    want = take[pid] > 0
    cand, cpid = avail[want], pid[want]
    order = np.lexsort((rng.random(len(cand)), cpid))
    cand, cpid = cand[order], cpid[order]
    rank = np.arange(len(cpid)) - np.searchsorted(cpid, cpid, side="left")
    return cand[rank < take[cpid]]


def _uncertainty(pool, revealed, avail, batch, rng, top_k, fit) -> np.ndarray:
    fit = fit if fit is not None else fit_revealed(pool, revealed)
    m = pool.n_models
    order = fit.ranking()
    over = adjacent_overlaps(fit, top_k)
    targets = np.flatnonzero(over) if over.any() else np.arange(len(over))
    if len(targets) == 0:
        return _random(pool, revealed, avail, batch, rng, top_k, fit)
    k_idx, l_idx = order[targets], order[targets + 1]
    n_pairs = len(pool.pair_values)
    left_in = np.bincount(pool.pair_id[avail], minlength=n_pairs)
    cand = np.flatnonzero(left_in > 0)
    cand = cand[rng.permutation(len(cand))]  # equal values go to a random pair, not the first by name
    i = (pool.pair_values[cand] // m).astype(np.int64)
    j = (pool.pair_values[cand] % m).astype(np.int64)
    p = 1.0 / (1.0 + np.exp(-(fit.scores[i] - fit.scores[j])))
    w = p * (1.0 - p)
    cov = np.array(fit.cov, dtype=np.float64, copy=True)
    take = np.zeros(n_pairs, dtype=np.int64)
    chunk = math.ceil(batch / STEPS)
    left = batch
    while left > 0:
        v = cov[:, k_idx] - cov[:, l_idx]  # Σ t for every target difference t (M, T)
        gram = v @ v.T
        x2 = gram[i, i] + gram[j, j] - 2.0 * gram[i, j]  # sum_t (u' Σ t)^2 per candidate pair
        s = cov[i, i] + cov[j, j] - 2.0 * cov[i, j]  # u' Σ u
        c = np.minimum(np.minimum(chunk, left), left_in[cand] - take[cand]).astype(np.float64)
        value = np.where(c > 0, c * w * x2 / (1.0 + c * w * s), -np.inf)
        best = int(np.argmax(value))
        if not np.isfinite(value[best]):
            break
        n = int(c[best])
        take[cand[best]] += n
        left -= n
        g = cov[:, i[best]] - cov[:, j[best]]
        info = n * w[best]
        cov -= np.outer(g, g) * (info / (1.0 + info * s[best]))
    return _take_from_pairs(pool, avail, take, rng)


def edge_bad_triads(pool: Pool, revealed: Revealed) -> tuple[np.ndarray, np.ndarray]:
    """(instances, bad triads) of every edge with a revealed verdict: the sorted instance numbers
    (``Pool.instance``) and, for each, the bad triads of its prompt's graph that contain that edge
    (module docstring, ``cycles``)."""
    from engine.graphs.cycles import pair_cycle_counts
    from engine.graphs.stack import combine_counts

    m = pool.n_models
    valid = revealed.asked & ((revealed.wins_a + revealed.wins_b + revealed.ties) > 0)
    rv = np.flatnonzero(valid)
    if len(rv) == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    lo_is_a = pool.a[rv] == pool.lo[rv]
    lo_win = np.where(lo_is_a, revealed.wins_a[rv], revealed.wins_b[rv])
    hi_win = np.where(lo_is_a, revealed.wins_b[rv], revealed.wins_a[rv])
    insts, inv = np.unique(pool.instance[rv], return_inverse=True)
    outcome = combine_counts(
        np.bincount(inv, lo_win), np.bincount(inv, hi_win), np.bincount(inv, revealed.ties[rv]), "plurality"
    )
    bad = np.zeros(len(insts), dtype=np.int64)
    prompt = insts // (m * m)
    lo, hi = (insts % (m * m)) // m, insts % m
    edges_per_prompt = np.bincount(np.unique(prompt, return_inverse=True)[1])
    prompts = np.unique(prompt)[edges_per_prompt >= 3]  # fewer than 3 edges hold no triad
    if len(prompts) == 0:
        return insts, bad
    per = max(1, CYCLE_CHUNK_CELLS // (m * m))
    for s in range(0, len(prompts), per):
        part = prompts[s:s + per]
        rows = np.flatnonzero(np.isin(prompt, part))
        t = np.searchsorted(part, prompt[rows])
        adj = np.zeros((len(part), m, m), dtype=bool)
        adj[t, lo[rows], hi[rows]] = outcome[rows] >= 0
        adj[t, hi[rows], lo[rows]] = outcome[rows] <= 0
        c3_bad = pair_cycle_counts(adj)["c3_bad"]
        bad[rows] = c3_bad[t, lo[rows], hi[rows]]
    return insts, bad


def _cycles(pool, revealed, avail, batch, rng, top_k, fit) -> np.ndarray:
    insts, bad = edge_bad_triads(pool, revealed)
    mine = pool.instance[avail]
    at = np.searchsorted(insts, mine)
    at_ok = np.minimum(at, max(len(insts) - 1, 0))
    judged = (at < len(insts)) & (insts[at_ok] == mine) if len(insts) else np.zeros(len(mine), dtype=bool)
    score = np.where(judged, bad[at_ok] if len(insts) else 0, -1)
    order = np.lexsort((rng.random(len(avail)), -score))
    _, first = np.unique(mine[order], return_index=True)
    lead = np.zeros(len(order), dtype=bool)
    lead[first] = True
    # one item per edge first (highest score first), then the rest, keeping the score order
    ranked = np.concatenate([order[lead & (score[order] > 0)], order[~(lead & (score[order] > 0))]])
    return avail[ranked[:batch]]


def _swim(pool, revealed, avail, batch, rng, top_k, fit) -> np.ndarray:
    from engine.judging.schedule import opponents_for

    mem = revealed.memory.setdefault("swim", {})
    m = pool.n_models
    if "join" not in mem:
        join = [int(x) for x in rng.permutation(m)]
        mem.update(join=join, ranked=[join[0]], next=1, met=[], current=None)
    left_in = np.bincount(pool.pair_id[avail], minlength=len(pool.pair_values))
    while True:
        cur = mem["current"]
        if cur is not None and left_in[cur] > 0:
            mine = avail[pool.pair_id[avail] == cur]
            return mine[:batch]
        if mem["next"] >= m:  # every model has joined: the rest goes round-robin
            return _round_robin(pool, revealed, avail, batch, rng, top_k, fit)
        p = mem["join"][mem["next"]]
        ranked, met = mem["ranked"], mem["met"]
        options = [x for x in ranked if x not in met and pool.pair_index(p, x) >= 0]
        if len(met) < opponents_for(len(ranked)) and options:
            if not met:
                x = options[int(rng.integers(len(options)))]
            else:
                fit = fit if fit is not None else fit_revealed(pool, revealed)
                x = min(options, key=lambda o: (abs(fit.scores[o] - fit.scores[p]), o))
            met.append(x)
            mem["current"] = pool.pair_index(p, x)
            continue
        ranked.append(p)
        mem.update(next=mem["next"] + 1, met=[], current=None)


_STRATEGIES: dict[str, Callable[..., np.ndarray]] = {
    "random": _random,
    "round-robin": _round_robin,
    "swim": _swim,
    "uncertainty": _uncertainty,
    "cycles": _cycles,
}
