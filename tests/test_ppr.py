"""Prediction-powered ranking (engine.ranking.ppr*, leaderboard --method ppr): estimators against dense
matrix formulas and closed forms, rank-sets against their definition, coverage on generated data with a
known truth, the store matching against a brute-force matching, and the CLI's bad inputs."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.ranking.ppr import Battles, ppr_estimate, ppr_weight, rank_sets, win_rate_estimate
from tests.conftest import run_engine


def random_battles(rng: np.random.Generator, k: int, n: int, tie: float = 0.2) -> Battles:
    """n battles of random distinct pairs with random outcomes (a tie with probability ``tie``)."""
    a = rng.integers(0, k, n)
    b = (a + rng.integers(1, k, n)) % k
    u = rng.random(n)
    win_a = (u < (1 - tie) / 2).astype(float)
    win_b = ((u >= (1 - tie) / 2) & (u < 1 - tie)).astype(float)
    return Battles(a, b, win_a, win_b)


def flipped(bt: Battles, flip: np.ndarray) -> Battles:
    """The battles with the verdicts swapped where ``flip``: a proxy that disagrees there."""
    return bt.with_wins(np.where(flip, bt.win_b, bt.win_a), np.where(flip, bt.win_a, bt.win_b))


def dense(k: int, bt: Battles) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The k x n one-hot matrices of model_a and model_b and the per-model means, by loops: the paper's
    matrix form, written out, as a second path."""
    n = len(bt)
    ma, mb = np.zeros((k, n)), np.zeros((k, n))
    for j in range(n):
        ma[bt.model_a[j], j] = 1
        mb[bt.model_b[j], j] = 1
    means = (ma @ bt.win_a + mb @ bt.win_b) / (ma.sum(1) + mb.sum(1))
    return ma, mb, means


def dense_residuals(k: int, bt: Battles, means: np.ndarray) -> np.ndarray:
    ma, mb, _ = dense(k, bt)
    return ma * (bt.win_a - ma.T @ means)[None, :] + mb * (bt.win_b - mb.T @ means)[None, :]


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), k=st.integers(2, 6), n=st.integers(12, 60), big=st.integers(12, 80))
def test_estimates_equal_the_dense_matrix_formulas(seed, k, n, big):
    """Win rates, R R^T / n^2, lambda and the PPR estimate and covariance by bincount equal the same
    numbers from explicit k x n matrices (kills: a residual around the wrong mean, a missing cross term,
    dividing by each model's count instead of n, lambda's 1 + n / N factor left out)."""
    rng = np.random.default_rng(seed)
    human, big_set = random_battles(rng, k, n), random_battles(rng, k, big)
    if min(np.bincount(np.r_[human.model_a, human.model_b], minlength=k).min(),
           np.bincount(np.r_[big_set.model_a, big_set.model_b], minlength=k).min()) == 0:
        return  # a model in no battle has no estimate; the reader refuses such data
    proxy = flipped(human, rng.random(n) < 0.3)

    one = win_rate_estimate(k, human)
    _, _, means = dense(k, human)
    r = dense_residuals(k, human, means)
    assert np.allclose(one.theta, means, atol=1e-13)
    assert np.allclose(one.cov, r @ r.T / n**2, atol=1e-13)

    _, _, mh = dense(k, human)
    _, _, mp = dense(k, proxy)
    _, _, mbig = dense(k, big_set)
    rbig = dense_residuals(k, big_set, mbig)
    cross = np.trace(dense_residuals(k, human, mh) @ dense_residuals(k, proxy, mp).T) / n
    lam = min(max(cross / ((1 + n / big) * np.trace(rbig @ rbig.T / big)), 0.0), 1.0)
    assert ppr_weight(k, human, proxy, big_set) == pytest.approx(lam, abs=1e-12)

    est = ppr_estimate(k, human, proxy, big_set)
    rect = human.with_wins(lam * proxy.win_a - human.win_a, lam * proxy.win_b - human.win_b)
    _, _, mrect = dense(k, rect)
    rrect = dense_residuals(k, rect, mrect)
    assert np.allclose(est.theta, lam * mbig - mrect, atol=1e-12)
    assert np.allclose(est.cov, lam**2 * rbig @ rbig.T / big**2 + rrect @ rrect.T / n**2, atol=1e-12)

    # per-model: entry (i, j) over the two models' battle counts in the set
    cb, cr = dense(k, big_set)[0:2], dense(k, rect)[0:2]
    count_big, count_rect = cb[0].sum(1) + cb[1].sum(1), cr[0].sum(1) + cr[1].sum(1)
    wide = ppr_estimate(k, human, proxy, big_set, variance="per-model")
    assert np.allclose(wide.theta, est.theta, atol=1e-15)
    assert np.allclose(wide.cov, lam**2 * rbig @ rbig.T / np.outer(count_big, count_big)
                       + rrect @ rrect.T / np.outer(count_rect, count_rect), atol=1e-12)


