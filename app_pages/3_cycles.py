"""Cycles: where the bad triads are — per model pair (beside the win probabilities the ranker's fit
predicts), per category and model, per graph."""

from __future__ import annotations

import streamlit as st

from app_pages._cycles3_cache import listed_prompt_keys_for
from app_pages._cycles_figures import histogram_figure, matrix_figure, observed_predicted_figure
from app_pages._lens import (
    column_picker,
    current,
    cycle_overview,
    metric_row,
    or_stop,
    pair_matrices_for,
    table_height,
)
from app_pages._majority import majority_section, pair_count_cycles
from engine.views.cycles_view import graph_pick_labels, graphs_table, integer_histogram
from engine.views.matrix_view import PREDICTED, select_models
from engine.views.viz import escape_md, graphs_by_score

# The graphs table's columns always shown (they fit at 1280 px); all cycles and tie-only cycles on request.
GRAPHS_MAIN = ("judge", "prompt_id", "variant_label", "turn", "category", "s_mu", "c3_bad", "c4_bad", "link")
GRAPHS_ORDER = ("judge", "prompt_id", "variant_label", "turn", "category", "s_mu", "c3_bad", "c4_bad", "c3",
                "c4", "c3_tie", "c4_tie", "link")

st.title("Cycles")
st.caption(
    "A bad triad is three models whose verdicts admit no order: a strict cycle a>b>c>a or a tie "
    "contradiction such as a∼b, b∼c, a>c (paper 001, App. B.1). Bad 4-cycles are counted as in "
    "paper 000, App. A.2."
)
ch = current()
pair_count_cycles(ch)  # a pair-count dataset: its majority tournament is the whole page (issue 25)
ov = or_stop(cycle_overview, ch.key)


def model_matrices() -> None:
    """Win fraction, battles and bad triads per pair: they need no cycle, so a battle log of two-model
    graphs (left out of every cycle number) still gets them."""
    st.subheader("Model × model")
    mats = or_stop(pair_matrices_for, ch.key, ch.ranker)
    order = list(mats.models)
    kinds = mats.kinds
    m1, m2, m3 = st.columns([3, 1, 2])
    kind = m1.segmented_control(
        "Matrix",
        list(kinds),
        default="win fraction",
        required=True,
        key="cycles_matrix",
        help=" · ".join(f"{k}: {v}" for k, v in kinds.items()),
    )
    if kind not in kinds:  # "predicted" chosen under a ranker that predicts nothing
        kind = "win fraction"
    top_n = int(
        m2.number_input(
            "Top models",
            min_value=2,
            max_value=max(2, len(order)),
            value=min(len(order), 40),
            step=5,
            key="cycles_top_n",
            help="The first N of the current ranking.",
        )
    )
    extra = m3.multiselect("Add models", [m for m in order[top_n:]], key="cycles_extra",
                           help="Search for models below the top N to add them.", placeholder="Search models")
    shown = select_models(order, top_n, extra)
    if kind in ("win fraction", PREDICTED) and mats.predicted is not None:
        observed_and_predicted(mats, shown)
    else:
        frame = mats.get(kind).loc[shown, shown]
        fmt, scale, zmax = {"win fraction": (".2f", "RdBu", 1.0), "battles": (".0f", "Blues", None),
                            "bad triads": (".0f", "Reds", None)}[kind]
        st.plotly_chart(
            matrix_figure(
                frame,
                f"{kind.capitalize()} per pair, rows and columns in {ch.ranker} ranking order",
                kind,
                fmt,
                scale,
                zmax,
            ),
            width="content",
        )
        st.caption(f"{kinds[kind]} Grey: the two models were never compared in this selection (hover says "
                   "so).")
    st.caption(
        f"Every colour scale starts at 0. Showing {len(shown)} of {len(order)} models, ranked by {ch.ranker} "
        "without a bootstrap; labels are thinned when the models no longer fit one per row."
        + ("" if mats.predicted is not None else f" {escape_md(mats.predicted_note)}")
    )
    rates = ov.category_rates.reindex(columns=shown)
    if ov.n_graphs and len(rates):
        st.plotly_chart(
            matrix_figure(
                rates,
                "Share of graphs where the model is on a bad triad, per category",
                "share",
                ".2f",
                "Reds",
                1.0,
            ),
            width="content",
        )


def observed_and_predicted(mats, shown: list[str]) -> None:
    """The observed win fraction and the fit's predicted win probability side by side, one colour scale
    (both are shares from 0 to 1), the model labels once on the left."""
    observed, predicted = mats.win_fraction.loc[shown, shown], mats.predicted.loc[shown, shown]
    fig = observed_predicted_figure(observed, predicted)
    st.plotly_chart(fig, width="content")
    st.caption(
        "Left: the share of the row model's battles against the column model that it won (ties count half); "
        "grey where the two were never compared. Right: the share the fit expects, for every pair. "
        + escape_md(mats.predicted_note)
        + " Where the two differ the fit does not explain the pair: a cycle, or a matchup that favours one "
        "model more than their strengths say. `diagnose --table predicted` lists both per pair."
    )


