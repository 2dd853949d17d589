"""The Truncation page's kept boards from the board grid (``engine.views.board_grid.BoardGrid``) are the
boards ``app_leaderboard`` makes from scratch at each setting, to the last digit: made by the move, shared
with another setting that keeps the same graphs (another μ step), made ahead by the warming thread, or
waited for while the thread makes them.

Data that separates: vicuna80 judge gpt-4 and all judges pooled, the 70-model sparse set of the browser
tests (no reference), and generated shapes (several judges, paraphrases, sampling replicates, both orders,
repeats, ties, sparse graphs); count rankers bt (the page's), elo (reads the votes in order) and winrate."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from stall_watch import watched_join

from engine.graphs.buckets import build_buckets
from engine.rankers.votes import votes as make_votes
from engine.ranking.reference import reference_for
from engine.ranking.vote_query import store_vote_rows
from engine.views.appstate import SliderContext, app_leaderboard
from engine.views.board_grid import BoardGrid
from engine.views.truncation_view import MU_STEPS
from tests.seam_data import Shape, imported

EXTRA = {"dataset": "d", "judge": None}


def context(store, dataset: str, judge: str | None = None):
    """(the selection's SliderContext, its votes) as the page builds them."""
    ctx = SliderContext.of(build_buckets(store.verdicts(dataset, judge=judge)))
    return ctx, make_votes(store_vote_rows(store, dataset, judge=judge, category=None))


def scratch(ctx, votes, reference, ranker: str, k: int, mu: float, b: int):
    """The board a move made before the grid: ``app_leaderboard`` at this setting."""
    return app_leaderboard(ctx, ranker=ranker, keep_k=k, mu=mu, bootstrap=b, seed=0, reference=reference,
                           reference_note="note", votes=votes, extra_params=EXTRA)


def same(got, want, what: str) -> None:
    """Two AppBoards are the same board: table (dtypes, every digit), params, distances and note."""
    pd.testing.assert_frame_equal(got.table, want.table, check_exact=True, obj=what)
    assert got.params.keys() == want.params.keys(), what
    for name, value in want.params.items():
        assert repr(got.params[name]) == repr(value), (what, name)
    assert got.distances == want.distances, what
    assert got.reference_note == want.reference_note, what


def slide(ctx, votes, reference, path: list[tuple[int, int]], b: int, ranker: str = "bt") -> BoardGrid:
    """Move along ``path`` ((K, μ-step index)) as the page does: each board from the grid (whatever the
    thread has made) against the board from scratch, then the grid warms the next ones; then every board
    the thread made, at each μ step up to two away keeping its graphs at its K, against the board from
    scratch there."""
    grid = BoardGrid(ctx, votes, reference=reference, reference_note="note", extra_params=EXTRA)
    wants: dict[tuple[int, float], object] = {}  # each setting's board from scratch, made once

    def want(k: int, mu: float):
        if (k, mu) not in wants:
            wants[k, mu] = scratch(ctx, votes, reference, ranker, k, mu, b)
        return wants[k, mu]

    for k, i in path:
        mu = MU_STEPS[i]
        same(grid.board(ranker, k, mu, b, 0), want(k, mu), f"K={k} μ={mu}")
        grid.warm(ranker, k, mu, k_max=ctx.n_pool, mus=MU_STEPS, bootstrap=b, seed=0)
    watched_join(grid, 120)
    made = {item: at for item, at in grid._first.items() if grid._has(item)}  # (planned, not replaced)
    assert len(made) > len(path), "the thread made no board a move did not ask for"
    for item, (k, mu) in made.items():
        at = MU_STEPS.index(mu)
        for m in MU_STEPS[max(0, at - 2):at + 3]:
            if ctx.kept(k, m)[0].tobytes() == item[1]:  # a setting sharing this board
                same(grid.board(ranker, k, m, b, 0), want(k, m), f"K={k} μ={m}, made at μ={mu}")
    return grid


@pytest.mark.parametrize("judge", ["gpt-4", None])
def test_grid_boards_are_the_boards_from_scratch_on_vicuna80(shipped_store, judge):
    with shipped_store.session():
        ctx, votes = context(shipped_store, "vicuna80", judge)
        reference = reference_for("vicuna80", None, shipped_store)[0]
    k0 = ctx.n_pool // 2
    # keep-K left and μ right (the benchmark's moves), a jump, and back to a setting met before
    slide(ctx, votes, reference, [(k0, 8), (k0 - 1, 8), (k0 - 1, 9), (k0 - 2, 9), (3, 16), (k0 - 1, 9)], b=40)


def test_grid_boards_on_the_sparse_70_model_set(tmp_path):
    """70 models, 12 per prompt, many pairs never compared, no reference: the page's ~0.3 s bootstrap."""
    from test_browser_stress import sparse_verdicts

    from engine.ingest.importer import store_report, validate_file
    from engine.ingest.shipped import open_store

    store = open_store(tmp_path / "lens.duckdb")
    try:
        store_report(store, validate_file(sparse_verdicts(tmp_path / "s.csv"), "s.csv", dataset="s"), "s")
        ctx, votes = context(store, "s")
    finally:
        store.close()
    k0 = ctx.n_pool // 2
    slide(ctx, votes, None, [(k0, 8), (k0 - 1, 8), (k0 - 1, 9)], b=20)


SHAPES = (
    Shape(seed=3, n_models=6, n_prompts=7, judges=2, paraphrases=1, samples=2, wider_samples=True,
          orders="both", tie_p=0.15, categories=2, repeats=True),
    Shape(seed=8, n_models=6, n_prompts=30, sparse=True, paraphrases=1, orders="mixed", judges=2),
)


@pytest.mark.parametrize(("shape", "ranker", "stride"), [(SHAPES[0], "bt", 1), (SHAPES[0], "elo", 1),
                                                         (SHAPES[0], "winrate", 1), (SHAPES[1], "bt", 12)],
                         ids=["bt", "elo", "winrate", "sparse-bt"])
def test_every_setting_of_a_generated_shape(tmp_path_factory, shape, ranker, stride):
    """Every K (every ``stride``-th on the 70-model shape) at five neighbouring μ steps, asked in a shuffled
    order of one grid, is the board from scratch (settings keeping the same graphs share one board)."""
    store, _, _ = imported(tmp_path_factory.mktemp("boards"), shape)
    try:
        ctx, votes = context(store, "seam")
    finally:
        store.close()
    models = list(ctx.stack.models)
    reference = pd.Series(np.random.default_rng(shape.seed).normal(size=len(models)), index=models)
    settings = [(k, mu) for mu in MU_STEPS[6:11] for k in range(1, ctx.n_pool + 1, stride)]
    order = np.random.default_rng(0).permutation(len(settings))
    grid = BoardGrid(ctx, votes, reference=reference, reference_note="note", extra_params=EXTRA)
    shared = 0
    for n in order:
        k, mu = settings[n]
        shared += grid.has(ranker, k, mu, 10, 0)
        same(grid.board(ranker, k, mu, 10, 0), scratch(ctx, votes, reference, ranker, k, mu, 10),
             f"{ranker} K={k} μ={mu}")
    assert 0 < shared < len(settings)  # some settings shared a board made at another μ, not all
