"""Rankers against independent computations: choix, evalica, closed forms, brute-force twins."""

from __future__ import annotations

import choix
import evalica
import numpy as np
import pandas as pd
import pytest
from scipy.optimize import check_grad, minimize

from engine.errors import LensError
from engine.graphs.stack import build_stack
from engine.rankers import RANKERS, rank
from engine.rankers.bt import fit_bt, fit_bt_batch, fit_bt_batch_info
from engine.rankers.counts import fit_bt_verdicts
from engine.rankers.davidson import davidson_negloglik, fit_davidson
from engine.rankers.elo import elo_ratings
from engine.rankers.majority import integration_graph
from engine.rankers.rank_centrality import rank_centrality as rc_fn
from tests.test_rankers_data import bt_verdicts, stack_from_wt, verdict_frame

THETA = np.array([1.2, 0.6, 0.1, -0.4, -0.5, -1.0])


@pytest.fixture(scope="module")
def syn():
    v = bt_verdicts(THETA, 40, seed=3, tie_nu=0.6)
    return v, build_stack(v)


def test_two_models_closed_form():
    # score difference = log of the (half-tie) win ratio
    W = np.array([[0.0, 7.0], [3.0, 0.0]])
    T = np.array([[0.0, 2.0], [2.0, 0.0]])
    res = fit_bt(W, T, ["a", "b"])
    assert res.scores["a"] - res.scores["b"] == pytest.approx(np.log(8.0 / 4.0), abs=1e-9)
    assert res.scores.sum() == pytest.approx(0.0, abs=1e-12)


def test_bt_matches_choix_and_evalica(syn):
    v, st = syn
    W, T = st.win_tie_matrices()
    wt = W + 0.5 * T
    ours = rank(st, "bt").scores.to_numpy()
    ref = choix.ilsr_pairwise_dense(wt, tol=1e-12, max_iter=10_000)
    np.testing.assert_allclose(ours, ref - ref.mean(), atol=1e-6)
    winners = v["winner"].map({"A": evalica.Winner.X, "B": evalica.Winner.Y, "tie": evalica.Winner.Draw})
    ev = evalica.bradley_terry(v["model_a"], v["model_b"], winners, tolerance=1e-12, limit=100_000)
    ev_log = np.log(ev.scores.reindex(list(st.models)).to_numpy())
    np.testing.assert_allclose(ours, ev_log - ev_log.mean(), atol=1e-5)


def test_newton_and_mm_agree(syn):
    _, st = syn
    a = rank(st, "bt", solver="newton")
    b = rank(st, "bt", solver="mm")
    assert a.details["converged"] and b.details["converged"]
    np.testing.assert_allclose(a.scores, b.scores, atol=1e-7)


def test_batch_equals_single_fits(syn):
    rng = np.random.default_rng(0)
    wt = rng.integers(0, 6, size=(7, 5, 5)).astype(float)
    wt[:, np.arange(5), np.arange(5)] = 0
    wt[3, 0, :] = 0  # model 0 never wins in batch 3: regularised there only
    wt[3, 1:, 0] += 1
    batch = fit_bt_batch(wt)
    for b in range(7):
        single = fit_bt(wt[b], None).scores.to_numpy()
        np.testing.assert_allclose(batch[b], single, atol=1e-8)
    info = fit_bt_batch_info(wt)
    assert info.regularised[3] and info.regularised.sum() >= 1


