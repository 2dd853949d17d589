"""Cycle statistics (paper 003): networkx enumeration against brute force, rates and participation
against direct counts, and the count-distribution fits against scipy / closed forms."""

from __future__ import annotations

import itertools

import networkx as nx
import numpy as np
import pandas as pd
import pytest
from scipy import stats

from engine.diagnostics.cycle_stats import (
    count_fits,
    cycle_table,
    fit_counts,
    inconsistency_rates,
    length_distribution,
    nbinom_mle,
    participation,
    zip_mle,
)
from engine.errors import LensError
from engine.graphs.cycles import cycle_counts
from engine.graphs.stack import GraphStack


def random_graphs(rng, T, n):
    probs = rng.dirichlet(np.ones(4), size=T)
    cum = probs.cumsum(axis=1)
    outcome = (rng.random((T, n, n))[..., None] > cum[:, None, None, :]).sum(axis=-1)
    iu, ju = np.triu_indices(n, 1)
    adj = np.zeros((T, n, n), dtype=bool)
    o = outcome[:, iu, ju]
    adj[:, iu, ju] = (o == 1) | (o == 3)
    adj[:, ju, iu] = (o == 2) | (o == 3)
    return adj


def stack_of(adj, prompts=None):
    T, n = adj.shape[0], adj.shape[1]
    keys = pd.DataFrame({"dataset": "d", "judge": "j",
                         "prompt_id": prompts if prompts is not None else [str(t) for t in range(T)],
                         "variant": np.arange(T), "turn": 1, "category": "c", "variant_kind": "original",
                         "n_verdicts": 1, "n_invalid": 0})
    return GraphStack(tuple(f"m{i}" for i in range(n)), adj, adj | adj.swapaxes(1, 2), keys)


def brute(a, length, edges):
    """Every vertex subset and cyclic order (first vertex fixed); 'bad' drops all-tie cycles."""
    tie = a & a.T
    use = a & ~tie if edges == "strict" else a
    found = []
    for subset in itertools.combinations(range(a.shape[0]), length):
        for order in itertools.permutations(subset[1:]):
            seq = (subset[0], *order)
            steps = [(seq[s], seq[(s + 1) % length]) for s in range(length)]
            if all(use[i, j] for i, j in steps) and not (edges == "bad" and all(tie[i, j] for i, j in steps)):
                found.append(seq)
    return found


@pytest.mark.parametrize("edges", ["bad", "strict"])
def test_length_distribution_and_participation_against_brute_force(edges):
    rng = np.random.default_rng(7)
    n, L = 6, 5
    adj = random_graphs(rng, 40, n)
    table, part = cycle_table(stack_of(adj), length_bound=L, edges=edges)
    through = np.zeros((40, n), dtype=np.int64)
    for t in range(40):
        for k in range(3, L + 1):
            cyc = brute(adj[t], k, edges)
            assert table.loc[t, f"len_{k}"] == len(cyc)
            for c in cyc:
                through[t, list(c)] += 1
    got = np.zeros_like(through)
    got[part["graph"].to_numpy(), [int(m[1:]) for m in part["model"]]] = part["cycles"].to_numpy()
    assert np.array_equal(got, through)
    dist = length_distribution(table)
    assert dist["cycles"].sum() == table["cycles"].sum()
    pr = participation(table, part).set_index("model")
    assert pr.loc["m0", "participation_rate"] == pytest.approx(through[:, 0].sum() / table["cycles"].sum())


def test_lengths_three_and_four_match_the_engine_counts():
    adj = random_graphs(np.random.default_rng(11), 60, 7)
    stack = stack_of(adj)
    table, _ = cycle_table(stack, length_bound=4)
    cc = cycle_counts(stack).iloc[table["graph"].to_numpy()]  # graphs of < 3 models are left out
    small = int(((adj | adj.swapaxes(1, 2)).any(axis=2).sum(axis=1) < 3).sum())
    assert small > 0 and len(table) == 60 - small and table.attrs["left_out"] == small
    assert np.array_equal(table["len_3"].to_numpy(), cc["c3_bad"].to_numpy())
    assert np.array_equal(table["len_4"].to_numpy(), cc["c4_bad"].to_numpy())


