"""The app's Elo board is the command line's (elofix-33): the app reads an order-dependent ranker's votes in
the order ``Ranker.vote_order`` names, decided as the CLI decides it (time order when a verdict of the dataset
has a timestamp, else source order), and says which order on the board; an order-free ranker (Bradley-Terry)
keeps the scan-order read, one cache entry shared with the cycle context.

Second path: the CLI's ``leaderboard(...)`` on the same store. Data that separates an ordered read from the
scan order deterministically: two files imported as one dataset, the second file's name sorting first (the
rows are stored file by file, the source order is by file name), with and without timestamps (times out of
source order, some missing); two judges, ties, both presentation orders with repeats (a vote of two
verdicts), prompts of four models (graphs keep-K can keep) beside one-pair prompts, two categories. Each
test first checks that the scan-order board differs from the CLI's, so the data does separate the paths.
"""

from __future__ import annotations

import random

import numpy as np
import pandas as pd
import pytest
from apphelpers import assert_clean, new_app

from engine.ingest.importer import import_files
from engine.ranking.leaderboard import leaderboard
from engine.store.connection import Store
from engine.views.appstate import CacheKey

B = 16  # bootstrap draws: enough that an interval moves when the vote order does
FILTERS = [{}, {"judge": "j1"}, {"category": "c2"}]
SHARED = ["rank", "model", "score", "ci_low", "ci_high", "rank_low", "rank_high", "rank_ub", "wins", "losses",
          "ties", "votes", "n_prompts", "ci_note"]


def write_file(path, rng: random.Random, start: int, timed: bool) -> None:
    """One CSV of verdicts: four-model prompts (each pair judged by two judges, some in both orders) and
    one-pair battles; ``timed``: a tstamp per row in random order, every seventh missing."""
    models = [f"m{i}" for i in range(6)]
    head = "prompt_id,category,model_a,model_b,winner,judge,order" + (",tstamp" if timed else "")
    lines = [head]

    def row(p, cat, a, b, judge, order):
        w = rng.choice(["A", "A", "B", "tie"])
        t = "" if not timed else ("" if rng.random() < 1 / 7 else str(rng.randint(10**9, 10**9 + 10**6)))
        lines.append(f"{p},{cat},{a},{b},{w},{judge},{order}" + (f",{t}" if timed else ""))

    for k in range(6):  # prompts of four models: graphs of 3+ models
        four = rng.sample(models, 4)
        cat = f"c{k % 2 + 1}"
        for i in range(4):
            for j in range(i + 1, 4):
                for judge in ("j1", "j2"):
                    row(f"q{start + k}", cat, four[i], four[j], judge, "AB")
                    if rng.random() < 0.5:  # the other order: a vote of two verdicts
                        row(f"q{start + k}", cat, four[j], four[i], judge, "BA")
    for k in range(60):  # one pair per prompt
        a, b = rng.sample(models, 2)
        row(f"b{start + k}", f"c{k % 2 + 1}", a, b, rng.choice(["j1", "j2"]), "")
    path.write_text("\n".join(lines) + "\n")


def make_store(tmp_path, timed: bool):
    from engine.ingest.shipped import INIT_STEP
    from engine.ingest.shipped_counts import INIT_STEP_ARENA_COUNTS
    from engine.store.init_log import record_init_step

    rng = random.Random(11 if timed else 5)
    write_file(tmp_path / "z_first.csv", rng, 0, timed)  # stored first, sorts last
    write_file(tmp_path / "a_second.csv", rng, 100, timed)
    db = tmp_path / "lens.duckdb"
    with Store(db) as store:
        record_init_step(store, INIT_STEP, "elo order tests: no default dataset")
        record_init_step(store, INIT_STEP_ARENA_COUNTS, "elo order tests: no shipped arena counts")
        import_files(store, [tmp_path / "z_first.csv", tmp_path / "a_second.csv"], "log")
    return db


