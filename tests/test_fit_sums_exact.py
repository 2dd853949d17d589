"""Three pieces of a bootstrapped board made faster in 0.20.4, each against the way it was computed before
(written out here as the brute force): the Newton kernel's row sums, its likelihood of some rows, the
strong-connectivity test every Bradley-Terry and Davidson fit makes, and the percentile interval's columns.
Each must give the same bits, not nearly the same numbers: the sensitivity curves share fits between
batches (engine.experiments.curves.FitCache) and the app's boards are compared with the CLI's exactly."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.graphs.reachability import closure_batch, strongly_connected_batch
from engine.rankers.bt_solvers import ROW_SUM_COLUMNS, _ll_pairs, _ll_rows, row_sums
from engine.ranking.bootstrap import _column_quantile

SPECIAL = np.array([0.0, -0.0, 1.0, -1.0, 1e-300, -1e-300, 1e300, np.inf, -np.inf, np.nan, 0.1, 3.0])


def bits(x: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(x, dtype=np.float64).view(np.int64)


def sum_from_zero(x: np.ndarray) -> np.ndarray:
    """Each row added left to right from zero, one Python float at a time."""
    out = np.zeros(x.shape[0])
    for r in range(x.shape[0]):
        acc = 0.0
        for v in x[r]:
            acc = acc + float(v)
        out[r] = acc
    return out


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 6), st.integers(0, 90), st.integers(0, 2**32 - 1),
       st.sampled_from(["normal", "special"]))
def test_row_sums_add_each_row_from_zero_left_to_right(rows, cols, seed, kind):
    rng = np.random.default_rng(seed)
    if kind == "normal":
        x = rng.normal(size=(rows, cols)) * 10.0 ** rng.integers(-8, 8, size=(rows, cols))
    else:
        x = rng.choice(SPECIAL, size=(rows, cols))
    with np.errstate(invalid="ignore", over="ignore"):
        want = sum_from_zero(x)
        got = row_sums(x)
    # the same bits (the sign of a zero included: a row of -0.0 alone sums to +0.0 from zero), NaN where
    # NaN (which NaN, its sign and payload, is the processor's choice of operand and not a number)
    nan = np.isnan(want)
    assert np.array_equal(np.isnan(got), nan)
    assert np.array_equal(bits(got[~nan]), bits(want[~nan]))


def test_a_row_of_negative_zeros_sums_to_positive_zero_past_the_column_loop():
    x = np.full((3, ROW_SUM_COLUMNS + 5), -0.0)
    x[1, -1] = 2.5
    got = row_sums(x)
    assert not np.signbit(got[0]) and got[1] == 2.5
    assert np.array_equal(bits(got), bits(sum_from_zero(x)))


def test_the_likelihood_of_some_rows_is_each_rows_own():
    rng = np.random.default_rng(3)
    m, pairs = 40, 300
    d = rng.normal(0, 3, (m, pairs))
    e = np.exp(-np.abs(d))
    n_ij = rng.integers(0, 5, (m, pairs)).astype(np.float64)
    b = np.floor(n_ij * rng.random((m, pairs)))
    work = (np.empty((m, pairs)), np.empty((m, pairs)))
    alone = np.array([_ll_pairs(d[r:r + 1], e[r:r + 1], n_ij[r:r + 1], b[r:r + 1])[0] for r in range(m)])
    for rows in (np.arange(m), np.arange(0, m, 2), np.array([3]), np.array([0, 7, 39])):
        got = _ll_rows(rows, d, e, n_ij, b, work)
        assert np.array_equal(bits(got), bits(alone[rows]))


def strongly_connected_by_closure(adj: np.ndarray) -> np.ndarray:
    """The test as it was until 0.20.4: the whole reflexive-transitive closure, every entry reached."""
    n = adj.shape[-1]
    return closure_batch(adj).reshape(adj.shape[0], n * n).all(axis=1)


@settings(max_examples=80, deadline=None)
@given(st.integers(1, 12), st.integers(0, 24), st.floats(0.0, 0.6), st.integers(0, 2**32 - 1))
def test_strong_connectivity_equals_the_closure(batch, n, density, seed):
    rng = np.random.default_rng(seed)
    adj = rng.random((batch, n, n)) < density
    if n and batch > 1:  # a directed cycle through every model (connected) and the same less one arc (not)
        ring = np.roll(np.eye(n, dtype=bool), 1, axis=1)
        adj[0] |= ring
        if n > 1:
            adj[1] = ring & ~np.eye(n, k=1 - n, dtype=bool) if n > 2 else np.zeros((n, n), dtype=bool)
    got = strongly_connected_batch(adj)
    assert got.dtype == bool and got.shape == (batch,)
    assert np.array_equal(got, strongly_connected_by_closure(adj))


def test_a_long_path_needs_every_step():
    n = 40
    chain = np.eye(n, k=1, dtype=bool) | np.eye(n, k=-1, dtype=bool)  # a path both ways: depth n - 1 from 0
    broken = chain.copy()
    broken[n - 2, n - 1] = False  # the last model reached no more
    assert list(strongly_connected_batch(np.stack([chain, broken]))) == [True, False]


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 60), st.integers(1, 9), st.floats(0.0, 0.7), st.integers(0, 2**32 - 1),
       st.sampled_from(["linear", "lower", "higher"]), st.sampled_from([0.025, 0.975, 0.05, 0.5]))
def test_column_quantiles_are_nanquantiles(rows, cols, holes, seed, method, q):
    rng = np.random.default_rng(seed)
    x = np.round(rng.normal(size=(rows, cols)), int(rng.integers(0, 4)))  # ties, and -0.0 beside 0.0
    x[rng.random((rows, cols)) < holes] = np.nan
    x = x[:, ~np.isnan(x).all(axis=0)]  # a column with no value is never reduced (_over_defined_columns)
    if x.shape[1] == 0:
        return
    want = np.array([np.nanquantile(x[:, c], q, method=method) for c in range(x.shape[1])])
    got = _column_quantile(x, q, method)
    # the same bits, but for the sign of a zero: -0.0 and 0.0 are equal to a sort and to numpy's partition
    # alike, which may leave either where both are in a column (scores never hold -0.0: they are centred)
    assert np.array_equal(got, want, equal_nan=True)
    assert np.array_equal(bits(got[want != 0]), bits(want[want != 0]))
