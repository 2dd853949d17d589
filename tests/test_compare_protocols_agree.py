"""Issue 25, friction 8: ``compare`` and the Table-2 protocols gave two numbers for one quantity (vicuna80,
gpt-4, coding, against the Arena coding ranking: 0.114 vs 0.143). Both fitted Bradley-Terry, but the
protocols first dropped the three models the Arena does not rate (the guanacos), so their six rated
models were ordered by a fit on fewer verdicts. Now every path ranks every model (the leaderboard's
ranking) and compares the rated models' order in it; the trunc cell whose draw is the whole pool is then
the compare number exactly."""

from __future__ import annotations

import io

import pandas as pd
import pytest
from conftest import run_engine


def test_compare_and_the_trunc_cell_are_one_number_on_vicuna80_gpt4_coding(shipped_db):
    db = ["--db", shipped_db]
    done = run_engine([*db, "compare", "--judge", "gpt-4", "--category", "coding", "--reference", "arena",
                       "--reference-category", "coding", "--format", "csv"], check=True)
    compare = pd.read_csv(io.StringIO(done.stdout)).iloc[0]
    assert compare["n_shared"] == 6 and compare["n_graphs"] == 7
    done = run_engine([*db, "experiment", "baselines", "--reference", "arena", "--judge", "gpt-4",
                       "--protocols", "trunc", "--resamples", "3", "--format", "csv"], check=True)
    cells = pd.read_csv(io.StringIO(done.stdout))
    coding = cells[cells["category"] == "coding"].set_index("distance")
    assert coding["n_draw"].eq(7).all() and coding["degenerate"].all()  # every draw: the 7 coding graphs
    for ours, theirs in (("spearman", "spearman_distance"), ("kendall", "kendall"), ("footrule", "footrule"),
                         ("chebyshev", "chebyshev")):
        assert coding.loc[ours, "mean"] == pytest.approx(compare[theirs], abs=1e-12), ours
    assert compare["spearman_distance"] == pytest.approx(4 / 35, abs=1e-12)  # 0.114: Σd² = 8 over 6 models
