"""The Truncation page's sensitivity-curve figures: each curve (a frame of
``engine.views.truncation_view.keep_k_view`` / ``mu_view``) drawn as one Plotly figure."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from engine.views.truncation_view import y_range

CURVE_COLOURS = {"band": "rgba(59,91,219,0.15)", "mean": "#3b5bdb", "point": "#868e96", "setting": "#e03131",
                 "best": "#2b8a3e"}
"""The sensitivity curves' colours: the band and mean line (blue), the point estimate (grey), the slider's
setting (red) and the best K (green)."""


def curve_figure(frame: pd.DataFrame, x: str, marker: float, title: str, yaxis_title: str,
                 best: int = 0) -> go.Figure:
    """One sensitivity curve as a Plotly figure, built in a single validated pass: the band
    ``ci_low``…``ci_high`` (blue fill), the ``mean`` over draws (blue), the ``point`` fit (dotted grey), a
    dashed red line at the slider's ``marker`` and, on the keep-K curve (``x == "k"``), a dotted green
    line at ``best`` labelled ``best K = …``. ``x``: ``"k"`` (linear axis) or ``"mu"`` (log axis).

    The figure is what ``go.Figure()`` then four ``add_trace``, one or two ``add_vline`` and
    ``update_layout`` make (tests/test_curve_figure.py compares every field), at a fraction of the
    cost: ``add_vline`` re-walks the figure's axes on each call, which a slider move paid four times."""
    xs = frame[x]
    data = [
        {"type": "scatter", "x": xs, "y": frame["ci_high"], "mode": "lines", "line": {"width": 0},
         "showlegend": False, "hoverinfo": "skip"},
        {"type": "scatter", "x": xs, "y": frame["ci_low"], "mode": "lines", "fill": "tonexty",
         "fillcolor": CURVE_COLOURS["band"], "line": {"width": 0}, "showlegend": False, "hoverinfo": "skip"},
        {"type": "scatter", "x": xs, "y": frame["mean"], "mode": "lines+markers", "name": "mean over draws",
         "line": {"color": CURVE_COLOURS["mean"]}, "marker": {"size": 5}},
        {"type": "scatter", "x": xs, "y": frame["point"], "mode": "lines", "name": "all kept graphs",
         "line": {"color": CURVE_COLOURS["point"], "dash": "dot", "width": 1.5}},
    ]

    def vline(at: float, dash: str, colour: str) -> dict:
        # what add_vline draws: a line over the whole plot height (the y axis' domain) at x = at
        return {"type": "line", "x0": at, "x1": at, "xref": "x", "y0": 0, "y1": 1, "yref": "y domain",
                "line": {"dash": dash, "color": colour}}

    shapes, notes = [vline(marker, "dash", CURVE_COLOURS["setting"])], []
    if x == "k":
        shapes.append(vline(best, "dot", CURVE_COLOURS["best"]))
        notes.append({"x": best, "y": 1, "xref": "x", "yref": "y domain", "text": f"best K = {best}",
                      "showarrow": False, "xanchor": "left", "yanchor": "top",
                      "font": {"color": CURVE_COLOURS["best"]}})
    layout = {
        "shapes": shapes, "annotations": notes,
        "title": {"text": title, "font": {"size": 14}}, "height": 320,
        "margin": {"l": 10, "r": 10, "t": 40, "b": 10},
        "xaxis": {"title": {"text": x}, "type": "log" if x == "mu" else "linear"},
        # a flat curve (common for mu) keeps a readable band
        "yaxis": {"title": {"text": yaxis_title}, "range": y_range(frame)},
        "legend": {"orientation": "h", "y": -0.3, "x": 0}, "showlegend": x == "k",
    }
    if not notes:
        del layout["annotations"]
    return go.Figure(data=data, layout=layout)
