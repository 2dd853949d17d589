"""The Judges page's agreement and position tables from verdict counts grouped in DuckDB.

The frame path (``agreement.agreement``, ``position.position_table``) turns every verdict into a pandas
row with string columns, several times over: 25 s of CPU on a million-verdict store. Both tables only
need counts: per (judge, item, which of the pair was shown first) how many verdicts lo won, hi won or
tied (an item is a pair of models in one prompt, variant and turn, ``lo`` first by name), and per
(judge, category) how many verdicts the first-shown answer won, lost or tied. DuckDB groups the
verdicts into those counts; the same second halves as the frame path (``agreement_of_items``,
``position_of``) make the tables, so the numbers are the frame path's. Judges and categories travel
as integer codes in name order (a missing category last, as pandas sorts it) and get their names back
in the small result tables.

The category of an item is that of its first verdict by ``verdict_id`` (the frame path's
``drop_duplicates`` on a frame read in that order).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from engine.graphs.stack import combine_counts


@dataclass(frozen=True)
class JudgeCounts:
    """Verdict counts of one dataset (optionally one category) for the Judges page's tables.

    ``judges``: every judge with a verdict (invalid ones included), sorted; ``names``: judges with a
    valid verdict, code -> name; ``categories``: code -> name (None for a missing category);
    ``cells``: one row per (judge, item, lo_first) with ``lo_win``, ``hi_win``, ``tie``, the first
    verdict's ``vid``, ``category`` (its code) and ``cat_known`` (the category code of the first
    verdict with a known order); ``firsts``: per (judge, category) code, the verdicts with a known
    order and how many the first-shown answer won, lost or tied; ``has_prob``: any prob_a."""

    judges: tuple[str, ...]
    names: np.ndarray
    categories: np.ndarray
    cells: pd.DataFrame
    firsts: pd.DataFrame
    has_prob: bool


def verdict_source(store, dataset: str, category: str | None):
    """The dataset's verdicts with a ``verdict_id`` in the order ``Store.verdicts`` reads them."""
    from engine.store.attached import attached_relation
    from engine.store.pair_counts import refuse_pair_counts
    from engine.store.sql import Relation, in_values

    refuse_pair_counts(store, dataset)
    attached = attached_relation(store, dataset)
    if attached is not None:
        rel = Relation(f"(SELECT row_number() OVER () AS verdict_id, * FROM {attached})", attached.values)
    else:
        rel = Relation("verdicts").filtered([in_values("dataset", [dataset])])
    return rel.filtered([in_values("category", [category])] if category is not None else [])


def bad_order(store, dataset: str, category: str | None) -> bool:
    """Whether a valid verdict has a presentation order other than AB, BA or none (an attached file
    can hold one): the frame path then names its row in one sentence, so the caller uses that path."""
    from engine.store.sql import params

    rel = verdict_source(store, dataset, category)
    row = store.cursor().execute(
        f"""SELECT count(*) FROM {rel} WHERE winner IS DISTINCT FROM 'invalid' AND "order" IS NOT NULL
            AND "order" NOT IN ('AB', 'BA')""", params(rel)).fetchone()
    return bool(row[0])


