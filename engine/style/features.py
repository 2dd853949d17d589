"""The style features of a verdict: four counts per answer, where they come from and how they are read.

A style-controlled fit (LMArena's "style control") explains part of each verdict by how the two answers
look: how long they are and how much markdown they use. Each verdict has, per side, four raw counts
(``STYLE_FEATURES``): the answer's tokens, markdown headers, list items and bold spans, in the columns
``STYLE_COLUMNS`` (``tokens_a, headers_a, lists_a, bold_a, tokens_b, headers_b, lists_b, bold_b``, ``_a``
for model_a's answer). The fit turns them into (a - b) / (a + b) and standardises them itself (that is
part of the model, never of the data).

Sources, in order, per verdict: the counts stored with it (a ``conv_metadata`` field or explicit columns
of its file, ``engine.style.given``); else, when it carries none, the counts of its two answer texts in
the store (``engine.style.counting``, counted once per dataset version and kept in the store's
``answer_style`` table); else NaN. ``style_coverage`` says how many verdicts each source served, and in
one sentence what is missing when none carries counts.

Answer texts are matched to a verdict by 64-bit hashes of (prompt, variant, turn, model); a false match
needs two answers of one dataset to share a hash (chance about answers^2 / 2^64).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

import duckdb
import numpy as np

from engine.frames import pd
from engine.store import style_cache
from engine.store.schema import STYLE_COLUMNS, STYLE_FEATURES
from engine.store.sql import Relation, params, scalar
from engine.style.counting import RULE, count_answers

if TYPE_CHECKING:
    from engine.store.connection import Store

__all__ = ["STYLE_COLUMNS", "STYLE_FEATURES", "AnswerCounts", "StyleCoverage", "answer_counts",
           "fill_from_texts", "style_coverage", "style_matrix", "style_select", "text_counts_for"]


def style_select(columns: set[str]) -> list[str]:
    """SELECT expressions ``s0 .. s7`` giving a verdict relation's counts in ``STYLE_COLUMNS`` order
    (NULL where the relation has no such column)."""
    return [f"{c if c in columns else 'NULL'}::DOUBLE AS s{k}" for k, c in enumerate(STYLE_COLUMNS)]


def style_matrix(out: dict) -> np.ndarray:
    """The (rows, 8) float64 counts from a ``fetchnumpy`` result holding ``s0 .. s7`` (NULL read as NaN);
    each column is dropped from ``out`` once copied, so the counts are held about once, not twice."""
    n = len(out["s0"])
    matrix = np.empty((n, len(STYLE_COLUMNS)), dtype=np.float64)
    for k in range(len(STYLE_COLUMNS)):
        x = out.pop(f"s{k}")
        matrix[:, k] = x.filled(np.nan) if np.ma.isMaskedArray(x) else x
        del x
    return matrix


@dataclass(frozen=True)
class AnswerCounts:
    """The counted answers of a dataset version: 64-bit answer keys (``style_cache.ANSWER_KEY``),
    sorted, and their (tokens, headers, lists, bold) counts."""

    keys: np.ndarray
    counts: np.ndarray

    def lookup(self, keys: np.ndarray) -> np.ndarray:
        """(n, 4) counts of the answers with these keys; NaN where an answer was not counted."""
        out = np.full((keys.size, len(STYLE_FEATURES)), np.nan)
        if self.keys.size == 0 or keys.size == 0:
            return out
        at = np.minimum(np.searchsorted(self.keys, keys), self.keys.size - 1)
        found = self.keys[at] == keys
        out[found] = self.counts[at[found]]
        return out


ANSWER_BATCH = 20_000
"""Answers counted (and held) at a time."""


def answer_counts(store: Store, dataset: str) -> AnswerCounts:
    """The style counts of the dataset's answer texts, counted once per dataset version and counting rule
    and kept in the store (a read-only store counts them each time, keeping nothing)."""
    version = store.dataset_version(dataset)
    if store.read_only:
        frames = [_counted(f) for f in style_cache.answer_batches(store, dataset, ANSWER_BATCH)]
        frame = pd.concat(frames) if frames else pd.DataFrame(columns=[*style_cache.KEY_COLUMNS,
                                                                       *style_cache.COUNT_COLUMNS])
        con = duckdb.connect()
        try:
            con.register("answer_style", frame)
            key = style_cache.ANSWER_KEY.format(model="model")
            keyed = con.execute(f"SELECT {key} AS k, tokens, headers, lists, bold FROM answer_style "
                                "ORDER BY k").df()
        finally:
            con.close()
        return _answer_counts(keyed)
    if not style_cache.counted(store, dataset, version, RULE):
        start = time.perf_counter()
        batches = style_cache.answer_batches(store, dataset, ANSWER_BATCH)
        style_cache.write_counts(store, dataset, version, RULE, (_counted(f) for f in batches),
                                 lambda: time.perf_counter() - start)
    return _answer_counts(style_cache.count_rows(store, dataset, version, RULE))


def _counted(frame: pd.DataFrame) -> pd.DataFrame:
    counts = count_answers(frame["text"].tolist())
    out = frame[list(style_cache.KEY_COLUMNS)].copy()
    for k, c in enumerate(style_cache.COUNT_COLUMNS):
        out[c] = counts[:, k]
    return out


def _answer_counts(keyed: pd.DataFrame) -> AnswerCounts:
    return AnswerCounts(keyed["k"].to_numpy(dtype=np.uint64),
                        keyed[list(style_cache.COUNT_COLUMNS)].to_numpy(dtype=np.float64))


def given_sql(columns: set[str]) -> str:
    """SQL true on a verdict that carries some stored count (a conv_metadata field or explicit columns)."""
    present = [c for c in STYLE_COLUMNS if c in columns]
    return " OR ".join(f"{c} IS NOT NULL" for c in present) if present else "false"


def text_counts_for(store: Store, dataset: str, src: Relation, columns: set[str]) -> AnswerCounts | None:
    """The answer counts a read of ``src`` (a dataset's verdicts under filters) fills its rows from: None
    when every valid verdict carries stored counts, or the dataset has no answer text to count (an
    attached dataset never has)."""
    from engine.store.attached import attached_relation

    if attached_relation(store, dataset) is not None:
        return None
    cur = store.cursor()
    lacking = scalar(cur, f"SELECT count(*) FROM {src} WHERE winner <> 'invalid' "
                          f"AND NOT ({given_sql(columns)})", params(src))
    if not lacking:
        return None
    if not scalar(cur, "SELECT count(*) FROM answers WHERE dataset = ? AND text IS NOT NULL", [dataset]):
        return None
    return answer_counts(store, dataset)


def fill_from_texts(style: np.ndarray, key_a: np.ndarray, key_b: np.ndarray, texts: AnswerCounts) -> int:
    """In place: each row of ``style`` without any stored count takes its two answers' text counts (NaN
    where an answer was not counted); returns how many rows got both sides."""
    lacking = np.flatnonzero(~np.isfinite(style).any(axis=1))
    if lacking.size == 0:
        return 0
    half = len(STYLE_FEATURES)
    side_a, side_b = texts.lookup(key_a[lacking]), texts.lookup(key_b[lacking])
    style[lacking, :half] = side_a
    style[lacking, half:] = side_b
    return int((np.isfinite(side_a).all(axis=1) & np.isfinite(side_b).all(axis=1)).sum())


@dataclass(frozen=True)
class StyleCoverage:
    """Where the style counts of a selection's valid verdicts come from: ``given`` carry stored counts
    (conv_metadata or explicit columns), ``from_texts`` have both answers counted from the store's texts,
    ``none`` neither; ``answers``: the dataset's stored answer texts; ``attached``: read in place."""

    dataset: str
    verdicts: int
    given: int
    from_texts: int
    answers: int
    attached: bool

    @property
    def none(self) -> int:
        """Verdicts without style counts from either source."""
        return self.verdicts - self.given - self.from_texts

    def sentence(self) -> str | None:
        """One sentence saying what is missing when no verdict carries style counts, else None."""
        if self.verdicts == 0 or self.given or self.from_texts:
            return None
        head = (f"None of the {self.verdicts:,} verdicts of {self.dataset!r} carries style features "
                f"({', '.join(STYLE_FEATURES)}): ")
        columns = f"{STYLE_COLUMNS[0]} … {STYLE_COLUMNS[-1]}"
        if self.attached:
            return head + (f"its Parquet files have no {columns} columns, and answer texts are not read "
                           "for a dataset attached in place (import the files, with their answer texts, "
                           "instead).")
        gave = f"its files gave no conv_metadata field and no {columns} columns, and "
        if self.answers == 0:
            return head + gave + "the store holds no answer text of the dataset to count them from."
        return head + gave + (f"none of its {self.answers:,} stored answer texts belongs to both models of a "
                              "verdict (same prompt, variant, turn and model).")