def test_two_models_closed_form():
    """k = 2, n battles, a wins w and ties t: the win rates are w / n and (n - w - t) / n and each variance
    is p (1 - p) / n (kills: a tie counted as half a win, the covariance over n instead of n^2)."""
    n, w, t = 40, 22, 6
    win_a = np.r_[np.ones(w), np.zeros(n - w)]
    win_b = np.r_[np.zeros(w + t), np.ones(n - w - t)]
    est = win_rate_estimate(2, Battles(np.zeros(n, int), np.ones(n, int), win_a, win_b))
    p, q = w / n, (n - w - t) / n
    assert est.theta == pytest.approx([p, q], abs=1e-15)
    assert est.cov[0, 0] == pytest.approx(p * (1 - p) / n, abs=1e-15)
    assert est.cov[1, 1] == pytest.approx(q * (1 - q) / n, abs=1e-15)
    assert est.cov[0, 1] == pytest.approx(-(p * q) / n, abs=1e-15)  # sum of (1_a - p)(1_b - q) over n^2


def test_ppr_reduces_to_its_two_ends():
    """lambda = 0 is the human-only estimate; lambda = 1 with a proxy that agrees with the human on every
    labelled battle is the proxy's estimate on the unlabelled battles (kills a sign error in the
    rectifier, the unlabelled covariance without lambda^2)."""
    rng = np.random.default_rng(3)
    human, big = random_battles(rng, 4, 200), random_battles(rng, 4, 900)
    proxy = flipped(human, rng.random(200) < 0.4)
    zero, alone = ppr_estimate(4, human, proxy, big, lam=0.0), win_rate_estimate(4, human)
    assert np.allclose(zero.theta, alone.theta, atol=1e-15) and np.allclose(zero.cov, alone.cov, atol=1e-15)
    one, proxy_alone = ppr_estimate(4, human, human, big, lam=1.0), win_rate_estimate(4, big)
    assert np.allclose(one.theta, proxy_alone.theta, atol=1e-15)
    assert np.allclose(one.cov, proxy_alone.cov, atol=1e-15)
    half = ppr_estimate(4, human, proxy, big, lam=0.5)
    assert np.allclose(half.cov, 0.25 * proxy_alone.cov + win_rate_estimate(
        4, human.with_wins(0.5 * proxy.win_a - human.win_a, 0.5 * proxy.win_b - human.win_b)).cov, atol=1e-15)


