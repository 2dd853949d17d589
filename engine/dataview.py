"""What the Data page says and lists: the datasets table as shown, and an import refusal worded
for the page (the engine's own message names the command line's flag).
"""

from __future__ import annotations

import pandas as pd

SKIP_LABEL = "Import only the valid rows"
"""The Data page's checkbox that stores the valid rows of a file with rejected ones."""

DATASET_COLUMNS = ["name", "version", "verdicts", "invalid", "judges", "prompts", "description", "source",
                   "synthetic", "updated_at"]


def datasets_view(frame: pd.DataFrame) -> pd.DataFrame:
    """``Store.datasets()`` as the page lists it: known columns first, missing text as "—"."""
    cols = [c for c in DATASET_COLUMNS if c in frame.columns] + [c for c in frame.columns if c not in DATASET_COLUMNS]
    out = frame[cols].copy()
    for col in ("description", "source"):
        if col in out.columns:
            out[col] = out[col].astype(object).where(out[col].notna() & (out[col].astype(str) != ""), "—")
    return out


def refusal_message(result) -> str:
    """One sentence for a refused import (``engine.ingest.ImportResult``), naming the page's
    checkbox instead of the command line's flag."""
    if result.rows_rejected and result.rows_stored == 0 and result.report.n_good:
        good = result.report.n_good
        return (f"Nothing was stored: {result.rows_rejected} of {result.rows_read} rows were rejected. Fix them "
                f"in the file, or tick “{SKIP_LABEL}” to store the other {good:,}.")
    if result.report.n_good == 0:
        return "Nothing was stored: the file has no valid row."
    return f"Nothing was stored: {result.message}."
