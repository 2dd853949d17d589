"""The Judges page reads only ``JUDGE_COLUMNS`` of the verdicts: its tables must equal those built
from every column (vicuna80: 6 judges, both presentation orders, categories)."""

from __future__ import annotations

import pandas as pd
import pytest

from engine.graphs.buckets import build_buckets
from engine.store.connection import StoreError
from engine.store.schema import DEFAULT_DATASET, VERDICT_COLUMNS
from engine.views.judges_view import JUDGE_COLUMNS, with_worst_position
from engine.views.viz import judge_overview


def test_verdicts_columns_reads_those_columns_with_the_same_values(shipped_store) -> None:
    full = shipped_store.verdicts(DEFAULT_DATASET)
    part = shipped_store.verdicts(DEFAULT_DATASET, columns=["winner", "model_a", "prob_a"])
    assert list(part.columns) == ["verdict_id", "model_a", "winner", "prob_a"]  # schema order
    pd.testing.assert_frame_equal(part, full[list(part.columns)])
    with pytest.raises(StoreError, match="no column"):
        shipped_store.verdicts(DEFAULT_DATASET, columns=["winner", "nonsense"])


@pytest.mark.parametrize("by_category", [False, True])
def test_judge_tables_from_the_page_columns_equal_those_from_every_column(shipped_store, by_category) -> None:
    assert set(JUDGE_COLUMNS) <= set(VERDICT_COLUMNS)
    full = shipped_store.verdicts(DEFAULT_DATASET)
    part = shipped_store.verdicts(DEFAULT_DATASET, columns=JUDGE_COLUMNS)
    assert part.shape[1] < full.shape[1]
    stack = build_buckets(full)
    a = with_worst_position(judge_overview(full, stack, by_category), full)
    b = with_worst_position(judge_overview(part, stack, by_category), part)
    assert len(a.judges) >= 2 and a.judges == b.judges
    for name in ("kappa_matrix", "agreement", "position", "transitivity"):
        pd.testing.assert_frame_equal(getattr(a, name), getattr(b, name))
    if by_category:
        assert a.kappa_by_category and a.kappa_by_category.keys() == b.kappa_by_category.keys()
        for cat, mat in a.kappa_by_category.items():
            pd.testing.assert_frame_equal(mat, b.kappa_by_category[cat])
    assert (a.worst_pnt, a.worst_position, a.has_prob) == (b.worst_pnt, b.worst_position, b.has_prob)
    assert a.mean_kappa == pytest.approx(b.mean_kappa, nan_ok=True)