def test_all_tie_triangle_has_no_bad_cycle_and_rates():
    tie = ~np.eye(3, dtype=bool)
    cyc = np.zeros((3, 3), dtype=bool)
    cyc[0, 1] = cyc[1, 2] = cyc[2, 0] = True
    lin = np.triu(np.ones((3, 3), dtype=bool), 1)
    adj = np.stack([tie, cyc, lin, lin])
    # prompts: p1 = (tie, cycle) → cyclic prompt; p2 = (linear, linear) → consistent
    table, _ = cycle_table(stack_of(adj, prompts=["p1", "p1", "p2", "p2"]))
    assert table["cycles"].tolist() == [0, 1, 0, 0]
    r = inconsistency_rates(table).iloc[0]
    assert r["graph_inconsistency_rate"] == 0.25 and r["prompt_inconsistency_rate"] == 0.5


def test_negative_binomial_mle_matches_scipy_fit():
    rng = np.random.default_rng(3)
    x = stats.nbinom.rvs(0.7, 0.08, size=600, random_state=rng)
    n, p, ll = nbinom_mle(x)
    ref = stats.fit(stats.nbinom, x, bounds={"n": (0.01, 50), "p": (0.001, 0.999)},
                    optimizer=lambda fun, bounds, **kw: __import__("scipy").optimize.differential_evolution(
                        fun, bounds, seed=0, tol=1e-10))
    ll_ref = stats.nbinom.logpmf(x, ref.params.n, ref.params.p).sum()
    assert ll >= ll_ref - 1e-6  # at least as good as scipy's global search
    assert n == pytest.approx(ref.params.n, rel=1e-2) and p == pytest.approx(ref.params.p, rel=1e-2)
    # first-order condition in n at the profile optimum p = n / (n + mean)
    h = 1e-5
    f = lambda m: stats.nbinom.logpmf(x, m, m / (m + x.mean())).sum()  # noqa: E731
    assert abs((f(n + h) - f(n - h)) / (2 * h)) < 1e-2


def test_poisson_and_zip_fits():
    rng = np.random.default_rng(4)
    x = np.where(rng.random(800) < 0.3, 0, rng.poisson(4.0, 800))
    fit = fit_counts(x)
    assert fit.poisson_mu == pytest.approx(x.mean())  # closed-form MLE
    assert fit.poisson_aic == pytest.approx(2 - 2 * stats.poisson.logpmf(x, x.mean()).sum())
    pi, mu, ll = zip_mle(x)
    # grid search on the ZIP likelihood never beats the optimiser
    gp = np.linspace(0.01, 0.6, 60)[:, None, None]
    gm = np.linspace(2.5, 5.5, 61)[None, :, None]
    lz = np.where(x == 0, np.log(gp + (1 - gp) * np.exp(-gm)), np.log1p(-gp) + stats.poisson.logpmf(x, gm))
    best = lz.sum(axis=-1).max()
    assert ll >= best - 1e-9
    assert pi == pytest.approx(0.3, abs=0.05) and mu == pytest.approx(4.0, abs=0.3)
    assert fit.zip_aic < fit.poisson_aic  # zero inflation is real here


def test_r2_is_one_minus_residual_share():
    x = np.array([0, 0, 1, 1, 1, 2, 3, 5, 8, 0])
    fit = fit_counts(x)
    ks = np.arange(9)
    ecdf = np.array([np.mean(x <= k) for k in ks])
    model = stats.nbinom.cdf(ks, fit.nb_n, fit.nb_p)
    assert fit.nb_r2 == pytest.approx(1 - ((ecdf - model) ** 2).sum() / ((ecdf - ecdf.mean()) ** 2).sum())


def test_count_fits_per_group():
    adj = random_graphs(np.random.default_rng(5), 30, 5)
    table, _ = cycle_table(stack_of(adj))
    fits = count_fits(table)
    models = (adj | adj.swapaxes(1, 2)).any(axis=2).sum(axis=1)
    assert len(fits) == 1 and fits["samples"].iloc[0] == int((models >= 3).sum())  # 2-model graphs left out
    assert fits["mean"].iloc[0] == pytest.approx(table["cycles"].mean())


