"""Theory lab: the random tournament model of paper 000, Section 5 — how many graphs recover the
true order, with and without keeping only triangle-free graphs."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
import streamlit as st

from app_pages._lens import SEED, or_stop, recovery_result
from engine.views.theory_view import lab_plan

st.title("Theory lab")
st.caption(
    "The truth is 1 ≻ 2 ≻ … ≻ n. Each of t graphs keeps every true edge with probability ½ + p and "
    "reverses it otherwise; the majority graph over the t graphs recovers the order exactly once t passes "
    "≈ 4 log n / log(1/(1−4p²)) (Theorem 1). Keeping only graphs without a directed triangle halves that to "
    "≈ 2 log n / log(1/(1−4p²)) (Theorem 2)."
)
c1, c2, c3 = st.columns(3)
n = c1.slider("n (models)", 3, 30, 10, key="lab_n")
p = c2.slider("p (judge's edge over a coin flip)", 0.02, 0.45, 0.15, step=0.01, key="lab_p")
t_max = c3.slider("t (largest number of graphs, odd)", 5, 399, 121, step=2, key="lab_t")
reps = st.select_slider("Simulated replicates per point", [100, 200, 400, 800], value=200, key="lab_reps")
# the work grows as n² · replicates · Σt: light settings follow the sliders, heavy ones wait for a
# button, and settings that would hold the server for a minute are refused (engine/views/theory_view.py)
plan = lab_plan(n, t_max, reps)
if plan.mode == "refused":
    st.warning(plan.text)
    st.stop()
if plan.mode == "button":
    st.info(plan.text)
    ran = st.session_state.setdefault("lab_ran", [])
    if (n, p, t_max, reps) not in ran:
        if not st.button("Run the simulation", key="lab_go", type="primary"):
            st.stop()
        ran.append((n, p, t_max, reps))
curve = or_stop(recovery_result, n, p, t_max, reps, SEED)
t2, t4 = float(curve["t_triangle_free"].iloc[0]), float(curve["t_iid"].iloc[0])

m1, m2, m3 = st.columns(3)
m1.metric("Threshold, all graphs", f"{t4:.1f}", help="4 log n / log(1/(1−4p²))")
m2.metric("Threshold, triangle-free graphs", f"{t2:.1f}", help="2 log n / log(1/(1−4p²))")
at_t = curve[curve["t"] == curve["t"].max()]
m3.metric(
    f"P(recovery) at t = {int(at_t['t'].iloc[0])}",
    " / ".join(f"{v:.2f}" for v in at_t.sort_values("model")["prob"]),
    help="all graphs / triangle-free",
)

names = {"iid": "all graphs (simulated)", "triangle_free": "triangle-free graphs (simulated)"}
colors = {"iid": "#3b5bdb", "triangle_free": "#2b8a3e"}
fig = go.Figure()
for model, g in curve.groupby("model"):
    g = g.sort_values("t")
    fig.add_trace(
        go.Scatter(
            x=np.concatenate([g["t"], g["t"][::-1]]),
            y=np.concatenate([g["ci_high"], g["ci_low"][::-1]]),
            fill="toself",
            fillcolor=colors[model],
            opacity=0.15,
            line={"width": 0},
            showlegend=False,
            hoverinfo="skip",
        )
    )
    fig.add_trace(go.Scatter(x=g["t"], y=g["prob"], mode="lines+markers", name=names[model],
                             line={"color": colors[model]}))
    if model == "iid":
        fig.add_trace(go.Scatter(x=g["t"], y=g["exact"], mode="lines", name="all graphs (closed form)",
                                 line={"color": colors[model], "dash": "dot"}))
# thresholds as dashed vertical traces with legend entries (a text annotation sat on the curves)
for x, label, color in ((t2, f"threshold 2 log n / log(1/(1−4p²)) = {t2:.1f}", "#2b8a3e"),
                        (t4, f"threshold 4 log n / log(1/(1−4p²)) = {t4:.1f}", "#3b5bdb")):
    if x <= t_max:
        fig.add_trace(go.Scatter(x=[x, x], y=[0, 1], mode="lines", name=label, hoverinfo="name",
                                 line={"color": color, "dash": "dash", "width": 1.5}))
fig.update_layout(
    height=460, margin={"l": 10, "r": 10, "t": 30, "b": 10}, xaxis_title="t (graphs)",
    yaxis_title="P(majority graph = true order)", yaxis_range=[-0.02, 1.02],
    legend={"orientation": "h", "y": -0.18, "x": 0},
)
st.plotly_chart(fig, width="stretch")
st.caption(
    f"n = {n}, p = {p:.2f}, {reps} replicates per t, seed {SEED}; bands are 95 % Wilson intervals. t is odd: "
    "with an even t a pair can split t/2 : t/2, which the majority graph cannot orient, and the curve would "
    "zig-zag between odd and even t. The thresholds are asymptotic (n → ∞), so at small n the curves cross ½ "
    "near, not at, the lines."
)
