"""The leaderboard display's secondary paths (mutation pass survivors): the Davidson ranker's Elo-like
scale, a table without interval columns, and the reference note; each against a closed form or the
table it was built from."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from engine.views.leaderboard_view import board_view


def _table(scores) -> pd.DataFrame:
    n = len(scores)
    return pd.DataFrame({"model": [f"m{i}" for i in range(n)], "score": scores, "rank": np.arange(1, n + 1)})


@pytest.mark.parametrize("ranker", ["bt", "davidson"])
def test_log_strength_rankers_show_1000_plus_400_log10_of_the_strength(ranker):
    # BT and Davidson scores are natural-log strengths s: on the Elo-like scale 1000 + 400 log10(e^s)
    scores = np.array([1.25, 0.0, -0.5, -0.75])
    t = _table(scores).assign(ci_low=scores - 0.5, ci_high=scores + 0.25)
    shown = board_view(t, ranker=ranker, n_graphs=50, elo_scale=True).frame.set_index("model")
    for col, raw in (("score", scores), ("ci_low", scores - 0.5), ("ci_high", scores + 0.25)):
        if col in shown.columns:
            np.testing.assert_allclose(
                shown[col].to_numpy(), 1000.0 + 400.0 * np.log10(np.exp(raw)), rtol=1e-12
            )
    # the interval column is the same scale: +100 log10(e) / -200 log10(e) with one decimal
    plus, minus = 400 * 0.25 / np.log(10), 400 * 0.5 / np.log(10)
    assert shown["interval"].iloc[0] == f"+{plus:.1f} / -{minus:.1f}"


def test_a_table_without_interval_columns_shows_no_interval():
    v = board_view(_table([0.5, 0.0, -0.5]), ranker="bt", n_graphs=50)
    assert v.frame["score"].tolist() == [0.5, 0.0, -0.5]  # the ranker's own scale unless asked
    assert v.frame["interval"].tolist() == ["—"] * 3
    assert "rank_ub" not in v.frame.columns and v.frame["rank"].tolist() == [1, 2, 3]


def test_the_reference_note_counts_the_models_on_the_reference():
    t = _table([0.5, 0.0, -0.5]).assign(
        ref_rank=pd.array([2, pd.NA, 1], dtype="Int64"), ref_diff=pd.array([-1, pd.NA, 1], dtype="Int64")
    )
    v = board_view(t, ranker="bt", n_graphs=50, reference_note="arena 2024-05")
    mapped = int(t["ref_rank"].notna().sum())
    assert f"among the {mapped} models that are on the reference" in v.delta_note
    assert v.delta_note.endswith("; arena 2024-05.")
    assert board_view(t, ranker="bt", n_graphs=50).delta_note.endswith("rank column.")
    assert board_view(_table([0.5, 0.0]), ranker="bt", n_graphs=50).delta_note is None