def test_rank_sets_two_models_at_the_chi_square_boundary():
    """Two models are separated when |t1 - t2| > sqrt(var(t1 - t2) q), q = chi2 quantile at 2 degrees of
    freedom = -2 ln alpha: just above the boundary [1,1],[2,2], just below [1,2],[1,2] (kills k - 1 degrees
    of freedom, a missing sqrt(2), the covariance term's sign)."""
    alpha = 0.1
    cov = np.array([[0.0004, 0.0001], [0.0001, 0.0009]])
    edge = math.sqrt((0.0004 + 0.0009 - 2 * 0.0001) * (-2 * math.log(alpha)))
    low, high = rank_sets(np.array([0.5 + edge * 1.001, 0.5]), cov, alpha)
    assert low.tolist() == [1, 2] and high.tolist() == [1, 2]
    low, high = rank_sets(np.array([0.5 + edge * 0.999, 0.5]), cov, alpha)
    assert low.tolist() == [1, 1] and high.tolist() == [2, 2]


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), k=st.integers(2, 9), alpha=st.floats(0.01, 0.5))
def test_rank_sets_equal_their_definition(seed, k, alpha):
    """Each rank-set is [1 + #separated above, k - #separated below], counted pair by pair with loops
    (the paper's Algorithm 2 as written); the true order lies in it when nothing is separated wrongly."""
    from scipy.stats import chi2

    rng = np.random.default_rng(seed)
    theta = rng.random(k)
    x = rng.normal(size=(k, k)) * 0.05
    cov = x @ x.T
    q = chi2.ppf(1 - alpha, k)
    low, high = rank_sets(theta, cov, alpha)
    for i in range(k):
        above = below = 0
        for j in range(k):
            var = max(cov[i, i] + cov[j, j] - 2 * cov[i, j], 0)
            if i != j and abs(theta[i] - theta[j]) > math.sqrt(var * q):
                above += theta[j] > theta[i]
                below += theta[j] < theta[i]
        assert (low[i], high[i]) == (1 + above, k - below)


def coverage(method: str, alpha: float, reps: int, seed: int) -> tuple[float, float]:
    """Share of replicates whose rank-sets all cover the true ranking, and the mean rank-set size, on
    generated data: 5 models of known strength, ties 10 %, n = 300 human-labelled battles and N = 3,000
    battles only a proxy judged; the proxy agrees with the human 70 % of the time and otherwise picks the
    weakest model's side (a biased judge that lifts the weakest model)."""
    rng = np.random.default_rng(seed)
    k, tie = 5, 0.1
    strength = np.array([1.2, 0.6, 0.2, -0.3, -0.9])
    pairs = np.array([(i, j) for i in range(k) for j in range(k) if i != j])
    p_win = 1 / (1 + np.exp(-(strength[:, None] - strength[None, :])))
    truth_rate = np.array([np.mean([(1 - tie) * p_win[i, j] for j in range(k) if j != i]) for i in range(k)])
    true_rank = 1 + (truth_rate[None, :] > truth_rate[:, None]).sum(axis=1)

    def draw(size: int) -> tuple[Battles, Battles]:
        idx = rng.integers(0, len(pairs), size)
        a, b = pairs[idx, 0], pairs[idx, 1]
        is_tie = rng.random(size) < tie
        wa = ~is_tie & (rng.random(size) < p_win[a, b])
        human = Battles(a, b, wa.astype(float), (~is_tie & ~wa).astype(float))
        agree = rng.random(size) < 0.7
        weak = k - 1
        pa = np.where(agree, human.win_a, (a == weak).astype(float))
        pb = np.where(agree, human.win_b, (b == weak).astype(float))
        return human, human.with_wins(pa, pb)

    hits, sizes = 0, 0.0
    for _ in range(reps):
        human, proxy = draw(300)
        _, unlabelled = draw(3000)
        if method == "ppr":
            est = ppr_estimate(k, human, proxy, unlabelled)
        elif method == "human-only":
            est = win_rate_estimate(k, human)
        else:
            est = win_rate_estimate(k, Battles(*(np.r_[getattr(proxy, f), getattr(unlabelled, f)]
                                                 for f in ("model_a", "model_b", "win_a", "win_b"))))
        low, high = rank_sets(est.theta, est.cov, alpha)
        hits += bool(np.all((low <= true_rank) & (true_rank <= high)))
        sizes += float(np.mean(high - low + 1))
    return hits / reps, sizes / reps


def test_ppr_rank_sets_cover_the_true_ranking_at_the_stated_level():
    """On generated data with a known truth, PPR's rank-sets cover the true ranking in at least 1 - alpha of
    300 replicates (less 3 standard errors), while the biased proxy alone misses it most of the time: the
    data separate an estimator that corrects the proxy from one that does not (kills: the rectifier left
    out or of the wrong sign, lambda fixed at 1 without the rectifier's covariance)."""
    alpha, reps = 0.1, 300
    slack = 3 * math.sqrt(alpha * (1 - alpha) / reps)
    ppr_cover, ppr_size = coverage("ppr", alpha, reps, seed=11)
    proxy_cover, _ = coverage("proxy-only", alpha, 100, seed=12)
    assert ppr_cover >= 1 - alpha - slack, ppr_cover
    assert proxy_cover < 0.5, proxy_cover
    assert ppr_size < 5  # informative: not every rank-set is [1, 5]


