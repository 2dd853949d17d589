"""How many graphs a selection holds and how many of them are sampling replicates, counted in SQL: what a
page that only reports graph counts needs, without building a million graphs.

A graph is one ``schema.GRAPH_KEY`` holding at least one valid verdict (a key whose verdicts are all
invalid is no graph: ``engine.graphs.stack``). Its kind is the most frequent non-missing ``variant_kind``
among the key's verdicts, valid and invalid, equal counts going to the first by name (the rule of
``engine.graphs.stack``'s keys): a graph is a sampling replicate when that kind is ``sample``, so "sample"
must be counted more often than every kind that sorts before it and at least as often as every kind after.
DuckDB compares text by its bytes, which for UTF-8 is the code-point order pandas sorts names by.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from engine.store.connection import Store


@dataclass(frozen=True)
class GraphTally:
    """``graphs``: graphs of the selection; ``samples``: those whose kind is ``sample``."""

    graphs: int
    samples: int


def graph_tally(store: Store, dataset: str, *, judge: str | None = None,
                category: str | None = None) -> GraphTally:
    """The GraphTally of ``dataset``'s verdicts under the pages' judge and category filters."""
    from engine.store.schema import GRAPH_KEY
    from engine.store.sql import params

    rel = store.verdict_relation(dataset, judge=judge, category=category)
    key = ", ".join(f'"{c}"' for c in GRAPH_KEY)
    per_kind = (f"SELECT {key}, variant_kind, count(*) AS n, "
                "count(*) FILTER (WHERE winner <> 'invalid') AS nv "
                f"FROM {rel} GROUP BY {key}, variant_kind")
    per_graph = (
        f"SELECT sum(nv) AS n_valid, "
        "coalesce(max(n) FILTER (WHERE variant_kind = 'sample'), 0) AS s, "
        "coalesce(max(n) FILTER (WHERE variant_kind < 'sample'), 0) AS before_s, "
        "coalesce(max(n) FILTER (WHERE variant_kind > 'sample'), 0) AS after_s "
        f"FROM ({per_kind}) GROUP BY {key}"
    )
    row = store.cursor().execute(
        "SELECT count(*) FILTER (WHERE n_valid > 0), "
        "count(*) FILTER (WHERE n_valid > 0 AND s > 0 AND s > before_s AND s >= after_s) "
        f"FROM ({per_graph})",
        params(rel),
    ).fetchone()
    return GraphTally(int(row[0] or 0), int(row[1] or 0)) if row else GraphTally(0, 0)


def graph_count(store: Store, dataset: str, *, judge: str | None = None, category: str | None = None) -> int:
    """``graph_tally(...).graphs`` alone: the selection's graph keys holding a valid verdict, one DISTINCT
    (a third of the tally's CPU at 1M verdicts; a page that reports no replicates needs no kinds)."""
    from engine.store.schema import GRAPH_KEY
    from engine.store.sql import params

    rel = store.verdict_relation(dataset, judge=judge, category=category)
    key = ", ".join(f'"{c}"' for c in GRAPH_KEY)
    row = store.cursor().execute(
        f"SELECT count(*) FROM (SELECT DISTINCT {key} FROM {rel} WHERE winner <> 'invalid')", params(rel)
    ).fetchone()
    return int(row[0]) if row else 0
