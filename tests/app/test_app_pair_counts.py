"""The app on a pair-count dataset (issue 25, point 7): the Leaderboard ranks it from its counts, the
Cycles page shows its majority tournament and then says in one sentence that there are no prompts, and
every per-prompt page says that same sentence instead of failing.

The expected numbers come another way: the ranking from a plain L-BFGS half-tie Bradley-Terry fit
(tests/test_shipped_counts.py) and the majority facts of a rock-paper-scissors aggregate worked out by
hand in the test."""

from __future__ import annotations

import pandas as pd
from apphelpers import new_app, unescape_md

from engine.ingest.pair_count_files import import_pair_counts
from engine.ingest.shipped import INIT_STEP
from engine.ingest.shipped_counts import INIT_STEP_ARENA_COUNTS
from engine.store.connection import Store
from engine.store.init_log import record_init_step
from tests.test_shipped_counts import _half_tie_bt

ROWS = [("rock", "scissors", 30, 10, 0, 0), ("scissors", "paper", 25, 20, 5, 1),
        ("paper", "rock", 12, 8, 2, 0), ("rock", "weak", 9, 1, 0, 0), ("paper", "weak", 9, 0, 1, 0),
        ("scissors", "weak", 5, 4, 0, 2)]


def counts_app(tmp_path, monkeypatch):
    frame = pd.DataFrame(ROWS, columns=["model_a", "model_b", "wins_a", "wins_b", "ties", "both_bad"])
    path = tmp_path / "rps.csv"
    frame.to_csv(path, index=False)
    db = tmp_path / "lens.duckdb"
    with Store(db) as store:  # only this dataset: the shipped ones are marked done, not imported
        record_init_step(store, INIT_STEP, "test: no default dataset")
        record_init_step(store, INIT_STEP_ARENA_COUNTS, "test: no arena counts")
        import_pair_counts(store, [path], "rps")
    at = new_app(db, monkeypatch, query={"dataset": "rps"})
    return at, frame


def test_pages_on_pair_counts(tmp_path, monkeypatch):
    at, frame = counts_app(tmp_path, monkeypatch)
    at = at.switch_page("app_pages/1_leaderboard.py").run()
    assert [e.message for e in at.exception] == [] and [e.value for e in at.error] == []
    board = at.dataframe[0].value
    want = _half_tie_bt(frame).sort_values(ascending=False)
    assert list(board["model"]) == list(want.index)
    battles = str(int(frame.iloc[:, 2:].sum().sum()))
    assert [m.value for m in at.metric if m.label == "Battles"] == [battles]

    at = at.switch_page("app_pages/3_cycles.py").run()
    assert [e.message for e in at.exception] == [] and [e.value for e in at.error] == []
    text = unescape_md(" ".join(m.value for m in at.markdown))
    assert "1 Condorcet 3" in text and "Condorcet loser: weak" in text
    assert any("holds pair counts" in unescape_md(i.value) for i in at.info)
    cycles = at.dataframe[1].value
    assert {frozenset(r) for r in cycles[["a", "b", "c"]].itertuples(index=False)} == {
        frozenset({"rock", "paper", "scissors"})}

    for page in ("2_truncation", "4_inspector", "5_judges"):
        at = at.switch_page(f"app_pages/{page}.py").run()
        assert [e.message for e in at.exception] == [], page
        assert len(at.error) == 1 and "holds pair counts" in unescape_md(at.error[0].value), page


def test_data_page_uploads_pair_counts(tmp_path, monkeypatch):
    """A pair-count CSV uploaded on the Data page is stored as counts (its totals as the file's), and the
    Leaderboard then ranks it."""
    at, frame = counts_app(tmp_path, monkeypatch)
    at = at.switch_page("app_pages/6_data.py").run()
    body = frame.to_csv(index=False).encode()
    at.file_uploader(key="data_upload").set_value(("arena counts.csv", body, "text/csv")).run()
    assert [e.message for e in at.exception] == [] and [e.value for e in at.error] == []
    info = unescape_md(" ".join(i.value for i in at.info))
    battles = int(frame.iloc[:, 2:].sum().sum())
    assert f"6 pairs of 4 models, {battles} battles" in info
    at.text_input(key="data_name").input("uploaded").run()
    at.button(key="data_import_counts").click().run()
    assert [e.message for e in at.exception] == [] and [e.value for e in at.error] == []
    with Store(tmp_path / "lens.duckdb", read_only=True) as store:
        got = store.cursor().execute("SELECT sum(wins_a + wins_b + ties + both_bad) FROM pair_counts "
                                     "WHERE dataset = 'uploaded'").fetchone()[0]
    assert int(got) == battles
