"""Verdict files → a validated canonical frame plus a report of every rejected row (pure, no DB).

``engine/ingest/verdict_files.py`` reads the files (CSV/TSV, JSON Lines, JSON array, Parquet, the
Vicuna-bench review format) into raw rows with their true line numbers; this module turns those
rows into the canonical frame of ``schema.VERDICT_DTYPES`` (README.md, "Data format"): defaults, winner spellings, checks, duplicates, prompt and answer texts. Nothing is dropped silently: a row is either in ``good`` or in ``rejected`` with one
sentence saying why, so ``rows_read == n_good + n_rejected`` always holds. An unparsable judge
output (``error``, review score -1) is a *valid* row with winner ``invalid``: counted, stored,
never turned into a tie (graphs.build_stack leaves it out).
"""

from __future__ import annotations

import gc
import hashlib
import json
import math
import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import PurePath

import duckdb
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from engine.errors import LensError
from engine.ingest.csv_bulk import TextCells
from engine.ingest.formats import TOOL_NAMES
from engine.ingest.formats import tool as tool_format
from engine.ingest.limits import (
    INT_MAX,
    INVISIBLE_RE,
    NAME_MAX_CHARS,
    TEXT_MAX_CHARS,
    bad_characters,
    batch_rows,
)
from engine.ingest.staging import Stage, sql_path
from engine.ingest.verdict_files import (  # noqa: F401 - re-exported: the import vocabulary lives with the readers
    CANONICAL,
    COLUMN_ALIASES,
    FORMATS,
    KNOWN_JUDGES,
    OPTIONAL,
    REQUIRED,
    REVIEW_SCORES,
    TEXTS,
    RawRows,
    cell_text,
    detect_format,
    merge_raw,
    no_gc,
    parse_review_name,
    read_rows,
)
from engine.ingest.verdict_files import iter_raw as read_batches
from engine.store.schema import DEFAULT_JUDGE, DEFAULT_TURN, VARIANT_KINDS, VERDICT_COLUMNS, VERDICT_DTYPES

