"""A bootstrap interval that cannot be estimated is shown as such, never as zero width (issue 23, bug 17
and point 6).

On fa0c159 BT's 50-sample bootstrap gave [score, score] on one verdict and on 20 one-sided verdicts,
and a resample that drew no graph of a model scored it from the regularisation alone. Now the table's
``ci_note`` says "not estimable", the four interval columns are empty there (NaN in CSV, null in JSON),
stderr names the models and why, and the app shows "not estimable" with the model possibly anywhere
in the rank (UB). An interval the data can estimate is unchanged (checked against percentiles
computed here from the resamples).
"""

from __future__ import annotations

import io
import json

import numpy as np
import pandas as pd
import pytest

from engine.graphs.stack import build_stack
from engine.ranking.bootstrap import BootstrapResult, bootstrap, graph_weights
from engine.views.leaderboard_view import board_view
from tests.conftest import run_engine
from tests.verdict_frames import canonical_frame


@pytest.fixture
def db_path(shipped_db_copy):
    """This file's CLI commands read their own dataset only: they start from the shipped store."""
    return shipped_db_copy


def _csv(tmp_path, rows: list[tuple[str, str, str, str]]):
    path = tmp_path / "v.csv"
    path.write_text("prompt_id,model_a,model_b,winner\n" + "".join(",".join(r) + "\n" for r in rows))
    return path


def _board(db_path, tmp_path, rows, *args):
    run_engine(["--db", db_path, "import", _csv(tmp_path, rows), "--dataset", "d"], check=True)
    out = run_engine(["--db", db_path, "leaderboard", "--dataset", "d", "--bootstrap", "50", *args,
                      "--format", "csv"], check=True)
    js = run_engine(["--db", db_path, "leaderboard", "--dataset", "d", "--bootstrap", "50", *args,
                     "--format", "json"], check=True)
    return pd.read_csv(io.StringIO(out.stdout), keep_default_na=False, na_values=[""]), out.stderr, \
        json.loads(js.stdout)


ONE_VERDICT = [("1", "a", "b", "A")]
ONE_SIDED = [(str(k), "a", "b", "A") for k in range(20)]


@pytest.mark.parametrize("rows", [ONE_VERDICT, ONE_SIDED], ids=["one verdict", "20 one-sided"])
@pytest.mark.parametrize("ranker", ["bt", "elspr"])  # the count path and the graph path
def test_an_interval_the_resamples_cannot_estimate_is_shown_as_not_estimable(db_path, tmp_path, rows, ranker):
    table, err, obj = _board(db_path, tmp_path, rows, "--ranker", ranker)
    assert table["ci_note"].tolist() == ["not estimable", "not estimable"]
    assert table[["ci_low", "ci_high", "rank_low", "rank_high"]].isna().all().all()
    assert "the interval of a, b (the same score in every resample) cannot be estimated" in err
    assert [r["ci_low"] for r in obj["table"]] == [None, None]
    assert obj["params"]["bootstrap_not_estimable"] == {"a": "the same score in every resample",
                                                        "b": "the same score in every resample"}


def test_an_estimable_interval_is_the_percentile_interval_of_the_resamples():
    rng = np.random.default_rng(5)
    rows = [{"prompt_id": str(k), "model_a": a, "model_b": b, "winner": rng.choice(["A", "B", "tie"])}
            for k in range(40) for a, b in (("a", "b"), ("b", "c"), ("a", "c"))]
    st = build_stack(canonical_frame(rows))
    res = bootstrap(st, "borda", B=50, seed=2)
    assert (res.not_estimable == "").all()
    low, high = np.quantile(res.samples, [0.025, 0.975], axis=0)
    np.testing.assert_allclose(res.scores_ci["low"], low)
    np.testing.assert_allclose(res.scores_ci["high"], high)


