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


def test_compare_and_the_whole_pool_cells_are_one_number_on_vicuna80_gpt4_coding(shipped_db):
    """Trunc25→20 (BT) and ScoreWin40 (Copeland of the majority graph) draw the whole 7-graph coding pool
    every time, so each cell is compare's number for the same ranker, in all four distances."""
    db = ["--db", shipped_db]
    done = run_engine([*db, "compare", "--judge", "gpt-4", "--category", "coding", "--reference", "arena",
                       "--reference-category", "coding", "--ranker", "bt", "--ranker", "scorewin",
                       "--format", "csv"], check=True)
    compare = pd.read_csv(io.StringIO(done.stdout)).set_index("ranker")
    assert (compare["n_shared"] == 6).all() and (compare["n_graphs"] == 7).all()
    done = run_engine([*db, "experiment", "baselines", "--reference", "arena", "--judge", "gpt-4",
                       "--protocols", "trunc,scorewin", "--resamples", "3", "--format", "csv"], check=True)
    cells = pd.read_csv(io.StringIO(done.stdout))
    for protocol, ranker in (("trunc", "bt"), ("scorewin", "scorewin")):
        mine = (cells["category"] == "coding") & (cells["protocol"] == protocol)
        coding = cells[mine].set_index("distance")
        assert coding["n_draw"].eq(7).all() and coding["degenerate"].all()  # every draw: the 7 graphs
        for ours, theirs in (("spearman", "spearman_distance"), ("kendall", "kendall"),
                             ("footrule", "footrule"), ("chebyshev", "chebyshev")):
            assert coding.loc[ours, "mean"] == pytest.approx(compare.loc[ranker, theirs], abs=1e-12), \
                (protocol, ours)
    assert compare.loc["bt", "spearman_distance"] == pytest.approx(4 / 35, abs=1e-12)  # 0.114: Σd² = 8