WINNER_VALUES: dict[str, str] = {
    "a": "A", "model_a": "A", "1": "A", "1.0": "A",
    "b": "B", "model_b": "B", "2": "B", "2.0": "B",
    "tie": "tie", "tie (bothbad)": "tie", "tie(bothbad)": "tie", "1.5": "tie",
    "error": "invalid", "invalid": "invalid",
}
"""Accepted winner spellings (lower-cased) → canonical value; ``error`` = unparsable judge output."""
_WINNER_HELP = "A, B, tie, model_a, model_b, tie (bothbad), 1, 2, 1.5 or error"


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

    def notes(self) -> list[str]:
        """What the import kept and left out beside the rejected rows: the tool format the files were
        read as, repeated rows, dropped columns."""
        out = []
        if self.format in TOOL_NAMES:
            out.append(f"Read as {tool_format(self.format).title} (--format {self.format}).")
        if self.repeats:
            out.append(f"{self.repeats} row{'s' if self.repeats != 1 else ''} "
                       f"repeat{'' if self.repeats != 1 else 's'} an earlier row; kept as separate verdicts.")
        for f, cols in self.dropped.items():
            if cols:
                out.append(f"{PurePath(f).name}: column{'s' if len(cols) != 1 else ''} not kept "
                           f"(not verdict fields): {', '.join(cols)}.")
        return out

    @property
    def ok(self) -> bool:
        return self.n_rejected == 0

    def counts(self) -> dict[str, int]:
        return {"rows_read": self.rows_read, "good": self.n_good, "rejected": self.n_rejected,
                "invalid": self.n_invalid}

    def good_sql(self) -> str:
        """SQL for the valid rows (columns ``seq`` + schema.VERDICT_COLUMNS), for any DuckDB connection."""
        sql = f"SELECT * FROM read_parquet({sql_path(self.good_file)})"
        if self.excluded:
            files = ", ".join(sql_path(f) for f in self.excluded)
            sql += f" WHERE seq NOT IN (SELECT seq FROM read_parquet([{files}]))"
        return sql

    def texts_sql(self, kind: str) -> str:
        """SQL for the first text per key (``kind``: prompts or answers), in file order."""
        path, key = ((self.prompts_file, "prompt_id, variant, turn") if kind == "prompts"
                     else (self.answers_file, "prompt_id, variant, turn, model"))
        return (f"SELECT * EXCLUDE (seq) FROM (SELECT DISTINCT ON ({key}) * FROM read_parquet({sql_path(path)}) "
                f"ORDER BY {key}, seq) ORDER BY seq")

    def rejected_sql(self) -> str:
        files = ", ".join(sql_path(f) for f in self.rejected_files)
        return f"SELECT * FROM read_parquet([{files}]) ORDER BY seq"

    def _frame(self, sql: str, limit: int | None = None) -> pd.DataFrame:
        con = self.stage.connect()
        try:
            return con.execute(sql + (f" LIMIT {int(limit)}" if limit is not None else "")).df()
        finally:
            con.close()

    def preview(self, n: int = 50) -> pd.DataFrame:
        """The first ``n`` valid rows (a page shows these without loading the rest)."""
        cols = ", ".join(f'"{c}"' for c in VERDICT_COLUMNS)
        df = self._frame(f"SELECT {cols} FROM ({self.good_sql()}) ORDER BY seq", n)
        return df.astype(VERDICT_DTYPES)

    @property
    def good(self) -> pd.DataFrame:
        """Every valid row in file order (loads them all: for tests and small files)."""
        return self.preview(None)

    @property
    def prompts(self) -> pd.DataFrame:
        return self._frame(self.texts_sql("prompts"))

    @property
    def answers(self) -> pd.DataFrame:
        return self._frame(self.texts_sql("answers"))

    def rejected_head(self, n: int | None = None) -> pd.DataFrame:
        """The first ``n`` rejected rows (all when None) with their original fields as columns."""
        return self._expand(self._frame(self.rejected_sql(), n))

    @property
    def rejected(self) -> pd.DataFrame:
        return self.rejected_head(None)

    def _expand(self, df: pd.DataFrame) -> pd.DataFrame:
        head = pd.DataFrame({"source_file": df["source_file"].astype(object),
                             "source_line": df["source_line"].astype("int64"),
                             "reason": df["reason"].astype(object)})
        fields = pd.DataFrame([json.loads(f) for f in df["fields"]], columns=list(self.field_names), dtype=object)
        fields = fields.drop(columns=[c for c in head.columns if c in fields.columns])
        return pd.concat([head, fields], axis=1)

    def iter_rejected(self, chunk: int = 50_000) -> Iterator[pd.DataFrame]:
        """The rejected rows, a chunk at a time (bounded memory for any number of them)."""
        con = self.stage.connect()
        try:
            result = con.execute(self.rejected_sql())
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
        return list(self.iter_sentences())

    def with_frames(self, *, good: pd.DataFrame | None = None, prompts: pd.DataFrame | None = None,
                    answers: pd.DataFrame | None = None) -> ValidationReport:
        """The report with its valid rows or texts replaced by these frames (file order = row order)."""
        changes: dict = {}
        if good is not None:
            g = good.reset_index(drop=True)
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
def _winner_key(v: object) -> str | None:
    """Winner cell → lookup key; numbers keep their decimal (1.5) so AlpacaEval values map."""
    if isinstance(v, float | np.floating) and not math.isnan(v):
        return str(float(v)) if not float(v).is_integer() else str(int(v))
    t = cell_text(v)
    return None if t is None else " ".join(t.lower().split())