def style_coverage(store: Store, dataset: str, src: Relation, columns: set[str]) -> StyleCoverage:
    """How many valid verdicts of ``src`` (a dataset's verdicts under filters, with its ``columns``) carry
    style counts, and from which source; ``engine.ranking.vote_query.store_style_coverage`` gives it for
    a stored dataset and filters."""
    from engine.store.attached import attached_relation

    cur = store.cursor()
    given = given_sql(columns)
    row = cur.execute(f"SELECT count(*), count(*) FILTER (WHERE {given}) FROM {src} "
                      "WHERE winner <> 'invalid'", params(src)).fetchone()
    n, n_given = (int(row[0]), int(row[1])) if row else (0, 0)
    attached = attached_relation(store, dataset) is not None
    answers = 0 if attached else int(scalar(cur, "SELECT count(*) FROM answers WHERE dataset = ? AND text IS "
                                                 "NOT NULL", [dataset]))
    from_texts = 0
    texts = text_counts_for(store, dataset, src, columns) if n > n_given else None
    if texts is not None:
        keys = cur.execute(
            f"SELECT {style_cache.ANSWER_KEY.format(model='model_a')} AS ka, "
            f"{style_cache.ANSWER_KEY.format(model='model_b')} AS kb FROM {src} "
            f"WHERE winner <> 'invalid' AND NOT ({given})", params(src)).fetchnumpy()
        style = np.full((len(keys["ka"]), len(STYLE_COLUMNS)), np.nan)
        from_texts = fill_from_texts(style, np.asarray(keys["ka"], np.uint64),
                                     np.asarray(keys["kb"], np.uint64), texts)
    return StyleCoverage(dataset, n, n_given, from_texts, answers, attached)
