"""Theory lab (paper 000, Section 5): Mallows sampler, conditioned edge law, recovery thresholds."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from engine.errors import LensError
from engine.experiments.simulate import (
    alpha_d,
    crossing,
    exact_recovery_iid,
    graphs_from_permutations,
    integration_graph,
    inversion_law,
    inversions,
    mallows_permutations,
    pair_counts,
    recovered,
    recovery_curve,
    sample_graphs,
    thresholds,
)
from engine.graphs.cycles import cycle_counts_arrays


def brute_inversion_law(n, q):
    """Enumerate S_n: P(inv = k) ∝ Σ q^inv over permutations with k inversions."""
    w = np.zeros(n * (n - 1) // 2 + 1)
    for perm in itertools.permutations(range(n)):
        k = sum(perm[a] > perm[b] for a in range(n) for b in range(a + 1, n))
        w[k] += q**k
    return w / w.sum()


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 6])
@pytest.mark.parametrize("q", [0.0, 0.3, 0.8, 1.0])
def test_q_factorial_law_matches_enumeration(n, q):
    assert np.allclose(inversion_law(n, q), brute_inversion_law(n, q))


@pytest.mark.parametrize("n,q", [(3, 0.5), (5, 0.3), (6, 0.7), (6, 1.0)])
def test_mallows_sampler_inversion_counts_follow_the_exact_law(n, q):
    size = 40_000
    inv = inversions(mallows_permutations(n, q, size, seed=n))
    law = inversion_law(n, q)
    emp = np.bincount(inv, minlength=law.size) / size
    # 5 binomial standard errors per cell
    assert np.all(np.abs(emp - law) <= 5 * np.sqrt(law * (1 - law) / size) + 1e-9)


def test_mallows_full_permutation_law_n4():
    q, size = 0.45, 60_000
    perm = mallows_permutations(4, q, size, seed=7)
    keys, counts = np.unique(perm, axis=0, return_counts=True)
    assert len(keys) == 24
    inv = inversions(keys)
    z = np.sum(q ** inversions(np.array(list(itertools.permutations(range(4))))))
    expect = q**inv / z
    assert np.all(np.abs(counts / size - expect) <= 5 * np.sqrt(expect * (1 - expect) / size))


def test_rejection_sampling_agrees_with_mallows_for_small_n():
    """Triangle-free graphs of the iid model (by rejection) have Mallows(q) inversion counts."""
    n, p = 4, 0.2
    g = sample_graphs(n, p, t=1, reps=40_000, seed=3)[:, 0]
    c3 = cycle_counts_arrays(g)["c3"]
    tf = g[c3 == 0]
    # the best-first order of a transitive tournament: sort by out-degree
    order = np.argsort(-tf.sum(axis=2), axis=1, kind="stable")
    inv = inversions(order)
    law = inversion_law(n, (0.5 - p) / (0.5 + p))
    emp = np.bincount(inv, minlength=law.size) / inv.size
    assert np.all(np.abs(emp - law) <= 5 * np.sqrt(law * (1 - law) / inv.size) + 1e-9)


def test_conditioned_graphs_are_triangle_free_and_follow_proposition_5():
    n, p = 9, 0.15
    q = (0.5 - p) / (0.5 + p)
    g = graphs_from_permutations(mallows_permutations(n, q, 30_000, seed=11))
    assert cycle_counts_arrays(g[:2000])["c3"].max() == 0
    for d in range(1, n):
        freq = np.mean([g[:, i, i + d].mean() for i in range(n - d)])
        assert freq == pytest.approx(float(alpha_d(q, d)), abs=0.012)
    assert float(alpha_d(q, 1)) == pytest.approx(0.5 + p)


def test_graph_level_and_count_level_iid_agree_with_closed_form():
    n, p, t, reps = 6, 0.2, 9, 4000
    g = sample_graphs(n, p, t, reps, seed=5)
    maj = integration_graph(g)
    truth = np.triu(np.ones((n, n), bool), 1)
    by_graphs = (maj == truth).all(axis=(1, 2)).mean()
    by_counts = recovered(pair_counts(n, p, t, reps, "iid", seed=6), t).mean()
    exact = exact_recovery_iid(n, p, t)
    se = np.sqrt(exact * (1 - exact) / reps)
    assert abs(by_graphs - exact) < 4 * se and abs(by_counts - exact) < 4 * se


def test_inhomogeneous_noise_closed_form():
    n, t, reps = 5, 7, 5000
    rng = np.random.default_rng(0)
    P = np.triu(rng.uniform(0.1, 0.4, (n, n)), 1)
    P = P + P.T + np.eye(n) * 0.25
    exact = exact_recovery_iid(n, P, t)
    sim = recovered(pair_counts(n, P, t, reps, "iid", seed=1), t).mean()
    assert abs(sim - exact) < 4 * np.sqrt(exact * (1 - exact) / reps)


def test_recovery_crosses_one_half_between_the_thresholds():
    """n = 30, p = 0.25: thresholds 2 log n/… ≈ 23.6 and 4 log n/… ≈ 47.3 (Theorems 1-2).

    Stated tolerance: the unconditioned curve crosses 1/2 strictly between the two thresholds and
    within 3 graphs of its closed form; the triangle-free curve crosses 1/2 below 2 log n/… (its
    finite-n crossing sits under the asymptotic constant) and below the unconditioned one.
    """
    n, p = 30, 0.25
    t2, t4 = thresholds(n, p)
    ts = np.arange(3, 58, 3)
    c = recovery_curve(n, p, ts, reps=250, seed=1)
    iid = c[c.model == "iid"]
    tf = c[c.model == "triangle_free"]
    x_iid, x_exact, x_tf = crossing(iid.t, iid.prob), crossing(iid.t, iid.exact), crossing(tf.t, tf.prob)
    assert t2 < x_iid < t4
    assert abs(x_iid - x_exact) < 3
    assert x_tf < t2 and x_tf < x_iid


def test_bad_inputs():
    with pytest.raises(LensError, match="in \\(0, 1/2\\]"):
        pair_counts(5, 0.7, 3, 2, "iid", 0)
    with pytest.raises(LensError, match="Unknown model"):
        pair_counts(5, 0.2, 3, 2, "x", 0)
    with pytest.raises(LensError, match="one noise level"):
        pair_counts(3, np.full((3, 3), 0.2), 3, 2, "triangle_free", 0)


def test_wilson_interval_matches_scipy_and_keeps_width_at_0_and_1():
    from scipy.stats import binomtest

    from engine.experiments.simulate import wilson_interval

    for k, n in ((0, 400), (400, 400), (1, 50), (37, 120), (250, 250)):
        lo, hi = wilson_interval(k, n)
        ci = binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
        assert (lo, hi) == pytest.approx((ci.low, ci.high), abs=1e-12)
    lo, hi = wilson_interval(0, 400)
    assert lo == 0 and hi > 0.005  # the Wald interval would be [0, 0]
    c = recovery_curve(12, 0.2, [1, 301], reps=50, seed=0, models=("iid",))
    assert c.prob.tolist() == [0.0, 1.0] and (c.ci_high - c.ci_low > 0.05).all()


def test_default_grid_is_odd_and_even_t_are_marked():
    from engine.experiments.simulate import odd_grid

    g = odd_grid(120)
    assert (g % 2 == 1).all() and g[0] == 1 and g[-1] <= 120 and len(g) >= 20
    c = recovery_curve(6, 0.2, reps=20, seed=0, models=("iid",))
    assert (c.t % 2 == 1).all() and c.t.max() >= 2 * thresholds(6, 0.2)[1] and not c.even_t.any()
    # the even-t rule of eq. 5 is what the closed form says: t = 2 recovers less often than t = 1
    c = recovery_curve(4, 0.2, [1, 2, 3], reps=20000, seed=1, models=("iid",))
    exact = c.set_index("t")["exact"]
    assert exact[2] < exact[1] < exact[3] and c.set_index("t")["even_t"].tolist() == [False, True, False]
    assert abs(c.set_index("t")["prob"][2] - exact[2]) < 4 * np.sqrt(exact[2] * (1 - exact[2]) / 20000)