def balanced_coverage(k: int, variance: str, reps: int, alpha: float, seed: int) -> float:
    """Coverage of the true ranking by PPR's rank-sets on k evenly spaced models (strength gap 0.15, ties
    10 %), every pair 2000 // pairs labelled battles and ten times as many unlabelled; the proxy agrees 75 %
    of the time and otherwise picks model_a (the lower index)."""
    rng = np.random.default_rng(seed)
    strength = -0.15 * np.arange(k)
    p_win = 1 / (1 + np.exp(-(strength[:, None] - strength[None, :])))
    rate = np.array([np.mean([0.9 * p_win[i, j] for j in range(k) if j != i]) for i in range(k)])
    truth = 1 + (rate[None, :] > rate[:, None]).sum(axis=1)
    pairs = np.array([(i, j) for i in range(k) for j in range(i + 1, k)])

    def draw(per: int) -> tuple[Battles, Battles]:
        idx = np.repeat(np.arange(len(pairs)), per)
        a, b = pairs[idx, 0], pairs[idx, 1]
        is_tie = rng.random(len(idx)) < 0.1
        wa = ~is_tie & (rng.random(len(idx)) < p_win[a, b])
        human = Battles(a, b, wa.astype(float), (~is_tie & ~wa).astype(float))
        agree = rng.random(len(idx)) < 0.75
        return human, human.with_wins(np.where(agree, human.win_a, 1.0), np.where(agree, human.win_b, 0.0))

    hits = 0
    per = 2000 // len(pairs)
    for _ in range(reps):
        human, proxy = draw(per)
        _, unlabelled = draw(10 * per)
        est = ppr_estimate(k, human, proxy, unlabelled, variance=variance)
        low, high = rank_sets(est.theta, est.cov, alpha)
        hits += bool(np.all((low <= truth) & (truth <= high)))
    return hits / reps


def test_per_model_variance_keeps_coverage_where_the_papers_falls_short():
    """12 close models (the paper's count): per-model variance covers the true ranking in >= 1 - alpha of
    the repetitions; the authors' covariance (over battles squared) falls short of it, the finding
    docs/notes/i28ppr-28.md reports (kills ``per-model`` scaled like ``paper`` and a ``paper`` silently
    changed to the per-model form)."""
    alpha, reps = 0.05, 100
    slack = 3 * math.sqrt(alpha * (1 - alpha) / reps)
    assert balanced_coverage(12, "per-model", reps, alpha, seed=4) >= 1 - alpha - slack
    assert balanced_coverage(12, "paper", reps, alpha, seed=4) < 1 - alpha - slack


# --- the store: matching and the CLI ---

def write_csv(path: Path, rows: list[tuple]) -> Path:
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["judge", "prompt_id", "model_a", "model_b", "winner", "battle_id"])
        w.writerows(rows)
    return path


def vicuna_like_rows(seed: int, prompts: int = 30) -> list[tuple]:
    """Human votes (3 per prompt and pair, one presentation order) and two proxy judges (each pair in both
    orders), on 4 models, plus proxy-only prompts; winners at random with ties. No battle ids."""
    rng = np.random.default_rng(seed)
    models = ["m0", "m1", "m2", "m3"]
    rows = []
    for p in range(prompts):
        for i in range(4):
            for j in range(i + 1, 4):
                a, b = (models[i], models[j]) if rng.random() < 0.5 else (models[j], models[i])
                if p < prompts // 2:
                    rows += [("human", f"p{p}", a, b, rng.choice(["A", "B", "tie"]), "") for _ in range(3)]
                for judge in ("g1", "g2"):
                    rows += [(judge, f"p{p}", x, y, rng.choice(["A", "B", "tie", "A"]), "")
                             for x, y in ((a, b), (b, a))]
    return rows


