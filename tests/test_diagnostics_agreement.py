"""Judge agreement and Cohen's κ: textbook example, a direct formula, and human-majority items."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from engine.diagnostics.agreement import agreement, cohen_kappa

BASE = {"dataset": "d", "variant": 0, "turn": 1, "variant_kind": "original", "prob_a": np.nan}


def frame(rows) -> pd.DataFrame:
    v = pd.DataFrame(rows, columns=["judge", "prompt_id", "category", "model_a", "model_b", "winner", "order"])
    for c, val in BASE.items():
        v[c] = val
    return v


def test_cohen_kappa_textbook():
    # 50 items, rater 1 yes/no vs rater 2: 20 yes-yes, 5 yes-no, 10 no-yes, 15 no-no
    # p_o = 0.7, p_e = 0.5*0.6 + 0.5*0.4 = 0.5, κ = 0.4 (the standard worked example)
    x = ["yes"] * 25 + ["no"] * 25
    y = ["yes"] * 20 + ["no"] * 5 + ["yes"] * 10 + ["no"] * 15
    assert cohen_kappa(np.array(x), np.array(y)) == pytest.approx(0.4)
    assert np.isnan(cohen_kappa(np.array(["a", "a"]), np.array(["a", "a"])))


def test_cohen_kappa_direct_formula():
    rng = np.random.default_rng(0)
    x = rng.integers(-1, 2, 200)
    y = np.where(rng.random(200) < 0.6, x, rng.integers(-1, 2, 200))
    p_o = np.mean(x == y)
    p_e = sum(np.mean(x == k) * np.mean(y == k) for k in (-1, 0, 1))
    assert cohen_kappa(x, y) == pytest.approx((p_o - p_e) / (1 - p_e))
    assert cohen_kappa(x, x) == pytest.approx(1.0)


def test_agreement_with_human_majority_and_categories():
    rows = []
    # item 1 (cat u): llm both orders say a; humans 2×a, 1×b → majority a → agree
    rows += [("llm", "1", "u", "a", "b", "A", "AB"), ("llm", "1", "u", "b", "a", "B", "AB")]
    rows += [("human", "1", "u", "a", "b", "A", "AB")] * 2 + [("human", "1", "u", "a", "b", "B", "AB")]
    # item 2 (cat u): llm orders disagree → tie; humans a, b, tie → no majority → tie → agree
    rows += [("llm", "2", "u", "a", "b", "A", "AB"), ("llm", "2", "u", "b", "a", "A", "AB")]
    rows += [("human", "2", "u", "a", "b", "A", "AB"), ("human", "2", "u", "a", "b", "B", "AB"),
             ("human", "2", "u", "a", "b", "tie", "AB")]
    # item 3 (cat w): llm says b; humans 3×a → disagree
    rows += [("llm", "3", "w", "a", "b", "B", "AB"), ("llm", "3", "w", "b", "a", "A", "AB")]
    rows += [("human", "3", "w", "a", "b", "A", "AB")] * 3
    # an invalid verdict is left out, never read as a tie
    rows += [("llm", "3", "w", "a", "b", "invalid", "AB")]
    v = frame(rows)
    t = agreement(v, reference="human")
    assert t["items"].iloc[0] == 3 and t["agreement"].iloc[0] == pytest.approx(2 / 3)
    # outcomes (lo=a view): llm (+1, 0, -1), human (+1, 0, +1)
    assert t["kappa"].iloc[0] == pytest.approx(cohen_kappa(np.array([1, 0, -1]), np.array([1, 0, 1])))
    c = agreement(v, reference="human", by_category=True).set_index("category")
    assert c.loc["u", "agreement"] == 1.0 and c.loc["w", "agreement"] == 0.0
