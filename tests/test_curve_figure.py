"""The Truncation page's sensitivity-curve figures (``app_pages._curve_figure.curve_figure``, one
validated Plotly pass) against the way the page built them before: ``go.Figure()``, four ``add_trace``,
``add_vline`` for the setting (and the best K, annotated) and ``update_layout``. Every field of the two
figures' dicts must agree (traces, shapes, annotation, axes, title, legend), on the keep-K and μ curves,
flat and steep, with the markers anywhere on the axis."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import pytest

from app_pages._curve_figure import curve_figure
from engine.views.truncation_view import best_k, y_range


def page_figure_before(frame: pd.DataFrame, x: str, marker: float, title: str, metric: str,
                       k_best: int) -> go.Figure:
    """The page's construction before curve_figure (app_pages/2_truncation.py at main 415cfdf)."""
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=frame[x], y=frame["ci_high"], mode="lines", line={"width": 0},
                             showlegend=False, hoverinfo="skip"))
    fig.add_trace(go.Scatter(
        x=frame[x], y=frame["ci_low"], mode="lines", fill="tonexty", fillcolor="rgba(59,91,219,0.15)",
        line={"width": 0}, showlegend=False, hoverinfo="skip",
    ))
    fig.add_trace(go.Scatter(x=frame[x], y=frame["mean"], mode="lines+markers", name="mean over draws",
                             line={"color": "#3b5bdb"}, marker={"size": 5}))
    fig.add_trace(go.Scatter(x=frame[x], y=frame["point"], mode="lines", name="all kept graphs",
                             line={"color": "#868e96", "dash": "dot", "width": 1.5}))
    fig.add_vline(x=marker, line_dash="dash", line_color="#e03131")
    if x == "k":
        fig.add_vline(x=k_best, line_dash="dot", line_color="#2b8a3e", annotation_text=f"best K = {k_best}",
                      annotation_position="top right", annotation_font_color="#2b8a3e")
    fig.update_layout(
        title={"text": title, "font": {"size": 14}}, height=320, margin={"l": 10, "r": 10, "t": 40, "b": 10},
        xaxis_title=x, yaxis_title=metric, xaxis_type="log" if x == "mu" else "linear",
        yaxis_range=y_range(frame), legend={"orientation": "h", "y": -0.3, "x": 0}, showlegend=x == "k",
    )
    return fig


def curve(x: str, n: int, seed: int, flat: bool = False) -> pd.DataFrame:
    """A curve frame as keep_k_view / mu_view return it (x, mean, its band, point)."""
    rng = np.random.default_rng(seed)
    xs = np.arange(1, n + 1) if x == "k" else np.logspace(-2, 2, n)
    mean = np.full(n, 0.2) if flat else rng.random(n)
    half = 0.0 if flat else rng.random(n) / 10
    return pd.DataFrame({x: xs, "mean": mean, "ci_low": mean - half, "ci_high": mean + half,
                         "point": mean if flat else rng.random(n)})


def same(a, b, path="") -> None:
    """Equal dicts, lists and arrays (NaN equal to NaN), naming the first field that differs."""
    if isinstance(a, dict):
        assert isinstance(b, dict) and a.keys() == b.keys(), f"{path}: keys {sorted(a)} != {sorted(b)}"
        for k in a:
            same(a[k], b[k], f"{path}.{k}")
    elif isinstance(a, (list, tuple)):
        assert isinstance(b, (list, tuple)) and len(a) == len(b), f"{path}: {a!r} != {b!r}"
        for i, (u, v) in enumerate(zip(a, b, strict=True)):
            same(u, v, f"{path}[{i}]")
    elif isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        assert np.array_equal(np.asarray(a), np.asarray(b), equal_nan=True), path
        assert np.asarray(a).dtype == np.asarray(b).dtype, path
    else:
        assert type(a) is type(b) and a == b, f"{path}: {a!r} != {b!r}"


@pytest.mark.parametrize("x,n,seed,flat,marker", [
    ("k", 80, 0, False, 40), ("k", 480, 1, False, 1), ("k", 2, 2, False, 2), ("k", 60, 3, True, 29),
    ("mu", 17, 4, False, 1.0), ("mu", 17, 5, True, 0.01), ("mu", 17, 6, False, 100.0),
    ("mu", 5, 7, False, 0.316),
])
def test_curve_figure_is_the_page_figure_before(x, n, seed, flat, marker):
    frame = curve(x, n, seed, flat)
    k_best = best_k(curve("k", n, seed, flat))
    title = f"distance vs {x} (other={marker})"
    new = curve_figure(frame, x, marker, title, "Spearman ρ distance", best=k_best).to_dict()
    old = page_figure_before(frame, x, marker, title, "Spearman ρ distance", k_best).to_dict()
    same(new, old)
