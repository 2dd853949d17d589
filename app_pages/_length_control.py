"""The Leaderboard page's length-controlled win rates (AlpacaEval 2's LC win rate against the baseline
chosen in the page's ``lb_baseline`` select box), in a function of its own so that the page calls it in
one line."""

from __future__ import annotations

import streamlit as st

from app_pages._lens import get_store, or_stop, show_table
from engine.views.length_control_view import lc_table
from engine.views.viz import escape_md


@st.cache_data(max_entries=32, show_spinner="Fitting the length-controlled GLMs…")
def lc_result(key, baseline: str):
    """Every model's LC win rate and plain win rate against ``baseline`` (``lc_table``), cached per choice."""
    return lc_table(get_store(), key.dataset, baseline, judge=key.judge, category=key.category)


def length_controlled_win_rates(ch, baseline: str | None, models: list[str]) -> None:
    """AlpacaEval 2's length-controlled win rate: with a baseline chosen (a model of the board) and the
    toggle on, each model's LC win rate and plain win rate against it, in a table of its own."""
    chosen = baseline in models
    on = st.toggle("Length-controlled win rate (AlpacaEval 2)", key="lb_length_control", disabled=not chosen,
                   help="Each model's win rate against the baseline read at equal answer length from a "
                   "logistic fit of its verdicts on tanh of the standardised length difference (AlpacaEval "
                   "2's GLM without its instruction-difficulty and gamed-baseline terms); needs the answer "
                   "texts." if chosen else "Choose a baseline first.")
    if not (on and chosen):
        return
    frame, notes = or_stop(lc_result, ch.key, baseline)
    pct = st.column_config.NumberColumn
    # observed: the baseline box above shows the fit's predicted win rate under a label of its own; a model
    # the GLM could not fit (fewer than 5 verdicts, said in a note) shows "—", not "None"
    show_table(frame, {
        "lc_win_rate_pct": pct(f"LC win rate vs {baseline} (%)", format="%.1f"),
        "win_rate_pct": pct(f"observed win rate vs {baseline} (%)", format="%.1f",
                            help="Mean preference over the verdicts against the baseline, draws half."),
        "n_verdicts": pct("verdicts", format="%d"),
    }, {"lc_win_rate_pct": ".1f", "win_rate_pct": ".1f"}, hide_index=True, width="content")
    st.caption(escape_md(
        f"The observed win rate counts each verdict against {baseline} once, a tie as half; the baseline box "
        "above predicts a win rate from the Bradley-Terry fit of every battle (a strong verdict three times "
        "where verdicts carry a strength), so the two can differ."))
    for note in notes:
        st.caption(escape_md(note))