@pytest.mark.parametrize("perm", ["reversed", "shuffled"])
def test_invariant_to_relabelling_and_row_order(perm):
    """New names whose alphabetical order is a permutation of the old one (so a ranker that breaks
    ties by index or name would move): every ranker's scores follow the models, not the names."""
    # PGED per prompt: one judge per prompt and weights 1 make Algorithm 1's delta ties common here
    v = bt_verdicts(THETA, 40, seed=3, tie_nu=0.6)
    st = build_stack(v)
    order = (
        list(st.models)[::-1] if perm == "reversed" else list(np.random.default_rng(4).permutation(st.models))
    )
    ren = {m: f"z{k}" for k, m in enumerate(order)}  # sorted(new names) lists the models in `order`
    assert [m for m in sorted(ren, key=ren.get)] != list(st.models)
    shuffled = v.sample(frac=1.0, random_state=1).reset_index(drop=True)
    renamed = shuffled.assign(model_a=shuffled["model_a"].map(ren), model_b=shuffled["model_b"].map(ren))
    other_stack = build_stack(renamed)
    assert list(other_stack.models) == sorted(ren.values())
    back = {new: old for old, new in ren.items()}
    for name in RANKERS:
        if name == "elo":  # order-dependent by design; its order is stated (graph key order)
            continue
        a = rank(st, name).scores
        b = rank(other_stack, name).scores.rename(index=back).reindex(a.index)
        np.testing.assert_allclose(a, b, atol=1e-7, err_msg=name)
    for params in ({"mode": "global"}, {"aggregate": "kemeny"}, {"aggregate": "pairwise-majority"}):
        a = rank(st, "pged", **params).scores
        b = rank(other_stack, "pged", **params).scores.rename(index=back).reindex(a.index)
        np.testing.assert_allclose(a, b, atol=1e-7, err_msg=str(params))
    # the literal reading of Algorithm 1 (delta ties to the first name) does depend on the names here
    a = rank(st, "pged", delta_ties="name").scores
    b = rank(other_stack, "pged", delta_ties="name").scores.rename(index=back).reindex(a.index)
    assert not np.allclose(a, b)


def test_two_perfect_cycles_give_every_model_the_same_score():
    """Two prompts that are both a > b > c > a: by symmetry every model must score the same (BT: 0)."""
    rows = [(p, x, y, "A") for p in ("p1", "p2") for x, y in (("a", "b"), ("b", "c"), ("c", "a"))]
    st = build_stack(verdict_frame(rows))
    np.testing.assert_allclose(rank(st, "bt").scores, 0.0, atol=1e-12)
    for name in RANKERS:
        if name in ("elo", "kemeny"):  # Elo: sequential; Kemeny: one of 3 co-optimal orders, stated
            continue
        s = rank(st, name).scores
        assert s.max() - s.min() < 1e-9, (name, s.to_dict())
    for params in ({"mode": "global"}, {"aggregate": "pairwise-majority"}):
        s = rank(st, "pged", **params).scores
        assert s.max() - s.min() < 1e-9, params
    # the literal reading hands each cycle to the first name: a 3 + 3, b 2 + 2, c 1 + 1 points
    assert rank(st, "pged", delta_ties="name").scores.to_dict() == {"a": 6.0, "b": 4.0, "c": 2.0}
    assert rank(st, "kemeny").details["co_optimal_orders"] == 3


def test_bt_from_verdict_table_equals_stack_path(syn):
    v, st = syn
    a = fit_bt_verdicts(v).scores
    b = rank(st, "bt").scores
    np.testing.assert_allclose(a.reindex(b.index), b, atol=1e-9)
    cat = v.astype({"model_a": "category", "model_b": "category", "prompt_id": "category"})
    np.testing.assert_allclose(fit_bt_verdicts(cat).scores.reindex(b.index), b, atol=1e-9)
    strings = v.astype({"model_a": "string", "model_b": "string", "prompt_id": "string", "winner": "string"})
    np.testing.assert_allclose(fit_bt_verdicts(strings).scores.reindex(b.index), b, atol=1e-9)


def test_degenerate_never_loses_is_regularised_and_stated():
    W = np.array([[0, 3, 2], [0, 0, 2], [0, 1, 0]], dtype=float)  # model a never loses
    st = stack_from_wt(W, models=["a", "b", "c"])
    res = rank(st, "bt")
    assert "does not exist" in res.details["regularisation"]
    assert res.scores.abs().max() > 0.1 and res.ranks["a"] == 1
    # the regularised fit is the MLE of the data plus alpha virtual ties per pair
    alpha = res.details["alpha"]
    ref = choix.ilsr_pairwise_dense(W + alpha / 2 * (1 - np.eye(3)), tol=1e-12, max_iter=10_000)
    np.testing.assert_allclose(res.scores, ref - ref.mean(), atol=1e-6)
    with pytest.raises(LensError, match="does not exist"):
        rank(st, "bt", on_degenerate="raise")
    with pytest.raises(LensError, match="does not exist"):
        rank(st, "davidson", on_degenerate="raise")
    d = rank(st, "davidson")
    assert "does not exist" in d.details["regularisation"] and d.scores.abs().max() > 0.1


