"""Per graph and model pair, how many of its valid verdicts went to each side, grouped in SQL: what the
model x model win and tie matrices need, read without building a million graphs.

A graph is one ``schema.GRAPH_KEY``; ``lo`` is the pair's first model by name (the model order of
``engine.graphs.stack.graph_cells``, which sorts the names the same way, by code point). Cells with the
same pair and the same three counts are one row with ``graphs`` saying how many, so the result has a row
per distinct count pattern, not per graph: the combine rule (``engine.graphs.stack.combine_counts``, the
one owner of it) is applied to those rows by the caller.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

    from engine.store.connection import Store

OUTCOME_COLUMNS = ("lo", "hi", "lo_win", "hi_win", "tie", "graphs")


def pair_outcome_counts(store: Store, dataset: str, *, judge: str | None = None,
                        category: str | None = None) -> tuple[pd.DataFrame, int]:
    """(a frame of OUTCOME_COLUMNS over the valid verdicts of the selection, the number of graphs holding
    a valid verdict)."""
    from engine.store.schema import GRAPH_KEY
    from engine.store.sql import params

    rel = store.verdict_relation(dataset, judge=judge, category=category, valid_only=True)
    key = ", ".join(f'"{c}"' for c in GRAPH_KEY)
    lo_won = "(winner = 'A' AND model_a < model_b) OR (winner = 'B' AND model_b < model_a)"
    hi_won = "(winner = 'B' AND model_a < model_b) OR (winner = 'A' AND model_b < model_a)"
    cells = (
        f"SELECT least(model_a, model_b) AS lo, greatest(model_a, model_b) AS hi, "
        f"count(*) FILTER (WHERE {lo_won}) AS lo_win, count(*) FILTER (WHERE {hi_won}) AS hi_win, "
        f"count(*) FILTER (WHERE winner = 'tie') AS tie "
        f"FROM {rel} GROUP BY {key}, lo, hi"
    )
    cur = store.cursor()
    frame = cur.execute(
        f"SELECT lo, hi, lo_win, hi_win, tie, count(*) AS graphs FROM ({cells}) "
        "GROUP BY lo, hi, lo_win, hi_win, tie ORDER BY lo, hi, lo_win, hi_win, tie",
        params(rel),
    ).df()
    n_graphs = cur.execute(f"SELECT count(*) FROM (SELECT DISTINCT {key} FROM {rel})", params(rel)).fetchone()
    return frame, int(n_graphs[0]) if n_graphs else 0
