"""The plain board built and printed without pandas is the board pandas built and printed (issue 26,
point 5): ``BoardRows`` against the DataFrame assembly it replaced, ``RankResult``'s array answers
against its Series, the text written from arrays against ``write_frame`` of the DataFrame, on data that
separates them: several judges, both presentation orders, repeated battles, tied ranks, unsorted and
escaped model names, a sparse 70-model log, two components, rankers with their own notes."""

from __future__ import annotations

import ast
import inspect
import io
import shutil

import numpy as np
import pandas as pd
import pytest

from engine.cli._common import write_frame, write_plain_table
from engine.cli.leaderboard import left_out_columns, printed_table, write_printed_table
from engine.rankers.base import ModelScores, RankResult, series
from engine.rankers.objects import RANKER_OBJECTS
from engine.rankers.votes import votes as make_votes
from engine.ranking.board import TABLE_COLUMNS, BoardRows, BoardSpec, Missing
from engine.ranking.count_board import leaderboard_from_votes
from engine.ranking.leaderboard import leaderboard
from engine.ranking.vote_query import frame_vote_rows
from engine.store.connection import Store
from tests.test_count_query import battle_log


def old_frame(columns: dict) -> pd.DataFrame:
    """The count board's table as it was assembled before BoardRows: a DataFrame of the columns, the
    empty interval columns as <NA> arrays, sorted by (rank, model), TABLE_COLUMNS, a fresh index."""
    n = len(columns["model"])
    plain = {k: (pd.array([pd.NA] * n, dtype=v.dtype) if isinstance(v, Missing) else v)
             for k, v in columns.items()}
    table = pd.DataFrame({k: plain[k] for k in plain if k != "rank"})
    table["rank"] = plain["rank"]
    return table.sort_values(["rank", "model"], kind="stable")[list(TABLE_COLUMNS)].reset_index(drop=True)


