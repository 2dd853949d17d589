"""Ranking distances against scipy and brute-force pair counting (paper 000, Section 4.1, App. C.2)."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from scipy.stats import kendalltau, spearmanr

from engine.errors import LensError
from engine.ranking.distances import (
    DISTANCES,
    all_distances,
    chebyshev_distance,
    distances_batch,
    footrule_distance,
    kendall_distance,
    spearman_distance,
)


def perm_series(p, names):
    return pd.Series(np.asarray(p) + 1, index=names)


def test_against_scipy_and_brute_force_on_all_permutations_of_five():
    names = list("abcde")
    ref = perm_series(range(5), names)
    for p in itertools.permutations(range(5)):
        r = perm_series(p, names)
        rho = spearmanr(r, ref).statistic
        tau = kendalltau(r, ref).statistic
        assert spearman_distance(r, ref) == pytest.approx((1 - rho) / 2)
        assert kendall_distance(r, ref) == pytest.approx((1 - tau) / 2)
        disc = sum(
            (r.iloc[i] - r.iloc[j]) * (ref.iloc[i] - ref.iloc[j]) < 0
            for i, j in itertools.combinations(range(5), 2)
        )
        assert kendall_distance(r, ref) == pytest.approx(disc / 10)
        assert footrule_distance(r, ref) == pytest.approx(np.abs(r - ref).sum() / 12)
        assert chebyshev_distance(r, ref) == pytest.approx(np.abs(r - ref).max() / 4)


def test_reversed_is_one_and_identical_is_zero():
    names = [f"m{i}" for i in range(6)]
    r = perm_series(range(6), names)
    rev = perm_series(range(5, -1, -1), names)
    d = all_distances(r, rev)
    assert d["spearman"] == pytest.approx(1.0) and d["kendall"] == pytest.approx(1.0)
    assert d["footrule"] == pytest.approx(1.0)  # sum |r - r*| = floor(n^2/2) for the reversal
    assert d["chebyshev"] == pytest.approx(1.0)
    assert all(v == 0 for k, v in all_distances(r, r).items() if k != "n_shared")


def test_only_shared_models_count_and_are_reranked():
    r = pd.Series({"a": 1, "x": 2, "b": 3, "c": 4})
    ref = pd.Series({"c": 1, "b": 2, "a": 3, "y": 4})
    d = all_distances(r, ref)
    assert d["n_shared"] == 3 and d["spearman"] == pytest.approx(1.0) and d["kendall"] == pytest.approx(1.0)


def test_ties_use_average_ranks_and_are_not_discordant():
    r = pd.Series({"a": 1, "b": 1, "c": 3})  # a and b tied (competition ranks)
    ref = pd.Series({"a": 1, "b": 2, "c": 3})
    assert kendall_distance(r, ref) == 0.0
    # average ranks 1.5, 1.5, 3 vs 1, 2, 3: sum d^2 = 0.5
    assert spearman_distance(r, ref) == pytest.approx((6 * 0.5 / (3 * 8)) / 2)
    assert footrule_distance(r, ref) == pytest.approx(1.0 / 4)


def test_batch_equals_single_and_needs_two_models():
    rng = np.random.default_rng(0)
    ranks = np.array([rng.permutation(7) + 1 for _ in range(20)])
    ref = rng.permutation(7) + 1
    names = [f"m{i}" for i in range(7)]
    out = distances_batch(ranks, ref)
    assert set(out) == set(DISTANCES)
    for b in range(20):
        single = all_distances(pd.Series(ranks[b], index=names), pd.Series(ref, index=names))
        for k in DISTANCES:
            assert out[k][b] == pytest.approx(single[k])
    with pytest.raises(LensError, match="at least two"):
        spearman_distance(pd.Series({"a": 1, "b": 2}), pd.Series({"a": 1, "z": 2}))


def test_numpy_average_ranks_equal_scipy_rankdata():
    """engine.ranking.distances.rankdata (numpy, keeps scipy.stats off the first page) equals scipy's, ties
    included."""
    import numpy as np
    from scipy.stats import rankdata as scipy_rankdata

    from engine.ranking.distances import rankdata

    rng = np.random.default_rng(7)
    for shape in [(1,), (6,), (40, 9), (3, 200)]:
        for levels in (2, 5, 1000):
            x = rng.integers(0, levels, size=shape).astype(float)
            for axis in range(x.ndim):
                assert np.array_equal(rankdata(x, axis=axis), scipy_rankdata(x, method="average", axis=axis))
    x = np.array([[1.0, np.nan, 2.0], [3.0, 1.0, 1.0]])
    np.testing.assert_array_equal(rankdata(x, axis=1), scipy_rankdata(x, method="average", axis=1))
