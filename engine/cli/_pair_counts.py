"""``import`` of pair-count files (issue 25, point 7): files whose columns are ``model_a, model_b, wins_a,
wins_b, ties[, both_bad]`` are stored as a dataset of counts (``engine.ingest.pair_count_files``), not
as verdicts. ``engine/cli/imports.py`` hands its arguments here first."""

from __future__ import annotations

import argparse

from engine.errors import LensError

VERDICT_ONLY_OPTIONS: tuple[tuple[str, str], ...] = (
    ("skip_invalid", "--skip-invalid"), ("rejected", "--rejected"), ("map", "--map"),
    ("judge_name", "--judge-name"), ("map_value", "--map-value"), ("judge", "--judge"),
    ("baseline_model", "--baseline-model"), ("format", "--format"),
)
"""Options that shape verdict rows; a pair-count file has none of those columns to shape."""


def pair_count_import(args: argparse.Namespace) -> int | None:
    """Import ``args.paths`` as pair counts when every file is a pair-count file and return the exit
    status; None when they are not (the verdict import goes on). A mix of both kinds is refused."""
    from engine.cli._common import store_from_args
    from engine.ingest.pair_count_files import import_pair_counts, is_pair_count_file, read_pair_count_files

    kinds = [is_pair_count_file(p) for p in args.paths]
    if not any(kinds):
        return None
    if not all(kinds):
        odd = next(str(p) for p, k in zip(args.paths, kinds, strict=True) if not k)
        raise LensError(f"{odd} is not a pair-count file while the others are; import them separately.")
    given = [flag for attr, flag in VERDICT_ONLY_OPTIONS
             if getattr(args, attr, None) not in (None, False, [])]
    if getattr(args, "judge_from", "column") != "column":
        given.append("--judge-from")
    if given:
        raise LensError(f"{', '.join(given)} shape verdict rows; a pair-count file has none (drop them).")
    if getattr(args, "model_name", None):
        raise LensError("--model-name is not applied to pair-count files; rename the models in the file.")
    if args.check:
        table = read_pair_count_files(args.paths)
        for sentence in table.sentences():
            print(sentence)
        print("checked only: nothing was stored")
        return 0
    store = store_from_args(args)
    try:
        result = import_pair_counts(store, args.paths, args.dataset, replace=args.replace)
    finally:
        store.close()
    for sentence in result.table.sentences():
        print(sentence)
    print(f"dataset {result.dataset!r} is now version {result.revision} (pair counts)")
    return 0