def test_a_resample_that_draws_no_graph_of_a_model_leaves_it_undefined_there():
    rows = [{"prompt_id": str(k), "model_a": "a", "model_b": "b", "winner": "AB"[k % 2]} for k in range(29)]
    rows.append({"prompt_id": "c", "model_a": "a", "model_b": "c", "winner": "A"})  # c is in one graph
    st = build_stack(canonical_frame(rows))
    B = 40
    res = bootstrap(st, "elspr", B=B, seed=4)
    w = graph_weights(st, B, np.random.default_rng(4), "graph")
    absent = w[:, list(st.keys["prompt_id"]).index("c")] == 0  # c's only graph not drawn
    assert 0 < absent.sum() < B
    c = st.models.index("c")
    assert np.isnan(res.samples[absent, c]).all() and np.isfinite(res.samples[~absent, c]).all()
    assert res.n_undefined == absent.sum()
    defined = res.samples[~absent, c]  # the interval comes from the resamples that have c's graph
    assert res.scores_ci.loc["c", "low"] == pytest.approx(np.quantile(defined, 0.025))
    assert res.scores_ci.loc["c", "high"] == pytest.approx(np.quantile(defined, 0.975))


def test_the_reasons_by_hand():
    samples = np.array([[1.0, 2.0, np.nan, np.nan], [1.0, 3.0, np.nan, 4.0], [1.0, 2.5, np.nan, np.nan]])
    res = BootstrapResult("bt", ("a", "b", "c", "d"), 3, 0, 0.95, samples, np.ones((3, 4)), "by hand")
    assert res.not_estimable.tolist() == [  # a is the same in every resample, b is not: a finding
        "", "", "defined in none of 3 resample(s)", "defined in only one of 3 resample(s)",
    ]
    ci = res.scores_ci
    assert ci.loc[["c", "d"]].isna().all().all() and ci.loc["a"].tolist() == [1.0, 1.0]
    assert ci.loc["b", "low"] == pytest.approx(np.quantile([2.0, 3.0, 2.5], 0.025))
    flat = BootstrapResult("bt", ("a", "b"), 3, 0, 0.95, np.array([[1.0, -1.0]] * 3), np.ones((3, 2)), "")
    assert flat.not_estimable.tolist() == ["the same score in every resample"] * 2  # no variation at all
    assert flat.scores_ci.isna().all().all()


def test_the_app_shows_not_estimable_and_counts_the_model_as_possibly_anywhere():
    table = pd.DataFrame({
        "rank": [1, 2, 3], "model": ["a", "b", "c"], "score": [2.0, 1.0, 0.0],
        "ci_low": [1.5, np.nan, -0.5], "ci_high": [2.5, np.nan, 0.5],
        "rank_low": pd.array([1, pd.NA, 3], dtype="Int64"),
        "rank_high": pd.array([1, pd.NA, 3], dtype="Int64"),
        "ci_note": pd.array(["", "not estimable", ""], dtype="string"),
    })
    view = board_view(table, ranker="bt", n_graphs=20).frame.set_index("model")
    assert view.loc["b", "interval"] == "not estimable" and view.loc["b", "rank_range"] == "not estimable"
    # b's score interval is unbounded: nothing lies wholly above it and it lies wholly above nothing;
    # c stays below a ([1.5, 2.5] lies wholly above [-0.5, 0.5]).
    assert view["rank_ub"].to_dict() == {"a": 1, "b": 1, "c": 2}
    assert view.loc["a", "interval"].replace("0", "") == "+.5 / -.5"


def test_on_the_count_path_too_a_resample_without_a_models_votes_leaves_it_undefined(db_path, tmp_path):
    """BT from vote counts: model c has one vote among 30 graphs, so about a third of the resamples draw
    none of it (each graph is missed with probability (29/30)^30 = 0.36). Those resamples count as
    undefined for c (on fa0c159 BT scored c there from its virtual ties alone and counted nothing)."""
    rows = [(str(k), "a", "b", "AB"[k % 2]) for k in range(29)] + [("c", "a", "c", "B")]
    run_engine(["--db", db_path, "import", _csv(tmp_path, rows), "--dataset", "d"], check=True)
    out = run_engine(["--db", db_path, "leaderboard", "--dataset", "d", "--bootstrap", "60", "--format",
                      "json"], check=True)
    n_undefined = json.loads(out.stdout)["params"]["bootstrap_n_undefined"]
    assert 5 <= n_undefined <= 40  # binomial(60, 0.36): mean 21.6, sd 3.7