def test_disconnected_groups_are_regularised():
    W = np.zeros((4, 4))
    W[0, 1], W[1, 0], W[2, 3], W[3, 2] = 3, 1, 2, 2
    res = rank(stack_from_wt(W), "bt")
    assert "does not exist" in res.details["regularisation"]
    assert res.scores.iloc[0] > res.scores.iloc[1]


def test_elo_scale():
    W = np.array([[0.0, 6.0], [2.0, 0.0]])
    res = fit_bt(W, None, ["a", "b"], scale="elo")
    assert res.scores["a"] - res.scores["b"] == pytest.approx(400 * np.log10(3.0), abs=1e-7)


def test_soft_bt_uses_probabilities():
    rows = [(f"p{k}", "a", "b", "A", 0.7) for k in range(10)] + [
        (f"q{k}", "b", "c", "A", 0.6) for k in range(10)
    ]
    rows += [(f"r{k}", "c", "a", "B", 0.2) for k in range(10)]  # P(c beats a) = 0.2
    st = build_stack(verdict_frame(rows))
    res = rank(st, "bt", soft=True)
    wt = np.zeros((3, 3))
    wt[0, 1], wt[1, 0], wt[1, 2], wt[2, 1], wt[2, 0], wt[0, 2] = 7, 3, 6, 4, 2, 8
    ref = choix.ilsr_pairwise_dense(wt, tol=1e-12, max_iter=10_000)
    np.testing.assert_allclose(res.scores, ref - ref.mean(), atol=1e-6)
    with pytest.raises(LensError, match="prob_a"):
        rank(build_stack(verdict_frame([("p", "a", "b", "A")])), "bt", soft=True)


def test_davidson_two_models_closed_form():
    W = np.array([[0.0, 9.0], [4.0, 0.0]])
    T = np.array([[0.0, 6.0], [6.0, 0.0]])
    res = fit_davidson(W, T, ["a", "b"])
    assert res.scores["a"] - res.scores["b"] == pytest.approx(np.log(9 / 4), abs=1e-5)
    assert res.details["nu"] == pytest.approx(6 / np.sqrt(36), abs=1e-5)


def test_davidson_gradient_and_generic_optimum(syn):
    _, st = syn
    W, T = st.win_tie_matrices()
    x = np.append(np.random.default_rng(1).normal(size=st.n - 1), np.log(0.7))
    err = check_grad(lambda p: davidson_negloglik(p, W, T)[0], lambda p: davidson_negloglik(p, W, T)[1], x)
    assert err < 1e-4
    res = rank(st, "davidson")
    opt = minimize(lambda p: davidson_negloglik(p, W, T)[0], np.zeros(st.n), method="Nelder-Mead",
                   options={"maxiter": 40_000, "maxfev": 40_000, "xatol": 1e-9, "fatol": 1e-12})
    theta = np.append(opt.x[:-1], 0.0)
    np.testing.assert_allclose(res.scores, theta - theta.mean(), atol=2e-3)
    assert res.details["nu"] == pytest.approx(np.exp(opt.x[-1]), rel=2e-3)


def test_davidson_recovers_nu():
    v = bt_verdicts(THETA, 400, seed=11, tie_nu=0.8)
    res = rank(build_stack(v), "davidson")
    assert res.details["nu"] == pytest.approx(0.8, rel=0.1)
    np.testing.assert_allclose(res.scores, THETA - THETA.mean(), atol=0.12)


