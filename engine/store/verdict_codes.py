"""A selection of verdicts read as numbers: what a pool of every verdict (active judging's replay) needs
from a million rows without making a million Python strings.

``coded_verdicts`` returns, in verdict order, each verdict's model, judge and winner as indices into
sorted name lists, its prompt instance (prompt_id, variant, turn; variant 0 and turn 1 where NULL) as
a dense number in sorted order, its presentation order (0 AB, 1 BA, -1 none), prob_a, and the instance
columns as Arrow text (for the few rows a caller turns into a table). Sorted means UTF-8 byte order,
DuckDB's order for text, which is Python's code-point order, so the numbers equal ``pandas.factorize(...,
sort=True)`` and ``groupby(sort=True).ngroup()`` on the same rows (tests/test_replay_pool_sql.py).
``distinct_text`` and ``null_keys`` are the small reads a caller checks a selection with first.
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.store.sql import Relation, identifier, params

_CODED_SQL = """
WITH m AS (SELECT unnest($__models) AS name, unnest(range(len($__models))) AS i),
j AS (SELECT unnest($__judges) AS name, unnest(range(len($__judges))) AS i),
w AS (SELECT unnest($__winners) AS name, unnest(range(len($__winners))) AS i)
SELECT v.verdict_id,
       (dense_rank() OVER (ORDER BY v.prompt_id, coalesce(v.variant, 0), coalesce(v.turn, 1)) - 1)::INTEGER
           AS prompt,
       ma.i::INTEGER AS a, mb.i::INTEGER AS b, j.i::INTEGER AS judge,
       CASE v."order" WHEN 'AB' THEN 0 WHEN 'BA' THEN 1 ELSE -1 END::TINYINT AS "order",
       w.i::INTEGER AS winner, v.prob_a::DOUBLE AS prob_a,
       v.prompt_id, v.variant, v.turn, v.variant_kind, v.category
FROM {rel} v
JOIN m ma ON ma.name = v.model_a JOIN m mb ON mb.name = v.model_b
JOIN j ON j.name = v.judge JOIN w ON w.name = v.winner
ORDER BY v.verdict_id
"""


@dataclass(frozen=True)
class CodedVerdicts:
    """The verdicts of a selection as numbers (module docstring): ``rows`` is a pyarrow Table with
    verdict_id, prompt, a, b, judge, order, winner, prob_a and the instance columns (prompt_id, variant,
    turn, variant_kind, category); a, b, judge and winner index ``models``, ``judges`` and ``winners``."""

    models: tuple[str, ...]
    judges: tuple[str, ...]
    winners: tuple[str, ...]
    rows: object  # pyarrow.Table (pyarrow is imported by DuckDB's Arrow output only)


def distinct_text(con, rel: Relation, column: str) -> list[str]:
    """The distinct non-NULL values of a text column of ``rel``, sorted as Python sorts them."""
    col = identifier(column)
    rows = con.execute(f"SELECT DISTINCT {col} FROM {rel} WHERE {col} IS NOT NULL", params(rel)).fetchall()
    return sorted(str(r[0]) for r in rows)


def null_keys(con, rel: Relation) -> tuple[int, int]:
    """(verdicts with a NULL judge, prompt_id, model or winner; verdicts between two different models)."""
    got = con.execute(
        "SELECT count(*) FILTER (WHERE judge IS NULL OR prompt_id IS NULL OR model_a IS NULL OR model_b "
        f"IS NULL OR winner IS NULL), count(*) FILTER (WHERE model_a <> model_b) FROM {rel}", params(rel)
    ).fetchone()
    return int(got[0]), int(got[1])


def coded_verdicts(con, rel: Relation) -> CodedVerdicts:
    """The verdicts of ``rel`` (no NULL key: ``null_keys``) as numbers, in verdict order (module
    docstring)."""
    models = tuple(sorted(set(distinct_text(con, rel, "model_a")) | set(distinct_text(con, rel, "model_b"))))
    judges, winners = tuple(distinct_text(con, rel, "judge")), tuple(distinct_text(con, rel, "winner"))
    values = {**(params(rel) or {}), "__models": list(models), "__judges": list(judges),
              "__winners": list(winners)}
    rows = con.sql(_CODED_SQL.format(rel=rel), params=values).to_arrow_table()
    return CodedVerdicts(models, judges, winners, rows)
