"""The judge report's length style coefficient (issue 28, point 3): per judge, ``style_beta_tokens`` of
``diagnose --table judges`` is the length feature's beta that ``leaderboard --judge J --style-control``
prints for that judge (vicuna80 holds the answer texts); on a dataset without texts the column is empty."""

from __future__ import annotations

import json
import math
import shutil

import pandas as pd
from conftest import run_engine


def test_style_beta_per_judge_is_the_style_controlled_leaderboards(shipped_db, tmp_path):
    db = tmp_path / "lens.duckdb"
    shutil.copyfile(shipped_db, db)  # the style counts may be cached into the store
    report = pd.DataFrame(json.loads(run_engine(
        ["--db", str(db), "diagnose", "--dataset", "vicuna80", "--table", "judges", "--format", "json"],
        check=True).stdout)).set_index("judge")
    assert len(report) == 6
    for judge in ("gpt-4", "human", "vicuna-13b"):
        board = json.loads(run_engine(["--db", str(db), "leaderboard", "--dataset", "vicuna80", "--judge",
                                       judge, "--style-control", "--format", "json"], check=True).stdout)
        want = board["style"]["features"]["tokens"]["beta"]
        assert math.isclose(report.loc[judge, "style_beta_tokens"], want, rel_tol=1e-9, abs_tol=1e-10), judge
    # judges differ (one pooled fit copied into every row would not)
    assert report["style_beta_tokens"].round(6).nunique() == 6


def test_style_beta_empty_without_texts(tmp_path):
    rows = pd.DataFrame({"prompt_id": ["p1", "p1", "p2", "p2"], "judge": ["j1", "j2", "j1", "j2"],
                         "model_a": ["x", "x", "y", "y"], "model_b": ["y", "y", "z", "z"],
                         "winner": ["A", "B", "A", "tie"]})
    path = tmp_path / "v.csv"
    rows.to_csv(path, index=False)
    db = tmp_path / "s.duckdb"
    run_engine(["--db", str(db), "import", str(path), "--dataset", "d"], check=True)
    got = pd.DataFrame(json.loads(run_engine(["--db", str(db), "diagnose", "--dataset", "d", "--table",
                                              "judges", "--format", "json"], check=True).stdout))
    assert list(got["judge"]) == ["j1", "j2"] and got["style_beta_tokens"].isna().all()
