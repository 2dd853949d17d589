"""The shipped default dataset ``vicuna80``, built from its raw rating files on first use.

``data/vicuna80/raw`` holds the original review-format files of artidoro/qlora (gpt-4 judging the
8-model round robin) and bcdnlp/PRD (bard, claude, gpt-3.5-turbo, vicuna-13b and human judges,
and gpt-4 on the pairs with claude), the models' answers and the 80 questions (PROVENANCE.md
there). Validating those files takes 3-6 s on a busy 2-core box, so the validated result (verdicts
with the judges' rationales, questions, answers) is also shipped as Parquet in
``data/vicuna80/prebuilt`` and inserted directly on a store's first use; ``write_prebuilt`` rebuilds
it from the raw files and tests/test_shipped.py checks that it equals what the importer produces.
Without the prebuilt files the raw ones are imported. The store records that the bootstrap ran
(``init_log``), so a user who deletes ``vicuna80`` does not get it back on the next start.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from engine.frames import pd
from engine.ingest.shipped_counts import ensure_arena_counts
from engine.store.connection import DATA_DIR, Store, damaged_store_error, is_damaged_store
from engine.store.init_log import init_step_done, record_init_step
from engine.store.schema import DEFAULT_DATASET

VICUNA80_DIR = DATA_DIR / "vicuna80"
PREBUILT = "prebuilt"
"""Folder under the dataset root holding the validated frames as Parquet plus ``manifest.json``."""
_FRAMES = ("good", "prompts", "answers")
INIT_STEP = "default_dataset"

if TYPE_CHECKING:  # the importer is loaded only when a store imports vicuna80 (its first use)
    from engine.ingest.importer import ImportResult
    from engine.ingest.verdicts import ValidationReport

MODEL_NAMES: dict[str, str] = {
    "7b-guanaco-vicuna-generations-topp0.9-temp0.7": "guanaco-7b",
    "13b-guanaco-vicuna-generations-topp0.9-temp0.7": "guanaco-13b",
    "30b-guanaco-vicuna-generations-topp0.9-temp0.7": "guanaco-33b",  # the 33B model, "30b" in qlora's files
    "65b-guanaco-vicuna-generations-topp0.9-temp0.7": "guanaco-65b",
}
"""File-name parts → model names (the others are already short, once ``answer_`` is dropped)."""

JUDGE_NAMES: dict[str, str] = {"gpt4": "gpt-4", "gpt35": "gpt-3.5-turbo"}
"""PRD spells two judges differently from qlora; one name per judge."""

DESCRIPTION = (
    "Vicuna-bench: 80 questions, 9 models, pairwise verdicts of gpt-4, bard, claude, gpt-3.5-turbo, "
    "vicuna-13b and human raters in both presentation orders (qlora + PRD, MIT)."
)


def rating_files(root: Path = VICUNA80_DIR) -> list[Path]:
    """Every review-format rating file of the shipped data, in a fixed order."""
    return sorted((root / "raw").glob("*/ratings-*/*.jsonl"))


def _questions(root: Path) -> pd.DataFrame:
    q = pd.read_csv(root / "vicuna80_questions.csv", dtype={"question_id": str})
    return q.rename(columns={"question_id": "prompt_id"})


def _answers(root: Path) -> pd.DataFrame:
    """Each model's answer per question: PRD's ``answer_<model>`` files and qlora's guanaco runs."""
    parts = []
    for path in sorted((root / "raw" / "prd" / "generations").glob("answer_*.jsonl")):
        model = path.stem.removeprefix("answer_")
        parts += [
            (str(r["question_id"]), model, r["text"]) for r in map(json.loads, path.open(encoding="utf-8"))
        ]
    for path in sorted((root / "raw" / "qlora" / "generations").glob("*.jsonl")):
        model = MODEL_NAMES[path.stem]
        parts += [(str(r["question_id"]), model, r["generation"])
                  for r in map(json.loads, path.open(encoding="utf-8"))]
    df = pd.DataFrame(parts, columns=["prompt_id", "model", "text"])
    return df.assign(dataset=DEFAULT_DATASET, variant=0, turn=1)


