"""Rows of a pandas frame for Python loops, typed as what they are to a type checker: records whose
cells have their column's dtype, which no annotation can state (the pandas stubs type each cell as any
scalar, so ``int(row.variant)`` would not check although the column is an integer column)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pandas as pd


def records(frame: pd.DataFrame) -> Iterable[Any]:
    """``frame.itertuples(index=False)``: one named tuple per row, fields by column name."""
    return frame.itertuples(index=False)
