"""What the Data page says and lists: the datasets table as shown, an import refusal worded
for the page (the engine's own message names the command line's flag), and any error text a
page shows, with server file paths cut down to their file names.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable

import pandas as pd

SKIP_LABEL = "Import only the valid rows"
"""The Data page's checkbox that stores the valid rows of a file with rejected ones."""

DATASET_COLUMNS = ["name", "version", "verdicts", "battles", "invalid", "judges", "prompts", "description",
                   "source", "synthetic", "updated_at"]


def datasets_view(frame: pd.DataFrame) -> pd.DataFrame:
    """``Store.datasets()`` as the page lists it: version counted per dataset, known columns first, "—" for no
    text."""
    if "revision" in frame.columns:  # the store-wide number keys caches; users see the dataset's own count
        frame = frame.drop(columns="version").rename(columns={"revision": "version"})
    cols = [c for c in DATASET_COLUMNS if c in frame.columns] + [
        c for c in frame.columns if c not in DATASET_COLUMNS
    ]
    out = frame[cols].copy()
    for col in ("description", "source"):
        if col in out.columns:
            out[col] = out[col].astype(object).where(out[col].notna() & (out[col].astype(str) != ""), "—")
    if "source" in out.columns:  # a command-line import records the file's server path
        out["source"] = [v if v == "—" else without_paths(str(v)) for v in out["source"]]
    return out


_ABS_PATH = re.compile(r"(?<![\w.~:/\\-])(?:[A-Za-z]:\\|/)(?:[^\s'\"`<>|/\\]+[/\\])+[^\s'\"`<>|/\\]*")
"""An absolute POSIX or Windows path of at least two parts (a URL's ``//`` does not start one)."""
_TRAILING = ".,;:)]}"


def _name_only(match: re.Match) -> str:
    path = match.group(0)
    core = path.rstrip(_TRAILING)
    name = re.split(r"[/\\]", core)[-1] or core
    return name + path[len(core):]


def file_name(name: str) -> str:
    """The last part of an uploaded file's name (a client may send a path; the page and every message
    about the file use the name alone)."""
    return re.split(r"[/\\]", str(name))[-1] or str(name)


def without_paths(text: str, paths: Iterable[str | os.PathLike[str]] = ()) -> str:
    """``text`` with every server file path replaced by its file name: the ``paths`` given (the
    store file, a temp folder; matched whole, spaces and all) first, then any other absolute path."""
    out = str(text)
    for p in sorted({os.fspath(p) for p in paths if p}, key=len, reverse=True):
        out = out.replace(p, os.path.basename(p.rstrip("/\\")) or p)
    return _ABS_PATH.sub(_name_only, out)


COLUMNS_SHOWN = 40
"""File columns the upload's summary line names at most (the rest counted)."""


def columns_line(columns: list[str]) -> str:
    """The upload's columns for its summary line: the first ``COLUMNS_SHOWN`` and how many more; — for
    none (a file that cannot be read: the validation says why)."""
    if not columns:
        return "—"
    shown = ", ".join(columns[:COLUMNS_SHOWN])
    return shown + (f" … and {len(columns) - COLUMNS_SHOWN:,} more" if len(columns) > COLUMNS_SHOWN else "")


def refusal_message(result) -> str:
    """One sentence for a refused import (``engine.ingest.importer.ImportResult``), naming the page's
    checkbox instead of the command line's flag."""
    if result.rows_rejected and result.rows_stored == 0 and result.report.n_good:
        good = result.report.n_good
        return (
            f"Nothing was stored: {result.rows_rejected} of {result.rows_read} rows were rejected. Fix them "
            f"in the file, or tick “{SKIP_LABEL}” to store the other {good:,}."
        )
    if result.report.n_good == 0:
        return "Nothing was stored: the file has no valid row."
    message = result.message.replace("use --replace to replace the dataset",
                                      "delete the dataset first, or import the file as a new dataset")
    return f"Nothing was stored: {message}."
