"""Position bias (paper 003, A.1.2): order consistency, first-position rates and McNemar's test,
checked against direct counts, scipy's binomial test and the χ²(1) = N(0,1)² identity."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from engine.diagnostics.position import (
    first_position_rate,
    mcnemar,
    mcnemar_stat,
    order_consistency,
    position_table,
)

BASE = {"dataset": "d", "variant": 0, "turn": 1, "category": "c", "variant_kind": "original", "prob_a": np.nan}


def frame(rows) -> pd.DataFrame:
    v = pd.DataFrame(rows, columns=["judge", "prompt_id", "model_a", "model_b", "winner", "order"])
    for c, val in BASE.items():
        v[c] = val
    return v


def random_verdicts(rng, judges=("j1", "j2"), prompts=30, models=("a", "b", "c", "d"), bias=0.3):
    """Both orders of every pair; with probability ``bias`` the judge picks the first-shown answer."""
    rows = []
    for j, p, (x, y) in itertools.product(judges, range(prompts), itertools.combinations(models, 2)):
        truth = rng.choice(["x", "y", "tie"], p=[0.45, 0.35, 0.2])
        for first, second in ((x, y), (y, x)):
            if rng.random() < bias:
                w = "A"  # the answer shown first; model_a is shown first in order AB
            else:
                w = {"x": "A" if first == x else "B", "y": "A" if first == y else "B", "tie": "tie"}[truth]
            # store half of the rows as order BA (model_a shown second) to exercise both encodings
            if rng.random() < 0.5:
                rows.append((j, str(p), first, second, w, "AB"))
            else:
                rows.append((j, str(p), second, first, {"A": "B", "B": "A", "tie": "tie"}[w], "BA"))
    return frame(rows)


def direct(v: pd.DataFrame):
    """Per judge, by plain loops: first-shown wins, consistent items, and McNemar's (n01, n10)."""
    out = {}
    for j, g in v.groupby("judge"):
        first_w = ties = 0
        seen: dict[tuple, dict[str, int]] = {}
        for r in g.itertuples():
            first = r.model_a if r.order == "AB" else r.model_b
            second = r.model_b if r.order == "AB" else r.model_a
            won = None if r.winner == "tie" else (r.model_a if r.winner == "A" else r.model_b)
            first_w += won == first
            ties += won is None
            pair = tuple(sorted((first, second)))
            res = 0 if won is None else (1 if won == pair[0] else -1)  # pair[0]'s view
            seen.setdefault((r.prompt_id, pair), {})[first] = res
        cons = n01 = n10 = items = 0
        for (_, pair), d in seen.items():
            if len(d) < 2:
                continue
            items += 1
            when_first, when_second = d[pair[0]], d[pair[1]]  # outcome for pair[0] when shown first/second
            cons += when_first == when_second
            n01 += when_first > when_second
            n10 += when_first < when_second
        out[j] = dict(first=first_w, ties=ties, n=len(g), items=items, cons=cons, n01=n01, n10=n10)
    return out


def test_against_direct_counts():
    rng = np.random.default_rng(0)
    v = random_verdicts(rng)
    ref = direct(v)
    fr = first_position_rate(v).set_index("judge")
    oc = order_consistency(v).set_index("judge")
    mc = mcnemar(v).set_index("judge")
    for j, r in ref.items():
        assert fr.loc[j, "first_wins"] == r["first"] and fr.loc[j, "ties"] == r["ties"]
        assert fr.loc[j, "first_win_rate"] == pytest.approx(r["first"] / r["n"])
        assert oc.loc[j, "items_both_orders"] == r["items"] and oc.loc[j, "consistent"] == r["cons"]
        assert (mc.loc[j, "n01_first"], mc.loc[j, "n10_second"]) == (r["n01"], r["n10"])
    # a judge that picks the first answer 30% of the time shows it: more first-favouring reversals
    assert (mc["n01_first"] > mc["n10_second"]).all()


def test_mcnemar_statistic_and_pvalues():
    chi2, p, p_exact = mcnemar_stat(10, 3)
    assert chi2 == pytest.approx((7 - 1) ** 2 / 13)
    assert p == pytest.approx(2 * stats.norm.sf(np.sqrt(chi2)))  # χ²(1) tail = two-sided normal tail
    assert p_exact == pytest.approx(stats.binomtest(10, 13, 0.5).pvalue)
    # exact two-sided binomial by summing the pmf of outcomes at most as likely as the observed one
    pm = stats.binom.pmf(np.arange(14), 13, 0.5)
    assert p_exact == pytest.approx(pm[pm <= pm[10] * (1 + 1e-9)].sum())
    assert mcnemar_stat(0, 0)[1] == 1.0


def test_naming_does_not_change_the_test():
    rng = np.random.default_rng(3)
    v = random_verdicts(rng, judges=("j",))
    ren = v.copy()
    rename = {"a": "z", "b": "y", "c": "x", "d": "w"}  # reverses which model of a pair is 'lo'
    ren["model_a"] = ren["model_a"].map(rename)
    ren["model_b"] = ren["model_b"].map(rename)
    cols = ["n01_first", "n10_second", "chi2"]
    assert mcnemar(v)[cols].equals(mcnemar(ren)[cols])


def test_perfectly_position_biased_and_unbiased_judges():
    rows = []
    for p in range(8):
        rows += [("first", str(p), "a", "b", "A", "AB"), ("first", str(p), "b", "a", "A", "AB")]
        rows += [("fair", str(p), "a", "b", "A", "AB"), ("fair", str(p), "b", "a", "B", "AB")]
    t = position_table(frame(rows)).set_index("judge")
    assert t.loc["first", "order_consistency"] == 0.0 and t.loc["fair", "order_consistency"] == 1.0
    assert t.loc["first", "first_win_rate"] == 1.0 and t.loc["fair", "first_win_rate"] == 0.5
    assert t.loc["first", "n01_first"] == 8 and t.loc["fair", "n01_first"] == 0
    assert t.loc["first", "p_exact"] == pytest.approx(2 * 0.5**8)


def test_per_pair_grouping_sums_to_judge():
    v = random_verdicts(np.random.default_rng(5), judges=("j",))
    per_pair = mcnemar(v, by=("judge", "lo", "hi"))
    assert len(per_pair) == 6
    assert per_pair["n01_first"].sum() == mcnemar(v)["n01_first"].iloc[0]
