"""Read prompt and answer text files (the shapes of ``engine.ingest.text_shapes``) into an import's stage.

Files are JSON Lines or JSON arrays (every published shape is one of them). Each file is read one batch
at a time and its rows appended to two Parquet files of a ``Stage`` (prompts, answers), so memory is
bounded by a batch whatever the files' size; nothing touches the store here. A folder laid out like
FastChat's (``question.jsonl`` and ``model_answer/*.jsonl``) stands for those files. A record that gives
no text is counted with its file and line; the first one is kept as the sentence a refusal names.
LLMFAO's ``models.jsonl`` is read before the other files, whatever their order, because
``results.jsonl`` may name its models by number only.
"""

from __future__ import annotations

import io
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

import pandas as pd

from engine.errors import LensError
from engine.ingest.json_reader import json_array_batches, jsonl_records
from engine.ingest.staging import Stage
from engine.ingest.text_shapes import SHAPE_NAMES, BadRecord, TextShape, detect_shape, model_names, shape
from engine.ingest.verdict_files import not_text

Source = tuple[str | os.PathLike[str] | bytes, str]
"""A file to read: a path, or uploaded bytes, with the name messages use."""

SHAPE_FIELDS = ", ".join(SHAPE_NAMES)


@dataclass
class FileRead:
    """What one file gave: its shape, records, text rows and unusable records."""

    name: str
    shape: str
    title: str
    records: int = 0
    prompts: int = 0
    answers: int = 0
    bad: int = 0
    other_model_ids: set[str] = field(default_factory=set)
    """``model_id`` (``model``) values of an answers file that differ from its name (the model used)."""


@dataclass(eq=False)
class TextsRead:
    """The staged texts of one import: Parquet files of prompt and answer rows (``seq`` in file order),
    what each file gave, and the unusable records (how many, and the first as a sentence)."""

    stage: Stage
    prompts_file: str
    answers_file: str
    files: list[FileRead]
    n_bad: int
    first_bad: str | None

    @property
    def n_prompts(self) -> int:
        """Prompt rows read (one per prompt and turn; a repeated key counts each time)."""
        return sum(f.prompts for f in self.files)

    @property
    def n_answers(self) -> int:
        """Answer rows read (one per prompt, turn and model)."""
        return sum(f.answers for f in self.files)

    def files_table(self) -> pd.DataFrame:
        """One row per file: name, shape, records, prompt and answer texts, unusable records."""
        return pd.DataFrame([{"file": f.name, "read as": f.title, "records": f.records,
                              "prompt texts": f.prompts, "answer texts": f.answers, "unusable": f.bad}
                             for f in self.files])

    def notes(self) -> list[str]:
        """One sentence per thing worth knowing about the files that is not an error."""
        out = []
        for f in self.files:
            if f.other_model_ids:
                ids = ", ".join(sorted(f.other_model_ids)[:3])
                out.append(f"{f.name}: answers stored under model {Path(f.name).stem!r}, the file's name, as "
                           f"FastChat and Arena-Hard name them; its model field says {ids}.")
            if f.shape == "alpaca-outputs":
                out.append(f"{f.name}: AlpacaEval outputs carry no prompt id, so each is matched by its "
                           "instruction text (the id the AlpacaEval annotation reader gives it).")
            if f.shape == "llmfao-models" and len(self.files) == 1:
                out.append(f"{f.name} holds model names only, no texts; give it with results.jsonl.")
        return out


def expand(paths: Sequence[str | os.PathLike[str]]) -> list[Path]:
    """The files that ``paths`` stand for: a file is itself; a folder laid out like FastChat's stands for
    its ``question.jsonl`` and ``model_answer/*.jsonl`` (reference answers are not a model's), any other
    folder for its ``*.jsonl`` and ``*.json`` files, by name."""
    out: list[Path] = []
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            if (p / "question.jsonl").is_file() or (p / "model_answer").is_dir():
                found = [q for q in [p / "question.jsonl"] if q.is_file()]
                found += sorted((p / "model_answer").glob("*.jsonl"))
            else:
                found = sorted(q for q in p.iterdir() if q.suffix in (".jsonl", ".json") and q.is_file())
            if not found:
                raise LensError(f"The folder {raw} holds no text files (question.jsonl, "
                                "model_answer/*.jsonl, *.jsonl or *.json).")
            out += found
        elif p.is_file():
            out.append(p)
        else:
            raise LensError(f"There is no file or folder {raw}.")
    return out


def _open(source) -> BinaryIO:
    if isinstance(source, bytes | bytearray):
        return io.BytesIO(bytes(source))
    try:
        return open(source, "rb")  # noqa: SIM115 (closed by the caller's with)
    except OSError as exc:
        raise LensError(f"Cannot read {source} ({exc.strerror or exc}).") from exc


def _is_array(fh: BinaryIO) -> bool:
    head = fh.read(4096).lstrip(b"\xef\xbb\xbf \t\r\n")
    fh.seek(0)
    return head.startswith(b"[")


def _records(fh: BinaryIO, name: str) -> Iterator[tuple[list[dict], list[int], list[str | None]]]:
    if _is_array(fh):
        yield from json_array_batches(fh, name, None, records_only=True)
    else:
        yield from jsonl_records(fh)


