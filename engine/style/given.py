"""Style counts a verdict file gives: a Chatbot-Arena ``conv_metadata`` field, or explicit columns.

Two ways a file carries the four counts of each answer (``STYLE_COLUMNS``):

- ``conv_metadata``, as LMArena publishes its battles (an object per battle; JSON text in a CSV cell):
  ``sum_assistant_a_tokens`` is model_a's tokens; ``header_count_a`` ({h1..h6}), ``list_count_a``
  ({ordered, unordered}) and ``bold_count_a`` ({"**", "__"}) are objects whose values are summed into
  one count each (a plain number is taken as the count itself); ``_b`` likewise for model_b. Other keys
  are ignored; a key that is missing or null gives no count (NaN).
- explicit columns ``tokens_a, headers_a, lists_a, bold_a, tokens_b, headers_b, lists_b, bold_b``.

Where a row has both, conv_metadata's count is kept and the column fills what it lacks. A count must be
a number that is finite and not negative; any other value (text that is no number, NaN, infinity, a
negative number, an object where a number belongs) is the row's problem, named with its field and
value, and the import refuses the row.
"""

from __future__ import annotations

import json
import math
import operator
from collections.abc import Callable, Mapping, Sequence
from itertools import repeat

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from engine.store.schema import STYLE_COLUMNS

CONV_METADATA = "conv_metadata"
"""The Chatbot-Arena field holding a battle's style counts."""

META_KEYS: dict[str, str] = {
    "tokens": "sum_assistant_{s}_tokens",
    "headers": "header_count_{s}",
    "lists": "list_count_{s}",
    "bold": "bold_count_{s}",
}
"""Per feature, the conv_metadata key of side ``s`` (a or b) that holds it."""

Flag = Callable[[np.ndarray, Callable[[int], str]], None]


def given_counts(col: Callable[[str], Sequence], n: int, flag: Flag) -> np.ndarray:
    """The (n, 8) counts in ``STYLE_COLUMNS`` order read from the raw cells ``col(name)`` of the explicit
    columns and of ``conv_metadata``; NaN where neither gives one. Each bad value is reported through
    ``flag(mask, reason_of_row)`` (the normaliser's way of naming a row's problem)."""
    out = np.full((n, len(STYLE_COLUMNS)), np.nan)
    for k, name in enumerate(STYLE_COLUMNS):
        cells = col(name)
        values, bad = _numbers(cells)
        out[:, k] = np.where(bad, np.nan, values)
        flag(bad, _reason_of(name, cells))
    meta = col(CONV_METADATA)
    if not all_none(meta):
        from_meta, problems = _conv_metadata(meta)
        has = np.isfinite(from_meta)
        out[has] = from_meta[has]
        bad = np.array([p is not None for p in problems], dtype=bool)
        flag(bad, lambda i: str(problems[i]))
    return out


def all_none(cells: Sequence) -> bool:
    """Is every cell None (a column the file does not have)? A list is counted in C, a hundred times
    faster than a Python pass; a cell whose ``== None`` is no plain truth value (pandas' NA, an array)
    sends it back to the pass by identity."""
    if isinstance(cells, list):
        try:
            return cells.count(None) == len(cells)
        except (TypeError, ValueError):
            pass
    return all(map(operator.is_, cells, repeat(None)))


def _reason_of(name: str, cells: Sequence) -> Callable[[int], str]:
    """The sentence part naming row ``i``'s bad ``name`` cell."""
    return lambda i: f"{name} {_shown(cells[i])} {_why(cells[i])}"


