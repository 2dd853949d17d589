"""Validated verdicts → the store: import (all-or-nothing or skip-invalid), rename, delete, list.

Policy (README.md, "Command line", ``import``): by default an import is all-or-nothing — one bad row and
nothing
is stored. With ``skip_invalid`` the good rows are stored and the rejected ones are returned (and
written to a file by the CLI). Unparsable judge outputs are good rows with winner ``invalid``.
``replace`` swaps the dataset's verdicts, prompts and answers for the new ones; without it the
rows are appended. A file whose bytes are already in the dataset (``dataset_files``, by sha256) is
refused: importing the same file twice is almost always a mistake, while a row that repeats
another is a repeated vote and is kept. Every import, refused or not, writes one ``import_log``
row; every change takes a fresh dataset version from the store's one counter. The SQL of every
write is in ``engine.store.writes``; this module decides what to write.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import duckdb
import pandas as pd
import pyarrow as pa

from engine.errors import LensError
from engine.ingest.limits import check_dataset_name, lookalike_notes, lookalike_twin
from engine.ingest.staging import no_space, store_space
from engine.ingest.verdict_files import list_columns
from engine.ingest.verdicts import ValidationReport, validate_sources
from engine.store import writes
from engine.store.connection import Store
from engine.store.datasets import require_dataset
from engine.store.schema import DEFAULT_DATASET, STYLE_COLUMNS, VERDICT_COLUMNS
from engine.store.sql import in_values, params

PathOrBytes = str | os.PathLike[str] | bytes


@dataclass(frozen=True, eq=False)
class ImportResult:
    """What an import did: ``status`` is ``stored`` or ``refused`` (then nothing was written)."""

    dataset: str
    import_id: int
    status: str
    mode: str
    rows_read: int
    rows_stored: int
    rows_rejected: int
    rows_invalid: int
    version: int | None  # store-wide number (cache keys)
    report: ValidationReport
    message: str = ""
    revision: int | None = None  # the dataset's own change count, shown as its version

    @property
    def rows_held(self) -> int:
        """Valid rows of a refused all-or-nothing import: neither stored nor rejected."""
        return self.rows_read - self.rows_stored - self.rows_rejected

    def summary(self) -> str:
        """The one-line account the CLI prints; ``read = stored + rejected (+ held back)`` always holds.

        A refused all-or-nothing import stores none of its valid rows; they are counted as held
        back so that the sum still adds up.
        """
        head = f"read {self.rows_read} = stored {self.rows_stored} + rejected {self.rows_rejected}"
        if self.rows_held:
            why = "the import is all-or-nothing" if self.rows_rejected else "the import was refused"
            return f"{head} + held back {self.rows_held} (valid rows, not stored because {why})"
        return f"{head} (invalid judge outputs stored: {self.rows_invalid})"


def validate_file(
    path_or_bytes: PathOrBytes,
    filename: str | None = None,
    column_map: Mapping[str, str] | None = None,
    fmt: str | None = None,
    dataset: str = DEFAULT_DATASET,
    *,
    model_names: Mapping[str, str] | None = None,
    judge_names: Mapping[str, str] | None = None,
    value_map: Mapping[str, Mapping[str, str]] | None = None,
    judge: str | None = None,
    set_columns: Mapping[str, str] | None = None,
    baseline_model: str | None = None,
    derive_judge: bool = False,
) -> ValidationReport:
    """Read and check one verdict file (a path, or uploaded bytes with their file name); no DB.

    ``column_map`` maps the file's column names to canonical ones; ``fmt`` overrides detection;
    ``model_names`` / ``judge_names`` rename values (e.g. review-format file-name parts);
    ``value_map`` rewrites cell values (``{"winner": {"left": "A"}}``); ``judge`` names the
    judge of every row; ``set_columns``, ``baseline_model`` and ``derive_judge`` as in
    ``verdicts.validate_sources``. The file is read in batches (memory bounded by one batch) and the
    rows are staged on disk.
    """
    source: bytes | str | os.PathLike[str]
    if isinstance(path_or_bytes, bytes | bytearray):
        source, name = bytes(path_or_bytes), filename or "upload"
    else:
        source, name = path_or_bytes, filename or str(path_or_bytes)
    return validate_sources([(source, name)], dataset=dataset, fmt=fmt, column_map=column_map,
                            model_names=model_names, judge_names=judge_names, value_map=value_map,
                            file_judges={name: judge} if judge else None, set_columns=set_columns,
                            baseline_model=baseline_model, derive_judge=derive_judge)


def file_columns(
    path_or_bytes: PathOrBytes, filename: str | None = None, fmt: str | None = None
) -> list[str]:
    """The column names a file has, so a form can offer a mapping to the canonical ones (reads the header
    only)."""
    if isinstance(path_or_bytes, bytes | bytearray):
        return list_columns(bytes(path_or_bytes), filename or "upload", fmt)
    return list_columns(path_or_bytes, filename or str(path_or_bytes), fmt)


def validate_paths(
    paths: Sequence[str | os.PathLike[str]], *, dataset: str, fmt: str | None = None,
    column_map: Mapping[str, str] | None = None, model_names: Mapping[str, str] | None = None,
    judge_names: Mapping[str, str] | None = None, value_map: Mapping[str, Mapping[str, str]] | None = None,
    file_judges: Mapping[str, str] | None = None, baseline_model: str | None = None,
    set_columns: Mapping[str, str] | None = None, derive_judge: bool = False,
    on_good: Callable[[pa.Table], None] | None = None,
) -> ValidationReport:
    """Several files checked as one import (e.g. a folder of review-format files); no DB.
    ``file_judges`` maps a path (as given) to the judge of its rows; ``baseline_model`` names the
    baseline of Arena-Hard records without one; ``set_columns``, ``derive_judge`` and ``on_good`` as in
    ``verdicts.validate_sources``."""
    judges = {str(k): v for k, v in (file_judges or {}).items()}
    return validate_sources([(p, str(p)) for p in paths], dataset=dataset, fmt=fmt, column_map=column_map,
                            model_names=model_names, judge_names=judge_names, value_map=value_map,
                            file_judges=judges, baseline_model=baseline_model, set_columns=set_columns,
                            derive_judge=derive_judge, on_good=on_good)


def _known_files(cur, dataset: str, report: ValidationReport, *, stored: bool = True) -> str:
    """Why the import repeats a file: one already in the dataset, or the same bytes given twice; '' if not."""
    seen: dict[str, str] = {}
    for name, digest in report.file_hashes.items():
        if digest in seen:
            return (f"{Path(name).name} has the same content as {Path(seen[digest]).name}; "
                    "give each file once")
        seen[digest] = name
    if not seen or not stored:
        return ""
    hit = cur.execute(
        f"SELECT content_hash, source FROM dataset_files WHERE dataset = ? AND content_hash IN "
        f"({', '.join('?' for _ in seen)}) ORDER BY source LIMIT 1",
        [dataset, *seen],
    ).fetchone()
    if hit is None:
        return ""
    name = Path(seen[hit[0]]).name
    return (f"{name} is already in dataset {dataset!r} (imported as {Path(hit[1]).name}); importing the "
            "same file twice would count every verdict twice: use --replace to replace the dataset")


def _log(cur, dataset: str, report: ValidationReport, source: str, mode: str, status: str,
         stored: int, detail: str) -> int:
    dropped = sorted({c for cols in report.dropped.values() for c in cols})
    return writes.log_import(
        cur,
        dataset=dataset,
        source=source,
        fmt=report.format,
        rows_read=report.rows_read,
        rows_stored=stored,
        rows_rejected=report.n_rejected,
        rows_invalid=report.n_invalid if stored else 0,
        mode=mode,
        status=status,
        detail=detail,
        content_hashes=json.dumps(dict(report.file_hashes)) if report.file_hashes else None,
        dropped_columns=json.dumps(dropped) if dropped else None,
    )


def log_refused(store: Store, dataset: str, source: str, fmt: str | None, detail: str, mode: str) -> int:
    """Record an import that failed before any row could be checked (unreadable file, ...)."""
    with store.transaction() as cur:
        return writes.log_import(cur, dataset=dataset, source=source, fmt=fmt, rows_read=0, rows_stored=0,
                                 rows_rejected=0, rows_invalid=0, mode=mode, status="refused", detail=detail)


def _check_name(name: str) -> str:
    return check_dataset_name(name)


def store_report(
    store: Store,
    report: ValidationReport,
    dataset: str | None = None,
    replace: bool = False,
    skip_invalid: bool = False,
    *,
    description: str | None = None,
    source: str | None = None,
    synthetic: bool = False,
) -> ImportResult:
    """Write a validated report into ``dataset`` in one transaction (or refuse and write nothing).

    Refused when any row is rejected and ``skip_invalid`` is False, or when nothing is left to
    store; a refused import still gets its ``import_log`` row (status ``refused``). The rows are
    inserted straight from the report's stage files, so the store's lock is held only for the
    check against stored verdicts and the insert, and memory stays bounded. A full disk is one
    sentence and the transaction is rolled back: nothing of the import is stored.
    """
    dataset = _check_name(dataset or report.dataset)
    mode = "skip-invalid" if skip_invalid else "all-or-nothing"
    source = source or report.source
    try:
        with store.transaction() as tx:
            return _store_in(tx, report, dataset, mode, source, replace=replace, skip_invalid=skip_invalid,
                             description=description, synthetic=synthetic)
    except (duckdb.Error, OSError) as exc:
        raise _full(store, exc) from exc


def store_early(store: Store, tx: duckdb.DuckDBPyConnection, first: int, n: int, columns: Sequence[str],
                report: ValidationReport, dataset: str, *, skip_invalid: bool, source: str,
                replace: bool = False) -> ImportResult | None:
    """The end of the early insert's transaction ``tx`` (``engine.ingest.early_insert``), whose ``n``
    verdict rows were inserted with the ids ``first``.. read from ``verdict_id_seq`` without drawing them.

    When the import is a stored one whose good rows are exactly the inserted ones, in order, with the
    columns and ids ``store_report`` would give them, and no other verdict of the dataset is numbered
    ``first`` or above, this writes the rest as ``store_report`` does (the same statements in the same
    order, the ids drawn where it draws them; what it reads or deletes of the dataset's verdicts before
    that point, the joined judges' counts and ``replace``'s old rows, bounded to the ids below ``first``)
    and commits; the store is then the one ``store_report`` makes. Otherwise (a refusal, rows or ids
    that differ) nothing has been drawn yet: the transaction is rolled back and None returned, and the
    caller runs ``store_report``, so the store is its by construction."""
    dataset = _check_name(dataset)
    mode = "skip-invalid" if skip_invalid else "all-or-nothing"
    try:
        fits = (not _problem(tx, dataset, report, replace, skip_invalid) and report.rows_in_order() == n
                and list(columns) == _columns(tx, report)
                and writes.next_verdict_id(tx) == first and writes.verdicts_from(tx, dataset, first) == n)
        if not fits:
            tx.execute("ROLLBACK")
            return None
        result = _store_in(tx, report, dataset, mode, source, replace=replace, skip_invalid=skip_invalid,
                           description=None, synthetic=False, inserted=(first, n))
        tx.execute("COMMIT")
        return result
    except BaseException as exc:
        with contextlib.suppress(duckdb.Error):  # a failed COMMIT has rolled back already
            tx.execute("ROLLBACK")
        if isinstance(exc, duckdb.Error | OSError):
            raise _full(store, exc) from exc
        raise


def _full(store: Store, exc: duckdb.Error | OSError) -> BaseException:
    """A full disk's one sentence (the transaction rolled back), or the error itself."""
    if no_space(exc):
        return LensError(
            f"The disk holding the store {store.path} is full, so nothing of this import was stored "
            f"(the store is unchanged){store_space(store)}; free some space and import again."
        )
    return exc


