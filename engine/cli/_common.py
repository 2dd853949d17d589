"""Helpers shared by the CLI commands: opening the store and writing tables in the asked format."""

from __future__ import annotations

import argparse
import datetime
import itertools
import json
import sys
from collections.abc import Iterable
from typing import Literal

import numpy as np

from engine.errors import LensError
from engine.frames import pd
from engine.ingest.csv_cells import write_csv
from engine.ingest.shipped import open_store
from engine.store.connection import Store
from engine.store.datasets import dataset_judges  # noqa: F401  (re-exported: cli modules import it from here)
from engine.terminal import data_stream, escape_cell, on_terminal


def store_from_args(
    args: argparse.Namespace, *, ensure_default: bool = True, keep_open: bool = True
) -> Store:
    """The store named by --db / $LENS_DB, waiting up to --lock-wait seconds if another process
    (the app in the middle of a page, another command) holds the file. Long runs (judge, generate,
    perturb) pass ``keep_open=False`` so the file is free between their writes."""
    store = open_store(
        getattr(args, "db", None),
        ensure_default=ensure_default,
        keep_open=keep_open,
        lock_wait_s=getattr(args, "lock_wait", 30.0),
    )
    note_incomplete(store, args)
    return store


WRITING_COMMANDS = ("judge", "generate", "perturb", "import", "calls")
"""Commands that write a dataset or list runs themselves: no incompleteness note (a rerun of the
judge is how a dataset is completed; ``calls --runs`` shows every run's status)."""


def note_incomplete(store: Store, args: argparse.Namespace, err=None) -> None:
    """One sentence on stderr for each dataset the command shows or ranks that an unfinished judge,
    generate or perturb run left part-written (``engine.judging.completeness``): ``--dataset``, the
    ``datasets export`` NAME, or every dataset for ``datasets list``. stdout stays the command's own."""
    if getattr(args, "command", None) in WRITING_COMMANDS:
        return
    from engine.judging.completeness import incomplete_sentences

    names: list[str] | None
    if getattr(args, "command", None) == "datasets":
        action = getattr(args, "action", None)
        names = None if action in (None, "list") else [args.name] if action == "export" else []
    else:
        dataset = getattr(args, "dataset", None)
        names = [dataset] if isinstance(dataset, str) else []
    if names == []:
        return
    for sentence in incomplete_sentences(store, names):
        print(f"note: {sentence}", file=err or sys.stderr)


def check_judges(store: Store, dataset: str, judges, option: str = "--judge") -> None:
    """Refuse a judge the dataset does not have, listing the judges it has (one sentence); None passes.

    Why: a misspelt judge (gpt4 for gpt-4) otherwise selects nothing and reads as "no valid verdict"
    or, for agreement tables, as rows of zeros."""
    if judges is None:
        return
    wanted = [judges] if isinstance(judges, str) else list(judges)
    if not store.has_dataset(dataset):
        raise LensError(f"There is no dataset {dataset!r} in the store.")
    known = dataset_judges(store, dataset)
    unknown = [j for j in wanted if j not in known]
    if unknown:
        raise LensError(
            f"Dataset {dataset!r} has no judge {', '.join(map(repr, unknown))} ({option}); its judges are "
            f"{', '.join(known) or 'none'}."
        )


def pooled_judges_note(store: Store, dataset: str) -> str | None:
    """Without --judge the graphs of every judge are pooled, as in the app's first view; with several
    judges, one sentence naming them and the judge covering the most models
    (``engine.store.datasets``). None for a one-judge dataset."""
    from engine.store.datasets import dataset_choices

    if not store.has_dataset(dataset):
        return None
    choice = dataset_choices(store, dataset)
    if len(choice.judges) < 2:
        return None
    return (
        f"no --judge: the graphs of all {len(choice.judges)} judges are pooled ({', '.join(choice.judges)}), "
        f"as in the app's first view (all judges); --judge J gives one judge's view "
        f"({choice.default_judge} covers the most models)."
    )


def no_subcommand(sub: argparse._SubParsersAction, command: str):
    """The ``func`` of a command group run without a subcommand: one sentence listing the choices."""
    def refuse(args: argparse.Namespace) -> int:
        names = list(sub.choices)
        raise LensError(f"{command} needs one of {', '.join(names[:-1])} or {names[-1]}; "
                        f"see python -m engine {command} -h.")
    return refuse


def add_format(parser: argparse.ArgumentParser, default: str = "table") -> None:
    """Add ``--format`` (table, csv, json) so every command writes its table the same ways."""
    parser.add_argument("--format", choices=("csv", "json", "table"), default=default,
                        help=f"output: csv (header + rows), json or an aligned table (default {default})")


TERMINAL_ROWS = 40
"""A table printed to a terminal shows at most this many rows (the first 30 and the last 10)."""


_TICKS_PER_SECOND = {"s": 1, "ms": 10**3, "us": 10**6, "ns": 10**9}
_DATE_UNITS: tuple[Literal["s", "ms", "us", "ns"], ...] = ("s", "ms", "us", "ns")


