"""Descriptive structure of the comparison graphs by judge and category (paper 000, Figure 4):
mean bad 3-/4-cycles, mean draw rate and mean largest-SCC size, as one tidy table.

Built on engine.graphs.structure.graph_table (one row per graph); the grouping is a parameter, by default
judge, category and variant kind (Figure 4 contrasts original and perturbed prompts).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from engine.graphs.structure import graph_table

if TYPE_CHECKING:
    from engine.graphs.buckets import GraphBuckets
    from engine.graphs.stack import GraphStack

DEFAULT_BY: tuple[str, ...] = ("judge", "category", "variant_kind")


def structure_summary(stack: GraphStack | GraphBuckets, by: tuple[str, ...] = DEFAULT_BY) -> pd.DataFrame:
    """Per group: graphs, mean models per graph, mean C3_bad / C4_bad and share of graphs with a bad
    cycle (over the ``graphs_min3`` graphs of at least 3 models, NaN if none: a 2-model graph can
    hold no cycle), mean draw rate and mean largest-SCC size (over every graph)."""
    g = graph_table(stack)
    cols = [*by, "graphs", "n_models_mean", "c3_bad_mean", "c4_bad_mean", "bad_graph_share",
            "draw_rate_mean", "largest_scc_mean", "graphs_min3"]
    if g.empty:
        return pd.DataFrame(columns=cols)
    can = g["n_models"] >= 3
    bad = ((g["c3_bad"] + g["c4_bad"]) > 0).astype(np.float64)
    g = g.assign(bad=bad.where(can), c3=g["c3_bad"].where(can).astype(np.float64),
                 c4=g["c4_bad"].where(can).astype(np.float64), min3=can.astype(np.int64))
    out = g.groupby(list(by), sort=True, dropna=False).agg(
        graphs=("bad", "size"), n_models_mean=("n_models", "mean"), c3_bad_mean=("c3", "mean"),
        c4_bad_mean=("c4", "mean"), bad_graph_share=("bad", "mean"), draw_rate_mean=("draw_rate", "mean"),
        largest_scc_mean=("largest_scc", "mean"), graphs_min3=("min3", "sum")).reset_index()
    return out[cols]
