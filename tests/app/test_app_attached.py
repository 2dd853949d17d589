"""A dataset attached in place (Parquet read where it is) in the app: the sidebar offers the judges and
categories its files hold (counted over the files, engine/store/summaries.py), and the Leaderboard of one of
its judges is the command line's board for that judge."""

from __future__ import annotations

import io
import shutil

import numpy as np
import pandas as pd
from apphelpers import assert_clean, new_app
from conftest import run_engine

MODELS = ["m0", "m1", "m2", "m3"]


def attached_files(folder) -> pd.DataFrame:
    """Two judges of different coverage (j1 compares every model, j2 three of them), two categories."""
    rng = np.random.default_rng(48)
    rows = []
    for p in range(24):
        for judge, models in (("j1", MODELS), ("j2", MODELS[:3])):
            for i, a in enumerate(models):
                for b in models[i + 1:]:
                    rows.append({"prompt_id": f"q{p}", "model_a": a, "model_b": b, "judge": judge,
                                 "category": ("math", "writing")[p % 2],
                                 "winner": rng.choice(["A", "B", "tie"], p=[0.5, 0.35, 0.15])})
    frame = pd.DataFrame(rows)
    folder.mkdir()
    frame.to_parquet(folder / "part-0.parquet")
    return frame


def test_an_attached_dataset_offers_its_judges_and_ranks_one_as_the_cli_does(tmp_path, monkeypatch,
                                                                                migrated_empty_db):
    db = tmp_path / "lens.duckdb"
    shutil.copyfile(migrated_empty_db, db)
    frame = attached_files(tmp_path / "files")
    run_engine(["--db", str(db), "datasets", "attach", "att", str(tmp_path / "files" / "*.parquet")],
               check=True)
    at = new_app(db, monkeypatch, query={"dataset": "att", "judge": "j2"})
    assert_clean(at)
    judge_box = next(s for s in at.selectbox if s.label == "Judge")
    assert list(judge_box.options)[1:] == sorted(frame["judge"].unique())  # after "all judges"
    assert judge_box.value == "j2"
    category_box = next(s for s in at.selectbox if s.label == "Category")
    assert list(category_box.options)[1:] == sorted(frame["category"].unique())
    page = at.dataframe[0].value
    cli = pd.read_csv(io.StringIO(run_engine(["--db", str(db), "leaderboard", "--dataset", "att", "--judge",
                                              "j2", "--format", "csv"], check=True).stdout))
    assert page["model"].tolist() == cli["model"].tolist() == ["m0", "m1", "m2"]
    np.testing.assert_allclose(page["score"].to_numpy(dtype=float), cli["score"].to_numpy(dtype=float),
                               rtol=0, atol=1e-9)


def test_an_attached_dataset_listed_while_its_files_were_away_is_counted_once_they_are_back(
        tmp_path, monkeypatch, migrated_empty_db):
    """Its summary is counted at the next listing once its version moves (here: a store of 0.20.7 has none
    with ``battles``); while its files cannot be read it is listed with nothing counted, and its version does
    not move when they come back, so the app keeps neither that listing nor those choices: the next run
    shows the files' counts and judges."""
    from engine.store.connection import Store

    db = tmp_path / "lens.duckdb"
    shutil.copyfile(migrated_empty_db, db)
    frame = attached_files(tmp_path / "files")
    run_engine(["--db", str(db), "datasets", "attach", "att", str(tmp_path / "files" / "*.parquet")],
               check=True)
    with Store(db) as store:
        store.cursor().execute("DELETE FROM dataset_summaries")
    (tmp_path / "files").rename(tmp_path / "away")
    at = new_app(db, monkeypatch, "app_pages/6_data.py", {"dataset": "att"})
    listed = at.dataframe[0].value.set_index("name")
    assert int(listed.loc["att", "verdicts"]) == 0
    assert list(next(s for s in at.selectbox if s.label == "Judge").options)[1:] == []
    (tmp_path / "away").rename(tmp_path / "files")
    at.run()
    listed = at.dataframe[0].value.set_index("name")
    assert int(listed.loc["att", "verdicts"]) == len(frame)
    assert list(next(s for s in at.selectbox if s.label == "Judge").options)[1:] == ["j1", "j2"]