def _problem(tx, dataset: str, report: ValidationReport, replace: bool, skip_invalid: bool) -> str:
    """Why the import is refused ('' when it is not): a repeated file, a rejected row without
    ``skip_invalid``, or no valid row."""
    # with --replace the stored files go, so only the same bytes given twice in this import count
    problem = _known_files(tx, dataset, report, stored=not replace)
    if not problem and report.n_rejected and not skip_invalid:
        problem = (
            f"{report.n_rejected} of {report.rows_read} rows were rejected, so nothing was stored "
            "(fix them, or use --skip-invalid to store the others)"
        )
    elif not problem and report.n_good == 0:
        problem = "no valid rows to store, so nothing was stored"
    return problem


def _store_in(tx, report: ValidationReport, dataset: str, mode: str, source: str, *, replace: bool,
              skip_invalid: bool, description: str | None, synthetic: bool,
              inserted: tuple[int, int] | None = None) -> ImportResult:
    """``store_report``'s writes inside the caller's transaction ``tx`` (``inserted``: ``_write_rows``)."""
    exists = writes.dataset_exists(tx, dataset)
    problem = _problem(tx, dataset, report, replace, skip_invalid)
    if problem:
        import_id = _log(tx, dataset, report, source, mode, "refused", 0, problem)
        return ImportResult(dataset, import_id, "refused", mode, report.rows_read, 0, report.n_rejected, 0,
                            None, report, problem)
    if exists and not replace:
        report = _note_joined_judges(tx, report, dataset, None if inserted is None else inserted[0])
    version = _write_rows(tx, report, dataset, exists, replace, description, source, synthetic, inserted)
    report = _note_lookalikes(tx, report, dataset)
    import_id = _log(tx, dataset, report, source, mode, "stored", report.n_good, "")
    writes.record_files(tx, dataset, dict(report.file_hashes), import_id, replace=replace)
    revision = writes.revision(tx, dataset)
    return ImportResult(dataset, import_id, "stored", mode, report.rows_read, report.n_good,
                        report.n_rejected, report.n_invalid, version, report, revision=revision)


