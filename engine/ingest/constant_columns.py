"""Columns an import gives one value for every row (``--set COLUMN=VALUE``), and the judge name of rows
that name none.

A battle log that never says which answer was shown first (Chatbot Arena's: ``model_a`` is the left one)
or a file without a judge field carries a fact that holds for all its rows; ``--set order=AB`` or
``--set judge=human`` states it once instead of rewriting the file. A set value replaces whatever the file
(or a tool reader) has in that column: the option is the user's explicit word about every row, and the
import report says when it replaced values the file carried (``replaced``).

Rows left without a judge (no judge field, no ``--judge``, no ``--set judge``) are not stored under the
placeholder ``judge``: the CLI and the app name them after their file (``judge_from_filename``) and say so.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import PurePath

import numpy as np
import pyarrow.compute as pc

from engine.errors import LensError
from engine.ingest.cells import arrow_nulls, clean_arrow
from engine.ingest.raw_rows import RawRows

SETTABLE: tuple[str, ...] = ("judge", "order", "annotator", "category", "variant", "variant_kind", "turn")
"""Columns ``--set`` may fill: facts that can hold for a whole file. The verdict itself (prompt, models,
winner) and per-row values (probabilities, times, texts) cannot be constant."""

FILE_SUFFIXES: tuple[str, ...] = (".jsonl", ".ndjson", ".json", ".csv", ".tsv", ".txt", ".parquet", ".pq")
NAME_NOISE: frozenset[str] = frozenset({
    "comparison", "comparisons", "judgment", "judgments", "judgement", "judgements", "annotation",
    "annotations", "review", "reviews", "vote", "votes", "verdict", "verdicts", "battle", "battles",
    "pair", "pairs", "pairwise", "single", "results", "result", "output", "outputs", "clean", "public",
})
"""Words that describe what a file holds rather than who judged it: dropped from the ends of a file
name to make a judge name (``gpt4-comparisons.json`` → ``gpt4``, ``gpt-4_pair.jsonl`` → ``gpt-4``)."""
_SEPARATORS = re.compile(r"([-_. ]+)")
CASELESS: frozenset[str] = frozenset({"order", "variant_kind"})
"""Columns the import reads case-insensitively: ``ab`` replacing ``AB`` replaces nothing."""


def parse_set(specs: Iterable[str] | None, label: str = "--set") -> dict[str, str]:
    """``COLUMN=VALUE`` specs (``--set``, the Data page, whose words ``label`` names) → {column: value},
    each value checked by the import's own row rules before any file is read (one sentence for a bad one)."""
    out: dict[str, str] = {}
    for spec in specs or []:
        column, sep, value = str(spec).partition("=")
        col, value = column.strip().lower(), value.strip()
        if not sep or not col or not value:
            raise LensError(f"{label} {spec!r} is not of the form COLUMN=VALUE (e.g. order=AB or "
                            "judge=human).")
        if col not in SETTABLE:
            raise LensError(f"{label} {spec!r} names column {column.strip()!r}, which cannot be one value "
                            f"for every row; {label} takes {', '.join(SETTABLE)}.")
        if col in out and out[col] != value:
            raise LensError(f"{label} gives {col} twice ({out[col]!r} and {value!r}); give it once.")
        problem = _value_problem(col, value)
        if problem:
            raise LensError(f"{label} {col}={value}: {problem}.")
        out[col] = value
    return out


def _value_problem(column: str, value: str) -> str | None:
    """The import's reason for refusing a row whose ``column`` holds ``value`` (normalise's rules), or
    None: one row with that value and valid required fields is checked as the import checks every row."""
    from engine.ingest.normalise import normalise_rows

    cols: dict[str, list] = {"prompt_id": ["p"], "model_a": ["a"], "model_b": ["b"], "winner": ["A"],
                             column: [value]}
    raw = RawRows(cols=cols, orig=[{}], file=["--set"], line=[1], problem=[None])
    _, reasons, _ = normalise_rows(raw, "set", None, None)
    return None if reasons[0] is None else str(reasons[0])