def _elo_naive(stack, k=4.0):
    r = {m: 1000.0 for m in stack.models}
    for t in range(stack.T):
        for i in range(stack.n):
            for j in range(i + 1, stack.n):
                if not stack.observed[t, i, j]:
                    continue
                a, b = stack.models[i], stack.models[j]
                s = 0.5 if stack.adj[t, i, j] == stack.adj[t, j, i] else float(stack.adj[t, i, j])
                e = 1 / (1 + 10 ** ((r[b] - r[a]) / 400))
                r[a] += k * (s - e)
                r[b] -= k * (s - e)
    return pd.Series(r)


def test_elo_matches_naive_loop(syn):
    _, st = syn
    res = rank(st, "elo", k=8.0)
    naive = _elo_naive(st, 8.0)
    np.testing.assert_allclose(res.scores, naive - naive.mean(), atol=1e-9)
    assert res.details["mean_rating"] == pytest.approx(1000.0)
    assert elo_ratings(np.array([0]), np.array([1]), np.array([1.0]), 2, k=32)[0] == pytest.approx(1016.0)


def test_winrate_copeland_scorewin_by_loops(syn):
    _, st = syn
    W, T = st.win_tie_matrices()
    n = st.n
    wr = rank(st, "winrate").scores.to_numpy()
    cop = rank(st, "copeland").scores.to_numpy()
    sw = rank(st, "scorewin").scores.to_numpy()
    for i in range(n):
        games = sum(W[i, j] + W[j, i] + T[i, j] for j in range(n))
        assert wr[i] == pytest.approx((W[i].sum() + T[i].sum() / 2) / games)
        won = sum(W[i, j] > W[j, i] for j in range(n) if j != i)
        drew = sum(W[i, j] == W[j, i] for j in range(n) if j != i)
        assert cop[i] == won + drew / 2
        assert sw[i] == won + drew


def test_rank_centrality_matches_choix():
    W = np.array([[0, 5, 3, 2], [2, 0, 4, 3], [1, 2, 0, 5], [2, 1, 1, 0]], dtype=float)
    st = stack_from_wt(W)
    ours = rc_fn(st).scores.to_numpy()
    data = [(i, j) for i in range(4) for j in range(4) for _ in range(int(W[i, j]))]
    ref = choix.rank_centrality(4, data)
    np.testing.assert_allclose(ours, ref - ref.mean(), atol=1e-6)


def test_majority_integration_graph_eq5_by_loops():
    rng = np.random.default_rng(5)
    adj = rng.random((7, 5, 5)) < 0.5
    adj = adj | adj.swapaxes(1, 2) & (rng.random((7, 5, 5)) < 0.3)  # some ties
    idx = np.arange(5)
    adj[:, idx, idx] = False
    iu = np.triu(np.ones((5, 5), bool), 1)
    adj = np.where(iu | iu.T, adj, False)
    lower_missing = ~(adj | adj.swapaxes(1, 2))  # make every pair decided: edge j->i if none
    adj = adj | (lower_missing & ~iu & ~np.eye(5, dtype=bool))
    observed = np.ones_like(adj) & ~np.eye(5, dtype=bool)
    g = integration_graph(adj, observed)
    for i in range(5):
        for j in range(i + 1, 5):
            c = sum(adj[k, i, j] for k in range(7))
            assert g[i, j] == (c > 7 / 2) and g[j, i] == (not c > 7 / 2)


def test_unknown_ranker_and_parameter_are_user_errors(syn):
    _, st = syn
    with pytest.raises(LensError, match="Unknown ranker"):
        rank(st, "nope")
    with pytest.raises(LensError, match="parameter"):
        rank(st, "winrate", solver="mm")


def test_no_ranker_returns_all_zero_scores(syn):
    _, st = syn
    for name in RANKERS:
        assert rank(st, name).scores.abs().max() > 0, name


def test_majority_symmetric_reading_by_loops(syn):
    _, st = syn
    W, T = st.win_tie_matrices()
    res = rank(st, "majority")
    for i in range(st.n):
        expect = 0.0
        for j in range(st.n):
            if j == i:
                continue
            t = W[i, j] + W[j, i] + T[i, j]
            nij = W[i, j] + T[i, j] / 2
            expect += 1.0 if nij > t / 2 else (0.5 if nij == t / 2 else 0.0)
        assert res.scores.iloc[i] == expect