def _note_joined_judges(tx, report: ValidationReport, dataset: str, ids_below: int | None = None
                        ) -> ValidationReport:
    """The report with a sentence when a judge name the import derived (rows that named none) is
    already a judge of the dataset: those rows join that judge's verdicts, which the user did not choose.
    ``ids_below``: the verdicts stored before the import are those numbered below it (the early insert's
    rows are in already)."""
    if not report.derived_judges:
        return report
    names = in_values("judge", list(report.derived_judges))
    below = "" if ids_below is None else f" AND verdict_id < {int(ids_below)}"
    stored = tx.execute(f"SELECT judge, count(*) FROM verdicts WHERE dataset = $wire_ds AND {names[0]}"
                        f"{below} GROUP BY judge ORDER BY judge", {"wire_ds": dataset, **dict(names[1])}
                        ).fetchall()
    said = tuple(f"Judge {j!r} already had {n:,} verdicts in dataset {dataset!r}; the rows named after the "
                 f"file joined them (to keep them apart: --judge NAME, or import under another dataset)."
                 for j, n in stored)
    return dataclasses.replace(report, remarks=report.remarks + said) if said else report


def _note_lookalikes(tx, report: ValidationReport, dataset: str) -> ValidationReport:
    """The report with a sentence per model of the dataset (after this import) written wholly in
    look-alike letters that reads as another of its models (``limits.lookalike_notes``); only names
    outside ASCII can be such, so a dataset of ASCII names costs one scan and no Python."""
    rows = tx.execute("SELECT DISTINCT m FROM (SELECT model_a AS m FROM verdicts WHERE dataset = $1 "
                      "UNION ALL SELECT model_b FROM verdicts WHERE dataset = $1) "
                      "WHERE NOT regexp_matches(m, '^[ -~]*$')", [dataset]).fetchall()
    if not rows:
        return report
    foreign = [r[0] for r in rows]
    twins = [t for t in map(lookalike_twin, foreign) if t is not None]
    if not twins:
        return report
    found = in_values("m", twins)
    latin = [r[0] for r in tx.execute(
        f"SELECT DISTINCT m FROM (SELECT model_a AS m FROM verdicts WHERE dataset = $wire_ds UNION ALL "
        f"SELECT model_b FROM verdicts WHERE dataset = $wire_ds) WHERE {found[0]}",
        {"wire_ds": dataset, **dict(found[1])}).fetchall()]
    said = tuple(lookalike_notes([*foreign, *latin]))
    return dataclasses.replace(report, remarks=report.remarks + said) if said else report


