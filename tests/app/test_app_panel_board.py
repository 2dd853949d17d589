"""The Leaderboard page with the judge panel (issue 28): the page ranks the panel through the CLI's store
path, so its scores, intervals and each judge's reliability and side bias are ``leaderboard --ranker panel
--format json``'s on the same store (three judges of different reliability and side bias, both presentation
orders; on the graph path the orders are combined, no side bias is fitted and the numbers differ)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
from apphelpers import assert_clean, new_app
from conftest import run_engine

from engine.ingest.shipped import INIT_STEP
from engine.ingest.shipped_counts import INIT_STEP_ARENA_COUNTS
from engine.store.connection import Store
from engine.store.init_log import record_init_step
from tests.test_panel import TRUTH_B, TRUTH_P, draw_verdicts

NAMES = ["alpha", "beta", "gamma", "delta"]


def panel_db(tmp_path):
    """A store holding one dataset ``pan``: 900 verdicts of three judges, each shown in a random order."""
    rng = np.random.default_rng(11)
    rows = draw_verdicts(rng, np.array([1.0, 0.3, -0.2, -1.1]), TRUTH_P, TRUTH_B, 900, tie_share=0.1)
    a_first = rng.random(len(rows)) < 0.5
    first_won = rows["out"] == "f"
    frame = pd.DataFrame({
        "prompt_id": [f"p{k % 60}" for k in range(len(rows))], "judge": [f"judge{j}" for j in rows["judge"]],
        "model_a": [NAMES[k] for k in np.where(a_first, rows["first"], rows["second"])],
        "model_b": [NAMES[k] for k in np.where(a_first, rows["second"], rows["first"])],
        "winner": np.where(rows["out"] == "t", "tie", np.where(first_won == a_first, "A", "B")),
        "order": np.where(a_first, "AB", "BA"),
    })
    path = tmp_path / "v.csv"
    frame.to_csv(path, index=False)
    db = tmp_path / "lens.duckdb"
    with Store(db) as store:  # only this dataset: the shipped ones are marked done, not imported
        record_init_step(store, INIT_STEP, "test: no default dataset")
        record_init_step(store, INIT_STEP_ARENA_COUNTS, "test: no arena counts")
    run_engine(["--db", str(db), "import", str(path), "--dataset", "pan"], check=True)
    return db


def test_leaderboard_page_shows_the_cli_panel(tmp_path, monkeypatch):
    db = panel_db(tmp_path)
    cli = json.loads(run_engine(["--db", str(db), "leaderboard", "--dataset", "pan", "--ranker", "panel",
                                 "--format", "json"], check=True).stdout)
    want = pd.DataFrame(cli["table"]).set_index("model")
    want_judges = pd.DataFrame(cli["details"]["judges"]).set_index("judge")

    at = new_app(db, monkeypatch, query={"dataset": "pan", "ranker": "panel"})
    assert_clean(at)
    board = at.dataframe[0].value.set_index("model")
    assert list(board.index) == list(want.index)
    np.testing.assert_allclose(board["score"].to_numpy(float), want["score"].to_numpy(float),
                               rtol=0, atol=1e-9)
    # the interval as shown: +(ci_high - score) / -(score - ci_low) of the CLI's numbers, 3 decimals
    plus, minus = want["ci_high"] - want["score"], want["score"] - want["ci_low"]
    assert list(board["interval"]) == [f"+{p:.3f} / -{m:.3f}" for p, m in zip(plus, minus, strict=True)]
    judges = next(d.value for d in at.dataframe if "side_bias" in d.value.columns).set_index("judge")
    assert list(judges.index) == ["judge0", "judge1", "judge2"]
    for col in ("reliability", "reliability_low", "reliability_high", "side_bias", "side_bias_low",
                "side_bias_high"):
        np.testing.assert_allclose(judges[col].to_numpy(float), want_judges.loc[judges.index, col]
                                   .to_numpy(float), rtol=0, atol=1e-9)
    # the side biases the data were drawn with are told apart (the graph path fits none)
    assert judges.loc["judge1", "side_bias"] > 0.5 > judges.loc["judge2", "side_bias_high"]
    assert [m.value for m in at.metric if m.label == "Verdicts"] == [str(cli["params"]["n_verdicts_valid"])]
