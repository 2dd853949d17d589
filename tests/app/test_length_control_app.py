"""Leaderboard page: with a baseline chosen and the length-control toggle on, a table of its own shows each
model's LC win rate and plain win rate against the baseline (percent), equal to the fit on the annotation
records themselves."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pandas as pd
import pytest
from apphelpers import assert_clean, new_app

from engine.__main__ import main
from engine.ranking.length_control import fit_length_control


def _records(seed: int, model: str) -> list[dict]:
    rng = np.random.default_rng(seed)
    out = []
    for i in range(40):
        lb = int(rng.integers(5, 600))
        pref = 1 + 1 / (1 + np.exp(-(0.9 * np.tanh((lb - 200) / 200) + rng.normal(0, 1))))
        out.append({"instruction": f"Q{i}?", "output_1": "r" * (10 + 13 * i), "output_2": "ü" * lb,
                    "generator_1": "ref", "generator_2": model, "annotator": "j", "preference": float(pref)})
    return out


def _imported(recs: dict[str, list[dict]], shipped_db, tmp_path):
    """A copy of the shipped store with ``recs`` (one AlpacaEval annotation file per model) imported as
    dataset ``ae`` by the CLI."""
    db = tmp_path / "lens.duckdb"
    shutil.copyfile(shipped_db, db)
    paths = []
    for m, r in recs.items():
        paths.append(tmp_path / f"{m}.json")
        paths[-1].write_text(json.dumps(r))
    assert main(["--db", str(db), "import", "--dataset", "ae", *map(str, paths)]) == 0
    return db


@pytest.mark.slow
def test_leaderboard_page_shows_the_lc_win_rate(shipped_db, tmp_path, monkeypatch):
    recs = {m: _records(seed, m) for seed, m in ((3, "alpha"), (4, "beta"))}
    db = _imported(recs, shipped_db, tmp_path)
    at = new_app(db, monkeypatch, query={"dataset": "ae"})
    assert_clean(at)
    # every verdict compares a model with "ref" (AlpacaEval's design): the baseline box opens on it
    assert at.selectbox(key="lb_baseline").value == "ref"
    assert not at.toggle(key="lb_length_control").disabled
    at.selectbox(key="lb_baseline").set_value("(none)").run()
    assert at.toggle(key="lb_length_control").disabled  # no baseline chosen
    at.selectbox(key="lb_baseline").set_value("ref").run()
    n_tables = len(at.dataframe)  # length control still off
    at.toggle(key="lb_length_control").set_value(True).run()
    assert_clean(at)
    assert len(at.dataframe) == n_tables + 1
    shown = at.dataframe[-1].value.set_index("model")
    assert list(shown.columns) == ["lc_win_rate_pct", "win_rate_pct", "n_verdicts"]
    for m, r in recs.items():
        df = pd.DataFrame(r)
        y = df["preference"].to_numpy() - 1
        fit = fit_length_control(y, (df["output_2"].str.len() - df["output_1"].str.len()).to_numpy(float))
        assert shown.loc[m, "lc_win_rate_pct"] == pytest.approx(100 * fit.lc_win_rate, abs=1e-7)
        assert shown.loc[m, "win_rate_pct"] == pytest.approx(100 * y.mean(), abs=1e-7)
        assert shown.loc[m, "n_verdicts"] == len(r)
    assert shown.loc["ref", "lc_win_rate_pct"] == 50.0
    assert list(shown["lc_win_rate_pct"]) == sorted(shown["lc_win_rate_pct"], reverse=True)
    at.toggle(key="lb_length_control").set_value(False).run()
    assert len(at.dataframe) == n_tables


@pytest.mark.slow
def test_a_model_without_an_lc_fit_shows_a_dash_and_the_two_win_rates_say_which_is_which(
        shipped_db, tmp_path, monkeypatch):
    """A model with fewer than five verdicts against the baseline has no LC win rate: its cell reads "—"
    (not "None"), the other models' cells their numbers to one decimal. The baseline box's win rate (the
    fit's prediction) and the LC table's (observed mean preference) are labelled apart."""
    recs = {"alpha": _records(3, "alpha"), "gamma": _records(5, "gamma")[:3]}
    db = _imported(recs, shipped_db, tmp_path)
    at = new_app(db, monkeypatch, query={"dataset": "ae"})
    assert at.selectbox(key="lb_baseline").value == "ref"
    box = at.dataframe[-1]
    labels = {c: cfg.get("label") for c, cfg in json.loads(box.proto.columns).items()}
    assert labels["win_rate_pct"] == "predicted win rate vs ref (%)"
    at.toggle(key="lb_length_control").set_value(True).run()
    assert_clean(at)
    table = at.dataframe[-1]
    shown = table.value.set_index("model")
    labels = {c: cfg.get("label") for c, cfg in json.loads(table.proto.columns).items()}
    assert labels["win_rate_pct"] == "observed win rate vs ref (%)"
    assert labels["lc_win_rate_pct"] == "LC win rate vs ref (%)"
    assert shown.loc["gamma", "lc_win_rate_pct"] == "—"
    df = pd.DataFrame(recs["alpha"])
    y = df["preference"].to_numpy() - 1
    fit = fit_length_control(y, (df["output_2"].str.len() - df["output_1"].str.len()).to_numpy(float))
    assert shown.loc["alpha", "lc_win_rate_pct"] == format(100 * fit.lc_win_rate, ".1f")
    assert shown.loc["gamma", "win_rate_pct"] == pytest.approx(
        100 * (pd.DataFrame(recs["gamma"])["preference"].to_numpy() - 1).mean())
    assert "None" not in shown.astype(str).to_numpy().ravel().tolist()
    assert any("counts each verdict against ref once" in c.value and "can differ" in c.value
               for c in at.caption)  # and why the two differ