def judge_counts(store, dataset: str, category: str | None = None) -> JudgeCounts:
    """Group ``dataset``'s verdicts (of ``category`` when given) into the counts of ``JudgeCounts``."""
    from engine.store.sql import params

    rel = verdict_source(store, dataset, category)
    con = store.cursor()
    head = con.execute(
        f"SELECT list(DISTINCT judge ORDER BY judge), bool_or(prob_a IS NOT NULL) FROM {rel} "
        "WHERE judge IS NOT NULL", params(rel)).fetchone()
    judges = tuple(head[0] or ())
    names = con.execute(
        f"SELECT DISTINCT judge FROM {rel} WHERE winner IS DISTINCT FROM 'invalid' AND judge IS NOT NULL "
        "ORDER BY judge", params(rel)).fetchnumpy()["judge"]
    cats = con.execute(
        f"SELECT DISTINCT category FROM {rel} WHERE winner IS DISTINCT FROM 'invalid' "
        "ORDER BY category NULLS LAST", params(rel)).fetchall()
    categories = np.array([c[0] for c in cats], dtype=object)
    # judge and category codes by joins to their small sorted lists (a window over every verdict costs
    # a sort of them all); lo/hi by the byte order of UTF-8, which is Python's order of code points;
    # lo_first: 1 when lo was shown first (AB with model_a = lo, or BA with model_b = lo), 0 when
    # second, NULL when unknown
    valid_rows = f"(SELECT * FROM {rel} WHERE winner IS DISTINCT FROM 'invalid' AND judge IS NOT NULL)"
    valid = f"""
        WITH js AS (SELECT judge, row_number() OVER (ORDER BY judge) - 1 AS j
                    FROM (SELECT DISTINCT judge FROM {valid_rows})),
             cs AS (SELECT category, row_number() OVER (ORDER BY category NULLS LAST) - 1 AS c
                    FROM (SELECT DISTINCT category FROM {valid_rows}))
        SELECT r.verdict_id AS vid, js.j, r.prompt_id, r.variant, r.turn, cs.c,
               least(r.model_a, r.model_b) AS lo, greatest(r.model_a, r.model_b) AS hi,
               CASE WHEN r.winner = 'A' THEN 1 WHEN r.winner = 'B' THEN -1 ELSE 0 END
                 * CASE WHEN r.model_a > r.model_b THEN -1 ELSE 1 END AS outcome,
               CASE WHEN r."order" IS NULL THEN NULL
                    WHEN (r."order" = 'AB') = (r.model_a <= r.model_b) THEN 1 ELSE 0 END AS lo_first
        FROM {valid_rows} r JOIN js ON r.judge = js.judge
                            JOIN cs ON r.category IS NOT DISTINCT FROM cs.category"""
    cells = con.execute(f"""
        WITH v AS ({valid}),
        g AS (SELECT j, prompt_id, variant, turn, lo, hi, lo_first,
                     count(*) FILTER (WHERE outcome > 0) AS lo_win,
                     count(*) FILTER (WHERE outcome < 0) AS hi_win,
                     count(*) FILTER (WHERE outcome = 0) AS tie,
                     min(vid) AS vid, arg_min(c, vid) AS category
              FROM v GROUP BY j, prompt_id, variant, turn, lo, hi, lo_first)
        SELECT j::BIGINT AS judge, (dense_rank() OVER (ORDER BY prompt_id, variant, turn, lo, hi))::BIGINT
                 AS item, lo_first::DOUBLE AS lo_first, lo_win, hi_win, tie, vid, category::BIGINT AS category
        FROM g""", params(rel)).df()
    firsts = con.execute(f"""
        WITH v AS ({valid})
        SELECT j::BIGINT AS judge, c::BIGINT AS category, count(*) AS verdicts,
               count(*) FILTER (WHERE (lo_first = 1 AND outcome > 0) OR (lo_first = 0 AND outcome < 0))
                 AS first_wins,
               count(*) FILTER (WHERE (lo_first = 1 AND outcome < 0) OR (lo_first = 0 AND outcome > 0))
                 AS second_wins,
               count(*) FILTER (WHERE outcome = 0) AS ties
        FROM v WHERE lo_first IS NOT NULL GROUP BY j, c ORDER BY j, c""", params(rel)).df()
    return JudgeCounts(judges, np.asarray(names, dtype=object), categories, cells, firsts, bool(head[1]))


def _first_of(frame: pd.DataFrame) -> pd.DataFrame:
    """Per (judge, item) the row with the smallest ``vid`` (the item's first verdict), by one sort."""
    judge, item, vid = (frame[c].to_numpy(np.int64) for c in ("judge", "item", "vid"))
    order = np.lexsort((vid, item, judge))
    head = np.ones(len(order), dtype=bool)
    head[1:] = (judge[order][1:] != judge[order][:-1]) | (item[order][1:] != item[order][:-1])
    return frame.iloc[order[head]]


