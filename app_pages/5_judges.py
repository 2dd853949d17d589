"""Judges: how far the judges agree (Cohen's κ), how much the answer shown first wins (position
bias), and how non-transitive each judge is (PNT, SNTD, ρ_non-trans, τ), per judge and category."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
import streamlit as st

from app_pages._charts_last import plotly_chart
from app_pages._lens import (
    column_picker,
    current,
    judge_diagnostics,
    metric_row,
    or_stop,
    revision_for,
    show_table,
    table_height,
)
from engine.views.viz import escape_md, plot_labels

# The position table's columns always shown (they fit at 1280 px), in the table's order.
POSITION_MAIN = ("judge", "category", "verdicts", "first_win_rate", "first_win_rate_decisive",
                 "order_consistency", "p_exact_ties_dropped")
POSITION_ORDER = (*POSITION_MAIN, "p_exact_ordinal", "both_orders", "n01_ties_dropped", "n10_ties_dropped",
                  "items_both_orders", "consistent", "first_wins", "second_wins", "ties")

TRANSITIVITY_MAIN = ("judge", "category", "triples", "nontransitive", "pnt", "cycle", "tied_ends",
                     "unchained_ties", "sntd_mean")

st.title("Judges")
st.caption(
    "Every judge of the dataset side by side: the sidebar's judge choice does not apply here, its category "
    "does. Verdicts on one pair in one prompt are first combined per judge (both orders → one outcome; two "
    "disagreeing orders give a tie)."
)


def kappa_section(jd, by_cat: bool) -> None:
    """The κ heatmap (per category on request) and the pairwise agreement table."""
    mat, where = jd.kappa_matrix, "all categories"
    if by_cat and jd.kappa_by_category:
        cats = ["(all)", *jd.kappa_by_category]
        pick = st.selectbox("κ matrix for", cats, key="judges_kappa_cat")
        if pick != "(all)":
            mat, where = jd.kappa_by_category[pick], f"category {pick}"
    left, right = st.columns([1, 1])
    fig = go.Figure(
        go.Heatmap(
            z=mat.to_numpy(),
            x=plot_labels(mat.columns),
            y=plot_labels(mat.index),
            zmin=-1,
            zmax=1,
            colorscale="RdBu",
            text=np.vectorize(lambda v: "" if np.isnan(v) else f"{v:.2f}")(mat.to_numpy()),
            texttemplate="%{text}",
            hovertemplate="%{y} vs %{x}: κ=%{z:.3f}<extra></extra>",
            colorbar={"title": "κ"},
        )
    )
    fig.update_layout(height=380, margin={"l": 10, "r": 10, "t": 30, "b": 10},
                      title={"text": f"κ on shared items, {where}", "font": {"size": 14}})
    fig.update_yaxes(autorange="reversed")
    plotly_chart(fig, left, width="stretch")  # drawn after the tables below: app_pages._charts_last
    right.dataframe(
        jd.agreement,
        hide_index=True,
        width="stretch",
        height=table_height(len(jd.agreement), 380),  # a fixed height drew empty rows below few pairs
        column_config={
            "judge_1": st.column_config.TextColumn("judge", width=110),
            "judge_2": st.column_config.TextColumn("vs judge", width=110),
            "items": st.column_config.NumberColumn("items", width=56,
                                                   help="Pairs in prompts that both judges rated."),
            "agreement": st.column_config.NumberColumn(
                "agreement", format="%.2f", width=72,
                help="Share of shared items with the same combined outcome."
            ),
            "kappa": st.column_config.NumberColumn(
                "κ",
                format="%.2f",
                width=48,
                help="Cohen's κ: agreement beyond chance (1 = always, 0 = chance) on which model won "
                "each item, both presentation orders combined first.",
            ),
        },
    )


ch = current()
by_cat = st.toggle("Per category", key="judges_by_cat",
                   help="Split every table by the prompt category, and pick the category of the κ matrix.")
jd = or_stop(judge_diagnostics, ch.key.dataset, ch.key.version, ch.key.category, by_cat)

# the judges compared: with one judge there is no "least consistent" or "strongest" one to name (it named the
# only judge, whatever its numbers); its own numbers are in the tables below
compared = [
    ("Least consistent judge (PNT)", escape_md(jd.worst_pnt), "Highest share of non-transitive triples."),
    ("Strongest first-position bias", escape_md(jd.worst_position),
     "First-position win rate farthest from ½, among the judges that judged some pair in both orders "
     "(without both orders the rate mixes position with answer quality). — = no such judge."),
] if len(jd.judges) > 1 else []
metric_row(
    ("Judges", len(jd.judges)),
    ("Mean κ over judge pairs", "—" if np.isnan(jd.mean_kappa) else f"{jd.mean_kappa:.2f}",
     "Unweighted mean of Cohen's κ over every pair of judges (all categories)."),
    *compared,
)

st.subheader("Agreement between judges (Cohen's κ)")
if len(jd.judges) < 2:  # κ compares two judges' verdicts on shared items
    only = escape_md(jd.judges[0]) if jd.judges else "no judge"
    st.info(
        f"This dataset has a single judge ({only}): Cohen's κ compares two judges on the items both rated, "
        "so there is no κ matrix. Import another judge's verdicts on the same prompts to compare them."
    )
else:
    kappa_section(jd, by_cat)

st.subheader("Position bias")
st.caption(
    "Order consistency: share of pairs judged in both orders whose two verdicts agree. First-position "
    "win rate: share of verdicts won by the answer shown first (½ = no bias). McNemar's test (paper 003) "
    "asks whether showing a model first changes its outcome; a small p says it does. This table's p is the "
    "exact test on the pairs decisive in both orders (ties dropped); the judge report below shows "
    "mcnemar_p_ordinal, another test of the same question (χ², a tie counted between a loss and a win), "
    "so the two p values of one judge can differ."
)
if jd.position.empty:
    st.info(
        "No verdict of this dataset records which answer was shown first, so position bias cannot be "
        "measured."
    )
else:
    num, prog = st.column_config.NumberColumn, st.column_config.ProgressColumn
    position_config = {
        "judge": st.column_config.TextColumn("judge", pinned=True, width=130),
        "verdicts": num("verdicts", width=64),
        "first_win_rate": prog(
            "first shown wins",
            min_value=0.0,
            max_value=1.0,
            format="%.2f",
            width=110,
            help="Share of all verdicts won by the answer shown first (ties count as not won).",
        ),
        "first_win_rate_decisive": prog(
            "… of decisive",
            min_value=0.0,
            max_value=1.0,
            format="%.2f",
            width=100,
            help="The same share among verdicts with a winner (ties left out).",
        ),
        "order_consistency": prog(
            "order consistency",
            min_value=0.0,
            max_value=1.0,
            format="%.2f",
            width=120,
            help="Pairs judged in both orders whose two verdicts agree.",
        ),
        "p_exact_ties_dropped": num(
            "McNemar p (exact)",
            format="%.2g",
            width=120,
            help="Exact (binomial) McNemar test on the pairs judged in both orders and decisive both times, "
            "ties dropped. Not the judge report's mcnemar_p_ordinal below, an asymptotic χ² test that "
            "counts a tie between a loss and a win: the two can differ for one judge, mostly through the "
            "tie rule (\"McNemar p (exact, ordinal)\" under More columns is the exact test with the report's "
            "tie rule).",
        ),
        "p_exact_ordinal": num(
            "McNemar p (exact, ordinal)",
            format="%.2g",
            help="Exact McNemar test with a tie counted between a loss and a win (the judge report's "
            "mcnemar_p_ordinal is the χ² test of the same counts).",
        ),
        "n01_ties_dropped": num(
            "first shown won both",
            help="Pairs decisive in both orders where the answer "
            "shown first won both times (the winner flipped with the order).",
        ),
        "n10_ties_dropped": num(
            "second shown won both",
            help="Pairs decisive in both orders where the answer shown second won both times.",
        ),
        "both_orders": st.column_config.CheckboxColumn(
            "both orders",
            help="Whether any pair was judged in both orders; without, the first-shown win "
            "rate mixes position with answer quality.",
        ),
        "items_both_orders": num("pairs in both orders"),
        "consistent": num("consistent pairs"),
        "first_wins": num("first wins"),
        "second_wins": num("second wins"),
        "ties": num("ties"),
    }
    position_columns = column_picker(
        [c for c in POSITION_ORDER if c in jd.position.columns], POSITION_MAIN, (), position_config,
        "judges_position_columns", "Judge, category, verdicts, first-shown win rates, order consistency and "
        "McNemar p",
    )
    show_table(
        jd.position,
        hide_index=True,
        width="stretch",
        formats={
            "p_exact_ties_dropped": ".2g",
            "p_exact_ordinal": ".2g",
            "n01_ties_dropped": "d",
            "n10_ties_dropped": "d",
            "items_both_orders": "d",
            "consistent": "d",
        },
        column_order=position_columns,
        column_config=position_config,
    )

st.subheader("Non-transitivity")
st.caption(
    "PNT: share of fully compared model triples whose combined verdicts admit no order (paper 001). "
    "SNTD: mean Jensen-Shannon gap between the judge's probabilities and those implied by transitivity. "
    "ρ_non-trans and τ: ELSPR's share of vertices in non-transitive SCCs and normalized structural "
    "entropy (paper 004)."
)
if jd.n_left_out:
    st.info(
        f"{jd.n_left_out:,} graph{'s' if jd.n_left_out != 1 else ''} of this dataset "
        f"{'have' if jd.n_left_out != 1 else 'has'} fewer than 3 models and "
        f"{'are' if jd.n_left_out != 1 else 'is'} left out of these numbers: no triple or cycle fits in 2 "
        "models."
        + ("" if len(jd.transitivity) else " No graph is left, so the table is empty.")
    )
if not jd.has_prob:
    st.info("SNTD is empty: no verdict of this dataset carries a judge probability (prob_a), which it needs.")
num = st.column_config.NumberColumn
transitivity_config = {
    "judge": st.column_config.TextColumn("judge", pinned=True, width=130),
    "triples": num("triples", width=64, help="Model triples with all three pairs compared, over graphs."),
    "nontransitive": num("non-transitive", width=96, help="Triples whose verdicts admit no order."),
    "pnt": st.column_config.ProgressColumn(
        "PNT",
        min_value=0.0,
        max_value=1.0,
        format="%.3f",
        width=100,
        help="Share of non-transitive triples (paper 001).",
    ),
    "cycle": num("strict cycles", width=90, help="a > b > c > a"),
    "tied_ends": num("tied ends", width=72, help="a > b > c, yet a ~ c"),
    "unchained_ties": num("unchained ties", width=104, help="a ~ b ~ c, yet a > c"),
    "soft_triples": num("triples with prob_a", help="Triples where every pair has a judge probability."),
    "sntd_mean": num(
        "SNTD",
        format="%.3f",
        width=64,
        help="Mean soft non-transitivity deviation (needs prob_a), on the probabilities averaged over "
        "both presentation orders; `diagnose --sntd per-order` gives paper 001's eq. 3 literally.",
    ),
    "rho_nontrans": num(
        "ρ non-trans",
        format="%.3f",
        help="Share of vertices in non-transitive strongly connected components (ELSPR).",
    ),
    "tau_avg": num("τ", format="%.3f", help="Normalized structural entropy, averaged over graphs."),
    "h2_mean": num("H₂", format="%.3f", help="Two-dimensional structural entropy, averaged over graphs."),
}
transitivity_columns = column_picker(
    [c for c in jd.transitivity.columns if c in transitivity_config or c == "category"],
    TRANSITIVITY_MAIN, (), transitivity_config, "judges_transitivity_columns",
    "Judge, category, triples, non-transitive triples, PNT, the three kinds and SNTD",
)
show_table(
    jd.transitivity,
    hide_index=True,
    width="stretch",
    formats={
        "soft_triples": "d",
        "sntd_mean": ".3f",
        "rho_nontrans": ".3f",
        "tau_avg": ".3f",
        "h2_mean": ".3f",
    },
    column_order=transitivity_columns,
    column_config=transitivity_config,
)
revision = revision_for(ch.key.dataset, ch.key.version)  # read once per version: no store open per rerun
st.caption(f"{escape_md(ch.key.dataset)} (version {revision}) · all judges · "
           f"{escape_md(ch.key.category or 'all categories')} · combine policy: plurality")

from app_pages._judge_report import judge_report_section  # noqa: E402 - issue 28, the last section

judge_report_section(ch)
