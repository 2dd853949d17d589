"""The seam between the baseline win rate (Arena-Hard's score, ``engine/ranking/baseline.py``) and the
style fit and sandwich intervals (``engine/ranking/style_board.py``, ``engine/rankers/sandwich.py``).

- ``--ci sandwich``: the win rate's interval sigma(d -/+ z se(d)), d = s_model - s_baseline, se(d) from
  the whole sandwich covariance; checked against the closed form of a two-model selection.
- ``--style-control``: the win rate is sigma(theta_m - theta_b) of the style-controlled ratings; its
  sandwich interval is checked against the spread of the style fit's own bootstrap on a large sample.
- The CLI gives the same numbers as the engine, with the style board's columns.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from scipy.special import expit, logit

from engine.ingest.importer import import_files
from engine.rankers.sandwich import HESSIAN_REG, z_quantile
from engine.ranking.baseline import baseline_leaderboard
from engine.ranking.board import BoardSpec
from engine.style.features import STYLE_COLUMNS
from tests.conftest import run_engine


def two_model_frame(wins: int, losses: int, ties: int) -> pd.DataFrame:
    """x against base, one prompt per verdict: ``wins`` for x, ``losses``, ``ties``."""
    winner = ["A"] * wins + ["B"] * losses + ["tie"] * ties
    n = len(winner)
    return pd.DataFrame({"prompt_id": [f"p{i}" for i in range(n)], "model_a": ["x"] * n,
                         "model_b": ["base"] * n, "winner": winner})


def style_frame(seed: int, n: int = 3000, models=("x", "y", "base"), verbose: bool = True) -> pd.DataFrame:
    """Battles among ``models`` with per-side style counts; the longer answer wins more (beta on tokens);
    ``verbose``: the first model's answers are three times longer."""
    rng = np.random.default_rng(seed)
    k = len(models)
    a = rng.integers(0, k, n)
    b = (a + rng.integers(1, k, n)) % k
    counts = rng.poisson(2.0, (n, 8)).astype(float)
    counts[:, [0, 4]] = rng.integers(20, 900, (n, 2))
    if verbose:  # the first model answers at length, and wins partly by that
        counts[a == 0, 0] *= 3
        counts[b == 0, 4] *= 3
    theta = np.linspace(0.6, -0.6, k)
    rel = (counts[:, 0] - counts[:, 4]) / (counts[:, 0] + counts[:, 4])
    p = expit(theta[a] - theta[b] + 1.5 * rel)
    u = rng.random(n)
    winner = np.where(u < 0.1, "tie", np.where(rng.random(n) < p, "A", "B"))
    frame = pd.DataFrame({"prompt_id": [f"p{i}" for i in range(n)], "model_a": np.asarray(models)[a],
                          "model_b": np.asarray(models)[b], "winner": winner})
    for j, c in enumerate(STYLE_COLUMNS):
        frame[c] = counts[:, j]
    return frame


def imported(store, tmp_path, frame: pd.DataFrame, name: str) -> str:
    path = tmp_path / f"{name}.csv"
    frame.to_csv(path, index=False)
    import_files(store, [path], name)
    return name


def row(board, model: str) -> pd.Series:
    return board.table.set_index("model").loc[model]


@pytest.mark.parametrize("wins,losses,ties", [(60, 30, 10), (25, 70, 5)])
def test_sandwich_win_rate_interval_equals_the_two_model_closed_form(empty_store, tmp_path, wins, losses,
                                                                     ties):
    """Two models: d = logit((W + T/2) / N) and, from H = N p(1-p) L + 1e-5 N I and G = g L (L the pair's
    Laplacian, g = W (1-p)^2 + L p^2 + T (1/2 - p)^2), var(d) = 4 g / (2 N p(1-p) + 1e-5 N)^2. Kills an
    interval from the diagonal alone (var_m + var_b: half the variance) and the old NaN interval."""
    name = imported(empty_store, tmp_path, two_model_frame(wins, losses, ties), f"two{wins}")
    board = baseline_leaderboard(empty_store, name, BoardSpec(ci="sandwich"), "base")
    n = wins + losses + ties
    p = (wins + ties / 2) / n
    g = wins * (1 - p) ** 2 + losses * p ** 2 + ties * (0.5 - p) ** 2
    se = np.sqrt(4 * g / (2 * n * p * (1 - p) + HESSIAN_REG * n) ** 2)
    z = z_quantile(0.95)
    x = row(board, "x")
    assert x["baseline_win_rate"] == pytest.approx(p, abs=1e-9)
    assert x["baseline_ci_low"] == pytest.approx(expit(logit(p) - z * se), abs=1e-9)
    assert x["baseline_ci_high"] == pytest.approx(expit(logit(p) + z * se), abs=1e-9)
    assert (row(board, "base")["baseline_ci_low"], row(board, "base")["baseline_ci_high"]) == (0.5, 0.5)
    assert board.params["ci_method"] == "sandwich"


