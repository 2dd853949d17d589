"""The lean count path's presentation-order column (mutation pass survivor: reading it as NULL
passed every test, which always had the column and never showed one pair both ways under "AB"),
against the per-verdict vote path."""

from __future__ import annotations

import numpy as np
import pandas as pd
from test_count_query import battle_log, lean_path, python_path


def assert_same_counts(v):
    sc = lean_path(v, "plurality")
    assert sc is not None
    pc, n_votes, n_verdicts, _ = python_path(v, "plurality")
    for name in ("W", "T", "votes", "n_graphs", "n_prompts"):
        np.testing.assert_array_equal(getattr(sc.counts, name), getattr(pc, name), err_msg=name)
    assert (sc.n_votes, sc.n_verdicts) == (n_votes, n_verdicts)


def test_a_log_without_an_order_column_takes_the_lean_path():
    v = battle_log(8, n=600).drop(columns=["order"])
    assert_same_counts(v)


def test_one_pair_shown_both_ways_under_ab_pairs_into_a_vote():
    # every row says "AB", but prompt q0 shows x first once and y first once: those two verdicts of one
    # voter are the two presentation orders of one comparison, so only the vote path counts them right
    v = battle_log(9, n=600, orders=("AB",))
    assert_same_counts(v)
    first = v.iloc[[0]].copy()
    swapped = first.assign(
        model_a=first["model_b"].to_numpy(),
        model_b=first["model_a"].to_numpy(),
        winner={"A": "B", "B": "A"}.get(first["winner"].iloc[0], first["winner"].iloc[0]),
        battle_id=None,
        annotator=None,
    )
    both = v.iloc[[0]].assign(battle_id=None, annotator=None)
    w = pd.concat([both, swapped, v.iloc[1:]], ignore_index=True)
    assert lean_path(w, "plurality") is None