def test_zero_inflated_negative_binomial_nests_the_negative_binomial():
    rng = np.random.default_rng(6)
    inflated = np.where(rng.random(700) < 0.25, 0, stats.nbinom.rvs(2.0, 0.2, size=700, random_state=rng))
    fit = fit_counts(inflated)
    assert fit.zinb_aic - 2 <= fit.nb_aic + 1e-9  # log-likelihood at least the NB's (one more parameter)
    assert fit.zinb_pi == pytest.approx(0.25, abs=0.06) and fit.zinb_n == pytest.approx(2.0, rel=0.35)
    assert fit.zinb_aic < fit.nb_aic  # real zero inflation is found
    # the reported optimum is no worse than a coarse grid over (π, n) with p profiled on a grid too
    x = inflated

    def ll(pi, n, p):
        return np.where(
            x == 0, np.log(pi + (1 - pi) * p**n), np.log1p(-pi) + stats.nbinom.logpmf(x, n, p)
        ).sum()

    best = max(ll(pi, n, p) for pi in np.linspace(0.15, 0.35, 9) for n in np.linspace(1.2, 3.0, 10)
               for p in np.linspace(0.12, 0.3, 10))
    assert 3 - fit.zinb_aic / 2 >= best - 1e-6


def test_subset_dp_counts_every_length_like_brute_force():
    from engine.diagnostics.cycle_dp import cycles_by_length

    rng = np.random.default_rng(12)
    for n in (3, 5, 7):
        adj = rng.random((15, n, n)) < 0.55
        lengths, through = cycles_by_length(adj)
        for t in range(15):
            a = adj[t] & ~np.eye(n, dtype=bool)
            want = np.zeros(n + 1, dtype=np.int64)
            thr = np.zeros(n, dtype=np.int64)
            for k in range(3, n + 1):
                cyc = brute(a, k, "all")
                want[k] = len(cyc)
                for c in cyc:
                    thr[list(c)] += 1
            assert np.array_equal(lengths[t], want) and np.array_equal(through[t], thr)
    # the complete digraph on k vertices has sum_c C(k, c) (c - 1)! cycles of length ≥ 3
    import math

    full = np.ones((1, 9, 9), dtype=bool)
    assert cycles_by_length(full)[0][0, 3:].tolist() == [
        math.comb(9, c) * math.factorial(c - 1) for c in range(3, 10)
    ]


@pytest.mark.parametrize("edges", ["bad", "strict"])
def test_default_counts_every_length_and_says_so(edges):
    rng = np.random.default_rng(13)
    n = 8
    adj = random_graphs(rng, 12, n)
    table, part = cycle_table(stack_of(adj), edges=edges)  # default: no bound
    assert (table["length_bound"] == n).all() and (table["models"] == n).all()
    assert [c for c in table.columns if c.startswith("len_")] == [f"len_{k}" for k in range(3, n + 1)]
    for t in range(12):
        tie = adj[t] & adj[t].T
        use = adj[t] & ~tie if edges == "strict" else adj[t]
        g = nx.DiGraph()
        g.add_nodes_from(range(n))
        g.add_edges_from(zip(*np.nonzero(use), strict=True))
        lens = [
            len(c)
            for c in nx.simple_cycles(g)  # networkx, unbounded
            if len(c) >= 3
            and not (edges == "bad" and all(tie[c[s], c[(s + 1) % len(c)]] for s in range(len(c))))
        ]
        for k in range(3, n + 1):
            assert table.loc[t, f"len_{k}"] == lens.count(k)
        assert table.loc[t, "cycles"] == len(lens)
    # the networkx fallback (forced with exact_max=0) agrees when given the full bound
    slow, slow_part = cycle_table(stack_of(adj), edges=edges, length_bound=n, exact_max=0)
    pd.testing.assert_frame_equal(slow.drop(columns="length_bound"), table.drop(columns="length_bound"))
    pd.testing.assert_frame_equal(slow_part, part)


def complete_stack(adj):
    """The same graphs with every pair marked compared, so each graph has all its models."""
    s = stack_of(adj)
    obs = np.ones_like(adj) & ~np.eye(adj.shape[1], dtype=bool)
    return GraphStack(s.models, adj, obs, s.keys)


