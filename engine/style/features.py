"""The style features of a verdict: four counts per answer, and where they come from.

A style-controlled fit (LMArena's "style control") explains part of each verdict by how the two answers
look: how long they are and how much markdown they use. Each verdict carries, per side, four raw counts
(``STYLE_FEATURES``): the answer's tokens, markdown headers, list items and bold spans. This module
names them and gives the columns that hold them (``STYLE_COLUMNS``: ``tokens_a, headers_a, lists_a,
bold_a, tokens_b, headers_b, lists_b, bold_b``, ``_a`` for model_a's answer); the fit turns them into
(a - b) / (a + b) and standardises them itself (that is part of the model, never of the data).
"""

from __future__ import annotations

import numpy as np

STYLE_FEATURES: tuple[str, ...] = ("tokens", "headers", "lists", "bold")
"""LMArena's four style features, in this order: answer tokens, header count, list count, bold count."""

STYLE_COLUMNS: tuple[str, ...] = tuple(f"{f}_{side}" for side in ("a", "b") for f in STYLE_FEATURES)
"""The per-verdict columns of the raw counts: model_a's four features, then model_b's four."""


def style_select(columns: set[str]) -> list[str]:
    """SELECT expressions ``s0 .. s7`` giving a verdict relation's counts in ``STYLE_COLUMNS`` order
    (NULL where the relation has no such column)."""
    return [f"{c if c in columns else 'NULL'}::DOUBLE AS s{k}" for k, c in enumerate(STYLE_COLUMNS)]


def style_matrix(out: dict) -> np.ndarray:
    """The (rows, 8) float64 counts from a ``fetchnumpy`` result holding ``s0 .. s7`` (NULL read as NaN)."""
    cols = []
    for k in range(len(STYLE_COLUMNS)):
        x = out[f"s{k}"]
        cols.append(x.filled(np.nan).astype(np.float64) if np.ma.isMaskedArray(x)
                    else np.asarray(x, np.float64))
    return np.column_stack(cols) if cols[0].size else np.zeros((0, len(STYLE_COLUMNS)))
