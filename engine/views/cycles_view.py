"""How the Cycles page lays out what ``engine.views.viz.cycle_overview`` computed: per-graph counts as a
histogram with one bar per whole number, heatmap tick labels that stay readable for 20 models, and
the per-graph table in natural prompt order with named variants; and the page's numbers for a whole
selection without building its graphs of fewer than 3 models (a battle log's million one-pair prompts).

Only a graph of 3 or more models can hold a triad, and each graph's cycle counts depend on its own
verdicts alone, so the cycle numbers over the graphs of 3 or more models (``Store.verdicts(
graphs_of_at_least=3)``) are those over every graph; what the others add is counted in SQL: how many graphs
there are, and each pair's wins and ties per graph (``engine.store.pair_outcomes``, combined by the same
rule as the graphs, ``engine.graphs.stack.combine_counts``).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from engine.views.labels import natural_key, variant_labels

if TYPE_CHECKING:
    from engine.graphs.buckets import GraphBuckets
    from engine.views.viz import CycleOverview


def integer_histogram(counts) -> tuple[np.ndarray, np.ndarray]:
    """(k, graphs with k) for every whole k from 0 to the largest count: one bin per integer, the
    empty ones included, so bars never straddle or skip a value."""
    c = np.asarray(counts, dtype=np.int64)
    if c.size == 0:
        return np.zeros(1, dtype=np.int64), np.zeros(1, dtype=np.int64)
    if (c < 0).any():
        raise ValueError("cycle counts are never negative")
    return np.arange(int(c.max()) + 1), np.bincount(c)


def integer_axis(max_k: int) -> dict:
    """Plotly x-axis settings for a count axis: whole-number ticks only (every one up to 20, else
    plotly's spacing with integer steps)."""
    if max_k <= 20:
        return {"tickmode": "linear", "tick0": 0, "dtick": 1}
    return {"tickformat": "d", "dtick": max(1, int(np.ceil(max_k / 10)))}


def graphs_table(graphs: pd.DataFrame, keys: pd.DataFrame | None = None) -> pd.DataFrame:
    """The per-graph table (``engine.views.viz.graphs_by_score`` output: ``s_mu`` highest first) re-ordered so
    equal scores list prompts in natural order (q2 before q10), then variant and judge, with a
    ``variant_label`` column ("original", "paraphrase k", "sample k"; from ``variant_kind`` in
    ``keys`` or in ``graphs``)."""
    src = graphs if keys is None else keys
    if "variant_kind" in src.columns:
        names = variant_labels(src.reset_index(drop=True))
        lookup = dict(zip(zip(src["prompt_id"].astype(str), src["variant"].astype(int), strict=True),
                          names, strict=True))
        label = [
            lookup.get((str(p), int(v)), str(v))
            for p, v in zip(graphs["prompt_id"], graphs["variant"], strict=True)
        ]
    else:
        label = ["original" if int(v) == 0 else f"variant {int(v)}" for v in graphs["variant"]]
    out = graphs.assign(variant_label=label)
    s_mu, variant = out["s_mu"].to_numpy(np.float64), out["variant"].to_numpy(np.int64)
    pid, judge = out["prompt_id"].tolist(), [str(j) for j in out["judge"]]
    order = sorted(range(len(out)), key=lambda i: (-s_mu[i], natural_key(pid[i]), variant[i], judge[i]))
    return out.iloc[order].reset_index(drop=True)


def graph_pick_labels(table: pd.DataFrame, mu: float) -> list[str]:
    """The Cycles page's "Open a graph in the inspector" options, one per row of ``graphs_table``'s
    ``table``: prompt, variant label, the turn when the table has several, judge and S_μ at ``mu``
    (``engine.views.truncation_view.format_s_mu``). Built once from the columns: as a per-option
    ``format_func`` reading ``table.iloc[i]`` five times, the labels cost every run of the page (a new
    tab included) 0.07-0.11 s of the server's CPU on vicuna80's 481 graphs (docs/notes/tab40-40.md)."""
    from engine.views.truncation_view import format_s_mu

    turn_part = (lambda t: f"turn {t} · ") if table["turn"].nunique() > 1 else (lambda t: "")
    rows = zip(table["prompt_id"].tolist(), table["variant_label"].tolist(), table["turn"].tolist(),
               table["judge"].tolist(), table["s_mu"].tolist(), strict=True)
    return [f"prompt {p} · {v} · {turn_part(t)}{j} · S_μ={format_s_mu(s, mu)}" for p, v, t, j, s in rows]


def selection_win_ties(counts: pd.DataFrame, policy: str) -> tuple[list[str], np.ndarray, np.ndarray]:
    """(every model of a valid verdict, by name; W: graphs where the row model beat the column model; T:
    graphs where they tied) from ``engine.store.pair_outcomes.pair_outcome_counts``'s frame: the same
    matrices as ``GraphBuckets.win_tie_matrices`` on the selection's graphs."""
    from engine.graphs.stack import combine_counts

    lo, hi = counts["lo"].astype(str).to_numpy(), counts["hi"].astype(str).to_numpy()
    models = sorted(set(lo) | set(hi))
    n = len(models)
    pos = {m: i for i, m in enumerate(models)}
    i = np.fromiter((pos[m] for m in lo), dtype=np.int64, count=len(lo))
    j = np.fromiter((pos[m] for m in hi), dtype=np.int64, count=len(hi))
    lo_win, hi_win, ties = (counts[c].to_numpy(np.int64) for c in ("lo_win", "hi_win", "tie"))
    outcome = combine_counts(lo_win, hi_win, ties, policy)
    graphs = counts["graphs"].to_numpy(np.float64)
    W, T = np.zeros(n * n), np.zeros(n * n)
    np.add.at(W, i * n + j, np.where(outcome > 0, graphs, 0.0))
    np.add.at(W, j * n + i, np.where(outcome < 0, graphs, 0.0))
    tie = np.where(outcome == 0, graphs, 0.0)
    np.add.at(T, i * n + j, tie)
    np.add.at(T, j * n + i, tie)
    return models, W.reshape(n, n), T.reshape(n, n)


def selection_overview(triad_graphs: GraphBuckets | None, n_graphs: int, models: list[str],
                       nb_fit=None) -> CycleOverview:
    """``engine.views.viz.cycle_overview`` of a whole selection from ``triad_graphs``, its graphs of 3 or
    more models (None when it has none), ``n_graphs`` (every graph holding a valid verdict) and
    ``models`` (every model of a valid verdict, by name): the same frames, over the same models, with the
    other graphs counted as left out."""
    from engine.graphs.buckets import build_buckets
    from engine.graphs.stack import GRAPH_COLUMNS
    from engine.store.schema import GRAPH_KEY, VERDICT_DTYPES
    from engine.views.viz import cycle_overview

    if triad_graphs is None:  # no graph to build: an empty read
        triad_graphs = build_buckets(
            pd.DataFrame({c: pd.Series(dtype=VERDICT_DTYPES[c]) for c in GRAPH_COLUMNS})
        )
    ov = cycle_overview(triad_graphs, nb_fit=nb_fit)
    graphs = ov.graphs
    if graphs.empty:  # the graph key typed as the store reads it, as when every graph was built
        graphs = graphs.astype({c: VERDICT_DTYPES[c] for c in graphs.columns if c in GRAPH_KEY})
    return replace(
        ov,
        graphs=graphs,
        per_pair=ov.per_pair.reindex(index=models, columns=models, fill_value=0),
        category_rates=ov.category_rates.reindex(columns=models),
        n_left_out=int(n_graphs) - ov.n_graphs,
    )
