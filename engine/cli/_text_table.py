"""The aligned text table of plain columns without pandas: the same text as pandas'
``DataFrame.to_string(index=False)`` for integer, finite float and text columns.

Why: the plain ``leaderboard`` prints its table from arrays (``engine.ranking.board.BoardRows``), and a
command that imports pandas (and the pyarrow pandas imports at its own start) cannot start within twice
a bare ``import duckdb, numpy`` (issue 26, point 5). Any other column (missing values, booleans, dates,
infinities or NaN, texts with line breaks) is not handled here: ``text_table`` answers None and the caller
prints through pandas, so the text is pandas' own in every case (tests/test_text_table.py compares both
on random tables).

The rules, as pandas 2-3 applies them without an index: every cell right-aligned to its column's width,
columns joined by one space; a numeric column's header gets one leading space; integers as ``{:d}``;
floats as ``{:.6f}`` (display.precision) with the trailing zeros every cell shares trimmed to one after
the point, or as ``{:.6e}`` when some nonzero value is below 1e-6 in size, or when some value is above
1e6 in size and a fixed cell would be longer than 12 characters.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import numpy as np

PRECISION = 6
"""pandas' display.precision: digits after the point of a float cell."""

_DECIMAL = re.compile(r"^\s*[+-]?[0-9]+\.[0-9]*$")
_NOT_PRINTED_AS_IS = re.compile(r"[\t\r\n]")


def float_cells(values: np.ndarray) -> list[str]:
    """Finite floats as pandas prints a float column: fixed with ``PRECISION`` digits and the shared
    trailing zeros trimmed, or scientific where fixed would hide a small value or be too long."""
    fixed = _trim_zeros([f"{v:.{PRECISION}f}" for v in values.tolist()])
    size = np.abs(values)
    too_long = bool(fixed) and max(len(c) for c in fixed) > PRECISION + 6
    small = bool(((size < 10.0 ** -PRECISION) & (size > 0)).any())
    if small or (too_long and bool((size > 1e6).any())):
        return [f"{v:.{PRECISION}e}" for v in values.tolist()]
    return fixed


def _trim_zeros(cells: list[str]) -> list[str]:
    """Drop the trailing zeros all decimal cells share, keeping one digit after the point."""
    is_number = [_DECIMAL.match(c) is not None for c in cells]
    if not any(is_number):
        return cells
    while all(c.endswith("0") for c, num in zip(cells, is_number, strict=True) if num):
        cells = [c[:-1] if num else c for c, num in zip(cells, is_number, strict=True)]
    return [c + "0" if num and c.endswith(".") else c for c, num in zip(cells, is_number, strict=True)]


def column_cells(values: Any) -> tuple[list[str], bool] | None:
    """(the cells of one column, whether it is numeric) or None for a column this module leaves to pandas."""
    if isinstance(values, list):
        if all(isinstance(v, str) and not _NOT_PRINTED_AS_IS.search(v) for v in values):
            return list(values), False
        return None
    if not isinstance(values, np.ndarray) or values.ndim != 1:
        return None
    if values.dtype.kind in "iu":
        return [f"{v:d}" for v in values.tolist()], True
    if values.dtype == np.float64 and bool(np.isfinite(values).all()):
        return float_cells(values), True
    return None


def text_table(names: Sequence[str], columns: Sequence[Any]) -> str | None:
    """The columns (numpy integer or float64 arrays, lists of texts) under their names as pandas'
    ``to_string(index=False)`` writes them, without a final newline; None when some column is of a kind
    left to pandas, or there is no row or no column."""
    if not names or len(names) != len(columns):
        return None
    blocks = []
    for name, values in zip(names, columns, strict=True):
        got = column_cells(values)
        if got is None or not got[0] or _NOT_PRINTED_AS_IS.search(str(name)):
            return None
        cells, numeric = got
        header = (" " if numeric else "") + str(name)
        width = max(len(header), *(len(c) for c in cells))
        blocks.append([header.rjust(width)] + [c.rjust(width) for c in cells])
    if len({len(b) for b in blocks}) != 1:
        return None
    return "\n".join(" ".join(row) for row in zip(*blocks, strict=True))