def test_davidson_batch_without_ties_reduces_to_bt():
    from engine.rankers.davidson import fit_davidson_batch

    W = np.array([[0, 6, 4], [3, 0, 5], [2, 2, 0]], dtype=float)
    theta, nu, conv = fit_davidson_batch(W[None], np.zeros((1, 3, 3)))
    assert conv[0] and nu[0] < 1e-6  # at the lower bound: no ties observed
    np.testing.assert_allclose(theta[0], fit_bt(W, None).scores.to_numpy(), atol=1e-5)


def test_elo_matches_evalica_in_the_same_order(syn):
    from engine.rankers.elo import stack_outcomes

    _, st = syn
    i, j, s = stack_outcomes(st)
    win = {1.0: evalica.Winner.X, 0.0: evalica.Winner.Y, 0.5: evalica.Winner.Draw}
    ev = evalica.elo([st.models[a] for a in i], [st.models[b] for b in j], [win[x] for x in s], k=16.0)
    ours = rank(st, "elo", k=16.0)
    ref = ev.scores.reindex(list(st.models))
    np.testing.assert_allclose(ours.scores, ref - ref.mean(), atol=1e-6)


# ----------------------------------------------------------------------------- Davidson existence


def _dav_loglik_direct(theta: np.ndarray, log_nu: float, W: np.ndarray, T: np.ndarray) -> float:
    """The Davidson log-likelihood written from its probabilities (independent of the fitted code)."""
    pi = np.exp(theta)
    nu = np.exp(log_nu)
    ll = 0.0
    n = len(theta)
    for i in range(n):
        for j in range(n):
            if i == j:
                continue
            D = pi[i] + pi[j] + nu * np.sqrt(pi[i] * pi[j])
            ll += W[i, j] * np.log(pi[i] / D)
            if i < j:
                ll += T[i, j] * np.log(nu * np.sqrt(pi[i] * pi[j]) / D)
    return ll


def _direct_davidson(W: np.ndarray, T: np.ndarray) -> tuple[np.ndarray, float]:
    """Maximise the direct likelihood with scipy (BFGS, numerical gradient, last theta fixed at 0)."""
    n = W.shape[0]

    def f(x):
        return -_dav_loglik_direct(np.append(x[:-1], 0.0), x[-1], W, T)

    opt = minimize(f, np.zeros(n), method="BFGS", options={"gtol": 1e-9, "maxiter": 10_000})
    theta = np.append(opt.x[:-1], 0.0)
    return theta - theta.mean(), float(np.exp(opt.x[-1]))


def _wt(pairs, models):
    n = len(models)
    W, T = np.zeros((n, n)), np.zeros((n, n))
    for a, b, k, kind in pairs:
        i, j = models.index(a), models.index(b)
        if kind == "win":
            W[i, j] += k
        else:
            T[i, j] += k
            T[j, i] += k
    return W, T


@pytest.mark.parametrize("pairs,models", [
    ([("a", "b", 2, "win"), ("c", "b", 2, "win"), ("a", "c", 2, "tie")], ["a", "b", "c"]),  # the audit's case
    ([("a", "b", 3, "win"), ("a", "b", 1, "tie")], ["a", "b"]),  # a beats b 3 times, ties once
    ([("a", "b", 4, "tie"), ("b", "c", 2, "tie"), ("a", "c", 1, "win")], ["a", "b", "c"]),
])
def test_davidson_without_mle_is_regularised_bounded_and_equals_direct_optimum(pairs, models):
    from engine.rankers.davidson import mle_exists, separating_direction

    W, T = _wt(pairs, models)
    assert not mle_exists(W, T)
    # the separating direction really raises the likelihood without bound: strictly increasing along it
    d = separating_direction(W, T)
    lls = [_dav_loglik_direct(t * d[:-1], t * d[-1], W, T) for t in (0.0, 1.0, 2.0, 3.0, 4.0)]
    assert np.all(np.diff(lls) > 0)
    res = fit_davidson(W, T, models)
    assert "does not exist" in res.details["regularisation"] and res.details["converged"]
    assert res.scores.abs().max() < 10 and res.details["nu"] < 1000
    # the fit is the MLE of the data plus alpha/2 virtual wins each way per pair (stated)
    alpha = res.details["alpha"]
    theta, nu = _direct_davidson(W + alpha / 2 * (1 - np.eye(len(models))), T)
    np.testing.assert_allclose(res.scores.to_numpy(), theta, atol=1e-4)
    assert res.details["nu"] == pytest.approx(nu, rel=1e-4)
    with pytest.raises(LensError, match="does not exist"):
        fit_davidson(W, T, models, on_degenerate="raise")


