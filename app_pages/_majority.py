"""The Cycles page's majority-tournament section (issue 25, point 7): is the aggregate itself transitive?
The model-level majority over all votes of the selection (or the battles of a pair-count dataset), its
Condorcet cycles, per model and the best supported ones: folded at the foot of the page, and on a
pair-count dataset the whole page (the per-graph sections need prompts: one sentence, then the page stops)."""

from __future__ import annotations

import streamlit as st

from app_pages._lens import get_store, opened_expander, or_stop
from engine.views.viz import escape_md


@st.cache_data(max_entries=16, show_spinner="Building the majority tournament…")
def majority_for(key):
    """(sentences, per-model table, 3-cycles) of the current choice's majority tournament."""
    from engine.views.pair_count_view import majority_view

    return majority_view(get_store(), key.dataset, judge=key.judge, category=key.category)


MAJORITY_LABEL = "Majority tournament: is the aggregate itself transitive?"


def majority_section(ch, *, expanded: bool = False) -> None:
    """The section in an expander: open where it is the page's only cycle view (a pair-count dataset, a battle
    log of one pair per prompt), else folded at the foot of a verdict dataset's Cycles page and drawn (its
    tournament counted, its two tables sent) only once the reader opens it (``opened_expander``)."""
    if expanded:
        _majority_body(ch, st.expander(MAJORITY_LABEL, expanded=True))
        return
    box = opened_expander(MAJORITY_LABEL, "majority_open")
    if box is not None:
        _majority_body(ch, box)


def _majority_body(ch, box) -> None:
    with box:
        sentences, per_model, cycles = or_stop(majority_for, ch.key)
        st.caption("Model i beats j by majority when its wins plus half its ties against j outnumber j's "
                   "against i, over every vote of the selection (paper 000, eq. 5, on the pooled counts). "
                   "A Condorcet cycle is a triple whose majorities go round.")
        for sentence in sentences:
            st.markdown(escape_md(sentence))
        st.dataframe(per_model, hide_index=True, width="stretch", height=min(38 + 35 * len(per_model), 420),
                     column_config={  # fixed widths: a long model name in the first rows must not
                         # widen the table past the page (a browser test at 1280 px checks)
                         "model": st.column_config.TextColumn("model", width=200),
                         "majority_wins": st.column_config.NumberColumn(
                             "majority wins", width=85, help="opponents this model beats by majority"),
                         "majority_losses": st.column_config.NumberColumn(
                             "majority losses", width=85, help="opponents that beat this model by majority"),
                         "majority_ties": st.column_config.NumberColumn(
                             "majority ties", width=85, help="opponents with an exact majority tie"),
                         "opponents": st.column_config.NumberColumn("opponents", width=85),
                         "condorcet_cycles": st.column_config.NumberColumn(
                             "Condorcet 3-cycles", width=85, help="cyclic triples through this model"),
                         "top_cycle": st.column_config.CheckboxColumn(
                             "top cycle", width=75,
                             help="in a strict-majority component no outside model beats")})
        if len(cycles):
            st.markdown("**Best supported Condorcet 3-cycles** (a beats b beats c beats a; share = the "
                        "winner's share of the pair's votes, ties half)")
            shares = {c: st.column_config.NumberColumn(c.replace("share_", ""), format="%.3f", width=60)
                      for c in ("share_ab", "share_bc", "share_ca")}
            names = {c: st.column_config.TextColumn(c, width=170) for c in ("a", "b", "c")}
            fewest = st.column_config.NumberColumn(
                "min votes", width=80, help="the fewest votes (battles) on any of its three pairs")
            st.dataframe(cycles, hide_index=True, width="stretch",
                         column_config={**names, **shares, "fewest_battles": fewest})


def pair_count_cycles(ch) -> None:
    """On a pair-count dataset the section is the whole page: shown open, then the one sentence every
    per-prompt analysis gives, and the page stops. Nothing on a verdict dataset."""
    from engine.store.pair_counts import is_pair_count_dataset, no_prompts

    if not is_pair_count_dataset(get_store(), ch.key.dataset):
        return
    majority_section(ch, expanded=True)
    st.info(escape_md(no_prompts(ch.key.dataset, "the per-graph cycle analysis")))
    st.stop()
