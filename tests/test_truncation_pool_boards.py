"""The Truncation page's boards and curve refusal without a battle log's one-pair graphs (issue 26, part
i26browser): keep-K keeps pool graphs only, so ``app_pages._lens.leaderboard_result`` cuts the kept and the
untruncated-pool boards of a count ranker from the context of the selection's graphs of three or more models
(``pool_context_for``), and ``dense_stack_for`` refuses a too-large dense stack from counts (the graph tally
and ``engine.views.truncation_view.selection_models``) instead of building every graph to refuse it.

Second path: the page's old computation, every graph of the selection built (``SliderContext.of`` of all
buckets) and passed to ``app_leaderboard``; the old refusal sentence from the built buckets' T and n. Data
that separates the two: graphs of 3+ models beside one-pair graphs (own prompts, and second originals of the
big prompts), three judges, paraphrases, samples, turns, both orders, repeats, ties, invalid rows, variant
kinds disagreeing inside a graph, a 70-model sparse set, a model met only in one-pair graphs and a model met
only in invalid verdicts; whole and filtered by judge and by category.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from test_cycles3_selection import BIG, mixed_rows
from test_pages_truncation_pool import FILTERS, new_store, relabelled

from engine.errors import LensError
from engine.graphs.buckets import build_buckets
from engine.graphs.stack import GRAPH_COLUMNS
from engine.views.appstate import CacheKey, SliderContext, app_leaderboard

MUS = (0.01, 1.0, 31.6)
RANKERS = ("bt", "elo", "winrate")
B = 8  # bootstrap draws: enough that an interval differs when the kept votes do


def with_outsiders(rows: pd.DataFrame) -> pd.DataFrame:
    """``rows`` plus one-pair graphs of a model no big graph has ("solo") and a verdict whose models appear in
    no valid verdict ("ghost", invalid): the whole selection's model axis is then wider than the pool's."""
    base = {"judge": "j0", "category": "c1", "variant": 0, "variant_kind": "original", "turn": 1,
            "order": None}
    models = sorted(set(rows["model_a"]))
    extra = [{**base, "prompt_id": f"solo{i}", "model_a": "solo", "model_b": models[i % len(models)],
              "winner": "AB"[i % 2]} for i in range(6)]
    extra.append({**base, "prompt_id": "ghost", "model_a": "ghost_a", "model_b": "ghost_b",
                  "winner": "invalid"})
    return pd.concat([rows, pd.DataFrame(extra)], ignore_index=True)


def ranker_votes(store, ranker: str, f: dict):
    """The selection's votes as the CLI reads them for ``ranker`` (Elo: in its order, with the order's words;
    ``engine.ranking.count_board.store_vote_order``), what the page's board must rank (elofix-33)."""
    from dataclasses import replace

    from engine.rankers import ranker_object
    from engine.rankers.votes import votes as make_votes
    from engine.ranking.count_board import store_vote_order
    from engine.ranking.vote_query import store_vote_rows

    order = store_vote_order(store, "mix", ranker_object(ranker), {})
    v = make_votes(store_vote_rows(store, "mix", judge=f.get("judge"), category=f.get("category"),
                                   order_by=None if order is None else order[0]))
    return v if order is None else replace(v, order_used=order[1])


def same_board(got, want) -> None:
    pd.testing.assert_frame_equal(got.table, want.table, check_exact=True)
    assert got.params == want.params
    assert got.distances == want.distances


