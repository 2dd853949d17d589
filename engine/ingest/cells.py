"""Cells of a verdict column, checked in bulk: text cleaned to NFC or None, free texts, numbers,
presence, lengths, control characters and timestamps, through Arrow where a column allows it and
cell by cell where it mixes types (the validation in ``engine.ingest.verdicts`` reads them)."""

from __future__ import annotations

import math
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from engine.ingest.csv_bulk import TextCells
from engine.ingest.limits import INVISIBLE_RE, MARKS_ONLY_RE, MIXED_SCRIPT_RE
from engine.ingest.raw_rows import TEXTS, cell_text
from engine.style.given import all_none


def winner_key(v: object) -> str | None:
    """Winner cell → lookup key; numbers keep their decimal (1.5) so AlpacaEval values map."""
    if isinstance(v, float | np.floating) and not math.isnan(v):
        return str(float(v)) if not float(v).is_integer() else str(int(v))
    t = cell_text(v)
    return None if t is None else " ".join(t.lower().split())


def text_or_none(v: object) -> str | None:
    """Free text (explanations, questions, answers): kept as written; blank → None."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return None
    t = v if isinstance(v, str) else str(v)
    return t if t.strip() else None


def clean_text(cells: list) -> np.ndarray:
    """Cells → stripped NFC text or None (object array). All-text columns go through Arrow in C;
    mixed columns (JSON numbers, Parquet ints/floats) cell by cell with ``cell_text``.

    NFC: a name spelt with a combining accent (NFD) and the same name precomposed are one name."""
    return clean_arrow(cells).to_numpy(zero_copy_only=False)


def clean_arrow(cells: list) -> pa.Array:
    """``clean_text`` as an Arrow string array (the checks of lengths and characters read it as it is)."""
    if _absent(cells):
        return pa.nulls(len(cells), pa.string())
    try:
        arr = text_arrow(cells)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        arr = pa.array([cell_text(v) for v in cells], type=pa.string())
    t = pc.utf8_trim_whitespace(arr)
    if not pc.all(pc.string_is_ascii(t)).as_py() and len(t):
        t = pc.utf8_normalize(t, "NFC")
    return pc.if_else(pc.equal(pc.utf8_length(t), 0), pa.scalar(None, pa.string()), t)


def text_arrow(cells) -> pa.Array:
    """Cells as an Arrow string array (a CSV column read in bulk is one already)."""
    if isinstance(cells, TextCells):
        return cells.arrow
    return pa.array(cells, type=pa.string(), from_pandas=True)


def any_arrow(cells) -> pa.Array:
    """Cells as an Arrow array of the type Arrow infers (a CSV column read in bulk: text); inside
    ``arrow_memo`` each column is converted once, however many checks read it."""
    if isinstance(cells, TextCells):
        return cells.arrow
    memo = getattr(_MEMO, "arrays", None)
    if memo is None:
        return pa.array(cells, from_pandas=True)
    hit = memo.get(id(cells))
    if hit is not None and hit[0] is cells:
        return hit[1]
    arr = pa.array(cells, from_pandas=True)
    memo[id(cells)] = (cells, arr)  # the cells are held, so their id names no other object meanwhile
    return arr


_MEMO = threading.local()


@contextmanager
def arrow_memo() -> Iterator[None]:
    """Within: ``any_arrow`` converts each cell list once (a Parquet column of numbers, such as
    tstamp, was converted three times per batch: the boolean check, presence and the numbers). The
    caller must not change a list it reads inside; the memo is per thread (the app validates uploads
    in several) and goes at the end."""
    before = getattr(_MEMO, "arrays", None)
    _MEMO.arrays = {}
    try:
        yield
    finally:
        _MEMO.arrays = before


def _absent(cells) -> bool:
    """Is the column one of cells that are all None (a column the file does not have)? Its checks are
    then answered without converting a list of Nones to Arrow."""
    return isinstance(cells, list) and len(cells) > 0 and all_none(cells)


def free_text(cells: list) -> np.ndarray:
    """Free text (explanations, questions, answers) kept as written; blank or missing → None."""
    if _absent(cells):
        return np.full(len(cells), None, dtype=object)
    try:
        arr = text_arrow(cells)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return np.array([text_or_none(v) for v in cells] + [None], dtype=object)[:-1]
    blank = pc.fill_null(pc.equal(pc.utf8_length(pc.utf8_trim_whitespace(arr)), 0), True)
    keep = pc.invert(blank).to_numpy(zero_copy_only=False)
    out = arr.to_numpy(zero_copy_only=False).astype(object)
    out[~keep] = None
    return out


def cell_numbers(cells: list, present: np.ndarray) -> np.ndarray:
    """The present cells as floats, NaN where absent or not a number (text is parsed as a number).
    A column of numbers, or of nothing, is converted in bulk."""
    if not present.any():
        return np.full(len(cells), np.nan)
    try:
        arr = any_arrow(cells)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
        arr = None
    if arr is not None and (pa.types.is_integer(arr.type) or pa.types.is_floating(arr.type)):
        num = np.asarray(
            pc.cast(arr, pa.float64(), safe=False).to_numpy(zero_copy_only=False), dtype=np.float64
        )
        return np.where(present, num, np.nan)
    if arr is not None and pa.types.is_string(
        arr.type
    ):  # text (CSV): Arrow parses it when every cell is a number
        try:
            num = pc.cast(pc.if_else(pa.array(present), arr, pa.scalar(None, pa.string())), pa.float64())
            return np.asarray(pc.fill_null(num, np.nan).to_numpy(zero_copy_only=False), dtype=np.float64)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            pass  # some cell is not a plain number: pandas says which
    return pd.to_numeric(pd.Series(list(cells), dtype=object).where(present, None), errors="coerce").to_numpy(
        float
    )


def boolean_cells(cells) -> np.ndarray | None:
    """Per cell: is it a boolean (JSON ``true`` / ``false``, a Parquet bool column)? None when no cell is,
    found in bulk where Arrow can tell (text, integers, nothing); a column Arrow reads as floats or
    cannot read as one type is looked at cell by cell (Arrow turns ``False`` into 0.0)."""
    if isinstance(cells, TextCells) or not len(cells):
        return None
    try:
        t = any_arrow(cells).type
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
        t = None
    if t is not None and (pa.types.is_string(t) or pa.types.is_integer(t) or pa.types.is_null(t)):
        return None
    # a column Arrow reads as booleans may hold NaN too (Arrow takes it for a missing cell): typed below
    kinds = set(map(type, cells))  # in C: a column of floats (Parquet, JSON numbers) holds no boolean
    if bool not in kinds and np.bool_ not in kinds:
        return None
    mask = np.fromiter((type(v) is bool or type(v) is np.bool_ for v in cells), dtype=bool, count=len(cells))
    return mask if mask.any() else None


def all_text(cells: list) -> bool:
    """Is every cell a str or None (Arrow infers a text or an all-null column)?"""
    try:
        t = any_arrow(cells).type
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
        return False
    return pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_null(t)


def cells_present(cells: list) -> np.ndarray:
    """Per cell: is there a value (not None, NaN or blank text)? A column of numbers is checked in
    bulk; text and mixed columns as ``clean_text`` sees them."""
    if _absent(cells):
        return np.zeros(len(cells), dtype=bool)
    try:
        arr = any_arrow(cells)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
        arr = None
    if arr is not None and (pa.types.is_integer(arr.type) or pa.types.is_floating(arr.type)
                            or pa.types.is_null(arr.type)):
        return np.asarray(arr.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
    return ~is_none(clean_text(cells))


def text_series(a: pa.Array) -> pd.Series:
    """An Arrow string array as a pandas column without making a Python string per cell (the stage
    writes it back to Arrow as it is)."""
    return pd.Series(pd.arrays.ArrowExtensionArray(a))


def arrow_nulls(a: pa.Array) -> np.ndarray:
    """Per cell of an Arrow array: is it null?"""
    return np.asarray(a.is_null().to_numpy(zero_copy_only=False), dtype=bool)


def is_none(a: np.ndarray) -> np.ndarray:
    """Per cell of an object array: None or NaN?"""
    return pd.isna(a) if len(a) else np.zeros(0, dtype=bool)


ID_COLUMNS: tuple[str, ...] = ("prompt_id", "model_a", "model_b", "judge", "category", "annotator")
"""Columns that name things (graph keys, vertices, filters): no control, invisible or separator
characters, at most ``NAME_MAX_CHARS`` characters."""
FREE_TEXTS: tuple[str, ...] = ("explanation", *TEXTS)
"""Free texts: kept as written, at most ``TEXT_MAX_CHARS`` characters."""


def short_repr(v: object, n: int = 60) -> str:
    """A value quoted for a message, cut to ``n`` characters (a 10 MB name is not printed whole)."""
    t = v if isinstance(v, str) else str(v)
    return repr(t) if len(t) <= n else repr(t[:n]) + f"… ({len(t):,} characters)"


def as_arrow(a) -> pa.Array:
    """A text/None object array as an Arrow string array (one already in Arrow as it is)."""
    return a if isinstance(a, pa.Array) else pa.array(a, type=pa.string(), from_pandas=True)


def text_lengths(a) -> np.ndarray:
    """Characters per cell of a text/None object array or Arrow string array (0 for None)."""
    if not len(a):
        return np.zeros(0, dtype=np.int64)
    lens = pc.utf8_length(as_arrow(a))
    return np.asarray(pc.fill_null(lens, 0).to_numpy(zero_copy_only=False), dtype=np.int64)


def name_suspects(a) -> np.ndarray:
    """Per cell of a text/None object array or Arrow string array: may the name render blank or as a
    look-alike (a control, invisible or blank-rendering character, combining marks only, a word mixing
    Latin with Cyrillic or Greek)? ``limits.name_problem`` words the cells this marks.

    ``a\\x00`` and ``a``, ``gрt4`` and ``gpt4`` would otherwise be two different models that print the same.
    """
    if not len(a):
        return np.zeros(0, dtype=bool)
    arr = as_arrow(a)
    printable = pc.ascii_is_printable(arr)
    if pc.all(printable).as_py():  # printable ASCII throughout (nulls aside): nothing to suspect
        return np.zeros(len(arr), dtype=bool)
    if pc.all(pc.string_is_ascii(arr)).as_py():
        # the common case: in ASCII only the controls (0x00-0x1f, 0x7f) can be suspect, exactly the
        # characters that are not printable (a test that costs a tenth of the pattern's)
        hit = pc.invert(printable)
    else:
        hit = pc.or_(pc.match_substring_regex(arr, INVISIBLE_RE),
                     pc.or_(pc.match_substring_regex(arr, MARKS_ONLY_RE),
                            pc.match_substring_regex(arr, MIXED_SCRIPT_RE)))
    return pc.fill_null(hit, False).to_numpy(zero_copy_only=False)


@dataclass(frozen=True)
class Stamps:
    """Time cells as seconds since the epoch, and which present cells were not a time."""

    values: np.ndarray  # seconds since the epoch, NaN where missing or bad
    bad: np.ndarray  # present but not a time


def timestamp_seconds(cells: list) -> Stamps:
    """Time cells → seconds since the epoch: numbers as they are, text as a number or a date
    (a date without a zone is read as UTC)."""
    n = len(cells)
    present = cells_present(cells) if n else np.zeros(0, dtype=bool)
    num = cell_numbers(cells, present).copy()
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
    return Stamps(num, bad)
