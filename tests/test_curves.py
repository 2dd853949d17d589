"""Keep-K and mu sensitivity curves (paper 000, Figures 2, 3, 5) and their DuckDB cache."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from engine.experiments import results_cache
from engine.experiments.curves import keep_k_curve, mu_curve
from engine.experiments.protocols import MACRO
from engine.graphs.cycles import cycle_counts
from engine.graphs.stack import build_stack
from engine.graphs.truncation import select_keep_k, truncation_scores
from engine.ingest.synthetic import SyntheticParams, generate, write_synthetic
from engine.rankers import rank
from engine.ranking.distances import all_distances, fractional_ranks
from engine.ranking.reference import reference_ranks

P = SyntheticParams(n_models=6, categories=2, prompts=4, paraphrases=2, samples=0, seed=3)


@pytest.fixture(scope="module")
def data():
    d = generate(P)
    return build_stack(d.verdicts.assign(dataset="s", turn=1, prob_a=np.nan)), d.truth


def direct_point(st, truth, kept, models=None):
    """BT (MM) on the kept graphs over every model of ``st``, distances on ``models`` (default: all)."""
    models = list(st.models if models is None else models)
    s = rank(st.subset(kept), "bt", solver="mm").scores[models]
    r = pd.Series(fractional_ranks(s.to_numpy()[None])[0], index=s.index)
    return all_distances(r, pd.Series(reference_ranks(truth, models), index=models))


def draws_by_hand(st, pool, kept, m, seed, group, R):
    """Slow twin of the keep→draw rule: in resample r take the m kept graphs with the smallest u[r, g],
    u indexed by the pool's graphs in graph-key order (prompt ids compared as numbers)."""
    from engine.experiments.draws import keep_draw_uniforms

    keyed = sorted(pool, key=lambda g: (int(st.keys.prompt_id[g]), int(st.keys.variant[g])))
    col = {g: c for c, g in enumerate(keyed)}
    u = keep_draw_uniforms(seed, group, len(keyed), R)
    return [sorted(kept, key=lambda g: u[r, col[g]])[:m] for r in range(R)]


def test_keep_k_points_match_direct_selection_and_single_fits(data):
    st, truth = data
    R = 5
    curve = keep_k_curve(st, truth, resamples=R, seed=1)
    scores = truncation_scores(cycle_counts(st))
    assert sorted(curve.k.unique()) == list(range(1, 13))  # every K up to the pool size (12)
    cats = st.keys.category.to_numpy()
    for k in (1, 4, 12):
        sel = select_keep_k(scores, st.keys, k, per_category=True)
        for cat in ("cat-1", "cat-2"):
            kept = [i for i in sel.index if st.keys.category[i] == cat]
            m = max(1, int(np.floor(0.8 * len(kept) + 0.5)))
            d = direct_point(st, truth, kept)
            draws = [direct_point(st, truth, g) for g in
                     draws_by_hand(st, list(np.flatnonzero(cats == cat)), kept, m, 1, cat, R)]
            for dist in ("spearman", "kendall", "footrule", "chebyshev"):
                row = curve[(curve.k == k) & (curve.category == cat) & (curve.distance == dist)].iloc[0]
                assert row.point == pytest.approx(d[dist], abs=1e-12)
                vals = np.array([x[dist] for x in draws])
                assert row["mean"] == pytest.approx(vals.mean(), abs=1e-12)
                half = 1.96 * vals.std(ddof=1) / np.sqrt(R)
                assert (row.ci_low, row.ci_high) == pytest.approx(
                    (vals.mean() - half, vals.mean() + half), abs=1e-12
                )
                assert (row.q_low, row.q_high) == pytest.approx(
                    tuple(np.quantile(vals, [0.025, 0.975])), abs=1e-12
                )
                assert row.n_kept == k and row.n_draw == m
    macro = curve[(curve.category == MACRO) & (curve.distance == "spearman")].set_index("k")
    per_cat = curve[(curve.category != MACRO) & (curve.distance == "spearman")].groupby("k")
    assert np.allclose(macro["point"], per_cat["point"].mean()) and np.allclose(
        macro["mean"], per_cat["mean"].mean()
    )


