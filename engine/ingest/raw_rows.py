"""Raw verdict rows and the import's vocabulary: the canonical column names and their aliases, the
winner spellings of the review format, how a cell of any type reads as text, and the ``RawRows`` every
reader returns (canonical-named cells, original fields, true line numbers, per-row problems)."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import Any, Protocol

import numpy as np

from engine.errors import LensError
from engine.ingest.formats import TOOL_NAMES
from engine.ingest.limits import (
    BATCH_TEXT_BYTES,
)
from engine.store.schema import STYLE_COLUMNS

CONTAINERS: tuple[str, ...] = ("csv", "jsonl", "json", "parquet", "review")


FORMATS: tuple[str, ...] = (*CONTAINERS, *TOOL_NAMES)
"""Accepted ``fmt`` values; ``None`` means detect from the file name, its first bytes and the
fields of its first record. A container name (csv, jsonl, …) reads the file as canonical columns;
a tool name (``engine/ingest/formats``) reads it with that tool's field meanings."""


REQUIRED: tuple[str, ...] = ("prompt_id", "model_a", "model_b", "winner")


OPTIONAL: tuple[str, ...] = (
    "judge", "variant", "variant_kind", "turn", "category", "order", "prob_a", "annotator", "explanation",
    "battle_id", "tstamp", "strength", *STYLE_COLUMNS, "conv_metadata",
)
"""``STYLE_COLUMNS`` and ``conv_metadata``: the answers' style counts (engine.style.given)."""


TEXTS: tuple[str, ...] = ("question", "answer_a", "answer_b")
"""Optional texts: they go to the ``prompts`` / ``answers`` tables, not to each verdict."""


CANONICAL: frozenset[str] = frozenset((*REQUIRED, *OPTIONAL, *TEXTS))


COLUMN_ALIASES: dict[str, str] = {
    "question_id": "prompt_id",  # lmsys battles, MT-Bench judgments
    "rationale": "explanation",
    "position": "order",
    "num": "battle_id",  # Arena battle logs
    "id": "battle_id",
    "uid": "battle_id",
    "timestamp": "tstamp",
    "worker": "annotator",  # crowd files
}


REVIEW_SCORES: dict[str, str] = {"1": "A", "2": "B", "3": "tie", "-1": "invalid"}
"""Review format: 1 = the first shown answer wins, 2 = the second, 3 = tie, -1 = unparsable."""


KNOWN_JUDGES: tuple[str, ...] = (
    "gpt-3.5-turbo", "vicuna-13b", "gpt-4", "gpt35", "gpt4", "claude", "bard", "human",
)
"""Judge names recognised at the end of a review file name (others: the last dash-separated word)."""


REVIEW_NAME = re.compile(r"^(?P<first>.+?)-vs-(?P<rest>.+)-reviewer(?:[-_].*)?$")


_MODEL_PREFIX = re.compile(r"^answer[-_]")


def cell_text(v: object) -> str | None:
    """A cell of any type as stripped text; None for missing/blank. Integral floats print without '.0'."""
    if type(v) is str:
        v = v.strip()
        return v or None
    if v is None:
        return None
    if isinstance(v, float):
        if math.isnan(v):
            return None
        return str(int(v)) if v.is_integer() else repr(v)
    if isinstance(v, bool | np.bool_):
        return str(bool(v))
    if isinstance(v, np.integer | int):
        return str(int(v))
    if isinstance(v, np.floating):
        return cell_text(float(v))
    if isinstance(v, dict | list):
        return json.dumps(v, ensure_ascii=False)
    s = str(v).strip()
    return s or None


class RowView(Protocol):
    """Rows by position: a list, or a reader's view that builds a row only when it is indexed."""

    def __len__(self) -> int: ...

    def __getitem__(self, i: int, /) -> Any: ...


@dataclass
class RawRows:
    """Rows of one or more files: canonical-named values, original fields, lines, parse problems."""

    # canonical name → one cell per row, a list or an engine/ingest/csv_bulk.TextCells (absent: no file has
    # the column)
    cols: dict[str, Any]
    orig: RowView  # per row: a dict of its original fields, or (CSV) the list of its values
    file: list[str]
    line: list[int]
    problem: list[str | None]  # a reason found while parsing, else None
    headers: dict[str, tuple] = field(default_factory=dict)  # CSV file → its header
    dropped: dict[str, list[str]] = field(default_factory=dict)  # file → its columns not kept
    mapped: frozenset[str] = frozenset()  # the column map's file columns (lower-cased) these rows had


def dropped_columns(filename: str, header: list, chosen: Mapping) -> dict[str, list[str]]:
    """The file's columns that are not verdict fields (reported, not kept)."""
    out = [str(c) for c in header if c not in chosen and c != "raw_text"]
    return {filename: out} if out else {}


def mapped_columns(chosen: Mapping, column_map: Mapping[str, str] | None) -> frozenset[str]:
    """The column map's file columns (lower-cased) that ``canonical_columns`` found in a header: a map
    naming a column no file has is refused once every file is read."""
    if not column_map:
        return frozenset()
    return frozenset(str(c).strip().lower() for c in chosen) & {str(k).strip().lower() for k in column_map}


