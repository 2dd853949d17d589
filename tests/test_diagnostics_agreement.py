"""Judge agreement and Cohen's κ: textbook example, a direct formula, and human-majority items."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from engine.diagnostics.agreement import agreement, cohen_kappa

BASE = {"dataset": "d", "variant": 0, "turn": 1, "variant_kind": "original", "prob_a": np.nan}


def frame(rows) -> pd.DataFrame:
    v = pd.DataFrame(
        rows, columns=["judge", "prompt_id", "category", "model_a", "model_b", "winner", "order"]
    )
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


def test_kappa_is_on_the_combined_model_outcome_not_the_shown_position():
    """Hand-worked: κ is read on which model won each item (both orders combined), which differs
    here from κ on the A/B labels as shown, so the test tells the two readings apart."""
    rows = []
    # item p1: both judges, a wins in both orders (AB: A; BA, b shown first: B) → +1, +1
    for j in ("X", "Y"):
        rows += [(j, "p1", "u", "a", "b", "A", "AB"), (j, "p1", "u", "b", "a", "B", "BA")]
    # item p2: X a wins both (+1); Y says "A" both times, i.e. a then b → disagree → tie (0)
    rows += [("X", "p2", "u", "a", "b", "A", "AB"), ("X", "p2", "u", "b", "a", "B", "BA")]
    rows += [("Y", "p2", "u", "a", "b", "A", "AB"), ("Y", "p2", "u", "b", "a", "A", "BA")]
    # item p3: both judges, b wins in both orders → −1, −1
    for j in ("X", "Y"):
        rows += [(j, "p3", "u", "a", "b", "B", "AB"), (j, "p3", "u", "b", "a", "A", "BA")]
    # item p4: X tie both (0); Y says "B" both times, i.e. b then a → disagree → tie (0)
    rows += [("X", "p4", "u", "a", "b", "tie", "AB"), ("X", "p4", "u", "b", "a", "tie", "BA")]
    rows += [("Y", "p4", "u", "a", "b", "B", "AB"), ("Y", "p4", "u", "b", "a", "B", "BA")]
    t = agreement(frame(rows)).iloc[0]
    # outcomes X (+1, +1, −1, 0), Y (+1, 0, −1, 0): p_o = 3/4; marginals X (2, 1, 1)/4,
    # Y (1, 2, 1)/4 over (+1, 0, −1): p_e = (2·1 + 1·2 + 1·1)/16 = 5/16; κ = (7/16)/(11/16) = 7/11
    assert (t["judge_1"], t["judge_2"], t["items"]) == ("X", "Y", 4)
    assert t["agreement"] == pytest.approx(3 / 4)
    assert t["kappa"] == pytest.approx(7 / 11)
    # the shown-position reading (per item and order: X A,B,A,B,B,A,tie,tie; Y A,B,A,A,B,A,B,B):
    # p_o = 5/8, p_e = (3·3 + 3·5 + 2·0)/64 = 3/8, κ = 0.4 — a different number
    shown_x = [r[5] for r in rows if r[0] == "X"]
    shown_y = [r[5] for r in rows if r[0] == "Y"]
    assert cohen_kappa(np.array(shown_x), np.array(shown_y)) == pytest.approx(0.4)
