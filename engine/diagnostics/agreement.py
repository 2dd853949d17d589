"""Agreement between judges on the same comparison items (a standard statistic; no paper defines it).

An item is a pair of models in one prompt instance (dataset, prompt_id, variant, turn). Each
judge's verdicts on an item (both presentation orders, or several human votes) are first combined
into one outcome by a stated policy (default ``plurality``: two disagreeing orders give a tie,
three human votes give their majority). Two judges are then compared on the items both judged:
raw agreement (share of equal outcomes among win-lo / tie / win-hi) and Cohen's κ,
``κ = (p_o − p_e) / (1 − p_e)`` with p_e from the two judges' outcome frequencies.

The labels are about the models, not the positions: "lo" is the pair's model first by name, and
the outcome is read after both presentation orders are combined, so κ is NOT computed on the A/B
labels as shown (those would mix position bias into agreement and have no pairing when two judges
saw different orders, or humans no order). Position effects are the ``position`` table's (paper
003's McNemar). Because the three labels are tied to name order, κ (not the raw agreement) can move
slightly under a renaming that reorders some pairs (≤ 0.011 on vicuna80; docs/notes/diagnostics.md).
"""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd

from engine.diagnostics.verdict_pairs import combine_outcomes, verdict_outcomes

INSTANCE: tuple[str, ...] = ("dataset", "prompt_id", "variant", "turn", "lo", "hi")


def cohen_kappa(x: np.ndarray, y: np.ndarray) -> float:
    """Cohen's κ of two raters' labels on the same items (any hashable labels); NaN when p_e = 1."""
    x = np.asarray(x)
    y = np.asarray(y)
    if len(x) != len(y):
        raise ValueError("Both raters must label the same items.")
    if len(x) == 0:
        return float("nan")
    labels, inv = np.unique(np.concatenate([x, y]), return_inverse=True)
    k = len(labels)
    cx, cy = inv[: len(x)], inv[len(x):]
    table = np.zeros((k, k))
    np.add.at(table, (cx, cy), 1.0)
    table /= table.sum()
    p_o = float(np.trace(table))
    p_e = float(table.sum(axis=1) @ table.sum(axis=0))
    return float("nan") if p_e >= 1.0 else (p_o - p_e) / (1.0 - p_e)


def item_outcomes(verdicts: pd.DataFrame, policy: str = "plurality") -> pd.DataFrame:
    """One row per (judge, item): combined outcome from lo's side (+1, 0, −1) and verdict count."""
    vo = verdict_outcomes(verdicts)
    out = combine_outcomes(vo, ["judge", *INSTANCE], policy)
    cats = vo.drop_duplicates(["judge", *INSTANCE])[["judge", *INSTANCE, "category"]]
    return out.merge(cats, on=["judge", *INSTANCE], how="left")


def agreement(
    verdicts: pd.DataFrame,
    *,
    reference: str | None = None,
    by_category: bool = False,
    policy: str = "plurality",
) -> pd.DataFrame:
    """Per pair of judges (or each judge against ``reference``, e.g. ``"human"``), optionally per
    category: shared items, agreement and Cohen's κ."""
    return agreement_of_items(item_outcomes(verdicts, policy), INSTANCE, reference=reference,
                              by_category=by_category)


def agreement_of_items(
    items: pd.DataFrame, on: tuple[str, ...], *, reference=None, by_category: bool = False
) -> pd.DataFrame:
    """``agreement`` from one combined outcome per (judge, item) (``item_outcomes``' frame, the item
    named by the ``on`` columns): the count path (engine.diagnostics.judge_counts) names an item by one
    integer and its judges and categories by codes in name order."""
    judges = sorted(items["judge"].dropna().unique())
    if reference is not None:
        pairs = [(j, reference) for j in judges if j != reference]
    else:
        pairs = list(itertools.combinations(judges, 2))
    rows = []
    for j1, j2 in pairs:  # a handful of judges: a loop over judge pairs, not over items
        a = items[items["judge"] == j1]
        b = items[items["judge"] == j2]
        m = a.merge(b, on=list(on), suffixes=("_1", "_2"))
        groups = m.groupby("category_1", dropna=False) if by_category else [(None, m)]
        for cat, g in groups:
            row = {"judge_1": j1, "judge_2": j2}
            if by_category:
                row["category"] = cat
            x, y = g["outcome_1"].to_numpy(), g["outcome_2"].to_numpy()
            row["items"] = len(g)
            row["agreement"] = float((x == y).mean()) if len(g) else float("nan")
            row["kappa"] = cohen_kappa(x, y)
            rows.append(row)
    cols = ["judge_1", "judge_2", *(["category"] if by_category else []), "items", "agreement", "kappa"]
    return pd.DataFrame(rows, columns=cols)