def _text_or_none(v: object) -> str | None:
    """Free text (explanations, questions, answers): kept as written; blank → None."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return None
    t = v if isinstance(v, str) else str(v)
    return t if t.strip() else None


def _clean_text(cells: list) -> np.ndarray:
    """Cells → stripped NFC text or None (object array). All-text columns go through Arrow in C;
    mixed columns (JSON numbers, Parquet ints/floats) cell by cell with ``cell_text``.

    NFC: a name spelt with a combining accent (NFD) and the same name precomposed are one name."""
    return _clean_arrow(cells).to_numpy(zero_copy_only=False)


def _clean_arrow(cells: list) -> pa.Array:
    """``_clean_text`` as an Arrow string array (the checks of lengths and characters read it as it is)."""
    try:
        arr = _text_arrow(cells)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        arr = pa.array([cell_text(v) for v in cells], type=pa.string())
    t = pc.utf8_trim_whitespace(arr)
    if not pc.all(pc.string_is_ascii(t)).as_py() and len(t):
        t = pc.utf8_normalize(t, "NFC")
    return pc.if_else(pc.equal(pc.utf8_length(t), 0), pa.scalar(None, pa.string()), t)


def _text_arrow(cells) -> pa.Array:
    """Cells as an Arrow string array (a CSV column read in bulk is one already)."""
    if isinstance(cells, TextCells):
        return cells.arrow
    return pa.array(cells, type=pa.string(), from_pandas=True)


def _any_arrow(cells) -> pa.Array:
    """Cells as an Arrow array of the type Arrow infers (a CSV column read in bulk: text)."""
    if isinstance(cells, TextCells):
        return cells.arrow
    return pa.array(cells, from_pandas=True)


def _free_text(cells: list) -> np.ndarray:
    """Free text (explanations, questions, answers) kept as written; blank or missing → None."""
    try:
        arr = _text_arrow(cells)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return np.array([_text_or_none(v) for v in cells] + [None], dtype=object)[:-1]
    blank = pc.fill_null(pc.equal(pc.utf8_length(pc.utf8_trim_whitespace(arr)), 0), True)
    keep = pc.invert(blank).to_numpy(zero_copy_only=False)
    out = arr.to_numpy(zero_copy_only=False).astype(object)
    out[~keep] = None
    return out


def _numbers(cells: list, present: np.ndarray) -> np.ndarray:
    """The present cells as floats, NaN where absent or not a number (text is parsed as a number).
    A column of numbers, or of nothing, is converted in bulk."""
    if not present.any():
        return np.full(len(cells), np.nan)
    try:
        arr = _any_arrow(cells)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
        arr = None
    if arr is not None and (pa.types.is_integer(arr.type) or pa.types.is_floating(arr.type)):
        num = np.asarray(pc.cast(arr, pa.float64(), safe=False).to_numpy(zero_copy_only=False), dtype=np.float64)
        return np.where(present, num, np.nan)
    if arr is not None and pa.types.is_string(arr.type):  # text (CSV): Arrow parses it when every cell is a number
        try:
            num = pc.cast(pc.if_else(pa.array(present), arr, pa.scalar(None, pa.string())), pa.float64())
            return np.asarray(pc.fill_null(num, np.nan).to_numpy(zero_copy_only=False), dtype=np.float64)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            pass  # some cell is not a plain number: pandas says which
    return pd.to_numeric(pd.Series(list(cells), dtype=object).where(present, None), errors="coerce").to_numpy(float)


def _all_text(cells: list) -> bool:
    """Is every cell a str or None (Arrow infers a text or an all-null column)?"""
    try:
        t = _any_arrow(cells).type
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
        return False
    return pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_null(t)


def _present(cells: list) -> np.ndarray:
    """Per cell: is there a value (not None, NaN or blank text)? A column of numbers is checked in
    bulk; text and mixed columns as ``_clean_text`` sees them."""
    try:
        arr = _any_arrow(cells)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
        arr = None
    if arr is not None and (pa.types.is_integer(arr.type) or pa.types.is_floating(arr.type)
                            or pa.types.is_null(arr.type)):
        return np.asarray(arr.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
    return ~_is_none(_clean_text(cells))


def _text_series(a: pa.Array) -> pd.Series:
    """An Arrow string array as a pandas column without making a Python string per cell (the stage
    writes it back to Arrow as it is)."""
    return pd.Series(pd.arrays.ArrowExtensionArray(a))


def _nulls(a: pa.Array) -> np.ndarray:
    """Per cell of an Arrow array: is it null?"""
    return np.asarray(a.is_null().to_numpy(zero_copy_only=False), dtype=bool)


def _is_none(a: np.ndarray) -> np.ndarray:
    return pd.isna(a) if len(a) else np.zeros(0, dtype=bool)


ID_COLUMNS: tuple[str, ...] = ("prompt_id", "model_a", "model_b", "judge", "category", "annotator")
"""Columns that name things (graph keys, vertices, filters): no control, invisible or separator
characters, at most ``NAME_MAX_CHARS`` characters."""
FREE_TEXTS: tuple[str, ...] = ("explanation", *TEXTS)
"""Free texts: kept as written, at most ``TEXT_MAX_CHARS`` characters."""


def _short(v: object, n: int = 60) -> str:
    """A value quoted for a message, cut to ``n`` characters (a 10 MB name is not printed whole)."""
    t = v if isinstance(v, str) else str(v)
    return repr(t) if len(t) <= n else repr(t[:n]) + f"… ({len(t):,} characters)"


def _as_arrow(a) -> pa.Array:
    """A text/None object array as an Arrow string array (one already in Arrow as it is)."""
    return a if isinstance(a, pa.Array) else pa.array(a, type=pa.string(), from_pandas=True)


def _lengths(a) -> np.ndarray:
    """Characters per cell of a text/None object array or Arrow string array (0 for None)."""
    if not len(a):
        return np.zeros(0, dtype=np.int64)
    lens = pc.utf8_length(_as_arrow(a))
    return np.asarray(pc.fill_null(lens, 0).to_numpy(zero_copy_only=False), dtype=np.int64)


def _has_control(a) -> np.ndarray:
    """Per cell of a text/None object array: does it contain a control character?

    ``a\\x00`` and ``a`` would otherwise be two different models that print the same.
    """
    if not len(a):
        return np.zeros(0, dtype=bool)
    arr = _as_arrow(a)
    ascii_only = pc.all(pc.string_is_ascii(arr)).as_py()  # the common case: a cheaper pattern
    hit = pc.match_substring_regex(arr, r"[\x00-\x1f\x7f]" if ascii_only else INVISIBLE_RE)
    return pc.fill_null(hit, False).to_numpy(zero_copy_only=False)


def _normalise(raw: RawRows, dataset: str, model_names: Mapping[str, str] | None,
               judge_names: Mapping[str, str] | None) -> tuple[pd.DataFrame, np.ndarray, pd.DataFrame]:
    """Canonical values and the reason (or None) per row; also the texts.

    A row that could not be read (a parse problem: wrong field count, bad bytes, not JSON) keeps
    that one reason, its cells being unreliable; otherwise every problem of the row is listed, in
    one sentence joined by semicolons. Column at a time: text columns through Arrow, checks as
    boolean masks; only the sentences of rejected rows are built one by one.
    """
    n = len(raw.line)
    reasons = np.array(list(raw.problem) + [None], dtype=object)[:-1]
    readable = _is_none(reasons)

    def col(name: str) -> list:
        return raw.cols.get(name) or [None] * n

    def flag(bad: np.ndarray, text) -> None:
        m = np.asarray(bad, dtype=bool) & readable
        for i in np.flatnonzero(m):
            t = text(i) if callable(text) else text
            reasons[i] = t if reasons[i] is None else f"{reasons[i]}; {t}"

    def rename(a: np.ndarray, names: Mapping[str, str]) -> np.ndarray:
        return np.array([names.get(v, v) if v is not None else None for v in a] + [None], dtype=object)[:-1]

    arrow = {c: _clean_arrow(col(c)) for c in
             ("prompt_id", "model_a", "model_b", "judge", "category", "annotator", "variant_kind", "order")}
    if model_names:
        for c in ("model_a", "model_b"):
            arrow[c] = _as_arrow(rename(arrow[c].to_numpy(zero_copy_only=False), model_names))
    arrow["judge"] = pc.fill_null(arrow["judge"], DEFAULT_JUDGE)
    if judge_names:
        arrow["judge"] = _as_arrow(rename(arrow["judge"].to_numpy(zero_copy_only=False), judge_names))
    txt: dict[str, np.ndarray] = {}  # object arrays, made only where Python needs them

    def values(c: str) -> np.ndarray:
        if c not in txt:
            txt[c] = arrow[c].to_numpy(zero_copy_only=False)
        return txt[c]

    for c in ID_COLUMNS:
        if c in ("prompt_id", "model_a", "model_b"):
            flag(_nulls(arrow[c]), f"{c} is empty")
        lens = _lengths(arrow[c])
        flag(lens > NAME_MAX_CHARS, lambda i, c=c, lens=lens:
             f"{c} is {lens[i]:,} characters long; the limit for a name is {NAME_MAX_CHARS}")
        flag(_has_control(arrow[c]), lambda i, c=c:
             f"{c} {_short(values(c)[i], NAME_MAX_CHARS)} contains {bad_characters(values(c)[i])}")
    same = pc.fill_null(pc.equal(arrow["model_a"], arrow["model_b"]), False).to_numpy(zero_copy_only=False)
    flag(same, lambda i: f"model_a and model_b are the same model ({values('model_a')[i]})")

    wraw = col("winner")
    warr = _clean_arrow(wraw)
    if _all_text(wraw):
        low = pc.replace_substring_regex(pc.utf8_lower(warr), r"\s+", " ")
        enc = pc.dictionary_encode(low)  # a handful of distinct spellings: map those, then take
        mapped = pd.Series(enc.dictionary.to_numpy(zero_copy_only=False), dtype=object).map(WINNER_VALUES)
        words = np.append(mapped.astype(object).to_numpy(copy=True), None)
        winner = words[pc.fill_null(enc.indices, len(enc.dictionary)).to_numpy(zero_copy_only=False)]
    else:
        keys = pd.Series([_winner_key(v) for v in wraw], dtype=object)
        winner = keys.map(WINNER_VALUES).astype(object).to_numpy(copy=True)
    winner[_is_none(winner)] = None
    wnull = _nulls(warr)
    flag(wnull, "winner is empty")
    flag(~wnull & _is_none(winner), lambda i: f"winner value {_short(cell_text(wraw[i]))} is not one of {_WINNER_HELP}")

    ints = {}
    for name, default in (("variant", 0), ("turn", DEFAULT_TURN)):
        cells = col(name)
        present = _present(cells)
        num = _numbers(cells, present)
        with np.errstate(invalid="ignore"):
            whole = np.isfinite(num) & (num >= 0) & (np.floor(num) == num)
            ok = whole & (num <= INT_MAX)
        flag(present & ~whole, lambda i, cells=cells, name=name:
             f"{name} {_short(cell_text(cells[i]))} is not a non-negative integer")
        flag(present & whole & ~ok, lambda i, cells=cells, name=name:
             f"{name} {cell_text(cells[i])} is larger than {INT_MAX:,}, the largest the store keeps")
        ints[name] = np.where(present & ok, np.nan_to_num(num), default).astype(np.int64)

    order = pd.Series(values("order"), dtype=object).str.upper().to_numpy(copy=True)
    order[_is_none(order)] = None
    flag(~_is_none(order) & ~np.isin(order, ["AB", "BA"]),
         lambda i: f"order {_short(values('order')[i])} is not AB or BA")

    vk = pd.Series(values("variant_kind"), dtype=object).str.lower().to_numpy(copy=True)
    vk[_is_none(vk)] = None
    flag(~_is_none(vk) & ~np.isin(vk, list(VARIANT_KINDS)),
         lambda i: f"variant_kind {_short(values('variant_kind')[i])} is not one of {', '.join(VARIANT_KINDS)}")
    vk = np.where(_is_none(vk), np.where(ints["variant"] == 0, "original", "paraphrase"), vk).astype(object)

    free = {c: _free_text(col(c)) for c in FREE_TEXTS}
    for c, values in free.items():
        lens = _lengths(values)
        flag(lens > TEXT_MAX_CHARS, lambda i, c=c, lens=lens:
             f"{c} is {lens[i]:,} characters long; the limit for a text is {TEXT_MAX_CHARS:,}")

    pcells = col("prob_a")
    present = _present(pcells)

    def ptxt(i: int) -> str:
        return _clean_text([pcells[i]])[0]
    prob = _numbers(pcells, present)
    flag(present & np.isnan(prob), lambda i: f"prob_a {_short(ptxt(i))} is not a number")
    with np.errstate(invalid="ignore"):
        flag(present & ~np.isnan(prob) & ((prob < 0) | (prob > 1)), lambda i: f"prob_a {ptxt(i)} is outside [0, 1]")

    stamp = _seconds(col("tstamp"))
    flag(stamp.bad, lambda i: f"tstamp {cell_text(col('tstamp')[i])!r} is not a time "
                              "(seconds since 1970, or a date such as 2024-05-01T12:00:00Z)")
    scells = col("strength")
    spresent = _present(scells)
    snum = _numbers(scells, spresent)
    flag(spresent & ~np.isin(snum, [1.0, 2.0]), lambda i: f"strength {_clean_text([scells[i]])[0]!r} is not 1 or 2")
    strength = pd.array(np.where(spresent & np.isin(snum, [1.0, 2.0]), snum, np.nan), dtype="Float64")

    frame = pd.DataFrame({
        "dataset": pd.Series([dataset] * n, dtype=object),
        "judge": _text_series(arrow["judge"]),
        "prompt_id": _text_series(arrow["prompt_id"]),
        "variant": pd.Series(ints["variant"], dtype=np.int64),
        "variant_kind": pd.Series(vk, dtype=object),
        "turn": pd.Series(ints["turn"], dtype=np.int64),
        "category": _text_series(arrow["category"]),
        "model_a": _text_series(arrow["model_a"]),
        "model_b": _text_series(arrow["model_b"]),
        "winner": pd.Series(winner, dtype=object),
        "order": pd.Series(order, dtype=object),
        "prob_a": pd.Series(np.where(present, prob, np.nan), dtype=np.float64),
        "annotator": _text_series(arrow["annotator"]),
        "explanation": pd.Series(free["explanation"], dtype=object),
        "battle_id": _text_series(_clean_arrow(col("battle_id"))),
        "tstamp": pd.Series(stamp.values, dtype=np.float64),
        "strength": pd.Series(strength, dtype="Float64").astype("Int64"),
        "source_file": pd.Series(raw.file, dtype=object),
        "source_line": pd.Series(raw.line, dtype=np.int64),
    })
    texts = pd.DataFrame({c: pd.Series(free[c], dtype=object) for c in TEXTS})
    return frame, reasons, texts


@dataclass(frozen=True)
class _Stamps:
    values: np.ndarray  # seconds since the epoch, NaN where missing or bad
    bad: np.ndarray  # present but not a time


def _seconds(cells: list) -> _Stamps:
    """Time cells → seconds since the epoch: numbers as they are, text as a number or a date
    (a date without a zone is read as UTC)."""
    n = len(cells)
    present = _present(cells) if n else np.zeros(0, dtype=bool)
    num = _numbers(cells, present).copy()
    bad = present & np.isnan(num)
    for i in np.flatnonzero(bad):
        try:
            t = pd.Timestamp(str(cells[i]).strip())
        except (ValueError, TypeError, OverflowError):
            continue
        if pd.isna(t):
            continue
        t = t.tz_localize("UTC") if t.tzinfo is None else t
        num[i] = t.timestamp()
        bad[i] = False
    with np.errstate(invalid="ignore"):
        bad |= present & ~bad & ~np.isfinite(num)
    num[bad] = np.nan
    return _Stamps(num, bad)


def parse_value_map(specs: Iterable[str] | None) -> dict[str, dict[str, str]]:
    """``COLUMN:VALUE=NEW`` specs (``--map-value``, the Data page) → {column: {value: new}}."""
    out: dict[str, dict[str, str]] = {}
    for v in specs or []:
        column, sep, rest = str(v).partition(":")
        old, sep2, new = rest.partition("=")
        if not sep or not sep2 or not column.strip() or not old.strip() or not new.strip():
            raise LensError(f"The value map {v!r} is not of the form COLUMN:VALUE=NEW (e.g. winner:left=A).")
        col = column.strip().lower()
        if col not in CANONICAL:
            raise LensError(f"The value map {v!r} names column {column.strip()!r}, which is not a verdict column "
                            f"({', '.join(sorted(CANONICAL))}).")
        out.setdefault(col, {})[old.strip()] = new.strip()
    return out


def apply_value_map(cols: dict[str, list], value_map: Mapping[str, Mapping[str, str]] | None) -> None:
    """Rewrite cells in place: ``{"winner": {"left": "A"}}`` turns every ``left`` (compared
    case-insensitively, spaces trimmed) of column winner into ``A`` before validation."""
    for column, mapping in (value_map or {}).items():
        cells = cols.get(column)
        if not cells or not mapping:
            continue
        if not isinstance(cells, list):  # a CSV column read in bulk (Arrow): rewritten as a list
            cells = cols[column] = list(cells)
        low = {str(k).strip().lower(): v for k, v in mapping.items()}
        for i, v in enumerate(cells):
            t = cell_text(v)
            if t is not None and t.lower() in low:
                cells[i] = low[t.lower()]


def _texts_tables(frame: pd.DataFrame, texts: pd.DataFrame, ok: np.ndarray) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Question and answer texts of valid rows → rows of the prompts / answers tables (first wins)."""
    key = ["dataset", "prompt_id", "variant", "turn"]
    f = frame.loc[ok]
    t = texts.loc[ok]
    mq = t["question"].notna()
    q = f.loc[mq, ["seq", *key, "category", "variant_kind"]].assign(text=t.loc[mq, "question"].to_numpy())
    prompts = q.drop_duplicates(key, keep="first").reset_index(drop=True)
    parts = []
    for side in ("a", "b"):
        m = t[f"answer_{side}"].notna()
        parts.append(f.loc[m, ["seq", *key]].assign(model=f.loc[m, f"model_{side}"].to_numpy(),
                                          text=t.loc[m, f"answer_{side}"].to_numpy()))
    answers = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()
    answers = answers.drop_duplicates([*key, "model"], keep="first").reset_index(drop=True)
    prompts = prompts.astype({"variant": "int64", "turn": "int64"})
    answers = answers.astype({"variant": "int64", "turn": "int64"})
    return prompts, answers