def test_the_band_brackets_the_plotted_curve():
    # the audit's case: with bootstrap bands the K = 25 band (0.013-0.020) sat above the point (0.010)
    d = generate(SyntheticParams(n_models=12, categories=2, prompts=10, paraphrases=4, samples=0, seed=9))
    st = build_stack(d.verdicts.assign(dataset="s", turn=1, prob_a=np.nan))
    c = keep_k_curve(st, d.truth, ks=[5, 15, 25, 40], resamples=40)
    assert ((c.ci_low <= c["mean"]) & (c["mean"] <= c.ci_high)).all()
    assert ((c.q_low <= c["mean"]) & (c["mean"] <= c.q_high)).all()
    assert (c[c.k == 25].ci_high > c[c.k == 25].ci_low).any()  # a real band, not a zero-width one


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
    b, hit_b = results_cache.cached(
        empty_store, "syn", "keep_k_curve", dict(reversed(list(params.items()))), compute
    )
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


def test_a_curve_cell_does_not_depend_on_the_other_cells(data):
    st, truth = data
    cols = [
        "category",
        "distance",
        "point",
        "mean",
        "ci_low",
        "ci_high",
        "q_low",
        "q_high",
        "n_kept",
        "n_draw",
    ]
    alone = keep_k_curve(st, truth, ks=[6], resamples=20, seed=4)
    grid = keep_k_curve(st, truth, ks=[2, 6, 12], resamples=20, seed=4)
    pd.testing.assert_frame_equal(alone[cols], grid[grid.k == 6][cols].reset_index(drop=True))
    one = mu_curve(st, truth, mus=[3.0], k=5, resamples=20, seed=4)
    many = mu_curve(st, truth, mus=[0.01, 3.0, 100.0], k=5, resamples=20, seed=4)
    pd.testing.assert_frame_equal(one[cols], many[many.mu == 3.0][cols].reset_index(drop=True))


def test_curve_at_the_table_2_keep_equals_the_trunc_cell():
    from engine.experiments.protocol_runs import run_protocols
    from engine.experiments.protocols import ProtocolParams

    d = generate(SyntheticParams(n_models=8, categories=2, prompts=6, paraphrases=4, samples=2, seed=5))
    st = build_stack(d.verdicts.assign(dataset="s", turn=1, prob_a=np.nan))
    c = keep_k_curve(st, d.truth, ks=[10, 25], resamples=30, seed=8)  # 25 → draw 20, 10 → draw 8
    for keep, draw in ((25, 20), (10, 8)):
        f = run_protocols(st, d.truth, ("trunc",), ProtocolParams(keep=keep, draw=draw, resamples=30, seed=8))
        for cat in ("cat-1", "cat-2", MACRO):
            a = c[(c.k == keep) & (c.category == cat) & (c.distance == "spearman")].iloc[0]
            b = f[(f.category == cat) & (f.distance == "spearman")].iloc[0]
            assert a["mean"] == b["mean"] and a.q_low == b.ci_low and a.q_high == b.ci_high
            assert a.half_width == pytest.approx(b.half_width, abs=1e-15)


