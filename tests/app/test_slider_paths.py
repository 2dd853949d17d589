"""The Truncation page's fast slider path gives the numbers of the old one (issue 26, point 2).

A slider move now (a) cuts keep-K from the pool's S_mu order computed once per mu
(``SliderContext.ordering``) instead of sorting the pool again, and (b) fits the untruncated board of
the pool (keep all T pool graphs, the Δ-rank baseline) once, at mu = 1, instead of once per mu. The
tests compare each with the old path, recomputed here: ``keep_k_scores`` + ``keep_k_index`` per move,
and the untruncated board fitted at each mu; and the page's table (AppTest), at slider settings moved
back and forth, with the old page's table built from fresh contexts.

Data that separates the paths: generated shapes (several judges, paraphrases, sampling replicates that
compare wider than the pool, both orders, repeats, one pair per prompt, sparse graphs), and vicuna80
pooled. Planted bugs each test was seen to fail on are named in the commit message.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from apphelpers import assert_clean, new_app
from hypothesis import HealthCheck, example, given, settings

from engine.graphs.buckets import build_buckets
from engine.graphs.key_order import key_rank
from engine.graphs.truncation import keep_k_index, keep_k_scores
from engine.views.appstate import SliderContext, app_leaderboard
from engine.views.truncation_view import MU_STEPS
from tests.seam_data import Shape, imported, shapes

WIDER_SAMPLES = Shape(seed=3, n_models=6, n_prompts=7, judges=2, paraphrases=1, samples=2, wider_samples=True,
                      orders="both", tie_p=0.15, categories=2, repeats=True)
SETTINGS = settings(max_examples=4, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


def old_kept(ctx: SliderContext, tie_rank: np.ndarray, k: int, mu: float) -> tuple[np.ndarray, float]:
    """The kept graphs and S_K as every move computed them before: score the pool, then keep_k_index."""
    pos = np.arange(ctx.stack.T) if ctx.pool_pos is None else np.asarray(ctx.pool_pos)
    scored = keep_k_scores(ctx.stack.keys, ctx.counts, ctx.capacity, pool=ctx.pool, mu=mu, pos=pos)
    idx = keep_k_index(scored.scores, tie_rank, k, among=scored.pos)
    return idx, float(scored.scores[idx].max())


def moves(n_pool: int, rng: np.random.Generator) -> list[tuple[int, float]]:
    """Every (K, mu) of the page once, then 200 of them again in a shuffled order (a mu met again, out of
    order)."""
    grid = [(k, mu) for mu in MU_STEPS for k in range(1, n_pool + 1)]
    again = [grid[i] for i in rng.permutation(len(grid))[:200]]
    return grid + again


@SETTINGS
@given(shape=shapes(allow_prob=False))
@example(shape=WIDER_SAMPLES)
@example(shape=Shape(seed=5, n_models=5, n_prompts=30, judges=2, one_pair=True, orders="both"))
@example(shape=Shape(seed=8, n_models=6, n_prompts=40, sparse=True, paraphrases=1))
def test_ordering_cuts_the_graphs_keep_k_index_keeps(tmp_path_factory, shape):
    store, _, _ = imported(tmp_path_factory.mktemp("slider"), shape)
    try:
        ctx = SliderContext.of(build_buckets(store.verdicts("seam")))
    finally:
        store.close()
    if ctx.n_pool == 0:
        return
    tie_rank = key_rank(ctx.stack.keys)  # computed here, not read from the context under test
    for k, mu in moves(ctx.n_pool, np.random.default_rng(shape.seed)):
        idx, threshold = ctx.kept(k, mu)
        want_idx, want_threshold = old_kept(ctx, tie_rank, k, mu)
        assert np.array_equal(idx, want_idx), (k, mu)
        assert threshold == want_threshold, (k, mu)


@pytest.mark.parametrize("judge", ["gpt-4", None])
def test_untruncated_board_is_the_same_at_every_mu(shipped_store, tmp_path_factory, judge):
    """Keeping all T pool graphs keeps the same graphs at every mu, so the Δ-rank baseline fitted once
    at mu = 1 equals the one fitted at each mu (scores, intervals, ranks, every column)."""
    ctx = SliderContext.of(build_buckets(shipped_store.verdicts("vicuna80", judge=judge)))
    once = app_leaderboard(ctx, ranker="bt", keep_k=ctx.n_pool, mu=1.0, bootstrap=20, seed=0).table
    for mu in MU_STEPS:
        fresh = SliderContext.of(ctx.stack)  # no ordering cached: the old path
        at_mu = app_leaderboard(fresh, ranker="bt", keep_k=fresh.n_pool, mu=mu, bootstrap=20, seed=0).table
        pd.testing.assert_frame_equal(at_mu, once, check_exact=True)


def test_untruncated_board_with_wider_samples(tmp_path_factory):
    """The same on a selection whose sampling replicates stay out of the pool: keeping the pool's T
    graphs must not reach for a replicate at any mu."""
    store, _, _ = imported(tmp_path_factory.mktemp("wider"), WIDER_SAMPLES)
    try:
        stack = build_buckets(store.verdicts("seam"))
    finally:
        store.close()
    ctx = SliderContext.of(stack)
    assert ctx.n_pool < stack.T  # replicates are left out: the data separates pool and selection
    once = app_leaderboard(ctx, ranker="bt", keep_k=ctx.n_pool, mu=1.0, bootstrap=20, seed=0).table
    for mu in MU_STEPS:
        fresh = SliderContext.of(stack)
        at_mu = app_leaderboard(fresh, ranker="bt", keep_k=fresh.n_pool, mu=mu, bootstrap=20, seed=0).table
        pd.testing.assert_frame_equal(at_mu, once, check_exact=True)


def test_page_table_at_every_move_equals_the_old_page(shipped_db, monkeypatch):
    """The Truncation page (AppTest, vicuna80 judge gpt-4, ranker bt) at K and mu moved back and forth
    shows the table the old page computed: the kept board against the untruncated board at the same mu,
    each from a fresh context."""
    from app_pages._lens import B_DEFAULT, SEED, board_display
    from engine.rankers.votes import votes as make_votes
    from engine.ranking.reference import reference_for
    from engine.ranking.vote_query import store_vote_rows
    from engine.store.connection import Store
    from engine.views.viz import rank_change_frame

    at = new_app(shipped_db, monkeypatch, "app_pages/2_truncation.py", {"judge": "gpt-4"})
    assert_clean(at)
    store = Store(shipped_db)
    try:
        stack = build_buckets(store.verdicts("vicuna80", judge="gpt-4"))
        ref, _ = reference_for("vicuna80", None, store)
        votes = make_votes(store_vote_rows(store, "vicuna80", judge="gpt-4", category=None))
    finally:
        store.close()
    n_pool = SliderContext.of(stack).n_pool
    old_boards: dict[tuple[int, float], pd.DataFrame] = {}

    def old_board(k: int, mu: float) -> pd.DataFrame:
        """The old page's board at (K, μ) from a fresh context, made once per setting (the untruncated
        board at μ = 0.1 is asked three times, the last move repeats the second)."""
        if (k, mu) not in old_boards:
            old_boards[k, mu] = app_leaderboard(SliderContext.of(stack), ranker="bt", keep_k=k, mu=mu,
                                                bootstrap=B_DEFAULT, seed=SEED, reference=ref,
                                                votes=votes).table
        return old_boards[k, mu]

    for k, mu in ((n_pool // 2, 1.0), (n_pool // 3, 0.1), (n_pool // 3, 31.6), (n_pool - 1, 0.1),
                  (n_pool // 2, 0.01), (n_pool // 3, 0.1)):
        at.slider(key="keep_k").set_value(k).run()
        at.select_slider(key="mu").set_value(mu).run()
        assert_clean(at)
        shown = at.dataframe[0].value
        want = board_display(rank_change_frame(old_board(n_pool, mu), old_board(k, mu)))
        pd.testing.assert_frame_equal(shown.reset_index(drop=True),
                                      want[shown.columns].reset_index(drop=True),
                                      check_exact=True, check_dtype=False)
