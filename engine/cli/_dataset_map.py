"""``datasets map NAME [FILE]``: show how a dataset's model names reach the reference, or keep a map
with the dataset (engine.store.model_maps). Registered by ``engine/cli/datasets.py``."""

from __future__ import annotations

import argparse
import sys

from engine.cli._common import add_format, store_from_args, write_frame
from engine.ranking.reference import ARENA, keep_map, load_mapping_file, name_map_table
from engine.store.datasets import require_dataset
from engine.store.model_maps import stored_map
from engine.store.schema import DEFAULT_DATASET


def add_map_parser(sub: argparse._SubParsersAction) -> None:
    """Add ``map`` to the ``datasets`` subcommands."""
    m = sub.add_parser(
        "map",
        help="show how a dataset's model names map to the reference, or keep a map with the dataset",
        description="Without FILE: one row per model of the dataset with its reference name and how it "
        "was found (stored, shipped, exact, normalised: ignoring case and every character that is not a "
        "letter or digit) or why not (unmatched, ambiguous, not on the reference). With FILE (a CSV with "
        "columns model and arena_model, or reference_model; an empty name = not on the reference): keep "
        "it with the dataset, replacing the map it had. It is moved by a rename and removed by a delete.",
    )
    m.add_argument("name")
    m.add_argument("file", nargs="?", help="CSV map to keep with the dataset")
    m.add_argument("--clear", action="store_true", help="remove the map kept with the dataset")
    m.add_argument("--reference", default=ARENA,
                   help="reference to show the names against: 'arena' (the shipped snapshot) or a file")
    m.add_argument("--reference-category", help="category of a JSON reference (default: full)")
    add_format(m)
    m.set_defaults(func=run_map)


def run_map(args: argparse.Namespace) -> int:
    """Keep (FILE), clear (--clear) or show the dataset's model map; exit status."""
    from engine.errors import LensError

    if args.clear and args.file:
        raise LensError("Give either a map FILE to keep or --clear, not both.")
    mapping = load_mapping_file(args.file) if args.file else None  # refused before the store opens
    store = store_from_args(args, ensure_default=args.name == DEFAULT_DATASET)
    try:
        require_dataset(store, args.name)
        if mapping is not None or args.clear:
            rows = (mapping.rename(columns={"arena_model": "reference_model"}) if mapping is not None
                    else stored_map(store, args.name).iloc[:0])
            keep_map(store, args.name, rows)
            sys.stderr.write(
                f"note: dataset {args.name} now keeps "
                + (f"a map of {len(rows)} model(s)" if len(rows) else "no map") + " (version "
                f"{store.dataset_revision(args.name)}); its other names are matched by name.\n")
        table = name_map_table(store, args.name, args.reference_category, args.reference)
        placed = int(table["reference_model"].ne("").sum())
        notes = [f"{placed} of {len(table)} models have a reference name.", *table.attrs["notes"]]
        if mapping is not None:  # names kept in the map that no model of the dataset has match nothing
            unknown = sorted(set(rows["model"].astype(str).str.strip()) - set(table["model"].astype(str)))
            if unknown:
                shown = ", ".join(map(repr, unknown[:10])) + (f" and {len(unknown) - 10:,} more"
                                                              if len(unknown) > 10 else "")
                notes.append(f"{len(unknown):,} model(s) of the map are not models of dataset {args.name} "
                             f"({shown}); they match nothing until a model of that name is imported.")
    finally:
        store.close()
    write_frame(table, args.format)
    for line in notes:
        sys.stderr.write(f"note: {line}\n")
    return 0
