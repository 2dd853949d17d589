"""CSV cells a spreadsheet will not evaluate (OWASP's CSV-injection rule) and the one CSV writer.

Every CSV the tool writes goes through ``write_csv``; the importer reads such files back raw with
``restore_csv_cell``. Kept apart from ``exports`` (which draws on the page views) so the importer and
the command line's output need nothing heavier than pandas.
"""

from __future__ import annotations

import io
import os
import re

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


def csv_safe(frame: pd.DataFrame) -> pd.DataFrame:
    """A copy of ``frame`` whose text cells and column names are neutralised (``neutralise_cell``)."""
    out = frame.copy()
    for col in out.columns:
        if out[col].dtype == object or isinstance(out[col].dtype, pd.StringDtype | pd.CategoricalDtype):
            out[col] = out[col].astype(object).map(neutralise_cell)
    out.columns = [neutralise_cell(c) if isinstance(c, str) else c for c in out.columns]
    return out


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
    return csv_safe(frame).to_csv(_RowEnds(target), index=False, lineterminator="\r\n", **kwargs)
