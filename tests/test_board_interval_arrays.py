"""The count board's bootstrap columns built from arrays (``interval_columns`` with
``BootstrapResult.interval_bounds`` / ``not_estimable_reasons`` and ``board.Typed``) against the pandas
expression they replaced (``scores_ci`` / ``ranks_ci`` / ``not_estimable`` reindexed to the board's
models), column by column with dtypes, and the text printed from them against the DataFrame's text.
Data that separates the paths: several judges and both presentation orders, a sparse 70-model log, two
components, models asked in another order, a model the bootstrap never saw, resamples that cannot be
estimated (B = 1: the pandas path with <NA>)."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest

from engine.cli._common import write_frame
from engine.cli.leaderboard import printed_table, write_printed_table
from engine.rankers.votes import votes as make_votes
from engine.ranking.board import (
    NOT_ESTIMABLE,
    BoardRows,
    BoardSpec,
    Typed,
    frame_columns,
    interval_columns,
    not_estimable_params,
    rank_upper_bound,
)
from engine.ranking.count_board import leaderboard_from_votes
from engine.ranking.vote_query import frame_vote_rows
from tests.test_plain_board import logs


def old_interval_columns(boot, models: list[str]) -> dict:
    """The columns as ``interval_columns`` built them with pandas before (its code, unchanged)."""
    sci, rci = boot.scores_ci.reindex(models), boot.ranks_ci.reindex(models)
    why = boot.not_estimable.reindex(models).fillna("").to_numpy()
    low, high = sci["low"].to_numpy(np.float64), sci["high"].to_numpy(np.float64)
    return {
        "ci_low": low, "ci_high": high,
        "rank_low": rci["low"].to_numpy(), "rank_high": rci["high"].to_numpy(),
        "rank_ub": pd.array(rank_upper_bound(low, high), dtype="Int64"),
        "ci_note": pd.array([NOT_ESTIMABLE if w else "" for w in why], dtype="string"),
    }


def assert_same_columns(got: dict, want: dict) -> None:
    assert list(got) == list(want)
    for name in want:
        pd.testing.assert_series_equal(pd.Series(got[name]), pd.Series(want[name]), check_exact=True,
                                       obj=name)


@pytest.fixture(scope="module")
def boards():
    out = {}
    for name, log in logs().items():
        if name == "escaped":  # its text is test_plain_board's; the columns are the same kind as split's
            continue
        votes = make_votes(frame_vote_rows(log), "plurality")
        for ranker, B in (("bt", 6), ("elo", 5), ("copeland", 1)):
            spec = BoardSpec(ranker=ranker, bootstrap=B, seed=3)
            out[name, ranker, B] = leaderboard_from_votes(votes, spec)
    return out


def test_columns_from_arrays_are_the_pandas_columns(boards):
    arrays_seen = 0
    for key, board in boards.items():
        boot = board.bootstrap
        models = list(boot.models)
        rng = np.random.default_rng(len(models))
        for asked in (models, [models[i] for i in rng.permutation(len(models))], [*models[:3], "never-seen"]):
            cols = interval_columns(boot, asked)
            arrays_seen += isinstance(cols["rank_ub"], Typed)
            assert_same_columns(frame_columns(cols, len(asked)), old_interval_columns(boot, asked))
        assert not_estimable_params(boot) == {m: w for m, w in boot.not_estimable.items() if w}, key
    assert arrays_seen >= 2 * 6  # the array path ran on every estimable board (B > 1), twice each


def test_the_board_frame_and_text_are_as_before(boards, monkeypatch):
    """The board's DataFrame holds the old pandas dtypes (Int64, string) and the printed text, from the
    arrays, is the DataFrame's in every format; B = 1 cannot be estimated and keeps <NA> (pandas)."""
    for key, board in boards.items():
        assert isinstance(board.rows, BoardRows)
        table = board.table
        assert str(table["rank_ub"].dtype) == "Int64" and str(table["ci_note"].dtype) == "string", key
        if key[2] == 1:
            assert table["rank_low"].isna().all() and (table["ci_note"] == NOT_ESTIMABLE).all(), key
        else:
            assert table["rank_low"].dtype == np.int64 and (table["ci_note"] == "").all(), key
            sci = board.bootstrap.scores_ci.reindex(table["model"])
            np.testing.assert_array_equal(table["ci_low"].to_numpy(), sci["low"].to_numpy())
            ub = rank_upper_bound(table["ci_low"].to_numpy(), table["ci_high"].to_numpy())  # row by row
            np.testing.assert_array_equal(table["rank_ub"].to_numpy(np.int64), ub)
        for fmt in ("table", "csv", "json"):
            buf = io.StringIO()
            write_frame(printed_table(board), fmt, out=buf)
            monkeypatch.setattr("sys.stdout", io.StringIO())
            write_printed_table(board, fmt)
            assert __import__("sys").stdout.getvalue() == buf.getvalue(), (key, fmt)
