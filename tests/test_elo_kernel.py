"""Elo's compiled resampled loop (``engine.rankers.elo_kernel``, machine code from LLVM IR) on what the
shapes of tests/test_elo_bootstrap_batched.py do not reach: repeat counts past 127 in one byte (read
unsigned), repeat tables of other integer dtypes, and the layouts it refuses to read through raw
pointers. The second path is the sequential ``elo_ratings`` on each resample's repeated votes."""

from __future__ import annotations

import numpy as np
import pytest

from engine.rankers.elo import elo_ratings, elo_ratings_resampled
from engine.rankers.elo_kernel import compiled_elo_steps


def _votes(seed: int, V: int, n: int):
    rng = np.random.default_rng(seed)
    i = rng.integers(0, n - 1, V)
    j = i + 1 + rng.integers(0, 10**6, V) % (n - 1 - i)
    return i, j, rng.choice([0.0, 0.5, 1.0], V)


@pytest.mark.parametrize("dtype", [np.uint8, np.int16, np.uint32, np.int64])
def test_large_counts_and_any_integer_dtype_equal_the_sequential_elo(dtype):
    """Counts up to 250 (a one-byte count above 127 is not negative) in every dtype, and zeros."""
    i, j, s = _votes(21, 40, 6)
    rng = np.random.default_rng(22)
    reps = rng.integers(0, 4, (3, 40))
    reps[0, 5], reps[1, 17], reps[2, 0] = 250, 129, 200
    reps = reps.astype(dtype)
    got = elo_ratings_resampled(i, j, s, 6, lambda a, b: reps[:, a:b], compiled=True, k=8.0)
    for b in range(3):
        idx = np.repeat(np.arange(40), reps[b].astype(np.int64))
        np.testing.assert_array_equal(got[b], elo_ratings(i[idx], j[idx], s[idx], 6, k=8.0))


def test_a_vote_index_outside_the_ratings_is_refused():
    """The loop writes through raw pointers: an index past the models stops before it runs."""
    i, j, s = np.array([0, 1]), np.array([1, 5]), np.array([1.0, 0.0])
    with pytest.raises(ValueError, match="outside"):
        elo_ratings_resampled(i, j, s, 3, lambda a, b: np.ones((2, b - a), np.uint8), compiled=True)
    with pytest.raises(ValueError, match="outside"):
        elo_ratings_resampled(np.array([-1]), np.array([1]), np.array([1.0]), 3,
                              lambda a, b: np.ones((2, b - a), np.uint8), compiled=True)


def test_layouts_it_cannot_read_are_refused():
    """A ratings view that is not contiguous, votes of another dtype, or counts past the votes."""
    steps = compiled_elo_steps()
    i, j, s = (np.array([0, 1], np.int64), np.array([1, 2], np.int64), np.array([1.0, 0.5]))
    reps = np.ones((2, 2), np.uint8)
    with pytest.raises(ValueError, match="ratings"):
        steps(np.full((2, 6), 1000.0)[:, ::2], i, j, s, reps, 0, 4.0, 10.0, 400.0)
    with pytest.raises(ValueError, match="votes"):
        steps(np.full((2, 3), 1000.0), i.astype(np.int32), j, s, reps, 0, 4.0, 10.0, 400.0)
    with pytest.raises(ValueError, match="line up"):
        steps(np.full((2, 3), 1000.0), i, j, s, reps, 1, 4.0, 10.0, 400.0)
    ok = np.full((2, 3), 1000.0)
    steps(ok, i, j, s, reps, 0, 4.0, 10.0, 400.0)
    np.testing.assert_array_equal(ok[0], elo_ratings(i, j, s, 3))