@pytest.mark.parametrize("name", list(BIG))
def test_kept_boards_from_the_pool_context_equal_every_graph(name, tmp_path, monkeypatch):
    """Per filter (cold page caches each), the kept board at K = 1, half the pool and the whole pool, each at
    another mu and with another count ranker: equal to the boards of every graph built, table, params and
    distances. (The page's every-graph board, K None, comes from the first-open path, compared with the
    board of every graph in tests/test_leaderboard_first.py; it was computed here too until round 34, and
    never compared.)"""
    import streamlit as st

    from app_pages import _lens
    from engine.ranking.reference import reference_for

    rows = with_outsiders(relabelled(mixed_rows(BIG[name]), seed=len(name)))
    store, db = new_store(tmp_path, rows, "mix")
    with store:
        ref, note = reference_for("mix", None, store)
        wants = []
        for f in FILTERS:
            full = SliderContext.of(build_buckets(store.verdicts("mix", columns=GRAPH_COLUMNS, **f)))
            assert full.n_pool >= 2 and full.n_no_cycle > 0, f  # pool graphs beside graphs keep-K cannot keep
            moves = [(RANKERS[i % 3], k, MUS[(i + len(f)) % 3])
                     for i, k in enumerate((1, full.n_pool // 2, full.n_pool))]
            extra = {"dataset": "mix", "dataset_version": store.dataset_version("mix"),
                     "judge": f.get("judge"), "category": f.get("category")}
            wants.append([(r, k, mu, app_leaderboard(full, ranker=r, keep_k=k, mu=mu, bootstrap=B, seed=0,
                                                     reference=ref, reference_note=note,
                                                     votes=ranker_votes(store, r, f), extra_params=extra))
                          for r, k, mu in moves])
    monkeypatch.setenv("LENS_DB", str(db))
    for f, moves in zip(FILTERS, wants, strict=True):
        st.cache_resource.clear()
        st.cache_data.clear()
        with _lens.store_session():
            key = CacheKey.of(_lens.get_store(), "mix", f.get("judge"), f.get("category"))
            for ranker, k, mu, want in moves:
                same_board(_lens.leaderboard_result(key, ranker, k, mu, B, 0), want)


def test_every_move_of_one_selection_equals_every_graph(tmp_path, monkeypatch):
    """Every K at three mu on one mixed selection (sparse 70 models, all judges), through one warm page
    cache as the sliders use it."""
    import streamlit as st

    from app_pages import _lens
    from engine.rankers.votes import votes as make_votes
    from engine.ranking.reference import reference_for
    from engine.ranking.vote_query import store_vote_rows

    rows = with_outsiders(relabelled(mixed_rows(BIG["sparse70"]), seed=3))
    store, db = new_store(tmp_path, rows, "mix")
    with store:
        ref, note = reference_for("mix", None, store)
        full = SliderContext.of(build_buckets(store.verdicts("mix", columns=GRAPH_COLUMNS)))
        votes = make_votes(store_vote_rows(store, "mix", judge=None, category=None))
    monkeypatch.setenv("LENS_DB", str(db))
    st.cache_resource.clear()
    st.cache_data.clear()
    with _lens.store_session():
        key = CacheKey.of(_lens.get_store(), "mix", None, None)
        for mu in (1.0,):
            for k in range(1, full.n_pool + 1):
                got = _lens.leaderboard_result(key, "bt", k, mu, 0, 0)
                want = app_leaderboard(full, ranker="bt", keep_k=k, mu=mu, bootstrap=0, seed=0,
                                       reference=ref, reference_note=note, votes=votes,
                                       extra_params={"dataset": "mix", "dataset_version": key.version,
                                                     "judge": None, "category": None})
                same_board(got, want)


def test_curves_refused_from_counts_without_building_the_graphs(tmp_path, monkeypatch):
    """A selection too large for the curves' dense stack is refused with the sentence the built graphs gave
    (their T and n), and no graph of fewer than 3 models is built for it; ``selection_models`` is the built
    graphs' model count for every filter (the invalid-only model is not one of them)."""
    import streamlit as st

    import engine.graphs.stack as stack_module
    from app_pages import _lens
    from engine.views.truncation_view import selection_models

    rows = with_outsiders(relabelled(mixed_rows(BIG["judges-variants"]), seed=5))
    store, db = new_store(tmp_path, rows, "mix")
    with store:
        built = {i: build_buckets(store.verdicts("mix", columns=GRAPH_COLUMNS, **f))
                 for i, f in enumerate(FILTERS)}
        for i, f in enumerate(FILTERS):
            assert selection_models(store, "mix", **f) == built[i].n, f
        assert "ghost_a" not in built[0].models and "solo" in built[0].models
    limit = built[0].T * built[0].n * built[0].n - 1  # the whole selection is one cell too many
    monkeypatch.setattr(stack_module, "DENSE_CELL_LIMIT", limit)
    monkeypatch.setenv("LENS_DB", str(db))
    st.cache_resource.clear()
    st.cache_data.clear()

    def never(key):
        raise AssertionError("every graph of the selection was built to refuse the curves")

    with _lens.store_session():
        key = CacheKey.of(_lens.get_store(), "mix", None, None)
        built_for = _lens.stack_for
        monkeypatch.setattr(_lens, "stack_for", never)
        with pytest.raises(LensError) as err:
            _lens.dense_stack_for(key, "sensitivity curves")
        g = built[0]
        assert str(err.value) == (
            f"No sensitivity curves: the {g.T:,} graphs over {g.n} models are too many for them "
            f"(more than {limit:,} graph × model × model cells); choose a judge or category.")
        # one cell more allowed is no refusal: the dense stack of every graph, as before
        monkeypatch.setattr(stack_module, "DENSE_CELL_LIMIT", limit + 1)
        monkeypatch.setattr(_lens, "stack_for", built_for)
        dense = _lens.dense_stack_for(key, "sensitivity curves")
    assert (dense.T, dense.n) == (g.T, g.n)
    np.testing.assert_array_equal(dense.wins, g.dense().wins)


def test_a_slider_move_with_its_inputs_cached_opens_no_store(shipped_db, monkeypatch):
    """After the Truncation page's first view (vicuna80, judge gpt-4), a keep-K move and a mu move compute
    the kept board and the curve they change from cached inputs alone: the store file is not opened (each
    open and release cost a move 0.4-0.7 s of wall time at load 20), and the numbers are those of a cold
    cache."""
    import streamlit as st

    from app_pages import _lens
    from engine.store.connection import Store

    monkeypatch.setenv("LENS_DB", str(shipped_db))
    st.cache_resource.clear()
    st.cache_data.clear()
    with _lens.store_session():  # the first view: every per-selection input read
        key = CacheKey.of(_lens.get_store(), "vicuna80", "gpt-4", None)
        n_pool = _lens.truncation_pool_for(key).n_pool
        first = (_lens.leaderboard_result(key, "bt", n_pool // 2, 1.0, B, 0),
                 _lens.keep_k_curve_for(key, 1.0), _lens.mu_curve_for(key, n_pool // 2))
    opened = []
    real = Store._connect

    def counting(self):
        opened.append(self.path)
        return real(self)

    monkeypatch.setattr(Store, "_connect", counting)
    with _lens.store_session():
        moved = (_lens.leaderboard_result(key, "bt", n_pool // 2 - 1, 1.0, B, 0),
                 _lens.mu_curve_for(key, n_pool // 2 - 1),
                 _lens.leaderboard_result(key, "bt", n_pool // 2 - 1, 3.16, B, 0),
                 _lens.keep_k_curve_for(key, 3.16))
    assert opened == []
    monkeypatch.setattr(Store, "_connect", real)
    st.cache_resource.clear()
    st.cache_data.clear()
    with _lens.store_session():  # the same numbers from cold caches
        cold = (_lens.leaderboard_result(key, "bt", n_pool // 2 - 1, 1.0, B, 0),
                _lens.mu_curve_for(key, n_pool // 2 - 1),
                _lens.leaderboard_result(key, "bt", n_pool // 2 - 1, 3.16, B, 0),
                _lens.keep_k_curve_for(key, 3.16))
    for warm, again in zip(moved, cold, strict=True):
        if isinstance(warm, pd.DataFrame):
            pd.testing.assert_frame_equal(warm, again, check_exact=True)
        else:
            same_board(warm, again)
    assert not first[0].table.equals(moved[0].table)  # the move changed the kept board


SHOWN_FIRST = ["rank", "model", "score", "wins", "losses", "ties", "win_rate", "bad_triads", "cycle_share",
               "ref_rank", "ref_diff"]
"""The Truncation table's columns (and the metrics' ranks) drawn from the point board before its intervals."""


def test_point_board_shows_the_bootstrapped_boards_numbers():
    """For every ranker the page draws from its point board first (``intervals_follow``), the point board's
    ranks, scores and counts are the bootstrapped board's, at two K and two mu of a mixed sparse selection
    (70 models, one-pair graphs beside big ones, judges, orders, repeats, invalid rows); a ranker whose
    numbers would move with the bootstrap must not be drawn first."""
    from engine.rankers import RANKERS
    from engine.rankers.votes import votes as make_votes
    from engine.ranking.vote_query import frame_vote_rows

    rows = with_outsiders(relabelled(mixed_rows(BIG["sparse70"]), seed=9))
    rows = rows.assign(dataset="mix", verdict_id=np.arange(len(rows)), prob_a=np.nan, annotator=None,
                       explanation=None)
    from app_pages._lens import intervals_follow

    first = [r for r in RANKERS if intervals_follow(r)]
    assert {"bt", "elo", "winrate"} <= set(first)
    frame = rows
    ctx = SliderContext.of(build_buckets(frame))
    votes = make_votes(frame_vote_rows(frame))
    for ranker in first:
        drew = False
        for mu in (1.0, 0.01):
            for k in sorted({2, ctx.n_pool // 2}):
                point = app_leaderboard(ctx, ranker=ranker, keep_k=k, mu=mu, bootstrap=0, seed=0, votes=votes)
                boot = app_leaderboard(ctx, ranker=ranker, keep_k=k, mu=mu, bootstrap=4, seed=0, votes=votes)
                cols = [c for c in SHOWN_FIRST if c in boot.table.columns]
                pd.testing.assert_frame_equal(point.table[cols], boot.table[cols], check_exact=True,
                                              obj=f"{ranker} K={k} mu={mu}")
                drew |= bool(boot.table["ci_low"].notna().any())
        assert drew, ranker  # the bootstrap did draw intervals


def test_page_metrics_and_table_after_moves_equal_the_bootstrapped_boards(shipped_db, monkeypatch):
    """The Truncation page (AppTest, vicuna80 judge gpt-4, ranker bt) after keep-K and mu moves: the metrics
    drawn from the point boards (graphs kept, models whose rank changed, leader) and the final table (the
    kept board with its B draws, Δ rank against the untruncated board) are those of the bootstrapped boards
    from fresh contexts at the slider's K and mu."""
    import streamlit as st
    from streamlit.testing.v1 import AppTest

    from app_pages._lens import B_DEFAULT, SEED, board_display
    from engine.rankers.votes import votes as make_votes
    from engine.ranking.reference import reference_for
    from engine.ranking.vote_query import store_vote_rows
    from engine.store.connection import Store
    from engine.views.viz import rank_change_frame
    from tests.conftest import REPO

    monkeypatch.setenv("LENS_DB", str(shipped_db))
    st.cache_data.clear()
    st.cache_resource.clear()
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=300).run()
    at.selectbox(key="judge").set_value("gpt-4").run()
    at = at.switch_page("app_pages/2_truncation.py").run()
    store = Store(shipped_db)
    try:
        stack = build_buckets(store.verdicts("vicuna80", judge="gpt-4"))
        ref, _ = reference_for("vicuna80", None, store)
        votes = make_votes(store_vote_rows(store, "vicuna80", judge="gpt-4", category=None))
    finally:
        store.close()
    n_pool = SliderContext.of(stack).n_pool
    for k, mu in ((n_pool // 3, 0.1), (n_pool // 4, 31.6)):
        at.slider(key="keep_k").set_value(k).run()
        at.select_slider(key="mu").set_value(mu).run()
        assert [e.message for e in at.exception] == [] and [e.value for e in at.error] == []
        full = app_leaderboard(SliderContext.of(stack), ranker="bt", keep_k=n_pool, mu=1.0,
                               bootstrap=B_DEFAULT, seed=SEED, reference=ref, votes=votes).table
        kept = app_leaderboard(SliderContext.of(stack), ranker="bt", keep_k=k, mu=mu,
                               bootstrap=B_DEFAULT, seed=SEED, reference=ref, votes=votes).table
        want = rank_change_frame(full, kept)
        metrics = {m.label: m.value for m in at.metric}
        assert metrics["Graphs kept"] == f"{k} of {n_pool}"
        assert metrics["Models whose rank changed"] == str(int((want["rank_change"].fillna(0) != 0).sum()))
        assert metrics["Leader"] == want.iloc[0]["model"]
        shown = at.dataframe[0].value
        pd.testing.assert_frame_equal(shown.reset_index(drop=True),
                                      board_display(want)[shown.columns].reset_index(drop=True),
                                      check_exact=True, check_dtype=False)