def brute_force_match(rows: list[tuple], proxy: str, models: list[str]) -> tuple[Battles, Battles, Battles]:
    """The matching rule written out with dicts: key (prompt, unordered pair), k-th human with k-th proxy
    in file order, oriented as the human row; the proxy's other rows are unlabelled."""
    code = {m: i for i, m in enumerate(models)}
    humans: dict = {}
    for r in rows:
        if r[0] == "human":
            humans.setdefault((r[1], frozenset(r[2:4])), []).append(r)
    used: dict = {}
    lab_h, lab_p, unl = [], [], []

    def winner(r):
        return {"A": r[2], "B": r[3]}.get(r[4])

    for r in rows:
        if r[0] != proxy:
            continue
        key = (r[1], frozenset(r[2:4]))
        k = used.get(key, 0)
        used[key] = k + 1
        if k < len(humans.get(key, [])):
            h = humans[key][k]
            lab_h.append((code[h[2]], code[h[3]], winner(h) == h[2], winner(h) == h[3]))
            lab_p.append((code[h[2]], code[h[3]], winner(r) == h[2], winner(r) == h[3]))
        else:
            unl.append((code[r[2]], code[r[3]], winner(r) == r[2], winner(r) == r[3]))

    def as_b(t):
        x = np.array(t, dtype=float).reshape(-1, 4)
        return Battles(x[:, 0].astype(int), x[:, 1].astype(int), x[:, 2], x[:, 3])

    return as_b(lab_h), as_b(lab_p), as_b(unl)


SOLO = [("solo", "elsewhere", "m0", "m1", "A", ""), ("solo", "elsewhere", "m1", "m2", "B", "")]
"""A judge on a prompt no other judge saw: as the human, it shares no battle with a proxy."""

ACROSS_ORDERS = [("human", "q", "x", "y", "A", "1"), ("llm", "q", "y", "x", "B", "1"),  # both pick x
                 ("human", "q", "x", "z", "B", "2"), ("llm", "q", "x", "z", "A", "2"),  # disagree
                 ("human", "q", "y", "z", "tie", "3"), ("llm", "q", "y", "z", "A", "3"),
                 ("llm", "r", "x", "y", "A", "4"), ("llm", "r", "z", "y", "A", "5"),
                 ("llm", "r", "x", "z", "B", "6")]
"""Dataset ``b``: battle ids on every verdict, the proxy showing one pair the other way round."""


@pytest.fixture(scope="module")
def ppr_db(tmp_path_factory, migrated_empty_db) -> tuple[Path, list[tuple]]:
    """One store (a copy of the migrated empty one) with dataset v (``vicuna_like_rows`` and ``SOLO``) and
    dataset b (``ACROSS_ORDERS``)."""
    import shutil

    tmp = tmp_path_factory.mktemp("ppr")
    rows = vicuna_like_rows(5)
    db = tmp / "lens.duckdb"
    shutil.copyfile(migrated_empty_db, db)
    run_engine(["--db", db, "import", "--dataset", "v", write_csv(tmp / "v.csv", rows + SOLO)], check=True)
    run_engine(["--db", db, "import", "--dataset", "b", write_csv(tmp / "b.csv", ACROSS_ORDERS)], check=True)
    return db, rows


def test_store_matching_equals_a_brute_force_matching(ppr_db):
    """The SQL matching (prompt and unordered pair, k-th with k-th, oriented as the human saw it) gives the
    same labelled and unlabelled battles as the rule written out with dicts (kills: matching by ordered
    pair, orienting the proxy's verdict by its own model_a, reusing a proxy verdict for a second vote)."""
    from engine.ranking.ppr_data import read_ppr_inputs
    from engine.store.connection import Store

    db, rows = ppr_db
    store = Store(db)
    try:
        inputs = read_ppr_inputs(store, "v", "human", ["g1", "g2"])
    finally:
        store.close()
    assert inputs.models == ["m0", "m1", "m2", "m3"] and inputs.matched_by == "prompt and pair"
    for m in inputs.matches:
        h, p, u = brute_force_match(rows, m.proxy, inputs.models)
        for mine, theirs in ((m.human, h), (m.proxy_labelled, p), (m.unlabelled, u)):
            for f in ("model_a", "model_b", "win_a", "win_b"):
                assert np.array_equal(getattr(mine, f), getattr(theirs, f)), (m.proxy, f)
        assert len(m.human) == 15 * 6 * 2 and m.human_unmatched == 15 * 6  # 3 votes, 2 proxy verdicts


