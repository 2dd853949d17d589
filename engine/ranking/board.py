"""The leaderboard as a result: its table's columns, what its counts are, and the ``Leaderboard`` that
carries the table with the parameters that produced it (shared by the graph and the count paths)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from engine.rankers import RankResult
from engine.ranking.bootstrap import BootstrapResult

COUNTING_RANKERS = ("copeland", "scorewin", "majority", "borda", "pairwise-majority")

TABLE_COLUMNS = (
    "rank", "model", "score", "ci_low", "ci_high", "rank_low", "rank_high", "wins", "losses", "ties",
    "win_rate", "n_graphs_model", "votes", "n_prompts",
)
"""wins / losses / ties / votes count votes on the count path (params["unit"] == "votes") and graph
edges on the stack path ("graphs"); on data with one verdict pair per graph and pair they agree."""

UNIT_NOTES = {
    "votes": ("counts are votes: one per judge, annotator and battle on a pair in a graph (its two presentation "
              "orders combined by the policy); repeated votes count"),
    "graphs": "counts are graph edges: all verdicts on a pair in one graph combined by the policy into one",
}


@dataclass(frozen=True)
class Leaderboard:
    """``table`` (one row per model, best first), ``params`` (what produced it), the graphs ranked
    (``kept``: with keep-K, the kept-graph table in keep order with each graph's S_mu)."""

    table: pd.DataFrame
    params: dict[str, Any]
    n_graphs: int
    kept: pd.DataFrame
    result: RankResult = field(repr=False)
    bootstrap: BootstrapResult | None = field(default=None, repr=False)

    @property
    def ranks(self) -> pd.Series:
        """Rank per model."""
        return self.table.set_index("model")["rank"]

    @property
    def scores(self) -> pd.Series:
        """Score per model."""
        return self.table.set_index("model")["score"]


def plain_values(v: Any) -> Any:
    """NumPy scalars, lists and dicts of them as plain Python values (for JSON and the params dict)."""
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, (list, tuple)):
        return [plain_values(x) for x in v]
    if isinstance(v, dict):
        return {k: plain_values(x) for k, x in v.items()}
    return v