def _original_fields(row, header: tuple | None) -> dict:
    if isinstance(row, list):  # CSV values; a short row leaves the last fields empty
        return {h: cell_text(v) for h, v in zip(header or (), row, strict=False)}
    return {k: cell_text(v) for k, v in row.items()}


def _fields_json(raw: RawRows, idx: np.ndarray, names: dict) -> list[str]:
    """Original fields of the rows ``idx`` as JSON objects; their names are added to ``names``."""
    out = []
    for i in idx:
        header = raw.headers.get(raw.file[i])
        if header and len(names) < _MAX_FIELD_NAMES:
            names.update(dict.fromkeys(header))
        fields = _original_fields(raw.orig[i], header)
        if len(names) < _MAX_FIELD_NAMES:
            names.update(dict.fromkeys(fields))
        out.append(json.dumps(fields, ensure_ascii=False))
    return out


_MAX_FIELD_NAMES = 1000
"""Columns of the rejected-rows table at most (a JSON file may name a new key in every row)."""


class ReportBuilder:
    """Validates raw-row batches one at a time into a stage (memory bounded by one batch)."""

    def __init__(self, dataset: str, model_names: Mapping[str, str] | None = None,
                 judge_names: Mapping[str, str] | None = None,
                 value_map: Mapping[str, Mapping[str, str]] | None = None):
        self.dataset, self.model_names, self.judge_names = dataset, model_names, judge_names
        self.value_map = value_map
        self.repeats = 0
        self.dropped: dict[str, list[str]] = {}
        self.stage = Stage()
        self.files = {k: self.stage.new_file(k) for k in ("good", "rejected", "prompts", "answers")}
        self.rows = 0
        self.good_batches = 0
        self.n_good = self.n_invalid = self.n_rejected = 0
        self.field_names: dict[str, None] = {}

    def add(self, raw: RawRows) -> None:
        """Check one batch and append its rows to the stage."""
        apply_value_map(raw.cols, self.value_map)
        for f, cols in raw.dropped.items():
            known = self.dropped.setdefault(f, [])
            known += [c for c in cols if c not in known]
        with no_gc():
            frame, reasons, texts = _normalise(raw, self.dataset, self.model_names, self.judge_names)
        n = len(frame)
        seq = np.arange(self.rows, self.rows + n, dtype=np.int64)
        self.rows += n
        bad = ~_is_none(reasons)
        self.n_rejected += int(bad.sum())
        self.n_good += int((~bad).sum())
        self.n_invalid += int(((frame["winner"] == "invalid").to_numpy(dtype=bool) & ~bad).sum())
        if (~bad).any():
            self.good_batches += 1
            self.stage.append(self.files["good"], "good", frame.loc[~bad].assign(seq=seq[~bad]))
            prompts, answers = _texts_tables(frame.assign(seq=seq), texts, ~bad)
            if len(prompts):
                self.stage.append(self.files["prompts"], "prompts", prompts)
            if len(answers):
                self.stage.append(self.files["answers"], "answers", answers)
        if bad.any():
            idx = np.flatnonzero(bad)
            self.stage.append(self.files["rejected"], "rejected", pd.DataFrame({
                "seq": seq[idx], "source_file": np.asarray(raw.file, dtype=object)[idx],
                "source_line": np.asarray(raw.line, dtype=np.int64)[idx], "reason": reasons[idx].astype(str),
                "fields": _fields_json(raw, idx, self.field_names),
            }))

    def finish(self, source: str, fmt: str, file_hashes: Mapping[str, str] | None = None) -> ValidationReport:
        """Close the stage files, count repeats across batches; the report."""
        stage = self.stage
        stage.close()
        for kind, name in self.files.items():
            if not os.path.exists(name):
                self.files[kind] = stage.empty(kind)
        if self.n_good > 1:  # one SQL pass over the staged rows, across every batch and file
            self.repeats = _repeats(stage, self.files["good"])
        return ValidationReport(
            dataset=self.dataset, source=source, format=fmt, rows_read=self.rows, n_good=self.n_good,
            n_rejected=self.n_rejected, n_invalid=self.n_invalid, stage=stage, good_file=self.files["good"],
            excluded=(), rejected_files=(self.files["rejected"],), prompts_file=self.files["prompts"],
            answers_file=self.files["answers"], field_names=tuple(self.field_names),
            dropped={f: tuple(c) for f, c in self.dropped.items()}, repeats=self.repeats,
            file_hashes=dict(file_hashes or {}),
        )