def vicuna80_report(root: Path = VICUNA80_DIR) -> ValidationReport:
    """The shipped dataset as a validated report: verdicts, the 80 questions and every answer."""
    from engine.ingest.verdicts import validate_many

    files = rating_files(root)
    report = validate_many(
        ((p.read_bytes(), p.relative_to(root).as_posix()) for p in files),
        dataset=DEFAULT_DATASET, fmt="review", model_names=MODEL_NAMES, judge_names=JUDGE_NAMES,
    )
    q = _questions(root)
    category = dict(zip(q["prompt_id"], q["category"], strict=True))
    good = report.good.assign(category=report.good["prompt_id"].map(category).astype("string"))
    prompts = q.assign(dataset=DEFAULT_DATASET, variant=0, turn=1, variant_kind="original")
    report = report.with_frames(good=good, prompts=prompts, answers=_answers(root))
    return replace(report, source="data/vicuna80/raw")


def write_prebuilt(root: Path = VICUNA80_DIR) -> Path:
    """Validate the raw files and write the validated stage files (verdicts, prompts, answers, each
    with its ``seq``) as zstd Parquet + a manifest; run after changing raw/."""
    import pyarrow.parquet as pq

    report = vicuna80_report(root)
    if report.n_rejected or report.excluded:
        raise ValueError(f"{report.n_rejected} shipped rows do not validate; nothing written")
    out = root / PREBUILT
    out.mkdir(exist_ok=True)
    for name, path in zip(_FRAMES, (report.good_file, report.prompts_file, report.answers_file), strict=True):
        pq.write_table(pq.read_table(path), out / f"{name}.parquet", compression="zstd")
    manifest = {
        "format": report.format,
        "rows_read": report.rows_read,
        "repeats": report.repeats,
        "n_good": report.n_good,
        "n_invalid": report.n_invalid,
        "field_names": list(report.field_names),
        "dropped": {k: list(v) for k, v in report.dropped.items()},
        "file_hashes": dict(report.file_hashes),
    }
    (out / "manifest.json").write_text(
        json.dumps(manifest, indent=1, sort_keys=True) + "\n", encoding="utf-8"
    )
    return out


def prebuilt_report(root: Path = VICUNA80_DIR) -> ValidationReport | None:
    """The shipped dataset as a report whose rows are the prebuilt Parquet files (the store inserts
    them straight from there); None when they are not there."""
    from engine.ingest.staging import Stage
    from engine.ingest.verdicts import ValidationReport

    folder = root / PREBUILT
    if not (folder / "manifest.json").is_file():
        return None
    m = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    return ValidationReport(
        dataset=DEFAULT_DATASET, source="data/vicuna80/raw", format=m["format"], rows_read=m["rows_read"],
        n_good=m["n_good"], n_rejected=0, n_invalid=m["n_invalid"], stage=Stage(),
        good_file=str(folder / "good.parquet"), excluded=(), rejected_files=(),
        prompts_file=str(folder / "prompts.parquet"), answers_file=str(folder / "answers.parquet"),
        field_names=tuple(m["field_names"]), dropped={k: tuple(v) for k, v in m["dropped"].items()},
        repeats=m["repeats"], file_hashes=m["file_hashes"],
    )


def import_vicuna80(store: Store, *, replace: bool = False, root: Path = VICUNA80_DIR) -> ImportResult:
    """Import the shipped dataset (prebuilt Parquet when present, else the raw files; all-or-nothing)."""
    from engine.ingest.importer import store_report

    report = prebuilt_report(root) or vicuna80_report(root)
    return store_report(store, report, DEFAULT_DATASET, replace=replace,
                        description=DESCRIPTION, source="data/vicuna80 (qlora + PRD rating files)")


