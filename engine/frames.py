"""pandas for the engine: rows of a frame for Python loops, and ``pd``, the pandas module imported on the
first use of one of its names.

Why the lazy ``pd``: the plain ``leaderboard`` builds and prints its table from arrays and never needs
pandas (issue 26, point 5: start-up at most twice a bare ``import duckdb, numpy``; pandas and the
pyarrow it imports at its own start cost more than that alone). The modules on that path name pandas
in functions other commands run; they take ``pd`` from here, so pandas is imported when one of those
functions first runs, not when the module is imported. A type checker sees the real module.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd


class LazyModule:
    """A module imported on the first attribute read (``pd.DataFrame``); each name read is then kept on
    this object, so later reads are plain attribute reads. Never put in ``sys.modules``: a process that
    never reads a name never imports the module (tests/test_startup_imports.py checks ``sys.modules``)."""

    def __init__(self, name: str) -> None:
        object.__setattr__(self, "_name", name)

    def __getattr__(self, attr: str) -> Any:
        value = getattr(importlib.import_module(object.__getattribute__(self, "_name")), attr)
        object.__setattr__(self, attr, value)
        return value

    def __repr__(self) -> str:
        return f"<lazy module {object.__getattribute__(self, '_name')!r}>"


if not TYPE_CHECKING:
    pd = LazyModule("pandas")


def records(frame: pd.DataFrame) -> Iterable[Any]:
    """``frame.itertuples(index=False)``: one named tuple per row, fields by column name."""
    return frame.itertuples(index=False)
