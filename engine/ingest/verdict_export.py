"""Verdicts written out again: a dataset exported so that importing the file gives it back, and an
import's rejected rows. Every file goes through a temp file and a rename, so a failure leaves none.
"""

from __future__ import annotations

import io
import json
import os
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from engine.errors import LensError
from engine.ingest.csv_cells import write_csv
from engine.ingest.limits import NAME_MAX_CHARS, TEXT_MAX_CHARS
from engine.ingest.output_files import OutputPath, check_output, write_output
from engine.ingest.verdicts import ValidationReport
from engine.store.connection import Store
from engine.store.datasets import require_dataset
from engine.store.schema import STYLE_COLUMNS, VERDICT_COLUMNS

EXPORT_FORMATS: tuple[str, ...] = ("csv", "jsonl", "parquet")
EXPORT_COLUMNS: tuple[str, ...] = tuple(
    c for c in VERDICT_COLUMNS if c not in ("dataset", "source_file", "source_line")
)
"""Exported columns: everything a re-import needs to give back the same verdicts (and the style counts,
``STYLE_COLUMNS``, when some verdict of the dataset carries one)."""


def prepare_rejected(path: str | os.PathLike[str], inputs: Sequence[str | os.PathLike[str]] = ()) -> Path:
    """Check, before anything is stored, that the rejected rows can be written to ``path``
    (``output_files.check_output``) and that it is not one of the ``inputs``."""
    p = Path(path)
    check_output(p, "the rejected rows")
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

    write_output(path, write, "the rejected rows")
    return report.n_rejected


TEXT_KEY: tuple[str, ...] = ("prompt_id", "variant", "turn")
"""A prompt instance: what a question text belongs to (an answer text also to its model)."""


def export_frame(store: Store, dataset: str) -> pd.DataFrame:
    """The dataset's verdicts in the import format (winner ``invalid`` written as ``error``; the stored
    style counts as their columns, when any verdict has one), with the texts the import reads back:
    ``question`` of each prompt instance and ``answer_a`` / ``answer_b`` of each model on it, each on the
    first verdict that names it (the import keeps the first text per key, so later copies would only grow
    the file). A pair-count dataset (migration 074) has no verdict: its pair counts, in the columns the
    import detects as pair counts."""
    from engine.store.pair_counts import is_pair_count_dataset, pair_count_rows

    require_dataset(store, dataset)
    if is_pair_count_dataset(store, dataset):
        return pair_count_rows(store, dataset)
    df = store.verdicts(dataset)[list(EXPORT_COLUMNS)].reset_index(drop=True)
    style = store.verdicts(dataset, columns=STYLE_COLUMNS)[list(STYLE_COLUMNS)].reset_index(drop=True)
    if style.notna().to_numpy().any():  # a dataset without counts exports as before
        df = pd.concat([df, style], axis=1)
    _check_export_limits(df, dataset)
    df = df.assign(winner=df["winner"].replace({"invalid": "error"}))
    key = list(TEXT_KEY)
    # the import takes a prompt's category and variant_kind from the verdict that carries its text:
    # the first verdict that agrees with the stored prompt, else the prompt instance's first verdict
    labels = [*key, "category", "variant_kind"]
    prompts = store.prompt_texts(dataset)[[*labels, "text"]].astype({c: "string" for c in labels[3:]})
    rows = df[labels].reset_index()
    agreeing = rows.merge(prompts, on=labels).sort_values("index").drop_duplicates(key)
    first = rows.drop_duplicates(key)[["index", *key]].merge(prompts[[*key, "text"]], on=key)
    fallback = first.loc[~first.set_index(key).index.isin(agreeing.set_index(key).index)]
    question = pd.concat([agreeing, fallback])
    answers = store.answer_texts(dataset)[[*key, "model", "text"]]
    sides = pd.concat(
        [df[[*key, f"model_{s}"]].rename(columns={f"model_{s}": "model"}).assign(side=s).reset_index()
         for s in ("a", "b")]
    ).sort_values(["index", "side"], kind="stable")
    named = sides.drop_duplicates([*key, "model"]).merge(answers, on=[*key, "model"], how="inner")
    texts = {"question": question.set_index("index")["text"]}
    for s in ("a", "b"):
        texts[f"answer_{s}"] = named.loc[named["side"] == s].set_index("index")["text"]
    for col, values in texts.items():
        df[col] = values.reindex(df.index).astype("string")
    return df