def ensure_default_dataset(store: Store) -> bool:
    """On a store's first use import ``vicuna80``; True when it imported. Runs once per store."""
    if init_step_done(store, INIT_STEP):
        return False
    imported = False
    detail = "vicuna80 was already there"
    if not store.has_dataset(DEFAULT_DATASET):
        result = import_vicuna80(store)
        imported = result.status == "stored"
        if not imported:  # not recorded: the next start tries again
            return False
        detail = f"import {result.import_id}: {result.summary()}"
    record_init_step(store, INIT_STEP, detail)
    return imported


def open_store(
    db: str | os.PathLike[str] | None = None,
    *,
    ensure_default: bool = True,
    keep_open: bool = True,
    lock_wait_s: float = 0.0,
) -> Store:
    """Open (and migrate) the store; on first use import the shipped default dataset. It lives here,
    above the importer, so the store layer never needs the importer."""
    # held open from the migration through the first-use steps: one open of the file, not two (a store the
    # app holds only while it works, ``keep_open=False``, lets it go after them)
    store = Store(db, keep_open=True, lock_wait_s=lock_wait_s)
    try:
        if ensure_default:
            with store.session():
                ensure_default_dataset(store)
                ensure_arena_counts(store)  # the second shipped dataset: arena pair counts (issue 25)
    except Exception as exc:
        if is_damaged_store(exc):  # the first-use check read a lost block: the store's sentence
            store.close()
            raise damaged_store_error(store.path, exc, verb="read") from exc
        raise
    finally:
        if not keep_open:
            store.keep_open = False
            store.release()
    return store


def opens_as_is(db: str | os.PathLike[str] | None, lock_wait_s: float = 0.0) -> bool:
    """Whether ``open_store`` would write nothing to this existing store: every migration applied and its
    first-use steps done. Read with a read-only open. The import's early insert (``early_insert``) opens
    an existing store before the import is known good only then, so that an import stopped during
    validation (an error, Ctrl-C) leaves it as it was, as the serial path does, which opens it after."""
    import duckdb

    from engine.ingest.shipped_counts import ARENA_COUNTS_FILE, INIT_STEP_ARENA_COUNTS
    from engine.store.connection import list_migrations

    store = Store(db, read_only=True, lock_wait_s=lock_wait_s)
    try:
        done = {r[0] for r in store.cursor().execute("SELECT version FROM schema_migrations").fetchall()}
        return ({m.version for m in list_migrations()} <= done and init_step_done(store, INIT_STEP)
                and (init_step_done(store, INIT_STEP_ARENA_COUNTS) or not ARENA_COUNTS_FILE.is_file()))
    except duckdb.Error:  # no such table: an older store, migrated by its next open
        return False
    finally:
        store.close()


class NewStoreSeed:
    """A new store made (migrated and seeded like ``open_store``'s first use) in a thread beside the
    import's validation, so that on two cores the seed (about 0.5 s: vicuna80's prebuilt rows, the arena
    counts, a commit per step) is done when the rows are checked (issue 26 point 6). DuckDB releases
    the GIL while it works. Only for a file that does not exist yet: an existing store is not opened
    early, so its lock is still taken only to write. The thread's store is closed when it is done, and
    ``wait`` joins it; the caller then opens the store as before (``open_store`` finds it seeded and
    seeds nothing again). A failure in the thread is left to that open, which meets it again and says
    so as it always did (a seed step is one transaction: a failed one leaves nothing half-written)."""

    def __init__(self, db: str | os.PathLike[str] | None, lock_wait_s: float = 0.0) -> None:
        from engine.store.connection import resolve_db_path

        path = resolve_db_path(db)
        self.thread: threading.Thread | None = None
        if not path.exists():
            self.thread = threading.Thread(target=self._seed, args=(path, lock_wait_s),
                                           name="lens-new-store", daemon=False)
            self.thread.start()

    @staticmethod
    def _seed(path: Path, lock_wait_s: float) -> None:
        with contextlib.suppress(Exception):  # the caller's open meets it again and reports it
            open_store(path, lock_wait_s=lock_wait_s).close()

    def wait(self) -> None:
        """Return once the thread (if any) has finished."""
        if self.thread is not None:
            self.thread.join()
