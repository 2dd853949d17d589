"""The pair-list solvers (issue 23, bug 13): BT, Davidson and Rank Centrality on the compared pairs only
agree with the dense batched kernels on the same data, and the count path on thousands of models never
allocates an (n, n) array.

Each sparse result is checked against a second path: the dense kernels (``newton_batch``, ``mm_batch``,
``fit_davidson_batch``, ``stationary_batch``) on the same counts, or brute-force bincounts.
"""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

from engine.errors import LensError
from engine.rankers.bt import COMPLETE_PAIRS_MAX, fit_bt_pairs_info, regularise, regularise_pairs
from engine.rankers.bt_solvers import DENSE_MODELS_MAX, mm_batch, mm_pairs, newton_batch, newton_pairs
from engine.rankers.davidson import fit_davidson_batch, newton_davidson_pairs
from engine.rankers.rank_centrality import stationary_batch, stationary_pairs, transition_batch
from engine.rankers.votes import PairCounts, Votes


def battles(n: int, m: int, seed: int, *, ties: float = 0.1, spread: float = 1.0):
    """m random battles over n models (BT strengths with sd ``spread``, a share of ties): dense W, T."""
    rng = np.random.default_rng(seed)
    s = rng.normal(0, spread, n)
    a = rng.integers(0, n, m)
    b = rng.integers(0, n - 1, m)
    b = np.where(b >= a, b + 1, b)
    r = rng.random(m)
    tie = r < ties
    a_won = ~tie & (rng.random(m) < 1 / (1 + np.exp(-(s[a] - s[b]))))
    W, T = np.zeros((n, n)), np.zeros((n, n))
    np.add.at(W, (a[a_won], b[a_won]), 1)
    lost = ~tie & ~a_won
    np.add.at(W, (b[lost], a[lost]), 1)
    np.add.at(T, (a[tie], b[tie]), 1)
    np.add.at(T, (b[tie], a[tie]), 1)
    return W, T


def pairs_of(wt: np.ndarray):
    i, j = np.nonzero(np.triu((wt + wt.T) > 0, 1))
    return i, j, wt[i, j], wt[j, i]


SHAPES = [(12, 300, 0, 1.0), (40, 2_000, 1, 2.0), (90, 1_500, 2, 0.5), (230, 20_000, 3, 1.5)]


@pytest.mark.parametrize("n,m,seed,spread", SHAPES)
def test_sparse_newton_equals_the_dense_kernel(n, m, seed, spread):
    W, T = battles(n, m, seed, spread=spread)
    wt = W + 0.5 * T
    w, bad = regularise(wt[None], 0.1)
    dense, _, conv = newton_batch(w)
    i, j, a, b = pairs_of(w[0])
    sparse, _, ok = newton_pairs(n, i, j, a, b)
    assert conv[0] and ok
    np.testing.assert_allclose(sparse, dense[0], atol=1e-9)
    mm_dense, _, _ = mm_batch(w, tol=1e-12)
    mm_sparse, _, mm_ok = mm_pairs(n, i, j, a, b, tol=1e-12)
    assert mm_ok
    np.testing.assert_allclose(mm_sparse, mm_dense[0], atol=1e-8)
    np.testing.assert_allclose(mm_sparse, sparse, atol=1e-8)


def test_sparse_newton_with_counts_a_billion_times_apart():
    """A model joined to the rest only by tiny counts keeps its own scale (the round-off correction)."""
    W, T = battles(30, 3_000, 7)
    W *= 1e9
    W[0, 1:], W[1:, 0] = 0.0, 0.0
    W[0, 5], W[6, 0] = 1.0, 2.0
    w, _ = regularise((W + 0.5 * T)[None], 0.1)
    dense, _, _ = newton_batch(w)
    sparse, _, ok = newton_pairs(30, *pairs_of(w[0]))
    assert ok
    np.testing.assert_allclose(sparse, dense[0], atol=1e-7)


def test_regularised_pairs_equal_the_dense_regularisation():
    """Two groups never compared: both paths add alpha/2 virtual ties to every pair and agree."""
    W1, _ = battles(120, 6_000, 4)
    W2, _ = battles(120, 6_000, 5)
    W = np.zeros((240, 240))
    W[:120, :120], W[120:, 120:] = W1, W2
    w, bad = regularise(W[None], 0.3)
    assert bad[0]
    dense, _, _ = newton_batch(w)
    fit = fit_bt_pairs_info(240, *pairs_of(W), alpha=0.3)  # 240 > DENSE_MODELS_MAX: the pair path
    assert 240 > DENSE_MODELS_MAX and fit.regularised[0] and fit.converged[0]
    np.testing.assert_allclose(fit.scores[0], dense[0], atol=1e-9)


@pytest.mark.parametrize("ranker,name", [("bt", "Bradley-Terry"), ("davidson", "Davidson"),
                                         ("rank-centrality", "Rank Centrality")])
