"""SNTD (paper 001, eq. 3-5): zero on transitive soft triples, a direct per-triple formula, JSD."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy.spatial.distance import jensenshannon

from engine.diagnostics import diagnose
from engine.diagnostics.sntd import bernoulli_jsd, sntd_arrays, sntd_summary, sntd_triples
from engine.graphs.stack import build_stack


def logistic(x):
    return 1.0 / (1.0 + np.exp(-x))


def bt_soft(gamma: np.ndarray) -> np.ndarray:
    s = logistic(gamma[:, None] - gamma[None, :])
    np.fill_diagonal(s, np.nan)
    return s


def slow_sntd(p_ab: float, p_bc: float, p_ac: float) -> float:
    """Eq. 3-5 one triple at a time, with scipy's Jensen-Shannon distance squared (base 2)."""
    s = {("a", "b"): math.log(p_ab / (1 - p_ab)), ("b", "c"): math.log(p_bc / (1 - p_bc)),
         ("a", "c"): math.log(p_ac / (1 - p_ac))}

    def gap(x, y):
        return s[(x, y)] if (x, y) in s else -s[(y, x)]

    total = 0.0
    for (x, y), p in zip([("a", "b"), ("b", "c"), ("a", "c")], [p_ab, p_bc, p_ac], strict=False):
        z = ({"a", "b", "c"} - {x, y}).pop()
        hat = 1 / (1 + math.exp(-(gap(x, z) - gap(y, z))))
        total += jensenshannon([p, 1 - p], [hat, 1 - hat], base=2) ** 2
    return total / 3


def test_transitive_soft_triples_have_zero_sntd():
    rng = np.random.default_rng(0)
    soft = np.stack([bt_soft(rng.normal(0, 2, size=6)) for _ in range(20)])
    val, tri = sntd_arrays(soft)
    assert tri.shape == (20, 3)
    assert np.allclose(val, 0.0, atol=1e-12)


def test_matches_direct_formula_and_is_order_free():
    rng = np.random.default_rng(1)
    n = 5
    soft = np.full((30, n, n), np.nan)
    iu, ju = np.triu_indices(n, 1)
    p = rng.uniform(0.02, 0.98, size=(30, len(iu)))
    soft[:, iu, ju] = p
    soft[:, ju, iu] = 1 - p
    val, tri = sntd_arrays(soft)
    for t in range(0, 30, 7):
        for k, (a, b, c) in enumerate(tri):
            assert val[t, k] == pytest.approx(
                slow_sntd(soft[t, a, b], soft[t, b, c], soft[t, a, c]), rel=1e-9
            )
    perm = rng.permutation(n)
    val2, tri2 = sntd_arrays(soft[:, perm][:, :, perm])
    # triple {a,b,c} of the permuted graph is triple {perm[a],perm[b],perm[c]} of the original
    lookup = {tuple(sorted(t)): k for k, t in enumerate(tri.tolist())}
    for k2, t2 in enumerate(tri2.tolist()):
        k = lookup[tuple(sorted(perm[t2].tolist()))]
        assert np.allclose(val2[:, k2], val[:, k])


def test_bernoulli_jsd_against_scipy():
    rng = np.random.default_rng(2)
    p, q = rng.random(50), rng.random(50)
    ref = [jensenshannon([a, 1 - a], [b, 1 - b]) ** 2 for a, b in zip(p, q, strict=False)]  # natural log
    assert np.allclose(bernoulli_jsd(p, q, base=math.e), ref, atol=1e-12)
    assert np.allclose(bernoulli_jsd(np.array([0.0]), np.array([1.0])), [1.0])  # disjoint: 1 bit


def test_from_verdicts_averages_orders_and_skips_missing_pairs():
    # two orders of (x, y) with prob 0.9 and 0.7 → mean 0.8; pair (y, z) missing in graph p2
    rows = [
        ("p1", "x", "y", 0.9, "AB"), ("p1", "y", "x", 0.3, "AB"),  # P(x>y): 0.9 and 0.7
        ("p1", "y", "z", 0.6, "AB"), ("p1", "x", "z", 0.2, "AB"),
        ("p2", "x", "y", 0.5, "AB"), ("p2", "x", "z", 0.5, "AB"),
    ]
    v = pd.DataFrame(rows, columns=["prompt_id", "model_a", "model_b", "prob_a", "order"])
    v["winner"] = np.where(v["prob_a"] > 0.5, "A", np.where(v["prob_a"] < 0.5, "B", "tie"))
    for c, val in {"dataset": "d", "judge": "j", "variant": 0, "turn": 1, "category": "c",
                   "variant_kind": "original"}.items():
        v[c] = val
    stack = build_stack(v)
    t = sntd_triples(stack)
    assert len(t) == 1 and t["prompt_id"].iloc[0] == "p1"
    assert t["sntd"].iloc[0] == pytest.approx(slow_sntd(0.8, 0.6, 0.2))
    s = sntd_summary(stack)
    assert s["soft_triples"].iloc[0] == 1


def soft_verdicts(rows) -> pd.DataFrame:
    """Verdict rows (prompt_id, model_a, model_b, prob_a, order) of one judge, winners from prob_a."""
    v = pd.DataFrame(rows, columns=["prompt_id", "model_a", "model_b", "prob_a", "order"])
    v["winner"] = np.where(v["prob_a"] > 0.5, "A", np.where(v["prob_a"] < 0.5, "B", "tie"))
    for c, val in {"dataset": "d", "judge": "j", "variant": 0, "turn": 1, "category": "c",
                   "variant_kind": "original"}.items():
        v[c] = val
    return v


