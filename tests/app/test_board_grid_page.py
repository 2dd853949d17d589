"""The Truncation page shows, after slider moves, the kept board made from scratch, whether the move made
it, took it from another μ step keeping the same graphs, or found it made ahead by the board grid's
warming thread (``engine.views.board_grid``; the engine side is tests/test_board_grid.py); every move sends
the board as a data frame where the last run drew it (no empty slot first: the browser updates the table in
place instead of building a new one)."""

from __future__ import annotations

import numpy as np
import pandas as pd
from apphelpers import assert_clean, new_app, unescape_md
from stall_watch import watched_join

from engine.graphs.buckets import build_buckets
from engine.rankers.votes import votes as make_votes
from engine.ranking.reference import reference_for
from engine.ranking.vote_query import store_vote_rows
from engine.views.appstate import SliderContext, app_leaderboard
from engine.views.truncation_view import MU_STEPS


def test_the_page_shows_the_board_from_scratch_made_ahead_or_shared(shipped_db, monkeypatch):
    """vicuna80 gpt-4, ranker bt, B = 200: a keep-K move (the first move: made then, and the warming
    starts), a keep-K move whose board the thread made, a μ move keeping the same graphs (the board of the
    move before). Each time the table is the old page's (kept board against the untruncated board, from a
    fresh context) and the caption names this setting's μ and threshold; the board's place gets data frames
    only (no empty slot sent ahead of them: the browser would take the grid down and build a new one)."""
    from streamlit.runtime.scriptrunner_utils.script_run_context import ScriptRunContext

    from app_pages import _lens
    from app_pages._lens import B_DEFAULT, SEED, board_display
    from engine.store.connection import Store
    from engine.views.appstate import CacheKey
    from engine.views.truncation_view import format_s_mu
    from engine.views.viz import rank_change_frame

    sent: list[tuple[tuple[int, ...], str]] = []  # every element delta of a run: (delta path, element type)
    enqueue = ScriptRunContext.enqueue

    def recording(self, msg):
        if msg.WhichOneof("type") == "delta" and msg.delta.WhichOneof("type") == "new_element":
            sent.append((tuple(msg.metadata.delta_path), msg.delta.new_element.WhichOneof("type")))
        return enqueue(self, msg)

    monkeypatch.setattr(ScriptRunContext, "enqueue", recording)
    at = new_app(shipped_db, monkeypatch, "app_pages/2_truncation.py",
                 {"dataset": "vicuna80", "judge": "gpt-4"})
    assert_clean(at)
    [board_at] = {path for path, kind in sent if kind == "dataframe"}  # where the opened page drew its board
    store = Store(shipped_db)
    try:
        ctx = SliderContext.of(build_buckets(store.verdicts("vicuna80", judge="gpt-4")))
        ref, _ = reference_for("vicuna80", None, store)
        votes = make_votes(store_vote_rows(store, "vicuna80", judge="gpt-4", category=None))
        key = CacheKey.of(store, "vicuna80", "gpt-4", None)
    finally:
        store.close()
    with _lens.store_session():
        grid = _lens.board_grid_for(key)
    T = ctx.n_pool
    k0, mu0 = int(at.slider(key="keep_k").value), float(at.select_slider(key="mu").value)
    assert not grid.has("bt", k0 - 1, mu0, B_DEFAULT, SEED)  # an open page starts no warming
    # the μ step next to mu0 that keeps the same graphs at k0 - 2 (the last move shares its board)
    same_mu = next(m for m in MU_STEPS if m != mu0
                   and np.array_equal(ctx.kept(k0 - 2, m)[0], ctx.kept(k0 - 2, mu0)[0]))
    for k, mu, how in ((k0 - 1, mu0, "made by the move"), (k0 - 2, mu0, "made ahead"),
                       (k0 - 2, same_mu, "shared")):
        if how == "made ahead":
            watched_join(grid, 120)
            assert grid.has("bt", k, mu, B_DEFAULT, SEED)
        sent.clear()
        if how == "shared":
            assert grid.has("bt", k, mu, B_DEFAULT, SEED)
            at.select_slider(key="mu").set_value(mu).run()
        else:
            at.slider(key="keep_k").set_value(k).run()
        assert_clean(at)
        # the board's place gets data frames only, the point board and its intervals drawn over it (the
        # move that made the board) or the board at once; the page sends no empty element anywhere
        assert [kind for path, kind in sent if path == board_at] == (
            ["dataframe"] * (2 if how == "made by the move" else 1)), how
        assert "empty" not in {kind for _, kind in sent}, how
        full = app_leaderboard(SliderContext.of(ctx.stack), ranker="bt", keep_k=T, mu=1.0, bootstrap=0,
                               seed=SEED, reference=ref, votes=votes).table
        kept = app_leaderboard(SliderContext.of(ctx.stack), ranker="bt", keep_k=k, mu=mu, bootstrap=B_DEFAULT,
                               seed=SEED, reference=ref, votes=votes)
        want = board_display(rank_change_frame(full, kept.table))
        shown = at.dataframe[0].value
        pd.testing.assert_frame_equal(shown.reset_index(drop=True),
                                      want[shown.columns].reset_index(drop=True), check_exact=True,
                                      check_dtype=False, obj=how)
        assert shown["ci_low"].notna().all(), how
        caption = unescape_md(next(c.value for c in at.caption if "keep K=" in c.value))
        assert f"keep K={k} of {T} graphs by S_μ with μ={mu:g} " in caption, how
        assert f"(kept: S_μ ≤ {format_s_mu(kept.params['threshold'], mu)})" in caption, how
