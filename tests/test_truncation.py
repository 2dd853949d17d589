"""Keep-K truncation against a direct sort (paper 000, Section 3.1)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from engine.errors import LensError
from engine.truncation import key_order, select_keep_k, truncation_scores


def _keys(prompt_ids, categories=None, variants=None):
    n = len(prompt_ids)
    return pd.DataFrame({
        "dataset": ["d"] * n, "judge": ["j"] * n, "prompt_id": [str(p) for p in prompt_ids],
        "variant": variants if variants is not None else [0] * n, "turn": [1] * n,
        "category": categories if categories is not None else ["c"] * n,
    })


def _direct(scores, keys, k):
    """Slow twin: Python sort by (score, natural key)."""
    def nat(p):
        try:
            return (0, float(p), "")
        except ValueError:
            return (1, 0.0, p)
    rows = sorted(range(len(scores)), key=lambda i: (scores[i], keys.dataset[i], keys.judge[i],
                                                      nat(keys.prompt_id[i]), keys.variant[i], keys.turn[i]))
    return sorted(rows[:k])


def test_scores_general_form():
    c = pd.DataFrame({"c3_bad": [3, 0, 1], "c4_bad": [2, 5, 0]})
    assert truncation_scores(c, mu=0.5).tolist() == [4.0, 2.5, 1.0]
    assert truncation_scores(c, lam3=2.0, lam4=1.0).tolist() == [8.0, 5.0, 2.0]
    assert truncation_scores(c, mu=0.5, lam4=3.0).tolist() == [9.0, 15.0, 1.0]  # lam4 wins over mu
    with pytest.raises(LensError, match="c4_bad"):
        truncation_scores(c[["c3_bad"]])
    with pytest.raises(LensError, match="≥ 0"):
        truncation_scores(c, mu=-1)


def test_keep_k_matches_direct_sort_with_many_ties():
    rng = np.random.default_rng(0)
    for _trial in range(30):
        n = int(rng.integers(1, 60))
        ids = rng.permutation(n * 2)[:n]
        ids = [str(i) if i % 5 else f"q{i}" for i in ids]
        keys = _keys(ids, variants=list(rng.integers(0, 3, n)))
        scores = rng.integers(0, 4, n).astype(float)  # many equal scores
        for k in {1, n, int(rng.integers(1, n + 1))}:
            sel = select_keep_k(scores, keys, k)
            assert sel.index.tolist() == _direct(scores, keys, k)
            assert sel.threshold == scores[sel.index].max()
            # nothing outside the selection scores strictly below the threshold
            out = np.setdiff1d(np.arange(n), sel.index)
            assert (scores[out] >= sel.threshold).all()


def test_natural_prompt_id_order():
    keys = _keys(["10", "2", "1", "b", "a"])
    assert key_order(keys).tolist() == [2, 1, 0, 4, 3]
    sel = select_keep_k(np.zeros(5), keys, 2)
    assert sel.index.tolist() == [1, 2]  # prompts "1" and "2", not "1" and "10"


def test_per_category_matches_per_group_sort():
    rng = np.random.default_rng(1)
    n = 90
    cats = list(rng.choice(["x", "y", "z"], n))
    keys = _keys(list(range(n)), categories=cats)
    scores = rng.integers(0, 6, n).astype(float)
    sel = select_keep_k(scores, keys, 4, per_category=True)
    expect = []
    for c in ["x", "y", "z"]:
        rows = [i for i in range(n) if cats[i] == c]
        sub = keys.iloc[rows].reset_index(drop=True)
        expect += [rows[j] for j in _direct(scores[rows], sub, 4)]
        assert sel.threshold[c] == max(scores[rows[j]] for j in _direct(scores[rows], sub, 4))
    assert sel.index.tolist() == sorted(expect)


def test_invalid_k_is_one_sentence():
    keys = _keys([1, 2, 3], categories=["a", "a", "b"])
    for bad in (0, 4, 2.5):
        with pytest.raises(LensError, match="K must"):
            select_keep_k(np.zeros(3), keys, bad)
    with pytest.raises(LensError, match="smallest category size 1"):
        select_keep_k(np.zeros(3), keys, 2, per_category=True)
