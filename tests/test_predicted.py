"""The win probabilities a fit predicts (``engine.rankers.win_probability``, ``Ranker.win_probabilities``,
``engine.views.matrix_view.predicted_pairs``) and ``diagnose --table predicted``.

Checked against closed forms written out here from the strengths (pi = e^theta), against Bradley-Terry's
own score equations (at the MLE each model's predicted wins equal its observed wins, W + T/2: a second
path that kills a transposed or mis-scaled matrix), and the CLI against the in-process computation."""

from __future__ import annotations

import io
import json
import math

import numpy as np
import pandas as pd
import pytest
from conftest import run_engine
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.rankers import ranker_object
from engine.rankers.win_probability import bt_win_probabilities, davidson_win_shares, elo_expected_scores
from engine.ranking.leaderboard import leaderboard
from engine.views.matrix_view import predicted_win_matrix

ratings = st.lists(st.floats(-6, 6, allow_nan=False), min_size=2, max_size=8)


@settings(max_examples=60, deadline=None)
@given(ratings, st.floats(0, 5))
def test_closed_forms(theta, nu):
    n = len(theta)
    bt, dav = bt_win_probabilities(theta), davidson_win_shares(theta, nu)
    elo = elo_expected_scores([400 * t for t in theta], base=10.0, scale=400.0)
    for i in range(n):
        assert math.isnan(bt[i, i]) and math.isnan(dav[i, i]) and math.isnan(elo[i, i])
        for j in range(n):
            if i == j:
                continue
            pi, pj = math.exp(theta[i]), math.exp(theta[j])
            assert bt[i, j] == pytest.approx(pi / (pi + pj), rel=1e-9, abs=1e-12)
            d = nu * math.sqrt(pi * pj)
            assert dav[i, j] == pytest.approx((pi + d / 2) / (pi + pj + d), rel=1e-9, abs=1e-12)
            # Elo's expectation with ratings 400 theta: 1 / (1 + 10^(400 (theta_j - theta_i) / 400))
            assert elo[i, j] == pytest.approx(1 / (1 + 10 ** (theta[j] - theta[i])), rel=1e-9, abs=1e-12)
            assert bt[i, j] + bt[j, i] == pytest.approx(1.0) and dav[i, j] + dav[j, i] == pytest.approx(1.0)


def test_davidson_without_ties_is_bradley_terry():
    theta = [0.7, -0.1, -0.6]
    np.testing.assert_allclose(davidson_win_shares(theta, 0.0), bt_win_probabilities(theta), atol=1e-15)


@pytest.mark.parametrize("params", [{}, {"scale": "elo"}])
def test_the_bt_prediction_meets_the_fits_score_equations(shipped_store, params):
    """At the Bradley-Terry MLE (gpt-4's graph: strongly connected, no regularisation) each model's expected
    wins sum_j n_ij P_ij equal its observed W + T/2. Kills sigma(theta_j - theta_i) (a transposed matrix)
    and, with scale=elo, a prediction that forgets to read the scores back from the Elo-like scale."""
    board = leaderboard(shipped_store, "vicuna80", judge="gpt-4", ranker="bt", ranker_params=params)
    assert "none" in board.params["ranker_details"]["regularisation"]
    pred, note = predicted_win_matrix(board)
    assert pred is not None and "sigma" in note
    votes = board.table.set_index("model")
    from engine.graphs.buckets import build_buckets
    from engine.views.matrix_view import observed_matrices

    stack = build_buckets(shipped_store.verdicts("vicuna80", judge="gpt-4"))
    frac, games = observed_matrices(stack)
    pos = pd.Index(list(stack.models)).get_indexer(pred.index)
    games = games[np.ix_(pos, pos)]
    expected = np.nansum(games * pred.to_numpy(), axis=1)
    observed = (votes["wins"] + 0.5 * votes["ties"]).reindex(pred.index).to_numpy()
    np.testing.assert_allclose(expected, observed, atol=1e-6)