def random_columns(rng: np.random.Generator, n: int, missing_rank: bool, bootstrap: bool) -> dict:
    models = [f"m{int(i)}" for i in rng.permutation(n)]  # names in no sorted order
    rank = rng.integers(1, max(2, n // 2), n)  # many tied ranks: the model name decides
    if missing_rank:
        rank = rank.astype(np.float64)
        rank[rng.random(n) < 0.3] = np.nan
    cols = {"model": models, "score": rng.normal(size=n), "wins": rng.integers(0, 50, n),
            "losses": rng.integers(0, 50, n), "ties": rng.integers(0, 9, n), "win_rate": rng.random(n),
            "n_graphs_model": rng.integers(1, 9, n), "votes": rng.integers(1, 99, n),
            "n_prompts": rng.integers(1, 9, n), "rank": rank, "component": rng.integers(1, 3, n),
            "ci_low": np.full(n, np.nan), "ci_high": np.full(n, np.nan)}
    if bootstrap:
        cols.update(rank_low=pd.array(rng.integers(1, 5, n), dtype="Int64"),
                    rank_high=pd.array(rng.integers(5, 9, n), dtype="Int64"),
                    rank_ub=pd.array(rng.integers(1, 9, n), dtype="Int64"),
                    ci_note=pd.array(["" if x else "not estimable" for x in rng.random(n) < 0.8],
                                     dtype="string"))
    else:
        cols.update(rank_low=Missing("Int64"), rank_high=Missing("Int64"), rank_ub=Missing("Int64"),
                    ci_note=Missing("string"))
    return cols


@pytest.mark.parametrize("seed", range(12))
def test_board_rows_frame_is_the_frame_assembled_by_pandas(seed):
    rng = np.random.default_rng(seed)
    cols = random_columns(rng, int(rng.integers(1, 40)), missing_rank=seed % 3 == 1, bootstrap=seed % 2 == 0)
    pd.testing.assert_frame_equal(BoardRows.ranked(cols).frame(), old_frame(cols), check_exact=True)


@pytest.mark.parametrize("seed", range(6))
def test_rank_result_arrays_answer_as_its_series(seed):
    """ModelScores' scores_of / ranks_of == the Series' reindex values, with near-equal scores (one rank
    within the tolerance), NaN scores (ranked last), models asked in another order, a model not scored."""
    rng = np.random.default_rng(seed)
    n = 30
    models = tuple(f"x{i}" for i in rng.permutation(n))
    values = np.round(rng.normal(size=n), 1)  # exact ties
    values[:5] += rng.uniform(-1e-10, 1e-10, 5)  # ties within TIE_RTOL
    values[rng.random(n) < 0.1] = np.nan
    arrays, frame = RankResult("bt", ModelScores(models, values)), RankResult("bt", series(models, values))
    asked = [models[i] for i in rng.permutation(n)]
    pd.testing.assert_series_equal(arrays.scores, frame.scores)
    assert arrays.models == frame.models == models
    np.testing.assert_array_equal(arrays.ranks_of(asked), frame.ranks.reindex(asked).to_numpy())
    assert arrays.ranks_of(asked).dtype == np.int64
    with_unknown = [*asked[:3], "never-scored"]
    for mine, theirs in ((arrays.scores_of(with_unknown), frame.scores.reindex(with_unknown).to_numpy()),
                         (arrays.ranks_of(with_unknown), frame.ranks.reindex(with_unknown).to_numpy())):
        np.testing.assert_array_equal(mine, theirs)


def logs() -> dict[str, pd.DataFrame]:
    """Battle logs whose boards differ in every printed column's kind and width."""
    judges_orders = battle_log(21, n=1500, n_models=9, orders=("AB", "BA", None), n_judges=3)
    sparse70 = battle_log(22, n=900, n_models=70)
    split = pd.concat([battle_log(23, n=300, n_models=5),
                       battle_log(24, n=300, n_models=4).assign(model_a=lambda f: "z" + f.model_a,
                                                                model_b=lambda f: "z" + f.model_b)],
                      ignore_index=True)  # two components: the component column is printed
    escaped = battle_log(25, n=400, n_models=4).replace({"model_a": {"m1": "m1\x1b[31m"},
                                                         "model_b": {"m1": "m1\x1b[31m"}})
    return {"judges_orders": judges_orders, "sparse70": sparse70, "split": split, "escaped": escaped}


def printed(write) -> str:
    buf = io.StringIO()
    write(buf)
    return buf.getvalue()


@pytest.fixture(scope="module")
def log_votes():
    return {name: make_votes(frame_vote_rows(log), "plurality") for name, log in logs().items()}


@pytest.mark.parametrize("ranker", ["bt", "davidson", "winrate", "elo", "copeland", "rank-centrality"])
def test_plain_board_text_from_arrays_is_the_dataframe_text(ranker, log_votes, monkeypatch):
    for name, votes in log_votes.items():
        board = leaderboard_from_votes(votes, BoardSpec(ranker=ranker))
        assert isinstance(board.rows, BoardRows), name
        names = [c for c in board.rows.columns if c not in left_out_columns(board, board.rows.columns)]
        expected = printed(lambda out, b=board: write_frame(printed_table(b), "table", out=out))
        buf = io.StringIO()
        assert write_plain_table(names, [board.rows.columns[c] for c in names], out=buf), name  # from arrays
        got = buf.getvalue()
        assert got == expected, name
        monkeypatch.setattr("sys.stdout", io.StringIO())
        write_printed_table(board, "table")
        assert __import__("sys").stdout.getvalue() == expected, name
        if name == "split":
            assert "component" in names
        if name == "escaped":
            assert "\\x1b" in got and "\x1b" not in got


def test_boards_with_interval_columns_print_as_before(monkeypatch):
    """A bootstrap or sandwich board holds pandas arrays: its text is pandas' (write_printed_table hands it
    to write_frame), in every format."""
    log = battle_log(26, n=800, n_models=6)
    for spec in (BoardSpec(bootstrap=5), BoardSpec(ci="sandwich"), BoardSpec(ranker="winrate", bootstrap=4)):
        board = leaderboard_from_votes(make_votes(frame_vote_rows(log), "plurality"), spec)
        for fmt in ("table", "csv", "json"):
            expected = printed(lambda out, b=board, f=fmt: write_frame(printed_table(b), f, out=out))
            monkeypatch.setattr("sys.stdout", io.StringIO())
            write_printed_table(board, fmt)
            assert __import__("sys").stdout.getvalue() == expected, (spec, fmt)


def test_shipped_boards_print_from_arrays_as_from_the_frame(shipped_db, tmp_path, monkeypatch):
    """vicuna80: six judges pooled and one judge, both presentation orders (the general vote path)."""
    path = tmp_path / "lens.duckdb"
    shutil.copyfile(shipped_db, path)
    store = Store(path)
    try:
        for judge, ranker in ((None, "bt"), ("gpt-4", "davidson"), (None, "elo")):
            board = leaderboard(store, "vicuna80", BoardSpec(ranker=ranker), judge=judge)
            assert isinstance(board.rows, BoardRows)
            expected = printed(lambda out, b=board: write_frame(printed_table(b), "table", out=out))
            monkeypatch.setattr("sys.stdout", io.StringIO())
            write_printed_table(board, "table")
            assert __import__("sys").stdout.getvalue() == expected, (judge, ranker)
            assert "gpt4" in expected
    finally:
        store.close()


def test_rankers_whose_notes_read_the_table_say_so():
    """A ranker's notes get the board's DataFrame only when it says it reads it (``notes_read_table``):
    a notes method naming its ``table`` argument without the flag would lose its participation note."""
    for name, obj in RANKER_OBJECTS.items():
        fn = ast.parse(inspect.getsource(type(obj).notes).strip()).body[0]
        reads = any(isinstance(n, ast.Name) and n.id == "table" for n in ast.walk(fn))
        assert reads == obj.notes_read_table, name