def test_explicit_bound_cuts_and_marks_unknown_lengths():
    adj = random_graphs(np.random.default_rng(14), 10, 7)
    full, _ = cycle_table(complete_stack(adj))
    cut, part = cycle_table(complete_stack(adj), length_bound=4)
    assert [c for c in cut.columns if c.startswith("len_")] == [f"len_{k}" for k in range(3, 8)]
    assert cut[["len_5", "len_6", "len_7"]].isna().all().all()  # not counted: NA, not zero
    assert (cut["length_bound"] == 4).all()
    assert cut[["len_3", "len_4"]].equals(full[["len_3", "len_4"]])
    assert (cut["cycles"] == full["len_3"] + full["len_4"]).all()
    rates = inconsistency_rates(cut).iloc[0]
    assert rates["length_bound"] == 4 and not rates["all_lengths"]
    assert inconsistency_rates(full).iloc[0]["all_lengths"]
    # the fallback bound for large graphs is stated in the table (forced via exact_max)
    fb, _ = cycle_table(complete_stack(adj), exact_max=6)
    assert (fb["length_bound"] == 5).all() and fb["len_5"].equals(full["len_5"])
    assert fb["len_6"].isna().all() and fb["len_7"].isna().all()  # cut off: unknown, not zero
    dist = length_distribution(fb).set_index("length")
    assert (
        dist.loc[6, "graphs_cut"] == 10 and pd.isna(dist.loc[6, "cycles"]) and dist.loc[3, "graphs_cut"] == 0
    )
    assert dist["share"].sum() == pytest.approx(1.0)
    assert dist.loc[5, "share"] == pytest.approx(full["len_5"].sum() / fb["cycles"].sum())


def test_graphs_with_fewer_models_get_their_own_bound():
    # a 4-model graph and a 6-model graph in one stack of 6 models: each counted to its own size
    rng = np.random.default_rng(15)
    adj = random_graphs(rng, 2, 6)
    obs = adj | adj.swapaxes(1, 2)
    adj[0, 4:, :] = adj[0, :, 4:] = False
    obs[0, 4:, :] = obs[0, :, 4:] = False
    keys = pd.DataFrame(
        {
            "dataset": "d",
            "judge": ["small", "big"],
            "prompt_id": ["0", "1"],
            "variant": 0,
            "turn": 1,
            "category": "c",
            "variant_kind": "original",
            "n_verdicts": 1,
            "n_invalid": 0,
        }
    )
    table, part = cycle_table(GraphStack(tuple(f"m{i}" for i in range(6)), adj, obs, keys))
    assert table["models"].tolist() == [4, 6] and table["length_bound"].tolist() == [4, 6]
    assert table.loc[0, "len_5"] == 0 and table.loc[0, "len_6"] == 0  # impossible, so zero (not NA)
    for t in range(2):
        assert table.loc[t, "cycles"] == sum(len(brute(adj[t], k, "bad")) for k in range(3, 7))
    assert set(part.loc[part["graph"] == 0, "model"]) <= {"m0", "m1", "m2", "m3"}
    dist = length_distribution(table).set_index(["judge", "length"])
    assert (("small", 5) not in dist.index) and (("big", 6) in dist.index)


def test_r2_on_the_pmf_paper_003_reading():
    """R² against the empirical PMF (paper 003's Figure 2b): the same fits, compared point by point
    with the share of samples at each count 0..max, written out with scipy's PMFs."""
    x = np.array([0, 0, 1, 1, 1, 2, 3, 5, 8, 0])
    cdf_fit, fit = fit_counts(x), fit_counts(x, r2_on="pmf")
    assert (fit.nb_n, fit.nb_p, fit.nb_aic) == (cdf_fit.nb_n, cdf_fit.nb_p, cdf_fit.nb_aic)  # same fits
    assert (cdf_fit.r2_on, fit.r2_on) == ("cdf", "pmf")
    ks = np.arange(9)
    epmf = np.array([np.mean(x == k) for k in ks])  # 3/10, 3/10, 1/10, 1/10, 0, 1/10, 0, 0, 1/10

    def r2(model):
        return 1 - ((epmf - model) ** 2).sum() / ((epmf - epmf.mean()) ** 2).sum()

    assert fit.nb_r2 == pytest.approx(r2(stats.nbinom.pmf(ks, fit.nb_n, fit.nb_p)))
    assert fit.poisson_r2 == pytest.approx(r2(stats.poisson.pmf(ks, x.mean())))
    zip_pmf = np.where(ks == 0, fit.zip_pi, 0) + (1 - fit.zip_pi) * stats.poisson.pmf(ks, fit.zip_mu)
    assert fit.zip_r2 == pytest.approx(r2(zip_pmf))
    assert fit.nb_r2 != pytest.approx(cdf_fit.nb_r2)  # the two readings are different numbers
    with pytest.raises(LensError):
        fit_counts(x, r2_on="sf")


