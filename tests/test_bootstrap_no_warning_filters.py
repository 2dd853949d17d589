"""``BootstrapResult``'s intervals and reasons are computed without touching the process's warning filters
(the app runs bootstrap jobs in background threads; ``warnings.catch_warnings`` there swapped the one filter
list under every other thread, which once turned a warning another thread had silenced into a test error),
and they are the values of the old warning-silenced reductions bit for bit: NaN-skipping reductions over
every column at once, on resamples with models undefined in some, in all, and in none of the resamples."""

from __future__ import annotations

import warnings

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.ranking.bootstrap import BootstrapResult


def _old(x: np.ndarray, level: float, integer: bool) -> tuple[np.ndarray, np.ndarray]:
    q = (1.0 - level) / 2.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        if integer:
            return (np.nanquantile(x, q, axis=0, method="lower"),
                    np.nanquantile(x, 1.0 - q, axis=0, method="higher"))
        low, high = np.nanquantile(x, [q, 1.0 - q], axis=0)
        return low, high


def _result(samples: np.ndarray, level: float) -> BootstrapResult:
    ranks = np.where(np.isnan(samples), np.nan, np.argsort(np.argsort(-np.nan_to_num(samples), axis=1),
                                                           axis=1) + 1.0)
    return BootstrapResult(ranker="bt", models=tuple(f"m{i}" for i in range(samples.shape[1])),
                           B=samples.shape[0], seed=0, level=level, samples=samples, rank_samples=ranks,
                           method="test")


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 30), st.integers(1, 6), st.sampled_from([0.9, 0.95]), st.integers(0, 2**31 - 1))
def test_intervals_equal_the_silenced_reductions_and_leave_the_filters_alone(B, n, level, seed):
    rng = np.random.default_rng(seed)
    samples = rng.normal(size=(B, n))
    samples[rng.random((B, n)) < 0.3] = np.nan
    samples[:, rng.integers(n)] = np.nan  # a model undefined in every resample
    if n > 2:
        samples[:, rng.integers(n)] = 1.5  # a model with one score in every resample
    res = _result(samples, level)
    why = np.array(res.not_estimable_reasons(), dtype=object)
    for integer, x in ((False, res.samples), (True, res.rank_samples)):
        gone = np.isnan(res.samples) | (why != "")[None, :]
        want = _old(np.where(gone, np.nan, x), level, integer)
        got = res.interval_bounds(ranks=integer)
        for w, g in zip(want, got, strict=True):
            np.testing.assert_array_equal(g, w)
    defined = (~np.isnan(samples)).sum(axis=0)
    assert [r.startswith("defined in") for r in why] == list(defined < 2)


def test_no_warning_filter_is_touched(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("warnings.catch_warnings swaps the filters of every thread")

    monkeypatch.setattr(warnings, "catch_warnings", refuse)
    samples = np.array([[1.0, np.nan, 0.5], [2.0, np.nan, np.nan], [0.5, np.nan, 0.25]])
    res = _result(samples, 0.95)
    # pyproject's filterwarnings makes a RuntimeWarning (numpy's all-NaN slice) an error here
    assert res.not_estimable_reasons()[1] == "defined in none of 3 resample(s)"
    low, high = res.interval_bounds(ranks=False)
    assert np.isnan(low[1]) and np.isnan(high[1]) and low[0] <= high[0]
    res.interval_bounds(ranks=True)
