"""The Leaderboard page's length-controlled win rates (AlpacaEval 2's LC win rate) against a baseline:
``engine.ranking.length_control`` cut to what the page shows, in percent as AlpacaEval prints it."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

from engine.ranking.length_control import length_control_table

if TYPE_CHECKING:
    from engine.store.connection import Store


def lc_table(store: Store, dataset: str, baseline: str, *, judge: str | None = None,
             category: str | None = None) -> tuple[pd.DataFrame, list[str]]:
    """(one row per model, highest LC win rate first: ``model``, ``lc_win_rate_pct``, ``win_rate_pct``,
    ``n_verdicts``; the notes that say what it leaves out and which models it could not fit)."""
    lct = length_control_table(store, dataset, baseline, judge=judge, category=category)
    f = lct.frame.reset_index()
    frame = pd.DataFrame({
        "model": f["model"].astype(str),
        "lc_win_rate_pct": 100.0 * f["lc_win_rate"].astype("float64"),
        "win_rate_pct": 100.0 * f["win_rate_vs_baseline"].astype("float64"),
        "n_verdicts": f["n_verdicts"].astype("int64"),
    }).sort_values(["lc_win_rate_pct", "model"], ascending=[False, True], kind="stable", na_position="last")
    return frame.reset_index(drop=True), lct.notes
