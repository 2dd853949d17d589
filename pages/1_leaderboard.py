"""Leaderboard: models ranked from every graph of the current choice, with bootstrap CIs, cycle
participation per model and the rank on the reference leaderboard where one is mapped."""

from __future__ import annotations

import json

import plotly.graph_objects as go
import streamlit as st

from engine.errors import LensError
from engine.viz import ci_plot_frame, escape_md
from pages._lens import B_DEFAULT, SEED, current, leaderboard_result, show_error

st.title("Leaderboard")
st.caption(
    "Every tournament graph of the chosen dataset, judge and category, aggregated into one ranking "
    "(W = wins, T = ties over graphs, paper 000 eq. 3–4). Intervals are percentile bootstrap intervals "
    "over graphs; bad triads count the non-transitive triples a model sits in."
)
ch = current()
try:
    board = leaderboard_result(ch.key, ch.ranker, None, 1.0, B_DEFAULT, SEED)
except LensError as exc:
    show_error(exc)
    st.stop()
table = board.table

c1, c2, c3, c4 = st.columns(4)
c1.metric("Models", len(table))
c2.metric("Graphs", board.params["n_graphs"])
c3.metric("Leader", str(table.iloc[0]["model"]))
if board.distances:
    c4.metric("Spearman distance to reference", f"{board.distances['spearman']:.3f}",
              help=f"(1 − ρ)/2 over the {board.distances['n_shared']} models on the reference; 0 = same order.")
else:
    c4.metric("Reference", "none", help=board.reference_note)

config = {
    "rank": st.column_config.NumberColumn("rank", width="small"),
    "score": st.column_config.NumberColumn("score", format="%.3f"),
    "ci_low": st.column_config.NumberColumn("CI low", format="%.3f"),
    "ci_high": st.column_config.NumberColumn("CI high", format="%.3f"),
    "win_rate": st.column_config.ProgressColumn("win rate", min_value=0.0, max_value=1.0, format="%.2f"),
    "cycle_share": st.column_config.ProgressColumn(
        "on a bad triad", min_value=0.0, max_value=1.0, format="%.2f",
        help="Share of the graphs where the model was compared in which it lies on a bad triad."),
    "bad_triads": st.column_config.NumberColumn("bad triads"),
    "ref_rank": st.column_config.NumberColumn("reference rank", help=board.reference_note),
    "ref_diff": st.column_config.NumberColumn("Δ vs reference", format="%+d",
                                              help="Rank here among the mapped models minus the reference rank."),
    "n_graphs_model": st.column_config.NumberColumn("graphs"),
    "rank_low": st.column_config.NumberColumn("rank CI low"),
    "rank_high": st.column_config.NumberColumn("rank CI high"),
}
ORDER = ("rank", "model", "score", "ci_low", "ci_high", "wins", "losses", "ties", "bad_triads", "cycle_share",
         "ref_rank", "ref_diff", "win_rate", "rank_low", "rank_high", "n_graphs_model")
st.dataframe(table, hide_index=True, width="stretch", column_config=config,
             column_order=[c for c in ORDER if c in table.columns])

plot = ci_plot_frame(table)
fig = go.Figure(go.Scatter(
    x=plot["score"], y=plot["model"], mode="markers", marker={"size": 11, "color": "#3b5bdb"},
    error_x={"type": "data", "array": plot["err_plus"], "arrayminus": plot["err_minus"], "thickness": 1.6,
             "color": "#748ffc"},
    hovertemplate="%{y}: %{x:.3f}<extra></extra>",
))
fig.update_layout(
    height=max(260, 36 * len(plot) + 90), margin={"l": 10, "r": 10, "t": 40, "b": 10},
    xaxis_title=f"score ({ch.ranker})", yaxis_title=None, plot_bgcolor="#fbfcfe",
    title={"text": f"Scores with 95 % bootstrap intervals (B = {B_DEFAULT})", "font": {"size": 14}},
)
st.plotly_chart(fig, width="stretch")

d1, d2, _ = st.columns([1, 1, 4])
d1.download_button("Download CSV", table.to_csv(index=False), "leaderboard.csv", "text/csv", key="lb_csv")
d2.download_button(
    "Download JSON",
    json.dumps({"params": board.params, "reference": board.reference_note,
                "table": json.loads(table.to_json(orient="records"))}, indent=2, default=str),
    "leaderboard.json", "application/json", key="lb_json",
)
st.caption(
    f"{ch.caption()} · ranker {escape_md(ch.ranker)} · all {board.params['n_graphs']} graphs · combine policy "
    f"{board.params['policy']} · bootstrap B={B_DEFAULT}, seed {SEED} · {escape_md(board.reference_note)}"
)