def test_cli_prints_the_estimators_numbers(ppr_db):
    """leaderboard --method ppr --format csv: one block per proxy with the rank-sets and estimates the
    estimator gives on the brute-force matched battles; human-only and proxy-only likewise."""
    db, rows = ppr_db
    out = run_engine(["--db", db, "leaderboard", "--dataset", "v", "--method", "ppr", "--human", "human",
                      "--proxy", "g1,g2", "--alpha", "0.2", "--format", "csv"], check=True)
    lines = list(csv.DictReader(out.stdout.splitlines()))
    assert list(lines[0])[:5] == ["model", "rank_set_low", "rank_set_high", "win_rate", "std_error"]
    models = ["m0", "m1", "m2", "m3"]
    for proxy in ("g1", "g2"):
        h, p, u = brute_force_match(rows, proxy, models)
        est = ppr_estimate(4, h, p, u)
        low, high = rank_sets(est.theta, est.cov, 0.2)
        got = {r["model"]: r for r in lines if r["proxy"] == proxy}
        for i, m in enumerate(models):
            assert (int(got[m]["rank_set_low"]), int(got[m]["rank_set_high"])) == (low[i], high[i])
            assert float(got[m]["win_rate"]) == pytest.approx(est.theta[i], abs=1e-12)
            assert float(got[m]["lambda"]) == pytest.approx(est.lam, abs=1e-12)
    human = run_engine(["--db", db, "leaderboard", "--dataset", "v", "--method", "human-only", "--human",
                        "human", "--format", "json"], check=True)
    got_h = {r["model"]: r["win_rate"] for r in json.loads(human.stdout)["rows"]}
    hb = [r for r in rows if r[0] == "human"]
    for m in models:
        wins = sum(1 for r in hb if {"A": r[2], "B": r[3]}.get(r[4]) == m)
        assert got_h[m] == pytest.approx(wins / sum(1 for r in hb if m in r[2:4]), abs=1e-12)


def test_ignore_ties_drops_tie_verdicts_before_counting(ppr_db):
    """--ignore-ties: a model's win rate is its wins over its decisive verdicts only (kills ties kept as
    losses for both, or dropped after matching)."""
    db, rows = ppr_db
    out = run_engine(["--db", db, "leaderboard", "--dataset", "v", "--method", "human-only", "--human",
                      "human", "--ignore-ties", "--format", "json"], check=True)
    got = {r["model"]: r["win_rate"] for r in json.loads(out.stdout)["rows"]}
    decisive = [r for r in rows if r[0] == "human" and r[4] != "tie"]
    for m in ["m0", "m1", "m2", "m3"]:
        wins = sum(1 for r in decisive if {"A": r[2], "B": r[3]}[r[4]] == m)
        assert got[m] == pytest.approx(wins / sum(1 for r in decisive if m in r[2:4]), abs=1e-12)
    ppr = run_engine(["--db", db, "leaderboard", "--dataset", "v", "--method", "ppr", "--human", "human",
                      "--proxy", "g1", "--ignore-ties", "--format", "json"], check=True)
    decisive_g1 = [r for r in rows if r[0] == "g1" and r[4] != "tie"]
    assert json.loads(ppr.stdout)["rows"][0]["n_proxy"] == len(decisive_g1)


