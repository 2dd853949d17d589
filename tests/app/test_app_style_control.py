"""The Leaderboard page's style-control toggle (issue 24): the controlled board, each model's rank change
and beta with its interval, checked against the independent scipy fit of arena-rank's loss
(tests/test_style_bt.py) on the shipped store's votes, and the toggle disabled for a ranker without the
Bradley-Terry likelihood."""

from __future__ import annotations

import numpy as np

# ruff: noqa: F811 - the fixtures imported from apphelpers are requested by name
from apphelpers import app, app_at, assert_clean, style_board_page  # noqa: F401

from engine.rankers.votes import votes as make_votes
from engine.ranking.style_board import style_battles
from engine.ranking.vote_query import store_vote_rows
from tests.test_style_bt import reference_fit


def test_style_control_toggle_shows_the_controlled_board_and_beta(app, shipped_store):
    """Kills: rank_change shown with the wrong sign (the human judge's board has two models that move),
    beta from another fit, the plain order shown as the controlled one."""
    at = style_board_page(app)
    frames = [d.value for d in at.dataframe]
    board = next(f for f in frames if "rank_change" in f.columns)
    betas = next(f for f in frames if "beta" in f.columns)
    rows = store_vote_rows(shipped_store, "vicuna80", judge="human", style=True)
    a, b, y, counts = style_battles(rows, make_votes(rows))
    keep = np.isfinite(counts).all(axis=1)
    theta, beta = reference_fit(rows.n, a[keep], b[keep], y[keep], counts[keep])
    np.testing.assert_allclose(betas["beta"].to_numpy(), beta, atol=1e-6)
    assert (betas["ci_low"] < betas["beta"]).all() and (betas["beta"] < betas["ci_high"]).all()
    got = board.set_index("model")
    order = np.argsort(-theta, kind="stable")
    assert list(got.index) == [rows.models[k] for k in order]  # the controlled order, best first
    change = got["rank_plain"] - got["rank"]
    assert [int(c) for c in got["rank_change"]] == change.tolist()
    assert change.abs().sum() > 0
    assert any("sandwich" in c.value for c in at.caption)


def test_style_control_is_disabled_for_a_ranker_without_the_likelihood(app_at):
    at = app_at("app_pages/1_leaderboard.py", ranker="borda")
    assert_clean(at)
    assert at.toggle(key="lb_style").disabled