def test_davidson_mle_can_exist_without_strongly_connected_strict_wins():
    from engine.graphs.reachability import strongly_connected_batch
    from engine.rankers.davidson import mle_exists

    W, T = _wt([("a", "b", 2, "win"), ("b", "a", 1, "win"), ("c", "d", 1, "win"), ("d", "c", 3, "win"),
                ("a", "c", 2, "tie"), ("b", "d", 1, "tie")], list("abcd"))
    assert not strongly_connected_batch((W > 0)[None])[0]  # the strict wins alone leave two groups
    assert mle_exists(W, T)  # the ties bind the groups, because the wins inside each bound nu
    res = fit_davidson(W, T, list("abcd"))
    assert res.details["regularisation"].startswith("none") and res.details["converged"]
    theta, nu = _direct_davidson(W, T)
    np.testing.assert_allclose(res.scores.to_numpy(), theta, atol=1e-4)
    assert res.details["nu"] == pytest.approx(nu, rel=1e-4)


def test_davidson_existence_check_against_the_likelihood_on_random_patterns():
    from engine.rankers.davidson import mle_exists, separating_direction

    rng = np.random.default_rng(12)
    seen = {True: 0, False: 0}
    for _ in range(40):
        n = 3
        W = rng.integers(0, 2, (n, n)) * (rng.random((n, n)) < 0.5).astype(float)
        np.fill_diagonal(W, 0)
        T = np.triu(rng.integers(0, 2, (n, n)) * (rng.random((n, n)) < 0.5), 1).astype(float)
        T = T + T.T
        if T.sum() == 0 or W.sum() == 0:
            continue
        ok = mle_exists(W, T)
        seen[ok] += 1
        if ok:  # a direct maximisation from zero ends at a finite stationary point
            theta, nu = _direct_davidson(W, T)
            assert np.abs(theta).max() < 8 and 1e-4 < nu < 1e4
        else:  # the likelihood keeps rising along the found direction
            d = separating_direction(W, T)
            if d is None:  # disconnected pairs: the likelihood is flat along a group shift
                continue
            lls = [_dav_loglik_direct(t * d[:-1], t * d[-1], W, T) for t in (0.0, 1.0, 2.0, 3.0)]
            assert np.all(np.diff(lls) > 0)
    assert seen[True] >= 3 and seen[False] >= 3


def test_davidson_convergence_is_flagged():
    from engine.rankers.davidson import divergence, fit_davidson_batch

    W = np.array([[0, 6, 4], [3, 0, 5], [2, 2, 0]], dtype=float)
    T = np.array([[0, 2, 1], [2, 0, 3], [1, 3, 0]], dtype=float)
    _, _, conv = fit_davidson_batch(W[None], T[None], max_iter=1)
    assert not conv[0]
    _, _, conv = fit_davidson_batch(W[None], T[None])
    assert conv[0]
    assert divergence(np.array([[30.0, -30.0]]), np.array([1.0]))[0]  # gap 60 > 50
    assert divergence(np.array([[0.1, -0.1]]), np.array([1.4e10]))[0]  # the audit's runaway nu
    assert divergence(np.array([[np.nan, 0.0]]), np.array([1.0]))[0]
    assert not divergence(np.array([[2.0, -2.0]]), np.array([3.0]))[0]