def test_davidson_and_elo_through_their_objects(shipped_store):
    dav = leaderboard(shipped_store, "vicuna80", judge="gpt-4", ranker="davidson")
    pred, note = predicted_win_matrix(dav)
    nu = dav.params["ranker_details"]["nu"]
    theta = dav.table["score"].to_numpy()
    pi = np.exp(theta)
    tie = nu * np.sqrt(np.outer(pi, pi))
    closed = (pi[:, None] + tie / 2) / (pi[:, None] + pi[None, :] + tie)
    np.fill_diagonal(closed, np.nan)
    np.testing.assert_allclose(pred.to_numpy(), closed, atol=1e-12)
    assert f"{nu:.4g}" in note
    elo = leaderboard(shipped_store, "vicuna80", judge="gpt-4", ranker="elo", ranker_params={"scale": 200.0})
    r = elo.table["score"].to_numpy()
    closed = 1 / (1 + 10 ** ((r[None, :] - r[:, None]) / 200.0))
    np.fill_diagonal(closed, np.nan)
    np.testing.assert_allclose(predicted_win_matrix(elo)[0].to_numpy(), closed, atol=1e-12)


def test_rankers_without_a_model_of_outcomes_predict_nothing(shipped_store):
    for name in ("copeland", "winrate", "borda"):
        assert ranker_object(name).win_probabilities(np.zeros(3), {}, {}) is None
    board = leaderboard(shipped_store, "vicuna80", judge="gpt-4", ranker="copeland")
    pred, note = predicted_win_matrix(board)
    assert pred is None and "predicts no win probability" in note


def _diagnose(db, *args):
    return run_engine(["--db", str(db), "diagnose", "--table", "predicted", *args])


def test_diagnose_predicted_in_every_format(shipped_db, shipped_store):
    """CSV, JSON and the printed table list the same rows: every ordered pair once, the prediction of the
    board's fit and the observed win fraction of the graphs."""
    from engine.graphs.buckets import build_buckets
    from engine.views.matrix_view import predicted_pairs

    board = leaderboard(shipped_store, "vicuna80", judge="gpt-4", ranker="bt")
    expect = predicted_pairs(build_buckets(shipped_store.verdicts("vicuna80", judge="gpt-4")), board)
    out = {f: _diagnose(shipped_db, "--judge", "gpt-4", "--format", f) for f in ("csv", "json", "table")}
    assert all(o.returncode == 0 for o in out.values()), [o.stderr for o in out.values()]
    csv = pd.read_csv(io.StringIO(out["csv"].stdout))
    js = pd.DataFrame(json.loads(out["json"].stdout))
    table = pd.read_fwf(io.StringIO(out["table"].stdout))
    n = len(board.table)
    assert len(csv) == len(js) == len(table) == n * (n - 1)
    assert list(csv.columns) == ["model_a", "model_b", "predicted", "win_fraction", "battles"]
    for got in (csv, js):
        pd.testing.assert_frame_equal(got, expect, check_dtype=False, atol=1e-9)
    # P(a beats b) + P(b beats a) = 1 and, where compared, the observed fractions too
    both = csv.merge(csv, left_on=["model_a", "model_b"], right_on=["model_b", "model_a"])
    np.testing.assert_allclose(both["predicted_x"] + both["predicted_y"], 1.0, atol=1e-12)
    met = both["battles_x"] > 0
    np.testing.assert_allclose((both["win_fraction_x"] + both["win_fraction_y"])[met], 1.0, atol=1e-12)


def test_diagnose_predicted_refusals(shipped_db):
    out = _diagnose(shipped_db, "--ranker", "copeland")
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.count("\n") == 1 and "copeland ranker's score is not a model of who wins" in out.stderr
    out = run_engine(["--db", str(shipped_db), "diagnose", "--table", "pnt", "--ranker", "bt"])
    assert out.returncode == 2 and "--ranker applies to the predicted table only" in out.stderr


def test_more_models_than_the_limit_are_refused_before_any_matrix(db_path, tmp_path):
    """1,001 models in a chain of battles: the table would have 1,001,000 rows; one sentence, exit 2,
    nothing on stdout (the check runs before the n x n observed and predicted arrays exist)."""
    from engine.views.matrix_view import PREDICTED_MODELS_MAX

    n = PREDICTED_MODELS_MAX + 1
    path = tmp_path / "chain.csv"
    path.write_text("prompt_id,model_a,model_b,winner\n"
                    + "".join(f"p{i},m{i:04d},m{i + 1:04d},{'AB'[i % 2]}\n" for i in range(n - 1)))
    run_engine(["--db", str(db_path), "import", str(path), "--dataset", "chain"], check=True)
    out = _diagnose(db_path, "--dataset", "chain")
    assert out.returncode == 2 and out.stdout == "" and out.stderr.count("\n") == 1
    limit = f"{n:,} models make {n * (n - 1):,} rows, above the limit of {PREDICTED_MODELS_MAX:,}"
    assert limit in out.stderr
