"""The import keeps the Leaderboard's point board of the version it wrote (``engine.views.import_board``):
under the very key the app reads (``app_pages._lbopen_cache.board_key``), the same board bit for bit as the
app computes from the votes, so the page's first view shows the same numbers, and the app's first open then
reads no vote. On generated data that separates the paths (two judges, presentation orders mixed, repeated
battles, categories, paraphrases; and a sparse 70-model log of one pair per prompt), the deferral threshold
lowered so these small sets take the million-vote path; at the real threshold nothing is kept."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest
from apphelpers import new_app
from cli_inprocess import run_engine
from seam_data import Shape, fresh_store, verdicts, write_csv

from engine.rankers.votes import votes
from engine.ranking.vote_query import store_vote_rows
from engine.store.connection import Store
from engine.views import import_board, stored_board
from engine.views.appstate import CacheKey

SHAPES = {
    "mixed": Shape(seed=11, n_models=7, n_prompts=16, judges=2, orders="mixed", repeats=True, categories=3,
                   paraphrases=1),
    "sparse70": Shape(seed=5, n_prompts=150, judges=2, orders="both", repeats=True, one_pair=True,
                      sparse=True, categories=2),
}

REFERENCE_NAMES = {"m00": "gpt-4", "m01": "claude-v1", "m02": "gpt-3.5-turbo", "m03": "vicuna-13b",
                   "m04": "alpaca-13b", "m05": "llama-13b"}


def cli_import(folder: Path, shape: Shape) -> Path:
    """A new store at ``folder`` with the shape's rows imported by ``python -m engine import`` (in
    process)."""
    from engine.ingest.shipped import INIT_STEP
    from engine.ingest.shipped_counts import INIT_STEP_ARENA_COUNTS
    from engine.store.init_log import record_init_step

    folder.mkdir(parents=True, exist_ok=True)
    db = folder / "lens.duckdb"
    store = fresh_store(db)
    record_init_step(store, INIT_STEP, "no default dataset")
    record_init_step(store, INIT_STEP_ARENA_COUNTS, "no shipped arena counts")
    store.close()
    rows = verdicts(shape)
    if not shape.sparse:  # names the LMArena reference places (one left out): the reference columns too
        rows[["model_a", "model_b"]] = rows[["model_a", "model_b"]].replace(REFERENCE_NAMES)
    csv = write_csv(rows, folder / "verdicts.csv")
    run_engine(["--db", db, "import", "--dataset", "seam", csv], check=True)
    return db


def app_key(db: Path) -> tuple[int, dict]:
    """The dataset's version and the key the app reads the default choice's point board under."""
    from app_pages._lbopen_cache import board_key
    from app_pages._lens import SEED

    with Store(db) as store:
        key = CacheKey.of(store, "seam", None, None)
    return key.version, board_key(key, "bt", 0, SEED)


def kept(db: Path) -> object:
    version, params = app_key(db)
    with Store(db) as store:
        return stored_board.read_board(store, "seam", version, params)


def without_kept(db: Path, folder: Path) -> Path:
    """A copy of ``db`` with no kept board: the app computes (the first open after an older import)."""
    from engine.store.results_table import delete_results

    folder.mkdir()
    copy = folder / "lens.duckdb"
    shutil.copyfile(db, copy)
    with Store(copy) as store:
        delete_results(store, None)
    return copy


def app_point_board(db: Path, monkeypatch):
    """The point board the app's caches compute for the default choice (no page: the first open's reads)."""
    import streamlit as st

    from app_pages import _lbopen_cache
    from app_pages._lens import SEED, get_store

    monkeypatch.setenv("LENS_DB", str(db))
    st.cache_data.clear()
    st.cache_resource.clear()
    with get_store().session():
        key = CacheKey.of(get_store(), "seam", None, None)
        return _lbopen_cache.first_board_for(key, "bt", 0, SEED)


@pytest.mark.parametrize("name", list(SHAPES))
def test_the_import_keeps_the_board_the_app_computes_under_the_apps_key(tmp_path, monkeypatch, name):
    from engine.views import leaderboard_first

    monkeypatch.setattr(leaderboard_first, "DEFER_MIN_VOTES", 1)
    db = cli_import(tmp_path / "store", SHAPES[name])
    board = kept(db)
    assert board is not None  # found under the app's own key for the version the import wrote
    computed = app_point_board(without_kept(db, tmp_path / "copy"), monkeypatch)
    pd.testing.assert_frame_equal(board.table, computed.table, check_exact=True)
    assert stored_board.same_board(board, computed)  # params (and their types), distances, note too
    assert board.params["bootstrap"] == 0 and board.params["judge"] is None
    assert int(board.params["n_votes"]) > 0
    if name == "mixed":  # the LMArena reference places some of the names: its columns and distances too
        assert board.distances and board.distances["n_shared"] >= 3
        assert board.table["ref_rank"].notna().sum() == board.distances["n_shared"]


def test_the_pages_first_view_from_the_kept_board_is_the_computed_one_and_reads_no_vote(tmp_path,
                                                                                        monkeypatch):
    from app_pages import _lbopen_cache
    from engine.ranking import vote_query
    from engine.views import leaderboard_first

    monkeypatch.setattr(leaderboard_first, "DEFER_MIN_VOTES", 1)
    db = cli_import(tmp_path / "store", SHAPES["mixed"])
    copy = without_kept(db, tmp_path / "copy")
    reads: list[str] = []
    real = vote_query.store_vote_rows

    def counted(*args, **kwargs):
        reads.append(args[1])
        return real(*args, **kwargs)

    monkeypatch.setattr(vote_query, "store_vote_rows", counted)
    monkeypatch.setenv("LENS_DB", str(db))
    import streamlit as st

    st.cache_data.clear()
    st.cache_resource.clear()
    assert _lbopen_cache.prewarm_first_open({"dataset": "seam"}) is not None  # the first open's reads
    assert reads == []  # the kept point board, not the votes

    def first_view(path: Path) -> pd.DataFrame:
        at = new_app(path, monkeypatch, query={"dataset": "seam"})
        assert not at.exception
        frame = at.dataframe[0].value.reset_index(drop=True)
        for job in list(_lbopen_cache._jobs().jobs.values()):  # the page's bootstrap, before the next store
            job.result(timeout=120)
        return frame

    pd.testing.assert_frame_equal(first_view(db), first_view(copy), check_exact=True)


def test_nothing_is_kept_below_the_deferral_threshold_nor_above_the_bound(tmp_path, monkeypatch):
    from engine.views import leaderboard_first

    db = cli_import(tmp_path / "store", SHAPES["mixed"])  # a few hundred votes: the app computes it whole
    assert kept(db) is None
    with Store(db) as store:
        assert store.cursor().execute("SELECT count(*) FROM results_cache WHERE kind = ?",
                                      [stored_board.KIND]).fetchone() == (0,)
    monkeypatch.setattr(leaderboard_first, "DEFER_MIN_VOTES", 1)
    with Store(db) as store:
        n = len(votes(store_vote_rows(store, "seam")))
    monkeypatch.setattr(import_board, "KEEP_MAX_VOTES", n - 1)  # over the bound by one vote
    db = cli_import(tmp_path / "over", SHAPES["mixed"])
    assert kept(db) is None
    monkeypatch.setattr(import_board, "KEEP_MAX_VOTES", n)  # at the bound
    monkeypatch.setenv("LENS_IMPORT_BOARD", "0")  # switched off
    db = cli_import(tmp_path / "off", SHAPES["mixed"])
    assert kept(db) is None
    monkeypatch.setenv("LENS_IMPORT_BOARD", "1")
    db = cli_import(tmp_path / "at", SHAPES["mixed"])
    assert kept(db) is not None


def test_the_engine_names_the_apps_choice_seed_and_glue_files(shipped_db, monkeypatch):
    import streamlit as st

    import app_pages._lbopen_cache
    import app_pages._lens
    from app_pages._lens import SEED, get_store, linked_choice

    monkeypatch.setenv("LENS_DB", str(shipped_db))
    st.cache_data.clear()
    st.cache_resource.clear()
    with get_store().session():
        assert import_board.RANKER == linked_choice({})[3]  # the ranker a first session opens on
    assert import_board.SEED == SEED
    assert set(stored_board.APP_GLUE_FILES) == {str(Path(m.__file__).resolve())
                                                for m in (app_pages._lbopen_cache, app_pages._lens)}