def test_battle_ids_match_across_orders(ppr_db):
    """With battle ids on every verdict, a human row matches the proxy row of the same id even when the
    proxy showed the models the other way round; the proxy's pick counts for the model it picked (kills
    orienting the proxy's verdict by its own model_a)."""
    from engine.ranking.ppr_data import read_ppr_inputs
    from engine.store.connection import Store

    store = Store(ppr_db[0])
    try:
        inputs = read_ppr_inputs(store, "b", "human", ["llm"])
    finally:
        store.close()
    m = inputs.matches[0]
    assert inputs.matched_by == "battle_id" and len(m.human) == 3 and len(m.unlabelled) == 3
    assert m.proxy_labelled.win_a.tolist() == [1.0, 1.0, 1.0] and m.proxy_labelled.win_b.tolist() == [0, 0, 0]
    assert m.human.win_a.tolist() == [1.0, 0.0, 0.0] and m.human.win_b.tolist() == [0.0, 1.0, 0.0]


@pytest.mark.parametrize("argv, words", [
    (["--method", "ppr", "--human", "human", "--proxy", "g1", "--alpha", "0"], "strictly between 0 and 1"),
    (["--method", "ppr", "--human", "human", "--proxy", "g1", "--alpha", "1.5"], "strictly between 0 and 1"),
    (["--method", "ppr", "--human", "human", "--proxy", "g1,g1"], "named twice"),
    (["--method", "ppr", "--human", "g1", "--proxy", "g1"], "named twice"),
    (["--method", "ppr", "--human", "human", "--proxy", "nobody"], "has no judge 'nobody'"),
    (["--method", "ppr", "--human", "human"], "give --proxy"),
    (["--human", "human", "--proxy", "g1"], "give --method too"),
    (["--method", "ppr", "--human", "human", "--proxy", "g1", "--keep-k", "3"], "--keep-k"),
    (["--method", "ppr", "--human", "human", "--proxy", "g1", "--human-n", "100000"], "--human-n"),
    (["--method", "ppr", "--human", "g2", "--proxy", "g1"], "judged no battle beyond"),
    (["--method", "ppr", "--human", "solo", "--proxy", "g1"], "share no battle"),
])
def test_bad_input_is_one_sentence_and_exit_2(ppr_db, argv, words):
    """Alpha outside (0, 1), a judge named twice, an unknown judge, a missing option, options without
    --method, a ranker option with it, too many --human-n, a human judge with no overlap with the proxy:
    exit 2 and one sentence naming the problem."""
    db, _ = ppr_db
    out = run_engine(["--db", db, "leaderboard", "--dataset", "v", *argv])
    assert out.returncode == 2, out.stderr
    assert words in out.stderr and out.stderr.count("\n") == 1 and "Traceback" not in out.stderr


def test_the_paper_variance_note_states_its_ratio_to_the_per_model_standard_error(tmp_path):
    """With every pair judged equally often, each of k models is in 2/k of a set's n battles, so the paper's
    covariance (over n^2) is (2/k)^2 of the per-model one (over n_i n_j): the std_error columns of the two
    variances read 2/k apart, model by model, and the note says 2/k with this k."""
    import io
    import itertools

    import pandas as pd

    models = ["m0", "m1", "m2", "m3", "m4"]
    rng = np.random.default_rng(2)
    rows = [{"prompt_id": f"q{p}", "model_a": a, "model_b": b, "judge": "human",
             "winner": rng.choice(["A", "B", "tie"], p=[0.45, 0.4, 0.15])}
            for p in range(30) for a, b in itertools.combinations(models, 2)]
    pd.DataFrame(rows).to_csv(tmp_path / "h.csv", index=False)
    db = str(tmp_path / "lens.duckdb")
    run_engine(["--db", db, "import", "--dataset", "h", str(tmp_path / "h.csv")], check=True)

    def board(variance: str):
        out = run_engine(["--db", db, "leaderboard", "--dataset", "h", "--method", "human-only", "--human",
                          "human", "--ppr-variance", variance, "--format", "csv"], check=True)
        return pd.read_csv(io.StringIO(out.stdout)).set_index("model")["std_error"], out.stderr

    paper, note = board("paper")
    per_model, _ = board("per-model")
    k = len(models)
    np.testing.assert_allclose((paper / per_model.reindex(paper.index)).to_numpy(), 2 / k, rtol=1e-12)
    assert f"about 2/k (k = {k} models: {2 / k:.2g}) of" in note
