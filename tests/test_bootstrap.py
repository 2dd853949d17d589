"""Bootstrap CIs: the batched BT path equals a loop of single fits on the same resamples; the
verdict-table path has the same law; percentile intervals and seeds behave."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from engine.errors import LensError
from engine.graphs.stack import build_stack
from engine.rankers import rank
from engine.rankers.base import ranks_from_scores_batch
from engine.rankers.counts import verdict_counts
from engine.ranking.bootstrap import bootstrap, bootstrap_bt_verdicts, graph_weights, pattern_counts
from tests.test_rankers_data import bt_verdicts, verdict_frame

THETA = np.array([0.8, 0.3, 0.0, -0.4, -0.7])


@pytest.fixture(scope="module")
def stack():
    return build_stack(bt_verdicts(THETA, 30, seed=5, tie_nu=0.5))


def test_batched_prompt_bootstrap_equals_loop_of_single_fits(stack):
    res = bootstrap(stack, "bt", B=15, seed=7, unit="prompt")
    w = graph_weights(stack, 15, np.random.default_rng(7), "prompt")
    for b in range(15):
        idx = np.repeat(np.arange(stack.T), w[b])
        single = rank(stack.subset(idx), "bt").scores.to_numpy()
        np.testing.assert_allclose(res.samples[b], single, atol=1e-6)


def test_pattern_pooling_keeps_the_resampling_law():
    # one pair per prompt: resampling prompts == multinomial over (pair, outcome) cells
    v = bt_verdicts(THETA, 400, seed=1, tie_nu=0.5, pairs_per_prompt=1)
    st = build_stack(v)
    mat, mult = pattern_counts(verdict_counts(v))
    assert mult.sum() == st.T and mat.shape[0] == mult.size <= 3 * 10
    W, T = st.win_tie_matrices()
    pooled = (mult[:, None] * mat.toarray()).sum(axis=0).reshape(st.n, st.n)
    np.testing.assert_allclose(pooled, W + T / 2)
    a = bootstrap(st, "bt", B=400, seed=1)
    b = bootstrap_bt_verdicts(v, B=400, seed=2)
    np.testing.assert_allclose(a.samples.mean(0), b.samples.mean(0), atol=0.03)
    np.testing.assert_allclose(a.samples.std(0), b.samples.std(0), rtol=0.2)


def test_percentile_intervals_and_ranks(stack):
    res = bootstrap(stack, "bt", B=200, seed=3)
    ci = res.scores_ci
    for i, m in enumerate(stack.models):
        s = np.sort(res.samples[:, i])
        assert ci.loc[m, "low"] == pytest.approx(np.quantile(s, 0.025))
        assert ci.loc[m, "high"] == pytest.approx(np.quantile(s, 0.975))
    point = rank(stack, "bt").scores
    assert ((ci["low"] <= point) & (point <= ci["high"])).all()
    r = res.rank_samples
    assert r.min() >= 1 and r.max() <= stack.n
    # scores within 1e-9 (float noise, e.g. two models with mirror-image resampled records) are tied
    brute = np.array([[1 + sum(row[j] > row[i] + 1e-9 * max(1.0, abs(row[i])) for j in range(stack.n))
                       for i in range(stack.n)] for row in res.samples])
    np.testing.assert_array_equal(r, brute)
    assert (res.ranks_ci["low"] <= res.ranks_ci["high"]).all()


def test_seed_reproducible_and_other_rankers_loop(stack):
    a = bootstrap(stack, "bt", B=20, seed=11)
    b = bootstrap(stack, "bt", B=20, seed=11)
    np.testing.assert_array_equal(a.samples, b.samples)
    for name in ("winrate", "copeland", "scorewin", "borda"):
        c = bootstrap(stack, name, B=10, seed=4)
        w = graph_weights(stack, 10, np.random.default_rng(4))
        for k in range(10):
            sub = stack.subset(np.repeat(np.arange(stack.T), w[k]))
            np.testing.assert_allclose(c.samples[k], rank(sub, name).scores.to_numpy(), err_msg=name)
        assert c.method.startswith("batched")
    loop = bootstrap(stack, "elo", B=3, seed=4)  # Elo is sequential: one refit per resample
    assert loop.method == "one refit per resample"


def test_bad_requests_are_user_errors(stack):
    with pytest.raises(LensError, match="at least 1"):
        bootstrap(stack, "bt", B=0)
    with pytest.raises(LensError, match="between 0 and 1"):
        bootstrap(stack, "bt", B=5, level=1.5)
    with pytest.raises(LensError, match="unit"):
        bootstrap(stack, "bt", B=5, unit="judge")


def test_ranks_batch_twin():
    s = np.array([[0.1, 0.5, 0.5, -1.0]])
    assert ranks_from_scores_batch(s).tolist() == [[3, 1, 1, 4]]
    assert pd.Series(s[0]).rank(ascending=False, method="min").astype(int).tolist() == [3, 1, 1, 4]


def test_batched_davidson_bootstrap_equals_lbfgs_refits(stack):
    res = bootstrap(stack, "davidson", B=8, seed=2)
    assert res.method.startswith("batched")
    w = graph_weights(stack, 8, np.random.default_rng(2))
    for k in range(8):
        sub = stack.subset(np.repeat(np.arange(stack.T), w[k]))
        np.testing.assert_allclose(res.samples[k], rank(sub, "davidson").scores.to_numpy(), atol=1e-5)


def _loop(stack, name, B, seed, unit="graph", **params):
    """Single fits on the resamples the bootstrap draws (same seed, same multinomial counts)."""
    w = graph_weights(stack, B, np.random.default_rng(seed), unit)
    rows = []
    for k in range(B):
        idx = np.repeat(np.arange(stack.T), w[k])
        p = dict(params)
        if isinstance(p.get("weights"), np.ndarray):
            p["weights"] = p["weights"][idx]
        rows.append(rank(stack.subset(idx), name, **p).scores.to_numpy())
    return np.vstack(rows)


@pytest.mark.parametrize("name,params", [
    ("borda", {}), ("borda", {"normalize": True}), ("borda", {"weights": "array"}),
    ("pairwise-majority", {}), ("pairwise-majority", {"weights": "array", "normalize": True}),
    ("majority", {}), ("majority", {"ties": "edge", "exact_half": "later"}),
    ("majority", {"normalize": True}),
    ("kemeny", {}), ("kemeny", {"source": "rankings"}), ("kemeny", {"exact_max": 3}),
    ("elspr", {}), ("rank-centrality", {}), ("pged", {"mode": "global"}),
    ("copeland", {"normalize": True}), ("scorewin", {}),
    ("davidson", {"scale": "elo"}),
])
def test_batched_bootstrap_equals_a_loop_of_single_fits(stack, name, params):
    if params.get("weights") == "array":
        params = {**params, "weights": np.linspace(0.5, 1.5, stack.T)}
    res = bootstrap(stack, name, B=12, seed=9, **params)
    assert res.method.startswith("batched"), res.method
    np.testing.assert_allclose(res.samples, _loop(stack, name, 12, 9, **params), atol=1e-6, err_msg=name)


def test_bt_elo_scale_bootstrap_is_the_rescaled_log_bootstrap(stack):
    a = bootstrap(stack, "bt", B=12, seed=2, unit="prompt", scale="elo")
    b = bootstrap(stack, "bt", B=12, seed=2, unit="prompt")
    assert a.method.startswith("batched")
    np.testing.assert_allclose(a.samples, 1000 + b.samples * 400 / np.log(10), atol=1e-9)
    np.testing.assert_allclose(a.samples, _loop(stack, "bt", 12, 2, unit="prompt", scale="elo"), atol=1e-5)


def _judged(seed=0):
    theta = np.array([0.6, 0.3, 0.0, -0.2, -0.5])
    return pd.concat(
        [
            bt_verdicts(theta, 8, seed=seed + k, tie_nu=0.4, pairs_per_prompt=6).assign(judge=f"j{k}")
            for k in range(3)
        ],
        ignore_index=True,
    )


@pytest.mark.parametrize("aggregate", ["weight-score", "kemeny", "pairwise-majority"])
def test_pged_per_prompt_bootstrap_counts_a_redrawn_prompt_as_a_new_question(aggregate):
    v = _judged()
    st = build_stack(v)
    B = 10
    res = bootstrap(st, "pged", B=B, seed=6, unit="prompt", aggregate=aggregate)
    assert res.method.startswith("batched: multinomial graph weights, fixed per-question")
    ids = pd.factorize(st.keys["prompt_id"].astype(str))[0]
    rng = np.random.default_rng(6)
    n_units = ids.max() + 1
    draws = rng.multinomial(n_units, np.full(n_units, 1 / n_units), size=B)
    prompts = pd.factorize(st.keys["prompt_id"].astype(str))[1]
    for b in range(B):  # the resample written out as verdicts: copy k of a prompt is prompt "<id>#k"
        parts = [v[v["prompt_id"] == p].assign(prompt_id=f"{p}#{k}") for u, p in enumerate(prompts)
                 for k in range(draws[b, u])]
        single = rank(build_stack(pd.concat(parts, ignore_index=True)), "pged", aggregate=aggregate).scores
        np.testing.assert_allclose(res.samples[b], single.reindex(list(st.models)).fillna(0).to_numpy())


def test_pged_per_prompt_bootstrap_over_graphs_of_several_judges():
    from engine.rankers.pged import pged_per_prompt_scores, question_ids

    st = build_stack(_judged(3))
    B = 8
    res = bootstrap(st, "pged", B=B, seed=1, unit="graph")
    assert "B x Q per-question ensembles" in res.method and res.unit == "graph"
    c = graph_weights(st, B, np.random.default_rng(1)).astype(float)
    q, keys = question_ids(st)
    for b in range(B):  # one resample at a time: ensembles from the drawn graphs, questions by mean count
        m = np.array([c[b, q == k].mean() for k in range(len(keys))])
        one, _ = pged_per_prompt_scores(st, np.ones(st.T), m[None], g=c[b][None], aggregate="weight-score",
                                        prompt_ties="average")
        np.testing.assert_allclose(res.samples[b], one[0])
    # chunking over resamples does not change anything
    m_all = np.stack([[c[b, q == k].mean() for k in range(len(keys))] for b in range(B)])
    small, _ = pged_per_prompt_scores(st, np.ones(st.T), m_all, g=c, aggregate="weight-score",
                                      prompt_ties="average", chunk_cells=1)
    np.testing.assert_allclose(res.samples, small)


def test_default_unit_follows_the_ranker_and_unknown_units_are_refused(stack):
    st = build_stack(_judged(2))
    a = bootstrap(st, "pged", B=6, seed=4)
    b = bootstrap(st, "pged", B=6, seed=4, unit="prompt")
    assert a.unit == "prompt" and np.array_equal(a.samples, b.samples)
    assert bootstrap(st, "pged", B=3, seed=4, mode="global").unit == "graph"
    assert bootstrap(st, "bt", B=3, seed=4).unit == "graph"
    with pytest.raises(LensError, match="Unknown bootstrap unit"):
        bootstrap(st, "bt", B=3, unit="judge")


def test_rank_samples_follow_the_point_rank_rule():
    """Each resample's ranks equal the ranks of a single fit on that resample (a loop of fits, PGED's
    global mode on graphs); per prompt, competition ranks counted in Python: equal scores share a rank,
    never split by name."""
    v = bt_verdicts(np.zeros(5), 6, seed=2, tie_nu=1.5, pairs_per_prompt=4)  # level models: many equal scores
    st = build_stack(v)
    B = 25
    res = bootstrap(st, "pged", B=B, seed=3, mode="global")
    w = graph_weights(st, B, np.random.default_rng(3), "graph")
    for b in range(B):
        single = rank(st.subset(np.repeat(np.arange(st.T), w[b])), "pged", mode="global")
        assert res.rank_samples[b].tolist() == single.ranks.reindex(list(st.models)).tolist()
    res = bootstrap(st, "pged", B=B, seed=3)
    n_ties = 0
    for b in range(B):
        s = res.samples[b]
        assert res.rank_samples[b].tolist() == [1 + sum(x > s[i] + 1e-9 for x in s) for i in range(st.n)]
        n_ties += len(set(s)) < st.n
    assert n_ties > 0  # equal scores do occur, so sharing is exercised
    # competition ranks for the others: equal scores share the smallest rank
    res = bootstrap(st, "copeland", B=B, seed=3)
    for b in range(B):
        s = res.samples[b]
        assert res.rank_samples[b].tolist() == [1 + int((s > x).sum()) for x in s]


def test_a_resample_without_a_models_comparisons_gives_nan_and_is_counted():
    """Win rate (and normalised counts): a resample that drops every graph of a model leaves it
    undefined there; the bootstrap carries on, counts such resamples and builds that model's interval
    from the others (checked against single fits on the resamples where it is defined)."""
    rows = [(f"p{k}", "a", "b", "A" if k % 3 else "B") for k in range(12)]
    rows += [("p0", "b", "c", "tie"), ("p1", "b", "c", "A")]  # c appears in two graphs only, which differ
    st = build_stack(verdict_frame(rows))
    B = 60
    w = graph_weights(st, B, np.random.default_rng(8), "graph")
    has_c = st.observed.any(axis=2)[:, st.models.index("c")]
    undefined = (w[:, has_c].sum(axis=1) == 0)
    assert 0 < undefined.sum() < B
    for name, params in (("winrate", {}), ("copeland", {"normalize": True}), ("borda", {"normalize": True})):
        res = bootstrap(st, name, B=B, seed=8, **params)
        assert res.n_undefined == undefined.sum(), name
        ci = res.scores_ci
        c = st.models.index("c")
        assert np.isnan(res.samples[undefined, c]).all() and np.isfinite(res.samples[~undefined]).all()
        defined = [rank(st.subset(np.repeat(np.arange(st.T), w[b])).restrict_models(["a", "b", "c"]), name,
                        **params).scores["c"] for b in np.flatnonzero(~undefined)]
        assert ci.loc["c", "low"] == pytest.approx(np.quantile(defined, 0.025))
        assert ci.loc["c", "high"] == pytest.approx(np.quantile(defined, 0.975))
        rci = res.ranks_ci
        assert rci.notna().all().all() and (rci["low"] <= rci["high"]).all()