def test_paper_003_defaults_strict_cycles_and_pmf_r2():
    adj = random_graphs(np.random.default_rng(7), 30, 5)
    strict, _ = cycle_table(stack_of(adj), edges="strict")
    fits = count_fits(strict, r2_on="pmf")
    direct = fit_counts(strict["cycles"].to_numpy(), r2_on="pmf")  # one prompt per graph here
    assert fits["r2_on"].iloc[0] == "pmf"
    assert fits["nb_r2"].iloc[0] == pytest.approx(direct.nb_r2)
    assert fits["mean"].iloc[0] == pytest.approx(strict["cycles"].mean())


def test_cycle_fit_on_graphs_of_two_models_keeps_its_header_and_says_why_it_is_empty():
    """An arena-shaped set (one pair per prompt): no graph can hold a cycle, so no fit; the table still
    has the fit's columns (not a blank header) and a note counts the graphs left out, cached or not."""
    import dataclasses

    from engine.diagnostics import diagnose
    from engine.diagnostics.cycle_stats import CountFit

    v = pd.DataFrame({"prompt_id": [f"q{i}" for i in range(6)], "model_a": list("aabbcc"),
                      "model_b": list("bccaab"), "winner": list("ABABAB"), "dataset": "d", "judge": "j",
                      "variant": 0, "turn": 1, "order": "AB", "category": "c", "variant_kind": "original"})
    out = diagnose(v, table="cycle-fit")
    assert out.empty
    assert list(out.columns) == ["judge", *(f.name for f in dataclasses.fields(CountFit))]
    assert out.attrs["notes"] == [
        "6 of 6 graphs have fewer than 3 models and are left out of every cycle and "
        "triad statistic: no cycle or triad fits in 2 models."
    ]


@pytest.mark.parametrize("r2_on", ["cdf", "pmf"])
def test_the_nb_and_poisson_fit_alone_is_the_mle_and_the_full_fits_own(r2_on):
    """fit_nb_poisson (what the Cycles page's caption reads): the NB log-likelihood is the maximum (no
    point of a fine grid of n with p profiled, scipy's own log-pmf, beats it), the Poisson AIC and both
    R² follow their formulas, and every field equals fit_counts' field of the same name."""
    from engine.diagnostics.cycle_stats import fit_nb_poisson

    rng = np.random.default_rng(21)
    for x in (stats.nbinom.rvs(2.0, 0.3, size=300, random_state=rng), rng.poisson(4.0, size=60),
              np.r_[np.zeros(40, int), rng.poisson(6.0, size=200)],
              np.array([0, 0, 1, 0, 2, 0, 5])):
        fit = fit_nb_poisson(x, r2_on)

        # for a given n the best p is n / (n + mean): a fine grid of log n over the fit's range
        log_n = np.linspace(-12, 16, 4001)[:, None]
        n = np.exp(log_n)
        grid_best = stats.nbinom.logpmf(x[None, :], n, n / (n + x.mean())).sum(axis=1).max()
        # (an underdispersed sample's likelihood rises to the Poisson limit, flat to ~1e-7 near the bound)
        assert fit.nb_loglik >= grid_best - 1e-6
        # (rel 1e-9: at n ~ 1e7 the fit's own log-pmf and scipy's part in the 9th digit)
        assert fit.nb_loglik == pytest.approx(stats.nbinom.logpmf(x, fit.nb_n, fit.nb_p).sum(), rel=1e-9)
        mu = x.mean()
        assert fit.poisson_aic == pytest.approx(2 - 2 * stats.poisson.logpmf(x, mu).sum(), rel=1e-12)
        ks = np.arange(x.max() + 1)
        emp = (np.bincount(x, minlength=ks.size) / x.size if r2_on == "pmf"
               else np.array([(x <= k).mean() for k in ks]))
        nb = (stats.nbinom.pmf if r2_on == "pmf" else stats.nbinom.cdf)(ks, fit.nb_n, fit.nb_p)
        po = (stats.poisson.pmf if r2_on == "pmf" else stats.poisson.cdf)(ks, mu)
        for got, fitted in ((fit.nb_r2, nb), (fit.poisson_r2, po)):
            assert got == pytest.approx(1 - ((emp - fitted) ** 2).sum() / ((emp - emp.mean()) ** 2).sum())
        full = fit_counts(x, r2_on)
        assert {f: getattr(full, f) for f in vars(fit)} == vars(fit)