def app_session(db, monkeypatch):
    import streamlit as st

    from app_pages import _lens

    monkeypatch.setenv("LENS_DB", str(db))
    st.cache_resource.clear()
    st.cache_data.clear()
    return _lens


def same_numbers(app_table: pd.DataFrame, cli_table: pd.DataFrame) -> None:
    cols = [c for c in SHARED if c in cli_table.columns]
    assert {"score", "ci_low", "ci_high", "rank_ub"} <= set(cols)
    pd.testing.assert_frame_equal(app_table[cols].reset_index(drop=True),
                                  cli_table[cols].reset_index(drop=True), check_exact=True)


@pytest.mark.parametrize("timed", [False, True])
def test_the_apps_elo_board_is_the_clis(tmp_path, monkeypatch, timed):
    """Per filter, from cold page caches: the Leaderboard's Elo board (the first-open path, with its B and
    seed) and the Truncation page's keep-K Elo board equal the CLI's (scores, ranks, intervals), and the board
    names the CLI's order; the scan-order votes give another board."""
    from engine.rankers.votes import votes as make_votes
    from engine.ranking.vote_query import store_vote_rows
    from engine.views.leaderboard_first import first_board

    db = make_store(tmp_path, timed)
    wants = {}
    with Store(db) as store:
        for i, f in enumerate(FILTERS):
            full = leaderboard(store, "log", ranker="elo", bootstrap=B, seed=0, **f)
            kept = leaderboard(store, "log", ranker="elo", bootstrap=B, seed=0, keep_k=3 + i, mu=1.0,
                               pool="perturbed", **f)
            scan = first_board(make_votes(store_vote_rows(store, "log", **f)), None, ranker="elo",
                               bootstrap=0, seed=0)
            assert not np.array_equal(scan.table.set_index("model")["score"].sort_index().to_numpy(),
                                      full.table.set_index("model")["score"].sort_index().to_numpy()), f
            wants[i] = (full, kept)
    words = full.params["ranker_details"]["order"]
    assert words.startswith("by timestamp" if timed else "source order"), words
    _lens = app_session(db, monkeypatch)
    for i, f in enumerate(FILTERS):
        full, kept = wants[i]
        with _lens.store_session():
            key = CacheKey.of(_lens.get_store(), "log", f.get("judge"), f.get("category"))
            got = _lens.leaderboard_result(key, "elo", None, 1.0, B, 0)
            got_kept = _lens.leaderboard_result(key, "elo", 3 + i, 1.0, B, 0)
        same_numbers(got.table, full.table)
        assert got.params["ranker_details"]["order"] == words
        same_numbers(got_kept.table, kept.table)
        assert got_kept.params["ranker_details"]["order"] == kept.params["ranker_details"]["order"]
        assert got_kept.params["n_graphs"] == kept.params["n_graphs"]


def test_the_deferred_bootstrap_ranks_the_ordered_votes(tmp_path, monkeypatch):
    """The Leaderboard's deferred path (point board, then the bootstrap job in its worker thread): both the
    point board and the job's board are the CLI's."""
    from app_pages import _lbopen_cache

    db = make_store(tmp_path, True)
    with Store(db) as store:
        point = leaderboard(store, "log", ranker="elo", bootstrap=0, seed=0, judge="j2")
        full = leaderboard(store, "log", ranker="elo", bootstrap=B, seed=0, judge="j2")
    _lens = app_session(db, monkeypatch)
    _lbopen_cache._jobs.clear()
    with _lens.store_session():
        key = CacheKey.of(_lens.get_store(), "log", "j2", None)
        got_point = _lbopen_cache.first_board_for(key, "elo", 0, 0)
        job = _lbopen_cache.bootstrap_job(key, "elo", B, 0)
    same_numbers(got_point.table, point.table)
    same_numbers(job.result(timeout=120).table, full.table)


