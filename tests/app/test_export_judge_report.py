"""The results ZIP the Data page exports (issue 28): its judge report section is what
``diagnose --table judges --format json`` prints for the same store (every judge against the human
reference of vicuna80), and its CSV the same rows."""

from __future__ import annotations

import io
import json
import shutil
import zipfile

import pandas as pd
from conftest import run_engine

from engine.views.exports import restore_csv_cell


def test_results_zip_holds_the_cli_judge_report(shipped_db, tmp_path, monkeypatch):
    import streamlit as st

    db = tmp_path / "lens.duckdb"
    shutil.copyfile(shipped_db, db)  # the app's results may cache into its store
    cli = run_engine(["--db", str(db), "diagnose", "--dataset", "vicuna80", "--table", "judges", "--format",
                      "json"], check=True)
    want = pd.DataFrame(json.loads(cli.stdout))

    monkeypatch.setenv("LENS_DB", str(db))
    st.cache_data.clear()
    st.cache_resource.clear()
    from app_pages._lens import get_store, results_zip_for
    from engine.views.appstate import CacheKey

    key = CacheKey.of(get_store(), "vicuna80", None, None)
    with zipfile.ZipFile(io.BytesIO(results_zip_for(key, "bt", 1.0, "test"))) as zf:
        doc = json.loads(zf.read("judge_report.json"))["judge_report"]
        as_csv = pd.read_csv(io.BytesIO(zf.read("judge_report.csv")), keep_default_na=True).map(
            lambda c: restore_csv_cell(c) if isinstance(c, str) else c)
        assert "judge_report.json" in zf.read("README.txt").decode()
    got = pd.DataFrame(doc["judges"])
    assert doc["reference"] == "human" and doc["dataset"] == "vicuna80"
    assert list(got.columns) == list(want.columns) and list(got["judge"]) == list(want["judge"])
    pd.testing.assert_frame_equal(got, want, check_dtype=False, rtol=1e-9, atol=1e-12)
    # the CSV carries every digit; the CLI's JSON rounds to 10 decimals
    pd.testing.assert_frame_equal(as_csv, want, check_dtype=False, rtol=1e-9, atol=1e-10)
    st.cache_resource.clear()  # closes nothing of the copy the test owns; the next app test opens its own