def batch_full(max_rows: int):
    """Whether a batch of ``rows`` rows and ``chars`` characters is full."""
    return lambda rows, chars: rows >= max_rows or chars >= BATCH_TEXT_BYTES


def canonical_columns(header: list, filename: str, column_map: Mapping[str, str] | None,
                       check: bool = True) -> dict:
    """Rename the file's columns to canonical names (user map, then case-insensitive + aliases)."""
    user = {str(k).strip().lower(): str(v).strip().lower() for k, v in (column_map or {}).items()}
    for target in user.values():
        if target not in CANONICAL:
            raise LensError(f"The column map names {target!r}, which is not a verdict column "
                            f"({', '.join(sorted(CANONICAL))}).")
    best: dict[str, tuple[int, object]] = {}  # canonical name → (priority, file column)
    for col in header:
        low = str(col).strip().lower()
        if low in user:
            name, rank = user[low], 2  # the user's map wins over everything
        elif low in CANONICAL:
            name, rank = low, 1
        elif low in COLUMN_ALIASES:
            name, rank = COLUMN_ALIASES[low], 0  # an alias never overrides the canonical column
        else:
            continue
        if name in best:
            prev_rank, prev = best[name]
            if rank == prev_rank and rank > 0:
                raise LensError(f"{filename} has two columns that both mean {name!r}: {prev!r} and {col!r}.")
            if rank <= prev_rank:
                continue
        best[name] = (rank, col)
    chosen = {col: name for name, (_, col) in best.items()}
    missing = [c for c in REQUIRED if c not in chosen.values()]
    if missing and check:
        found = ", ".join(map(str, header)) or "none"
        raise LensError(
            f"{filename} has no {' / '.join(missing)} column (required: {', '.join(REQUIRED)}; "
            f"found: {found})."
        )
    return chosen


def merge_raw(parts: list[RawRows]) -> RawRows:
    """Several batches (or files) as one ``RawRows``."""
    n = [len(r.line) for r in parts]
    return RawRows(
        cols={k: [v for r, m in zip(parts, n, strict=True) for v in (r.cols.get(k) or [None] * m)]
              for k in dict.fromkeys(k for r in parts for k in r.cols)},
        orig=[r.orig[i] for r in parts for i in range(len(r.line))],
        file=[f for r in parts for f in r.file],
        line=[x for r in parts for x in r.line],
        problem=[p for r in parts for p in r.problem],
        headers={k: v for r in parts for k, v in r.headers.items()},
        dropped={k: list(dict.fromkeys(c for r in parts for c in r.dropped.get(k, [])))
                 for k in dict.fromkeys(k for r in parts for k in r.dropped)},
        mapped=frozenset().union(*(r.mapped for r in parts)),
    )


def parse_review_name(filename: str) -> tuple[str, str, str]:
    """``<first>-vs-<second>-<judge>-reviewer….jsonl`` → (first model, second model, judge)."""
    stem = PurePath(filename).name
    for ext in (".jsonl", ".json"):
        if stem.endswith(ext):
            stem = stem[: -len(ext)]
    m = REVIEW_NAME.match(stem)
    if not m:
        raise LensError(
            f"{PurePath(filename).name} is not named like a review file "
            "(<first>-vs-<second>-<judge>-reviewer….jsonl), so its models and judge are unknown."
        )
    rest = m.group("rest")
    judge = next((j for j in sorted(KNOWN_JUDGES, key=len, reverse=True) if rest.endswith("-" + j)), None)
    if judge is None:
        second, _, judge = rest.rpartition("-")
    else:
        second = rest[: -len(judge) - 1]
    first = _MODEL_PREFIX.sub("", m.group("first"))
    second = _MODEL_PREFIX.sub("", second)
    if not first or not second or not judge:
        raise LensError(f"Cannot tell the two models and the judge from the file name {filename}.")
    return first, second, judge


def review_rows(rows: list[dict], problems: list[str | None], filename: str,
                 seen: dict[str, int] | None = None) -> list[dict]:
    """Review records → canonical-named records: first shown model = model_a, order AB.

    Rows with a review id carry the judge's rationale in ``text``; rows without one (human votes)
    carry the question there, and repeated rows are separate votes, numbered per question.
    """
    first, second, judge = parse_review_name(filename)
    seen = {} if seen is None else seen  # vote numbers per question, carried across batches
    out: list[dict] = []
    for rec, prob in zip(rows, problems, strict=True):
        if prob is not None:
            out.append({})
            continue
        key = cell_text(rec.get("score"))
        if key is None:
            problems[len(out)] = "the row has no score"
        elif key not in REVIEW_SCORES:
            problems[len(out)] = f"score {key!r} is not 1, 2, 3 or -1"
        qid = cell_text(rec.get("question_id"))
        is_vote = "review_id" not in rec and "reviewer_id" not in rec
        new = {
            "prompt_id": qid,
            "model_a": first,
            "model_b": second,
            "judge": judge,
            "order": "AB",
            "winner": REVIEW_SCORES.get(key or ""),
        }
        if is_vote:
            seen[qid or ""] = seen.get(qid or "", 0) + 1
            new["annotator"] = f"{judge}_vote{seen[qid or '']}"
            new["question"] = rec.get("text")
        else:
            new["explanation"] = rec.get("text")
        out.append(new)
    return out
