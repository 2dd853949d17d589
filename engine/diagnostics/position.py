"""Position bias of a judge, from verdicts whose presentation order is known (paper 003, A.1.2).

- Order consistency: among items (a pair in one graph) judged in both orders, the share whose two
  verdicts agree on the winning model (or both call a tie).
- First-position win rate: the share of verdicts won by the answer shown first (ties counted in the
  denominator; ``first_win_rate_decisive`` leaves them out). ``both_orders`` says whether the group
  has any item judged in both orders: without one (e.g. human votes stored in the source file's
  single orientation) the rate mixes the first-shown answer's quality with its position and is not
  a position-bias measure.
- McNemar's test on the paired items, under two rules for ties (both reported; paper 003 gives only
  the statistic, with n01 / n10 "order-dependent preference reversals", and does not say how a tie
  enters):

  * ``ordinal``: the outcome is ordinal (loss < tie < win); ``n01`` counts items whose outcome for
    a model is better when it is shown first, ``n10`` better when shown second. A tie in one order
    and a win in the other counts as a reversal. Does not depend on which model is named first.
  * ``ties_dropped``: the classic 2×2 table on the items decisive in both orders
    (``items_decisive``); ``n01`` = the first-shown answer won in both orders (the winner flips with
    the order, towards the first position), ``n10`` = the second-shown answer won in both.

  Statistic (continuity-corrected, as in paper 003) ``χ² = (|n01 − n10| − 1)² / (n01 + n10)``, p
  from χ²(1); ``p_exact`` is the two-sided binomial test.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from engine.diagnostics.verdict_pairs import paired_orders, verdict_outcomes

RULES: tuple[str, ...] = ("ordinal", "ties_dropped")


def _group(df: pd.DataFrame, by: tuple[str, ...]):
    return df.groupby(list(by), sort=True, dropna=False)


def _int64(frame: pd.DataFrame, cols) -> pd.DataFrame:
    for c in cols:
        if c in frame.columns:
            frame[c] = frame[c].astype("Int64")
    return frame


def order_consistency(
    verdicts: pd.DataFrame, by: tuple[str, ...] = ("judge",), policy: str = "plurality"
) -> pd.DataFrame:
    """Per group: items judged in both orders and the share whose two orders agree."""
    return consistency_of_pairs(paired_orders(verdicts, policy), by)


def consistency_of_pairs(p: pd.DataFrame, by: tuple[str, ...] = ("judge",)) -> pd.DataFrame:
    """``order_consistency`` from a ``paired_orders`` frame (its ``by`` columns and two outcomes):
    the second half of the computation, shared with the count path (engine.diagnostics.judge_counts)."""
    cols = [*by, "items_both_orders", "consistent", "order_consistency"]
    if p.empty:
        return pd.DataFrame(columns=cols)
    p = p.assign(consistent=(p["out_lo_first"] == p["out_hi_first"]).astype(np.int64))
    out = (
        _group(p, by)
        .agg(items_both_orders=("consistent", "size"), consistent=("consistent", "sum"))
        .reset_index()
    )
    out["order_consistency"] = out["consistent"] / out["items_both_orders"]
    return _int64(out[cols], ("items_both_orders", "consistent"))


def first_position_rate(verdicts: pd.DataFrame, by: tuple[str, ...] = ("judge",)) -> pd.DataFrame:
    """Per group (use ``("judge", "lo", "hi")`` for per pair): verdicts with a known order, first-shown
    wins, second-shown wins, ties, and the first-position win rate with and without ties."""
    vo = verdict_outcomes(verdicts)
    vo = vo[vo["lo_first"].notna()]
    cols = [*by, "verdicts", "first_wins", "second_wins", "ties", "first_win_rate", "first_win_rate_decisive"]
    if vo.empty:
        return pd.DataFrame(columns=cols)
    vo = vo.assign(fw=(vo["first_won"] == 1.0).astype(np.int64), tie=(vo["outcome"] == 0).astype(np.int64))
    vo["sw"] = 1 - vo["fw"] - vo["tie"]
    out = _group(vo, by).agg(verdicts=("fw", "size"), first_wins=("fw", "sum"), second_wins=("sw", "sum"),
                             ties=("tie", "sum")).reset_index()
    return rates_of_counts(out, by)


def rates_of_counts(out: pd.DataFrame, by: tuple[str, ...] = ("judge",)) -> pd.DataFrame:
    """``first_position_rate`` from its per-group counts (``by`` columns, ``verdicts``, ``first_wins``,
    ``second_wins``, ``ties``; one row per group, in group order): the rates added."""
    cols = [*by, "verdicts", "first_wins", "second_wins", "ties", "first_win_rate", "first_win_rate_decisive"]
    out = out.copy()
    out["first_win_rate"] = out["first_wins"] / out["verdicts"]
    decisive = out["first_wins"] + out["second_wins"]
    out["first_win_rate_decisive"] = np.where(
        decisive > 0, out["first_wins"] / decisive.where(decisive > 0, 1), np.nan
    )
    return _int64(out[cols], ("verdicts", "first_wins", "second_wins", "ties"))


def mcnemar_stat(n01: int, n10: int) -> tuple[float, float, float]:
    """(χ², p, p_exact) of McNemar's test with continuity correction; NaN χ² and p = 1 without
    discordant items."""
    from scipy import stats  # imported here: every CLI command imports this module

    m = n01 + n10
    if m == 0:
        return float("nan"), 1.0, 1.0
    chi2 = (abs(n01 - n10) - 1) ** 2 / m
    p = float(stats.chi2.sf(chi2, df=1))
    p_exact = float(stats.binomtest(n01, m, 0.5, alternative="two-sided").pvalue)
    return float(chi2), p, p_exact


MCNEMAR_COLUMNS: tuple[str, ...] = (
    "n01_ordinal", "n10_ordinal", "chi2_ordinal", "p_ordinal", "p_exact_ordinal",
    "items_decisive", "n01_ties_dropped", "n10_ties_dropped", "chi2_ties_dropped", "p_ties_dropped",
    "p_exact_ties_dropped",
)


def mcnemar(
    verdicts: pd.DataFrame, by: tuple[str, ...] = ("judge",), policy: str = "plurality"
) -> pd.DataFrame:
    """Per group (``("judge", "lo", "hi")`` for per pair): McNemar's test of position bias under both
    tie rules (columns ``MCNEMAR_COLUMNS``)."""
    return mcnemar_of_pairs(paired_orders(verdicts, policy), by)


def mcnemar_of_pairs(p: pd.DataFrame, by: tuple[str, ...] = ("judge",)) -> pd.DataFrame:
    """``mcnemar`` from a ``paired_orders`` frame (its ``by`` columns and two outcomes)."""
    cols = [*by, "items_both_orders", *MCNEMAR_COLUMNS]
    if p.empty:
        return pd.DataFrame(columns=cols)
    a, b = p["out_lo_first"].to_numpy(), p["out_hi_first"].to_numpy()
    p = p.assign(o01=(a > b).astype(np.int64), o10=(a < b).astype(np.int64),
                 dec=((a != 0) & (b != 0)).astype(np.int64),
                 d01=((a > 0) & (b < 0)).astype(np.int64), d10=((a < 0) & (b > 0)).astype(np.int64))
    out = _group(p, by).agg(items_both_orders=("o01", "size"), n01_ordinal=("o01", "sum"),
                            n10_ordinal=("o10", "sum"), items_decisive=("dec", "sum"),
                            n01_ties_dropped=("d01", "sum"), n10_ties_dropped=("d10", "sum")).reset_index()
    for rule in RULES:
        res = [mcnemar_stat(int(x), int(y)) for x, y in  # one call per group, not per item
               zip(out[f"n01_{rule}"], out[f"n10_{rule}"], strict=True)]
        out[f"chi2_{rule}"] = [r[0] for r in res]
        out[f"p_{rule}"] = [r[1] for r in res]
        out[f"p_exact_{rule}"] = [r[2] for r in res]
    return _int64(out[cols], ("items_both_orders", "n01_ordinal", "n10_ordinal", "items_decisive",
                              "n01_ties_dropped", "n10_ties_dropped"))


def position_table(
    verdicts: pd.DataFrame, by: tuple[str, ...] = ("judge",), policy: str = "plurality"
) -> pd.DataFrame:
    """Order consistency, first-position win rates and McNemar's test (both tie rules), one row per
    group with a known presentation order; ``both_orders`` flags groups with paired items. Empty
    (with its columns) when no verdict records its order."""
    return position_of(first_position_rate(verdicts, by), paired_orders(verdicts, policy), by)


def position_of(fr: pd.DataFrame, pairs: pd.DataFrame, by: tuple[str, ...] = ("judge",)) -> pd.DataFrame:
    """``position_table`` from a ``first_position_rate`` table and a ``paired_orders`` frame: how the
    frame path and the count path (engine.diagnostics.judge_counts) assemble the same table."""
    oc = consistency_of_pairs(pairs, by)
    mc = mcnemar_of_pairs(pairs, by).drop(columns=["items_both_orders"])
    out = fr.merge(oc, on=list(by), how="outer").merge(mc, on=list(by), how="outer")
    out.insert(len(by) + 6, "both_orders", out["items_both_orders"].fillna(0).astype(np.int64).to_numpy() > 0)
    counts = ("verdicts", "first_wins", "second_wins", "ties", "items_both_orders", "consistent",
              "n01_ordinal", "n10_ordinal", "items_decisive", "n01_ties_dropped", "n10_ties_dropped")
    out = _int64(out, counts)
    for c in ("items_both_orders", "consistent"):  # no paired item: zero of them, the rates stay NaN
        out[c] = out[c].fillna(0)
    return out.sort_values(list(by)).reset_index(drop=True)