def test_the_cycles_page_nb_fit_runs_no_zero_inflated_fit(monkeypatch):
    """The page's NB caption and expected counts (nb_fit_frame) come from the NB fit alone: with the
    zero-inflated optimisers made to fail they are what they were, the numbers of fit_counts."""
    from engine.diagnostics import cycle_stats
    from engine.views.viz import nb_fit_frame

    x = stats.nbinom.rvs(1.5, 0.1, size=200, random_state=np.random.default_rng(22))
    frame, caption = nb_fit_frame(x)
    full = fit_counts(x)

    def refuse(*_a, **_k):
        raise AssertionError("a zero-inflated fit ran")

    monkeypatch.setattr(cycle_stats, "zip_mle", refuse)
    monkeypatch.setattr(cycle_stats, "zinb_mle", refuse)
    frame2, caption2 = nb_fit_frame(x)
    assert caption2 == caption and f"n = {full.nb_n:.3g}, p = {full.nb_p:.3g}" in caption
    assert f"AIC {full.nb_aic:.1f} vs Poisson {full.poisson_aic:.1f}" in caption
    pd.testing.assert_frame_equal(frame2, frame)
    assert np.allclose(frame["expected"], x.size * stats.nbinom.pmf(frame["k"], full.nb_n, full.nb_p))


# fit_counts' fields as 0.20.6 computed them (before fit_nb_poisson), on two samples, both R² readings
PINNED_0206 = {
    ("x1", "cdf"): {"nb_r2": 0.9896439757256313, "poisson_r2": 0.7207427122727035,
                    "zip_aic": 1959.3099042998067, "zip_r2": 0.8873666819990873,
                    "zinb_aic": 1632.3686334099054, "zinb_r2": 0.9990699197519759,
                    "zinb_n": 1.8761578956703655},
    ("x1", "pmf"): {"nb_r2": 0.8529619308187042, "poisson_r2": -0.4262584880309208,
                    "zip_r2": 0.5805472467654531, "zinb_r2": 0.9739310856960636},
    ("x2", "cdf"): {"nb_r2": 0.9709499277911152, "poisson_r2": 0.6241356167956484,
                    "zip_aic": 34.294814648312354, "zip_r2": 0.954629523211663,
                    "zinb_aic": 36.03103287867194, "zinb_r2": 0.976568251623263},
    ("x2", "pmf"): {"nb_r2": 0.9354889048493691, "poisson_r2": 0.42032554460543037,
                    "zip_r2": 0.9028195133777178, "zinb_r2": 0.9359803189825691},
}


def test_fit_counts_gives_what_it_gave_before_the_nb_fit_was_split_out():
    rng = np.random.default_rng(31)
    inflated = np.where(rng.random(300) < 0.2, 0, stats.nbinom.rvs(2.0, 0.25, size=300, random_state=rng))
    samples = {"x1": inflated, "x2": np.array([0, 0, 1, 0, 2, 0, 5, 3, 0, 1])}
    for (name, r2_on), want in PINNED_0206.items():
        fit = fit_counts(samples[name], r2_on)
        for field, value in want.items():
            assert getattr(fit, field) == pytest.approx(value, rel=1e-9, abs=1e-12), (name, r2_on, field)
