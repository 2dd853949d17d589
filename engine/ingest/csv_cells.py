"""CSV cells a spreadsheet will not evaluate (OWASP's CSV-injection rule) and the one CSV writer.

Every CSV the tool writes goes through ``write_csv``; the importer reads such files back raw with
``restore_csv_cell``. Kept apart from ``exports`` (which draws on the page views) so the importer and
the command line's output need nothing heavier than pandas.
"""

from __future__ import annotations

import io
import os
import re

import numpy as np

from engine.frames import pd

_TRIGGERS = ("=", "+", "-", "@", "\t", "\r")
_PLAIN_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")


def neutralise_cell(value):
    """``value`` as a spreadsheet will not evaluate it: ``'`` before a text that starts with a formula
    character (or with ``'``); numbers, plain numeric text and everything else unchanged."""
    if not isinstance(value, str) or not value:
        return value
    if value[0] == "'" or (value[0] in _TRIGGERS and not _PLAIN_NUMBER.fullmatch(value)):
        return "'" + value
    return value


def restore_csv_cell(value):
    """Undo ``neutralise_cell`` (for reading back a CSV the tool wrote): one leading ``'`` is dropped
    when a formula character or another ``'`` follows it."""
    if (
        isinstance(value, str)
        and len(value) > 1
        and value[0] == "'"
        and (value[1] in _TRIGGERS or value[1] == "'")
    ):
        return value[1:]
    return value


_FIRST = ("'", *_TRIGGERS)
"""The first characters ``neutralise_cell`` may act on: a cell starting with another is left as it is."""


def _is_text(column: pd.Series) -> bool:
    """Whether ``column`` may hold texts to neutralise: object, pandas' string and categorical columns, and
    Arrow-backed text (``pd.ArrowDtype`` of ``string``, ``large_string``, ``string_view`` or a dictionary of
    them, as ``read_parquet(dtype_backend="pyarrow")`` gives): those were once written raw."""
    if column.dtype == object:
        return True
    return isinstance(column.dtype, pd.StringDtype | pd.CategoricalDtype) or _is_arrow_text(column.dtype)


def _is_arrow_text(dtype) -> bool:
    import pyarrow as pa

    if not isinstance(dtype, pd.ArrowDtype):
        return False
    kind = dtype.pyarrow_dtype
    if pa.types.is_dictionary(kind):
        kind = kind.value_type
    return pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_string_view(kind)


def _as_objects(column: pd.Series) -> pd.Series:
    """``column`` as an object column of ``str`` and missing cells (pandas cannot turn a ``string_view``
    column into objects itself: Arrow casts it)."""
    if _is_arrow_text(column.dtype):
        import pyarrow as pa

        cells = pa.array(column).cast(pa.large_string()).to_numpy(zero_copy_only=False)
        return pd.Series(cells, index=column.index, name=column.name, dtype=object)
    return column.astype(object)


def _scan(column: pd.Series) -> tuple[np.ndarray, bool] | None:
    """(positions of the cells whose first character ``neutralise_cell`` may act on, whether a cell holds
    a ``\\r``) of an object column of texts and missing cells, in Arrow's compute; None for any other column
    (a number, a date, bytes or a lone surrogate among its cells), which ``_safe`` maps cell by cell as
    before. Per cell, a million prompt ids cost 5.7 s of a 1M-row ``graphs --format csv`` (audit38)."""
    import pyarrow as pa

    try:
        texts = pa.array(column.to_numpy(dtype=object), type=pa.string(), from_pandas=True)
    except (pa.ArrowException, UnicodeError, TypeError, ValueError):  # a number, bytes or a lone surrogate
        return None
    return _scan_texts(texts)


def _scan_texts(texts) -> tuple[np.ndarray, bool]:
    """``_scan`` of an Arrow array (or chunked array) of texts."""
    import pyarrow as pa
    import pyarrow.compute as pc

    starts = pc.utf8_slice_codeunits(texts, 0, 1)
    hit = pc.fill_null(pc.is_in(starts, value_set=pa.array(_FIRST)), False)
    carriage = pc.any(pc.match_substring(texts, "\r")).as_py()
    return np.flatnonzero(hit.to_numpy(zero_copy_only=False)), bool(carriage)


