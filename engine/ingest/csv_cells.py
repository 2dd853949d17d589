"""CSV cells a spreadsheet will not evaluate (OWASP's CSV-injection rule) and the one CSV writer.

Every CSV the tool writes goes through ``write_csv``; the importer reads such files back raw with
``restore_csv_cell``. Kept apart from ``exports`` (which draws on the page views) so the importer and
the command line's output need nothing heavier than pandas.
"""

from __future__ import annotations

import re

import pandas as pd

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


def write_csv(frame: pd.DataFrame, target=None, **kwargs):
    """THE way the tool writes CSV: ``frame`` neutralised, no index, ``\\n`` line ends, to ``target``
    (a path or an open file; ``None`` returns the text). ``kwargs`` go to ``DataFrame.to_csv``."""
    return csv_safe(frame).to_csv(target, index=False, lineterminator="\n", **kwargs)