def test_order_free_rankers_keep_the_one_scan_order_read(tmp_path, monkeypatch):
    """Bradley-Terry's board is the CLI's and comes from the scan-order votes (no ORDER BY: the votes object
    the cycle context reads too), while Elo's are another read, in source order."""
    db = make_store(tmp_path, False)
    with Store(db) as store:
        want = leaderboard(store, "log", ranker="bt", bootstrap=B, seed=0)
    _lens = app_session(db, monkeypatch)
    with _lens.store_session():
        key = CacheKey.of(_lens.get_store(), "log", None, None)
        got = _lens.leaderboard_result(key, "bt", None, 1.0, B, 0)
        assert _lens.votes_for(key, "bt") is _lens.votes_for(key)
        assert _lens.votes_for(key, "winrate") is _lens.votes_for(key)
        elo = _lens.votes_for(key, "elo")
        assert elo is not _lens.votes_for(key) and elo.order_used.startswith("source order")
    same_numbers(got.table, want.table)


@pytest.mark.parametrize("timed", [False, True])
def test_the_leaderboard_page_shows_the_clis_elo_board_and_its_order(tmp_path, monkeypatch, timed):
    """The Leaderboard page (AppTest, the shown table through the page's own view) with Elo on judge j1 is
    the CLI's board with the app's B and seed, and its caption names the CLI's vote order; with
    Bradley-Terry the caption names none (an order-free board)."""
    from app_pages._lbopen_cache import _jobs
    from app_pages._lens import B_DEFAULT, SEED
    from engine.views.leaderboard_view import board_view
    from engine.views.viz import escape_md

    db = make_store(tmp_path, timed)
    with Store(db) as store:
        cli = leaderboard(store, "log", ranker="elo", bootstrap=B_DEFAULT, seed=SEED, judge="j1")
    at = new_app(db, monkeypatch, query={"dataset": "log", "judge": "j1", "ranker": "elo"})
    for job in list(_jobs().jobs.values()):
        job.result(timeout=120)
    at.run()
    assert_clean(at)
    shown = at.dataframe[0].value.reset_index(drop=True)
    want = board_view(cli.table, ranker="elo", n_graphs=int(cli.params["n_graphs"])).frame
    want = want.reset_index(drop=True)
    cols = [c for c in ("rank", "model", "score", "interval", "votes", "rank_ub", "rank_range")
            if c in shown.columns and c in want.columns]
    assert {"score", "interval", "rank_range"} <= set(cols)
    pd.testing.assert_frame_equal(shown[cols], want[cols], check_exact=True, check_dtype=False)
    words = escape_md(f"votes in {cli.params['ranker_details']['order']}")  # as the caption escapes it
    assert any(words in str(c.value) for c in at.caption), [c.value for c in at.caption]
    at.selectbox(key="ranker").set_value("bt").run()
    assert_clean(at)
    assert not any("votes in" in str(c.value) for c in at.caption)


def test_elos_first_open_reads_the_votes_once(tmp_path, monkeypatch):
    """From cold caches the Elo board's first open (point board, cycle context, bootstrap job) reads the
    selection's votes once, in time order: the cycle context takes the board's votes (the one-pair check does
    not depend on their order), no second scan-order read (a million votes: ~0.3 s of CPU)."""
    from app_pages import _lbopen_cache
    from engine.ranking import vote_query

    db = make_store(tmp_path, True)
    _lens = app_session(db, monkeypatch)
    reads: list = []
    real = vote_query.store_vote_rows

    def counted(*args, **kwargs):
        reads.append(kwargs.get("order_by"))
        return real(*args, **kwargs)

    monkeypatch.setattr(vote_query, "store_vote_rows", counted)
    _lbopen_cache._jobs.clear()
    with _lens.store_session():
        key = CacheKey.of(_lens.get_store(), "log", None, None)
        _lens.leaderboard_result(key, "elo", None, 1.0, 0, 0)
        _lbopen_cache.bootstrap_job(key, "elo", B, 0).result(timeout=120)
        assert _lbopen_cache.cycle_context_for(key) is not None  # graphs of four models: a context
    assert reads == ["time"]
