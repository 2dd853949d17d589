"""``rank_ub``: LMArena's rank (UB) = 1 + #{j : lower_j > upper_i} over the score intervals of the board.

Checked against a brute-force pairwise count (the comparison FastChat's leaderboard makes, where a
comparison with a missing bound is false) on intervals drawn by hypothesis from a small grid, so equal
bounds are common, with missing intervals among them. The seam between the CLI and the app on one real
board is tests/app/test_rank_ub_seam.py."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.ranking.board import rank_upper_bound


def brute_force(lows: list[float], highs: list[float]) -> list[int]:
    """1 + the models j != i whose lower bound is strictly above i's upper bound (NaN compares false)."""
    n = len(lows)
    return [1 + sum(1 for j in range(n) if j != i and lows[j] > highs[i]) for i in range(n)]


@st.composite
def intervals(draw) -> tuple[list[float], list[float]]:
    """Score intervals on a grid of 7 values (equal bounds across models are frequent); about one in
    five models has no interval (both bounds NaN, as a not-estimable interval is stored)."""
    n = draw(st.integers(1, 12))
    lows, highs = [], []
    for _ in range(n):
        if draw(st.integers(0, 4)) == 0:
            lows.append(math.nan)
            highs.append(math.nan)
            continue
        a, b = draw(st.integers(0, 6)), draw(st.integers(0, 6))
        lows.append(float(min(a, b)))
        highs.append(float(max(a, b)))
    return lows, highs


@settings(max_examples=300, deadline=None)
@given(intervals())
def test_rank_ub_is_the_pairwise_count_with_ties_and_missing_intervals(iv):
    """Kills: counting equal bounds as above (side="left"), counting a missing lower bound as above
    every model (NaN sorted last), and a model without an interval ranked last instead of first."""
    lows, highs = iv
    assert rank_upper_bound(lows, highs).tolist() == brute_force(lows, highs)


def test_rank_ub_by_hand():
    # [9, 11], [8, 10], [5, 8], [1, 4], none: [5, 8] lies below [9, 11] only ([8, 10] touches it at 8);
    # [1, 4] below the three intervals; the model without one could be anywhere: rank 1, above no one
    got = rank_upper_bound([9, 8, 5, 1, np.nan], [11, 10, 8, 4, np.nan])
    assert got.tolist() == [1, 1, 2, 4, 1]
