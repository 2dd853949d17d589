"""Resampling protocols of paper 000 (Table 2, Appendix A.3) on small hand-made pools."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from engine.errors import LensError
from engine.experiments.batch_fits import copeland_majority_batch
from engine.experiments.protocol_runs import run_protocols, table2
from engine.experiments.protocols import MACRO, ProtocolParams, build_jobs
from engine.graphs.cycles import cycle_counts
from engine.graphs.stack import GraphStack
from engine.graphs.truncation import select_keep_k, truncation_scores
from engine.rankers import rank
from engine.ranking.distances import all_distances, fractional_ranks, ordinal_ranks
from engine.ranking.reference import reference_ranks


def make_stack(n=5, cats=2, prompts=3, variants=3, samples=0, seed=0, complete=True):
    """Random complete tournaments (with some ties) over n models; variant 0 = original."""
    rng = np.random.default_rng(seed)
    rows, adj = [], []
    theta = np.linspace(1.5, -1.5, n)
    for c in range(cats):
        for q in range(prompts):
            kinds = ["original"] + ["paraphrase"] * (variants - 1) + ["sample"] * samples
            for v, kind in enumerate(kinds):
                noise = rng.uniform(0.0, 1.0)
                p = 1 / (1 + np.exp(-(theta[:, None] - theta[None, :]) * (1 - noise)))
                u = rng.random((n, n))
                a = np.zeros((n, n), bool)
                for i in range(n):
                    for j in range(i + 1, n):
                        if abs(u[i, j] - 0.5) < 0.05:
                            a[i, j] = a[j, i] = True
                        elif u[i, j] < p[i, j]:
                            a[i, j] = True
                        else:
                            a[j, i] = True
                adj.append(a)
                rows.append(
                    {
                        "dataset": "d",
                        "judge": "j",
                        "prompt_id": str(c * 100 + q),
                        "variant": v,
                        "turn": 1,
                        "category": f"c{c}",
                        "variant_kind": kind,
                        "n_verdicts": 0,
                        "n_invalid": 0,
                    }
                )
    adj = np.array(adj)
    obs = np.ones_like(adj)
    obs[:, range(n), range(n)] = False
    models = tuple(f"m{i}" for i in range(n))
    return GraphStack(models, adj, obs, pd.DataFrame(rows)), pd.Series(theta, index=models)


def rows_to_index(row: np.ndarray) -> np.ndarray:
    return np.repeat(np.arange(row.size), row.astype(int))


def test_each_protocol_draws_from_its_pool():
    st, _ = make_stack(n=5, cats=2, prompts=4, variants=4, samples=2)
    p = ProtocolParams(
        keep=6, draw=4, scorewin_draw=10, random_draw=5, random_reps=3, single_draw=2, resamples=40
    )
    jobs = build_jobs(st, ("trunc", "sample", "notrunc_boot", "scorewin", "random", "single"), p, single_k=3)
    scores = truncation_scores(cycle_counts(st))
    cat = st.keys["category"].to_numpy()
    kind = st.keys["variant_kind"].to_numpy()

    def direct(pool, k):  # keep-K straight from select_keep_k on the pool's own scores and keys
        sub = st.keys.iloc[pool].reset_index(drop=True)
        return set(pool[select_keep_k(scores[pool], sub, k).index])

    for j in jobs:
        allpos = np.flatnonzero(cat == j.category)
        pos = allpos[kind[allpos] != "sample"]  # the perturbed pool
        used = set(np.flatnonzero(j.counts.sum(axis=0)))
        assert used <= set(allpos)
        if j.protocol != "sample":
            assert used <= set(pos)
        if (
            j.protocol == "trunc"
        ):  # the kept set is exactly keep-K of the perturbed pool; draws without replacement
            assert used == direct(pos, 6) and (j.counts.sum(axis=1) == 4).all() and j.counts.max() == 1
        elif j.protocol == "sample":  # keep-K of originals + sampling replicates
            pool = allpos[np.isin(kind[allpos], ["original", "sample"])]
            assert used == direct(pool, 6) and (j.counts.sum(axis=1) == 4).all() and j.counts.max() == 1
        elif j.protocol == "notrunc_boot":
            assert (j.counts.sum(axis=1) == pos.size).all() and j.counts.max() > 1
        elif j.protocol == "scorewin":
            assert (
                (j.counts.sum(axis=1) == 10).all() and j.counts.max() == 1 and j.ranker == "copeland_majority"
            )
        elif j.protocol == "random":  # subsets without replacement: every graph at most once per subset
            assert j.counts.shape[0] == 40 * 3 and (j.counts.sum(axis=1) == 5).all() and j.counts.max() == 1
            assert used == set(pos)
        else:  # single: originals only, the 3 best of them, 2 drawn
            pool = allpos[kind[allpos] == "original"]
            assert used == direct(pool, 3) and (j.counts.sum(axis=1) == 2).all() and j.counts.max() == 1


def test_copeland_batch_matches_rankers_single_fits():
    st, _ = make_stack(n=6, cats=1, prompts=10, variants=2, seed=3)
    rng = np.random.default_rng(0)
    for _ in range(20):
        idx = rng.choice(st.T, size=7, replace=False)
        sub = st.subset(idx)
        W, _ = sub.win_tie_matrices()
        seen = sub.observed.any(axis=0)
        out = copeland_majority_batch(W[None], 1.0, seen[None])[0]
        assert np.array_equal(out, rank(sub, "scorewin").scores.to_numpy())
        half = copeland_majority_batch(W[None], 0.5, seen[None])[0]
        assert np.allclose(half, rank(sub, "copeland").scores.to_numpy())


def test_ordinal_ranks_break_ties_by_model_order():
    r = ordinal_ranks(np.array([[1.0, 3.0, 3.0, 0.0], [0.0, 0.0, 0.0, 0.0]]))
    assert r.tolist() == [[3, 1, 2, 4], [1, 2, 3, 4]]


def test_ordinal_ranks_near_ties_use_a_relative_tolerance():
    s = np.array([
        [2.0, 2.0 + 1e-12, 1.0, 2.0 - 3e-12],  # round-off around 2: one tie group, by model order
        [1e6, 1e6 * (1 + 1e-10), -1e6, 0.0],  # relative: 1e-4 apart at 1e6 is still a tie
        [0.3, 0.3 + 1e-6, 0.1, 0.2],  # a real gap is an order
        [1e-12, 0.0, -1e-12, 5e-13],  # around 0 the tolerance is absolute (1e-9): all tied
    ])
    assert ordinal_ranks(s).tolist() == [[1, 2, 4, 3], [1, 2, 4, 3], [2, 1, 4, 3], [1, 2, 3, 4]]
    # rounding to 9 decimals (the old rule) splits 0.4999999999 / 0.5000000001; the tolerance does not
    assert ordinal_ranks(np.array([[0.5 - 1e-10, 0.5 + 1e-10, 0.0]])).tolist() == [[1, 2, 3]]
    # a chain of near-equal scores is one group, and the result is always a permutation
    rng = np.random.default_rng(0)
    base = rng.integers(0, 4, (500, 7)).astype(float) + rng.normal(0, 1e-11, (500, 7))
    r = ordinal_ranks(base)
    assert (np.sort(r, axis=1) == np.arange(1, 8)).all()
    clean = ordinal_ranks(np.round(base))  # the same ranks as the exact (integer) scores
    assert np.array_equal(r, clean)


def test_warm_and_cold_fits_give_the_same_ranks():
    from engine.experiments.batch_fits import bt_scores

    st, _ = make_stack(n=7, cats=1, prompts=30, variants=1, seed=12)
    rng = np.random.default_rng(1)
    w = (st.wins + 0.5 * st.ties).astype(float)
    picks = rng.random((300, st.T)) < 0.3
    wt = np.einsum("bt,tij->bij", picks.astype(float), w)
    wt[:50, 0, 1] = wt[:50, 1, 0] = 2.0  # models 0 and 1 symmetric in these rows: exactly tied
    wt[:50, 0, 2:] = wt[:50, 1, 2:]
    wt[:50, 2:, 0] = wt[:50, 2:, 1]
    cold = bt_scores(wt)
    warm = bt_scores(wt, rng.normal(0, 3, (300, 7)))
    assert np.abs(cold - warm).max() < 1e-9
    assert np.array_equal(ordinal_ranks(cold), ordinal_ranks(warm))
    assert (
        ordinal_ranks(cold[:50])[:, 0] < ordinal_ranks(cold[:50])[:, 1]
    ).all()  # the tie goes to model order


def test_permutation_distances_match_the_distances_module():
    from engine.ranking.distances import distances_batch, permutation_distances

    rng = np.random.default_rng(2)
    for n in (2, 3, 6, 11):
        ranks = np.argsort(rng.random((200, n)), axis=1) + 1
        ref = rng.permutation(n) + 1
        fast, slow = permutation_distances(ranks, ref), distances_batch(ranks, ref)
        for d in ("spearman", "kendall", "footrule", "chebyshev"):
            np.testing.assert_allclose(fast[d], slow[d], atol=1e-15)


def loop_distance(st, ref, row, ranker="bt", dist="spearman"):
    """The obvious twin: rank the drawn graphs with the rankers (MM for BT) over every model and measure
    the distance on the models ``ref`` rates."""
    sub = st.subset(rows_to_index(row))
    models = [m for m in st.models if m in ref.index]
    s = rank(sub, ranker, **({} if ranker == "scorewin" else {"solver": "mm"})).scores[models]
    r = pd.Series(fractional_ranks(s.to_numpy()[None])[0], index=s.index)
    return all_distances(r, pd.Series(reference_ranks(ref, models), index=models))[dist]


def test_protocol_distances_match_a_loop_of_single_fits():
    from engine.experiments.protocol_runs import best_single_k

    st, ref = make_stack(n=5, cats=2, prompts=4, variants=3, samples=2, seed=5)
    p = ProtocolParams(
        keep=8, draw=5, scorewin_draw=6, random_draw=4, random_reps=2, single_draw=3, resamples=6
    )
    protos = ("trunc", "sample", "notrunc_boot", "scorewin", "random", "single")
    frame = run_protocols(st, ref, protos, p)
    refs = {c: reference_ranks(ref, st.models) for c in ("c0", "c1")}
    jobs = build_jobs(st, protos, p, single_k=best_single_k(st, refs, p)[0])
    for j in jobs:
        ranker = "scorewin" if j.protocol == "scorewin" else "bt"
        per_row = [loop_distance(st, ref, row, ranker) for row in j.counts]
        loop = np.asarray(per_row).reshape(-1, j.reps).mean(axis=1)
        got = frame[
            (frame.protocol == j.protocol) & (frame.category == j.category) & (frame.distance == "spearman")
        ]
        assert got["mean"].iloc[0] == pytest.approx(loop.mean(), abs=1e-12)
        lo, hi = np.quantile(loop, [0.025, 0.975])
        assert (got["ci_low"].iloc[0], got["ci_high"].iloc[0]) == pytest.approx((lo, hi), abs=1e-12)
    macro = frame[(frame.protocol == "trunc") & (frame.category == MACRO) & (frame.distance == "spearman")]
    per_cat = frame[(frame.protocol == "trunc") & (frame.category != MACRO) & (frame.distance == "spearman")]
    assert macro["mean"].iloc[0] == pytest.approx(per_cat["mean"].mean())


def test_a_cell_does_not_depend_on_what_else_was_requested():
    st, ref = make_stack(n=5, cats=2, prompts=5, variants=3, seed=6)
    p = ProtocolParams(keep=8, draw=6, scorewin_draw=6, random_draw=4, random_reps=2, resamples=12)
    cols = ["protocol", "category", "distance", "mean", "ci_low", "ci_high", "half_width", "sd"]
    alone = run_protocols(st, ref, ("trunc",), p)
    after = run_protocols(st, ref, ("notrunc_boot", "random", "trunc"), p)
    pd.testing.assert_frame_equal(alone[cols].reset_index(drop=True),
                                  after[after.protocol == "trunc"][cols].reset_index(drop=True))
    # a category's cells are the same when the other category is not there at all
    one_cat = st.subset(np.flatnonzero(st.keys["category"].to_numpy() == "c1"))
    a = run_protocols(one_cat, ref, ("trunc", "random", "notrunc_boot"), p)
    b = run_protocols(st, ref, ("trunc", "random", "notrunc_boot"), p)
    pd.testing.assert_frame_equal(a[a.category == "c1"][cols].reset_index(drop=True),
                                  b[b.category == "c1"][cols].reset_index(drop=True))
    # a longer run extends a shorter one: the first 12 keep→draw resamples are the same draws
    longer = build_jobs(st, ("trunc",), ProtocolParams(keep=8, draw=6, resamples=30))
    shorter = build_jobs(st, ("trunc",), p)
    for x, y in zip(shorter, longer, strict=True):
        assert np.array_equal(x.counts, y.counts[:12])


def test_truncation_scores_use_every_model_not_only_the_rated_ones():
    st, ref = make_stack(n=6, cats=1, prompts=8, variants=3, seed=11)
    rated = ref.drop("m5")  # m5 has no reference rating: it is ranked out, but its cycles still count
    p = ProtocolParams(keep=6, draw=6, resamples=3)
    full = truncation_scores(cycle_counts(st))
    restricted = truncation_scores(cycle_counts(st.restrict_models(list(rated.index))))
    kept_full = np.sort(select_keep_k(full, st.keys, 6).index)
    kept_restricted = np.sort(select_keep_k(restricted, st.keys, 6).index)
    assert not np.array_equal(kept_full, kept_restricted)  # the choice matters on this stack
    row = np.zeros(st.T)
    row[kept_full] = 1
    expect = loop_distance(st, rated, row)  # every model ranked (issue 25), distances on the rated ones
    f = run_protocols(st, rated, ("trunc",), p)  # draw 6 of 6: every resample is the kept set
    got = f[(f.category == "c0") & (f.distance == "spearman")].iloc[0]
    assert got["mean"] == pytest.approx(expect, abs=1e-12) and got.degenerate
    assert "m5" not in got.note and "m5" not in f[f.category == MACRO].iloc[0].note


def test_without_paraphrases_cells_degenerate_and_say_why():
    st, ref = make_stack(n=5, cats=2, prompts=6, variants=1, seed=2)
    f = run_protocols(st, ref, ("trunc", "sample", "single"), ProtocolParams(resamples=10))
    cell = f[(f.protocol == "trunc") & (f.category == "c0") & (f.distance == "spearman")].iloc[0]
    assert cell.n_pool == 6 and cell.n_keep == 6 and cell.n_draw == 6 and cell.degenerate
    assert cell.ci_low == cell.ci_high and "pool has 6 < keep 25" in cell.note
    assert "no sampling replicates" in f[f.protocol == "sample"].iloc[0].note
    t = table2(f)
    assert list(t.columns) == ["c0", "c1", MACRO] and t.shape[0] == 3


def test_bad_parameters_and_references_are_one_sentence():
    st, ref = make_stack()
    with pytest.raises(LensError, match="resamples"):
        run_protocols(st, ref, ("trunc",), ProtocolParams(resamples=0))
    with pytest.raises(LensError, match="Unknown protocol"):
        run_protocols(st, ref, ("nope",))
    with pytest.raises(LensError, match="category 'c1'"):
        run_protocols(st, {"c0": ref}, ("trunc",))


def test_single_baseline_picks_the_best_global_k_by_brute_force():
    from engine.experiments.protocol_runs import best_single_k

    st, ref = make_stack(n=5, cats=2, prompts=5, variants=2, seed=9)
    refs = {c: reference_ranks(ref, st.models) for c in ("c0", "c1")}
    k_best, curve = best_single_k(st, refs, ProtocolParams())
    orig = np.flatnonzero(st.keys["variant"].to_numpy() == 0)
    sub = st.subset(orig)
    scores = truncation_scores(cycle_counts(sub))
    ref_r = pd.Series(reference_ranks(ref, st.models), index=st.models)
    macro = {}
    for k in range(1, 6):
        sel = select_keep_k(scores, sub.keys, k, per_category=True)
        per_cat = []
        for c in ("c0", "c1"):
            kept = [i for i in sel.index if sub.keys.category[i] == c]
            s = rank(sub.subset(kept), "bt", solver="mm").scores
            r = pd.Series(fractional_ranks(s.to_numpy()[None])[0], index=s.index)
            per_cat.append(all_distances(r, ref_r)["spearman"])
        macro[k] = np.mean(per_cat)
    assert np.allclose(curve.groupby("k")["spearman"].mean().to_numpy(), [macro[k] for k in range(1, 6)])
    assert k_best == min(macro, key=lambda k: (macro[k], k))


def test_unique_rows_groups_exactly_identical_draws():
    from engine.experiments.batch_fits import unique_rows

    rng = np.random.default_rng(4)
    base = rng.integers(0, 3, (30, 12)).astype(float)
    counts = base[rng.integers(0, 30, 200)]
    first, inverse = unique_rows(counts)
    assert np.array_equal(counts[first][inverse], counts)
    assert first.size == len({tuple(r) for r in counts})


def test_empty_cells_are_nan_and_left_out_of_the_macro():
    """c1 has sampling replicates, c0 none: Sample's c0 cell is NaN (a note names it), the macro is
    over 1 of 2 categories and equals the c1 cell, which is the same as when c1 is run alone."""
    a, ref = make_stack(n=5, cats=2, prompts=4, variants=3, samples=2, seed=4)
    keep = ~((a.keys["category"] == "c0") & (a.keys["variant_kind"] == "sample")).to_numpy()
    st = a.subset(np.flatnonzero(keep))
    p = ProtocolParams(keep=5, draw=3, resamples=30)
    f = run_protocols(st, ref, ("sample", "trunc"), p)
    s = f[f.protocol == "sample"].set_index(["category", "distance"])
    for dist in ("spearman", "kendall", "footrule", "chebyshev"):
        empty, cell, macro = s.loc[("c0", dist)], s.loc[("c1", dist)], s.loc[(MACRO, dist)]
        assert (
            np.isnan(empty["mean"])
            and np.isnan(empty.ci_low)
            and empty.degenerate
            and empty.n_categories == 0
        )
        assert "Sample5→3 / c0: empty pool (no sampling replicates)" in empty.note
        assert (
            macro.n_categories == 1
            and "macro over 1 of 2 categories (left out, empty pool: c0)" in macro.note
        )
        assert macro["mean"] == pytest.approx(cell["mean"], abs=1e-15)
        assert (macro.ci_low, macro.ci_high) == pytest.approx((cell.ci_low, cell.ci_high), abs=1e-15)
    alone = run_protocols(
        st.subset(np.flatnonzero(st.keys["category"].to_numpy() == "c1")), ref, ("sample",), p
    )
    c1 = alone[(alone.category == "c1") & (alone.distance == "spearman")].iloc[0]
    assert c1["mean"] == s.loc[("c1", "spearman")]["mean"]
    t = f[(f.protocol == "trunc") & (f.category == MACRO)]
    assert (t.n_categories == 2).all()  # trunc has both categories
    assert table2(f).loc["Sample5→3", "c0"] == "—"


def test_random_pool_parameter_label_and_draw_law():
    """Random50→20×10 by default; a category larger than random_pool gets one random pool per outer
    resample, shared by its reps: closed forms P(g in a subset) = m/P and P(g in both of a
    resample's two subsets) = (q/P)·(m/q)² with q = random_pool."""
    from engine.experiments.draws import random_pool_weights, rng_for, subset_weights
    from engine.experiments.protocols import label

    assert label("random", ProtocolParams()) == "Random50→20×10"
    assert ProtocolParams().random_pool == 50
    with pytest.raises(LensError, match="random_pool"):
        ProtocolParams(random_pool=0).validate()
    small = random_pool_weights(rng_for(1, "x"), 8, 50, 3, 5, 2)  # pool ≤ 50: plain subsets, same numbers
    np.testing.assert_array_equal(small, subset_weights(rng_for(1, "x"), 8, 3, 10))
    P, q, m, R = 10, 4, 3, 20000
    w = random_pool_weights(np.random.default_rng(5), P, q, m, R, 2)
    assert (w.sum(axis=1) == m).all() and w.max() == 1
    pair = w.reshape(R, 2, P)
    assert ((pair.max(axis=1)).sum(axis=1) <= q).all()  # both subsets inside one pool of q
    assert w.mean() == pytest.approx(m / P, abs=0.01)
    both = (pair[:, 0] * pair[:, 1]).mean()
    assert both == pytest.approx((q / P) * (m / q) ** 2, abs=0.01)  # 0.225, not (m/P)² = 0.09
    st, ref = make_stack(n=5, cats=1, prompts=4, variants=3, seed=3)  # 12 graphs
    f = run_protocols(
        st, ref, ("random",), ProtocolParams(random_pool=6, random_draw=4, random_reps=2, resamples=5)
    )
    row = f[(f.category == "c0") & (f.distance == "spearman")].iloc[0]
    assert row.label == "Random6→4×2" and row.n_pool == 12 and row.n_keep == 6 and row.n_draw == 4
    assert "a random 6 of 12 graphs per resample" in row.note


def test_nonconverged_bt_fits_are_counted_not_hidden(monkeypatch):
    """With the real solver capped at one Newton iteration every draw that differs from its pool's
    whole-pool fit (the warm start) stops unconverged: each trunc cell counts R, the macro sums
    them, ScoreWin (no BT) counts none; with the default cap there are none."""
    from functools import partial

    import engine.rankers.bt as bt_mod

    st, ref = make_stack(n=6, cats=2, prompts=4, variants=4, seed=6)  # 16 graphs per category
    p = ProtocolParams(keep=12, draw=6, scorewin_draw=8, resamples=7)
    ok = run_protocols(st, ref, ("trunc", "scorewin"), p)
    assert (ok.bt_nonconverged == 0).all() and not ok.note.str.contains("did not converge").any()
    monkeypatch.setattr(bt_mod, "fit_bt_batch_info", partial(bt_mod.fit_bt_batch_info, max_iter=1))
    capped = run_protocols(st, ref, ("trunc", "scorewin"), p)
    t = capped[(capped.protocol == "trunc") & (capped.distance == "spearman")].set_index("category")
    assert list(t.loc[["c0", "c1", MACRO], "bt_nonconverged"]) == [7, 7, 14]
    assert "7 of 7 Bradley-Terry fits did not converge" in t.loc["c0", "note"]
    assert "14 of 14 Bradley-Terry fits did not converge" in t.loc[MACRO, "note"]
    assert (capped[capped.protocol == "scorewin"].bt_nonconverged == 0).all()


def test_fractional_ranks_are_scipys_average_ranks_and_name_free():
    from scipy.stats import rankdata

    rng = np.random.default_rng(11)
    s = rng.integers(0, 4, size=(200, 7)).astype(np.float64)  # integer scores: many ties (ScoreWin-like)
    r = fractional_ranks(s)
    np.testing.assert_array_equal(r, rankdata(-s, axis=1, method="average"))
    perm = rng.permutation(7)  # reordering the models (renaming them) moves the ranks with them
    np.testing.assert_array_equal(fractional_ranks(s[:, perm]), r[:, perm])
    # near-ties within the relative tolerance form one group, as in ordinal_ranks
    assert fractional_ranks(np.array([[0.5 - 1e-10, 0.5 + 1e-10, 0.0]])).tolist() == [[1.5, 1.5, 3.0]]


def test_protocol_distances_take_tied_scores_at_their_average_rank():
    from engine.ranking.distances import distances_batch, distances_for_scores

    rng = np.random.default_rng(12)
    s = rng.integers(0, 3, size=(100, 6)).astype(np.float64)
    s[:10] = rng.permutation(6)  # some rows without a tie take the permutation fast path
    ref = np.array([2, 1, 3, 6, 5, 4])
    got, want = distances_for_scores(s, ref), distances_batch(rankdata_avg(s), ref)
    for d in want:
        np.testing.assert_allclose(got[d], want[d], atol=1e-15)
    # a reversed model order (names reversed) with the reference reversed too: the same distances
    rev = distances_for_scores(s[:, ::-1], ref[::-1])
    for d in want:
        np.testing.assert_allclose(rev[d], got[d], atol=1e-15)


def rankdata_avg(s):
    from scipy.stats import rankdata

    return rankdata(-s, axis=1, method="average")


def test_reversed_model_names_leave_vicuna80_table2_unchanged(shipped_store):
    """Issue 16: tie-breaking by model name moved ScoreWin's macro Spearman by 0.035 (gpt-4) and
    0.048 (human) when the names were reversed; with average ranks the frame is the same."""
    from engine.experiments.protocol_inputs import reference_ratings
    from engine.graphs.stack import build_stack

    for judge in ("gpt-4", "human"):
        v = shipped_store.verdicts("vicuna80", judge=judge)
        cats = sorted(v["category"].dropna().unique())
        ref = reference_ratings(shipped_store, "vicuna80", "arena", cats, False)
        names = sorted(set(v["model_a"]) | set(v["model_b"]))
        ren = {m: f"{len(names) - i:02d}{m}" for i, m in enumerate(names)}  # sort order reversed
        assert sorted(ren.values()) == [ren[m] for m in reversed(names)]
        rv = v.assign(model_a=v["model_a"].map(ren), model_b=v["model_b"].map(ren))
        rref = ({c: r.rename(index=ren) for c, r in ref.items()} if isinstance(ref, dict)
                else ref.rename(index=ren))
        a = run_protocols(build_stack(v), ref)
        b = run_protocols(build_stack(rv), rref)
        num = ["mean", "ci_low", "ci_high", "half_width", "sd"]
        pd.testing.assert_frame_equal(a[num], b[num], rtol=0, atol=1e-12)
        same = [c for c in a.columns if c not in (*num, "note")]
        pd.testing.assert_frame_equal(a[same], b[same])
        scorewin = a[(a.protocol == "scorewin") & (a.category == MACRO) & (a.distance == "spearman")]
        assert np.isfinite(scorewin["mean"].iloc[0])
