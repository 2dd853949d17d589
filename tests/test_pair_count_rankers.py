"""Win rate, Copeland / score-of-win and majority (eq. 5) on the compared pairs only (issue 23, bug 13).

Their count fits and their bootstrap above ``DENSE_MODELS_MAX`` models read per-pair counts, never an
(n, n) array. Each pair-list number is checked against the second path, the dense (B, n, n) kernels
(``winrate_scores``, ``copeland_scores``, ``graph_from_counts`` + ``majority_scores``) on the same
counts: equal exactly (integer counts, halves), NaN where the dense path has NaN.
"""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

from engine.rankers import fit_counts
from engine.rankers.majority import graph_from_counts, majority_pairs, majority_scores
from engine.rankers.objects import SHOWN_GRAPH_MODELS_MAX
from engine.rankers.simple import copeland_pairs, copeland_scores, winrate_pairs, winrate_scores
from engine.rankers.votes import PairCounts, Votes
from engine.ranking import count_bootstrap
from engine.ranking.count_bootstrap import bootstrap_counts

SHAPES = [(2, 1, 0), (5, 3, 1), (9, 40, 2), (30, 200, 3), (60, 25, 4)]
"""(models, votes per resample, seed): from one pair to sparse designs with uncompared pairs."""


def resampled(n: int, votes: int, b: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(b, n, n) strict wins W and symmetric ties T of b random vote sets, small counts so that exact
    majorities (W_ij == W_ji) and uncompared pairs occur."""
    rng = np.random.default_rng(seed)
    W, T = np.zeros((b, n, n)), np.zeros((b, n, n))
    for k in range(b):
        a = rng.integers(0, n, votes)
        o = (a + 1 + rng.integers(0, n - 1, votes)) % n
        out = rng.integers(-1, 2, votes)
        np.add.at(W[k], (a[out > 0], o[out > 0]), 1)
        np.add.at(W[k], (o[out < 0], a[out < 0]), 1)
        np.add.at(T[k], (a[out == 0], o[out == 0]), 1)
        np.add.at(T[k], (o[out == 0], a[out == 0]), 1)
    return W, T


def as_pairs(W: np.ndarray, T: np.ndarray):
    """The upper-triangle pair list (lo < hi) of a (b, n, n) batch: every pair, compared or not."""
    lo, hi = np.triu_indices(W.shape[-1], 1)
    return lo, hi, W[:, lo, hi], W[:, hi, lo], T[:, lo, hi]


@pytest.mark.parametrize("n,votes,seed", SHAPES)
def test_pair_kernels_equal_the_dense_kernels(n, votes, seed):
    """Every pair-list kernel gives the dense kernel's (b, n) scores on the same counts."""
    W, T = resampled(n, votes, 5, seed)
    pairs = as_pairs(W, T)
    compared = (W + W.swapaxes(1, 2) + T) > 0
    np.testing.assert_array_equal(winrate_pairs(n, *pairs), winrate_scores(W, T))
    for tie_value in (0.5, 1.0):
        for normalize in (False, True):
            np.testing.assert_array_equal(
                copeland_pairs(n, *pairs, tie_value, normalize, strict=False),
                copeland_scores(W, compared, tie_value, normalize, strict=False))
    for ties in ("half", "edge"):
        count2 = 2.0 * W + T if ties == "half" else 2.0 * (W + T)
        for exact_half in ("later", "both"):
            g = graph_from_counts(count2, W + W.swapaxes(1, 2) + T, exact_half)
            for normalize in (False, True):
                np.testing.assert_array_equal(
                    majority_pairs(n, *pairs, ties_rule=ties, exact_half=exact_half, normalize=normalize,
                                   strict=False),
                    majority_scores(g, compared, normalize, strict=False))


def dense_scores(ranker: str, W: np.ndarray, T: np.ndarray, **params) -> np.ndarray:
    """The dense batched fit of one (n, n) W, T (``Ranker.fit_counts_batch``), the second path."""
    from engine.rankers.objects import ranker_object

    obj = ranker_object(ranker)
    return obj.fit_counts_batch(W[None], T[None], **obj.check(params))[0][0]


@pytest.mark.parametrize("ranker,params", [
    ("winrate", {}), ("copeland", {}), ("scorewin", {"normalize": True}), ("majority", {}),
    ("majority", {"ties": "edge", "exact_half": "later", "normalize": True}),
])
@pytest.mark.parametrize("n,votes,seed", SHAPES[1:])
def test_count_fits_read_pairs_and_equal_the_dense_fit(ranker, params, n, votes, seed):
    """``fit_counts`` (now on the pair list) gives the dense batched fit's scores on every model that has
    a vote, and its majority graph is the dense one."""
    W, T = resampled(n, votes, 1, seed)
    W, T = W[0], T[0]
    seen = ((W + W.T + T) > 0).any(axis=1)
    W, T = W[seen][:, seen], T[seen][:, seen]
    models = tuple(f"m{k:02d}" for k in range(int(seen.sum())))
    zero = np.zeros(len(models), dtype=np.int64)
    pc = PairCounts.of_dense(models, W, T, votes=zero + 1, n_graphs=zero + 1, n_prompts=zero + 1)
    res = fit_counts(ranker, pc, **params)
    np.testing.assert_array_equal(res.scores.to_numpy(), dense_scores(ranker, W, T, **params))
    if ranker in ("copeland", "majority"):
        from engine.rankers.simple import majority_graph

        want = majority_graph(W, (W + W.T + T) > 0) if ranker == "copeland" else None
        if want is not None:
            np.testing.assert_array_equal(res.extras["graph"].to_numpy(), want)


def random_votes(n: int, m: int, graphs: int, seed: int) -> Votes:
    """m votes over n models in ``graphs`` graphs; model n - 1 has a single vote (absent from many
    resamples, so its score is NaN there)."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, n - 1, m)
    b = (a + 1 + rng.integers(0, n - 2, m)) % (n - 1)
    a[0], b[0] = n - 1, 0
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    out = rng.integers(-1, 2, m).astype(np.int8)
    g = rng.integers(0, graphs, m).astype(np.uint64)
    return Votes(tuple(f"m{k:03d}" for k in range(n)), lo, hi, out, g, g, np.arange(m), n_verdicts=m)


@pytest.mark.parametrize("ranker,params", [
    ("winrate", {}), ("copeland", {"normalize": True}), ("scorewin", {}),
    ("majority", {"exact_half": "later"}), ("majority", {"ties": "edge", "normalize": True}),
])
@pytest.mark.parametrize("order", ["votes", "reversed subset"])
def test_pair_batch_bootstrap_equals_the_dense_batch(monkeypatch, ranker, params, order):
    """The bootstrap's pair-list batch (above ``DENSE_MODELS_MAX`` models) gives the dense batch's samples
    on the same seeded draws, NaN where a model drew no vote, in the board's model order (reversed: the
    later model of eq. 5's exact half changes)."""
    votes = random_votes(12, 60, 25, 7)
    names = votes.models if order == "votes" else tuple(reversed(votes.models[1:]))
    dense = bootstrap_counts(votes, ranker, 30, seed=5, models=names, **params)
    assert dense.method.startswith("batched")
    monkeypatch.setattr(count_bootstrap, "DENSE_MODELS_MAX", 2)
    pair = bootstrap_counts(votes, ranker, 30, seed=5, models=names, **params)
    assert "compared pair" in pair.method
    assert np.isnan(dense.samples).any() and dense.samples.shape == (30, len(names))
    np.testing.assert_array_equal(pair.samples, dense.samples)
    np.testing.assert_array_equal(pair.rank_samples, dense.rank_samples)


def sparse_counts(n: int, m: int, seed: int) -> PairCounts:
    """m distinct compared pairs over n models (a chain so that every model is compared)."""
    rng = np.random.default_rng(seed)
    chain = np.arange(n - 1) * n + np.arange(1, n)
    a, b = rng.integers(0, n, m), rng.integers(0, n, m)
    key = np.unique(np.concatenate([chain, np.minimum(a, b)[a != b] * n + np.maximum(a, b)[a != b]]))
    k = key.size
    lo, hi = key // n, key % n
    votes = np.bincount(lo, minlength=n) + np.bincount(hi, minlength=n)
    return PairCounts(tuple(f"m{i:05d}" for i in range(n)), lo, hi, rng.integers(0, 3, k).astype(float),
                      rng.integers(0, 3, k).astype(float), rng.integers(0, 2, k).astype(float) + 1, votes,
                      votes, votes)


@pytest.mark.parametrize("ranker", ["winrate", "copeland", "majority"])
def test_count_fits_on_many_models_never_hold_an_n_by_n_array(ranker):
    """On 5,000 models (a dense (n, n) float array: 200 MB) the fit's traced peak stays under 40 MB."""
    n = 5_000
    assert n > SHOWN_GRAPH_MODELS_MAX
    pc = sparse_counts(n, 30_000, 1)
    tracemalloc.start()
    try:
        res = fit_counts(ranker, pc)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert np.isfinite(res.scores.to_numpy()).all() and len(res.scores) == n
    assert peak < 40e6, f"{ranker}: traced peak {peak / 1e6:.0f} MB"


def test_bootstrap_on_a_thousand_models_holds_no_dense_cells():
    """Win rate's bootstrap on 1,000 models (a dense chunk: 3 n^2 cell counts per resample, 24 MB each, 8
    resamples at once) stays under 40 MB traced (24 MB of it: the seeded pattern hash's one value per
    possible cell, ``SEEDED_CELLS_MAX``), and its samples are finite where the model drew a vote."""
    votes = random_votes(1_000, 4_000, 4_000, 3)
    tracemalloc.start()
    try:
        boot = bootstrap_counts(votes, "winrate", 8, seed=1)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert boot.samples.shape == (8, 1_000) and np.isfinite(boot.samples[:, 0]).all()
    assert peak < 40e6, f"traced peak {peak / 1e6:.0f} MB"


def resample_pairs(n: int, m: int, seed: int):
    """Pair counts of m battles over n models (strongly connected: a ring of extra battles) and one
    multinomial resample of them, as (i, j, a, b) half-tie pair lists over the same pairs."""
    rng = np.random.default_rng(seed)
    s = rng.normal(0, 1, n)
    a = np.concatenate([rng.integers(0, n, m), np.arange(n), (np.arange(n) + 1) % n])
    b = np.concatenate([(a[:m] + 1 + rng.integers(0, n - 1, m)) % n, (np.arange(n) + 1) % n, np.arange(n)])
    won = rng.random(a.size) < 1 / (1 + np.exp(-(s[a] - s[b])))
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    lo_won = np.where(a == lo, won, ~won)
    key = lo * n + hi
    pairs, at = np.unique(key, return_inverse=True)
    w_lo = np.bincount(at, lo_won, pairs.size)
    w_hi = np.bincount(at, ~lo_won, pairs.size)
    draw = rng.multinomial(a.size, np.full(a.size, 1 / a.size))
    r_lo = np.bincount(at, draw * lo_won, pairs.size)
    r_hi = np.bincount(at, draw * ~lo_won, pairs.size)
    keep = r_lo + r_hi > 0
    return (pairs // n, pairs % n, w_lo, w_hi), (pairs[keep] // n, pairs[keep] % n, r_lo[keep], r_hi[keep])


@pytest.mark.parametrize("n,m,seed", [(240, 6_000, 0), (400, 20_000, 1), (300, 2_000, 2)])
def test_warm_newton_reaches_the_cold_fit_in_fewer_iterations(n, m, seed):
    """A resample's pair-list Newton fit started from the full data's fit is the cold fit (to 1e-9) and
    takes fewer iterations (no more on sparse data: 2,000 battles over 300 models); a wild start (spread
    about 1,000) is set aside and gives the cold fit too."""
    from engine.rankers.bt import regularise_pairs
    from engine.rankers.bt_solvers import newton_pairs

    full, res = resample_pairs(n, m, seed)
    point, _, ok = newton_pairs(n, *regularise_pairs(n, *full, 1.0, "regularize")[:4])
    i, j, a, b, _ = regularise_pairs(n, *res, 1.0, "regularize")
    cold, it_cold, ok_cold = newton_pairs(n, i, j, a, b)
    warm, it_warm, ok_warm = newton_pairs(n, i, j, a, b, theta0=point)
    wild, _, ok_wild = newton_pairs(n, i, j, a, b, theta0=np.random.default_rng(seed).normal(0, 300, n))
    assert ok and ok_cold and ok_warm and ok_wild
    np.testing.assert_allclose(warm, cold, atol=1e-9)
    np.testing.assert_allclose(wild, cold, atol=1e-9)
    assert it_warm < it_cold or (m < 10 * n and it_warm <= it_cold), (it_warm, it_cold)


@pytest.mark.parametrize("ranker", ["bt", "davidson"])
def test_warm_bootstrap_refits_equal_cold_refits(monkeypatch, ranker):
    """The bootstrap's pair refits (above ``DENSE_MODELS_MAX`` models) started from the point estimate
    give the samples of refits from scratch on the same draws (the base ``Ranker.fit_counts_warm``)."""
    from engine.rankers import objects

    votes = random_votes(230, 9_000, 3_000, 11)
    warm = bootstrap_counts(votes, ranker, 4, seed=2)
    assert "one fit per resample" in warm.method
    cls = objects.BT if ranker == "bt" else objects.Davidson
    monkeypatch.setattr(cls, "fit_counts_warm", objects.Ranker.fit_counts_warm)
    cold = bootstrap_counts(votes, ranker, 4, seed=2)
    assert np.isfinite(cold.samples).sum() > 0.9 * cold.samples.size
    np.testing.assert_allclose(warm.samples, cold.samples, atol=1e-6, equal_nan=True)


def test_refit_pair_counts_are_the_full_pair_counts_less_participation(monkeypatch):
    """``Votes.fit_pair_counts`` (the refits' counts, no participation sorts) holds the same pairs, wins,
    ties and soft W~ as ``pair_counts``, and Elo's and soft BT's bootstrap refits give the same samples
    with either."""
    from dataclasses import replace

    votes = random_votes(15, 400, 60, 4)
    p = np.random.default_rng(4).random(len(votes))
    p[::7] = np.nan  # some votes without a judge probability: counted as hard outcomes
    votes = replace(votes, p_lo=p)
    full, lean = votes.pair_counts(), votes.fit_pair_counts()
    for field in ("lo", "hi", "wins_lo", "wins_hi", "ties", "votes"):
        np.testing.assert_array_equal(getattr(lean, field), getattr(full, field))
    assert full.soft is not None and lean.soft is not None
    np.testing.assert_array_equal(lean.soft[0], full.soft[0])
    np.testing.assert_array_equal(lean.soft[1], full.soft[1])
    assert lean.soft[2] == full.soft[2] == int(np.isnan(p).sum())
    got = {r: bootstrap_counts(votes, r, 5, seed=9, **kw).samples
           for r, kw in (("elo", {}), ("bt", {"soft": True}))}
    monkeypatch.setattr(Votes, "fit_pair_counts", Votes.pair_counts)
    for r, kw in (("elo", {}), ("bt", {"soft": True})):
        np.testing.assert_array_equal(got[r], bootstrap_counts(votes, r, 5, seed=9, **kw).samples)


@pytest.mark.parametrize("unit", ["vote", "graph"])
def test_resampled_cells_equal_the_pattern_product(unit):
    """The resampled cell counts (the identity shortcut when every unit is one vote) equal the pattern
    matrix times the same multinomial draws, computed here."""
    votes = random_votes(10, 300, 40, 6)
    mat, mult, cols = count_bootstrap.compact_patterns(votes, unit)
    draws = np.random.default_rng(8).multinomial(int(mult.sum()), mult / mult.sum(), size=7)
    want = np.asarray((mat.T @ draws.T).T)
    got = [(c, x) for c, x in count_bootstrap.resampled_cells(votes, unit, 7, np.random.default_rng(8))]
    assert len(got) == 1
    np.testing.assert_array_equal(got[0][0], cols)
    np.testing.assert_array_equal(got[0][1], want)
