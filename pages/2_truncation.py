"""Truncation: keep the K most consistent graphs by S_mu = C3_bad + mu·C4_bad and re-rank live."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
import streamlit as st

from engine.errors import LensError
from engine.viz import escape_md, rank_change_frame
from pages._lens import (
    B_DEFAULT,
    CURVE_RESAMPLES,
    SEED,
    current,
    curves_result,
    leaderboard_result,
    protocol_table,
    reference_for_key,
    show_error,
    stack_for,
)

st.title("Truncation")
st.caption(
    "Each graph gets the score S_μ = C3ᵇᵃᵈ + μ·C4ᵇᵃᵈ (bad 3- and 4-cycles, paper 000 App. A.2). "
    "Keep-K keeps the K graphs with the smallest score and ranks the models from those alone."
)
ch = current()
try:
    stack = stack_for(ch.key)
except LensError as exc:
    show_error(exc)
    st.stop()
T = stack.T
if T < 2:
    st.info("Truncation needs at least two graphs in the selection.")
    st.stop()

left, right = st.columns(2)
keep_k = left.slider("Keep K graphs", 1, T, value=T, key="keep_k")
MU_STEPS = [float(f"{v:.3g}") for v in np.logspace(-2, 2, 17)]  # 0.01 … 100, 4 steps per decade
MU_DEFAULT = 1.0  # paper 000, Section 4: mu = 1 by default
mu = right.select_slider(
    "μ (weight of bad 4-cycles), log scale", options=MU_STEPS, value=MU_DEFAULT, key="mu",
    format_func=lambda v: f"{v:g}",
)
try:
    full = leaderboard_result(ch.key, ch.ranker, None, float(mu), B_DEFAULT, SEED)
    kept = leaderboard_result(ch.key, ch.ranker, int(keep_k), float(mu), B_DEFAULT, SEED)
except LensError as exc:
    show_error(exc)
    st.stop()

table = rank_change_frame(full.table, kept.table)
moved = int((table["rank_change"].fillna(0) != 0).sum())
c1, c2, c3, c4 = st.columns(4)
c1.metric("Graphs kept", f"{keep_k} of {T}")
c2.metric("μ", f"{mu:g}")
c3.metric("Models whose rank changed", moved)
c4.metric("Leader", str(table.iloc[0]["model"]))
show = [c for c in ("rank", "rank_change", "model", "score", "ci_low", "ci_high", "wins", "losses", "ties",
                    "bad_triads", "ref_rank", "ref_diff") if c in table.columns]
st.dataframe(
    table[show], hide_index=True, width="stretch",
    column_config={"rank_change": st.column_config.NumberColumn("Δ rank vs all graphs", format="%+d")},
)
st.caption(
    f"{ch.caption()} · ranker {ch.ranker} · keep K={keep_k} of {T} graphs by S_μ with μ={mu:g} "
    f"· bootstrap B={B_DEFAULT}, seed {SEED} · Δ rank against the same ranker on all {T} graphs"
)

st.subheader("Sensitivity against the reference ranking")
try:
    curves = curves_result(ch.key, ch.ranker, float(mu), int(keep_k))
except LensError as exc:
    st.info(str(exc))
    curves = None
if curves is not None:
    ref_note = reference_for_key(ch.key.dataset, ch.key.category)[1]
    k_frame, mu_frame, metric = curves
    cols = st.columns(2)
    for col, frame, x, marker, title in (
        (cols[0], k_frame, "k", keep_k, f"distance vs K (μ={mu:g})"),
        (cols[1], mu_frame, "mu", mu, f"distance vs μ (K={keep_k})"),
    ):
        fig = go.Figure()
        fig.add_trace(go.Scatter(x=frame[x], y=frame["ci_high"], mode="lines", line={"width": 0}, showlegend=False,
                                 hoverinfo="skip"))
        fig.add_trace(go.Scatter(
            x=frame[x], y=frame["ci_low"], mode="lines", fill="tonexty", fillcolor="rgba(59,91,219,0.15)", line={"width": 0},
            showlegend=False, hoverinfo="skip",
        ))
        fig.add_trace(go.Scatter(x=frame[x], y=frame["point"], mode="lines+markers", name=metric, line={"color": "#3b5bdb"},
                                 showlegend=False))
        fig.add_vline(x=marker, line_dash="dash", line_color="#e03131")
        fig.update_layout(
            title={"text": title, "font": {"size": 14}}, height=320, margin={"l": 10, "r": 10, "t": 40, "b": 10},
            xaxis_title=x, yaxis_title=metric, xaxis_type="log" if x == "mu" else "linear",
        )
        col.plotly_chart(fig, width="stretch")
    st.caption(
        f"Half-tie Bradley–Terry on the kept graphs against the {escape_md(ref_note)}. Bands: 2.5–97.5 % over "
        f"{CURVE_RESAMPLES} bootstrap draws of the kept graphs; the dashed red line marks the current setting."
    )

with st.expander("Protocol table (Table-2 shape)"):
    st.caption(
        "The six protocols of paper 000, Table 2 (truncation 25 → 20 per category, sampling-only, no "
        "truncation, score-of-win, random), distances to the reference × 1000, mean ± half-width."
    )
    if ch.key.judge is None:
        st.info("Choose one judge in the sidebar: the protocols compare one judge's graphs.")
    elif st.button("Compute the protocol table", key="protocol_go"):
        try:
            st.dataframe(protocol_table(ch.key, ch.ranker, float(mu)).reset_index(), hide_index=True, width="stretch")
        except LensError as exc:
            show_error(exc)
