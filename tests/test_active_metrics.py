"""Recovery numbers of active judging (engine/ranking/recovery.py) against scipy and brute force.

Brute force: enumerate every way of breaking the ties of both rankings, compute the plain (tie-free)
Kendall distance and top-k overlap for each, and average: the module's closed forms must equal it.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import kendalltau, spearmanr

from engine.errors import LensError
from engine.ranking.recovery import recovery, top_k_probability


def _orders(scores: np.ndarray) -> list[tuple[int, ...]]:
    """Every strict order (best first) consistent with the scores: ties broken every possible way."""
    return [p for p in itertools.permutations(range(scores.size))
            if all(scores[p[i]] >= scores[p[i + 1]] for i in range(scores.size - 1))]


def _brute(est: np.ndarray, ref: np.ndarray, k: int) -> tuple[float, float]:
    """Mean Kendall distance and top-k overlap over all tie-breakings of both rankings."""
    kd, top = [], []
    n = est.size
    for pe in _orders(est):
        pos_e = np.argsort(pe)
        for pr in _orders(ref):
            pos_r = np.argsort(pr)
            disc = sum((pos_e[i] - pos_e[j]) * (pos_r[i] - pos_r[j]) < 0
                       for i, j in itertools.combinations(range(n), 2))
            kd.append(disc / (n * (n - 1) / 2))
            top.append(len(set(pe[:k]) & set(pr[:k])) / k)
    return float(np.mean(kd)), float(np.mean(top))


scores_with_ties = st.lists(st.integers(0, 3), min_size=2, max_size=6)


@settings(max_examples=60, deadline=None)
@given(est=scores_with_ties, ref_seed=st.integers(0, 10_000), k=st.integers(1, 3), ref_ties=st.booleans())
def test_kendall_and_top_k_equal_the_mean_over_every_tie_breaking(est, ref_seed, k, ref_ties):
    est_a = np.asarray(est, dtype=float)
    n = est_a.size
    rng = np.random.default_rng(ref_seed)
    ref = rng.integers(0, 3, n).astype(float) if ref_ties else rng.permutation(n).astype(float)
    k = min(k, n)
    got = recovery(est_a[None], ref, ks=(k,))
    kd, top = _brute(est_a, ref, k)
    assert got["kendall"][0] == pytest.approx(kd, abs=1e-12)
    assert got[f"top{k}"][0] == pytest.approx(top, abs=1e-12)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(2, 40))
def test_without_ties_kendall_is_half_of_one_minus_scipys_tau(seed, n):
    rng = np.random.default_rng(seed)
    est, ref = rng.normal(size=n), rng.normal(size=n)
    tau = kendalltau(est, ref).statistic
    assert recovery(est[None], ref, ks=(1,))["kendall"][0] == pytest.approx((1 - tau) / 2, abs=1e-12)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(3, 30))
def test_spearman_equals_scipy_with_ties(seed, n):
    rng = np.random.default_rng(seed)
    est = rng.integers(0, 4, (3, n)).astype(float)
    ref = rng.integers(0, 5, n).astype(float)
    got = recovery(est, ref, ks=(1,))["spearman"]
    for b in range(3):
        constant = np.ptp(est[b]) == 0 or np.ptp(ref) == 0  # scipy: NaN and a warning; ours: 0
        want = 0.0 if constant else spearmanr(est[b], ref).statistic
        assert got[b] == pytest.approx(want, abs=1e-12)


def test_an_estimate_that_knows_nothing_is_no_better_than_chance():
    """All scores equal (no verdicts yet): Kendall 1/2, Spearman 0, top-k overlap k/n (not 0 or 1)."""
    ref = np.arange(10.0)
    got = recovery(np.zeros((1, 10)), ref, ks=(1, 5))
    assert got["kendall"][0] == 0.5 and got["spearman"][0] == 0.0
    assert got["top1"][0] == pytest.approx(1 / 10) and got["top5"][0] == pytest.approx(5 / 10)


def test_the_exact_ranking_and_its_reverse():
    ref = np.array([3.0, 1.0, 2.0, 0.5, -1.0, 7.0])
    same = recovery(np.stack([ref * 2 + 1, -ref]), ref, ks=(1, 5))
    assert same["kendall"].tolist() == [0.0, 1.0]
    assert same["spearman"] == pytest.approx([1.0, -1.0])
    assert same["top1"].tolist() == [1.0, 0.0]
    assert same["top5"] == pytest.approx([1.0, 4 / 5])  # reversed top 5 of 6 still holds four of them


def test_top_k_probability_of_a_group_straddling_place_k():
    """Scores 5, 3, 3, 3, 1 and k = 2: the first is in, each of the three tied has one place in three."""
    p = top_k_probability(np.array([[5.0, 3.0, 3.0, 3.0, 1.0]]), 2)[0]
    assert p == pytest.approx([1.0, 1 / 3, 1 / 3, 1 / 3, 0.0])


@pytest.mark.parametrize("est, ref, ks", [
    (np.zeros((1, 3)), np.zeros(4), (1,)),
    (np.zeros((1, 1)), np.zeros(1), (1,)),
    (np.array([[0.0, np.nan]]), np.zeros(2), (1,)),
    (np.zeros((1, 3)), np.arange(3.0), (5,)),
])
def test_bad_shapes_are_one_sentence(est, ref, ks):
    with pytest.raises(LensError):
        recovery(est, ref, ks=ks)
