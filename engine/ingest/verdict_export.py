"""Verdicts written out again: a dataset exported so that importing the file gives it back, and an
import's rejected rows. Every file goes through a temp file and a rename, so a failure leaves none.
"""

from __future__ import annotations

import io
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from engine.errors import LensError
from engine.ingest.csv_cells import write_csv
from engine.ingest.limits import NAME_MAX_CHARS, TEXT_MAX_CHARS
from engine.ingest.verdicts import ValidationReport
from engine.store.connection import Store
from engine.store.datasets import require_dataset
from engine.store.schema import VERDICT_COLUMNS

EXPORT_FORMATS: tuple[str, ...] = ("csv", "jsonl", "parquet")
EXPORT_COLUMNS: tuple[str, ...] = tuple(
    c for c in VERDICT_COLUMNS if c not in ("dataset", "source_file", "source_line")
)
"""Exported columns: everything a re-import needs to give back the same verdicts."""


def writable_path(path: str | os.PathLike[str], what: str) -> Path:
    """``path`` as a Path if a file can be created there (probed with a temp file, removed again)."""
    p = Path(path)
    if p.is_dir():
        raise LensError(f"Cannot write {what} to {p}: it is a folder; give a file name.")
    if not p.parent.is_dir():
        raise LensError(f"Cannot write {what} to {p}: there is no folder {p.parent}.")
    try:
        fd, probe = tempfile.mkstemp(dir=p.parent, prefix=f".{p.name}.", suffix=".probe")
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise LensError(f"Cannot write {what} to {p} ({exc.strerror or exc}).") from exc
    return p


def atomic_write(path: str | os.PathLike[str], write, what: str) -> Path:
    """Call ``write(tmp_path)`` on a temp file beside ``path``, then rename it onto ``path``, so a
    failure leaves no half-written file; an OSError becomes a LensError naming ``what``."""
    p = writable_path(path, what)
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(dir=p.parent, prefix=f".{p.name}.", suffix=".tmp")
        os.close(fd)
        write(tmp)
        os.replace(tmp, p)
        tmp = None
    except OSError as exc:
        raise LensError(f"Cannot write {what} to {p} ({exc.strerror or exc}).") from exc
    finally:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
    return p


def prepare_rejected(path: str | os.PathLike[str], inputs: Sequence[str | os.PathLike[str]] = ()) -> Path:
    """Check, before anything is stored, that the rejected rows can be written to ``path``:
    not a folder, the folder exists and takes a new file, and it is not one of the ``inputs``."""
    p = writable_path(path, "the rejected rows")
    for src in inputs:
        try:
            same = p.exists() and p.samefile(src)
        except OSError:
            same = False
        if same:
            raise LensError(
                f"The rejected rows would overwrite the input file {src}; give another --rejected path."
            )
    return p


def write_rejected(report: ValidationReport, path: str | os.PathLike[str]) -> int:
    """The rejected rows (file, line, reason, original fields) as CSV; returns the row count.

    Written to a temp file and renamed, so a failure leaves no partial file (LensError).
    """
    def write(tmp: str) -> None:
        with open(tmp, "w", encoding="utf-8", newline="") as fh:
            for k, chunk in enumerate(report.iter_rejected()):
                write_csv(chunk, fh, header=k == 0)
            if report.n_rejected == 0:
                write_csv(report.rejected_head(0), fh)

    atomic_write(path, write, "the rejected rows")
    return report.n_rejected


def export_frame(store: Store, dataset: str) -> pd.DataFrame:
    """The dataset's verdicts in the import format (winner ``invalid`` written as ``error``)."""
    require_dataset(store, dataset)
    df = store.verdicts(dataset)[list(EXPORT_COLUMNS)]
    _check_export_limits(df, dataset)
    return df.assign(winner=df["winner"].replace({"invalid": "error"}))


def _check_export_limits(df: pd.DataFrame, dataset: str) -> None:
    """Refuse to write a file the import would refuse: a name or text over the import's limits
    (rows stored by other means than an import, e.g. a judge reply, may be longer)."""
    for col, limit, what in (
        *(
            (c, NAME_MAX_CHARS, "name")
            for c in ("prompt_id", "model_a", "model_b", "judge", "category", "annotator")
        ),
        ("explanation", TEXT_MAX_CHARS, "text"),
    ):
        lens = df[col].astype(object).map(lambda v: len(v) if isinstance(v, str) else 0)
        if len(lens) and lens.max() > limit:
            i = int(lens.to_numpy().argmax())
            raise LensError(
                f"Verdict {i + 1} of {dataset!r} has a {col} of {int(lens.iloc[i]):,} characters, over the "
                f"import's limit of {limit:,} for a {what}; the exported file could not be imported again."
            )


def export_verdicts(store: Store, dataset: str, path_or_buffer, fmt: str = "csv") -> int:
    """Write the dataset's verdicts as csv, jsonl or parquet so that importing them gives them back.

    A path is written through a temp file and a rename (no partial file; LensError on failure).
    """
    if fmt not in EXPORT_FORMATS:
        raise LensError(f"Cannot export as {fmt!r}; use one of {', '.join(EXPORT_FORMATS)}.")
    df = export_frame(store, dataset)
    if isinstance(path_or_buffer, str | os.PathLike):
        atomic_write(path_or_buffer, lambda tmp: _write_export(df, tmp, fmt), f"the verdicts of {dataset!r}")
    else:
        _write_export(df, path_or_buffer, fmt)
    return int(len(df))


def _write_export(df: pd.DataFrame, target, fmt: str) -> None:
    if fmt == "csv":
        write_csv(df, target)  # formula-like cells neutralised (engine/views/exports.py); jsonl/parquet raw
    elif fmt == "jsonl":
        text = df.to_json(orient="records", lines=True, force_ascii=False)
        if isinstance(target, str | os.PathLike):
            Path(target).write_text(text, encoding="utf-8")
        elif isinstance(target, io.TextIOBase):
            target.write(text)
        else:
            target.write(text.encode("utf-8"))
    else:
        df.to_parquet(target, index=False)
