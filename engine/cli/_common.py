"""Helpers shared by the CLI commands: opening the store and writing tables in the asked format."""

from __future__ import annotations

import argparse
import json
import sys

import pandas as pd

from ..store import Store, open_store


def store_from_args(args: argparse.Namespace, *, ensure_default: bool = True, keep_open: bool = True) -> Store:
    """The store named by --db / $LENS_DB, waiting up to --lock-wait seconds if another process
    (the app in the middle of a page, another command) holds the file. Long runs (judge, generate,
    perturb) pass ``keep_open=False`` so the file is free between their writes."""
    return open_store(
        getattr(args, "db", None),
        ensure_default=ensure_default,
        keep_open=keep_open,
        lock_wait_s=getattr(args, "lock_wait", 30.0),
    )


def add_format(parser: argparse.ArgumentParser, default: str = "table") -> None:
    parser.add_argument("--format", choices=("csv", "json", "table"), default=default)


def write_frame(df: pd.DataFrame, fmt: str, out=None) -> None:
    """Print a frame: CSV (header + rows, nothing else), JSON records, or an aligned table."""
    out = out or sys.stdout
    if fmt == "csv":
        df.to_csv(out, index=False, lineterminator="\n")
    elif fmt == "json":
        out.write(df.to_json(orient="records", indent=2, double_precision=10))
        out.write("\n")
    else:
        with pd.option_context("display.max_rows", None, "display.max_columns", None, "display.width", 200):
            out.write(df.to_string(index=False) + "\n")


def write_json(obj: object, out=None) -> None:
    out = out or sys.stdout
    json.dump(obj, out, indent=2, default=str)
    out.write("\n")