def _named(frame: pd.DataFrame, cols: dict[str, np.ndarray]) -> pd.DataFrame:
    """``frame`` with each code column of ``cols`` replaced by its names (pandas strings; NA missing)."""
    out = frame.copy()
    for col, names in cols.items():
        if col in out.columns:
            out[col] = pd.array(names[out[col].to_numpy(np.int64)], dtype="string")
    return out


def item_table(counts: JudgeCounts, policy: str = "plurality") -> pd.DataFrame:
    """``item_outcomes`` by codes: one row per (judge, item) with its combined ``outcome`` over every
    valid verdict, ``n`` and the category code of the item's first verdict."""
    cells = counts.cells
    sums = cells.groupby(["judge", "item"], sort=True)[["lo_win", "hi_win", "tie"]].sum()
    out = sums.reset_index()[["judge", "item"]]
    out["outcome"] = combine_counts(sums["lo_win"].to_numpy(), sums["hi_win"].to_numpy(),
                                    sums["tie"].to_numpy(), policy)
    first = _first_of(cells)[["judge", "item", "category"]]
    return out.merge(first, on=["judge", "item"], how="left")


def pair_table(counts: JudgeCounts, policy: str = "plurality") -> pd.DataFrame:
    """``paired_orders`` by codes: items judged in both orders with ``out_lo_first``, ``out_hi_first``
    and the category code of the item's first verdict with a known order."""
    cells = counts.cells[counts.cells["lo_first"].notna()]
    cols = ["judge", "item", "category", "out_lo_first", "out_hi_first"]
    if cells.empty:
        return pd.DataFrame(columns=cols)
    outcome = combine_counts(cells["lo_win"].to_numpy(), cells["hi_win"].to_numpy(), cells["tie"].to_numpy(),
                             policy)
    cells = cells.assign(outcome=outcome)
    first = cells[cells["lo_first"] == 1.0][["judge", "item", "outcome"]].rename(
        columns={"outcome": "out_lo_first"})
    second = cells[cells["lo_first"] == 0.0][["judge", "item", "outcome"]].rename(
        columns={"outcome": "out_hi_first"})
    both = first.merge(second, on=["judge", "item"], how="inner")
    cat = _first_of(cells)[["judge", "item", "category"]]
    return both.merge(cat, on=["judge", "item"], how="left")[cols]


def agreement_table(counts: JudgeCounts, by_category: bool = False,
                    policy: str = "plurality") -> pd.DataFrame:
    """``agreement.agreement`` of the counted verdicts (every pair of judges)."""
    from engine.diagnostics.agreement import agreement_of_items

    if len(counts.names) > 1:
        items = item_table(counts, policy)
    else:  # no pair of judges: the table is empty whatever the items, so none is built
        items = pd.DataFrame({"judge": np.arange(len(counts.names)), "item": 0, "outcome": 0, "category": 0})
    table = agreement_of_items(items, ("item",), by_category=by_category)
    table["judge_1"] = counts.names[table["judge_1"].to_numpy(np.int64)].astype(object)
    table["judge_2"] = counts.names[table["judge_2"].to_numpy(np.int64)].astype(object)
    if by_category and len(table):
        table["category"] = [counts.categories[int(c)] if c is not None and not pd.isna(c) else c
                             for c in table["category"]]
    return table


def position_from_counts(counts: JudgeCounts, by: tuple[str, ...] = ("judge",),
                         policy: str = "plurality") -> pd.DataFrame:
    """``position.position_table`` of the counted verdicts, per ``by`` (judge, optionally category)."""
    from engine.diagnostics.position import position_of, rates_of_counts

    firsts = counts.firsts
    if firsts.empty:  # no verdict with a known order: first_position_rate's empty table
        fr = pd.DataFrame(columns=[*by, "verdicts", "first_wins", "second_wins", "ties", "first_win_rate",
                                   "first_win_rate_decisive"])
    else:
        fr = rates_of_counts(firsts.groupby(list(by), sort=True)[["verdicts", "first_wins", "second_wins",
                                                                   "ties"]].sum().reset_index(), by)
    pairs = pair_table(counts, policy)
    names = {"judge": counts.names, "category": counts.categories}
    return position_of(_named(fr, names), _named(pairs, names), by)
