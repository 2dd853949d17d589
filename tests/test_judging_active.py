"""Active judging's pool, fit, stopping test and strategies, each checked against a second computation.

- the Fisher covariance against the inverse (pseudo-inverse) of the log-likelihood's Hessian taken by
  finite differences, and the scores against the project's BT ranker on the same counts;
- ``separated`` against a plain loop over the sorted models;
- ``uncertainty``'s first choice and a small batch against the brute-force expected information gain
  (½ log det of the target contrasts' covariance before minus after, the information matrix rebuilt and
  inverted per pair, no Woodbury update and no shortcut for a full set of contrasts);
- ``cycles``' per-edge bad-triad counts against an enumeration of the weak orders of each triple;
- ``round-robin``'s balance and ``swim``'s comparison count (ceil(log2 s) opponents per newcomer)
  against their definitions; every strategy returns only items not asked yet, at most ``batch``.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.errors import LensError
from engine.judging.active.fit import (
    Revealed,
    adjacent_overlaps,
    counts_matrix,
    fit_counts,
    fit_revealed,
    separated,
)
from engine.judging.active.pool import pool_from_verdicts
from engine.judging.active.select import STRATEGIES, edge_bad_triads, select
from engine.judging.schedule import opponents_for, swim_comparisons


def _battles(models: int, prompts: int, *, orders: bool = False, seed: int = 0, strengths=None):
    """Every pair on every prompt (both orders as model_a/model_b swapped when ``orders``), with
    winners drawn from BT strengths (ties 10%)."""
    rng = np.random.default_rng(seed)
    theta = np.linspace(1.5, -1.5, models) if strengths is None else np.asarray(strengths)
    rows = []
    for p in range(prompts):
        for i, j in itertools.combinations(range(models), 2):
            for a, b in ((i, j), (j, i)) if orders else ((i, j),):
                u = rng.random()
                pa = 1 / (1 + math.exp(-(theta[a] - theta[b])))
                w = "tie" if u < 0.1 else ("A" if rng.random() < pa else "B")
                rows.append({"prompt_id": f"p{p:03d}", "variant": 0, "turn": 1, "model_a": f"m{a:02d}",
                             "model_b": f"m{b:02d}", "winner": w, "order": "AB", "judge": "J"})
    return pd.DataFrame(rows)


def _reveal_all(pool, frame, items):
    rev = Revealed.empty(pool)
    rev.record_winners(items, frame["winner"].to_numpy()[items])
    return rev


def _loglik(theta, w):
    d = theta[:, None] - theta[None, :]
    return float((w * -np.logaddexp(0.0, -d)).sum())


def test_fisher_covariance_is_the_inverse_hessian_and_scores_are_the_bt_rankers():
    frame = _battles(5, 6, seed=1)
    pool = pool_from_verdicts(frame)
    rev = _reveal_all(pool, frame, np.arange(len(pool)))
    fit = fit_revealed(pool, rev)
    assert not fit.regularised
    w = counts_matrix(pool, rev)
    from engine.rankers.bt import fit_bt

    ref = fit_bt(w, None, pool.models).scores.to_numpy()
    np.testing.assert_allclose(fit.scores, ref, atol=1e-8)
    # Hessian of the log-likelihood at the MLE by central differences of the log-likelihood
    n, h = len(fit.scores), 1e-3
    hess = np.zeros((n, n))
    for a in range(n):
        for b in range(n):
            ea, eb = np.eye(n)[a] * h, np.eye(n)[b] * h
            t = fit.scores
            hess[a, b] = (_loglik(t + ea + eb, w) - _loglik(t + ea - eb, w) - _loglik(t - ea + eb, w)
                          + _loglik(t - ea - eb, w)) / (4 * h * h)
    np.testing.assert_allclose(fit.cov, np.linalg.pinv(-hess, rcond=1e-6, hermitian=True), atol=1e-5)
    assert np.allclose(fit.lo, fit.scores - 1.959963984540054 * np.sqrt(np.diag(fit.cov)))


def test_regularised_fit_has_finite_intervals_before_any_verdict():
    frame = _battles(4, 1)
    pool = pool_from_verdicts(frame)
    fit = fit_revealed(pool, Revealed.empty(pool))
    assert fit.regularised and np.all(np.isfinite(fit.se)) and np.all(fit.se > 0)
    assert not separated(fit)


@settings(max_examples=60, deadline=None)
@given(scores=st.lists(st.floats(-3, 3), min_size=2, max_size=7),
       se=st.lists(st.floats(0.01, 1.5), min_size=7, max_size=7), k=st.integers(1, 8))
def test_separated_matches_a_loop_over_sorted_models(scores, se, k):
    n = len(scores)
    z = 1.959963984540054
    cov = np.diag(np.array(se[:n]) ** 2)
    fit = fit_counts(tuple(f"m{i}" for i in range(n)), np.ones((n, n)) - np.eye(n))
    fit = type(fit)(fit.models, np.array(scores), cov, 0.95, z, 0.0, False)
    ranked = sorted(range(n), key=lambda m: (-scores[m], m))
    want = all(scores[ranked[r]] - z * se[ranked[r]] > scores[ranked[r + 1]] + z * se[ranked[r + 1]]
               for r in range(min(k, n - 1)))
    assert separated(fit, k) == want
    assert separated(fit) == all(scores[ranked[r]] - z * se[ranked[r]] > scores[ranked[r + 1]] + z *
                                 se[ranked[r + 1]] for r in range(n - 1))
    assert len(adjacent_overlaps(fit, k)) == min(k, n - 1)


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), batch=st.integers(1, 40), asked=st.floats(0, 1),
       strategy=st.sampled_from(STRATEGIES))
def test_every_strategy_returns_only_unasked_items_at_most_batch(seed, batch, asked, strategy):
    frame = _battles(5, 3, orders=True, seed=seed)
    pool = pool_from_verdicts(frame)
    rng = np.random.default_rng(seed)
    items = np.flatnonzero(rng.random(len(pool)) < asked)
    rev = _reveal_all(pool, frame, items)
    got = select(strategy, pool, rev, batch, rng)
    left = len(pool) - len(items)
    if strategy == "swim" and left:
        # one comparison per batch: every unasked item of one pair, up to batch; once every model has
        # joined, round-robin's full batch
        avail_pairs = pool.pair_id[np.flatnonzero(~rev.asked)]
        pairs = set(pool.pair_id[got].tolist())
        rest_of_one_pair = len(pairs) == 1 and len(got) == min(batch, int(np.sum(avail_pairs == pairs.pop())))
        assert rest_of_one_pair or len(got) == min(batch, left), (len(got), batch, left)
    elif strategy == "swim":  # nothing left to ask
        assert len(got) == 0
    else:
        assert len(got) == min(batch, left)
    assert len(set(got.tolist())) == len(got)
    assert not rev.asked[got].any()


def test_unknown_strategy_and_empty_batch_are_one_sentence():
    frame = _battles(3, 1)
    pool = pool_from_verdicts(frame)
    with pytest.raises(LensError, match="Unknown strategy 'best'; choose one of random"):
        select("best", pool, Revealed.empty(pool), 2, np.random.default_rng(0))
    with pytest.raises(LensError, match="at least 1 call"):
        select("random", pool, Revealed.empty(pool), 0, np.random.default_rng(0))


def test_round_robin_keeps_every_pair_within_one_item_of_the_others():
    frame = _battles(6, 4, orders=True)
    pool = pool_from_verdicts(frame)
    rev = Revealed.empty(pool)
    rng = np.random.default_rng(0)
    n_pairs = 15
    for step in range(1, 9):
        got = select("round-robin", pool, rev, 7, rng)
        rev.record_winners(got, frame["winner"].to_numpy()[got])
        per_pair = np.bincount(pool.pair_id[rev.asked], minlength=n_pairs)
        assert per_pair.max() - per_pair.min() <= 1, step
        assert per_pair.sum() == 7 * step


def _adjacent_contrasts(fit, top_k):
    """The columns e_{rank r} - e_{rank r+1}, r = 1 … min(K, M-1), built by a loop."""
    n = len(fit.scores)
    order = sorted(range(n), key=lambda x: (-fit.scores[x], x))
    cols = []
    for r in range(min(n if top_k is None else top_k, n - 1)):
        t = np.zeros(n)
        t[order[r]], t[order[r + 1]] = 1.0, -1.0
        cols.append(t)
    return np.array(cols).T


def _brute_gain(cov, info, scores, t, i, j):
    """½ log det(T'ΣT) − ½ log det(T'Σ₊T) after one more verdict on (i, j), with the information matrix
    rebuilt and inverted (no Sherman–Morrison, no shortcut for a full set of contrasts)."""
    n = len(scores)
    ones = np.full((n, n), 1.0 / n)
    p = 1 / (1 + math.exp(-(scores[i] - scores[j])))
    u = np.zeros(n)
    u[i], u[j] = 1.0, -1.0
    new = np.linalg.inv(info + p * (1 - p) * np.outer(u, u) + ones) - ones
    before = np.linalg.slogdet(t.T @ cov @ t)[1]
    after = np.linalg.slogdet(t.T @ new @ t)[1]
    return 0.5 * (before - after), p * (1 - p) * np.outer(u, u)


def _information(fit):
    """The Fisher information L back from the covariance."""
    n = len(fit.scores)
    ones = np.full((n, n), 1.0 / n)
    return np.linalg.inv(fit.cov + ones) - ones


def _uneven_reveal():
    # the last model is far below the others and seldom seen; the others are close: the pairs differ in
    # both p(1 - p) and in how well their difference is known
    frame = _battles(5, 40, seed=0, strengths=[0.5, 0.4, -0.3, -0.4, -6.0])
    pool = pool_from_verdicts(frame)
    rng = np.random.default_rng(2)
    last = (pool.a == 4) | (pool.b == 4)
    rev = _reveal_all(pool, frame, np.flatnonzero(rng.random(len(pool)) < np.where(last, 0.15, 0.5)))
    return frame, pool, rev


@pytest.mark.parametrize("top_k", [None, 1, 2])
def test_uncertainty_first_choice_is_the_brute_force_best_information_gain(top_k):
    frame, pool, rev = _uneven_reveal()
    fit = fit_revealed(pool, rev)
    t = _adjacent_contrasts(fit, top_k)
    info = _information(fit)
    got = select("uncertainty", pool, rev, 1, np.random.default_rng(0), top_k=top_k, fit=fit)
    gains = {}
    for pid in np.unique(pool.pair_id[~rev.asked]):
        i, j = divmod(int(pool.pair_values[pid]), pool.n_models)
        gains[pid] = _brute_gain(fit.cov, info, fit.scores, t, i, j)[0]
    best = max(gains.values())
    assert gains[int(pool.pair_id[got[0]])] == pytest.approx(best, rel=1e-6)
    # the criterion separates the pairs: the chosen one is strictly better than the median pair
    assert best > np.median(list(gains.values())) * 1.05


def test_uncertainty_aims_at_the_top_k_it_is_given():
    """With K = 1 the gain counts only the leader's difference to the second, so the choice differs from
    the gain about every score (the projection matters; a bug ignoring K picks the same pair)."""
    frame, pool, rev = _uneven_reveal()
    fit = fit_revealed(pool, rev)
    picks = {k: int(pool.pair_id[select("uncertainty", pool, rev, 1, np.random.default_rng(0), top_k=k,
                                        fit=fit)[0]]) for k in (None, 1)}
    assert picks[None] != picks[1]


def _weak_order_exists(o_ab, o_bc, o_ac):
    """Outcomes +1 (first wins), 0 tie, -1 (second wins) of a triple: some levels explain all three."""
    sign = lambda x: (x > 0) - (x < 0)  # noqa: E731
    for la, lb, lc in itertools.product(range(3), repeat=3):
        if (sign(la - lb), sign(lb - lc), sign(la - lc)) == (o_ab, o_bc, o_ac):
            return True
    return False


def test_edge_bad_triads_match_an_enumeration_of_weak_orders():
    frame = _battles(6, 5, orders=True, seed=11, strengths=[0.1, 0.0, 0.05, -0.1, 0.0, 0.02])
    pool = pool_from_verdicts(frame)
    rng = np.random.default_rng(3)
    items = np.flatnonzero(rng.random(len(pool)) < 0.7)
    rev = _reveal_all(pool, frame, items)
    insts, bad = edge_bad_triads(pool, rev)
    # outcomes per prompt and ordered pair (lo, hi) by plurality, computed from the frame directly
    seen = frame.iloc[items]
    outcome = {}
    for (p, lo, hi), g in seen.assign(
        lo=np.minimum(pool.a[items], pool.b[items]), hi=np.maximum(pool.a[items], pool.b[items]),
        pr=pool.prompt[items]).groupby(["pr", "lo", "hi"]):
        lo_name = pool.models[lo]
        lo_w = ((g["winner"] == "A") & (g["model_a"] == lo_name)).sum() + (
            (g["winner"] == "B") & (g["model_b"] == lo_name)).sum()
        ties = (g["winner"] == "tie").sum()
        hi_w = len(g) - lo_w - ties
        top = max(lo_w, hi_w, ties)
        winners = [x for x, c in (("lo", lo_w), ("hi", hi_w), ("tie", ties)) if c == top]
        outcome[(p, lo, hi)] = {"lo": 1, "hi": -1}.get(winners[0], 0) if len(winners) == 1 else 0
    m = pool.n_models
    want = {}
    for (p, lo, hi) in outcome:
        count = 0
        for c in range(m):
            if c in (lo, hi):
                continue
            x, y, z = sorted((lo, hi, c))
            keys = [(p, x, y), (p, y, z), (p, x, z)]
            if all(k in outcome for k in keys) and not _weak_order_exists(*(outcome[k] for k in keys)):
                count += 1
        want[p * m * m + lo * m + hi] = count
    assert dict(zip(insts.tolist(), bad.tolist(), strict=True)) == want
    assert sum(want.values()) > 0  # the data holds bad triads, so the comparison is not vacuous


def test_cycles_rejudges_the_edge_in_the_most_bad_triads_first():
    one = _battles(6, 5, orders=True, seed=11, strengths=[0.1, 0.0, 0.05, -0.1, 0.0, 0.02])
    frame = pd.concat([one, one.assign(judge="K")], ignore_index=True)  # 4 items per edge
    pool = pool_from_verdicts(frame)
    first_order = np.flatnonzero((frame["model_a"] < frame["model_b"]) & (frame["judge"] == "J"))
    rev = _reveal_all(pool, frame, first_order)
    insts, bad = edge_bad_triads(pool, rev)
    top3 = np.sort(bad)[::-1][:3]
    got = select("cycles", pool, rev, 3, np.random.default_rng(0))
    chosen = np.sort([bad[np.searchsorted(insts, pool.instance[g])] for g in got])[::-1]
    assert top3[0] > 0 and list(chosen) == list(top3)
    # a batch as large as the edges in a bad triad re-judges each of them once (3 items wait per edge)
    in_bad = int((bad > 0).sum())
    got = select("cycles", pool, rev, in_bad, np.random.default_rng(0))
    assert set(pool.instance[got].tolist()) == set(insts[bad > 0].tolist())


def test_swim_meets_log2_opponents_per_newcomer_then_goes_round_robin():
    m = 7
    frame = _battles(m, 2, seed=4)
    pool = pool_from_verdicts(frame)
    rev = Revealed.empty(pool)
    rng = np.random.default_rng(9)
    pairs_in_order = []
    while True:
        got = select("swim", pool, rev, 100, rng, fit=fit_revealed(pool, rev))
        if "swim" in rev.memory and rev.memory["swim"]["next"] >= m:
            break
        assert len(set(pool.pair_id[got].tolist())) == 1  # one comparison per batch
        pairs_in_order.append(int(pool.pair_id[got[0]]))
        rev.record_winners(got, frame["winner"].to_numpy()[got])
    distinct = list(dict.fromkeys(pairs_in_order))
    assert len(distinct) == swim_comparisons(m)
    join = rev.memory["swim"]["join"]
    for s in range(1, m):
        newcomer = join[s]
        met = [p for p in distinct if newcomer in divmod(int(pool.pair_values[p]), m)
               and (set(divmod(int(pool.pair_values[p]), m)) - {newcomer}) <= set(join[:s])]
        assert len(met) == opponents_for(s)
    # every comparison asked every prompt of its pair
    assert all((rev.asked[pool.pair_id == p]).all() for p in distinct)


def test_uncertainty_batch_is_the_greedy_of_full_inversions():
    """Each of a small batch's steps (one item each, batch <= STEPS) picks the pair of largest gain given
    the information the earlier steps will add: the Woodbury updates agree with rebuilding and inverting
    the information per step."""
    frame = _battles(6, 6, seed=0)
    pool = pool_from_verdicts(frame)
    rev = _reveal_all(pool, frame, np.flatnonzero(np.random.default_rng(0).random(len(pool)) < 0.4))
    fit = fit_revealed(pool, rev)
    got = select("uncertainty", pool, rev, 8, np.random.default_rng(0), fit=fit)
    n = pool.n_models
    ones = np.full((n, n), 1.0 / n)
    info = _information(fit)
    t = _adjacent_contrasts(fit, None)
    want = []
    for _ in range(8):
        cov = np.linalg.inv(info + ones) - ones
        best, best_value, best_info = None, -1.0, None
        for pid in np.unique(pool.pair_id[~rev.asked]):
            i, j = divmod(int(pool.pair_values[pid]), n)
            value, added = _brute_gain(cov, info, fit.scores, t, i, j)
            if value > best_value:
                best, best_value, best_info = int(pid), value, added
        want.append(best)
        info = info + best_info
    assert sorted(pool.pair_id[got].tolist()) == sorted(want)
    assert max(np.bincount(want)) > 1 and len(set(want)) > 2  # the updates matter, and a pair can repeat