def json_date_unit(df: pd.DataFrame) -> Literal["s", "ms", "us", "ns"]:
    """The ISO precision ``--format json`` writes times with: the finest any time of ``df`` needs (``s``,
    ``ms``, ``us`` or ``ns``), so no stored time loses a digit (a store's ``TIMESTAMP`` holds microseconds)
    and times in whole seconds read as before (``2026-11-27T18:21:25``). pandas writes every time of a frame
    to one unit. Times are the cells of date columns (any unit, with or without a zone) and the
    ``datetime`` cells of object columns; durations are written in their own precision whatever the unit."""
    need = 0
    for _, col in df.items():
        dates = isinstance(col.dtype, np.dtype) and col.dtype.kind == "M"
        if dates or isinstance(col.dtype, pd.DatetimeTZDtype):
            arr = col.dropna().array
            ticks = _TICKS_PER_SECOND[arr.unit]
            for rank, unit in enumerate(_TICKS_PER_SECOND):
                step = max(ticks // _TICKS_PER_SECOND[unit], 1)
                if (arr.asi8 % step == 0).all():
                    need = max(need, rank)
                    break
        elif col.dtype == object:
            for v in col.to_numpy():
                if isinstance(v, datetime.datetime) and not pd.isna(v):  # NaT is a datetime too
                    ns = getattr(v, "nanosecond", 0)
                    rank = 3 if ns else 2 if v.microsecond % 1000 else 1 if v.microsecond else 0
                    need = max(need, rank)
    return _DATE_UNITS[need]


def write_frame(df: pd.DataFrame, fmt: str, out=None) -> None:
    """Print a frame: CSV (header + rows, nothing else; cells a spreadsheet would evaluate get a
    leading ``'``), JSON records (raw values), or an aligned table.

    An empty frame is a header and no rows in every format (CSV: the header line; JSON: ``[]``;
    table: the column names and a line ``(no rows)``), never pandas' "Empty DataFrame" text.
    A table of more than ``TERMINAL_ROWS`` rows printed to a terminal shows its first 30 and last 10
    rows and a line saying how many are left out (2,401 keep-K rows are unreadable on a screen); in a
    pipe or file, and with --format csv or json, every row is printed.

    A table's names and texts are escaped (``engine.terminal``: a control character shows as
    ``\\x1b``, never acts); CSV is escaped on a terminal and exact in a pipe or file; JSON is ASCII."""
    out = out or sys.stdout
    if fmt == "table":
        df = _escaped_table(df)
    if fmt == "table" and len(df) > TERMINAL_ROWS and on_terminal(out):
        _write_cut_table(df.head(TERMINAL_ROWS - 10), df.tail(10), len(df), out)
    elif fmt == "table" and df.empty:
        out.write("  ".join(str(c) for c in df.columns) + "\n(no rows)\n")
    elif fmt == "csv":
        # formula-like cells neutralised for spreadsheets (engine/views/exports.py)
        write_csv(df, data_stream(out))
    elif fmt == "json":
        out.write("[]" if df.empty else df.to_json(orient="records", indent=2, double_precision=10,
                                                       date_format="iso", date_unit=json_date_unit(df)))
        out.write("\n")
    else:
        with pd.option_context("display.max_rows", None, "display.max_columns", None, "display.width", 200):
            out.write(df.to_string(index=False) + "\n")


def _write_cut_table(head: pd.DataFrame, tail: pd.DataFrame, total: int, out) -> None:
    """A terminal's view of a table of ``total`` rows (escaped): ``head`` (its first TERMINAL_ROWS - 10),
    a line saying how many rows are left out, ``tail`` (its last 10), aligned as one table."""
    with pd.option_context("display.max_rows", None, "display.max_columns", None, "display.width", 200):
        lines = pd.concat([head, tail]).to_string(index=False).splitlines()
    n_head = len(head) + 1  # the header line
    skipped = total - len(head) - len(tail)
    out.write("\n".join(lines[:n_head]) + "\n")
    out.write(
        f"… {skipped:,} of {total:,} rows not shown on a terminal; --format csv (or a pipe) prints "
        "all\n"
    )
    out.write("\n".join(lines[n_head:]) + "\n")


def write_frames(pieces: Iterable[pd.DataFrame], fmt: str, out=None) -> None:
    """``write_frame`` of the pieces' rows one after another (the same columns in each), writing each piece
    as it comes where the format allows, so a table too big to hold is never held whole: CSV (the header
    once) and JSON records piece by piece, and a table on a terminal keeps only the rows it shows (the
    first TERMINAL_ROWS and the last 10). The text is ``write_frame``'s of the pieces joined. An aligned
    table in a pipe or file lines up every row (its widths are the widest cell's), and JSON with dates
    writes every time to the finest unit any needs: those hold the rows and write them once."""
    out = out or sys.stdout
    pieces = iter(pieces)
    first = next(pieces, None)
    if first is None:
        raise ValueError("write_frames needs at least one piece (its columns name the header)")
    if (fmt == "table" and not on_terminal(out)) or fmt not in ("csv", "json", "table"):
        write_frame(pd.concat([first, *pieces], ignore_index=True), fmt, out)
        return
    if fmt == "table":
        head, tail, total = first.head(TERMINAL_ROWS), first.tail(10), len(first)
        for piece in pieces:
            total += len(piece)
            if len(head) < TERMINAL_ROWS:
                head = pd.concat([head, piece.head(TERMINAL_ROWS - len(head))], ignore_index=True)
            tail = pd.concat([tail, piece], ignore_index=True).tail(10)
        if total <= TERMINAL_ROWS:
            write_frame(head, fmt, out)
        else:
            _write_cut_table(_escaped_table(head.head(TERMINAL_ROWS - 10)), _escaped_table(tail), total, out)
        return
    wrote = False
    for piece in itertools.chain([first], pieces):
        if fmt == "csv":
            write_csv(piece, data_stream(out), header=not wrote)
            wrote = True
        elif not piece.empty:  # json: each piece's records, the brackets once
            if _holds_times(piece):
                raise ValueError("write_frames writes JSON without times (their unit is the whole table's); "
                                 "use write_frame")
            text = piece.to_json(orient="records", indent=2, double_precision=10, date_format="iso")
            out.write(("[\n" if not wrote else ",\n") + text[2:-2])
            wrote = True
    if fmt == "json":
        out.write("\n]\n" if wrote else "[]\n")


def _holds_times(df: pd.DataFrame) -> bool:
    """Whether any column of ``df`` is a time column or holds a time cell (``json_date_unit``'s times)."""
    for _, col in df.items():
        dtype = col.dtype
        if (isinstance(dtype, np.dtype) and dtype.kind == "M") or isinstance(dtype, pd.DatetimeTZDtype):
            return True
        if col.dtype == object and any(isinstance(v, datetime.datetime) for v in col.to_numpy()):
            return True
    return False


def write_plain_table(names: list[str], columns: list, out=None) -> bool:
    """Write columns (numpy arrays, lists of texts) as ``write_frame``'s aligned table would write their
    DataFrame, without pandas (``engine.cli._text_table``: the same text); texts and names escaped as
    there. False, writing nothing, where that text needs pandas (a column of another kind) or the rows
    would be cut for a terminal: the caller then writes the DataFrame."""
    out = out or sys.stdout
    if not columns or (len(columns[0]) > TERMINAL_ROWS and on_terminal(out)):
        return False
    from engine.cli._text_table import text_table

    escaped = [[escape_cell(v) for v in c] if isinstance(c, list) else c for c in columns]
    text = text_table([str(escape_cell(n)) for n in names], escaped)
    if text is None:
        return False
    out.write(text + "\n")
    return True


NOISE = 1e-12
"""A float within this of 0 is floating-point residue (a zero spread summed in another order), shown as 0."""


def rounded_for_table(df: pd.DataFrame, decimals: int = 4) -> pd.DataFrame:
    """``df`` with its float columns rounded to ``decimals`` for an aligned table, values within ``NOISE``
    of 0 shown as 0 (pandas would print 2.72e-17 and switch the whole column to scientific notation).
    CSV and JSON keep the full values; this is for a reader's eyes only."""
    out = df.copy()
    for c in out.columns:
        if pd.api.types.is_float_dtype(out[c]):
            values = out[c].to_numpy(dtype="float64", na_value=float("nan"))
            out[c] = pd.Series(values, index=out.index).mask(abs(values) < NOISE, 0.0).round(decimals)
    return out


def _escaped_table(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with its text cells and column names escaped to one line each (a copy when any text
    column exists; numbers untouched)."""
    text_cols = [c for c in df.columns if df[c].dtype == object or pd.api.types.is_string_dtype(df[c])
                 or isinstance(df[c].dtype, pd.CategoricalDtype)]
    if not text_cols and all(isinstance(c, str) and escape_cell(c) == c for c in df.columns):
        return df
    out = df.copy()
    for c in text_cols:
        col = out[c]
        if isinstance(col.dtype, pd.CategoricalDtype):
            out[c] = col.map(escape_cell)  # the categories escaped
        else:  # cell by cell in the column's own dtype: a missing cell reads as it did (``map`` let pandas
            # infer a new dtype from the whole column, which showed None as NaN only beside other texts)
            out[c] = pd.Series([escape_cell(v) for v in col.to_numpy(dtype=object)], index=col.index,
                               dtype=col.dtype)
    out.columns = [escape_cell(c) for c in df.columns]
    return out


def write_json(obj: object, out=None) -> None:
    """Write ``obj`` as indented JSON (non-JSON values as strings) for machine readers."""
    out = out or sys.stdout
    json.dump(obj, out, indent=2, default=str)
    out.write("\n")