def test_regularising_too_many_models_is_refused_before_allocating(ranker, name):
    """A chain over ~3,170 models (nobody beats upward): every pair would get virtual ties, over the
    limit: one sentence naming the ranker, the models and the pairs, before any pair array is built."""
    from engine.rankers import fit_counts

    n = int(np.sqrt(2 * COMPLETE_PAIRS_MAX)) + 10
    lo, hi = np.arange(n - 1), np.arange(1, n)
    none = np.zeros(n, dtype=np.int64)
    pc = PairCounts.of_votes(tuple(f"m{k}" for k in range(n)), lo, hi, np.ones(n - 1), votes=none + 1,
                             n_graphs=none, n_prompts=none)
    tracemalloc.start()
    try:
        sentence = (rf"^The {name} fit on these {n:,} models needs virtual comparisons on all [\d,]+ pairs "
                    r".* "
                    r"above the limit of 5,000,000 pairs")
        with pytest.raises(LensError, match=sentence):
            fit_counts(ranker, pc)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 20e6  # the complete pair list alone would be 5M pairs x 4 arrays x 8 bytes = 160 MB
    with pytest.raises(LensError, match="above the limit"):
        regularise_pairs(n, lo, hi, np.ones(n - 1), np.zeros(n - 1), 0.1)


@pytest.mark.parametrize("n,m,seed", [(15, 400, 0), (60, 3_000, 1), (220, 15_000, 2)])
def test_sparse_stationary_law_equals_the_dense_solve(n, m, seed):
    W, T = battles(n, m, seed)
    w, _ = regularise((W + 0.5 * T)[None], 0.1)
    dense = stationary_batch(transition_batch(w))[0]
    sparse = stationary_pairs(n, *pairs_of(w[0]))
    np.testing.assert_allclose(np.log(sparse), np.log(dense), atol=1e-8)


@pytest.mark.parametrize("n,m,seed", [(10, 600, 0), (50, 4_000, 1), (120, 12_000, 2)])
def test_sparse_davidson_newton_equals_the_dense_newton(n, m, seed):
    W, T = battles(n, m, seed, ties=0.25)
    theta, nu, conv = fit_davidson_batch(W[None], T[None], tol=1e-11)
    i, j = np.nonzero(np.triu((W + W.T + T) > 0, 1))
    th, nu_s, _, ok = newton_davidson_pairs(n, i, j, W[i, j], W[j, i], T[i, j], phi0=np.log(0.3), tol=1e-11)
    assert conv[0] and ok
    np.testing.assert_allclose(th, theta[0], atol=1e-8)
    assert abs(nu_s - nu[0]) <= 1e-8 * nu[0]


def test_pair_counts_equal_brute_force_sums():
    rng = np.random.default_rng(3)
    n, m = 9, 400
    lo = rng.integers(0, n - 1, m)
    hi = lo + 1 + rng.integers(0, n - 1 - lo)
    out = rng.integers(-1, 2, m)
    w = rng.integers(1, 4, m).astype(float)
    none = np.zeros(n, dtype=np.int64)
    pc = PairCounts.of_votes(tuple("abcdefghi"), lo, hi, out, votes=none, n_graphs=none, n_prompts=none,
                             weight=w)
    W, T = np.zeros((n, n)), np.zeros((n, n))
    for a, b, o, k in zip(lo, hi, out, w, strict=True):
        if o > 0:
            W[a, b] += k
        elif o < 0:
            W[b, a] += k
        else:
            T[a, b] += k
            T[b, a] += k
    np.testing.assert_array_equal(pc.W, W)
    np.testing.assert_array_equal(pc.T, T)
    wins, losses, ties = pc.model_totals()
    np.testing.assert_array_equal(wins, W.sum(axis=1))
    np.testing.assert_array_equal(losses, W.sum(axis=0))
    np.testing.assert_array_equal(ties, T.sum(axis=1))
    assert pc.n_pairs == int(np.triu(W + W.T + T > 0, 1).sum())


def many_model_votes(n: int, m: int, seed: int) -> Votes:
    """m arena votes over n models: a ring (so every model wins and loses) plus random pairs."""
    rng = np.random.default_rng(seed)
    a = np.concatenate([np.arange(n), rng.integers(0, n, m)])
    b = np.concatenate([(np.arange(n) + 1) % n, rng.integers(0, n, m)])
    keep = a != b
    a, b = a[keep], b[keep]
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    ring = np.arange(lo.size) < n
    outcome = np.where(ring, np.where(a < b, 1, -1), rng.integers(-1, 2, lo.size)).astype(np.int8)
    keys = np.arange(lo.size, dtype=np.uint64)
    models = tuple(f"m{k:05d}" for k in range(n))
    return Votes(models, lo, hi, outcome, keys, keys, np.arange(lo.size), n_verdicts=lo.size)