def test_curve_at_k25_equals_the_default_trunc_cell_on_pools_smaller_than_25():
    """A category of 9 graphs: Trunc25→20 keeps 9 and draws min(20, 9) = 9; the curve at K = 25
    draws min(round(0.8·25), 9) = 9 too (not round(0.8·9) = 7), so the two are the same cell."""
    from engine.experiments.protocol_runs import run_protocols
    from engine.experiments.protocols import ProtocolParams

    d = generate(SyntheticParams(n_models=7, categories=2, prompts=3, paraphrases=2, samples=1, seed=6))
    st = build_stack(d.verdicts.assign(dataset="s", turn=1, prob_a=np.nan))
    c = keep_k_curve(st, d.truth, ks=[5, 25], resamples=12, seed=2)
    f = run_protocols(st, d.truth, ("trunc",), ProtocolParams(resamples=12, seed=2))
    for cat in ("cat-1", "cat-2", MACRO):
        for dist in ("spearman", "chebyshev"):
            a = c[(c.k == 25) & (c.category == cat) & (c.distance == dist)].iloc[0]
            b = f[(f.category == cat) & (f.distance == dist)].iloc[0]
            assert (a.n_kept, a.n_draw) == (b.n_keep, b.n_draw)
            assert a["mean"] == b["mean"] and a.q_low == b.ci_low and a.q_high == b.ci_high
    row = c[(c.k == 25) & (c.category == "cat-1")].iloc[0]
    assert (row.n_kept, row.n_draw) == (9, 9)
    assert c[(c.k == 5) & (c.category == "cat-1")].n_draw.iloc[0] == 4  # round(0.8·5)
    assert (c.bt_nonconverged == 0).all() and (f.bt_nonconverged == 0).all()


def test_curve_macro_leaves_out_categories_with_an_empty_pool():
    """pool='sampling' where a category has no sampling replicates: it has no rows, the macro row
    says over how many categories it averages and names the one left out, and equals their mean."""
    d = generate(SyntheticParams(n_models=6, categories=2, prompts=3, paraphrases=1, samples=2, seed=7))
    v = d.verdicts
    v = v[~((v.category == "cat-2") & (v.variant_kind == "sample"))]
    st = build_stack(v.assign(dataset="s", turn=1, prob_a=np.nan))
    c = keep_k_curve(st, d.truth, ks=[3, 6], pool="sampling", resamples=5, seed=1)
    assert set(c.category) == {"cat-1"}  # a single group: no macro row, and no cat-2
    assert c.note.str.contains(r"macro over 1 of 2 categories \(left out, empty pool: cat-2\)").all()
    both = keep_k_curve(build_stack(d.verdicts.assign(dataset="s", turn=1, prob_a=np.nan)), d.truth, ks=[3],
                        pool="sampling", resamples=5, seed=1)
    assert (both[both.category == MACRO].n_categories == 2).all()
    three = generate(
        SyntheticParams(n_models=6, categories=3, prompts=3, paraphrases=1, samples=2, seed=7)
    ).verdicts
    three = three[~((three.category == "cat-3") & (three.variant_kind == "sample"))]
    c3 = keep_k_curve(build_stack(three.assign(dataset="s", turn=1, prob_a=np.nan)), d.truth, ks=[3],
                      pool="sampling", resamples=5, seed=1)
    macro = c3[c3.category == MACRO]
    assert (macro.n_categories == 2).all()
    assert (
        macro.note.str.contains("macro over 2 of 3 categories").all()
        and macro.note.str.contains("cat-3").all()
    )
    for dist in ("spearman", "kendall"):
        cells = c3[(c3.distance == dist) & (c3.category != MACRO)]
        assert macro[macro.distance == dist].point.iloc[0] == pytest.approx(cells.point.mean(), abs=1e-15)


def test_curves_score_graphs_with_every_model(data):
    """Truncation and the fit use every model; the distance reads the rated models' order in that fit
    (issue 25: as compare and the leaderboard rank; before, the fit dropped the unrated model first)."""
    st, truth = data
    rated = truth.drop(truth.index[0])  # the strongest model has no rating: ranked, cycles kept, not compared
    c = keep_k_curve(st, rated, resamples=0)
    full = truncation_scores(cycle_counts(st))
    cut = truncation_scores(cycle_counts(st.restrict_models(list(rated.index))))
    models = [m for m in st.models if m in rated.index]
    differs = 0
    for k in range(1, 13):
        sel = select_keep_k(full, st.keys, k, per_category=True)
        other = select_keep_k(cut, st.keys, k, per_category=True)
        differs += not np.array_equal(sel.index, other.index)
        kept = [i for i in sel.index if st.keys.category[i] == "cat-1"]
        row = c[(c.k == k) & (c.category == "cat-1") & (c.distance == "spearman")].iloc[0]
        assert row.point == pytest.approx(direct_point(st, rated, kept, models)["spearman"], abs=1e-12)
    assert differs  # dropping the model first would have kept other graphs


