"""Verdict files → a validated canonical frame plus a report of every rejected row (pure, no DB).

``engine/ingest/verdict_files.py`` reads the files (CSV/TSV, JSON Lines, JSON array, Parquet, the
Vicuna-bench review format) into raw rows with their true line numbers; ``normalise`` turns each
batch into the canonical frame of ``schema.VERDICT_DTYPES`` (README.md, "Data format"), and this
module stages the batches, counts repeats and returns the ``report.ValidationReport``. Nothing is
dropped silently: a row is either in ``good`` or in ``rejected`` with one sentence saying why, so
``rows_read == n_good + n_rejected`` always holds. An unparsable judge output (``error``, review
score -1) is a *valid* row with winner ``invalid``: counted, stored, never turned into a tie.
"""

from __future__ import annotations

import gc
import hashlib
import json
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import PurePath

import duckdb
import numpy as np
import pandas as pd
import pyarrow as pa

from engine.errors import LensError
from engine.ingest.cells import (
    is_none,
)
from engine.ingest.constant_columns import apply_set, fill_missing_judge, judge_from_filename
from engine.ingest.formats.arena_hard import name_baseline
from engine.ingest.limits import (
    COLUMNS_MAX,
    batch_rows,
)
from engine.ingest.normalise import normalise_rows
from engine.ingest.raw_rows import (  # noqa: F401 - re-exported: callers import the vocabulary from here
    CANONICAL,
    COLUMN_ALIASES,
    FORMATS,
    KNOWN_JUDGES,
    OPTIONAL,
    REQUIRED,
    REVIEW_SCORES,
    TEXTS,
    RawRows,
    cell_text,
    merge_raw,
    parse_review_name,
)
from engine.ingest.report import ValidationReport
from engine.ingest.staging import Stage
from engine.ingest.verdict_files import detect_format, no_gc, read_rows  # noqa: F401 - re-exported
from engine.ingest.verdict_files import iter_raw as read_batches
from engine.store.schema import STYLE_COLUMNS, VERDICT_COLUMNS


def parse_value_map(specs: Iterable[str] | None) -> dict[str, dict[str, str]]:
    """``COLUMN:VALUE=NEW`` specs (``--map-value``, the Data page) → {column: {value: new}}."""
    out: dict[str, dict[str, str]] = {}
    for v in specs or []:
        column, sep, rest = str(v).partition(":")
        old, sep2, new = rest.partition("=")
        if not sep or not sep2 or not column.strip() or not old.strip() or not new.strip():
            raise LensError(f"The value map {v!r} is not of the form COLUMN:VALUE=NEW (e.g. winner:left=A).")
        col = column.strip().lower()
        if col not in CANONICAL:
            raise LensError(
                f"The value map {v!r} names column {column.strip()!r}, which is not a verdict column "
                f"({', '.join(sorted(CANONICAL))})."
            )
        out.setdefault(col, {})[old.strip()] = new.strip()
    return out


def apply_value_map(cols: dict[str, list], value_map: Mapping[str, Mapping[str, str]] | None) -> None:
    """Rewrite cells in place: ``{"winner": {"left": "A"}}`` turns every ``left`` (compared
    case-insensitively, spaces trimmed) of column winner into ``A`` before validation."""
    for column, mapping in (value_map or {}).items():
        cells = cols.get(column)
        if not cells or not mapping:
            continue
        if not isinstance(cells, list):  # a CSV column read in bulk (Arrow): rewritten as a list
            cells = cols[column] = list(cells)
        low = {str(k).strip().lower(): v for k, v in mapping.items()}
        for i, v in enumerate(cells):
            t = cell_text(v)
            if t is not None and t.lower() in low:
                cells[i] = low[t.lower()]