_CONTENT = [c for c in VERDICT_COLUMNS if c not in ("source_file", "source_line")]


def _repeats(stage: Stage, good_file: str) -> int:
    """Valid rows equal to an earlier one in everything but their line, over every batch (SQL)."""
    part = ", ".join(f'"{c}"' for c in _CONTENT)
    con = stage.connect()
    try:
        return int(con.execute(f"""SELECT count(*) - count(DISTINCT ({part}))
                                   FROM read_parquet({sql_path(good_file)})""").fetchone()[0])
    except duckdb.Error as exc:
        raise stage.full(exc) from exc
    finally:
        con.close()


def content_hash(data: bytes, filename: str = "", fmt: str = "") -> str:
    """sha256 hex of a file's bytes: the same file imported twice into one dataset is refused by it.
    A review-format file's name is part of its content (it names the models and the judge)."""
    h = hashlib.sha256()
    if fmt == "review":
        h.update(PurePath(filename).name.encode("utf-8") + b"\x00")
    h.update(data)
    return h.hexdigest()


def set_judge(raw: RawRows, judge: str) -> None:
    """Every row of ``raw`` gets ``judge`` (one judge per file: ``--judge-from filename``, the app)."""
    raw.cols["judge"] = [judge] * len(raw.line)


def judge_from_filename(filename: str) -> str:
    """The judge a file stands for under ``--judge-from filename``: its name without folder and extension."""
    name = PurePath(filename).name
    for ext in (".jsonl", ".ndjson", ".json", ".csv", ".tsv", ".txt", ".parquet", ".pq"):
        if name.lower().endswith(ext):
            return name[: -len(ext)] or name
    return name


