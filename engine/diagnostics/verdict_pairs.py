"""Per-verdict and per-pair views of a verdict frame that the judge diagnostics share.

A verdict is turned into the outcome of an unordered pair (``lo`` < ``hi`` by name) seen from
``lo``'s side: +1 lo won, −1 hi won, 0 tie, plus which of the two was shown first. Invalid
verdicts (unparsable judge outputs) are left out here: they are never a tie.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from engine.errors import LensError
from engine.graphs.stack import combine_counts
from engine.store.schema import GRAPH_KEY

ITEM_KEY: tuple[str, ...] = (*GRAPH_KEY, "lo", "hi")
"""One comparison item: a pair of models in one graph."""


def order_flags(order: pd.Series) -> np.ndarray:
    """1.0 where model_a was shown first (``AB``), 0.0 where second (``BA``), NaN where the order is
    unknown. NA-safe: the column may hold ``pd.NA``, ``None`` or NaN (a file without an order
    column), as a string or an object column; any other value is refused with its row."""
    s = pd.Series(order).astype("string")
    unknown = s.isna().to_numpy()
    bad = ~unknown & ~s.isin(["AB", "BA"]).fillna(False).to_numpy(bool)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise LensError(
            f"Verdict row {i + 1} has presentation order {s.iloc[i]!r}; expected AB, BA or empty."
        )
    return np.where(unknown, np.nan, np.where(s.eq("AB").fillna(False).to_numpy(bool), 1.0, 0.0))


def has_known_order(verdicts: pd.DataFrame) -> bool:
    """Whether any valid verdict records its presentation order."""
    if "order" not in verdicts.columns:
        return False
    valid = verdicts["winner"] != "invalid"
    return bool(pd.Series(verdicts.loc[valid, "order"]).astype("string").notna().any())


def verdict_outcomes(verdicts: pd.DataFrame) -> pd.DataFrame:
    """Valid verdicts with ``lo``, ``hi``, ``outcome`` (lo's side) and ``lo_first`` (1.0 when lo
    was shown first, 0.0 when second, NaN when the order is unknown or there is no order column)."""
    missing = [c for c in (*GRAPH_KEY, "model_a", "model_b", "winner") if c not in verdicts.columns]
    if missing:
        raise LensError(f"The verdict table lacks the column(s) {', '.join(missing)}.")
    v = verdicts[verdicts["winner"] != "invalid"]
    a = v["model_a"].to_numpy(dtype=object)
    b = v["model_b"].to_numpy(dtype=object)
    swap = a > b
    w = v["winner"].to_numpy(dtype=object)
    a_side = np.where(w == "A", 1, np.where(w == "B", -1, 0)).astype(np.int64)
    a_first = order_flags(v["order"]) if "order" in v.columns else np.full(len(v), np.nan)
    lo_first = np.where(np.isnan(a_first), np.nan, np.where(swap, 1.0 - a_first, a_first))
    out = v[[c for c in (*GRAPH_KEY, "category", "annotator") if c in v.columns]].copy()
    out["lo"] = np.where(swap, b, a)
    out["hi"] = np.where(swap, a, b)
    out["outcome"] = np.where(swap, -a_side, a_side)
    out["lo_first"] = lo_first
    out["first_won"] = np.where(
        np.isnan(lo_first),
        np.nan,
        np.where(lo_first == 1.0, out["outcome"] > 0, out["outcome"] < 0).astype(float),
    )
    return out.reset_index(drop=True)


def combine_outcomes(frame: pd.DataFrame, by: list[str], policy: str = "plurality") -> pd.DataFrame:
    """One outcome per group of verdicts (``by`` columns), combined by an engine.graphs.stack policy."""
    o = frame["outcome"].to_numpy()
    tmp = frame[by].copy()
    tmp["lo_win"], tmp["hi_win"], tmp["tie"] = (
        (o > 0).astype(np.int64),
        (o < 0).astype(np.int64),
        (o == 0).astype(np.int64),
    )
    g = tmp.groupby(by, sort=True, dropna=False).agg(lo_win=("lo_win", "sum"), hi_win=("hi_win", "sum"),
                                                     tie=("tie", "sum")).reset_index()
    g["outcome"] = combine_counts(g["lo_win"].to_numpy(), g["hi_win"].to_numpy(), g["tie"].to_numpy(), policy)
    g["n"] = g["lo_win"] + g["hi_win"] + g["tie"]
    return g.drop(columns=["lo_win", "hi_win", "tie"])


def paired_orders(verdicts: pd.DataFrame, policy: str = "plurality") -> pd.DataFrame:
    """Items seen in both presentation orders: ``out_lo_first`` and ``out_hi_first`` (lo's side;
    several verdicts in one order are first combined by ``policy``)."""
    vo = verdict_outcomes(verdicts)
    vo = vo[vo["lo_first"].notna()]
    if vo.empty:
        return pd.DataFrame(columns=[*ITEM_KEY, "category", "out_lo_first", "out_hi_first"])
    per = combine_outcomes(vo, [*ITEM_KEY, "lo_first"], policy)
    first = (
        per[per["lo_first"] == 1.0]
        .drop(columns=["lo_first", "n"])
        .rename(columns={"outcome": "out_lo_first"})
    )
    second = (
        per[per["lo_first"] == 0.0]
        .drop(columns=["lo_first", "n"])
        .rename(columns={"outcome": "out_hi_first"})
    )
    both = first.merge(second, on=list(ITEM_KEY), how="inner")
    cats = vo.drop_duplicates(list(ITEM_KEY))[[*ITEM_KEY, "category"]]
    return both.merge(cats, on=list(ITEM_KEY), how="left")