def _texts_tables(
    frame: pd.DataFrame, texts: pd.DataFrame, ok: np.ndarray
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Question and answer texts of valid rows → rows of the prompts / answers tables (first wins)."""
    key = ["dataset", "prompt_id", "variant", "turn"]
    f = frame.loc[ok]
    t = texts.loc[ok]
    mq = t["question"].notna()
    q = f.loc[mq, ["seq", *key, "category", "variant_kind"]].assign(text=t.loc[mq, "question"].to_numpy())
    prompts = q.drop_duplicates(key, keep="first").reset_index(drop=True)
    parts = []
    for side in ("a", "b"):
        m = t[f"answer_{side}"].notna()
        parts.append(f.loc[m, ["seq", *key]].assign(model=f.loc[m, f"model_{side}"].to_numpy(),
                                          text=t.loc[m, f"answer_{side}"].to_numpy()))
    answers = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()
    answers = answers.drop_duplicates([*key, "model"], keep="first").reset_index(drop=True)
    prompts = prompts.astype({"variant": "int64", "turn": "int64"})
    answers = answers.astype({"variant": "int64", "turn": "int64"})
    return prompts, answers


def _any_text(texts: pd.DataFrame, ok: np.ndarray) -> bool:
    """Does any valid row carry a question or an answer? (A file without texts, the usual arena log,
    then skips the texts' tables and their copy of the batch.)"""
    return any(bool((~is_none(texts[c].to_numpy()) & ok).any()) for c in texts.columns)


def _original_fields(row, header: tuple | None) -> dict:
    if isinstance(row, list):  # CSV values; a short row leaves the last fields empty
        return {h: cell_text(v) for h, v in zip(header or (), row, strict=False)}
    return {k: cell_text(v) for k, v in row.items()}


def _fields_json(raw: RawRows, idx: np.ndarray, names: dict) -> list[str]:
    """Original fields of the rows ``idx`` as JSON objects; their names are added to ``names``."""
    out = []
    for i in idx:
        header = raw.headers.get(raw.file[i])
        if header and len(names) < _MAX_FIELD_NAMES:
            names.update(dict.fromkeys(header))
        fields = _original_fields(raw.orig[i], header)
        if len(names) < _MAX_FIELD_NAMES:
            names.update(dict.fromkeys(fields))
        out.append(json.dumps(fields, ensure_ascii=False))
    return out


_MAX_FIELD_NAMES = 1000
"""Columns of the rejected-rows table at most (a JSON file may name a new key in every row)."""


class ReportBuilder:
    """Validates raw-row batches one at a time into a stage (memory bounded by one batch)."""

    def __init__(self, dataset: str, model_names: Mapping[str, str] | None = None,
                 judge_names: Mapping[str, str] | None = None,
                 value_map: Mapping[str, Mapping[str, str]] | None = None):
        self.dataset, self.model_names, self.judge_names = dataset, model_names, judge_names
        self.value_map = value_map
        self.repeats = 0
        self.dropped: dict[str, list[str]] = {}
        self.stage = Stage()
        self.files = {k: self.stage.new_file(k) for k in ("good", "rejected", "prompts", "answers")}
        self.rows = 0
        self.good_batches = 0
        self.n_good = self.n_invalid = self.n_rejected = 0
        self.field_names: dict[str, None] = {}
        self.on_good: Callable[[pa.Table], None] | None = None
        """Given each batch's good rows as staged, in order (``validate_sources``' ``on_good``)."""

    def add(self, raw: RawRows) -> None:
        """Check one batch and append its rows to the stage."""
        apply_value_map(raw.cols, self.value_map)
        for f, cols in raw.dropped.items():
            known = self.dropped.setdefault(f, [])
            known += [c for c in cols if c not in known][:max(0, COLUMNS_MAX - len(known))]
        with no_gc():
            frame, reasons, texts = normalise_rows(raw, self.dataset, self.model_names, self.judge_names)
        n = len(frame)
        seq = np.arange(self.rows, self.rows + n, dtype=np.int64)
        self.rows += n
        bad = ~is_none(reasons)
        self.n_rejected += int(bad.sum())
        self.n_good += int((~bad).sum())
        invalid = (frame["winner"] == "invalid").to_numpy(dtype=bool, na_value=False)  # rejected rows: null
        self.n_invalid += int((invalid & ~bad).sum())
        if (~bad).any():
            self.good_batches += 1
            frame["seq"] = seq  # the row's position in the import (the stage files' order)
            # a batch without a rejected row is staged as it is, not through a copy of every column
            staged = self.stage.append(self.files["good"], "good", frame.loc[~bad] if bad.any() else frame)
            if self.on_good is not None:
                self.on_good(staged)
            prompts, answers = _texts_tables(frame, texts, ~bad) if _any_text(texts, ~bad) \
                else (pd.DataFrame(), pd.DataFrame())
            if len(prompts):
                self.stage.append(self.files["prompts"], "prompts", prompts)
            if len(answers):
                self.stage.append(self.files["answers"], "answers", answers)
        if bad.any():
            idx = np.flatnonzero(bad)
            self.stage.append(self.files["rejected"], "rejected", pd.DataFrame({
                "seq": seq[idx], "source_file": np.asarray(raw.file, dtype=object)[idx],
                "source_line": np.asarray(raw.line, dtype=np.int64)[idx], "reason": reasons[idx].astype(str),
                "fields": _fields_json(raw, idx, self.field_names),
            }))

    def finish(self, source: str, fmt: str, file_hashes: Mapping[str, str] | None = None,
               remarks: Iterable[str] = (), derived_judges: tuple[str, ...] = ()) -> ValidationReport:
        """Close the stage files, count repeats across batches; the report."""
        stage = self.stage
        stage.close()
        # the batches' Arrow buffers are free by now, but Arrow's allocator keeps their pages: handed back
        # here, before the store's insert adds DuckDB's memory on top (1M rows: 0.82 -> 0.66 GB peak)
        pa.default_memory_pool().release_unused()
        for kind, name in self.files.items():
            if not os.path.exists(name):
                self.files[kind] = stage.empty(kind)
        if self.n_good > 1:  # one SQL pass over the staged rows, across every batch and file
            self.repeats = _repeats(stage, self.files["good"])
        return ValidationReport(
            dataset=self.dataset, source=source, format=fmt, rows_read=self.rows, n_good=self.n_good,
            n_rejected=self.n_rejected, n_invalid=self.n_invalid, stage=stage, good_file=self.files["good"],
            excluded=(), rejected_files=(self.files["rejected"],), prompts_file=self.files["prompts"],
            answers_file=self.files["answers"], field_names=tuple(self.field_names),
            dropped={f: tuple(c) for f, c in self.dropped.items()}, repeats=self.repeats,
            file_hashes=dict(file_hashes or {}), remarks=tuple(remarks), derived_judges=derived_judges,
        )


_CONTENT = [*(c for c in VERDICT_COLUMNS if c not in ("source_file", "source_line")), *STYLE_COLUMNS]


def _repeats(stage: Stage, good_file: str) -> int:
    """Valid rows equal to an earlier one in everything but their line, over every batch (SQL).

    Rows equal in content have equal hashes (DuckDB's hash treats -0.0 as 0.0 and every NaN alike, as
    DISTINCT does), so a row whose content hash no other row shares repeats nothing: the exact count of
    distinct rows runs only over the rows whose hash occurs twice or more. Grouping 8-byte hashes first
    keeps a 10M-row import from holding every row's full content in one DISTINCT."""
    part = ", ".join(f'"{c}"' for c in _CONTENT)
    con = stage.connect()
    try:
        row = con.execute(
            f"""WITH shared AS (SELECT hash({part}) AS h FROM read_parquet($good) GROUP BY h
                                HAVING count(*) > 1)
                SELECT count(*) - count(DISTINCT ({part})) FROM read_parquet($good)
                WHERE hash({part}) IN (SELECT h FROM shared)""",
            {"good": str(good_file)}).fetchone()
        assert row is not None  # an aggregate without GROUP BY has one row
        return int(row[0])
    except duckdb.Error as exc:
        raise stage.full(exc) from exc
    finally:
        con.close()


def content_hash(data: bytes, filename: str = "", fmt: str = "") -> str:
    """sha256 hex of a file's bytes: the same file imported twice into one dataset is refused by it.
    A review-format file's name is part of its content (it names the models and the judge)."""
    h = hashlib.sha256()
    if fmt == "review":
        h.update(PurePath(filename).name.encode("utf-8") + b"\x00")
    h.update(data)
    return h.hexdigest()


def set_judge(raw: RawRows, judge: str) -> None:
    """Every row of ``raw`` gets ``judge`` (one judge per file: ``--judge-from filename``, the app)."""
    raw.cols["judge"] = [judge] * len(raw.line)


def file_hash(source, filename: str, fmt: str) -> str:
    """``content_hash`` of a path or bytes, reading a file a megabyte at a time."""
    if isinstance(source, bytes | bytearray | memoryview):
        return content_hash(bytes(source), filename, fmt)
    h = hashlib.sha256()
    if fmt == "review":
        h.update(PurePath(filename).name.encode("utf-8") + b"\x00")
    with open(source, "rb") as fh:
        for chunk in iter(lambda: fh.read(2**20), b""):
            h.update(chunk)
    return h.hexdigest()


def validate_sources(
    sources: Iterable[tuple[object, str]], *, dataset: str, fmt: str | None = None,
    column_map: Mapping[str, str] | None = None, model_names: Mapping[str, str] | None = None,
    judge_names: Mapping[str, str] | None = None, value_map: Mapping[str, Mapping[str, str]] | None = None,
    file_judges: Mapping[str, str] | None = None, baseline_model: str | None = None,
    set_columns: Mapping[str, str] | None = None, derive_judge: bool = False,
    on_good: Callable[[pa.Table], None] | None = None,
) -> ValidationReport:
    """Validate files (each a path or bytes, with its name) as one import, one batch at a time.

    Repeated rows are counted across every batch and file; memory is bounded by one batch.
    ``file_judges`` puts the rows of a file (by the name given) under its own judge;
    ``baseline_model`` names the baseline of Arena-Hard records that carry none (v0.1 files);
    ``set_columns`` gives every row one value in each named column (``constant_columns.parse_set``),
    replacing the file's; ``derive_judge`` puts rows that name no judge under one named after their file
    instead of the placeholder ``judge``. What these did is said in the report's notes. ``on_good`` is
    called with each batch's good rows as staged (Arrow, in order), as soon as they are staged: the CLI's
    early insert (``engine.ingest.early_insert``) stores them while the next batches are checked.
    """
    sources = list(sources)
    _refuse_repeated(sources)
    builder = ReportBuilder(dataset, model_names, judge_names, value_map)
    builder.on_good = on_good
    fmts: list[str] = []
    names: list[str] = []
    hashes: dict[str, str] = {}
    pending: list[RawRows] = []  # small files are checked together, a batch at a time
    remarks: list[str] = []
    constants = _Constants(dict(set_columns or {}), derive_judge, remarks)
    with no_gc():  # the batch's per-row lists cannot form cycles; the collector would rescan them
        _read_into(builder, sources, fmt, column_map, file_judges, pending, fmts, names, hashes,
                   baseline_model, constants)
    if pending:
        builder.add(pending[0] if len(pending) == 1 else merge_raw(pending))
    if not names:
        raise LensError("No files to import.")
    return builder.finish(names[0] if len(names) == 1 else f"{len(names)} files",
                          fmts[0] if len(set(fmts)) == 1 else "mixed", hashes, remarks,
                          tuple(dict.fromkeys(constants.derived)))


def _file_identity(source: object, filename: str) -> object:
    """What makes two sources one file: the same device and inode for a path (any spelling, links
    included), the same name for uploaded bytes."""
    if isinstance(source, bytes | bytearray | memoryview):
        return ("upload", filename)
    try:
        st = os.stat(source)  # type: ignore[arg-type]
    except (OSError, TypeError, ValueError):
        return ("path", str(source))  # the reader says what is wrong with it
    return ("file", st.st_dev, st.st_ino)


def _refuse_repeated(sources: list[tuple[object, str]]) -> None:
    """One file given twice in one import is refused before anything is read: read twice it would count
    every verdict twice, and reading it once would hide what is most likely a mistake in the command
    (a second spelling of the path, or the same bytes under another name, is refused the same way)."""
    seen: dict[object, str] = {}
    for source, filename in sources:
        key = _file_identity(source, filename)
        if key in seen:
            same = "" if seen[key] == filename else f" (as {seen[key]} and as {filename})"
            raise LensError(f"{filename} is given twice in this import{same}; give each file once, "
                            "or every verdict in it would be counted twice.")
        seen[key] = filename


@dataclass
class _Constants:
    """What an import sets for every row (``--set``, derived judge names) and the notes saying so."""

    values: dict[str, str]
    derive_judge: bool
    remarks: list[str]
    derived: list[str] = field(default_factory=list)
    """The judge names given to rows that named none (the store says when one is already a judge)."""

    def apply(self, raw: RawRows, filename: str, judge: str | None, replaced: dict[str, int],
              derived: dict[str, int]) -> None:
        """Set the constant columns of one batch of ``filename``; count what was replaced or derived."""
        for col, n in apply_set(raw, self.values).items():
            replaced[col] = replaced.get(col, 0) + n
        if self.derive_judge and not judge and "judge" not in self.values:
            name = judge_from_filename(filename)
            derived[name] = derived.get(name, 0) + fill_missing_judge(raw, name)

    def note_file(self, filename: str, fmt: str, replaced: dict[str, int], derived: dict[str, int]) -> None:
        """The file's sentences: values replaced by ``--set``, a judge named after it, Arena's order."""
        shown = PurePath(filename).name
        for col, n in replaced.items():
            self.remarks.append(f"{shown}: {col}={self.values[col]}, set for every row, replaced the file's "
                                f"own {col} in {n:,} row{'s' if n != 1 else ''}.")
        for name, n in derived.items():
            if n:
                self.derived.append(name)
                self.remarks.append(
                    f"{shown}: {n:,} row{'s name' if n != 1 else ' names'} no judge; read as judge {name!r}, "
                    "named after the file (to name it: --judge NAME, or the Data page's judge box).")
        if fmt == "arena" and "order" not in self.values:
            self.remarks.append(f"{shown}: every battle is stored with order AB (in Chatbot Arena logs "
                                "model_a is the answer shown first), so its position bias can be read.")


GC_EVERY_ROWS = 100_000
"""Rows added between two full collections during an import. Reading runs with the cyclic collector off
(``no_gc``), so the cycles the batches leave are freed by an explicit collection: at the default batch
size (100,000 rows) that is once per batch, as the memory bound was measured; smaller batches
(``LENS_IMPORT_BATCH_ROWS``, the tests' 40 rows) share one collection instead of paying one every few
dozen rows. The collection is of generation 1: with the collector off every object made since the last
collection is in the young generations, so a batch's cycles are all found there, without rescanning the
process's older objects (its modules: 30 ms a time, 0.3 s of a 1M-row import) for none."""


def _read_into(builder: ReportBuilder, sources, fmt, column_map, file_judges, pending: list, fmts: list,
               names: list, hashes: dict, baseline_model: str | None = None,
               constants: _Constants | None = None) -> None:
    """Read every file batch by batch into ``builder`` (small batches are pooled in ``pending``)."""
    constants = constants or _Constants({}, False, [])
    rows = since_gc = 0
    unmatched = {str(k).strip().lower(): str(k) for k in (column_map or {})}
    for source, filename in sources:
        found, batches = read_batches(source, filename, fmt, column_map)
        judge = (file_judges or {}).get(filename)
        replaced: dict[str, int] = {}
        derived: dict[str, int] = {}
        if baseline_model is not None and found != "arena-hard":
            raise LensError(f"--baseline names the baseline of Arena-Hard judgment records; {filename} "
                            f"is read as {found}, whose rows name both models.")
        for raw in batches:
            for key in raw.mapped & unmatched.keys():
                del unmatched[key]
            if judge:
                set_judge(raw, judge)
            constants.apply(raw, filename, judge, replaced, derived)
            if baseline_model is not None:
                raw.cols["model_b"], raw.problem = name_baseline(
                    list(raw.cols.get("model_b") or [None] * len(raw.line)), raw.problem, baseline_model)
            pending.append(raw)
            rows += len(raw.line)
            if rows >= batch_rows():
                builder.add(pending[0] if len(pending) == 1 else merge_raw(pending))
                pending.clear()
                since_gc += rows
                rows = 0
                if since_gc >= GC_EVERY_ROWS:  # whatever cycles the batches left are freed here
                    gc.collect(1)  # the young generations: everything made since the last collection
                    since_gc = 0
        constants.note_file(filename, found, replaced, derived)
        hashes[filename] = file_hash(source, filename, found)
        fmts.append(found)
        names.append(filename)
    if unmatched and names:
        missing = ", ".join(repr(k) for k in unmatched.values())
        where = names[0] if len(names) == 1 else f"any of the {len(names)} files"
        raise LensError(f"The column map names {missing}, which is not a column of {where}; "
                        "check the spelling (see the file's header), or leave that --map out.")


def validate_raw(raw: RawRows, *, dataset: str, source: str, fmt: str,
                 model_names: Mapping[str, str] | None = None,
                 judge_names: Mapping[str, str] | None = None,
                 value_map: Mapping[str, Mapping[str, str]] | None = None,
                 file_hashes: Mapping[str, str] | None = None) -> ValidationReport:
    """Normalise and check rows already read (one batch), e.g. from a format adapter."""
    builder = ReportBuilder(dataset, model_names, judge_names, value_map)
    builder.add(raw)
    return builder.finish(source, fmt, file_hashes)


def validate_bytes(
    data: bytes, filename: str, *, dataset: str, fmt: str | None = None,
    column_map: Mapping[str, str] | None = None, model_names: Mapping[str, str] | None = None,
    judge_names: Mapping[str, str] | None = None, value_map: Mapping[str, Mapping[str, str]] | None = None,
    judge: str | None = None,
) -> ValidationReport:
    """Validate one file's bytes (named ``filename``, which also gives review-format models/judge);
    ``judge`` puts every row under that judge."""
    return validate_sources([(data, filename)], dataset=dataset, fmt=fmt, column_map=column_map,
                            model_names=model_names, judge_names=judge_names, value_map=value_map,
                            file_judges={filename: judge} if judge else None)


def validate_many(
    files: Iterable[tuple[bytes, str]], *, dataset: str, fmt: str | None = None,
    column_map: Mapping[str, str] | None = None, model_names: Mapping[str, str] | None = None,
    judge_names: Mapping[str, str] | None = None, value_map: Mapping[str, Mapping[str, str]] | None = None,
    file_judges: Mapping[str, str] | None = None,
) -> ValidationReport:
    """Validate several files as one import (repeated rows are counted across files too)."""
    return validate_sources(files, dataset=dataset, fmt=fmt, column_map=column_map, model_names=model_names,
                            judge_names=judge_names, value_map=value_map, file_judges=file_judges)
