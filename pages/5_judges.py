"""Judges: how far the judges agree (Cohen's κ), how much the answer shown first wins (position
bias), and how non-transitive each judge is (PNT, SNTD, ρ_non-trans, τ), per judge and category."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
import streamlit as st

from engine.errors import LensError
from pages._lens import current, judge_diagnostics, show_error

st.title("Judges")
st.caption(
    "Every judge of the dataset side by side (the sidebar's judge choice does not apply here; its "
    "category does). Verdicts on one pair in one prompt are first combined per judge (both orders → "
    "one outcome; two disagreeing orders give a tie)."
)
ch = current()
by_cat = st.toggle("Per category", key="judges_by_cat", help="Split every table by the prompt category.")
try:
    jd = judge_diagnostics(ch.key.dataset, ch.key.version, ch.key.category, by_cat)
except LensError as exc:
    show_error(exc)
    st.stop()

c1, c2, c3, c4 = st.columns(4)
c1.metric("Judges", len(jd.judges))
c2.metric("Mean κ over judge pairs", f"{np.nanmean(jd.kappa_matrix.to_numpy()[np.triu_indices(len(jd.judges), 1)]):.2f}"
          if len(jd.judges) > 1 else "—")
c3.metric("Least consistent judge (PNT)", str(jd.worst_pnt))
c4.metric("Strongest first-position bias", str(jd.worst_position))

st.subheader("Agreement between judges (Cohen's κ)")
left, right = st.columns([3, 2])
mat = jd.kappa_matrix
fig = go.Figure(go.Heatmap(
    z=mat.to_numpy(), x=list(mat.columns), y=list(mat.index), zmin=-1, zmax=1, colorscale="RdBu",
    text=np.vectorize(lambda v: "" if np.isnan(v) else f"{v:.2f}")(mat.to_numpy()), texttemplate="%{text}",
    hovertemplate="%{y} vs %{x}: κ=%{z:.3f}<extra></extra>", colorbar={"title": "κ"},
))
fig.update_layout(height=380, margin={"l": 10, "r": 10, "t": 10, "b": 10})
fig.update_yaxes(autorange="reversed")
left.plotly_chart(fig, width="stretch")
right.dataframe(jd.agreement, hide_index=True, width="stretch", height=380)

st.subheader("Position bias")
st.caption(
    "Order consistency: share of pairs judged in both orders whose two verdicts agree. First-position "
    "win rate: share of verdicts won by the answer shown first. McNemar's test (paper 003) asks whether "
    "showing a model first changes its outcome."
)
if jd.position.empty:
    st.info("No verdict of this dataset records which answer was shown first, so position bias cannot be measured.")
else:
    st.dataframe(jd.position, hide_index=True, width="stretch")

st.subheader("Non-transitivity")
st.caption(
    "PNT: share of fully compared model triples whose combined verdicts admit no order (paper 001). "
    "SNTD: mean Jensen-Shannon gap between the judge's probabilities and those implied by transitivity "
    "(needs prob_a). ρ_non-trans and τ: ELSPR's share of vertices in non-transitive SCCs and normalized "
    "structural entropy (paper 004)."
)
st.dataframe(jd.transitivity, hide_index=True, width="stretch")
st.caption(f"{ch.caption()} · combine policy: plurality")