if ov.n_left_out:
    left = (
        f"{ov.n_left_out:,} graph{'s' if ov.n_left_out != 1 else ''} of this selection "
        f"{'have' if ov.n_left_out != 1 else 'has'} fewer than 3 models and "
        f"{'are' if ov.n_left_out != 1 else 'is'} "
        "left out of every cycle and triad number on this page: no cycle fits in 2 models. "
        "The model × model matrices count their battles."
    )
    if ov.n_graphs == 0:  # a battle log of one pair per prompt: the majority tournament is its cycle view
        st.info(left + " No graph is left to count cycles in; the majority tournament below is the cycle "
                "view of such data.")
        model_matrices()
        majority_section(ch, expanded=True)
        st.stop()
    st.caption(left)

metric_row(("Graphs", ov.n_graphs), ("Graphs with a bad triad", f"{ov.share_cyclic:.0%}"),
           ("Bad triads in all", ov.total_bad_triads),
           ("Mean bad 4-cycles per graph", f"{ov.mean_c4_bad:.2f}"))


model_matrices()

st.subheader("Distribution of bad cycles per graph")
d1, d2 = st.columns(2)
for col, name, fit in ((d1, "c3_bad", ov.nb_c3), (d2, "c4_bad", ov.nb_c4)):
    k, n_graphs = integer_histogram(ov.graphs[name])  # one bar per whole number, empty ones included
    fig = histogram_figure(name, k, n_graphs, fit)
    col.plotly_chart(fig, width="stretch")
    if fit is not None:
        col.caption(ov.nb_caption[name])

st.subheader("Graphs by truncation score")
mu = st.select_slider(
    "μ in S_μ = C3ᵇᵃᵈ + μ·C4ᵇᵃᵈ",
    options=[0.01, 0.1, 0.316, 1.0, 3.16, 10.0, 100.0],
    value=1.0,
    key="cycles_mu",
)
# equal scores: prompts in natural order (q2 before q10); variants named by kind, not number
table = graphs_table(graphs_by_score(ov.graphs, mu), listed_prompt_keys_for(ch.key))
graphs_config = {
    "link": st.column_config.LinkColumn(
        "inspect", display_text="open ↗", width=72,
        help="Opens the graph in the Prompt inspector (new tab).",
    ),
    "prompt_id": st.column_config.TextColumn("prompt", width=72),
    "turn": st.column_config.NumberColumn("turn", width=48),
    "variant_label": st.column_config.TextColumn(
        "variant",
        width=90,
        help="The prompt as written (original), a paraphrase, or a sampling replicate of the original.",
    ),
    "s_mu": st.column_config.NumberColumn(
        "S_μ", format="%d" if float(mu).is_integer() else "%.4g", width=64,
        help="C3_bad + μ·C4_bad; highest first."
    ),
    "c3_bad": st.column_config.NumberColumn("bad 3-cycles", help="Non-transitive triads (C3_bad)."),
    "c4_bad": st.column_config.NumberColumn(
        "bad 4-cycles", help="4-cycles not made of ties only (C4_bad)."
    ),
    "c3": st.column_config.NumberColumn("3-cycles", help="All directed 3-cycles, ties included."),
    "c4": st.column_config.NumberColumn("4-cycles", help="All directed 4-cycles, ties included."),
    "c3_tie": st.column_config.NumberColumn(
        "tie 3-cycles", help="3-cycles made of ties only (harmless)."
    ),
    "c4_tie": st.column_config.NumberColumn(
        "tie 4-cycles", help="4-cycles made of ties only (harmless)."
    ),
}
shown = column_picker(list(GRAPHS_ORDER), GRAPHS_MAIN, (), graphs_config, "cycles_columns",
                      "Judge, prompt, variant, turn, category, S_μ, bad 3- and 4-cycles and the link")
st.dataframe(
    table,
    hide_index=True,
    width="stretch",
    height=table_height(len(table), 360),
    column_order=shown,
    column_config=graphs_config,
)
pick_labels = graph_pick_labels(table, mu)  # multi-turn data: an option names its turn
pick = st.selectbox(
    "Open a graph in the inspector", range(len(table)), key="cycles_pick",
    format_func=pick_labels.__getitem__,
)
if st.button("Open in the inspector", key="cycles_open"):
    row = table.iloc[pick]
    st.session_state["insp_prompt"] = str(row["prompt_id"])
    st.session_state["insp_variant"] = int(row["variant"])
    st.session_state["insp_turn"] = int(row["turn"])
    st.session_state["insp_judge"] = str(row["judge"])
    st.session_state.pop("insp_triad", None)
    st.switch_page("app_pages/4_inspector.py")
st.caption(f"{ch.caption()} · S_μ = C3ᵇᵃᵈ + μ·C4ᵇᵃᵈ with μ={mu:g}; highest first")
majority_section(ch)  # the model-level majority tournament over all votes (issue 25)