def file_hash(source, filename: str, fmt: str) -> str:
    """``content_hash`` of a path or bytes, reading a file a megabyte at a time."""
    if isinstance(source, bytes | bytearray | memoryview):
        return content_hash(bytes(source), filename, fmt)
    h = hashlib.sha256()
    if fmt == "review":
        h.update(PurePath(filename).name.encode("utf-8") + b"\x00")
    with open(source, "rb") as fh:
        for chunk in iter(lambda: fh.read(2**20), b""):
            h.update(chunk)
    return h.hexdigest()


def validate_sources(
    sources: Iterable[tuple[object, str]], *, dataset: str, fmt: str | None = None,
    column_map: Mapping[str, str] | None = None, model_names: Mapping[str, str] | None = None,
    judge_names: Mapping[str, str] | None = None, value_map: Mapping[str, Mapping[str, str]] | None = None,
    file_judges: Mapping[str, str] | None = None,
) -> ValidationReport:
    """Validate files (each a path or bytes, with its name) as one import, one batch at a time.

    Repeated rows are counted across every batch and file; memory is bounded by one batch.
    ``file_judges`` puts the rows of a file (by the name given) under its own judge.
    """
    builder = ReportBuilder(dataset, model_names, judge_names, value_map)
    fmts, names, hashes = [], [], {}
    pending: list[RawRows] = []  # small files are checked together, a batch at a time
    with no_gc():  # the batch's per-row lists cannot form cycles; the collector would rescan them
        _read_into(builder, sources, fmt, column_map, file_judges, pending, fmts, names, hashes)
    if pending:
        builder.add(pending[0] if len(pending) == 1 else merge_raw(pending))
    if not names:
        raise LensError("No files to import.")
    return builder.finish(names[0] if len(names) == 1 else f"{len(names)} files",
                          fmts[0] if len(set(fmts)) == 1 else "mixed", hashes)


