"""``import``: read verdict files, validate every row, store them (all-or-nothing by default)."""

from __future__ import annotations

import argparse
import contextlib
import sys
import unicodedata
from dataclasses import dataclass

from engine.cli._common import store_from_args
from engine.cli._pair_counts import pair_count_import
from engine.errors import LensError
from engine.ingest.constant_columns import SETTABLE, parse_set
from engine.ingest.early_insert import early_insert
from engine.ingest.importer import (
    ImportResult,
    import_source,
    log_refused,
    store_early,
    store_report,
    validate_paths,
)
from engine.ingest.limits import check_dataset_name, import_memory_limit, name_problem
from engine.ingest.shipped import NewStoreSeed
from engine.ingest.verdict_export import prepare_rejected, write_rejected
from engine.ingest.verdicts import FORMATS, judge_from_filename, parse_value_map
from engine.store.connection import Store


def _pairs(values: list[str] | None, what: str) -> dict[str, str]:
    out = {}
    for v in values or []:
        old, sep, new = v.partition("=")
        if not sep or not old.strip() or not new.strip():
            raise LensError(f"{what} {v!r} is not of the form OLD=NEW.")
        out[old.strip()] = _visible(new.strip(), what)
    return out


def _visible(name: str, what: str) -> str:
    """A name given on the command line (a new model or judge name), refused in one sentence when it
    would render blank or as a look-alike, before any file is read (each row would be refused for it)."""
    problem = name_problem(unicodedata.normalize("NFC", name))
    if problem:
        raise LensError(f"The name {name[:80]!r} given to {what} {problem}.")
    return name


@dataclass(frozen=True)
class ValueOptions:
    """How the rows of a file are read, shared by ``import`` and ``datasets attach``: column map, renamed
    models and judges, value map, constant columns."""

    column_map: dict[str, str]
    model_names: dict[str, str]
    judge_names: dict[str, str]
    value_map: dict[str, dict[str, str]]
    set_columns: dict[str, str]


def add_value_options(p: argparse.ArgumentParser) -> None:
    """The options that say how a file's columns and values read as verdicts (import and attach)."""
    p.add_argument("--map", action="append", metavar="FILECOL=COLUMN",
                   help="treat the file's column FILECOL as the canonical COLUMN (repeatable)")
    p.add_argument("--model-name", action="append", metavar="OLD=NEW", help="rename a model (repeatable)")
    p.add_argument("--judge-name", action="append", metavar="OLD=NEW", help="rename a judge (repeatable)")
    p.add_argument("--map-value", action="append", metavar="COLUMN:VALUE=NEW",
                   help="read VALUE in COLUMN as NEW before checking, e.g. winner:left=A (repeatable)")
    p.add_argument("--set", action="append", metavar="COLUMN=VALUE", dest="set_columns",
                   help="give every row VALUE in COLUMN, replacing the file's own values in it (import "
                   "says how many), e.g. order=AB or judge=human; COLUMN is one of "
                   f"{', '.join(SETTABLE)} (repeatable)")


def value_options(args: argparse.Namespace) -> ValueOptions:
    """The parsed ``add_value_options`` (each checked before any file is read: one sentence if bad)."""
    sets = parse_set(args.set_columns)
    if "judge" in sets:
        sets["judge"] = _visible(sets["judge"], "--set judge")
    return ValueOptions(_pairs(args.map, "--map"), _pairs(args.model_name, "--model-name"),
                        _pairs(args.judge_name, "--judge-name"), parse_value_map(args.map_value), sets)


