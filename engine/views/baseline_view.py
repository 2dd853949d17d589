"""The Leaderboard page's win rates against a baseline model (Arena-Hard's score): the board of
``engine.ranking.baseline`` cut to what the page shows, in percent as Arena-Hard prints it."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from engine.rankers import ranker_object
from engine.ranking.baseline import BASELINE_COLUMNS, baseline_leaderboard, baseline_notes
from engine.ranking.board import BoardSpec

if TYPE_CHECKING:
    from engine.store.connection import Store

NO_BASELINE = "(none)"
"""The select box's first choice: no win-rate table."""


def has_win_rates(ranker: str) -> bool:
    """Whether this ranker's scores are Bradley-Terry strengths, which a win rate against a baseline
    reads (``Ranker.logistic``, ``Ranker.to_log``)."""
    return ranker_object(ranker).logistic


def star_baseline(table: pd.DataFrame) -> str | None:
    """The model every vote of a board includes (its ``votes`` column: a model's count equals half the sum
    of all), where the board ranks three models or more: the design of Arena-Hard and AlpacaEval, each model
    judged against one baseline, whose win rates the Leaderboard then opens on. None where no model or more
    than one is in every vote, or the board has no vote counts (a panel's fit)."""
    if "votes" not in table.columns or len(table) < 3:
        return None
    votes = pd.to_numeric(table["votes"], errors="coerce").to_numpy(np.float64)
    total = np.nansum(votes) / 2.0
    hits = table["model"].to_numpy(dtype=object)[votes == total]
    return str(hits[0]) if total > 0 and len(hits) == 1 else None


def baseline_table(store: Store, dataset: str, ranker: str, baseline: str, *, judge=None, category=None,
                   bootstrap: int = 0, seed: int = 0, style_control: bool = False,
                   ci: str | None = None) -> tuple[pd.DataFrame, list[str]]:
    """(one row per model, best first: ``model``, ``win_rate_pct``, ``ci_low_pct``, ``ci_high_pct`` and
    ``interval`` as "-x / +y", empty for the baseline itself; the notes that say how it was computed).
    ``style_control``: from the style-controlled fit (the prediction at zero style difference), its intervals
    by ``ci`` (sandwich: no resamples, ``bootstrap`` unused), as ``leaderboard --baseline M --style-control
    --ci CI``."""
    spec = BoardSpec(ranker=ranker, bootstrap=0 if ci == "sandwich" else bootstrap, seed=seed,
                     style_control=style_control, ci=ci)
    board = baseline_leaderboard(store, dataset, spec, baseline, judge=judge, category=category)
    t = board.table[["model", *BASELINE_COLUMNS]].sort_values(
        ["baseline_win_rate", "model"], ascending=[False, True], kind="stable")
    rate, low, high = (100.0 * t[c].to_numpy(np.float64) for c in BASELINE_COLUMNS)
    # the baseline itself: 50 % by definition, no interval (it read "-0.0 / +0.0")
    interval = [f"-{r - lo:.1f} / +{hi - r:.1f}" if np.isfinite(lo) and np.isfinite(hi) and m != baseline
                else "" for m, r, lo, hi in zip(t["model"], rate, low, high, strict=True)]
    frame = pd.DataFrame({"model": t["model"].to_numpy(), "win_rate_pct": rate, "ci_low_pct": low,
                          "ci_high_pct": high, "interval": interval})
    return frame, baseline_notes(board)