def _write_rows(tx, report: ValidationReport, dataset: str, exists: bool, replace: bool,
                description: str | None, source: str, synthetic: bool,
                inserted: tuple[int, int] | None = None) -> int:
    """The dataset row, its verdicts and texts, inside the caller's transaction; returns the version.
    ``inserted`` = (first id, rows): the verdicts are in already (``store_early``), numbered from the
    sequence's next value without drawing; their ids are drawn here, where the insert would draw them."""
    if exists and replace:  # new content: the synthetic flag follows the new rows
        version = writes.bump_dataset(
            tx, dataset, description=description, source=source, synthetic=synthetic
        )
    elif exists:
        version = writes.bump_dataset(tx, dataset, description=description)
    else:
        version = writes.create_dataset(
            tx, dataset, description=description, source=source, synthetic=synthetic
        )
    if replace:  # the early insert's rows (numbered from inserted[0]) stay
        writes.clear_content(tx, dataset, ids_below=None if inserted is None else inserted[0])
    if replace or not exists:
        # a ground truth belongs to the rows it was generated with: a replaced or new dataset
        # (its name perhaps left behind by an older delete or rename) starts without one;
        # engine.ingest.synthetic writes the new truth after storing its rows
        writes.clear_truth(tx, dataset)
    if inserted is not None:
        first, n = inserted
        if writes.draw_verdict_ids(tx, n) != first:  # read as next just before: anything else is a bug
            raise RuntimeError(f"verdict ids drawn are not the {n} from {first} the early insert gave")
    elif (n_ordered := report.rows_in_order()) is not None:
        writes.insert_numbered_verdicts(tx, dataset, report.good_file, n_ordered, _columns(tx, report))
    else:
        writes.insert_verdicts_from(tx, dataset, report.good_sql(), _columns(tx, report))
    writes.upsert_texts_from(tx, dataset, "prompts", report.texts_sql("prompts"))
    writes.upsert_texts_from(tx, dataset, "answers", report.texts_sql("answers"))
    return version


