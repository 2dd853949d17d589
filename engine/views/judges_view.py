"""What the Judges page adds to ``engine.views.viz.judge_overview``: the judge with the strongest
first-position bias, chosen only among judges whose pairs were judged in both orders.

A first-shown win rate far from ½ means position bias only when the same pairs were also shown the
other way round; a judge that always saw A first mixes position with answer quality (the better
answer may simply be the one listed first), so it cannot be the "strongest bias".
"""

from __future__ import annotations

import pandas as pd

RATE = "first_win_rate"

JUDGE_COLUMNS: tuple[str, ...] = (
    "dataset", "judge", "prompt_id", "variant", "turn", "category", "annotator",
    "model_a", "model_b", "winner", "order", "prob_a",
)
"""The verdict columns the Judges page reads (κ, position bias, the SNTD check): a million-verdict
store's battle ids, source names and explanations stay out of the server's memory."""


def worst_position(position: pd.DataFrame) -> str:
    """The judge whose first-shown win rate is farthest from ½ among the rows of a per-judge
    ``position_table`` with ``both_orders``; "—" when no judge judged a pair in both orders."""
    if position.empty or RATE not in position.columns or "both_orders" not in position.columns:
        return "—"
    rows = position[position["both_orders"].astype(bool) & position[RATE].notna()]
    if rows.empty:
        return "—"
    gap = (rows[RATE].astype(float) - 0.5).abs()
    return str(rows["judge"].iloc[int(gap.argmax())])


def with_worst_position(overview, verdicts: pd.DataFrame):
    """``overview`` (a JudgeOverview) with ``worst_position`` taken over the judges that judged both
    orders (``engine.diagnostics.position.position_table`` per judge, whatever the page's split)."""
    import dataclasses

    from engine.diagnostics.position import position_table

    return dataclasses.replace(overview, worst_position=worst_position(position_table(verdicts)))


def judge_overview_of_store(store, dataset: str, category: str | None, stack, by_category: bool, *,
                            n_graphs: int | None = None, counts=None):
    """The Judges page's JudgeOverview of ``dataset`` (of ``category`` when given), its agreement and
    position tables from verdict counts grouped in the store (engine.diagnostics.judge_counts) rather than
    a frame of every verdict; the same numbers as ``with_worst_position(judge_overview(...))`` on the
    verdicts (tests/test_judges_counts.py). A verdict with an unknown presentation order value takes the
    frame path, which names its row.

    ``stack``: the selection's graphs (GraphBuckets), or with ``n_graphs`` given only its graphs of three or
    more models (``Store.verdicts(graphs_of_at_least=3)``; None when it has none) and ``n_graphs`` the
    selection's graph count (``engine.store.graph_tally``): PNT, SNTD and the entropies count triples and
    graphs of 3+ models only, each from its own graph's verdicts, so a battle log's million one-pair graphs
    need not be built to be counted as left out (tests/test_judges_big_graphs.py). ``counts``: the
    selection's ``judge_counts`` when the caller holds them (the page's judge report counts the same)."""
    from engine.diagnostics.judge_counts import (
        agreement_table,
        bad_order,
        judge_counts,
        position_from_counts,
    )
    from engine.views.viz import judge_overview, overview_of_tables

    if stack is None:  # no graph of 3+ models (or none at all): the same empty tables from no graph
        stack = no_graphs()
    if counts is None and bad_order(store, dataset, category):
        verdicts = store.verdicts(dataset, category=category, columns=JUDGE_COLUMNS)
        overview = with_worst_position(judge_overview(verdicts, stack, by_category), verdicts)
        return overview if n_graphs is None else _with_left_out(overview, stack, n_graphs)
    counts = judge_counts(store, dataset, category) if counts is None else counts
    by = ("judge", "category") if by_category else ("judge",)
    overall = agreement_table(counts)
    table = agreement_table(counts, by_category=True) if by_category else overall
    position = position_from_counts(counts, by)
    per_judge = position_from_counts(counts) if by_category else position
    overview = overview_of_tables(counts.judges, overall, table, position, per_judge, counts.has_prob, stack,
                                  by_category)
    import dataclasses

    overview = dataclasses.replace(overview, worst_position=worst_position(per_judge))
    return overview if n_graphs is None else _with_left_out(overview, stack, n_graphs)


def no_graphs():
    """A GraphBuckets of no graph: what ``graphs_of_three_models`` gives a selection without a graph of three
    or more models (``leaderboard_first.cycle_context`` says None), without reading it again."""
    import pandas as pd

    from engine.graphs.buckets import build_buckets
    from engine.graphs.stack import GRAPH_COLUMNS

    return build_buckets(pd.DataFrame({c: pd.Series(dtype=object) for c in GRAPH_COLUMNS}))


def graphs_of_three_models(store, dataset: str, category: str | None):
    """The GraphBuckets of every judge's graphs of ``dataset`` (of ``category``) whose verdicts name three or
    more models (``Store.verdicts(graphs_of_at_least=3)``; empty when there is none): all that PNT, SNTD,
    the entropies and the cycle rates count."""
    from engine.graphs.buckets import build_buckets
    from engine.graphs.stack import GRAPH_COLUMNS

    return build_buckets(store.verdicts(dataset, category=category, columns=GRAPH_COLUMNS,
                                        graphs_of_at_least=3))


def _with_left_out(overview, big, n_graphs: int):
    """``overview`` whose graphs of fewer than 3 models (``n_left_out``) are counted among ``n_graphs``
    graphs, of which ``big`` holds those that name 3+ models (its own graphs of fewer valid models too)."""
    import dataclasses

    from engine.diagnostics import small_graph_count
    from engine.graphs.buckets import as_buckets

    return dataclasses.replace(overview, n_left_out=small_graph_count(as_buckets(big), n_graphs))
