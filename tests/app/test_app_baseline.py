"""The Leaderboard page's win rate against a baseline (Arena-Hard's score): a select box of the board's
models; once one is chosen, a table of each model's win rate against it, equal to the closed form of
Arena-Hard's counting on a star design (every battle against the baseline: the weighted share of
points won, a >> three times, a tie half)."""

from __future__ import annotations

import json
import shutil

import pytest
from apphelpers import assert_clean, new_app
from test_baseline import arena_hard_records, closed_form, write_jsonl


def test_choosing_a_baseline_shows_arena_hards_win_rates(shipped_db, tmp_path, monkeypatch):
    from engine.ingest.importer import import_files
    from engine.store.connection import Store

    db = tmp_path / "lens.duckdb"
    shutil.copyfile(shipped_db, db)
    recs = arena_hard_records(11, n_q=25)
    store = Store(db)
    try:
        import_files(store, [write_jsonl(tmp_path / "j.jsonl", recs)], "ah")
    finally:
        store.close()
    at = new_app(db, monkeypatch, query={"dataset": "ah"})
    assert_clean(at)
    n_tables = len(at.dataframe)
    # every battle is against "base" (Arena-Hard's star design): the box opens on it, its table shown
    assert at.selectbox(key="lb_baseline").value == "base"
    at.selectbox(key="lb_baseline").set_value("(none)").run()
    assert_clean(at)
    assert len(at.dataframe) == n_tables - 1  # no baseline, no win-rate table
    at.selectbox(key="lb_baseline").set_value("base").run()
    assert_clean(at)
    assert len(at.dataframe) == n_tables
    shown = next(d.value for d in at.dataframe if "win_rate_pct" in d.value.columns).set_index("model")
    want = closed_form(recs, 3)
    for m in ("m1", "m2", "m3"):
        assert shown.loc[m, "win_rate_pct"] == pytest.approx(100 * want[m], abs=1e-7)
    assert shown.loc["base", "win_rate_pct"] == 50.0
    assert list(shown["win_rate_pct"]) == sorted(shown["win_rate_pct"], reverse=True)
    assert all(str(x).startswith("-") and " / +" in str(x) for x in shown.loc[["m1", "m2", "m3"], "interval"])
    assert shown.loc["base", "interval"] == ""  # 50 % by definition: no "-0.0 / +0.0"
    assert any("counts 3 times" in c.value for c in at.caption)
    json.dumps(list(shown.index))  # plain model names


def test_no_baseline_choice_for_a_ranker_without_win_probabilities(shipped_db, monkeypatch):
    app = new_app(shipped_db, monkeypatch)
    boxes = [s for s in app.selectbox if s.key == "lb_baseline"]  # BT (the default) has one
    assert boxes and boxes[0].value == "(none)"  # vicuna80 compares every pair: no model is in every battle
    app.selectbox(key="ranker").set_value("winrate").run()
    assert_clean(app)
    assert not [s for s in app.selectbox if s.key == "lb_baseline"]
