"""The Leaderboard's boards kept in the store (``engine.views.stored_board``): read back bit for bit, only for
the dataset version and key they were stored under, never written to a read-only store or for a version the
dataset has left, and a board the encoding would change is not stored at all (real DuckDB, the shipped
vicuna80)."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from engine.rankers.votes import votes
from engine.ranking.reference import reference_for
from engine.ranking.vote_query import store_vote_rows
from engine.store.connection import Store
from engine.views import stored_board
from engine.views.leaderboard_first import cycle_context, first_board


def board_of(store: Store, judge: str | None, ranker: str, bootstrap: int):
    ref, note = reference_for("vicuna80", None, store)
    return first_board(votes(store_vote_rows(store, "vicuna80", judge=judge)),
                       cycle_context(store, "vicuna80", judge, None), ranker=ranker, bootstrap=bootstrap,
                       seed=0, reference=ref, reference_note=note, extra_params={"judge": judge})


def key(judge, ranker, bootstrap, code="c"):
    return stored_board.board_params("vicuna80", judge, None, ranker, bootstrap, 0, code)


def kept_rows(store: Store) -> list[tuple]:
    return store.cursor().execute("SELECT dataset, version FROM results_cache WHERE kind = ? ORDER BY 1, 2",
                                  [stored_board.KIND]).fetchall()


@pytest.mark.parametrize("judge, ranker, bootstrap", [(None, "bt", 0), ("gpt-4", "elo", 20),
                                                      (None, "davidson", 20)])
def test_a_kept_board_reads_back_bit_for_bit_for_its_version_and_key_only(shipped_db_copy, judge, ranker,
                                                                          bootstrap):
    with Store(shipped_db_copy) as store:
        board = board_of(store, judge, ranker, bootstrap)
        version = store.dataset_version("vicuna80")
        assert stored_board.store_board(store, "vicuna80", version, key(judge, ranker, bootstrap), board)
        back = stored_board.read_board(store, "vicuna80", version, key(judge, ranker, bootstrap))
        assert back is not None
        # every column, dtype, index and value; params and distances with their Python types
        pd.testing.assert_frame_equal(back.table, board.table, check_exact=True, check_index_type=True,
                                      check_column_type=True)
        assert list(back.table.dtypes) == list(board.table.dtypes)
        assert back.table.index.equals(board.table.index)
        assert back.params == board.params and back.distances == board.distances
        assert ([type(v) for v in back.params.values()] == [type(v) for v in board.params.values()])
        assert back.reference_note == board.reference_note
        assert not math.isnan(back.table["score"].iloc[0])
        # another version, ranker, bootstrap or code is another key: nothing read
        assert stored_board.read_board(store, "vicuna80", version + 1, key(judge, ranker, bootstrap)) is None
        assert stored_board.read_board(store, "vicuna80", version, key(judge, "copeland", bootstrap)) is None
        assert stored_board.read_board(store, "vicuna80", version, key(judge, ranker, bootstrap + 1)) is None
        assert stored_board.read_board(store, "vicuna80", version, key(judge, ranker, bootstrap, "d")) is None


def test_a_board_is_not_stored_for_a_version_the_dataset_has_left_nor_in_a_read_only_store(shipped_db_copy):
    """A board computed before a write (here a rename and back: both move the version) is refused; a board of
    the new version is stored and drops the older version's rows; a read-only store is read, never written."""
    from engine.ingest.importer import rename_dataset

    with Store(shipped_db_copy) as store:
        board = board_of(store, None, "bt", 0)
        old = store.dataset_version("vicuna80")
        assert stored_board.store_board(store, "vicuna80", old, key(None, "bt", 0), board)
        rename_dataset(store, "vicuna80", "v80")
        rename_dataset(store, "v80", "vicuna80")
        new = store.dataset_version("vicuna80")
        assert new != old
        assert not stored_board.store_board(store, "vicuna80", old, key(None, "bt", 1), board)
        assert stored_board.read_board(store, "vicuna80", new, key(None, "bt", 0)) is None
        assert stored_board.store_board(store, "vicuna80", new, key(None, "bt", 0), board)
        assert kept_rows(store) == [("vicuna80", new)]
    with Store(shipped_db_copy, read_only=True) as store:
        assert not stored_board.store_board(store, "vicuna80", new, key(None, "elo", 0), board)
        assert stored_board.read_board(store, "vicuna80", new, key(None, "bt", 0)) is not None
    with Store(shipped_db_copy) as store:
        assert kept_rows(store) == [("vicuna80", new)]
        assert not stored_board.has_board(store, "vicuna80", new, key(None, "elo", 0))


def test_a_board_the_encoding_would_change_is_not_stored_and_a_foreign_row_reads_as_none(shipped_store):
    board = board_of(shipped_store, None, "bt", 0)
    assert stored_board.encode(board) is not None
    # JSON would give a list for the tuple and a float for the NumPy scalar; Parquet an object column's mix
    assert stored_board.encode(replace(board, params={**board.params, "pair": ("a", "b")})) is None
    assert stored_board.encode(replace(board, params={**board.params, "n": np.int64(3)})) is None
    assert stored_board.encode(replace(board, distances={"spearman": np.float64(0.5)})) is None
    mixed = board.table.assign(odd=pd.Series([1, "x"] + [None] * (len(board.table) - 2), dtype=object))
    assert stored_board.encode(replace(board, table=mixed)) is None
    assert stored_board.decode(b"not parquet") is None
    other_format = stored_board.encode(board)
    assert other_format is not None
    stored_board.FORMAT, saved = stored_board.FORMAT + 1, stored_board.FORMAT
    try:
        assert stored_board.decode(other_format) is None
    finally:
        stored_board.FORMAT = saved
    assert stored_board.decode(other_format) is not None


def test_the_code_digest_follows_the_code(tmp_path):
    glue = tmp_path / "glue.py"
    glue.write_text("A = 1\n")
    before = stored_board.code_digest((str(glue),))
    glue.write_text("A = 2\n")
    stored_board.code_digest.cache_clear()
    assert stored_board.code_digest((str(glue),)) != before
    assert stored_board.code_digest(()) != before
