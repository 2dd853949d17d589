"""The Cycles page's cached reads for a whole selection without its graphs of fewer than 3 models
(``engine.views.cycles_view``): each pair's wins and ties per graph counted in SQL, and the keys of the
prompts the page lists (what names their variants)."""

from __future__ import annotations

import streamlit as st

from app_pages._lens import get_store
from engine.views.appstate import CacheKey


@st.cache_data(max_entries=16, show_spinner="Counting wins and ties per pair…")
def selection_win_ties_for(key: CacheKey):
    """(every model of a valid verdict, W, T, the number of graphs) of the selection
    (``engine.views.cycles_view.selection_win_ties`` over ``engine.store.pair_outcomes``)."""
    from engine.graphs.stack import DEFAULT_POLICY
    from engine.store.pair_outcomes import pair_outcome_counts
    from engine.views.cycles_view import selection_win_ties

    counts, n_graphs = pair_outcome_counts(get_store(), key.dataset, judge=key.judge, category=key.category)
    models, W, T = selection_win_ties(counts, DEFAULT_POLICY)
    return models, W, T, n_graphs


@st.cache_data(max_entries=16, show_spinner=False)
def listed_prompt_keys_for(key: CacheKey):
    """The graph keys (``engine.graphs.stack.graph_cells``) of every graph of the prompts that hold a graph
    of 3 or more models (``_lbopen_cache.cycle_context_for``): the rows the Cycles page's table lists, and
    their prompts' other variants, which number the variant labels. None when no graph is listed."""
    from app_pages._lbopen_cache import cycle_context_for
    from engine.graphs.stack import GRAPH_COLUMNS, graph_cells

    ctx = cycle_context_for(key)
    if ctx is None:
        return None
    prompts = sorted(set(ctx.stack.keys["prompt_id"].astype(str)))
    verdicts = get_store().verdicts(key.dataset, judge=key.judge, category=key.category,
                                    columns=GRAPH_COLUMNS, prompt_id=prompts)
    return graph_cells(verdicts).keys