def _file_judges(args: argparse.Namespace) -> dict[str, str] | None:
    """Each file's judge: ``--judge NAME`` for all files, ``--judge-from filename`` for one per file."""
    if args.judge and args.judge_from == "filename":
        raise LensError("Give either --judge NAME or --judge-from filename, not both.")
    if (args.judge or args.judge_from == "filename") and any(
            str(v).partition("=")[0].strip().lower() == "judge" for v in args.set_columns or []):
        raise LensError("Give either --set judge=NAME or --judge / --judge-from filename, not both.")
    if args.judge:
        return {str(p): _visible(args.judge, "--judge") for p in args.paths}
    if args.judge_from == "filename":
        judges = {str(p): judge_from_filename(str(p)) for p in args.paths}
        return judges
    return None


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``import`` (verdict files into a dataset) and its format and policy options to the parser."""
    p = subparsers.add_parser(
        "import",
        help="import verdict files (CSV, JSONL, JSON, Parquet, review format) into a dataset",
        description="Validate every row and store the verdicts in one transaction. Any rejected row "
        "stops the import unless --skip-invalid; each is reported with its line and reason.",
    )
    p.add_argument("paths", nargs="+", metavar="PATH", help="one or more files, imported together")
    p.add_argument("--dataset", required=True)
    p.add_argument(
        "--format",
        choices=FORMATS,
        default=None,
        help="override detection: a container (csv, jsonl, json, parquet, review) read as canonical "
        "columns, or a tool's judgment file (fastchat-pair, mtbench-human, arena-hard, alpaca-eval, "
        "evalica, arena)",
    )
    p.add_argument("--replace", action="store_true", help="replace the dataset's verdicts and texts")
    p.add_argument("--hold-store", action="store_true",
                   help="into a store that exists: hold its lock from the start and write the rows while "
                        "they are checked (faster; other processes cannot open the store until the import "
                        "ends). A new store is always written so")
    p.add_argument("--skip-invalid", action="store_true",
                   help="store the good rows and write the rejected ones to --rejected")
    p.add_argument("--check", action="store_true",
                   help="validate only: report what would be stored and every rejected row, store nothing")
    p.add_argument(
        "--rejected",
        metavar="PATH",
        help="write the rejected rows (file, line, reason, fields) to this CSV; with --skip-invalid "
        "the default is <first input>.rejected.csv. Checked before anything is stored",
    )
    add_value_options(p)
    p.add_argument("--judge", metavar="NAME", help="put every row under judge NAME")
    p.add_argument("--judge-from", choices=["column", "filename"], default="column",
                   help="filename: each file's rows under a judge named after the file, less words such as "
                   "comparisons or pair at its ends (gpt4-comparisons.json → gpt4); column (default): the "
                   "judge column, and rows without one under the name the file gives (the report says so)")
    p.add_argument("--baseline", "--baseline-model", dest="baseline_model", metavar="NAME",
                   help="the baseline of Arena-Hard judgment records that name none (v0.1 files: the "
                   "run's configuration names it, e.g. gpt-4-0314); a record's own baseline field wins")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Validate and store the given verdict files, reporting rejected rows; exit status."""
    counted = pair_count_import(args)  # issue 25: pair-count files are stored as counts, not verdicts
    if counted is not None:
        return counted
    opts = value_options(args)
    file_judges = _file_judges(args)
    if args.baseline_model is not None:
        args.baseline_model = _visible(args.baseline_model, "--baseline")
    if args.check:
        return _check(args, opts, file_judges)
    rejected_path = None
    if args.rejected or args.skip_invalid:  # checked before anything is read or stored
        rejected_path = prepare_rejected(args.rejected or f"{args.paths[0]}.rejected.csv", args.paths)
    dataset = check_dataset_name(args.dataset)
    mode = "skip-invalid" if args.skip_invalid else "all-or-nothing"
    seed = NewStoreSeed(getattr(args, "db", None), getattr(args, "lock_wait", 30.0))  # a new store, beside
    # the verdicts inserted beside validation (a fast path: engine.ingest.early_insert)
    early = early_insert(seed, getattr(args, "db", None), getattr(args, "lock_wait", 30.0), dataset,
                         replace=args.replace, memory_limit=import_memory_limit(),
                         hold_store=getattr(args, "hold_store", False))
    try:  # read and validate (the early insert holds the store's lock meanwhile; without it, only to write)
        report = validate_paths(
            args.paths,
            dataset=dataset,
            fmt=args.format,
            column_map=opts.column_map,
            model_names=opts.model_names,
            judge_names=opts.judge_names,
            value_map=opts.value_map,
            file_judges=file_judges,
            baseline_model=args.baseline_model,
            set_columns=opts.set_columns,
            derive_judge=True,
            on_good=early.offer if early is not None else None,
        )
    except LensError as exc:
        if early is not None:
            early.abandon()
        seed.wait()
        log_store = store_from_args(args)
        try:
            log_refused(log_store, dataset, import_source(args.paths), args.format, str(exc), mode)
        finally:
            log_store.close()
        raise
    except BaseException:  # Ctrl-C, any other error: the early insert rolled back, its store closed
        if early is not None:
            early.abandon()
        raise
    finally:
        seed.wait()  # also on any other error: the new store is whole before the process goes on
    store: Store | None = None
    result: ImportResult | None = None
    try:
        if early is not None and (began := early.finish()) is not None:
            store, tx, first, rows = began
            try:  # None: rolled back, nothing drawn; the serial path below writes the import
                result = store_early(store, tx, first, rows, early.columns, report, dataset,
                                     skip_invalid=args.skip_invalid, source=import_source(args.paths),
                                     replace=args.replace)
            finally:
                tx.close()
        if result is None:
            if store is None:
                store = store_from_args(args)
            store.limit_memory(import_memory_limit())
            result = store_report(store, report, dataset, replace=args.replace,
                                  skip_invalid=args.skip_invalid, source=import_source(args.paths))
        if result.status == "stored" and store is not None:
            # the listing's counts of the new version, counted now (engine.store.summaries): at ten million
            # rows the first `datasets` or leaderboard after the import would otherwise spend seconds on them
            from engine.store.summaries import summary
            from engine.views.import_board import keep_point_board

            summary(store, result.dataset)
            # the Leaderboard's point board of the new version, kept now (engine.views.import_board): the
            # app's very first open after this import reads it instead of a million votes. The import is
            # committed already: Ctrl-C here skips the board (the app computes it), not the report
            with contextlib.suppress(KeyboardInterrupt):
                keep_point_board(store, result.dataset)
    finally:
        if store is not None:
            store.close()
    report = result.report
    stored = result.status == "stored"
    out = sys.stdout if stored else sys.stderr
    for sentence in report.iter_sentences():
        print(sentence, file=sys.stderr)
    for note in report.notes():
        print(note, file=out)
    print(result.summary(), file=out)
    if report.n_rejected and rejected_path is not None:
        try:
            write_rejected(report, rejected_path)
        except LensError as exc:
            if not stored:
                raise
            raise LensError(
                f"{str(exc).rstrip('.')}, although the {result.rows_stored} valid rows were stored "
                f"(dataset {result.dataset!r}, version {result.revision})."
            ) from exc
        print(f"rejected rows written to {rejected_path}", file=out)
    if not stored:
        print(f"error: {result.message}.", file=sys.stderr)
        return 2
    print(f"dataset {result.dataset!r} is now version {result.revision}")
    return 0


def _check(args: argparse.Namespace, opts: ValueOptions, file_judges: dict | None) -> int:
    """Validation without the store: the rows, the rejected ones, exit 2 when any is rejected."""
    report = validate_paths(args.paths, dataset=args.dataset, fmt=args.format, column_map=opts.column_map,
                            model_names=opts.model_names, judge_names=opts.judge_names,
                            value_map=opts.value_map,
                            file_judges=file_judges, baseline_model=args.baseline_model,
                            set_columns=opts.set_columns, derive_judge=True)
    for sentence in report.iter_sentences():
        print(sentence, file=sys.stderr)
    for note in report.notes():
        print(note)
    print(f"read {report.rows_read} = valid {report.n_good} + rejected {report.n_rejected} "
          f"(invalid judge outputs: {report.n_invalid}); nothing stored (--check)")
    return 2 if report.n_rejected else 0
