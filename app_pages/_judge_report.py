"""The Judges page's judge report section (issue 28): the table of engine.views.judge_report_view with
its notes and a JSON download. Pages render; the report is computed in the engine and cached here per
dataset version and category."""

from __future__ import annotations

import streamlit as st

from app_pages._lens import get_store, show_table


@st.cache_resource(max_entries=4, show_spinner="Counting the verdicts…")
def judge_counts_for(dataset: str, version: int, category: str | None):
    """(``engine.diagnostics.judge_counts.judge_counts``, graph count) of every judge's verdicts of the
    dataset (of ``category``): what the page's tables and its judge report both count, grouped once
    (``version`` keys the cache; read-only, so a resource: no copy per read). None when a verdict's
    presentation order is not AB, BA or none: both take their frame path then, which names its row."""
    from engine.diagnostics.judge_counts import bad_order, judge_counts
    from engine.store.graph_tally import graph_count

    store = get_store()
    if bad_order(store, dataset, category):
        return None
    return judge_counts(store, dataset, category), graph_count(store, dataset, category=category)


@st.cache_data(max_entries=8, show_spinner=False)
def _report(dataset: str, version: int, category: str | None):
    from app_pages._lbopen_cache import cycle_context_for
    from engine.views.appstate import CacheKey
    from engine.views.judge_report_view import judge_report_of_store
    from engine.views.judges_view import no_graphs

    # the graphs of 3+ models the page's transitivity table (and the Leaderboard) already read: the report's
    # cycle columns count no other graph; the verdict counts are the page's tables' own
    ctx = cycle_context_for(CacheKey(dataset, version, None, category))
    big = no_graphs() if ctx is None else ctx.stack
    counted = judge_counts_for(dataset, version, category)
    if counted is None:
        return judge_report_of_store(get_store(), dataset, category, big_graphs=big)
    return judge_report_of_store(get_store(), dataset, category, big_graphs=big, counts=counted[0],
                                 n_graphs=counted[1])


def judge_report_section(ch) -> None:
    """Render the report for the sidebar's dataset and category (every judge, as the rest of the page)."""
    from engine.views.judge_report_view import COLUMN_GROUPS, COLUMN_HELP

    st.subheader("Judge report")
    view = _report(ch.key.dataset, ch.key.version, ch.key.category)
    ref = view.table["reference"].dropna()
    st.caption("Each judge against " + (f"the reference judge **{ref.iloc[0]}**" if not ref.empty
                                        else "no reference (the dataset has no human judge)")
               + ": agreement and κ (by model and as shown), position and length bias, self-preference, "
                 "PNT and cycle rate.")
    config = {c: st.column_config.NumberColumn(help=h, format="%.2g") if "_p_" in f"{c}_"
              else st.column_config.Column(help=h) for c, h in COLUMN_HELP.items()}
    counts = [c for c in view.table.columns if str(view.table[c].dtype).startswith(("Int", "int"))]
    rates = [c for c in view.table.columns if c not in ("judge", "reference", "family", *counts)]
    # p-values as the page's position table writes them (two significant digits: 1.2e-12, not 0.000)
    formats = {**{c: ".2g" if "_p_" in f"{c}_" else ".3f" for c in rates}, **{c: "d" for c in counts}}
    table = view.table.drop(columns=["reference"])
    placed = {c for cols in COLUMN_GROUPS.values() for c in cols}
    groups = list(COLUMN_GROUPS.items())
    rest = [c for c in table.columns if c != "judge" and c not in placed]
    if rest:
        groups[-1] = (groups[-1][0], groups[-1][1] + rest)
    for title, cols in groups:
        cols = [c for c in cols if c in table.columns]
        st.markdown(f"**{title}**")
        show_table(table[["judge", *cols]], {c: config[c] for c in cols if c in config},
                   {c: f for c, f in formats.items() if c in cols}, hide_index=True, width="stretch")
    for note in view.notes:
        st.caption(note)
    st.download_button("Judge report (JSON)", view.report_json(), file_name="judge_report.json",
                       mime="application/json", key="judge_report_json")
