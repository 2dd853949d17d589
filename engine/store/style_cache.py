"""Rows of the answer style cache (tables ``answer_style`` and ``answer_style_runs``, migration 070): the
four style counts of each stored answer text, made once per (dataset, dataset version, counting rule).
What the counts are and how they are made is ``engine.style``'s; this module only reads and writes rows."""

from __future__ import annotations

from collections.abc import Iterator

from engine.frames import pd
from engine.store.connection import Store
from engine.store.sql import scalar

COUNT_COLUMNS: tuple[str, ...] = ("tokens", "headers", "lists", "bold")
"""The count columns of ``answer_style`` (schema.STYLE_FEATURES, one answer's side)."""
KEY_COLUMNS: tuple[str, ...] = ("prompt_id", "variant", "turn", "model")
"""An answer: its prompt instance and model (the ``answers`` table's key within a dataset)."""


def counted(store: Store, dataset: str, version: int, rule: str) -> bool:
    """Whether the dataset version's answers were counted under ``rule`` (also when it had none)."""
    return bool(scalar(store.cursor(), "SELECT count(*) FROM answer_style_runs WHERE dataset = ? AND "
                       "version = ? AND rule = ?", [dataset, version, rule]))


def answer_batches(store: Store, dataset: str, rows: int) -> Iterator[pd.DataFrame]:
    """The dataset's answer texts (``KEY_COLUMNS`` + text), ``rows`` at a time (memory bounded)."""
    cur = store.cursor()
    cur.execute("SELECT prompt_id, variant, turn, model, text FROM answers "
                "WHERE dataset = ? AND text IS NOT NULL", [dataset])
    while True:
        frame = cur.fetch_df_chunk(max(1, rows // 2048))
        if frame is None or frame.empty:
            return
        yield frame


def write_counts(store: Store, dataset: str, version: int, rule: str, frames: Iterator[pd.DataFrame],
                 seconds_of) -> int:
    """Replace the dataset's cached counts by ``frames`` (``KEY_COLUMNS`` + ``COUNT_COLUMNS``) for this
    version and rule, and record the run (``seconds_of()`` its duration), in one transaction; returns the
    number of answers stored."""
    n = 0
    with store.transaction() as tx:
        tx.execute("DELETE FROM answer_style WHERE dataset = ?", [dataset])
        tx.execute("DELETE FROM answer_style_runs WHERE dataset = ?", [dataset])
        cols = ", ".join((*KEY_COLUMNS, *COUNT_COLUMNS))
        for frame in frames:
            tx.register("lens_answer_style", frame[[*KEY_COLUMNS, *COUNT_COLUMNS]])
            try:
                tx.execute(f"INSERT INTO answer_style (dataset, version, rule, {cols}) "
                           f"SELECT ?, ?, ?, {cols} FROM lens_answer_style", [dataset, version, rule])
            finally:
                tx.unregister("lens_answer_style")
            n += len(frame)
        tx.execute("INSERT INTO answer_style_runs (dataset, version, rule, answers, seconds) "
                   "VALUES (?, ?, ?, ?, ?)", [dataset, version, rule, n, seconds_of()])
    return n


def count_rows(store: Store, dataset: str, version: int, rule: str) -> pd.DataFrame:
    """The cached counts of a dataset version: a 64-bit key per answer (``hash(prompt_id, variant, turn,
    model)``, as ``ANSWER_KEY`` computes it on verdicts) and the four counts, sorted by key."""
    return store.cursor().execute(
        f"SELECT {ANSWER_KEY.format(model='model')} AS k, {', '.join(COUNT_COLUMNS)} FROM answer_style "
        "WHERE dataset = ? AND version = ? AND rule = ? ORDER BY k", [dataset, version, rule]).df()


ANSWER_KEY = "hash(prompt_id::VARCHAR, variant::BIGINT, turn::BIGINT, {model}::VARCHAR)"
"""The 64-bit key of an answer: of a verdict's model_a answer with ``model='model_a'``."""
