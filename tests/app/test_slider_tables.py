"""The small table steps of a Truncation slider move, each against a second path.

``with_reference`` (the ref_rank / ref_diff columns) and ``engine.views.viz.rank_change_frame`` (the Δ rank
column) run on every keep-K / μ move before the table is drawn; both were rewritten without pandas' slow
paths (a ``.loc`` NA assignment, a ``merge``). Here the whole frame, dtypes included, is compared with a
row-by-row brute force and with the left ``merge`` the column is defined by, on tables that separate them:
unmapped models, models missing from one board, tied scores and ranks, both string dtypes, a shuffled index.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.views.appstate import with_reference
from engine.views.viz import rank_change_frame

MODELS = [f"m{i}" for i in range(8)]


def _reference_brute(table: pd.DataFrame, reference: pd.Series | None) -> pd.DataFrame:
    """ref_rank / ref_diff one row at a time: a competition rank counts the mapped models strictly above."""
    out = table.copy()
    if reference is None:
        return out
    ref = reference.to_dict()
    mapped = [m for m in table["model"] if m in ref]
    score = dict(zip(table["model"], table["score"], strict=True))
    ref_rank, ref_diff = [], []
    for m in table["model"]:
        if m not in ref:
            ref_rank.append(pd.NA)
            ref_diff.append(pd.NA)
            continue
        r = 1 + sum(ref[o] > ref[m] for o in mapped)
        here = 1 + sum(score[o] > score[m] for o in mapped)
        ref_rank.append(r)
        ref_diff.append(here - r)
    out["ref_rank"] = pd.array(ref_rank, dtype="Int64")
    out["ref_diff"] = pd.array(ref_diff, dtype="Int64")
    return out


def _rank_change_merge(before: pd.DataFrame, after: pd.DataFrame) -> pd.DataFrame:
    """The Δ rank column by its definition: a left merge of ``after`` with ``before``'s ranks."""
    b = before[["model", "rank"]].rename(columns={"rank": "rank_all"})
    out = after.merge(b, on="model", how="left")
    out["rank_change"] = (out["rank_all"] - out["rank"]).astype("Int64")
    return out


def _board(data, models: list[str], dtype: str) -> pd.DataFrame:
    """A leaderboard-shaped table: scores with ties (few distinct values), competition ranks, a shuffled
    index, the model column as ``dtype``."""
    scores = data.draw(st.lists(st.sampled_from([0.0, 0.5, 1.0, 2.0]), min_size=len(models),
                                max_size=len(models)))
    t = pd.DataFrame({"model": pd.array(models, dtype=dtype), "score": np.array(scores, dtype=np.float64)})
    t = t.sort_values("score", ascending=False, kind="stable").reset_index(drop=True)
    t.insert(0, "rank", t["score"].rank(ascending=False, method="min").astype(np.int64))
    t["wins"] = np.arange(len(t), dtype=np.int64)
    index = data.draw(st.permutations(range(len(t))))
    return t.set_axis(pd.Index(index, dtype=np.int64))


DTYPES = st.sampled_from(["object", "string[pyarrow]", "string[python]"])


@settings(max_examples=60, deadline=None)
@given(data=st.data(), dtype=DTYPES)
def test_with_reference_equals_row_by_row(data, dtype):
    models = data.draw(st.lists(st.sampled_from(MODELS), min_size=1, max_size=8, unique=True))
    table = _board(data, models, dtype)
    mapped = data.draw(st.lists(st.sampled_from(MODELS + ["zz"]), max_size=9, unique=True))
    values = data.draw(st.lists(st.sampled_from([10.0, 20.0, 30.0]), min_size=len(mapped),
                                max_size=len(mapped)))
    reference = None if data.draw(st.booleans()) and not mapped else pd.Series(values, index=mapped,
                                                                                 dtype=np.float64)
    pd.testing.assert_frame_equal(with_reference(table, reference), _reference_brute(table, reference))


@settings(max_examples=60, deadline=None)
@given(data=st.data(), dtype=DTYPES)
def test_rank_change_equals_left_merge(data, dtype):
    after_models = data.draw(st.lists(st.sampled_from(MODELS), min_size=1, max_size=8, unique=True))
    before_models = data.draw(st.lists(st.sampled_from(MODELS), min_size=1, max_size=8, unique=True))
    before = _board(data, before_models, dtype)
    after = _board(data, after_models, dtype)
    pd.testing.assert_frame_equal(rank_change_frame(before, after), _rank_change_merge(before, after))


@pytest.mark.parametrize("missing", [False, True])
def test_rank_change_values(missing):
    """A model that moved up by two shows +2; one absent from the untruncated board shows NA."""
    before = pd.DataFrame({"rank": [1, 2, 3], "model": ["a", "b", "c"]})
    after = pd.DataFrame({"rank": [1, 2, 3], "model": ["c", "a", "x" if missing else "b"]})
    got = rank_change_frame(before, after)
    assert got["rank_change"].tolist()[:2] == [2, -1]
    assert (got["rank_change"].isna().iloc[2]) if missing else got["rank_change"].iloc[2] == -1