def _neutralised(column: pd.Series, hit: np.ndarray) -> pd.Series:
    """``column`` (object dtype) with ``neutralise_cell`` applied to the cells at ``hit`` (``_scan``: the
    only ones it can change)."""
    if not len(hit):
        return column
    cells = column.to_numpy(dtype=object, copy=True)
    for i in hit:
        cells[i] = neutralise_cell(cells[i])
    return pd.Series(cells, index=column.index, name=column.name, dtype=object)


def _safe(frame: pd.DataFrame) -> tuple[pd.DataFrame, bool]:
    """(``csv_safe(frame)``, whether a text cell or a column name holds a ``\\r``: the one character whose
    quoting depends on the csv writer's line terminator)."""
    out = frame.copy(deep=False)  # pandas 3 copies on write: no column of a million rows copied here
    carriage = False
    for col in out.columns:
        dtype = out[col].dtype
        if isinstance(dtype, pd.StringDtype) and dtype.storage == "pyarrow":
            # Arrow's own texts scanned in place; only a column with a cell to change becomes objects (a
            # million graphs' prompt ids as Python strings took 0.4 GB of graphs --format csv's 1 GB; nits39)
            import pyarrow as pa

            hit, cr = _scan_texts(pa.array(out[col]))
            if len(hit):
                out[col] = _neutralised(out[col].astype(object), hit)
            carriage = carriage or cr
        elif _is_text(out[col]):
            column = _as_objects(out[col])
            scanned = _scan(column)
            if scanned is None:  # cells of other kinds: mapped as ever (the map's result keeps its dtypes)
                out[col] = column.map(neutralise_cell)
                cr = any(isinstance(v, str) and "\r" in v for v in out[col].to_numpy(dtype=object))
            else:
                hit, cr = scanned
                out[col] = _neutralised(column, hit)
            carriage = carriage or cr
    out.columns = [neutralise_cell(c) if isinstance(c, str) else c for c in out.columns]
    carriage = carriage or any(isinstance(c, str) and "\r" in c for c in out.columns)
    return out, carriage


def csv_safe(frame: pd.DataFrame) -> pd.DataFrame:
    """A copy of ``frame`` whose text cells and column names are neutralised (``neutralise_cell``)."""
    return _safe(frame)[0]


class _RowEnds(io.TextIOBase):
    """A text sink that turns each row's ``\\r\\n`` ending into ``\\n``: Python's csv writer quotes a
    field holding a character of its line terminator, so writing with ``\\r\\n`` quotes a bare carriage
    return (a reader would end the row there) while the file keeps ``\\n`` line ends. The csv writer
    hands over exactly one row per ``write``, its terminator last."""

    def __init__(self, sink):
        self.sink = sink

    def write(self, row: str) -> int:
        return self.sink.write(row[:-2] + "\n" if row.endswith("\r\n") else row)

    def flush(self) -> None:
        self.sink.flush()


def write_csv(frame: pd.DataFrame, target=None, **kwargs):
    """THE way the tool writes CSV: ``frame`` neutralised, no index, ``\\n`` line ends, every field
    holding a line break of any kind (``\\n``, ``\\r``) quoted, to ``target`` (a path or an open
    text file; ``None`` returns the text). ``kwargs`` go to ``DataFrame.to_csv``."""
    if target is None:
        buf = io.StringIO()
        write_csv(frame, buf, **kwargs)
        return buf.getvalue()
    if isinstance(target, str | os.PathLike):
        with open(target, "w", encoding="utf-8", newline="") as fh:
            return write_csv(frame, fh, **kwargs)
    safe, carriage = _safe(frame)
    if not carriage:
        # no cell for the \r\n terminator to quote differently: pandas writes its rows in chunks straight
        # to ``target``, the same bytes as _RowEnds' one write per row (7 s of CPU for a million rows)
        return safe.to_csv(target, index=False, lineterminator="\n", **kwargs)
    return safe.to_csv(_RowEnds(target), index=False, lineterminator="\r\n", **kwargs)
