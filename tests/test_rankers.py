"""Rankers against independent computations: choix, evalica, closed forms, brute-force twins."""

from __future__ import annotations

import choix
import evalica
import numpy as np
import pandas as pd
import pytest
from scipy.optimize import check_grad, minimize

from engine.errors import LensError
from engine.graphs import build_stack
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


def test_invariant_to_relabelling_and_row_order(syn):
    v, st = syn
    base = rank(st, "bt").scores
    shuffled = v.sample(frac=1.0, random_state=1).reset_index(drop=True)
    ren = {m: f"z{m}" for m in st.models}
    renamed = shuffled.assign(model_a=shuffled["model_a"].map(ren), model_b=shuffled["model_b"].map(ren))
    other = rank(build_stack(renamed), "bt").scores
    np.testing.assert_allclose(other.rename(index={v: k for k, v in ren.items()}).reindex(base.index), base, atol=1e-9)
    for name in RANKERS:
        if name == "elo":  # order-dependent by design; its order is stated (graph key order)
            continue
        a = rank(st, name).scores
        b = rank(build_stack(renamed), name).scores.rename(index={v: k for k, v in ren.items()}).reindex(a.index)
        np.testing.assert_allclose(a, b, atol=1e-7, err_msg=name)


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
    rows = [(f"p{k}", "a", "b", "A", 0.7) for k in range(10)] + [(f"q{k}", "b", "c", "A", 0.6) for k in range(10)]
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
