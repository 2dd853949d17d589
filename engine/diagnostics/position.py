"""Position bias of a judge, from verdicts whose presentation order is known (paper 003, A.1.2).

- Order consistency: among items (a pair in one graph) judged in both orders, the share whose two
  verdicts agree on the winning model (or both call a tie).
- First-position win rate: the share of verdicts won by the answer shown first (ties counted in the
  denominator; ``first_win_rate_decisive`` leaves them out).
- McNemar's test on the paired items: ``n01`` counts items whose outcome for a model improves when
  it is shown first, ``n10`` those where it improves when shown second (the outcome is ordinal:
  loss < tie < win, so the count does not depend on which model of the pair is named first; with no
  ties it is the usual 2×2 McNemar table). Statistic (continuity-corrected, as in paper 003)
  ``χ² = (|n01 − n10| − 1)² / (n01 + n10)``, p from χ²(1); ``p_exact`` is the two-sided binomial test.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

from .verdict_pairs import paired_orders, verdict_outcomes


def _group(df: pd.DataFrame, by: tuple[str, ...]):
    return df.groupby(list(by), sort=True, dropna=False)


def order_consistency(verdicts: pd.DataFrame, by: tuple[str, ...] = ("judge",), policy: str = "plurality") -> pd.DataFrame:
    """Per group: items judged in both orders and the share whose two orders agree."""
    p = paired_orders(verdicts, policy)
    cols = [*by, "items_both_orders", "consistent", "order_consistency"]
    if p.empty:
        return pd.DataFrame(columns=cols)
    p = p.assign(consistent=(p["out_lo_first"] == p["out_hi_first"]).astype(np.int64))
    out = _group(p, by).agg(items_both_orders=("consistent", "size"), consistent=("consistent", "sum")).reset_index()
    out["order_consistency"] = out["consistent"] / out["items_both_orders"]
    return out[cols]


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
    out["first_win_rate"] = out["first_wins"] / out["verdicts"]
    decisive = out["first_wins"] + out["second_wins"]
    out["first_win_rate_decisive"] = np.where(decisive > 0, out["first_wins"] / decisive.where(decisive > 0, 1), np.nan)
    return out[cols]


def mcnemar_counts(out_lo_first: np.ndarray, out_hi_first: np.ndarray) -> tuple[int, int]:
    """(n01, n10): items that favour the first / the second position (see module docstring)."""
    a = np.asarray(out_lo_first)
    b = np.asarray(out_hi_first)
    return int((a > b).sum()), int((a < b).sum())


def mcnemar_stat(n01: int, n10: int) -> tuple[float, float, float]:
    """(χ², p, p_exact) of McNemar's test with continuity correction; NaN χ² and p = 1 without
    discordant items."""
    m = n01 + n10
    if m == 0:
        return float("nan"), 1.0, 1.0
    chi2 = (abs(n01 - n10) - 1) ** 2 / m
    p = float(stats.chi2.sf(chi2, df=1))
    p_exact = float(stats.binomtest(n01, m, 0.5, alternative="two-sided").pvalue)
    return float(chi2), p, p_exact


def mcnemar(verdicts: pd.DataFrame, by: tuple[str, ...] = ("judge",), policy: str = "plurality") -> pd.DataFrame:
    """Per group (``("judge", "lo", "hi")`` for per pair): McNemar's test of position bias."""
    p = paired_orders(verdicts, policy)
    cols = [*by, "items_both_orders", "n01_first", "n10_second", "chi2", "p_value", "p_exact"]
    if p.empty:
        return pd.DataFrame(columns=cols)
    p = p.assign(f=(p["out_lo_first"] > p["out_hi_first"]).astype(np.int64),
                 s=(p["out_lo_first"] < p["out_hi_first"]).astype(np.int64))
    out = _group(p, by).agg(items_both_orders=("f", "size"), n01_first=("f", "sum"), n10_second=("s", "sum")).reset_index()
    res = [mcnemar_stat(int(a), int(b)) for a, b in zip(out["n01_first"], out["n10_second"], strict=False)]  # one per group
    out["chi2"] = [r[0] for r in res]
    out["p_value"] = [r[1] for r in res]
    out["p_exact"] = [r[2] for r in res]
    return out[cols]


def position_table(verdicts: pd.DataFrame, by: tuple[str, ...] = ("judge",), policy: str = "plurality") -> pd.DataFrame:
    """Order consistency, first-position win rates and McNemar's test, one row per group."""
    oc = order_consistency(verdicts, by, policy)
    fr = first_position_rate(verdicts, by)
    mc = mcnemar(verdicts, by, policy).drop(columns=["items_both_orders"])
    out = fr.merge(oc, on=list(by), how="outer").merge(mc, on=list(by), how="outer")
    return out.sort_values(list(by)).reset_index(drop=True)
