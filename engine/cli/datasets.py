"""``datasets``: list what the store holds; ``rename``, ``delete``, ``export`` a dataset; ``attach`` Parquet
in place."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from engine.cli._common import add_format, store_from_args, write_frame
from engine.cli._dataset_map import add_map_parser
from engine.cli.imports import add_value_options, value_options
from engine.errors import LensError
from engine.ingest.attach_options import ATTACH_FORMATS, AttachOptions
from engine.ingest.importer import dataset_table, delete_dataset, rename_dataset
from engine.ingest.verdict_export import (
    EXPORT_FORMATS,
    export_frame,
    export_to,
    map_left_out_note,
    texts_left_out,
    texts_left_out_note,
)


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``datasets`` and its ``attach``/``rename``/``delete``/``export`` subcommands to the parser."""
    p = subparsers.add_parser("datasets", help="list datasets; rename, delete or export one",
                              description="Without a subcommand: one row per dataset with its counts.")
    add_format(p)
    p.set_defaults(func=run_list)
    sub = p.add_subparsers(dest="action", metavar="ACTION")
    r = sub.add_parser("rename", help="rename a dataset")
    r.add_argument("old")
    r.add_argument("new")
    r.set_defaults(func=run_rename)
    d = sub.add_parser("delete", help="delete a dataset with its verdicts, prompts and answers")
    d.add_argument("name")
    d.set_defaults(func=run_delete)
    e = sub.add_parser("export", help="write a dataset's verdicts and texts in the import format")
    e.add_argument("name")
    e.add_argument("path", help="output file (format from its extension unless --format)")
    e.add_argument("--format", dest="export_format", choices=EXPORT_FORMATS, default=None)
    e.set_defaults(func=run_export)
    a = sub.add_parser(
        "attach",
        help="register Parquet files (a glob) as a dataset read in place, without copying",
        description="The files stay where they are and DuckDB reads them on every use "
                    "(engine/store/attached.py); "
        "columns prompt_id, model_a, model_b, winner are required, judge, variant, turn, order, "
        "annotator, prob_a, battle_id, tstamp are used when present. The import's column, value and "
        "name options apply on every read (kept with the dataset).",
    )
    a.add_argument("name")
    a.add_argument("files", help="a path or glob of Parquet files, e.g. 'logs/*.parquet' (quote it)")
    a.add_argument("--description")
    a.add_argument("--format", dest="attach_format", choices=ATTACH_FORMATS, default=None,
                   help="parquet: canonical (or --map-ped) columns; arena: Chatbot Arena battle logs (judge "
                   "human, the voter as annotator, order AB); default: arena when the files have its fields")
    add_value_options(a)
    a.set_defaults(func=run_attach)
    add_map_parser(sub)


def run_list(args: argparse.Namespace) -> int:
    """Print one row per stored dataset with its counts; exit status."""
    store = store_from_args(args)
    try:
        write_frame(dataset_table(store), args.format)
    finally:
        store.close()
    return 0


def run_attach(args: argparse.Namespace) -> int:
    """Record a Parquet glob as a dataset read in place (nothing copied); exit status."""
    from engine.ingest.attach_checks import attach_parquet

    opts = value_options(args)  # checked before the files are read
    options = AttachOptions(args.attach_format, opts.column_map, opts.model_names, opts.judge_names,
                            opts.value_map, opts.set_columns)
    store = store_from_args(args)
    try:
        info = attach_parquet(store, args.name, args.files, args.description, options)
    finally:
        store.close()
    for note in info["notes"]:
        print(note)
    print(f"attached {info['verdicts']} verdicts in {info['files']} Parquet file(s) as dataset {args.name!r} "
          "(read in place, version 1)")
    return 0


def run_rename(args: argparse.Namespace) -> int:
    """Rename a dataset everywhere it is referenced, in one transaction; exit status."""
    store = store_from_args(args)
    try:
        rename_dataset(store, args.old, args.new)
        version = store.dataset_revision(args.new)
    finally:
        store.close()
    print(f"renamed {args.old!r} to {args.new!r} (version {version})")
    return 0


def run_delete(args: argparse.Namespace) -> int:
    """Delete a dataset and every row that belongs to it; exit status."""
    store = store_from_args(args)
    try:
        n = delete_dataset(store, args.name)
    finally:
        store.close()
    print(f"deleted dataset {args.name!r} ({n} verdicts)")
    return 0


def run_export(args: argparse.Namespace) -> int:
    """Write a dataset's verdicts and texts to a CSV, JSONL or Parquet file (format from the option or
    suffix); exit status."""
    fmt = args.export_format
    if fmt is None:
        suffix = Path(args.path).suffix.lower().lstrip(".")
        fmt = {"csv": "csv", "jsonl": "jsonl", "ndjson": "jsonl", "parquet": "parquet", "pq": "parquet"}.get(
            suffix
        )
        if fmt is None:
            raise LensError(f"Cannot tell the export format from {args.path!r}; add --format "
                            f"({', '.join(EXPORT_FORMATS)}).")
    store = store_from_args(args)
    try:
        frame = export_frame(store, args.name)  # a pair-count dataset: its pair counts
        counts = "wins_a" in frame.columns
        prompts, answers = texts_left_out(store, args.name)
        map_note = map_left_out_note(store, args.name)
    finally:
        store.close()  # not held while a FIFO waits for its reader
    out = export_to(args.path, frame, fmt, args.name)
    # written in place (/dev/stdout, a FIFO): the file may be this very stream, so the line goes to stderr
    print(f"wrote {len(frame)} {'model pairs (pair counts)' if counts else 'verdicts'} of {args.name!r} to "
          f"{args.path} ({fmt})", file=sys.stderr if out.in_place else sys.stdout)
    for note in (texts_left_out_note(args.name, prompts, answers), map_note):
        if note:
            print(f"note: {note}", file=sys.stderr)
    return 0
