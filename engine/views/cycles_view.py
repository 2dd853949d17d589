"""How the Cycles page lays out what ``engine.views.viz.cycle_overview`` computed: per-graph counts as a
histogram with one bar per whole number, heatmap tick labels that stay readable for 20 models, and
the per-graph table in natural prompt order with named variants.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from engine.views.labels import natural_key, variant_labels


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