def test_davidson_never_wins_bootstrap_is_bounded_and_batched():
    from engine.ranking.bootstrap import bootstrap, graph_weights

    W = np.array([[0, 3, 2], [0, 0, 0], [1, 2, 0]], dtype=float)  # b never wins (nor ties)
    T = np.array([[0, 0, 1], [0, 0, 0], [1, 0, 0]], dtype=float)
    st = stack_from_wt(W, T, models=["a", "b", "c"])
    res = bootstrap(st, "davidson", B=30, seed=5)
    assert res.method.startswith("batched") and res.n_regularised == 30 and res.n_unconverged == 0
    assert np.isfinite(res.samples).all() and np.abs(res.samples).max() < 10
    ci = res.scores_ci
    assert (ci["high"] - ci["low"]).max() < 10
    w = graph_weights(st, 30, np.random.default_rng(5))
    for k in range(30):
        single = rank(st.subset(np.repeat(np.arange(st.T), w[k])), "davidson")
        np.testing.assert_allclose(res.samples[k], single.scores.to_numpy(), atol=1e-5)


# ----------------------------------------------------------------------------- ranks and frozen results


def test_ranks_use_a_tolerance_for_float_noise():
    from engine.rankers.base import ranks_from_scores, ranks_from_scores_batch

    # all-tie data: Rank Centrality's scores differ by ~1e-16 only; everyone shares rank 1
    W = np.zeros((3, 3))
    T = np.array([[0, 2, 2], [2, 0, 2], [2, 2, 0]], dtype=float)
    res = rank(stack_from_wt(W, T, models=["a", "b", "c"]), "rank-centrality")
    assert res.scores.abs().max() < 1e-12 and res.ranks.tolist() == [1, 1, 1]
    # brute force: competition rank = 1 + #scores above by more than the tolerance (no chains here)
    rng = np.random.default_rng(3)
    base = rng.normal(size=(50, 6)).round(1) * 10
    noisy = base + rng.normal(size=base.shape) * 1e-12
    expect = 1 + (base[:, None, :] > base[:, :, None]).sum(axis=2)
    np.testing.assert_array_equal(ranks_from_scores_batch(noisy), expect)
    s = pd.Series(noisy[0], index=list("abcdef"))
    assert ranks_from_scores(s).tolist() == expect[0].tolist()
    assert ranks_from_scores(pd.Series([1.0, 1.0 + 1e-7])).tolist() == [2, 1]  # a real difference stays


def test_results_are_frozen_and_picklable(syn):
    import pickle

    _, st = syn
    res = rank(st, "elspr")
    with pytest.raises(TypeError):
        res.details["model"] = "x"
    with pytest.raises(TypeError):
        res.extras["order"] = []
    again = pickle.loads(pickle.dumps(res))
    assert again.details == res.details
    np.testing.assert_array_equal(again.scores, res.scores)


def test_judge_weights_must_be_finite_non_negative_and_not_all_zero():
    import pandas as pd

    v = pd.concat([bt_verdicts(THETA[:4], 6, seed=k).assign(judge=j) for k, j in enumerate(("j1", "j2"))],
                  ignore_index=True)
    st = build_stack(v)
    for name in ("pged", "borda", "kemeny", "pairwise-majority"):
        for bad in (-5.0, float("nan"), float("inf"), "x"):
            with pytest.raises(LensError, match="weight of judge 'j1'"):
                rank(st, name, weights={"j1": bad, "j2": 1.0})
        with pytest.raises(LensError, match="Every judge of the selection has weight 0"):
            rank(st, name, weights={"j1": 0.0, "j2": 0})
        with pytest.raises(LensError, match="finite and non-negative"):
            rank(st, name, weights=np.r_[np.ones(st.T - 1), np.nan])
    # zero for one judge is allowed and equals ranking the other judge alone (a direct Borda count)
    only = rank(st, "borda", weights={"j1": 0.0, "j2": 2.0}).scores
    direct = rank(st.subset(np.flatnonzero(st.keys["judge"] == "j2")), "borda").scores * 2
    np.testing.assert_allclose(only, direct.reindex(only.index))