def test_cache_key_covers_mapping_files_reference_and_code(shipped_db, tmp_path, monkeypatch, capsys):
    import shutil

    from engine.__main__ import main
    from engine.experiments.protocol_inputs import RESULTS_FORMAT, input_fingerprint
    from engine.ranking import reference
    from engine.store.connection import Store

    maps = tmp_path / "mappings"
    shutil.copytree(reference.MAPPING_DIR, maps)
    monkeypatch.setattr(reference, "MAPPING_DIR", maps)  # the engine reads the mappings from this copy
    db = tmp_path / "copy.duckdb"
    shutil.copy(shipped_db, db)
    with Store(db) as store:  # the session's shared shipped store may hold results of earlier tests
        store.cursor().execute("DELETE FROM results_cache")
    args = ["--db", str(db), "experiment", "baselines", "--dataset", "vicuna80", "--reference", "arena",
            "--judge", "gpt-4", "--protocols", "trunc,notrunc_boot", "--resamples", "4", "--format", "csv"]

    def run_once():
        assert main(args) == 0
        out = capsys.readouterr().out
        with Store(db) as store:
            n = store.cursor().execute("SELECT count(*) FROM results_cache").fetchone()[0]
        return out, n

    first, n1 = run_once()
    again, n2 = run_once()
    assert (n1, n2) == (1, 1) and first == again  # the second request is served from the cache
    key = input_fingerprint("vicuna80", "arena")
    assert key["results_format"] == RESULTS_FORMAT and key["reference_file"] and "code" not in key
    with Store(db) as store:  # the engine code enters the stored key in results_cache itself
        stored = store.cursor().execute("SELECT params FROM results_cache").fetchone()[0]
    assert '"_engine_code":"' in stored
    cats = maps / "vicuna80.categories.csv"
    text = cats.read_text().splitlines()
    text[1] = ",".join([text[1].split(",")[0], "full", *text[1].split(",")[2:]])  # first category → overall
    cats.write_text("\n".join(text) + "\n")
    assert input_fingerprint("vicuna80", "arena") != key
    _, n3 = run_once()
    assert n3 == 2  # an edited mapping is a new key: recomputed, not served stale
    models = maps / "vicuna80.models.csv"
    models.write_text(models.read_text() + "\n")
    _, n4 = run_once()
    assert n4 == 3
    _, n5 = run_once()
    assert n5 == 3


def test_curve_counts_nonconverged_bt_fits(monkeypatch, data):
    """The real solver capped at one Newton iteration from a cold start (the first K has no warm
    start) converges on no fit: every group row counts its 1 + R fits, the macro sums them."""
    from functools import partial

    import engine.rankers.bt as bt_mod

    st, truth = data
    ok = keep_k_curve(st, truth, ks=[6], resamples=3, seed=1)
    assert (ok.bt_nonconverged == 0).all() and not ok.note.str.contains("converge").any()
    monkeypatch.setattr(bt_mod, "fit_bt_batch_info", partial(bt_mod.fit_bt_batch_info, max_iter=1))
    c = keep_k_curve(st, truth, ks=[6], resamples=3, seed=1)
    row = c[c.distance == "spearman"].set_index("category")
    assert list(row.loc[["cat-1", "cat-2", MACRO], "bt_nonconverged"]) == [4, 4, 8]
    assert "8 of 8 Bradley-Terry fits did not converge" in row.loc[MACRO, "note"]
    assert row.loc[MACRO, "note"].startswith("macro over 2 of 2 categories")