def _numbers(cells: Sequence) -> tuple[np.ndarray, np.ndarray]:
    """(value, bad) per cell: NaN and False where the cell is absent (None or blank text); bad where it
    is present but no finite, non-negative number. A numeric or all-text column is read in bulk."""
    n = len(cells)
    if n == 0 or (isinstance(cells, list) and all_none(cells)):
        return np.full(n, np.nan), np.zeros(n, dtype=bool)
    arr = _arrow(cells)
    if arr is not None and (pa.types.is_integer(arr.type) or pa.types.is_floating(arr.type)):
        present = np.asarray(arr.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
        values = np.asarray(pc.cast(arr, pa.float64()).to_numpy(zero_copy_only=False), dtype=np.float64)
        values = np.where(present, values, np.nan)
        with np.errstate(invalid="ignore"):
            bad = present & ~(np.isfinite(values) & (values >= 0))
        return values, bad
    if arr is not None and pa.types.is_string(arr.type):
        trimmed = pc.utf8_trim_whitespace(arr)
        present = np.asarray(pc.fill_null(pc.greater(pc.utf8_length(trimmed), 0), False)
                             .to_numpy(zero_copy_only=False), dtype=bool)
        try:
            num = pc.cast(pc.if_else(pa.array(present), trimmed, pa.scalar(None, pa.string())), pa.float64())
            values = np.asarray(pc.fill_null(num, np.nan).to_numpy(zero_copy_only=False), dtype=np.float64)
            with np.errstate(invalid="ignore"):
                bad = present & ~(np.isfinite(values) & (values >= 0))
            return np.where(present, values, np.nan), bad
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            pass  # some cell is no plain number: cell by cell says which
    pairs = [_one(v) for v in cells]
    values = np.array([p[0] for p in pairs], dtype=np.float64)
    bad = np.array([p[1] for p in pairs], dtype=bool)
    return values, bad


def _arrow(cells: Sequence) -> pa.Array | None:
    """The cells as one Arrow array (NaN kept as a value, not a null), or None for mixed cells."""
    arrow = getattr(cells, "arrow", None)  # a CSV column read in bulk (engine.ingest.csv_bulk.TextCells)
    if arrow is not None:
        return arrow
    if any(isinstance(v, bool | np.bool_) for v in cells):
        return None
    try:
        return pa.array(list(cells), from_pandas=False)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
        return None


def _one(v: object) -> tuple[float, bool]:
    """(value, bad) of one cell: absent → (NaN, False)."""
    if v is None:
        return math.nan, False
    if isinstance(v, bool | np.bool_) or not isinstance(v, int | float | str | np.integer | np.floating):
        return math.nan, True
    if isinstance(v, str):
        s = v.strip()
        if not s:
            return math.nan, False
        try:
            x = float(s)
        except ValueError:
            return math.nan, True
    else:
        x = float(v)
    return (x, False) if math.isfinite(x) and x >= 0 else (math.nan, True)


def _why(v: object) -> str:
    """Why a count cell was refused, in words."""
    if isinstance(v, bool | np.bool_) or not isinstance(v, int | float | str | np.integer | np.floating):
        return "is not a number"
    try:
        x = float(v.strip() if isinstance(v, str) else v)
    except ValueError:
        return "is not a number"
    if math.isnan(x):
        return "is NaN, not a count"
    if math.isinf(x):
        return "is not a finite number"
    return "is negative; a count is 0 or more"


def _shown(v: object) -> str:
    """A cell quoted for a message (cut to 60 characters)."""
    text = v if isinstance(v, str) else json.dumps(v, default=str) if isinstance(v, dict | list) else str(v)
    return repr(text if len(text) <= 60 else text[:60] + "…")


def _conv_metadata(cells: Sequence) -> tuple[np.ndarray, list[str | None]]:
    """Per cell: the eight counts a conv_metadata object gives (NaN where it gives none) and its problem."""
    n = len(cells)
    out = np.full((n, len(STYLE_COLUMNS)), np.nan)
    problems: list[str | None] = [None] * n
    for i in range(n):
        v = cells[i]
        if v is None or (isinstance(v, float) and math.isnan(v)) or (isinstance(v, str) and not v.strip()):
            continue
        if isinstance(v, str):
            try:
                v = json.loads(v)
            except ValueError:
                problems[i] = f"{CONV_METADATA} {_shown(v)} is not a JSON object"
                continue
        if not isinstance(v, Mapping):
            problems[i] = f"{CONV_METADATA} {_shown(v)} is not an object"
            continue
        found: list[str] = []
        for k, column in enumerate(STYLE_COLUMNS):
            feature, side = column.rsplit("_", 1)
            key = META_KEYS[feature].format(s=side)
            value, problem = _meta_count(v.get(key), f"{CONV_METADATA}.{key}")
            out[i, k] = value
            if problem:
                found.append(problem)
        problems[i] = "; ".join(found) or None
    return out, problems


def _meta_count(v: object, label: str) -> tuple[float, str | None]:
    """One conv_metadata count: a number, or an object whose values are summed; (NaN, None) when absent."""
    if v is None:
        return math.nan, None
    if isinstance(v, Mapping):
        total = 0.0
        for key, part in v.items():
            if part is None:
                continue
            x, bad = _one(part)
            if bad:
                return math.nan, f"{label}.{key} {_shown(part)} {_why(part)}"
            total += x
        return total, None
    x, bad = _one(v)
    return (math.nan, f"{label} {_shown(v)} {_why(v)}") if bad else (x, None)