def _columns(tx, report: ValidationReport) -> list[str]:
    """The verdict columns an import writes from its stage (``dataset`` is given apart)."""
    good = report.good_sql()
    staged = {str(r[0]) for r in tx.execute(f"DESCRIBE SELECT * FROM ({good})", params(good)).fetchall()}
    # style counts: stage files made before migration 070 (the prebuilt vicuna80) have none
    return [*(c for c in VERDICT_COLUMNS if c != "dataset"), *(c for c in STYLE_COLUMNS if c in staged)]


def import_source(paths: Sequence[str | os.PathLike[str]]) -> str:
    """How ``import_log`` and ``datasets.source`` name the files of an import."""
    return str(paths[0]) if len(paths) == 1 else f"{len(paths)} files: {', '.join(map(str, paths[:3]))}…"


def import_files(
    store: Store,
    paths: Sequence[str | os.PathLike[str]],
    dataset: str,
    *,
    fmt: str | None = None,
    column_map: Mapping[str, str] | None = None,
    replace: bool = False,
    skip_invalid: bool = False,
    model_names: Mapping[str, str] | None = None,
    judge_names: Mapping[str, str] | None = None,
    value_map: Mapping[str, Mapping[str, str]] | None = None,
    file_judges: Mapping[str, str] | None = None,
    baseline_model: str | None = None,
    set_columns: Mapping[str, str] | None = None,
    derive_judge: bool = False,
) -> ImportResult:
    """Validate ``paths`` as one import and store it; a file-level problem is logged, then raised
    (``set_columns``, ``derive_judge``: as in ``verdicts.validate_sources``)."""
    dataset = _check_name(dataset)
    source = import_source(paths)
    try:
        report = validate_paths(paths, dataset=dataset, fmt=fmt, column_map=column_map,
                                model_names=model_names, judge_names=judge_names, value_map=value_map,
                                file_judges=file_judges, baseline_model=baseline_model,
                                set_columns=set_columns, derive_judge=derive_judge)
    except LensError as exc:
        log_refused(
            store, dataset, source, fmt, str(exc), "skip-invalid" if skip_invalid else "all-or-nothing"
        )
        raise
    return store_report(store, report, dataset, replace=replace, skip_invalid=skip_invalid, source=source)


def rename_dataset(store: Store, old: str, new: str) -> int:
    """Rename a dataset (verdicts, prompts, answers and a synthetic ground truth move with it, in one
    transaction); returns its new version."""
    require_dataset(store, old)
    _check_name(new)
    if store.has_dataset(new):
        raise LensError(f"A dataset named {new!r} already exists; delete it first or pick another name.")
    with store.transaction() as tx:
        return writes.rename_dataset_rows(tx, old, new)


def delete_dataset(store: Store, name: str) -> int:
    """Delete a dataset with its verdicts, prompts, answers and synthetic ground truth (one
    transaction); returns the verdicts removed."""
    require_dataset(store, name)
    with store.transaction() as tx:
        return writes.delete_dataset_rows(tx, name)


def dataset_table(store: Store) -> pd.DataFrame:
    """One row per dataset: name, version (its own change count), verdicts, battles, invalid, judges, models,
    prompts. A pair-count dataset (migration 074) has no verdicts: its battles are its pairs' summed outcomes
    and its models its pairs' names."""
    from engine.store.datasets import dataset_listing

    # counts kept per dataset version (engine.store.summaries)
    df = dataset_listing(store, models=True, battles=True)
    df["version"] = df["revision"]  # the dataset's own count; the store-wide number only keys caches
    cols = [
        "name",
        "version",
        "verdicts",
        "battles",
        "invalid",
        "judges",
        "models",
        "prompts",
        "synthetic",
        "updated_at",
    ]
    return df[cols]
