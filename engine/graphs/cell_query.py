"""A dataset's graph cells read by DuckDB: the same ``GraphCells`` as ``engine.graphs.stack.graph_cells``
on ``Store.verdicts(...)``, without a verdict frame.

At a million verdicts the frame path spent most of its time turning strings into pandas columns
(judge, prompt, models, labels) and grouping them again in pandas. Here DuckDB groups the verdicts by
graph key (with each key's valid / invalid counts and its majority category and variant kind) and hands
back, per valid verdict in verdict order, only integers: the graph's position, the two models'
positions in the sorted model list, the winner's code and P(A wins). ``stack.combine_cells`` then
combines them exactly as the frame path does (the same function, the same row order, so the same
sums). Only the key table (one row per graph) is built as a frame.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from engine.graphs.stack import (
    DEFAULT_POLICY,
    GRAPH_COLUMNS,
    KEY_COLUMNS,
    WINNER_A,
    WINNER_B,
    WINNER_OTHER,
    WINNER_TIE,
    GraphCells,
    combine_cells,
    graph_cells,
)
from engine.store.attached import attached_relation, verdicts_relation
from engine.store.connection import Store
from engine.store.pair_counts import refuse_pair_counts
from engine.store.schema import GRAPH_KEY, VERDICT_DTYPES
from engine.store.sql import Relation, in_values, params

_KEY = ", ".join(f'"{c}"' for c in GRAPH_KEY)


def _source(store: Store, dataset: str, judge: str | None, category: str | None) -> Relation:
    """The verdicts ``Store.verdicts`` reads for these filters, with its ``verdict_id`` (the row order)."""
    rel = verdicts_relation(store, dataset)
    if attached_relation(store, dataset) is not None:  # numbered as Store.verdicts numbers them
        rel = Relation(f"(SELECT row_number() OVER () AS verdict_id, * FROM {rel})", rel.values)
    conditions = [in_values(col, [val]) for col, val in (("judge", judge), ("category", category))
                  if val is not None]
    return rel.filtered(conditions)


def _majority_sql(column: str) -> str:
    """Per graph key: the most frequent non-missing ``column`` value, equal counts to the first by name."""
    return (f"(SELECT {_KEY}, first(\"{column}\" ORDER BY c DESC, \"{column}\") AS \"{column}\" FROM "
            f"(SELECT {_KEY}, \"{column}\", count(*) AS c FROM v WHERE \"{column}\" IS NOT NULL "
            f"GROUP BY ALL) GROUP BY ALL)")


def graph_cells_from_store(store: Store, dataset: str, *, judge: str | None = None,
                           category: str | None = None, policy: str = DEFAULT_POLICY) -> GraphCells:
    """``graph_cells(store.verdicts(dataset, judge=judge, category=category), policy=policy)``,
    computed by DuckDB (see the module docstring)."""
    refuse_pair_counts(store, dataset)
    src = _source(store, dataset, judge, category)
    con = store.cursor()
    valid = "winner <> 'invalid'"
    with_v = f"WITH v AS (SELECT * FROM {src}) "
    names = [r[0] for r in con.execute(
        with_v + f"SELECT name FROM (SELECT model_a AS name FROM v WHERE {valid} UNION "
        f"SELECT model_b FROM v WHERE {valid}) ORDER BY name", params(src)).fetchall()]
    if not names or names != sorted(names):  # none (the frame path's empty cases) or another string order
        verdicts = store.verdicts(dataset, judge=judge, category=category, columns=GRAPH_COLUMNS)
        return graph_cells(verdicts, policy=policy)
    kinds = ("category", "variant_kind")
    keys_sql = (
        with_v + f"SELECT {_KEY}, c.category, k.variant_kind, "
        f"count(*) FILTER (WHERE {valid}) AS n_verdicts, count(*) FILTER (WHERE NOT ({valid})) AS n_invalid "
        f"FROM v LEFT JOIN {_majority_sql('category')} c USING ({_KEY}) "
        f"LEFT JOIN {_majority_sql('variant_kind')} k USING ({_KEY}) "
        f"GROUP BY {_KEY}, c.category, k.variant_kind ORDER BY {_KEY}"
    )
    all_keys = con.execute(keys_sql, params(src)).df()
    dtypes = {c: VERDICT_DTYPES[c] for c in GRAPH_KEY}
    all_keys = all_keys.astype({**dtypes, "n_verdicts": "int64", "n_invalid": "int64"})
    for col in kinds:  # as stack._majority leaves them: object, None where a key has no value
        values = all_keys[col].to_numpy(dtype=object)
        labels = np.full(len(values), None, dtype=object)
        has = ~pd.isna(values)
        labels[has] = values[has]
        all_keys[col] = pd.Series(labels, dtype=object)
    is_graph = all_keys["n_verdicts"].to_numpy() > 0
    invalid_only = all_keys.loc[~is_graph, [*KEY_COLUMNS, "n_invalid"]].reset_index(drop=True)
    keys = all_keys.loc[is_graph, [*KEY_COLUMNS, "n_verdicts", "n_invalid"]].reset_index(drop=True)
    rows = con.execute(
        with_v + f", g AS (SELECT {_KEY}, row_number() OVER (ORDER BY {_KEY}) - 1 AS t FROM "
        f"(SELECT DISTINCT {_KEY} FROM v WHERE {valid})), "
        "m AS (SELECT name, row_number() OVER (ORDER BY name) - 1 AS code FROM "
        f"(SELECT model_a AS name FROM v WHERE {valid} UNION SELECT model_b FROM v WHERE {valid})) "
        f"SELECT g.t, ma.code AS ia, mb.code AS ib, CASE v.winner WHEN 'A' THEN {WINNER_A} WHEN 'B' THEN "
        f"{WINNER_B} WHEN 'tie' THEN {WINNER_TIE} ELSE {WINNER_OTHER} END AS w, "
        "coalesce(v.prob_a, 'NaN'::DOUBLE) AS p "
        f"FROM v JOIN g USING ({_KEY}) JOIN m ma ON ma.name = v.model_a JOIN m mb ON mb.name = v.model_b "
        f"WHERE {valid} ORDER BY v.verdict_id", params(src)).fetchnumpy()
    return combine_cells(tuple(names), keys, invalid_only, policy, np.asarray(rows["t"], dtype=np.int64),
                         np.asarray(rows["ia"], dtype=np.int64), np.asarray(rows["ib"], dtype=np.int64),
                         np.asarray(rows["w"], dtype=np.int8), np.asarray(rows["p"], dtype=np.float64))


__all__ = ["graph_cells_from_store"]