@pytest.mark.parametrize("ranker", ["bt", "davidson", "rank-centrality", "elo"])
def test_many_models_never_allocate_models_squared(ranker):
    """6,000 models, 60,000 votes: the whole count path (pair counts, fit, board) stays far below one
    (n, n) float array (288 MB); the dense path asked for 3 n^2 cells (864 MB) and, for BT and
    Davidson, a (pairs, n) incidence."""
    from engine.ranking.count_board import leaderboard_from_votes

    n = 6_000
    votes = many_model_votes(n, 60_000, 1)
    tracemalloc.start()
    try:
        board = leaderboard_from_votes(votes, ranker=ranker)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 100e6, f"peak {peak / 1e6:.0f} MB"
    assert len(board.table) == n and np.isfinite(board.table["score"]).all()
    wins, losses, ties = (np.bincount(votes.lo, (votes.outcome == o), n) +
                          np.bincount(votes.hi, (votes.outcome == -o), n) for o in (1, -1, 0))
    got = board.table.set_index("model").loc[list(votes.models)]
    np.testing.assert_array_equal(got["wins"], wins)
    np.testing.assert_array_equal(got["losses"], losses)
    np.testing.assert_array_equal(got["ties"], ties / 1)


def test_batched_entry_points_above_the_dense_limit_fit_each_on_its_pairs():
    """``fit_davidson_stack_batch`` and ``rank_centrality_batch`` on (2, n, n) stacks of 210 models fit
    each matrix on its pairs (a dense step there is O(B n^3)); checked against the dense kernels
    (``fit_davidson_batch``, ``stationary_batch``) called directly on the same stacks."""
    from engine.rankers.davidson import fit_davidson_stack_batch
    from engine.rankers.rank_centrality import rank_centrality_batch

    n = DENSE_MODELS_MAX + 10
    (W1, T1), (W2, T2) = battles(n, 12_000, 8, ties=0.2), battles(n, 12_000, 9, ties=0.2)
    W, T = np.stack([W1, W2]), np.stack([T1, T2])
    theta, nu, conv, bad = fit_davidson_stack_batch(W, T)
    dense_theta, dense_nu, dense_conv = fit_davidson_batch(W, T, tol=1e-11)
    assert conv.all() and dense_conv.all() and not bad.any()
    np.testing.assert_allclose(theta, dense_theta, atol=1e-7)
    np.testing.assert_allclose(nu, dense_nu, rtol=1e-7)
    wt = W + 0.5 * T
    scores, bad = rank_centrality_batch(wt)
    dense = np.log(stationary_batch(transition_batch(wt)))
    np.testing.assert_allclose(scores, dense - dense.mean(axis=1, keepdims=True), atol=1e-8)


def shared_graph_votes(n: int, graphs: int, seed: int) -> Votes:
    """Votes where each graph holds several pairs (so bootstrap units are multi-cell patterns)."""
    rng = np.random.default_rng(seed)
    g = rng.integers(0, graphs, 40 * graphs).astype(np.uint64)
    a = rng.integers(0, n, g.size)
    b = (a + 1 + rng.integers(0, n - 1, g.size)) % n
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    out = rng.integers(-1, 2, g.size).astype(np.int8)
    return Votes(tuple(f"m{k:02d}" for k in range(n)), lo, hi, out, g, g, np.arange(g.size),
                 n_verdicts=g.size)


@pytest.mark.parametrize("seeded", [True, False])
def test_bootstrap_patterns_rebuild_the_cells_with_either_hash(monkeypatch, seeded):
    """The unit patterns (one random value per possible cell, or per occurring cell for many models) sum
    back to the cell counts and number exactly the distinct unit rows (brute force)."""
    from engine.ranking import count_bootstrap

    if not seeded:
        monkeypatch.setattr(count_bootstrap, "SEEDED_CELLS_MAX", 0)
    votes = shared_graph_votes(12, 300, 4)
    mat, mult = count_bootstrap.unit_patterns(votes, "graph")
    np.testing.assert_array_equal(np.asarray(mat.T @ mult).ravel(),
                                  np.bincount(votes.cells(), minlength=3 * votes.n ** 2))
    rows: dict[int, list[int]] = {}
    for g, c in zip(votes.graph.tolist(), votes.cells().tolist(), strict=True):
        rows.setdefault(g, []).append(c)
    assert mat.shape[0] == len({tuple(sorted(r)) for r in rows.values()})


@pytest.mark.parametrize("ranker", ["bt", "davidson", "rank-centrality"])
def test_pair_refits_equal_the_batched_bootstrap(ranker):
    """The per-resample pair fits (many models) on the same seeded draws give the batched dense fits'
    samples (small n, where both run)."""
    from engine.rankers.objects import ranker_object
    from engine.ranking.count_bootstrap import _pair_refits, bootstrap_counts

    votes = shared_graph_votes(8, 200, 5)
    batched = bootstrap_counts(votes, ranker, 6, seed=3, unit="graph")
    assert batched.method.startswith("batched")
    obj = ranker_object(ranker)
    rng = np.random.default_rng(3)
    samples, _, _ = _pair_refits(votes, obj, "graph", 6, rng, votes.models, obj.check({}))
    np.testing.assert_allclose(samples, batched.samples, atol=1e-7)
