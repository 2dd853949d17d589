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
- ``uncertainty``: the calls with the largest expected information gain about the ranking's scores.
  Criterion: under the Gaussian (Laplace) approximation of the BT posterior, N(θ̂, Σ) with Σ the
  Fisher covariance (``fit.fisher_covariance``), one verdict on models (i, j) adds information
  w = p_ij (1 - p_ij) along u = e_i - e_j, and the expected information gain about the contrasts
  T'θ (the mutual information between the verdict and T'θ) is
  ½ log det(T'ΣT) − ½ log det(T'Σ₊T), Σ₊ = Σ − w Σuu'Σ / (1 + w u'Σu) (Sherman–Morrison), which is
  −½ log(1 − w q / (1 + w u'Σu)) with q = u'ΣT (T'ΣT)⁻¹ T'Σu. T holds the adjacent differences the
  stopping rule tests (ranks r and r+1 for r = 1 … min(K, M-1), K = ``top_k``); without a K they
  span every contrast of the scores, q = u'Σu and the gain is ½ log(1 + w u'Σu): the D-optimal
  (log-determinant) design criterion, which under the Gaussian approximation equals the expected
  information gain. Sources: Lindley (1956), "On a measure of the information provided by an
  experiment" (expected information gain as the value of an experiment); Chaloner & Verdinelli (1995),
  "Bayesian experimental design: a review" (for a Gaussian linear model it is D-optimality, and for
  a subset of contrasts Ds-optimality); for pairwise comparisons the same rule (the pair of maximal
  expected information gain on a Gaussian score posterior) is the selection of Mikhailiuk et al.
  (2020), "Active sampling for pairwise comparisons via approximate message passing and information
  gain maximization". The gain is largest for pairs that are both close (p(1 - p) near 1/4) and
  poorly known relative to each other (u'Σu large), so a fresh pool is first covered evenly, as
  balanced designs do, and later calls go where the ranking is still open. A batch is built greedily
  in up to ``STEPS`` steps: each step gives one item to each of the ceil(batch / STEPS) pairs of
  largest gain (at most one per pair per step) and updates Σ by their information (Woodbury) as if
  their verdicts had arrived (the expected information does not depend on the outcome), so later
  steps see the diminished return. Within a pair the items (prompts, orders, judges) are drawn at
  random. (Until 0.9.0 the criterion was the A-optimal reduction of the summed variance of the
  unseparated adjacent differences; on the arena-shaped pool it needed more calls than random
  selection to reach the same accuracy, docs/notes/i27active-27.md.)
- ``cycles``: re-judge the edges that carry the most bad (non-transitive) triads until each has a
  settled verdict. Each prompt instance's tournament graph is built from the revealed verdicts
  (several verdicts of one edge combined by plurality: agreeing orders give that winner, disagreeing
  ones a tie, as the project's graphs do, ``engine.graphs.stack.combine_counts``); an item whose edge
  (prompt, unordered pair) already has a verdict scores the number of bad triads of its graph that
  contain that edge (``engine.graphs.cycles.pair_cycle_counts``, C3 − C3_tie per pair) while the
  edge is not settled, and 0 once it is. Settled (``settled_votes``): the edge's most frequent
  outcome (lo wins, hi wins, tie) has at least two verdicts and more than half of them. So an edge in
  a bad triad is asked again (the other presentation order, another judge or annotator); if the two
  verdicts agree it is settled, if they disagree (a tie under plurality) a third call decides it by
  majority; a settled edge is not asked again while unsettled ones wait. Items are taken by
  that score, highest first (ties at random), at most one per edge in a batch while other edges
  remain; then re-judgings of other judged edges, then items of edges with no verdict yet, at random.
  Source: paper 002's ActiveGED idea (spend re-judging where the graph's contradictions are),
  generalised from a fixed graph denoiser to choosing which calls to make; the triad counts and the
  settling rule are the project's own. A pool that holds only two verdicts of an edge (one judge,
  both orders) has no third call: a disagreement there stays a tie.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from engine.errors import LensError
from engine.judging.active.fit import ActiveFit, Revealed, fit_revealed
from engine.judging.active.pool import Pool

STRATEGIES = ("random", "round-robin", "swim", "uncertainty", "cycles")
STEPS = 256
"""Most greedy steps of the uncertainty strategy per batch (each a low-rank update of the covariance)."""
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


def _contrasts(fit: ActiveFit, top_k: int | None) -> np.ndarray | None:
    """(M, R) columns e_{rank r} − e_{rank r+1} for the adjacent pairs the stopping rule tests; None when
    they span every contrast (no K, or K >= M − 1): then the gain needs no projection."""
    m = len(fit.scores)
    if top_k is None or top_k >= m - 1:
        return None
    order = fit.ranking()
    r = np.arange(max(1, int(top_k)))
    t = np.zeros((m, len(r)))
    t[order[r], r] = 1.0
    t[order[r + 1], r] = -1.0
    return t


def _projected_spread(cov: np.ndarray, t: np.ndarray | None, i: np.ndarray, j: np.ndarray) -> np.ndarray:
    """q = u'ΣT (T'ΣT)⁻¹ T'Σu for every candidate pair u = e_i − e_j (u'Σu when ``t`` is None)."""
    if t is None:
        return cov[i, i] + cov[j, j] - 2.0 * cov[i, j]
    st = cov @ t
    proj = st @ np.linalg.solve(t.T @ st, st.T)
    return proj[i, i] + proj[j, j] - 2.0 * proj[i, j]


def _uncertainty(pool, revealed, avail, batch, rng, top_k, fit) -> np.ndarray:
    fit = fit if fit is not None else fit_revealed(pool, revealed)
    m = pool.n_models
    if m < 2:
        return _random(pool, revealed, avail, batch, rng, top_k, fit)
    n_pairs = len(pool.pair_values)
    left_in = np.bincount(pool.pair_id[avail], minlength=n_pairs)
    cand = np.flatnonzero(left_in > 0)
    cand = cand[rng.permutation(len(cand))]  # equal gains go to a random pair, not the first by name
    i = (pool.pair_values[cand] // m).astype(np.int64)
    j = (pool.pair_values[cand] % m).astype(np.int64)
    p = 1.0 / (1.0 + np.exp(-(fit.scores[i] - fit.scores[j])))
    w = np.maximum(p * (1.0 - p), 1e-12)
    t = _contrasts(fit, top_k)
    cov = np.array(fit.cov, dtype=np.float64, copy=True)
    room = left_in[cand].astype(np.int64)
    chunk = math.ceil(batch / STEPS)
    left = batch
    while left > 0:
        live = room > 0
        c = min(chunk, left, int(live.sum()))
        if c == 0:
            break
        s = cov[i, i] + cov[j, j] - 2.0 * cov[i, j]
        q = s if t is None else _projected_spread(cov, t, i, j)
        gain = -np.log1p(-np.clip(w * q / (1.0 + w * s), 0.0, 1.0 - 1e-15))
        gain = np.where(live, gain, -np.inf)
        top = np.argpartition(-gain, c - 1)[:c] if c < len(gain) else np.arange(len(gain))
        top = top[np.isfinite(gain[top])]
        room[top] -= 1
        left -= len(top)
        u = np.zeros((m, len(top)))
        cols = np.arange(len(top))
        u[i[top], cols] = 1.0
        u[j[top], cols] = -1.0
        g = cov @ u  # Woodbury: Σ₊ = Σ − ΣU (W⁻¹ + U'ΣU)⁻¹ U'Σ
        cov -= g @ np.linalg.solve(u.T @ g + np.diag(1.0 / w[top]), g.T)
    take = np.zeros(n_pairs, dtype=np.int64)
    take[cand] = left_in[cand] - room
    return _take_from_pairs(pool, avail, take, rng)


def edge_votes(pool: Pool, revealed: Revealed) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(instances, lo wins, hi wins, ties) of every edge with a revealed valid verdict: the sorted instance
    numbers (``Pool.instance``) and, per edge, its verdicts for the lower-numbered model, for the higher
    one, and its ties."""
    valid = revealed.asked & ((revealed.wins_a + revealed.wins_b + revealed.ties) > 0)
    rv = np.flatnonzero(valid)
    if len(rv) == 0:
        empty = np.zeros(0)
        return np.zeros(0, np.int64), empty, empty, empty
    lo_is_a = pool.a[rv] == pool.lo[rv]
    lo_win = np.where(lo_is_a, revealed.wins_a[rv], revealed.wins_b[rv])
    hi_win = np.where(lo_is_a, revealed.wins_b[rv], revealed.wins_a[rv])
    insts, inv = np.unique(pool.instance[rv], return_inverse=True)
    return (insts, np.bincount(inv, lo_win), np.bincount(inv, hi_win),
            np.bincount(inv, revealed.ties[rv]))


def settled_votes(lo_win: np.ndarray, hi_win: np.ndarray, ties: np.ndarray) -> np.ndarray:
    """Per edge: its most frequent outcome (lo wins, hi wins, tie) has at least 2 verdicts and more than
    half of them: a majority that a second verdict confirmed (2-0, 2-1, 3-1, ...; not 1-0 or 1-1)."""
    top = np.maximum(np.maximum(lo_win, hi_win), ties)
    return (top >= 2) & (2 * top > lo_win + hi_win + ties)


def edge_bad_triads(pool: Pool, revealed: Revealed) -> tuple[np.ndarray, np.ndarray]:
    """(instances, bad triads) of every edge with a revealed verdict: the sorted instance numbers
    (``Pool.instance``) and, for each, the bad triads of its prompt's graph that contain that edge
    (module docstring, ``cycles``)."""
    return _bad_triads_of(pool, *edge_votes(pool, revealed))


def _bad_triads_of(pool: Pool, insts, lo_win, hi_win, ties) -> tuple[np.ndarray, np.ndarray]:
    from engine.graphs.cycles import pair_cycle_counts
    from engine.graphs.stack import combine_counts

    m = pool.n_models
    bad = np.zeros(len(insts), dtype=np.int64)
    if len(insts) == 0:
        return insts, bad
    outcome = combine_counts(lo_win, hi_win, ties, "plurality")
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
    votes = edge_votes(pool, revealed)
    insts, bad = _bad_triads_of(pool, *votes)
    bad = np.where(settled_votes(*votes[1:]), 0, bad)
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
