"""The Judges page's judge report section (issue 28): the table on the page is the engine's report of the
same store, with its JSON download."""

from __future__ import annotations

import pandas as pd
from apphelpers import app_at, assert_clean  # noqa: F401

from engine.diagnostics.judge_report import judge_report, store_lengths


def test_judges_page_shows_the_judge_report(app_at, shipped_store):  # noqa: F811 - the fixture
    at = app_at("app_pages/5_judges.py")
    assert_clean(at)
    assert any(h.value == "Judge report" for h in at.subheader)
    shown = next(d.value for d in at.dataframe if "self_preference" in d.value.columns)
    assert any("kappa_as_shown" in d.value.columns for d in at.dataframe)
    want = judge_report(shipped_store.verdicts("vicuna80"), lengths=store_lengths(shipped_store, "vicuna80"))
    assert list(shown["judge"]) == list(want["judge"])
    got = pd.to_numeric(shown["self_preference"], errors="coerce").to_numpy(float)
    expected = want["self_preference"].astype(float).to_numpy()
    assert ((abs(got - expected) < 5e-4) | (pd.isna(got) & pd.isna(expected))).all()
    button = next(b for b in at.get("download_button") if "Judge report" in str(b.proto.label))
    assert button is not None
    assert any("reference judge" in c.value for c in at.main.get("caption"))
    # p-values with two significant digits (as the page's position table writes them): 2.1e-105, not 0.000
    p_shown = next(d.value for d in at.dataframe if "mcnemar_p_ordinal" in d.value.columns)
    p_want = ["—" if pd.isna(v) else format(float(v), ".2g") for v in want["mcnemar_p_ordinal"]]
    assert list(p_shown["mcnemar_p_ordinal"]) == p_want and any("e-" in v for v in p_want)
