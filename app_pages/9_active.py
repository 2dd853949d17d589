"""Active judging, "which calls next": the chosen dataset's verdicts replayed as a pool; the next batch the
chosen strategy would send, each call with the facts it was chosen on, and, on request, every strategy's
accuracy against the full-data ranking versus calls spent. The engine computes
(``engine.views.active_view``); this page renders."""

from __future__ import annotations

import plotly.graph_objects as go
import streamlit as st

from app_pages._lens import column_picker, current, fit_columns, get_store, or_stop, table_height
from engine.views.active_curves import mean_curve
from engine.views.active_view import REASONS, STRATEGIES, dataset_source, next_batch, panel_curves
from engine.views.appstate import CacheKey
from engine.views.viz import escape_md

METRICS = {
    "kendall": "Kendall tau distance (0 = the full-data order; ties count ½)",
    "spearman": "Spearman correlation with the full-data ranking",
    "top1": "top-1 recovery (the full-data best model ranked first)",
    "top5": "top-5 recovery (share of the full-data top 5 in the top 5)",
}


@st.cache_resource(max_entries=4, show_spinner="Reading the dataset as a pool…")
def _source(key: CacheKey):
    return dataset_source(get_store(), key.dataset, key.judge)


@st.cache_data(max_entries=32, show_spinner="Replaying the strategy…")
def _next(key: CacheKey, strategy: str, spent: int, batch: int, seed: int):
    return next_batch(_source(key), strategy, spent, batch, seed)


@st.cache_data(max_entries=8, show_spinner="Replaying every strategy…")
def _curves(key: CacheKey, budget: int, batch: int):
    return panel_curves(_source(key), budget, batch)


st.title("Active judging: which calls next")
ch = current()
st.caption(ch.caption())
source = or_stop(_source, ch.key)
pool = source.pool
st.caption(
    f"The verdicts of this dataset and judge (every category) are the pool: {len(pool):,} calls over "
    f"{pool.n_models:,} models. A strategy reveals stored verdicts a batch at a time, as "
    "`python -m engine judge --backend replay` does, and the ranking is refitted (Bradley–Terry with "
    "95 % intervals) after every batch."
)

left, mid, right, last = st.columns(4)
strategy = left.selectbox("Strategy", STRATEGIES, index=STRATEGIES.index("uncertainty"),
                          key="active_strategy")
batch_default = max(1, min(100, len(pool) // 50))
batch = int(mid.number_input("Batch (calls)", 1, len(pool), batch_default, key="active_batch"))
spent_default = min(10 * batch_default, len(pool) - 1)
spent = int(right.number_input("Calls already spent", 0, len(pool) - 1, spent_default, key="active_spent"))
seed = int(last.number_input("Seed", 0, 2**31 - 1, 0, key="active_seed"))

st.subheader("The next batch")
nb = or_stop(_next, ch.key, strategy, spent, batch, seed)
st.markdown(f"**{escape_md(strategy)}** chooses {escape_md(REASONS[strategy])}")
st.caption(
    f"After {nb.spent:,} calls: {nb.separated_pairs} of {nb.adjacent_pairs} neighbour pairs of the ranking "
    f"have separated intervals; mean interval width {nb.mean_ci_width:.2f} (log-strength)."
)
num = st.column_config.NumberColumn
batch_config = {
    "prompt_id": st.column_config.TextColumn("prompt", width=90),
    "variant": num("variant", width=64, help="0: the prompt as written; 1, 2, …: its paraphrases or samples"),
    "turn": num("turn", width=48, help="the conversation's turn the call judges"),
    "model_a": st.column_config.TextColumn("model A"),
    "model_b": st.column_config.TextColumn("model B"),
    "order": st.column_config.TextColumn(
        "order", width=60, help="Which answer the call shows first: AB model A, BA model B; either: the "
        "protocol asks both orders"),
    "judge": st.column_config.TextColumn("judge", width=120),
    "rank_a": num("rank A", width=64, help="A's rank in the current fit"),
    "rank_b": num("rank B", width=64, help="B's rank in the current fit"),
    "p_a_wins": num("P(A wins)", format="%.2f", width=80, help="the current BT fit's chance that A wins"),
    "information": num("p(1 − p)", format="%.3f", width=72,
                       help="information one verdict brings on this pair"),
    "intervals_overlap": st.column_config.CheckboxColumn("intervals overlap", width=120),
    "pair_calls_so_far": num("pair's calls so far", width=124),
    "edge_judged": st.column_config.CheckboxColumn("edge judged", width=96,
                                                   help="this prompt and pair have a verdict"),
    "edge_bad_triads": num(
        "bad triads on edge", width=124, help="bad triads of the prompt's revealed graph through this pair"),
}
# the main columns, order, p(1 − p) and the calls so far fit 1280 px, the two model columns sharing what is
# left (all 13 scrolled sideways by 640 px, audit38); the others on request. Where the longest name would be
# cut (qlora's 46-character names need 317 px each, 195 were left), the calls so far, p(1 − p) and order are
# left out at first, in that order (under More columns, its help says so)
batch_names = {"model_a": nb.table["model_a"], "model_b": nb.table["model_b"]}
# a pool of several turns or variants shows which of the prompt's the call judges (two calls would read the
# same otherwise); one of a single turn and variant has them under More columns
instance = tuple(c for c in ("variant", "turn") if pool.prompt_table[c].nunique() > 1)
batch_shown = column_picker(
    list(nb.table.columns), ("prompt_id", *instance, "model_a", "model_b", "p_a_wins"),
    ("order", "information", "pair_calls_so_far"), batch_config, "active_batch_columns",
    "Prompt, models and P(A wins)", names=batch_names, give_up=("pair_calls_so_far", "information", "order"))
st.dataframe(
    nb.table, hide_index=True, height=table_height(len(nb.table), 420), width="stretch",
    column_order=batch_shown, column_config=fit_columns(batch_config, batch_shown, batch_names, least=140),
)

st.subheader("Accuracy versus calls spent")
budget = int(st.number_input("Budget (calls per run)", 1, len(pool), min(len(pool), 20 * batch),
                             key="active_budget"))
curve_batch = max(1, budget // 20)
st.caption(
    f"Every strategy, seeds 0–2, {budget:,} calls in batches of {curve_batch:,}; accuracy against the "
    "ranking fitted on the whole pool (five-seed curves of the bench pools: docs/notes/i27measure-27.md)."
)
ran = st.session_state.get("_active_ran") == (ch.key, budget)
if st.button("Replay every strategy", key="active_run") or ran:
    st.session_state["_active_ran"] = (ch.key, budget)
    curves = or_stop(_curves, ch.key, budget, curve_batch)
    metric = st.radio("Accuracy", list(METRICS), format_func=METRICS.get, horizontal=True,
                      key="active_metric")
    table = mean_curve(curves, metric)
    fig = go.Figure()
    for name in table.columns:
        fig.add_scatter(x=table.index, y=table[name], mode="lines+markers", name=str(name))
    fig.update_layout(xaxis_title="calls spent", yaxis_title=metric, height=380, margin={"t": 20},
                      legend_title_text="strategy")
    st.plotly_chart(fig, width="stretch")
    st.dataframe(table.round(4).reset_index(), hide_index=True, height=table_height(len(table), 420))
