"""Audit 37: ``diagnose`` with ``--judge`` on the tables that compare each judge with a reference judge.

``--judge gpt-4 --reference human`` read gpt-4's verdicts only, so the agreement table compared gpt-4 with
no human verdict (0 items, NaN), the overview lost its reference columns and the judge report said the
dataset had "no judge named human". A judge's row of these tables depends on its own verdicts and the
reference's only, so the filtered row must equal that judge's row of the unfiltered table (the second
path: every judge read, no filter). A one-judge selection's empty agreement table now says why.
"""

from __future__ import annotations

import io

import pandas as pd
import pytest
from cli_inprocess import run_engine


def table(db, *args: str) -> tuple[pd.DataFrame, str]:
    """``python -m engine --db DB diagnose --dataset vicuna80 ARGS --format csv`` (in this process)."""
    done = run_engine(["--db", str(db), "diagnose", "--dataset", "vicuna80", *args, "--format", "csv",
                       "--no-cache"], check=True)
    return pd.read_csv(io.StringIO(done.stdout)), done.stderr


@pytest.mark.parametrize("name, key, extra", [
    ("agreement", "judge_1", ["--reference", "human"]),
    ("overview", "judge", []),
    ("judges", "judge", []),
])
def test_a_judge_filter_keeps_the_reference_of_the_comparison(shipped_db, name, key, extra):
    every, _ = table(shipped_db, "--table", name, *extra)
    for judges in (["gpt-4"], ["claude", "vicuna-13b"]):
        picked, err = table(shipped_db, "--table", name, *extra, *[a for j in judges for a in ("--judge", j)])
        want = every[every[key].isin(judges)].reset_index(drop=True)
        pd.testing.assert_frame_equal(picked, want, check_exact=True, check_dtype=False)  # NaN rows: float
        assert "no judge named human" not in err


def test_one_judge_agreement_says_why_it_is_empty(shipped_db):
    got, err = table(shipped_db, "--table", "agreement", "--judge", "gpt-4")
    assert got.empty
    assert err.startswith("note: The selection holds a single judge (gpt-4): agreement and Cohen's κ compare "
                          "two judges")
    got, err = table(shipped_db, "--table", "agreement", "--judge", "gpt-4", "--judge", "claude")
    assert len(got) == 1 and err == ""
