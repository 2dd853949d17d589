"""The bootstrap's equal-weight draws (``engine.rankers.resample_draws.equal_multinomial_rows``) against
numpy itself: B calls of ``rng.multinomial(n, np.full(U, 1 / U))`` in a row from the same seed give the
same (B, U) counts, and the generator is left where numpy leaves it (the next draws agree too).

The cases separate the paths: a handful of units (the running remainder's rounding sends p_j above 1/2
near the end: numpy draws the complement there), many units, more draws than units (numpy's BTPE
sampler, which the compiled loop hands back to numpy), counts above 255 (the uint8 table widens), no
draw at all, and a bootstrap of Elo on several judges, variants and a sparse 70-model set whose seeded
intervals must not move.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import engine.rankers.resample_draws as draws_module
from engine.rankers.resample_draws import _unit_terms, equal_multinomial_rows
from engine.rankers.votes import votes as make_votes
from engine.ranking.count_bootstrap import bootstrap_counts
from engine.ranking.vote_query import frame_vote_rows
from tests.seam_data import Shape, verdicts


def numpy_rows(seed: int, U: int, B: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """numpy's own rows, one call per row in turn, and the generator's next three uniforms."""
    rng = np.random.default_rng(seed)
    rows = np.stack([rng.multinomial(n, np.full(U, 1.0 / U)) for _ in range(B)])
    return rows, rng.random(3)


def assert_same_as_numpy(seed: int, U: int, B: int, n: int, compiled: bool) -> np.ndarray:
    rows, after = numpy_rows(seed, U, B, n)
    rng = np.random.default_rng(seed)
    got = equal_multinomial_rows(rng, U, B, n=n, compiled=compiled)
    assert np.array_equal(got, rows), (U, n, seed)
    assert (got == rows).all() and got.shape == rows.shape
    assert np.array_equal(rng.random(3), after), f"generator left elsewhere (U={U}, n={n})"
    return got


@pytest.mark.parametrize("compiled", [True, False], ids=["compiled", "numpy"])
def test_rows_and_generator_state_equal_numpys_for_small_unit_counts(compiled):
    """Every U from 1 to 40 with n = U (a resample), 3U + 1, 29.5U + 1 (n_j p_j wanders across 30 after
    some uniforms were read: the row falls back to numpy from the saved state), 40U + 7 (BTPE from the
    first unit) and 0, two seeds, five rows each."""
    for U in range(1, 41):
        for n in (U, 3 * U + 1, 29 * U + U // 2 + 1, 40 * U + 7, 0):
            for seed in (0, 11):
                assert_same_as_numpy(seed, U, 5, n, compiled)


def test_the_small_cases_reach_the_complement_branch():
    """The running remainder's rounding puts p_j above 1/2 for some U below 41 (so the test above runs
    numpy's complement branch), and never for most units of a large U."""
    flipped_at = [U for U in range(3, 41) if _unit_terms(U)[3].any()]
    assert flipped_at, "no U in 3..40 reaches p_j > 1/2: the complement branch is not exercised"
    assert not _unit_terms(100_000)[3][:-2].any()


def test_many_units_the_bootstraps_regime():
    """200,000 units, three resamples: the compiled loop's path on the sizes it is picked for."""
    got = assert_same_as_numpy(5, 200_000, 3, 200_000, compiled=True)
    assert got.dtype == np.uint8 and int(got.sum()) == 3 * 200_000


def test_counts_above_255_widen_the_table():
    """Two units, 2,000 draws: counts near 1,000 (uint8 cannot hold them), by numpy's BTPE fallback."""
    got = assert_same_as_numpy(2, 2, 4, 2_000, compiled=True)
    assert got.dtype == np.int64 and int(got.max()) > 255


@settings(max_examples=60, deadline=None)
@given(U=st.integers(1, 400), extra=st.integers(-400, 1200), B=st.integers(1, 4), seed=st.integers(0, 2**32))
def test_random_sizes_equal_numpys(U, extra, B, seed):
    """Any U, n = max(0, U + extra), seed: the compiled loop's rows and final state equal numpy's."""
    assert_same_as_numpy(seed, U, B, max(0, U + extra), compiled=True)


def test_size_picks_the_compiled_loop_and_numpy_draws_without_numba(monkeypatch):
    """From ``COMPILED_FROM_UNITS`` units the compiled loop runs (its kernel is called); without numba
    (the import fails) numpy draws the same rows."""
    calls = []
    real = draws_module._compiled_row()

    def counting(*args):
        calls.append(1)
        return real(*args)

    monkeypatch.setattr(draws_module, "_compiled_row", lambda: counting)
    monkeypatch.setattr(draws_module, "COMPILED_FROM_UNITS", 50)
    assert_same_as_numpy(3, 49, 2, 49, compiled=None)
    assert calls == []
    assert_same_as_numpy(3, 50, 2, 50, compiled=None)
    assert len(calls) == 2

    def no_numba():
        raise ImportError("numba")

    monkeypatch.setattr(draws_module, "_compiled_row", no_numba)
    assert_same_as_numpy(3, 60, 2, 60, compiled=None)


SHAPES = (
    Shape(seed=3, n_models=6, n_prompts=5, judges=3, paraphrases=1, samples=1, orders="both", repeats=True),
    Shape(seed=5, n_models=6, n_prompts=40, judges=2, one_pair=True, orders="AB", repeats=True),
    Shape(seed=6, n_prompts=40, sparse=True, judges=2, paraphrases=1, orders="none"),
)


@pytest.mark.parametrize("shape", SHAPES, ids=["judges-variants", "one-pair", "sparse70"])
@pytest.mark.parametrize("unit", ["vote", "graph", "prompt"])
def test_elo_bootstrap_samples_do_not_move(shape, unit, monkeypatch):
    """Elo's bootstrap (``count_bootstrap._refits``) with the compiled draws from the first unit gives
    the samples it gives with numpy drawing every row: the seeded intervals are unchanged."""
    v = make_votes(frame_vote_rows(verdicts(shape)))
    monkeypatch.setattr(draws_module, "COMPILED_FROM_UNITS", 10**12)
    before = bootstrap_counts(v, "elo", B=12, seed=4, unit=unit).samples
    monkeypatch.setattr(draws_module, "COMPILED_FROM_UNITS", 0)
    after = bootstrap_counts(v, "elo", B=12, seed=4, unit=unit).samples
    assert np.array_equal(before, after, equal_nan=True)
    assert np.isfinite(after).any()
