"""How many arcs the greedy feedback arc set removes beyond the minimum, per judge graph.

Why: PGED (paper 002) turns a cyclic preference graph into a DAG by removing the backward arcs of the
greedy order of its Algorithm 1 (engine.graphs.denoise). The greedy does not promise the fewest
arcs; engine.graphs.min_fas finds the true minimum for graphs of up to ``EXACT_FAS_MAX_N`` models.
This table puts the two side by side for every graph of a dataset: each strict win is one arc of
weight 1 (ties are no arc, as in PGED), the greedy is Algorithm 1 with delta ties to the first model
by name (the DAG the app shows), and ``excess`` is greedy minus minimum (never negative: the minimum
is a lower bound on every feedback arc set).

Graphs of fewer than 3 models hold no cycle and are left out, as in the cycle tables. A graph whose
greedy removes nothing is acyclic, so its minimum is 0 and no DP runs for it. A cyclic graph with more
than ``EXACT_FAS_MAX_N`` models with arcs gets no minimum (NA) and is counted in ``above_limit``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from engine.graphs.denoise import denoise_batch
from engine.graphs.min_fas import EXACT_FAS_MAX_N, min_fas_batch

GREEDY_CELLS = 4_000_000
"""Graphs go through the greedy in chunks of about this many (graph, model, model) cells."""

GRAPH_KEY_COLUMNS = ("dataset", "judge", "prompt_id", "variant", "turn", "category", "variant_kind")


def fas_gap_table(stack, max_n: int = EXACT_FAS_MAX_N) -> pd.DataFrame:
    """One row per graph of at least 3 models: key columns, ``models``, ``arcs`` (strict wins),
    ``greedy_removed`` (arcs Algorithm 1 removes), ``min_removed`` (the minimum feedback arc set's
    size; NA above ``max_n`` models with arcs) and ``excess`` (greedy minus minimum; NA likewise).
    ``stack``: a GraphStack or GraphBuckets."""
    from engine.graphs.buckets import as_buckets

    b = as_buckets(stack)
    parts = []
    for bk in b.at_least(3):
        wins = (bk.adj & ~bk.adj.swapaxes(1, 2)).astype(np.float64)
        greedy = np.zeros(bk.T, dtype=np.int64)
        step = max(1, GREEDY_CELLS // (bk.k * bk.k))
        for a in range(0, bk.T, step):
            greedy[a:a + step] = denoise_batch(wins[a:a + step])[2].sum(axis=(1, 2))
        minimum = np.zeros(bk.T)
        cyclic = np.flatnonzero(greedy > 0)
        if cyclic.size:
            m = min_fas_batch(wins[cyclic], max_n=max_n)
            minimum[cyclic] = np.where(m.solved, m.n_arcs, np.nan)
        parts.append(pd.DataFrame({
            "graph": bk.graph,
            "models": np.full(bk.T, bk.k, dtype=np.int64),
            "arcs": wins.sum(axis=(1, 2)).astype(np.int64),
            "greedy_removed": greedy,
            "min_removed": pd.Series(minimum).round().astype("Int64"),  # NaN (above the limit) -> NA
        }))
    cols = [c for c in GRAPH_KEY_COLUMNS if c in b.keys.columns]
    if not parts:
        out = b.keys.iloc[:0][cols].copy()
        for c in ("models", "arcs", "greedy_removed"):
            out[c] = pd.Series(dtype=np.int64)
        out["min_removed"] = pd.Series(dtype="Int64")
        out["excess"] = pd.Series(dtype="Int64")
        return out
    rows = pd.concat(parts, ignore_index=True).sort_values("graph", kind="stable")
    keys = b.keys.iloc[rows["graph"].to_numpy()][cols].reset_index(drop=True)
    out = pd.concat([keys, rows.drop(columns="graph").reset_index(drop=True)], axis=1)
    out["excess"] = (out["greedy_removed"].astype("Int64") - out["min_removed"]).astype("Int64")
    return out


def fas_gap_summary(table: pd.DataFrame, by: tuple[str, ...] = ("judge",)) -> pd.DataFrame:
    """Per group of ``fas_gap_table`` rows: graphs, cyclic graphs, those where the greedy removed more
    than the minimum, the largest and total excess, the arcs removed by each, and graphs above the
    exact limit (no minimum)."""
    cols = [*by, "graphs", "cyclic", "greedy_above_min", "excess_max", "excess_total", "greedy_removed",
            "min_removed", "above_limit"]
    if table.empty:
        return pd.DataFrame(columns=cols)
    t = table.assign(
        cyclic=table["greedy_removed"] > 0,
        above=(table["excess"].fillna(0) > 0).astype(bool),
        unsolved=table["min_removed"].isna(),
        excess_f=table["excess"].astype("float64"),
        min_f=table["min_removed"].astype("float64"),
    )
    g = t.groupby(list(by), sort=True, dropna=False)
    out = g.agg(
        graphs=("models", "size"),
        cyclic=("cyclic", "sum"),
        greedy_above_min=("above", "sum"),
        excess_max=("excess_f", "max"),
        excess_total=("excess_f", "sum"),
        greedy_removed=("greedy_removed", "sum"),
        min_removed=("min_f", "sum"),
        above_limit=("unsolved", "sum"),
    ).reset_index()
    for c in ("cyclic", "greedy_above_min", "greedy_removed", "above_limit"):
        out[c] = out[c].astype(np.int64)
    for c in ("excess_max", "excess_total", "min_removed"):
        out[c] = out[c].round().astype("Int64")
    return out[cols]


def fas_gap_note(table: pd.DataFrame, max_n: int = EXACT_FAS_MAX_N) -> str | None:
    """One sentence over every row: on how many cyclic graphs the greedy removed more than the minimum,
    by how many arcs, and how many graphs were too large for the exact minimum."""
    if table.empty:
        return None
    cyclic = int((table["greedy_removed"] > 0).sum())
    excess = table["excess"].dropna().astype(np.int64)
    above = excess[excess > 0]
    unsolved = int(table["min_removed"].isna().sum())
    if not cyclic:
        return "No graph has a cycle, so the greedy and the minimum feedback arc set both remove nothing."
    text = (f"The greedy feedback arc set (Algorithm 1, delta ties to the first name) removed more arcs than "
            f"the minimum on {above.size} of {cyclic} cyclic graphs")
    if above.size:
        lo, hi = int(above.min()), int(above.max())
        text += f" ({lo} more)" if lo == hi else f" ({lo}-{hi} more)"
    if unsolved:
        text += f"; {unsolved} cyclic graph(s) have more than {max_n} models with arcs and no exact minimum"
    return text + "."