def texts_left_out(store: Store, dataset: str) -> tuple[int, int]:
    """How many prompt texts and answer texts of the dataset an export cannot carry: no verdict of
    the dataset names their prompt instance (and model), or the text is blank (the import reads a
    blank text as none). An export names them rather than losing them in silence."""
    from engine.store.attached import verdicts_relation

    cur = store.cursor()
    verdicts = verdicts_relation(store, dataset)  # the verdicts table, or the attached files read in place
    on = ("CAST(v.prompt_id AS VARCHAR) = t.prompt_id AND coalesce(v.variant, 0) = t.variant "
          "AND coalesce(v.turn, 1) = t.turn")
    blank = "t.text IS NULL OR trim(t.text, ' \t\n\r\v\f') = ''"
    counts = []
    for table, extra in (("prompts", ""), ("answers", " AND t.model IN (v.model_a, v.model_b)")):
        row = cur.execute(
            f"SELECT count(*) FROM {table} t WHERE t.dataset = $left_out_ds AND ({blank} OR NOT EXISTS "
            f"(SELECT 1 FROM {verdicts} v WHERE {on}{extra}))",
            {"left_out_ds": dataset, **dict(verdicts.values)},
        ).fetchone()
        counts.append(int(row[0]) if row else 0)
    return counts[0], counts[1]


def texts_left_out_note(dataset: str, prompts: int, answers: int) -> str | None:
    """The sentence an export of ``dataset`` adds when ``texts_left_out`` counted texts its file does
    not carry (the CLI's note on stderr, the Data page's note by its download), or None."""
    if not (prompts or answers):
        return None
    return (f"{prompts} prompt text(s) and {answers} answer text(s) of {dataset!r} are not in the file: "
            "no verdict names their prompt (and model), or the text is blank.")


def map_left_out_note(store: Store, dataset: str) -> str | None:
    """The sentence an export of ``dataset`` adds when a model-name map is kept with it
    (``engine.store.model_maps``): a verdict file has no place for it, so the export says how to carry it
    (the CLI's note on stderr, the Data page's note by its download), or None."""
    from engine.store.model_maps import stored_map

    n = len(stored_map(store, dataset))
    if not n:
        return None
    return (f"the model-name map kept with {dataset!r} ({n} model(s)) is not in the file; "
            f"'python -m engine datasets map {dataset} --format csv > FILE' writes it, and "
            "'datasets map NEW FILE' (or the Data page's map section) keeps it with an imported copy.")


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
    """Write the dataset's verdicts and texts as csv, jsonl or parquet so that importing them gives
    them back; returns the verdict count.

    A path is written as ``output_files.write_output`` does (a regular file through a temp file and a
    rename; a device, FIFO or open stream in place, never replaced; LensError on failure). A buffer
    gets the same bytes (the app's download).
    """
    if fmt not in EXPORT_FORMATS:
        raise LensError(f"Cannot export as {fmt!r}; use one of {', '.join(EXPORT_FORMATS)}.")
    df = export_frame(store, dataset)
    if isinstance(path_or_buffer, str | os.PathLike):
        export_to(path_or_buffer, df, fmt, dataset)
    else:
        _write_export(df, path_or_buffer, fmt)
    return int(len(df))


def export_to(path: str | os.PathLike[str], df: pd.DataFrame, fmt: str, dataset: str) -> OutputPath:
    """Write an ``export_frame`` to ``path``; returns how it was written (in place or replaced)."""
    def write(tmp: str) -> None:
        with open(tmp, "wb") as fh:
            _write_export(df, fh, fmt)

    return write_output(path, write, f"the verdicts of {dataset!r}")


_JSON_ROWS = 10_000
"""Rows turned into JSON lines at a time."""


def _jsonl(df: pd.DataFrame):
    """The frame as JSON lines, a chunk at a time: floats written exactly (``repr``: pandas' own
    writer keeps 10 digits), missing values as null, text as written (not ASCII-escaped)."""
    for start in range(0, len(df), _JSON_ROWS):
        chunk = df.iloc[start:start + _JSON_ROWS].astype(object)
        chunk = chunk.where(chunk.notna(), None)
        yield "".join(json.dumps(rec, ensure_ascii=False, allow_nan=False) + "\n"
                      for rec in chunk.to_dict("records"))


def _write_export(df: pd.DataFrame, target, fmt: str) -> None:
    """Write the frame to an open file (text or binary) as csv, jsonl or parquet."""
    binary = not isinstance(target, io.TextIOBase)
    if fmt == "parquet":
        df.to_parquet(target, index=False)
    elif binary:
        text = io.TextIOWrapper(target, encoding="utf-8", newline="", write_through=True)
        try:
            _write_text(df, text, fmt)
        finally:
            text.detach()  # the caller owns the binary file
    else:
        _write_text(df, target, fmt)


def _write_text(df: pd.DataFrame, target, fmt: str) -> None:
    if fmt == "csv":
        write_csv(df, target)  # formula-like cells neutralised (engine/views/exports.py); jsonl/parquet raw
    else:
        for lines in _jsonl(df):
            target.write(lines)
