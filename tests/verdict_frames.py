"""Canonical verdict frames for tests: partial rows filled with defaults, in the store's columns and
dtypes (one helper for the count-ranker, seam and mutation-kill tests)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from engine.store.schema import VERDICT_DTYPES

DEFAULTS = {
    "dataset": "d",
    "judge": "j",
    "variant": 0,
    "variant_kind": "original",
    "turn": 1,
    "category": None,
    "order": None,
    "prob_a": np.nan,
    "annotator": None,
    "explanation": None,
    "source_file": "f",
    "source_line": None,
    "battle_id": None,
    "tstamp": np.nan,
    "strength": None,
}


def canonical_frame(rows: list[dict], **defaults) -> pd.DataFrame:
    """A canonical verdict frame from partial rows (``defaults`` override DEFAULTS); source lines 1..n."""
    base = {k: v for k, v in {**DEFAULTS, **defaults}.items() if k in VERDICT_DTYPES}
    df = pd.DataFrame([{**base, **r} for r in rows])
    df["source_line"] = np.arange(1, len(df) + 1)
    return df[list(VERDICT_DTYPES)].astype(VERDICT_DTYPES)