def _read_into(builder: ReportBuilder, sources, fmt, column_map, file_judges, pending: list, fmts: list,
               names: list, hashes: dict) -> None:
    """Read every file batch by batch into ``builder`` (small batches are pooled in ``pending``)."""
    rows = 0
    for source, filename in sources:
        found, batches = read_batches(source, filename, fmt, column_map)
        judge = (file_judges or {}).get(filename)
        for raw in batches:
            if judge:
                set_judge(raw, judge)
            pending.append(raw)
            rows += len(raw.line)
            if rows >= batch_rows():
                builder.add(pending[0] if len(pending) == 1 else merge_raw(pending))
                pending.clear()
                rows = 0
                gc.collect()  # once per batch: whatever cycles the batch left are freed here
        hashes[filename] = file_hash(source, filename, found)
        fmts.append(found)
        names.append(filename)


def validate_raw(raw: RawRows, *, dataset: str, source: str, fmt: str,
                 model_names: Mapping[str, str] | None = None,
                 judge_names: Mapping[str, str] | None = None,
                 value_map: Mapping[str, Mapping[str, str]] | None = None,
                 file_hashes: Mapping[str, str] | None = None) -> ValidationReport:
    """Normalise and check rows already read (one batch), e.g. from a format adapter."""
    builder = ReportBuilder(dataset, model_names, judge_names, value_map)
    builder.add(raw)
    return builder.finish(source, fmt, file_hashes)