def test_per_order_sntd_is_paper_001_eq3_literally_hand_worked():
    """Pairs (a,b), (b,c) at 0.5 in both orders; P(a>c) is 0.5 with a shown first, 0.9 with c first.
    Averaged: φ_ac = 0.7, so φ̂_ab = φ̂_bc = 0.7, φ̂_ac = 0.5 and SNTD = JSD(0.5‖0.7) = 0.030305 bit.
    Per order: the draws with φ_ac = 0.5 are exactly transitive (0); those with 0.9 give JSD(0.5‖0.9)
    = 0.146793 bit by the same argument; the mean over the orders is 0.073397 bit."""
    v = soft_verdicts([
        ("p", "a", "b", 0.5, "AB"), ("p", "b", "a", 0.5, "AB"),
        ("p", "b", "c", 0.5, "AB"), ("p", "c", "b", 0.5, "AB"),
        ("p", "a", "c", 0.5, "AB"), ("p", "c", "a", 0.1, "AB"),  # P(a>c) = 0.5 (a first), 0.9 (c first)
    ])
    stack = build_stack(v)
    averaged = sntd_triples(stack)["sntd"].iloc[0]
    literal = sntd_triples(stack, variant="per-order", verdicts=v)["sntd"].iloc[0]
    assert averaged == pytest.approx(0.0303051448, abs=1e-9)
    assert averaged == pytest.approx(slow_sntd(0.5, 0.5, 0.7))
    assert literal == pytest.approx(0.0733965512, abs=1e-9)
    assert literal == pytest.approx((slow_sntd(0.5, 0.5, 0.5) + slow_sntd(0.5, 0.5, 0.9)) / 2)
    # the diagnose entry point and its stated default
    d = diagnose(v, table="sntd")
    assert d["sntd_mean"].iloc[0] == pytest.approx(averaged)
    assert diagnose(v, table="sntd", sntd_variant="per-order")["sntd_mean"].iloc[0] == pytest.approx(literal)


def test_per_order_sntd_mixes_all_eight_draws_and_equals_averaged_with_one_order():
    rng = np.random.default_rng(5)
    p = rng.uniform(0.05, 0.95, size=6)  # (ab, ba-shown), (bc, cb-shown), (ac, ca-shown) as P(lower wins)
    v = soft_verdicts([
        ("p", "a", "b", p[0], "AB"), ("p", "b", "a", 1 - p[1], "AB"),
        ("p", "b", "c", p[2], "AB"), ("p", "c", "b", 1 - p[3], "AB"),
        ("p", "a", "c", p[4], "AB"), ("p", "c", "a", 1 - p[5], "AB"),
    ])
    literal = sntd_triples(build_stack(v), variant="per-order", verdicts=v)["sntd"].iloc[0]
    brute = np.mean([slow_sntd(x, y, z) for x in p[0:2] for y in p[2:4] for z in p[4:6]])
    assert literal == pytest.approx(brute, rel=1e-9)
    # one order only (the first row of each pair): both variants read the same probabilities
    one = v.iloc[[0, 2, 4]]
    st = build_stack(one)
    assert sntd_triples(st, variant="per-order", verdicts=one)["sntd"].iloc[0] == pytest.approx(
        sntd_triples(st)["sntd"].iloc[0], rel=1e-12)
    with pytest.raises(ValueError):
        sntd_triples(st, variant="per-order")


def _dense_verdicts(n_models: int, n_prompts: int, with_prob: bool, seed: int = 0) -> pd.DataFrame:
    """Every pair of ``n_models`` judged once on each of ``n_prompts`` prompts, prob_a random or absent."""
    rng = np.random.default_rng(seed)
    names = [f"m{i:03d}" for i in range(n_models)]
    pairs = [(a, b) for i, a in enumerate(names) for b in names[i + 1:]]
    rows = [(f"p{p}", a, b, float(rng.uniform(0.05, 0.95)) if with_prob else np.nan, "AB")
            for p in range(n_prompts) for a, b in pairs]
    v = soft_verdicts(rows)
    if not with_prob:
        v["winner"] = rng.choice(["A", "B", "tie"], len(v))
    return v


def test_no_probability_gives_an_empty_result_with_a_reason_and_allocates_nothing_per_triple():
    """150 models (551,300 triples per graph): without prob_a nothing of that size is allocated."""
    import tracemalloc

    from engine.diagnostics.sntd import NO_PROBABILITY

    stack = build_stack(_dense_verdicts(150, 2, with_prob=False))
    assert stack.soft is None
    tracemalloc.start()
    t = sntd_triples(stack)
    s = sntd_summary(stack)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert t.empty and s.empty and list(s.columns) == ["judge", "soft_triples", "sntd_mean"]
    assert t.attrs["reason"] == s.attrs["reason"] == NO_PROBABILITY
    assert peak < 2 * 551_300 * 8  # less than two float arrays over one graph's triples


def test_blocked_computation_equals_the_whole_arrays_and_bounds_memory():
    """Computed in small blocks, SNTD equals sntd_arrays on the whole (graphs, triples) array, and the
    peak memory follows the block size, not graphs x triples."""
    import tracemalloc

    v = _dense_verdicts(40, 6, with_prob=True, seed=3)
    stack = build_stack(v)
    whole, tri = sntd_arrays(stack.soft)
    expect = np.sort(whole[~np.isnan(whole)])
    assert len(expect) == 6 * len(tri) == 6 * 9880
    tracemalloc.start()
    small = sntd_triples(stack, max_cells=5_000)
    _, peak_small = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    tracemalloc.start()
    big = sntd_triples(stack, max_cells=10**8)
    _, peak_big = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    pd.testing.assert_frame_equal(small, big)
    np.testing.assert_allclose(np.sort(small["sntd"].to_numpy()), expect, rtol=0, atol=1e-15)
    assert "reason" not in small.attrs
    assert peak_small < peak_big / 2  # the per-triple work no longer holds every cell at once
