"""Resampling protocols of paper 000 (Table 2, Appendix A.3) on small hand-made pools."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from engine.cycles import cycle_counts
from engine.distances import all_distances
from engine.errors import LensError
from engine.graphs import GraphStack
from engine.rankers import rank
from engine.resampling import (
    MACRO,
    ProtocolParams,
    build_jobs,
    copeland_majority_batch,
    draw_counts,
    ordinal_ranks,
    reference_ranks,
    run_protocols,
    table2,
)
from engine.truncation import select_keep_k, truncation_scores


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
                rows.append({"dataset": "d", "judge": "j", "prompt_id": str(c * 100 + q), "variant": v, "turn": 1,
                             "category": f"c{c}", "variant_kind": kind, "n_verdicts": 0, "n_invalid": 0})
    adj = np.array(adj)
    obs = np.ones_like(adj)
    obs[:, range(n), range(n)] = False
    models = tuple(f"m{i}" for i in range(n))
    return GraphStack(models, adj, obs, pd.DataFrame(rows)), pd.Series(theta, index=models)


def rows_to_index(row: np.ndarray) -> np.ndarray:
    return np.repeat(np.arange(row.size), row.astype(int))


def test_draw_counts_rules():
    rng = np.random.default_rng(1)
    pool = np.array([2, 5, 7, 9, 11])
    c = draw_counts(rng, pool, 3, 200, False, 12)
    assert (c.sum(axis=1) == 3).all() and c.max() == 1
    assert set(np.flatnonzero(c.sum(axis=0))) <= set(pool)
    c = draw_counts(rng, pool, 9, 50, False, 12)  # more than the pool: whole pool each time
    assert (c[:, pool] == 1).all() and c.sum() == 50 * 5
    c = draw_counts(rng, pool, 5, 400, True, 12)
    assert (c.sum(axis=1) == 5).all() and c.max() > 1  # repeats happen with replacement
    assert set(np.flatnonzero(c.sum(axis=0))) == set(pool)
    # each pool member equally likely: mean multiplicity 1 (with replacement, m = |pool|)
    assert np.allclose(c[:, pool].mean(axis=0), 1.0, atol=0.2)


def test_each_protocol_draws_from_its_pool():
    st, _ = make_stack(n=5, cats=2, prompts=4, variants=4, samples=2)
    p = ProtocolParams(keep=6, draw=4, scorewin_draw=10, random_draw=5, random_reps=3, single_draw=2, resamples=20)
    jobs = build_jobs(st, ("trunc", "sample", "notrunc_boot", "scorewin", "random", "single"), p, single_k=3)
    scores = truncation_scores(cycle_counts(st))
    cat = st.keys["category"].to_numpy()
    kind = st.keys["variant_kind"].to_numpy()
    for j in jobs:
        allpos = np.flatnonzero(cat == j.category)
        pos = allpos[kind[allpos] != "sample"]  # the perturbed pool
        used = set(np.flatnonzero(j.counts.sum(axis=0)))
        assert used <= set(allpos)
        if j.protocol != "sample":
            assert used <= set(pos)
        if j.protocol == "trunc":
            sub = st.keys.iloc[pos].reset_index(drop=True)
            direct = set(pos[select_keep_k(scores[pos], sub, 6).index])
            assert used <= direct and (j.counts.sum(axis=1) == 4).all() and j.counts.max() == 1
        elif j.protocol == "sample":
            assert all(kind[u] in ("original", "sample") for u in used)
            assert (j.counts.sum(axis=1) == 4).all() and j.counts.max() == 1
        elif j.protocol == "notrunc_boot":
            assert (j.counts.sum(axis=1) == pos.size).all() and j.counts.max() > 1
        elif j.protocol == "scorewin":
            assert (j.counts.sum(axis=1) == 10).all() and j.counts.max() == 1 and j.ranker == "copeland_majority"
        elif j.protocol == "random":
            assert j.counts.shape[0] == 20 * 3 and (j.counts.sum(axis=1) == 5).all()
        else:  # single: originals only, the 3 best of them, 2 drawn
            assert all(kind[u] == "original" for u in used) and len(used) <= 3
            assert (j.counts.sum(axis=1) == 2).all()


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


def test_protocol_distances_match_a_loop_of_single_fits():
    st, ref = make_stack(n=5, cats=2, prompts=4, variants=3, seed=5)
    p = ProtocolParams(keep=8, draw=5, scorewin_draw=6, random_draw=4, random_reps=2, single_draw=3, resamples=6)
    protos = ("trunc", "notrunc_boot", "scorewin", "random")
    frame = run_protocols(st, ref, protos, p)
    jobs = build_jobs(st, protos, p)
    for j in jobs:
        per_row = []
        for row in j.counts:
            sub = st.subset(rows_to_index(row))
            ranker = "scorewin" if j.protocol == "scorewin" else "bt"
            kw = {} if ranker == "scorewin" else {"solver": "mm"}
            s = rank(sub, ranker, **kw).scores
            r = pd.Series(ordinal_ranks(s.to_numpy()[None])[0], index=s.index)
            ref_r = pd.Series(reference_ranks(ref, st.models), index=st.models)
            per_row.append(all_distances(r, ref_r)["spearman"])
        loop = np.asarray(per_row).reshape(-1, j.reps).mean(axis=1)
        got = frame[(frame.protocol == j.protocol) & (frame.category == j.category) & (frame.distance == "spearman")]
        assert got["mean"].iloc[0] == pytest.approx(loop.mean(), abs=1e-12)
    macro = frame[(frame.protocol == "trunc") & (frame.category == MACRO) & (frame.distance == "spearman")]
    per_cat = frame[(frame.protocol == "trunc") & (frame.category != MACRO) & (frame.distance == "spearman")]
    assert macro["mean"].iloc[0] == pytest.approx(per_cat["mean"].mean())


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
    from engine.resampling import best_single_k

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
            r = pd.Series(ordinal_ranks(s.to_numpy()[None])[0], index=s.index)
            per_cat.append(all_distances(r, ref_r)["spearman"])
        macro[k] = np.mean(per_cat)
    assert np.allclose(curve.groupby("k")["spearman"].mean().to_numpy(), [macro[k] for k in range(1, 6)])
    assert k_best == min(macro, key=lambda k: (macro[k], k))


def test_unique_rows_groups_exactly_identical_draws():
    from engine.resampling import unique_rows

    rng = np.random.default_rng(4)
    base = rng.integers(0, 3, (30, 12)).astype(float)
    counts = base[rng.integers(0, 30, 200)]
    first, inverse = unique_rows(counts)
    assert np.array_equal(counts[first][inverse], counts)
    assert first.size == len({tuple(r) for r in counts})
