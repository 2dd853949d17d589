"""The Leaderboard's score chart: one marker per model with its interval as error bars, best first."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from engine.views.viz import plot_labels


def ci_figure(plot: pd.DataFrame, score_label: str, title: str) -> go.Figure:
    """The chart of ``plot`` (``engine.views.viz.ci_plot_frame``'s rows: model, score, err_plus, err_minus),
    its height from the number of models, ``score_label`` under the x axis and ``title`` above."""
    fig = go.Figure(go.Scatter(
        x=plot["score"], y=plot_labels(plot["model"]), mode="markers",
        marker={"size": 11, "color": "#3b5bdb"},
        error_x={"type": "data", "array": plot["err_plus"], "arrayminus": plot["err_minus"], "thickness": 1.6,
                 "color": "#748ffc"},
        hovertemplate="%{y}: %{x:.3f}<extra></extra>",
    ))
    fig.update_layout(
        height=max(260, min(36, max(14, 2400 // max(len(plot), 1))) * len(plot) + 90),
        margin={"l": 10, "r": 10, "t": 40, "b": 10},
        xaxis_title=score_label, yaxis_title=None, plot_bgcolor="#fbfcfe",
        title={"text": title, "font": {"size": 14}},
    )
    fig.update_yaxes(tickfont={"size": 12 if len(plot) <= 40 else 9}, automargin=True)
    return fig