def test_style_controlled_win_rate_is_the_prediction_at_zero_style_difference(empty_store, tmp_path):
    """Under --style-control the win rate is sigma(theta_m - theta_b) of the controlled scores, not the
    plain fit's (here a verbose model wins partly by length); the sandwich and bootstrap boards give the
    same point. Kills the old wiring (the plain fit under the baseline, no rank_plain, NaN intervals)."""
    name = imported(empty_store, tmp_path, style_frame(3), "sty")
    sand = baseline_leaderboard(empty_store, name, BoardSpec(style_control=True), "base")
    boot = baseline_leaderboard(empty_store, name, BoardSpec(style_control=True, ci="bootstrap", bootstrap=20,
                                                             seed=1), "base")
    plain = baseline_leaderboard(empty_store, name, BoardSpec(), "base")
    assert sand.params["style_control"] and sand.params["ci_method"] == "sandwich"
    assert {"rank_plain", "rank_change"} <= set(sand.table.columns)
    s = sand.table.set_index("model")["score"]
    for m in ("x", "y"):
        assert row(sand, m)["baseline_win_rate"] == pytest.approx(expit(s[m] - s["base"]), abs=1e-12)
        assert row(boot, m)["baseline_win_rate"] == pytest.approx(row(sand, m)["baseline_win_rate"], abs=1e-9)
        r = row(sand, m)
        assert r["baseline_ci_low"] < r["baseline_win_rate"] < r["baseline_ci_high"]
    assert row(plain, "x")["baseline_win_rate"] - row(sand, "x")["baseline_win_rate"] > 0.005


def test_style_sandwich_win_rate_interval_matches_the_bootstrap_spread(empty_store, tmp_path):
    """Two models, style features unrelated to the model: the sandwich interval's width on the log-odds
    scale equals that of the style fit's own bootstrap percentile interval (B = 300, 3,000 votes) within
    15 %. Kills the diagonal-only variance (var_m + var_b: the width / sqrt 2)."""
    name = imported(empty_store, tmp_path, style_frame(4, models=("x", "base"), verbose=False), "sty2")
    sand = baseline_leaderboard(empty_store, name, BoardSpec(style_control=True), "base")
    spec = BoardSpec(style_control=True, ci="bootstrap", bootstrap=300, seed=1)
    boot = baseline_leaderboard(empty_store, name, spec, "base")
    width = logit(row(sand, "x")["baseline_ci_high"]) - logit(row(sand, "x")["baseline_ci_low"])
    spread = logit(row(boot, "x")["baseline_ci_high"]) - logit(row(boot, "x")["baseline_ci_low"])
    assert width == pytest.approx(spread, rel=0.15)


def test_cli_baseline_under_style_control_prints_the_engines_numbers(tmp_path):
    """``leaderboard --baseline base --style-control --format json`` (a process) carries rank_plain,
    rank_change, the style betas and the win-rate interval, equal to the engine's in-process board."""
    db = tmp_path / "w.duckdb"
    path = tmp_path / "sty.csv"
    style_frame(5, n=1200).to_csv(path, index=False)
    assert run_engine(["--db", db, "import", path, "--dataset", "sty"]).returncode == 0
    res = run_engine(["--db", db, "leaderboard", "--dataset", "sty", "--baseline", "base", "--style-control",
                      "--format", "json"])
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    table = pd.DataFrame(out["table"]).set_index("model")
    from engine.store.connection import Store

    store = Store(db)
    try:
        want = baseline_leaderboard(store, "sty", BoardSpec(style_control=True), "base")
    finally:
        store.close()
    w = want.table.set_index("model")
    for c in ("score", "rank", "rank_plain", "rank_change", "baseline_win_rate", "baseline_ci_low",
              "baseline_ci_high", "rank_ub"):
        np.testing.assert_allclose(table.loc[w.index, c].astype(float), w[c].astype(float), atol=1e-9,
                                   err_msg=c)
    assert np.isfinite(table["baseline_ci_low"].astype(float)).all()
    assert out["params"]["style"]["features"]["tokens"]["beta"] == pytest.approx(
        want.params["style"]["features"]["tokens"]["beta"], abs=1e-9)


def test_the_battles_note_counts_verdicts_the_same_with_and_without_style_control(tmp_path):
    """A strong verdict (strength 2) is 3 battles under --baseline: the note says "battles: B from V valid
    verdicts" with V the file's valid verdicts (counted here) and B = V + 2 x the strong ones, with and
    without --style-control (the style path said "B from B")."""
    db = tmp_path / "w.duckdb"
    frame = style_frame(3, n=400)
    rng = np.random.default_rng(1)
    decisive = frame["winner"].isin(["A", "B"]).to_numpy()
    frame["strength"] = np.where(decisive & (rng.random(len(frame)) < 0.3), 2, np.where(decisive, 1, np.nan))
    frame.loc[frame.index[:5], "winner"] = "invalid"
    frame.loc[frame.index[:5], "strength"] = np.nan
    frame.to_csv(tmp_path / "s.csv", index=False)
    assert run_engine(["--db", db, "import", tmp_path / "s.csv", "--dataset", "s"]).returncode == 0
    valid = int((frame["winner"] != "invalid").sum())
    battles = valid + 2 * int((frame["strength"] == 2).sum())
    for extra in ([], ["--style-control"]):
        res = run_engine(["--db", db, "leaderboard", "--dataset", "s", "--baseline", "base", *extra])
        assert res.returncode == 0, res.stderr
        assert f"note: battles: {battles} from {valid} valid verdicts;" in res.stderr, (extra, res.stderr)
