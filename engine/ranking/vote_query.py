"""Read the verdicts a count ranker needs straight from DuckDB as small integer columns (``VoteRows``).

The source is a stored dataset (the ``verdicts`` table), Parquet files attached in place
(``engine.store.attached``) or an in-memory verdict frame; the same SQL runs on each. One scan returns,
per valid verdict, two model codes, the winner and presentation-order codes and 64-bit hashes of
the graph key, the prompt id and (annotator, battle id): a few bytes per verdict, no strings in
Python. The optional ``battle_id`` and ``tstamp`` columns (migration 030) are used when present.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

import duckdb
import numpy as np

from engine.errors import LensError
from engine.frames import pd
from engine.rankers.votes import VoteRows
from engine.store.schema import STYLE_COLUMNS
from engine.store.sql import Relation, in_values, params, scratch
from engine.store.style_cache import ANSWER_KEY

if TYPE_CHECKING:
    from engine.store.connection import Store
    from engine.style.features import AnswerCounts, StyleCoverage


GRAPH_HASH = "hash(judge::VARCHAR, prompt_id::VARCHAR, variant::BIGINT, turn::BIGINT)"
"""The 64-bit graph key of a verdict row (the dataset is fixed within one query)."""


def columns_of(con: duckdb.DuckDBPyConnection, relation: str | Relation) -> set[str]:
    """The column names of a relation (a table, a subquery or a read_parquet call)."""
    return {str(r[0]) for r in con.execute(f"DESCRIBE SELECT * FROM {relation}", params(relation)).fetchall()}


def read_vote_rows(
    con: duckdb.DuckDBPyConnection,
    relation: str | Relation,
    *,
    judge=None,
    category=None,
    order_by: str | None = None,
    need_prob: bool = True,
    need_strength: bool = False,
    style: bool = False,
    texts: AnswerCounts | None = None,
) -> VoteRows:
    """One ``VoteRows`` entry per valid verdict of ``relation`` under the judge / category filters.

    ``order_by`` ("input" or "time") orders the rows by source position (or time, then source
    position); None keeps the scan order (the table's insertion order). ``need_strength``: also read
    each verdict's ``strength`` (0 where none is given or the source has no such column). ``style``: also
    read the verdicts' style counts (``VoteRows.style``) from the relation's ``STYLE_COLUMNS`` (NaN where
    a column is absent or empty); ``texts``: a verdict without any stored count takes its two answers'
    counts from these (``engine.style.features``).
    """
    if style:  # engine.style.features loads for a read with style counts only (a plain board's start-up)
        from engine.style.features import fill_from_texts, style_matrix, style_select
    cols = columns_of(con, relation)
    missing = {"judge", "prompt_id", "variant", "turn", "model_a", "model_b", "winner"} - cols
    if missing:
        raise LensError(f"The verdict source has no {', '.join(sorted(missing))} column(s).")
    src = filtered_source(relation, cols, judge, category)
    n_invalid, models = _models_and_invalid(con, src)
    if not models:
        no_key = np.zeros(0, dtype=np.uint64)
        return VoteRows((), a=np.zeros(0, np.int16), b=np.zeros(0, np.int16), winner=np.zeros(0, np.int8),
                        order=np.zeros(0, np.int8), graph=no_key, prompt=no_key.copy(), voter=no_key.copy(),
                        n_invalid=n_invalid, style=np.zeros((0, len(STYLE_COLUMNS))) if style else None)
    order_col = "\"order\"" if "order" in cols else "NULL"
    annot = "annotator" if "annotator" in cols else "NULL"
    battle = "battle_id" if "battle_id" in cols else "NULL"
    has_time = "tstamp" in cols
    prob = "prob_a" if ("prob_a" in cols and need_prob) else None
    # one scan for what the read needs to know first: whether any valid verdict has a known presentation order
    # (the voter key only tells those apart: a verdict of unknown order is a vote of its own, ``votes``; a
    # battle log has none, and hashing a million battle ids cost 0.04 s) and whether any has a probability
    probes: dict[str, str] = {}
    if "order" in cols:
        probes["order"] = "count(*) FILTER (WHERE \"order\" IN ('AB', 'BA'))"
    if prob is not None:
        probes["prob"] = "count(prob_a)"
    found: dict[str, int] = {}
    if probes:
        row = con.execute(f"SELECT {', '.join(probes.values())} FROM {src} WHERE winner <> 'invalid'",
                          params(src)).fetchall()[0]
        found = dict(zip(probes, row, strict=True))
    voter = f"hash({annot}::VARCHAR, {battle}::VARCHAR)" if found.get("order") else "0::UBIGINT"
    prob = prob if found.get("prob") else None
    strength_sql = ""
    if need_strength:
        strength_sql = (", coalesce(strength, 0)::TINYINT AS st" if "strength" in cols
                        else ", 0::TINYINT AS st")
    answer_keys = (f", {ANSWER_KEY.format(model='s.model_a')} AS ka, "
                   f"{ANSWER_KEY.format(model='s.model_b')} AS kb")
    codes = model_codes(models)
    sort = ""
    if order_by == "input":
        sort = " ORDER BY " + _source_order(cols)
    elif order_by == "time" and has_time:
        sort = " ORDER BY tstamp NULLS LAST, " + _source_order(cols)
    elif order_by == "time":
        sort = " ORDER BY " + _source_order(cols)
    elif order_by == "prompt":
        sort = (
            " ORDER BY judge, prompt_id, variant, turn, least(model_a, model_b), greatest(model_a, "
            "model_b), "
            + _source_order(cols)
        )
    sql = f"""
        SELECT ma.code AS a, mb.code AS b,
               (CASE s.winner WHEN 'A' THEN 1 WHEN 'B' THEN 2 ELSE 3 END)::TINYINT AS w,
               (CASE {order_col} WHEN 'AB' THEN 1 WHEN 'BA' THEN 2 ELSE 0 END)::TINYINT AS o,
               {GRAPH_HASH} AS g, hash(prompt_id::VARCHAR) AS p,
               {voter} AS u
               {", coalesce(tstamp::DOUBLE, 'NaN'::DOUBLE) AS ts" if has_time else ''}
               {", coalesce(prob_a::DOUBLE, 'NaN'::DOUBLE) AS pa" if prob else ''}
               {strength_sql}
               {''.join(f', {e}' for e in style_select(cols)) if style else ''}
               {answer_keys if style and texts is not None else ''}
        FROM {src} s
        JOIN {codes} ma ON s.model_a = ma.model
        JOIN {codes} mb ON s.model_b = mb.model
        WHERE s.winner <> 'invalid'{sort}"""
    out = con.execute(sql, params(src, codes)).fetchnumpy()
    when = None
    if has_time:
        when = _plain(out["ts"], np.float64, np.nan) if "ts" in out else None
    pa = _plain(out["pa"], np.float64, np.nan) if prob else None
    counts = style_matrix(out) if style else None
    if counts is not None and texts is not None:
        fill_from_texts(counts, _plain(out["ka"], np.uint64), _plain(out["kb"], np.uint64), texts)
    return VoteRows(models, _plain(out["a"], np.int16), _plain(out["b"], np.int16), _plain(out["w"], np.int8),
                    _plain(out["o"], np.int8), _plain(out["g"], np.uint64), _plain(out["p"], np.uint64),
                    _plain(out["u"], np.uint64), when, pa, n_invalid,
                    strength=_plain(out["st"], np.int8) if need_strength else None, style=counts)


def model_codes(models: Sequence[str]) -> Relation:
    """The relation (model, code) of ``models`` with code = the model's position (SMALLINT), from two bound
    lists zipped by ``unnest``: the verdict fetch joins it twice to read model codes, not names (no frame
    registered, so the count path needs no pandas)."""
    return Relation.bind("(SELECT unnest({models}::VARCHAR[]) AS model, unnest({codes}::SMALLINT[]) AS code)",
                         models=list(models), codes=list(range(len(models))))


def _plain(x, dtype, fill=0) -> np.ndarray:
    """A fetched column as a plain array of ``dtype``, a NULL (a masked entry) read as ``fill``."""
    return np.asarray(x.filled(fill) if is_masked(x) else x, dtype=dtype)


def is_masked(x) -> bool:
    """Whether ``x`` is a numpy masked array (DuckDB's ``fetchnumpy`` gives one for a column holding a
    NULL), asked without importing ``numpy.ma``: ``np.ma`` loads that module on first touch (about 8 ms of
    a command's start-up), and no masked array can exist before it is loaded. The reads coalesce their
    nullable columns in SQL, so a plain board never loads it (tests/test_startup_imports.py)."""
    ma = sys.modules.get("numpy.ma")
    return ma is not None and bool(ma.isMaskedArray(x))


def _source_order(cols: set[str]) -> str:
    keys = [c for c in ("source_file", "source_line", "verdict_id") if c in cols]
    return ", ".join(f"{k} NULLS LAST" for k in keys) if keys else "1"


def filtered_source(relation: str | Relation, cols: set[str], judge=None, category=None) -> Relation:
    """The SQL subquery of ``relation``'s rows under the judge / category filters (values bound)."""
    rel = relation if isinstance(relation, Relation) else Relation(relation)
    conditions = [in_values(col, [val] if isinstance(val, str) else list(val))
                  for col, val in (("judge", judge), ("category", category)) if val is not None]
    return Relation(
        f"(SELECT * FROM {rel}{' WHERE ' + ' AND '.join(c for c, _ in conditions) if conditions else ''})",
        rel.values + tuple(v for _, vs in conditions for v in vs),
    )


def check_winners(con: duckdb.DuckDBPyConnection, src: str | Relation) -> int:
    """The invalid verdicts of a source; refuses self-comparisons and winners other than A, B, tie,
    invalid."""
    row = con.execute(
        f"SELECT count(*) FILTER (WHERE winner = 'invalid'), count(*) FILTER (WHERE model_a = model_b "
        f"AND winner <> 'invalid'), count(*) FILTER (WHERE winner NOT IN ('A', 'B', 'tie', 'invalid') "
        f"OR winner IS NULL) FROM {src}", params(src)).fetchall()[0]
    if row[1]:
        raise LensError(f"{row[1]} verdict(s) compare a model with itself.")
    bad = (
        []
        if not row[2]
        else con.execute(
            f"SELECT DISTINCT winner FROM {src} WHERE winner NOT IN ('A', 'B', 'tie', 'invalid') OR winner "
            "IS NULL LIMIT 3",
            params(src),
        ).fetchall()
    )
    if bad:
        raise LensError(
            f"Verdict winners must be A, B, tie or invalid; found {', '.join(repr(b[0]) for b in bad)}."
        )
    return int(row[0])


def _models_and_invalid(con: duckdb.DuckDBPyConnection, src: str | Relation) -> tuple[int, tuple[str, ...]]:
    """(invalid verdicts, sorted models of the valid verdicts) of a source; refuses self-comparisons."""
    n_invalid = check_winners(con, src)
    names = con.execute(
        f"SELECT DISTINCT m FROM (SELECT model_a AS m FROM {src} WHERE winner <> 'invalid' "
        f"UNION ALL SELECT model_b FROM {src} WHERE winner <> 'invalid')", params(src)).fetchall()
    return n_invalid, tuple(sorted(str(r[0]) for r in names))


def store_relation(store: Store, dataset: str) -> Relation:
    """The SQL relation of a dataset's verdicts: the verdicts table, or its attached Parquet files
    (the dataset name and the files bound as parameters)."""
    from engine.store.attached import verdicts_relation
    from engine.store.pair_counts import refuse_pair_counts

    refuse_pair_counts(store, dataset)  # a pair-count dataset has no verdict relation (issue 25)
    return verdicts_relation(store, dataset)


def store_vote_rows(
    store: Store, dataset: str, *, judge=None, category=None, order_by: str | None = None,
    style: bool = False, need_strength: bool = False, relation: Relation | None = None,
) -> VoteRows:
    """``read_vote_rows`` over a stored (or attached) dataset; ``style``: with the verdicts' style counts,
    stored ones first, else those of the answer texts in the store (``engine.style.features``);
    ``need_strength``: with each verdict's strength; ``relation``: the dataset's ``store_relation`` when
    the caller has it already (else it is looked up here)."""
    relation = store_relation(store, dataset) if relation is None else relation
    texts = None
    if style:
        from engine.style.features import text_counts_for

        cur = store.cursor()
        cols = columns_of(cur, relation)
        texts = text_counts_for(store, dataset, filtered_source(relation, cols, judge, category), cols)
    return read_vote_rows(store.cursor(), relation, judge=judge, category=category, order_by=order_by,
                          style=style, texts=texts, need_strength=need_strength)


def store_style_coverage(store: Store, dataset: str, *, judge=None, category=None) -> StyleCoverage:
    """How many valid verdicts of a stored dataset (under the filters) carry style counts and from which
    source; its ``sentence()`` says what is missing when none does."""
    relation = store_relation(store, dataset)
    cols = columns_of(store.cursor(), relation)
    from engine.style.features import style_coverage

    return style_coverage(store, dataset, filtered_source(relation, cols, judge, category), cols)


def frame_vote_rows(verdicts: pd.DataFrame, *, order_by: str | None = None, style: bool = False,
                    texts: AnswerCounts | None = None, need_strength: bool = False) -> VoteRows:
    """``read_vote_rows`` over an in-memory verdict frame (tests, the app's cached selection); ``style``:
    with the style counts of the frame's ``STYLE_COLUMNS`` (NaN where it has none), rows without any
    filled from ``texts`` (``engine.style.features.answer_counts`` of the frame's dataset) when given;
    ``need_strength``: with each verdict's strength."""
    with scratch() as con:  # no connect per call (engine.store.sql.scratch)
        con.register("lens_frame", verdicts)
        return read_vote_rows(con, "lens_frame", order_by=order_by, style=style, texts=texts,
                              need_strength=need_strength)


def key_hashes(keys: pd.DataFrame) -> np.ndarray:
    """The 64-bit graph keys (``GRAPH_HASH``) of a frame of graph keys (e.g. the graphs keep-K kept)."""
    with scratch() as con:
        con.register("lens_keys", keys[["judge", "prompt_id", "variant", "turn"]])
        out = con.execute(f"SELECT {GRAPH_HASH} AS g FROM lens_keys").fetchnumpy()["g"]
    return np.asarray(out, dtype=np.uint64)
