"""The Cycles page's figures, each built once per content and shared (``st.cache_resource``): a Plotly
figure's construction validates every property in Python (``make_subplots``, ``update_layout``, the axes),
~0.1 s of a Cycles rerun's ~0.2 s on vicuna80, paid again on every rerun and every new tab for the same
matrices. The cache key is the figure's input (frames hashed by content, the labels, the formats), so another
selection, top N, kind or dataset version is another figure, never a stale one. The figures are only read
after they are made: ``st.plotly_chart`` copies a figure (``to_dict``) before it serialises it."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
import streamlit as st

from engine.views.cycles_view import integer_axis


@st.cache_resource(max_entries=64, show_spinner=False)
def matrix_figure(
    frame, title: str, colorbar: str, fmt: str, colorscale: str = "Reds", zmax: float | None = None
):
    """A heatmap whose colour scale starts at 0, grey (with "not compared" on hover) where a value is
    missing, square cells and tick labels sized and thinned by
    ``engine.views.matrix_view.heatmap_geometry``."""
    import plotly.graph_objects as go

    from engine.views.matrix_view import TITLE_PX, heatmap_geometry, hover_text, wrapped_title
    from engine.views.viz import plot_labels

    geo = heatmap_geometry(frame.index, frame.columns)
    title, lines = wrapped_title(title, geo.width_px)
    z = frame.to_numpy(dtype=float)
    top = zmax if zmax is not None else (float(np.nanmax(z)) if np.isfinite(z).any() else 1.0)
    fig = go.Figure(go.Heatmap(
        z=z, x=list(range(frame.shape[1])), y=list(range(frame.shape[0])), zmin=0.0, zmax=max(top, 1e-9),
        colorscale=colorscale, colorbar={"title": colorbar, "len": min(1.0, max(0.3, 300 / geo.height_px))},
        text=hover_text(frame, fmt), hovertemplate="%{text}<extra></extra>", hoverongaps=True,
    ))
    xs, xl = geo.ticks(plot_labels(frame.columns), "x")
    ys, yl = geo.ticks(plot_labels(frame.index), "y")
    more = int(1.3 * TITLE_PX) * (lines - 1)  # a title of several lines pushes the matrix down
    fig.update_layout(
        title={"text": title, "font": {"size": TITLE_PX}}, width=geo.width_px, height=geo.height_px + more,
        margin={"l": 10, "r": 10, "t": 40 + more, "b": 10}, plot_bgcolor="#c3c8d1",
    )
    fig.update_xaxes(tickmode="array", tickvals=xs, ticktext=xl, tickangle=geo.x_angle,
                     tickfont={"size": geo.font_px}, automargin=True, showgrid=False, zeroline=False)
    fig.update_yaxes(
        tickmode="array",
        tickvals=ys,
        ticktext=yl,
        autorange="reversed",
        tickfont={"size": geo.font_px},
        automargin=True,
        showgrid=False,
        zeroline=False,
    )
    return fig


@st.cache_resource(max_entries=32, show_spinner=False)
def observed_predicted_figure(observed, predicted):
    """The observed win fraction and the fit's predicted win probability side by side, one colour scale (both
    are shares from 0 to 1), the model labels once on the left."""
    from plotly.subplots import make_subplots

    from engine.views.matrix_view import MAX_PLOT_PX, heatmap_geometry, hover_text
    from engine.views.viz import plot_labels

    shown = list(observed.index)
    geo = heatmap_geometry(shown, shown, max_plot_px=MAX_PLOT_PX // 2 - 20)
    panel = geo.cell_px * len(shown)
    gap = 24
    fig = make_subplots(rows=1, cols=2, shared_yaxes=True, horizontal_spacing=gap / (2 * panel + gap),
                        subplot_titles=("Observed win fraction", "Predicted by the fit"))
    for col, frame in ((1, observed), (2, predicted)):
        fig.add_trace(go.Heatmap(
            z=frame.to_numpy(dtype=float), x=list(range(len(shown))), y=list(range(len(shown))), zmin=0.0,
            zmax=1.0, colorscale="RdBu", showscale=col == 2, colorbar={"title": "share"},
            text=hover_text(frame, ".2f"), hovertemplate="%{text}<extra></extra>", hoverongaps=True,
        ), row=1, col=col)
    xs, xl = geo.ticks(plot_labels(shown), "x")
    ys, yl = geo.ticks(plot_labels(shown), "y")
    fig.update_layout(width=int(geo.width_px + panel + gap), height=geo.height_px + 20,
                      margin={"l": 10, "r": 10, "t": 50, "b": 10}, plot_bgcolor="#c3c8d1")
    fig.update_xaxes(tickmode="array", tickvals=xs, ticktext=xl, tickangle=geo.x_angle,
                     tickfont={"size": geo.font_px}, showgrid=False, zeroline=False)
    fig.update_yaxes(tickmode="array", tickvals=ys, ticktext=yl, autorange="reversed",
                     tickfont={"size": geo.font_px}, showgrid=False, zeroline=False)
    fig.update_annotations(font={"size": 13}, yshift=6)
    return fig


@st.cache_resource(max_entries=32, show_spinner=False)
def histogram_figure(name: str, k, n_graphs, fit):
    """Graphs per whole number of ``name`` (one bar each, empty ones included) and, where ``fit`` is given,
    the negative binomial fit's expected graphs."""
    fig = go.Figure(go.Bar(x=k, y=n_graphs, name="graphs", marker_color="#3b5bdb"))
    if fit is not None:
        fig.add_trace(
            go.Scatter(
                x=fit["k"],
                y=fit["expected"],
                mode="lines+markers",
                name="negative binomial fit",
                line={"color": "#e03131"},
            )
        )
    fig.update_layout(
        title={"text": f"{name} per graph", "font": {"size": 14}}, height=320, bargap=0.1,
        margin={"l": 10, "r": 10, "t": 40, "b": 10}, xaxis_title=name, yaxis_title="graphs",
        legend={"orientation": "h", "y": -0.25}, xaxis=integer_axis(int(np.max(k))),
    )
    return fig
