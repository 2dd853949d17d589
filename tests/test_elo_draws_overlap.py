"""Elo's bootstrap with its draws made ahead in a thread (``resample_draws.DrawnRows``) and the compiled
Elo loop fitting resample by resample as each row arrives (``elo.elo_ratings_resampled`` given a
``ResampleRepeats``), against a brute-force refit of each resample's repeated votes with numpy's own
draws, to the bit.

The data separate the paths: several judges and paraphrase variants in both presentation orders with
repeated battles (units holding several votes: the graph and prompt units gather counts, the vote unit
slices them), one pair per prompt, and a sparse 70-model set. The drawing thread's own contract (rows
as numpy draws them, read while later rows are still being drawn, a widened table, an error handed to
the reader, an early exit that stops the thread) is checked on its own.
"""

from __future__ import annotations

import numpy as np
import pytest

import engine.rankers.elo as elo_module
import engine.rankers.resample_draws as draws_module
from engine.rankers.objects import ranker_object
from engine.rankers.resample_draws import DrawnRows, ResampleRepeats
from engine.rankers.votes import votes as make_votes
from engine.ranking.count_bootstrap import bootstrap_counts
from engine.ranking.vote_query import frame_vote_rows
from tests.seam_data import Shape, verdicts

SHAPES = (
    Shape(seed=3, n_models=6, n_prompts=5, judges=3, paraphrases=1, samples=1, orders="both", repeats=True),
    Shape(seed=5, n_models=6, n_prompts=40, judges=2, one_pair=True, orders="AB", repeats=True),
    Shape(seed=6, n_prompts=40, sparse=True, judges=2, paraphrases=1, orders="none"),
)


def refit_samples(v, unit: str, B: int, seed: int) -> np.ndarray:
    """Each resample refitted on its own: numpy's multinomial rows in turn, each vote repeated as often
    as its unit was drawn, in the votes' order, then Elo's sequential fit (``Elo.fit_counts``)."""
    if unit == "vote":
        unit_of = np.arange(len(v))
    else:
        unit_of = np.unique(v.graph if unit == "graph" else v.prompt, return_inverse=True)[1].ravel()
    U = int(unit_of.max()) + 1
    rng = np.random.default_rng(seed)
    elo = ranker_object("elo")
    rows = []
    for _ in range(B):
        drawn = rng.multinomial(U, np.full(U, 1.0 / U))
        sub = v.take(np.repeat(np.arange(len(v)), drawn[unit_of]))
        rows.append(elo.fit_counts(sub.fit_pair_counts(), sub).scores.reindex(list(v.models)).to_numpy())
    return np.vstack(rows)


@pytest.mark.parametrize("shape", SHAPES, ids=["judges-variants", "one-pair", "sparse70"])
@pytest.mark.parametrize("unit", ["vote", "graph", "prompt"])
def test_overlapped_draws_and_fits_equal_each_resamples_refit(shape, unit, monkeypatch):
    """Both compiled loops from the first unit and vote (the draws in their thread, Elo resample by
    resample beside them) give every resample's refit to the bit, and so does the path that draws with
    numpy and runs the compiled Elo loop over all resamples chunk by chunk."""
    v = make_votes(frame_vote_rows(verdicts(shape)))
    want = refit_samples(v, unit, B=9, seed=4)
    monkeypatch.setattr(draws_module, "COMPILED_FROM_UNITS", 0)
    monkeypatch.setattr(elo_module, "COMPILED_FROM_VOTES", 0)
    overlapped = bootstrap_counts(v, "elo", B=9, seed=4, unit=unit).samples
    assert np.array_equal(overlapped, want, equal_nan=True)
    monkeypatch.setattr(draws_module, "COMPILED_FROM_UNITS", 10**12)  # numpy's draws, Elo chunk by chunk
    assert np.array_equal(bootstrap_counts(v, "elo", B=9, seed=4, unit=unit).samples, want, equal_nan=True)
    assert np.isfinite(want).all()


def test_a_row_is_read_as_soon_as_it_is_drawn_and_equals_numpys():
    """``ready(b + 1)`` returns once row b is drawn (later rows may still be zeros) and row b is numpy's
    b-th row; after the block the generator is where numpy's B calls leave it."""
    U, B = 150_000, 4
    check = np.random.default_rng(8)
    numpy_rows = [check.multinomial(U, np.full(U, 1.0 / U)) for _ in range(B)]
    rng = np.random.default_rng(8)
    with DrawnRows(rng, U, B, compiled=True) as drawn:
        for b in range(B):
            assert np.array_equal(drawn.ready(b + 1)[b], numpy_rows[b]), b
    assert np.array_equal(rng.random(3), check.random(3))


def test_repeats_gather_units_and_slice_votes():
    """``ResampleRepeats``: a vote's count is its unit's; the vote unit is a view of the table; called
    with two arguments it is the whole (B, votes) table."""
    rng = np.random.default_rng(2)
    with DrawnRows(rng, 5, 3, compiled=True) as drawn:
        table = drawn.ready(3).copy()
        unit_of = np.array([0, 0, 3, 4, 1, 1, 2])
        by_unit = ResampleRepeats(drawn, unit_of)
        assert np.array_equal(by_unit.rows(1, 3, 2, 6), table[1:3][:, unit_of[2:6]])
        assert np.array_equal(by_unit(0, 7), table[:, unit_of])
        by_vote = ResampleRepeats(drawn, None)
        assert np.shares_memory(by_vote.rows(0, 2, 1, 4), drawn.ready(3))
        assert np.array_equal(by_vote.rows(0, 2, 1, 4), table[0:2, 1:4])


def test_a_widened_table_keeps_the_rows_read_before():
    """Two units, 2,000 draws: numpy's BTPE rows, counts near 1,000, so the drawing thread widens the
    table to int64; every row equals numpy's."""
    check = np.random.default_rng(1)
    want = np.stack([check.multinomial(2_000, [0.5, 0.5]) for _ in range(5)])
    with DrawnRows(np.random.default_rng(1), 2, 5, n=2_000, compiled=True) as drawn:
        first = drawn.ready(1)[0].copy()
        table = drawn.ready(5)
    assert table.dtype == np.int64 and np.array_equal(table, want) and np.array_equal(first, want[0])


def test_an_error_in_the_drawing_thread_reaches_the_reader():
    """A generator the thread cannot read: the reader raises the thread's error (no wait for ever)."""
    with pytest.raises(AttributeError), DrawnRows(object(), 10, 2, compiled=True) as drawn:  # type: ignore[arg-type]
        drawn.ready(2)


def test_leaving_early_stops_the_drawing_thread():
    """An error while the rows are read ends the block: the thread stops after its row and is joined."""
    rng = np.random.default_rng(0)
    with pytest.raises(RuntimeError, match="fit failed"), DrawnRows(rng, 120_000, 50, compiled=True) as drawn:
        drawn.ready(1)
        raise RuntimeError("fit failed")
    assert drawn._thread is not None and not drawn._thread.is_alive()
    assert drawn._drawn < 50
