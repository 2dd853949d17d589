"""Keep-K and mu sensitivity curves (paper 000, Figures 2, 3, 5) and their DuckDB cache."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from engine import results_cache
from engine.curves import keep_k_curve, mu_curve
from engine.cycles import cycle_counts
from engine.distances import all_distances
from engine.graphs import build_stack
from engine.rankers import rank
from engine.resampling import MACRO, ordinal_ranks, reference_ranks
from engine.synthetic import SyntheticParams, generate, write_synthetic
from engine.truncation import select_keep_k, truncation_scores

P = SyntheticParams(n_models=6, categories=2, prompts=4, paraphrases=2, samples=0, seed=3)


@pytest.fixture(scope="module")
def data():
    d = generate(P)
    return build_stack(d.verdicts.assign(dataset="s", turn=1, prob_a=np.nan)), d.truth


def direct_point(st, truth, kept):
    s = rank(st.subset(kept), "bt", solver="mm").scores
    r = pd.Series(ordinal_ranks(s.to_numpy()[None])[0], index=s.index)
    return all_distances(r, pd.Series(reference_ranks(truth, st.models), index=st.models))


def test_keep_k_points_match_direct_selection_and_single_fits(data):
    st, truth = data
    curve = keep_k_curve(st, truth, resamples=5, seed=1)
    scores = truncation_scores(cycle_counts(st))
    assert sorted(curve.k.unique()) == list(range(1, 13))  # every K up to the pool size (12)
    for k in (1, 4, 12):
        sel = select_keep_k(scores, st.keys, k, per_category=True)
        for cat in ("cat-1", "cat-2"):
            kept = [i for i in sel.index if st.keys.category[i] == cat]
            d = direct_point(st, truth, kept)
            for dist in ("spearman", "kendall", "footrule", "chebyshev"):
                row = curve[(curve.k == k) & (curve.category == cat) & (curve.distance == dist)].iloc[0]
                assert row.point == pytest.approx(d[dist], abs=1e-12)
                assert row.n_kept == k and row.ci_low - 1e-12 <= row["mean"] <= row.ci_high + 1e-12
    macro = curve[(curve.category == MACRO) & (curve.distance == "spearman")].set_index("k")["point"]
    per_cat = curve[(curve.category != MACRO) & (curve.distance == "spearman")].groupby("k")["point"].mean()
    assert np.allclose(macro, per_cat)


def test_k_beyond_a_pool_keeps_the_whole_pool(data):
    st, truth = data
    c = keep_k_curve(st, truth, ks=[30], resamples=0)
    assert set(c[c.category != MACRO].n_kept) == {12}


def test_mu_curve_selection_follows_the_weight(data):
    st, truth = data
    c = mu_curve(st, truth, mus=[0.0, 100.0], k=3, resamples=3)
    counts = cycle_counts(st)
    for mu in (0.0, 100.0):
        sel = select_keep_k(truncation_scores(counts, mu=mu), st.keys, 3, per_category=True)
        kept = [i for i in sel.index if st.keys.category[i] == "cat-1"]
        row = c[(c.mu == mu) & (c.category == "cat-1") & (c.distance == "kendall")].iloc[0]
        assert row.point == pytest.approx(direct_point(st, truth, kept)["kendall"], abs=1e-12)


def test_cache_hits_then_misses_after_a_new_version(empty_store):
    write_synthetic(empty_store, "syn", P)
    calls = []

    def compute():
        calls.append(1)
        st = build_stack(empty_store.verdicts("syn"))
        return keep_k_curve(st, generate(P).truth, ks=[2, 5], resamples=4)

    params = {"kind": "keep_k", "ks": (2, 5), "resamples": 4, "mu": np.float64(1.0)}
    a, hit_a = results_cache.cached(empty_store, "syn", "keep_k_curve", params, compute)
    b, hit_b = results_cache.cached(empty_store, "syn", "keep_k_curve", dict(reversed(list(params.items()))), compute)
    assert (hit_a, hit_b, len(calls)) == (False, True, 1)
    pd.testing.assert_frame_equal(a.reset_index(drop=True), b, check_dtype=False)
    write_synthetic(empty_store, "syn", P)  # re-import: new dataset version
    _, hit_c = results_cache.cached(empty_store, "syn", "keep_k_curve", params, compute)
    assert not hit_c and len(calls) == 2
    assert results_cache.clear(empty_store, "syn") == 2


def test_pools_perturbed_and_sampling_control():
    d = generate(SyntheticParams(n_models=5, categories=1, prompts=3, paraphrases=2, samples=3, seed=4))
    st = build_stack(d.verdicts.assign(dataset="s", turn=1, prob_a=np.nan))
    pert = keep_k_curve(st, d.truth, resamples=0)
    samp = keep_k_curve(st, d.truth, resamples=0, pool="sampling")
    assert pert.k.max() == 9 and samp.k.max() == 12  # 3 × (1 + 2) and 3 × (1 + 3) graphs
    kinds = st.keys["variant_kind"].to_numpy()
    scores = truncation_scores(cycle_counts(st))
    pos = np.flatnonzero(kinds != "paraphrase")
    sub = st.keys.iloc[pos].reset_index(drop=True)
    kept = pos[select_keep_k(scores[pos], sub, 4).index]
    row = samp[(samp.k == 4) & (samp.distance == "spearman")].iloc[0]
    assert row.point == pytest.approx(direct_point(st, d.truth, kept)["spearman"], abs=1e-12)