def validate_bytes(
    data: bytes, filename: str, *, dataset: str, fmt: str | None = None,
    column_map: Mapping[str, str] | None = None, model_names: Mapping[str, str] | None = None,
    judge_names: Mapping[str, str] | None = None, value_map: Mapping[str, Mapping[str, str]] | None = None,
    judge: str | None = None,
) -> ValidationReport:
    """Validate one file's bytes (named ``filename``, which also gives review-format models/judge);
    ``judge`` puts every row under that judge."""
    return validate_sources([(data, filename)], dataset=dataset, fmt=fmt, column_map=column_map,
                            model_names=model_names, judge_names=judge_names, value_map=value_map,
                            file_judges={filename: judge} if judge else None)


def validate_many(
    files: Iterable[tuple[bytes, str]], *, dataset: str, fmt: str | None = None,
    column_map: Mapping[str, str] | None = None, model_names: Mapping[str, str] | None = None,
    judge_names: Mapping[str, str] | None = None, value_map: Mapping[str, Mapping[str, str]] | None = None,
    file_judges: Mapping[str, str] | None = None,
) -> ValidationReport:
    """Validate several files as one import (repeated rows are counted across files too)."""
    return validate_sources(files, dataset=dataset, fmt=fmt, column_map=column_map, model_names=model_names,
                            judge_names=judge_names, value_map=value_map, file_judges=file_judges)
