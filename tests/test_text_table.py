"""``engine.cli._text_table.text_table`` writes what pandas' ``DataFrame.to_string(index=False)`` writes,
for the columns it takes (integers, finite floats, texts), on random tables: negative numbers, integral
floats, values needing scientific notation (below 1e-6, or above 1e6 and long), -0.0, long and non-ASCII
texts, one-row tables. Columns it leaves to pandas (NaN, infinities, booleans, texts with a line break)
answer None, never a different text."""

from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.cli._text_table import text_table

FLOATS = st.one_of(
    st.floats(-1e3, 1e3, allow_nan=False, allow_infinity=False),
    st.floats(-1e-5, 1e-5, allow_nan=False, allow_infinity=False),
    st.floats(-1e13, 1e13, allow_nan=False, allow_infinity=False),
    st.integers(-10**7, 10**7).map(float),
    st.integers(-10**12, 10**12).map(lambda i: i / 10**4),  # above 1e6 with a few decimals: 11-14 characters
    st.sampled_from([0.0, -0.0, 0.5, 1e-7, 1234567.5, 0.1 + 0.2, 2.0]),
)
TEXTS = st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cc")), min_size=0, max_size=70)
NAMES = st.text(alphabet="abcdefghijklmnopqrstuvwxyz_", min_size=1, max_size=15)


@st.composite
def tables(draw):
    n = draw(st.integers(1, 8))
    kinds = draw(st.lists(st.sampled_from(["int", "float", "text"]), min_size=1, max_size=6))
    names = draw(st.lists(NAMES, min_size=len(kinds), max_size=len(kinds), unique=True))
    columns = []
    for kind in kinds:
        if kind == "int":
            columns.append(np.asarray(draw(st.lists(st.integers(-10**12, 10**12), min_size=n, max_size=n)),
                                      dtype=np.int64))
        elif kind == "float":
            columns.append(np.asarray(draw(st.lists(FLOATS, min_size=n, max_size=n)), dtype=np.float64))
        else:
            columns.append(draw(st.lists(TEXTS, min_size=n, max_size=n)))
    return names, columns


def pandas_text(names, columns) -> str:
    return pd.DataFrame(dict(zip(names, columns, strict=True))).to_string(index=False)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tables())
def test_text_table_is_pandas_to_string(table):
    names, columns = table
    assert text_table(names, columns) == pandas_text(names, columns)


def test_the_leaderboard_shape_and_the_notation_switches():
    """Fixed cases that separate each rule: the shared trailing zeros, scientific for a small value and for
    a long large one, a numeric header's leading space, texts right-aligned."""
    cases = [
        (["rank", "model", "score"], [np.array([1, 2, 10]), ["gpt4", "claude", "a-much-longer-name"],
                                      np.array([0.930684, -0.015701, 0.5])]),
        (["f"], [np.array([0.5, 0.25])]),            # trimmed to two decimals
        (["f"], [np.array([1e-7, 2.0])]),            # scientific: a value below 1e-6
        (["f"], [np.array([123456789012.5, 2.0])]),  # scientific: above 1e6 and longer than 12
        (["f"], [np.array([1234567.5, 2.0])]),       # fixed: above 1e6 but short
        (["f"], [np.array([12345678.1234])]),         # scientific: above 1e6, 13 characters fixed
        (["f"], [np.array([1234567.123])]),           # fixed: above 1e6, 11 characters
        (["f"], [np.array([-0.0, 2.0])]),
        (["t", "i"], [["é中文", "x" * 60], np.array([-3, 4])]),
    ]
    for names, columns in cases:
        assert text_table(names, columns) == pandas_text(names, columns), names


def test_columns_left_to_pandas_answer_none():
    for column in (np.array([1.0, np.nan]), np.array([1.0, np.inf]), np.array([True, False]),
                   ["a", "line\nbreak"], ["a", None], np.array([1.0, 2.0], dtype=np.float32)):
        assert text_table(["c"], [column]) is None
    assert text_table([], []) is None
    assert text_table(["a"], [np.zeros(0, dtype=np.int64)]) is None
