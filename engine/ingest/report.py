"""What validating verdict files found, before anything is stored: the ``ValidationReport`` with its
counts, notes and rejected rows; the rows themselves stay staged on disk and are read back on request."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import PurePath

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

from engine.ingest.formats import TOOL_NAMES
from engine.ingest.formats import tool as tool_format
from engine.ingest.staging import Stage
from engine.store.schema import STYLE_COLUMNS, VERDICT_COLUMNS, VERDICT_DTYPES
from engine.store.sql import Relation, params

NOTE_COLUMNS = 20
"""Columns not kept named in the note at most (the rest counted): the note stays one short line."""


@dataclass(frozen=True, eq=False)
class ValidationReport:
    """What verdict files hold, before anything is stored; the rows themselves are staged on disk.

    ``good`` (canonical verdicts, schema.VERDICT_DTYPES), ``rejected`` (``source_file,
    source_line, reason`` and the row's original fields), ``prompts`` / ``answers`` (texts) are
    read back from the stage when asked; ``good_sql()`` lets the store insert them without loading
    them. ``rows_read`` = data rows seen (blank lines are not rows) = ``n_good + n_rejected``.
    """

    dataset: str
    source: str
    format: str
    rows_read: int
    n_good: int
    n_rejected: int
    n_invalid: int
    stage: Stage
    good_file: str
    excluded: tuple[str, ...]
    rejected_files: tuple[str, ...]
    prompts_file: str
    answers_file: str
    field_names: tuple[str, ...] = ()
    dropped: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # file → columns not kept
    repeats: int = 0  # valid rows equal to an earlier row in everything but their line (kept)
    file_hashes: Mapping[str, str] = field(default_factory=dict)  # file → sha256 of its bytes
    remarks: tuple[str, ...] = ()  # what the import set for every row (--set, derived judges, order AB)
    derived_judges: tuple[str, ...] = ()  # judge names the import derived (rows that named none)

    def notes(self) -> list[str]:
        """What the import kept and left out beside the rejected rows: the tool format the files were
        read as, repeated rows, dropped columns, then what it set for every row (``remarks``)."""
        out = []
        if self.format in TOOL_NAMES:
            out.append(f"Read as {tool_format(self.format).title} (--format {self.format}).")
        if self.repeats:
            out.append(f"{self.repeats} row{'s' if self.repeats != 1 else ''} "
                       f"repeat{'' if self.repeats != 1 else 's'} an earlier row; kept as separate verdicts.")
        for f, cols in self.dropped.items():
            if cols:
                shown = ", ".join(c if len(c) <= 60 else c[:60] + "…" for c in cols[:NOTE_COLUMNS])
                more = f" and {len(cols) - NOTE_COLUMNS:,} more" if len(cols) > NOTE_COLUMNS else ""
                out.append(f"{PurePath(f).name}: column{'s' if len(cols) != 1 else ''} not kept "
                           f"(not verdict fields): {shown}{more}.")
        return out + list(self.remarks)

    @property
    def ok(self) -> bool:
        """True when no row was rejected."""
        return self.n_rejected == 0

    def counts(self) -> dict[str, int]:
        """Rows read, good, rejected and invalid, for reports and JSON."""
        return {"rows_read": self.rows_read, "good": self.n_good, "rejected": self.n_rejected,
                "invalid": self.n_invalid}

    def good_sql(self) -> Relation:
        """SQL for the valid rows (columns ``seq`` + schema.VERDICT_COLUMNS), for any DuckDB connection."""
        if self.excluded:
            return Relation.bind("SELECT * FROM read_parquet({good}) WHERE seq NOT IN "
                                 "(SELECT seq FROM read_parquet({excluded}))",
                                 good=str(self.good_file), excluded=[str(f) for f in self.excluded])
        return Relation.bind("SELECT * FROM read_parquet({good})", good=str(self.good_file))

    def rows_in_order(self) -> int | None:
        """How many rows the good file holds when they are the valid rows exactly and in ``seq`` order
        (no excluded rows, ``seq`` strictly increasing down the file), so that file order is the
        insert's order; None otherwise. Reads the ``seq`` column only (8 bytes a row)."""
        if self.excluded:
            return None
        seq = pq.read_table(self.good_file, columns=["seq"]).column("seq").to_numpy()
        if len(seq) != self.n_good or (len(seq) > 1 and not bool(np.all(seq[1:] > seq[:-1]))):
            return None
        return len(seq)

    def texts_sql(self, kind: str) -> Relation:
        """SQL for the first text per key (``kind``: prompts or answers), in file order."""
        path, key = ((self.prompts_file, "prompt_id, variant, turn") if kind == "prompts"
                     else (self.answers_file, "prompt_id, variant, turn, model"))
        return Relation.bind(
            f"SELECT * EXCLUDE (seq) FROM (SELECT DISTINCT ON ({key}) * FROM read_parquet({{texts}}) "
            f"ORDER BY {key}, seq) ORDER BY seq",
            texts=str(path),
        )

    def rejected_sql(self) -> Relation:
        """SQL for the rejected rows in file order, for any DuckDB connection."""
        return Relation.bind("SELECT * FROM read_parquet({rejected}) ORDER BY seq",
                             rejected=[str(f) for f in self.rejected_files])

    def _frame(self, sql: str | Relation, limit: int | None = None) -> pd.DataFrame:
        con = self.stage.connect()
        try:
            return con.execute(
                f"{sql}" + (f" LIMIT {int(limit)}" if limit is not None else ""), params(sql)
            ).df()
        finally:
            con.close()

    def preview(self, n: int | None = 50) -> pd.DataFrame:
        """The first ``n`` valid rows (all of them when None) (a page shows these without loading the
        rest)."""
        cols = ", ".join(f'"{c}"' for c in VERDICT_COLUMNS)
        good = self.good_sql()
        df = self._frame(Relation(f"SELECT {cols} FROM ({good}) ORDER BY seq", good.values), n)
        return df.astype(VERDICT_DTYPES)

    @property
    def good(self) -> pd.DataFrame:
        """Every valid row in file order (loads them all: for tests and small files)."""
        return self.preview(None)

    @property
    def prompts(self) -> pd.DataFrame:
        """The prompt texts the files carried (read back from the stage)."""
        return self._frame(self.texts_sql("prompts"))

    @property
    def answers(self) -> pd.DataFrame:
        """The answer texts the files carried (read back from the stage)."""
        return self._frame(self.texts_sql("answers"))

    def rejected_head(self, n: int | None = None) -> pd.DataFrame:
        """The first ``n`` rejected rows (all when None) with their original fields as columns."""
        return self._expand(self._frame(self.rejected_sql(), n))

    @property
    def rejected(self) -> pd.DataFrame:
        """Every rejected row with its file, line, reason and original fields."""
        return self.rejected_head(None)

    def _expand(self, df: pd.DataFrame) -> pd.DataFrame:
        head = pd.DataFrame({"source_file": df["source_file"].astype(object),
                             "source_line": df["source_line"].astype("int64"),
                             "reason": df["reason"].astype(object)})
        fields = pd.DataFrame(
            [json.loads(f) for f in df["fields"]], columns=list(self.field_names), dtype=object
        )
        fields = fields.drop(columns=[c for c in head.columns if c in fields.columns])
        return pd.concat([head, fields], axis=1)

    def iter_rejected(self, chunk: int = 50_000) -> Iterator[pd.DataFrame]:
        """The rejected rows, a chunk at a time (bounded memory for any number of them)."""
        con = self.stage.connect()
        try:
            rejected = self.rejected_sql()
            result = con.execute(str(rejected), params(rejected))
            while True:
                df = result.fetch_df_chunk(max(1, chunk // 2048))
                if df.empty:
                    return
                yield self._expand(df)
        finally:
            con.close()

    def iter_sentences(self) -> Iterator[str]:
        """One sentence per rejected row: ``<file> line <n>: <reason>.``"""
        for rej in self.iter_rejected():
            for f, n, r in zip(rej["source_file"], rej["source_line"], rej["reason"], strict=True):
                yield f"{f} line {int(n)}: {r}."

    def sentences(self) -> list[str]:
        """One sentence per rejected row, in file order."""
        return list(self.iter_sentences())

    def with_frames(self, *, good: pd.DataFrame | None = None, prompts: pd.DataFrame | None = None,
                    answers: pd.DataFrame | None = None) -> ValidationReport:
        """The report with its valid rows or texts replaced by these frames (file order = row order); valid
        rows without the style count columns (``report.good`` has none) carry no counts."""
        changes: dict = {}
        if good is not None:
            g = good.reset_index(drop=True)
            g = g.assign(**{c: np.nan for c in STYLE_COLUMNS if c not in g.columns})
            changes.update(good_file=self.stage.write("good", g.assign(seq=np.arange(len(g)))), excluded=(),
                           n_good=len(g), n_invalid=int((g["winner"] == "invalid").sum()))
        for kind, frame in (("prompts", prompts), ("answers", answers)):
            if frame is not None:
                f = frame.reset_index(drop=True)
                changes[f"{kind}_file"] = self.stage.write(kind, f.assign(seq=np.arange(len(f))))
        return replace(self, **changes)


# ---------------------------------------------------------------------------------------------
# Normalising + validating: raw rows → canonical frame / rejected rows
# ---------------------------------------------------------------------------------------------
