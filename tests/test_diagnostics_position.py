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

BASE = {
    "dataset": "d",
    "variant": 0,
    "turn": 1,
    "category": "c",
    "variant_kind": "original",
    "prob_a": np.nan,
}


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
        cons = n01 = n10 = items = d01 = d10 = 0
        for (_, pair), d in seen.items():
            if len(d) < 2:
                continue
            items += 1
            when_first, when_second = d[pair[0]], d[pair[1]]  # outcome for pair[0] when shown first/second
            cons += when_first == when_second
            n01 += when_first > when_second
            n10 += when_first < when_second
            # classic 2×2 (ties dropped): the shown-first answer wins both times / the second one does
            d01 += when_first == 1 and when_second == -1
            d10 += when_first == -1 and when_second == 1
        out[j] = dict(
            first=first_w, ties=ties, n=len(g), items=items, cons=cons, n01=n01, n10=n10, d01=d01, d10=d10
        )
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
        assert (mc.loc[j, "n01_ordinal"], mc.loc[j, "n10_ordinal"]) == (r["n01"], r["n10"])
        assert (mc.loc[j, "n01_ties_dropped"], mc.loc[j, "n10_ties_dropped"]) == (r["d01"], r["d10"])
    # a judge that picks the first answer 30% of the time shows it: more first-favouring reversals
    assert (mc["n01_ordinal"] > mc["n10_ordinal"]).all()
    assert (mc["n01_ties_dropped"] > mc["n10_ties_dropped"]).all()


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
    cols = [
        "n01_ordinal",
        "n10_ordinal",
        "chi2_ordinal",
        "n01_ties_dropped",
        "n10_ties_dropped",
        "chi2_ties_dropped",
    ]
    assert mcnemar(v)[cols].equals(mcnemar(ren)[cols])


def test_perfectly_position_biased_and_unbiased_judges():
    rows = []
    for p in range(8):
        rows += [("first", str(p), "a", "b", "A", "AB"), ("first", str(p), "b", "a", "A", "AB")]
        rows += [("fair", str(p), "a", "b", "A", "AB"), ("fair", str(p), "b", "a", "B", "AB")]
    t = position_table(frame(rows)).set_index("judge")
    assert t.loc["first", "order_consistency"] == 0.0 and t.loc["fair", "order_consistency"] == 1.0
    assert t.loc["first", "first_win_rate"] == 1.0 and t.loc["fair", "first_win_rate"] == 0.5
    assert t.loc["first", "n01_ordinal"] == 8 and t.loc["fair", "n01_ordinal"] == 0
    assert t.loc["first", "p_exact_ordinal"] == pytest.approx(2 * 0.5**8)
    assert t.loc["first", "n01_ties_dropped"] == 8 and t.loc[
        "first", "p_exact_ties_dropped"
    ] == pytest.approx(2 * 0.5**8)


def test_per_pair_grouping_sums_to_judge():
    v = random_verdicts(np.random.default_rng(5), judges=("j",))
    per_pair = mcnemar(v, by=("judge", "lo", "hi"))
    assert len(per_pair) == 6
    assert per_pair["n01_ordinal"].sum() == mcnemar(v)["n01_ordinal"].iloc[0]
    assert per_pair["n10_ties_dropped"].sum() == mcnemar(v)["n10_ties_dropped"].iloc[0]


def test_tie_rules_differ_as_worked_by_hand():
    # four items of one judge (a vs b), outcome for a when shown first / second:
    # win/tie (ordinal: favours first; 2×2: dropped), tie/loss (ordinal first; dropped),
    # win/loss (both rules: favours first), loss/win (both rules: favours second)
    rows = []
    for p, (w_first, w_second) in enumerate((("A", "tie"), ("tie", "A"), ("A", "A"), ("B", "B"))):
        rows += [("j", str(p), "a", "b", w_first, "AB"), ("j", str(p), "b", "a", w_second, "AB")]
    t = position_table(frame(rows)).iloc[0]
    assert (t["n01_ordinal"], t["n10_ordinal"]) == (3, 1)
    assert (t["items_decisive"], t["n01_ties_dropped"], t["n10_ties_dropped"]) == (2, 1, 1)
    assert t["chi2_ordinal"] == pytest.approx((3 - 1 - 1) ** 2 / 4)
    assert t["chi2_ties_dropped"] == pytest.approx((abs(1 - 1) - 1) ** 2 / 2)
    assert t["p_ties_dropped"] == pytest.approx(stats.chi2.sf(0.5, df=1))
    assert t["p_exact_ordinal"] == pytest.approx(stats.binomtest(3, 4).pvalue)


def test_counts_are_integers_and_single_orientation_judges_are_flagged():
    rng = np.random.default_rng(8)
    v = random_verdicts(rng, judges=("llm",))
    # a 'human' judge with one orientation per pair (the source file's order taken at face value)
    one = [("human", str(p), x, y, rng.choice(["A", "B", "tie"]), "AB")
           for p in range(5) for x, y in itertools.combinations("abcd", 2)]
    t = position_table(pd.concat([v, frame(one)], ignore_index=True)).set_index("judge")
    for c in ("verdicts", "first_wins", "items_both_orders", "consistent", "n01_ordinal", "n10_ties_dropped"):
        assert str(t[c].dtype) == "Int64", c
    assert t.loc["llm", "both_orders"] and not t.loc["human", "both_orders"]
    assert t.loc["human", "items_both_orders"] == 0 and pd.isna(t.loc["human", "order_consistency"])
    assert pd.isna(t.loc["human", "n01_ordinal"]) and t.loc["human", "verdicts"] == 30
    assert t.loc["human", "first_win_rate"] == pytest.approx((frame(one)["winner"] == "A").mean())
    assert ".0" not in t[["verdicts", "first_wins", "n01_ordinal"]].to_csv()  # 800, not 800.0


@pytest.mark.parametrize("unknown", [pd.NA, None, np.nan])
def test_unknown_orders_are_left_out_not_a_crash(unknown):
    rng = np.random.default_rng(9)
    v = random_verdicts(rng, judges=("j",))
    known = position_table(v)
    # append the same judge's verdicts again under another judge name with no recorded order
    blind = v.assign(judge="blind", order=unknown)
    both = pd.concat([v, blind], ignore_index=True).astype({"order": "string"} if unknown is pd.NA else {})
    t = position_table(both)
    assert list(t["judge"]) == ["j"]  # the blind judge has no known order: no row
    pd.testing.assert_frame_equal(t, known)
    empty = position_table(blind)
    assert empty.empty and "first_win_rate" in empty.columns