def _first_record(source, name: str) -> dict | None:
    """The file's first JSON object (for its shape), or None when the file has none. A compressed or
    binary file, or a first line that is no JSON record (a 5,000-digit number, a lone surrogate), is
    one sentence saying so rather than "holds no JSON record"."""
    with _open(source) as fh:
        problem = not_text(fh.read(65_536), name, "jsonl", kind="JSON file of texts", rows="texts")
        if problem:
            raise LensError(problem)
        fh.seek(0)
        for rows, lines, problems in _records(fh, name):
            for rec, line, prob in zip(rows, lines, problems, strict=True):
                if prob is None and isinstance(rec, dict):
                    return rec
                if prob is not None:
                    raise LensError(f"{name} line {line:,}: {prob}; nothing was stored.")
            return None
    return None


def _shape_of(source, name: str, forced: str | None) -> TextShape:
    if forced is not None:
        if forced not in SHAPE_NAMES:
            raise LensError(f"There is no text file shape {forced!r}; the shapes are {SHAPE_FIELDS}.")
        return shape(forced)
    first = _first_record(source, name)
    if first is None:
        raise LensError(f"{name} holds no JSON record to read texts from.")
    found = detect_shape(set(first))
    if found is None:
        raise LensError(f"{name} is not a text file of a known shape (its first record has fields "
                        f"{', '.join(sorted(first)[:8])}; the shapes are {SHAPE_FIELDS}).")
    return found


def _lowered(rec: dict) -> dict:
    return {str(k).lower(): v for k, v in rec.items()}


def read_text_files(sources: Sequence[Source], *, forced_shape: str | None = None,
                    dataset: str = "texts") -> TextsRead:
    """Read ``sources`` (each a path or bytes, with its name) into a fresh stage; nothing is stored."""
    if not sources:
        raise LensError("Give at least one text file.")
    shapes = [_shape_of(src, name, forced_shape) for src, name in sources]
    order = sorted(range(len(sources)), key=lambda i: shapes[i].name != "llmfao-models")  # maps first
    stage = Stage()
    prompts_file, answers_file = stage.new_file("prompts"), stage.new_file("answers")
    models: dict[str, str] = {}
    read: dict[int, FileRead] = {}
    written: set[str] = set()
    n_bad, first_bad, seq = 0, None, 0
    for i in order:
        (src, name), sh = sources[i], shapes[i]
        got = FileRead(name=Path(name).name, shape=sh.name, title=sh.title)
        stem = Path(name).name.removesuffix(".jsonl").removesuffix(".json")
        with _open(src) as fh:
            for rows, lines, problems in _records(fh, name):
                prompt_rows: list[dict] = []
                answer_rows: list[dict] = []
                for rec, line, prob in zip(rows, lines, problems, strict=True):
                    got.records += 1
                    try:
                        if prob is not None:
                            raise BadRecord(prob.replace("verdict record", "text record"))
                        low = _lowered(rec)
                        p, a = sh.rows(low, stem, models)
                        if sh.name == "llmfao-models":
                            number, model = model_names(low)
                            models[number] = model
                        if sh.name in ("model-answers", "arena-hard-answers"):
                            mid = low.get("model_id", low.get("model"))
                            if isinstance(mid, str) and mid.strip() and mid.strip() != stem:
                                got.other_model_ids.add(mid.strip())
                    except BadRecord as exc:
                        got.bad += 1
                        n_bad += 1
                        first_bad = first_bad or f"{got.name} line {line}: {exc}"
                        continue
                    for r in p:
                        prompt_rows.append({**r, "seq": seq, "dataset": dataset, "variant_kind": _kind(r)})
                        seq += 1
                    for r in a:
                        answer_rows.append({**r, "seq": seq, "dataset": dataset})
                        seq += 1
                got.prompts += len(prompt_rows)
                got.answers += len(answer_rows)
                for file, kind, frame in ((prompts_file, "prompts", prompt_rows),
                                          (answers_file, "answers", answer_rows)):
                    if frame:
                        stage.append(file, kind, pd.DataFrame(frame))
                        written.add(file)
        if got.records == 0:
            raise LensError(f"{got.name} has no rows.")
        read[i] = got
    for file, kind in ((prompts_file, "prompts"), (answers_file, "answers")):
        if file not in written:  # an empty file still needs its columns
            stage.append(file, kind, pd.DataFrame({c: pd.Series([], dtype=object) for c in _COLUMNS[kind]}))
    stage.close()
    return TextsRead(stage, prompts_file, answers_file, [read[i] for i in range(len(sources))], n_bad,
                     first_bad)


_COLUMNS = {
    "prompts": ["seq", "dataset", "prompt_id", "variant", "turn", "category", "variant_kind", "text"],
    "answers": ["seq", "dataset", "prompt_id", "variant", "turn", "model", "text"],
}


def _kind(row: dict) -> str:
    """The variant kind of a prompt text: variant 0 is the original prompt; others are paraphrases."""
    return "original" if row["variant"] == 0 else "paraphrase"