def apply_set(raw: RawRows, values: Mapping[str, str]) -> dict[str, int]:
    """Give every row of ``raw`` the set values; returns, per column, how many rows had a value of their
    own (as the import reads cells: ``cells.clean_arrow``) that was replaced (for the report's note)."""
    replaced: dict[str, int] = {}
    n = len(raw.line)
    for col, value in values.items():
        cells = raw.cols.get(col)
        if cells is not None:
            own = clean_arrow(cells)
            same = (pc.equal(pc.utf8_lower(own), value.lower()) if col in CASELESS
                    else pc.equal(own, value))
            had = int(np.sum(~arrow_nulls(own) & ~np.asarray(
                pc.fill_null(same, False).to_numpy(zero_copy_only=False), dtype=bool)))
            if had:
                replaced[col] = had
        raw.cols[col] = [value] * n
    return replaced


def fill_missing_judge(raw: RawRows, judge: str) -> int:
    """Rows of ``raw`` that name no judge (an empty cell, as the import reads it) get ``judge``; returns how
    many did."""
    cells = raw.cols.get("judge")
    n = len(raw.line)
    if cells is None:
        raw.cols["judge"] = [judge] * n
        return n
    empty = arrow_nulls(clean_arrow(cells))
    if empty.any():
        filled = list(cells)
        for i in np.flatnonzero(empty):
            filled[i] = judge
        raw.cols["judge"] = filled
    return int(empty.sum())


def judge_from_filename(filename: str) -> str:
    """The judge a file stands for: its name without folder and extension, less the words at either end
    that say what the file holds (``NAME_NOISE``); the bare name when nothing else is left."""
    name = PurePath(filename).name
    for ext in FILE_SUFFIXES:
        if name.lower().endswith(ext) and len(name) > len(ext):
            name = name[: -len(ext)]
            break
    parts = _SEPARATORS.split(name)  # words at even places, their separators between
    words = parts[::2]
    lo, hi = 0, len(words)
    while hi > lo and words[hi - 1].lower() in NAME_NOISE | {""}:
        hi -= 1
    while lo < hi and words[lo].lower() in NAME_NOISE | {""}:
        lo += 1
    if lo >= hi:
        return name
    return "".join(parts[2 * lo: 2 * hi - 1])


JUDGE_FIELDS: dict[str | None, frozenset[str]] = {
    None: frozenset({"judge"}), "alpaca-eval": frozenset({"annotator"}), "arena": frozenset(),
}
"""The field that names a row's judge, per tool format (None: canonical columns); the Arena's is a
constant (``human``), so its files always name their judge."""


def suggested_judge(filename: str, columns: Iterable[str], tool: str | None, data: bytes | None = None,
                    fmt: str | None = None) -> str | None:
    """The judge name an import form offers for a file: None when the file names its judges (a judge
    field, an Arena log, or a review file ``<first>-vs-<second>-<judge>-reviewer….jsonl``, whose name gives
    its judge as the command line's import reads it: ``data``, the file's bytes, tells one), else the name
    ``judge_from_filename`` gives. (audit38: the Data page offered the whole name of a qlora or PRD review
    file, "answer_bard-vs-answer_gpt35-human-reviewer_threeclass", and stored every row under it, where
    the command line stores "human".) ``fmt``: the format picked by hand (None: detected), which decides
    whether the file is read as a review file (``verdict_files.read_as``), as the import reads it."""
    if tool == "arena":
        return None
    if data is not None:
        from engine.ingest.verdict_files import read_as

        if read_as(data[:4096], filename, fmt) == "review":
            return None
    fields = JUDGE_FIELDS.get(tool, JUDGE_FIELDS[None])
    if fields & {str(c).strip().lower() for c in columns}:
        return None
    return judge_from_filename(filename)
