"""Verdict files → a validated canonical frame plus a report of every rejected row (pure, no DB).

Reads CSV/TSV, JSON Lines, a JSON array, Parquet, and the *review* format of the Vicuna-bench
rating files (one JSONL file per ordered model pair, the pair and the judge named by the file
name, ``score`` 1/2/3/-1). Header names are case-insensitive and a few aliases are accepted
(DESIGN.md, "Verdicts: the one input format"). Every data row keeps its file and the line number
a user sees in an editor (CSV: header = line 1; JSONL: physical line; Parquet/JSON array: row
index + 1). Nothing is dropped silently: a row is either in ``good`` or in ``rejected`` with one
sentence saying why, so ``rows_read == n_good + n_rejected`` always holds. An unparsable judge
output (``error``, review score -1) is a *valid* row with winner ``invalid``: counted, stored,
never turned into a tie (graphs.build_stack leaves it out).
"""

from __future__ import annotations

import csv
import gc
import io
import json
import math
import re
from collections.abc import Iterable, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import PurePath

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from .errors import LensError
from .schema import DEFAULT_JUDGE, DEFAULT_TURN, VARIANT_KINDS, VERDICT_COLUMNS, VERDICT_DTYPES

FORMATS: tuple[str, ...] = ("csv", "jsonl", "json", "parquet", "review")
"""Accepted ``fmt`` values; ``None`` means detect from the file name and its first bytes."""

REQUIRED: tuple[str, ...] = ("prompt_id", "model_a", "model_b", "winner")
OPTIONAL: tuple[str, ...] = (
    "judge", "variant", "variant_kind", "turn", "category", "order", "prob_a", "annotator", "explanation",
)
TEXTS: tuple[str, ...] = ("question", "answer_a", "answer_b")
"""Optional texts: they go to the ``prompts`` / ``answers`` tables, not to each verdict."""

CANONICAL: frozenset[str] = frozenset((*REQUIRED, *OPTIONAL, *TEXTS))

COLUMN_ALIASES: dict[str, str] = {
    "question_id": "prompt_id",  # lmsys battles, MT-Bench judgments
    "rationale": "explanation",
    "position": "order",
}

WINNER_VALUES: dict[str, str] = {
    "a": "A", "model_a": "A", "1": "A", "1.0": "A",
    "b": "B", "model_b": "B", "2": "B", "2.0": "B",
    "tie": "tie", "tie (bothbad)": "tie", "tie(bothbad)": "tie", "1.5": "tie",
    "error": "invalid", "invalid": "invalid",
}
"""Accepted winner spellings (lower-cased) → canonical value; ``error`` = unparsable judge output."""
_WINNER_HELP = "A, B, tie, model_a, model_b, tie (bothbad), 1, 2, 1.5 or error"

REVIEW_SCORES: dict[str, str] = {"1": "A", "2": "B", "3": "tie", "-1": "invalid"}
"""Review format: 1 = the first shown answer wins, 2 = the second, 3 = tie, -1 = unparsable."""

KNOWN_JUDGES: tuple[str, ...] = (
    "gpt-3.5-turbo", "vicuna-13b", "gpt-4", "gpt35", "gpt4", "claude", "bard", "human",
)
"""Judge names recognised at the end of a review file name (others: the last dash-separated word)."""

_REVIEW_NAME = re.compile(r"^(?P<first>.+?)-vs-(?P<rest>.+)-reviewer(?:[-_].*)?$")
_MODEL_PREFIX = re.compile(r"^answer[-_]")


@dataclass(frozen=True, eq=False)
class ValidationReport:
    """What a verdict file holds, before anything is stored.

    ``good``: canonical verdict frame (schema.VERDICT_DTYPES); ``rejected``: one row per refused
    input row with ``source_file, source_line, reason`` and the row's original fields;
    ``prompts`` / ``answers``: texts found in the file (columns of the tables of the same name);
    ``rows_read``: data rows seen (blank lines are not rows).
    """

    dataset: str
    source: str
    format: str
    good: pd.DataFrame
    rejected: pd.DataFrame
    prompts: pd.DataFrame
    answers: pd.DataFrame
    rows_read: int

    @property
    def n_good(self) -> int:
        return int(len(self.good))

    @property
    def n_rejected(self) -> int:
        return int(len(self.rejected))

    @property
    def n_invalid(self) -> int:
        """Stored-able rows whose judge output was unparsable (winner ``invalid``)."""
        return int((self.good["winner"] == "invalid").sum())

    @property
    def ok(self) -> bool:
        return self.n_rejected == 0

    def counts(self) -> dict[str, int]:
        return {
            "rows_read": self.rows_read,
            "good": self.n_good,
            "rejected": self.n_rejected,
            "invalid": self.n_invalid,
        }

    def sentences(self) -> list[str]:
        """One sentence per rejected row: ``<file> line <n>: <reason>.``"""
        rej = self.rejected
        return [
            f"{f} line {int(n)}: {r}."
            for f, n, r in zip(rej["source_file"], rej["source_line"], rej["reason"], strict=True)
        ]


# ---------------------------------------------------------------------------------------------
# Reading: bytes → raw rows (original fields), with per-row parse problems
# ---------------------------------------------------------------------------------------------
@dataclass
class _Raw:
    """Rows of one or more files: canonical-named values, original fields, lines, parse problems."""

    cols: dict[str, list]  # canonical name → one cell per row (absent: no file has the column)
    orig: list  # per row: a dict of its original fields, or (CSV) the list of its values
    file: list[str]
    line: list[int]
    problem: list[str | None]  # a reason found while parsing, else None
    headers: dict[str, tuple] = field(default_factory=dict)  # CSV file → its header


def detect_format(data: bytes, filename: str) -> str:
    """Pick a reader from the file name (extension, review-name pattern) and its first bytes."""
    name = PurePath(filename).name.lower()
    head = data[:4096].lstrip(b"\xef\xbb\xbf \t\r\n")
    if data[:4] == b"PAR1" or name.endswith((".parquet", ".pq")):
        return "parquet"
    if name.endswith((".csv", ".tsv", ".txt")):
        return "csv"
    if head.startswith(b"["):
        return "json"
    if head.startswith(b"{") or name.endswith((".jsonl", ".ndjson", ".json")):
        first = head.split(b"\n", 1)[0]
        if _REVIEW_NAME.match(PurePath(filename).stem) and b'"score"' in first and b'"winner"' not in first:
            return "review"
        return "jsonl"
    return "csv"


def _split_lines(data: bytes) -> tuple[list[str], set[int]]:
    """Decode line by line so one bad byte costs one line, not the file; returns bad line numbers."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        return data.decode("utf-8").split("\n"), set()
    except UnicodeDecodeError:
        pass
    lines, bad = [], set()
    for i, raw in enumerate(data.split(b"\n"), start=1):
        try:
            lines.append(raw.decode("utf-8"))
        except UnicodeDecodeError:
            bad.add(i)
            lines.append(raw.decode("utf-8", errors="replace"))
    return lines, bad


_BAD_BYTES = "the line contains bytes that are not valid UTF-8 text"


def _read_csv_simple(lines: list[str], delim: str):
    """The common case in one C-speed pass: when no field spans lines, record k is line k + 1.

    Returns None when that does not hold (a quoted newline, a CSV error): the caller then walks
    the file record by record to find each row's first line.
    """
    try:
        recs = list(csv.reader(io.StringIO("\n".join(lines), newline=""), delimiter=delim))
    except csv.Error:
        return None
    physical = len(lines) - (1 if lines and lines[-1] == "" else 0)
    if len(recs) != physical:
        return None
    keep = [k for k, r in enumerate(recs) if "".join(r).strip()]
    if not keep:
        return None
    header = [h.strip() for h in recs[keep[0]]]
    width = len(header)
    rows = [recs[k] for k in keep[1:]]
    problems = [None if len(r) == width else f"the row has {len(r)} fields but the header has {width}" for r in rows]
    return header, rows, [k + 1 for k in keep[1:]], problems


def _read_csv(data: bytes, filename: str) -> tuple[list[str], list[list], list[int], list[str | None]]:
    lines, bad = _split_lines(data)
    delim = "\t" if filename.lower().endswith(".tsv") else ","
    fast = None if bad else _read_csv_simple(lines, delim)
    if fast is not None:
        return fast
    reader = csv.reader(io.StringIO("\n".join(lines), newline=""), delimiter=delim)
    header: list[str] | None = None
    rows: list[list] = []
    line_no: list[int] = []
    problems: list[str | None] = []
    while True:
        start = reader.line_num + 1
        try:
            rec = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            rows.append([])
            line_no.append(start)
            problems.append(f"the row cannot be read as CSV ({exc})")
            continue
        end = reader.line_num
        if not rec or all(not c.strip() for c in rec):
            continue  # blank line: not a row
        if header is None:
            if any(i in bad for i in range(start, end + 1)):
                raise LensError(f"The header (line {start}) of {filename} contains bytes that are not valid UTF-8 text.")
            header = [h.strip() for h in rec]
            continue
        bad_line = next((i for i in range(start, end + 1) if i in bad), None)
        if bad_line is not None:
            rows.append([])
            line_no.append(start)
            problems.append(_BAD_BYTES if bad_line == start else f"line {bad_line} of the row contains bytes that are not valid UTF-8 text")
            continue
        rows.append(rec)
        line_no.append(start)
        problems.append(None if len(rec) == len(header)
                        else f"the row has {len(rec)} fields but the header has {len(header)}")
    if header is None:
        raise LensError(f"{filename} is empty: it has no header and no rows.")
    return header, rows, line_no, problems


def _read_jsonl(data: bytes, filename: str) -> tuple[list[dict], list[int], list[str | None]]:
    lines, bad = _split_lines(data)
    rows: list[dict] = []
    line_no: list[int] = []
    problems: list[str | None] = []
    for i, text in enumerate(lines, start=1):
        if not text.strip():
            continue
        line_no.append(i)
        if i in bad:
            rows.append({"raw_text": text})
            problems.append(_BAD_BYTES)
            continue
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as exc:
            rows.append({"raw_text": text})
            problems.append(f"the line is not valid JSON ({exc.msg} at column {exc.colno})")
            continue
        if not isinstance(obj, dict):
            rows.append({"raw_text": text})
            problems.append("the line is not a JSON object")
            continue
        rows.append(obj)
        problems.append(None)
    return rows, line_no, problems


def _read_json_array(data: bytes, filename: str) -> tuple[list[dict], list[int], list[str | None]]:
    try:
        arr = json.loads(data.decode("utf-8-sig"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise LensError(f"{filename} is not a readable JSON array ({exc}).") from exc
    if not isinstance(arr, list):
        raise LensError(f"{filename} holds one JSON value, not an array of verdict objects.")
    rows, problems = [], []
    for obj in arr:
        ok = isinstance(obj, dict)
        rows.append(obj if ok else {"raw_text": json.dumps(obj)})
        problems.append(None if ok else "the element is not a JSON object")
    return rows, list(range(1, len(arr) + 1)), problems


def _read_parquet(data: bytes, filename: str) -> tuple[pd.DataFrame, list[int], list[str | None]]:
    try:
        df = pd.read_parquet(io.BytesIO(data))
    except Exception as exc:  # pyarrow raises several kinds for a damaged file
        raise LensError(f"{filename} cannot be read as Parquet ({exc}).") from exc
    df = df.reset_index(drop=True).astype(object).where(df.notna(), None)
    n = len(df)
    if n == 0:
        raise LensError(f"{filename} has no rows.")
    return df, list(range(1, n + 1)), [None] * n


def parse_review_name(filename: str) -> tuple[str, str, str]:
    """``<first>-vs-<second>-<judge>-reviewer….jsonl`` → (first model, second model, judge)."""
    stem = PurePath(filename).name
    for ext in (".jsonl", ".json"):
        if stem.endswith(ext):
            stem = stem[: -len(ext)]
    m = _REVIEW_NAME.match(stem)
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


def _review_rows(rows: list[dict], problems: list[str | None], filename: str) -> list[dict]:
    """Review records → canonical-named records: first shown model = model_a, order AB.

    Rows with a review id carry the judge's rationale in ``text``; rows without one (human votes)
    carry the question there, and repeated rows are separate votes, numbered per question.
    """
    first, second, judge = parse_review_name(filename)
    seen: dict[str, int] = {}
    out = []
    for rec, prob in zip(rows, problems, strict=True):
        if prob is not None:
            out.append({})
            continue
        key = _scalar_text(rec.get("score"))
        if key is None:
            problems[len(out)] = "the row has no score"
        elif key not in REVIEW_SCORES:
            problems[len(out)] = f"score {key!r} is not 1, 2, 3 or -1"
        qid = _scalar_text(rec.get("question_id"))
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


def _read(
    data: bytes, filename: str, fmt: str | None, column_map: Mapping[str, str] | None
) -> tuple[_Raw, str]:
    """One file → raw rows with canonical column names (file-level problems raise LensError)."""
    if not data or not data.strip():
        raise LensError(f"{filename} is empty.")
    fmt = fmt or detect_format(data, filename)
    if fmt not in FORMATS:
        raise LensError(f"Unknown format {fmt!r}; use one of {', '.join(FORMATS)}.")
    if fmt == "csv":
        header, recs, lines, problems = _read_csv(data, filename)
        if not lines:
            raise LensError(f"{filename} has a header but no data rows.")
        chosen = _canonical_columns(header, filename, column_map, check=any(p is None for p in problems))
        width = len(header)
        padded = (r if len(r) == width else (r + [None] * width)[:width] for r in recs)
        columns = list(zip(*padded, strict=True))
        cols = {name: list(columns[header.index(orig)]) for orig, name in chosen.items()}
        orig: list = recs
    elif fmt == "parquet":
        df, lines, problems = _read_parquet(data, filename)
        chosen = _canonical_columns(list(df.columns), filename, column_map)
        cols = {name: df[orig].tolist() for orig, name in chosen.items()}
        orig = df.to_dict("records")
    else:
        reader = _read_json_array if fmt == "json" else _read_jsonl
        orig, lines, problems = reader(data, filename)
        if not lines:
            raise LensError(f"{filename} has no rows.")
        if fmt == "review":
            rows = _review_rows(orig, problems, filename)
            keys = dict.fromkeys(k for r in rows for k in r)
            cols = {k: [r.get(k) for r in rows] for k in keys}
        else:
            header = list(dict.fromkeys(k for r in orig for k in r))
            chosen = _canonical_columns(header, filename, column_map, check=any(p is None for p in problems))
            cols = {name: [r.get(k) for r in orig] for k, name in chosen.items()}
    headers = {filename: tuple(header)} if fmt == "csv" else {}
    return _Raw(cols, orig, [filename] * len(lines), list(lines), list(problems), headers), fmt


@contextmanager
def _no_gc():
    """Reading builds one small list or dict per row and holds them all; the cyclic collector
    would rescan them again and again (none of them can form a cycle), so it waits until the end."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _canonical_columns(header: list, filename: str, column_map: Mapping[str, str] | None,
                       check: bool = True) -> dict:
    """Rename the file's columns to canonical names (user map, then case-insensitive + aliases)."""
    user = {str(k).strip().lower(): str(v).strip().lower() for k, v in (column_map or {}).items()}
    for target in user.values():
        if target not in CANONICAL:
            raise LensError(f"The column map names {target!r}, which is not a verdict column "
                            f"({', '.join(sorted(CANONICAL))}).")
    chosen: dict[str, str] = {}
    for col in header:
        low = str(col).strip().lower()
        name = user.get(low) or (low if low in CANONICAL else COLUMN_ALIASES.get(low))
        if name is None:
            continue
        exact = low == name or low in user
        if name in chosen.values():
            prev = next(c for c, n in chosen.items() if n == name)
            if not exact:
                continue  # an alias never overrides the canonical column
            if str(prev).strip().lower() == name or str(prev).strip().lower() in user:
                raise LensError(f"{filename} has two columns that both mean {name!r}: {prev!r} and {col!r}.")
            del chosen[prev]
        chosen[col] = name
    missing = [c for c in REQUIRED if c not in chosen.values()]
    if missing and check:
        found = ", ".join(map(str, header)) or "none"
        raise LensError(
            f"{filename} has no {' / '.join(missing)} column (required: {', '.join(REQUIRED)}; "
            f"found: {found})."
        )
    return chosen


# ---------------------------------------------------------------------------------------------
# Normalising + validating: raw rows → canonical frame / rejected rows
# ---------------------------------------------------------------------------------------------
def _scalar_text(v: object) -> str | None:
    """A cell as stripped text; None for missing/blank. Integral floats print without '.0'."""
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
        return _scalar_text(float(v))
    if isinstance(v, dict | list):
        return json.dumps(v, ensure_ascii=False)
    s = str(v).strip()
    return s or None


def _winner_key(v: object) -> str | None:
    """Winner cell → lookup key; numbers keep their decimal (1.5) so AlpacaEval values map."""
    if isinstance(v, float | np.floating) and not math.isnan(v):
        return str(float(v)) if not float(v).is_integer() else str(int(v))
    t = _scalar_text(v)
    return None if t is None else " ".join(t.lower().split())


def _nonneg_int(v: object) -> int | None | str:
    """None when missing; the int when a non-negative integer; the original text when not."""
    t = _scalar_text(v)
    if t is None:
        return None
    try:
        f = float(t)
    except ValueError:
        return t
    if not math.isfinite(f) or not f.is_integer() or f < 0:
        return t
    return int(f)


def _text_or_none(v: object) -> str | None:
    """Free text (explanations, questions, answers): kept as written; blank → None."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return None
    t = v if isinstance(v, str) else str(v)
    return t if t.strip() else None


def _clean_text(cells: list) -> np.ndarray:
    """Cells → stripped text or None (object array). All-text columns go through Arrow in C;
    mixed columns (JSON numbers, Parquet ints/floats) cell by cell with ``_scalar_text``."""
    try:
        arr = pa.array(cells, type=pa.string(), from_pandas=True)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return np.array([_scalar_text(v) for v in cells] + [None], dtype=object)[:-1]
    t = pc.utf8_trim_whitespace(arr)
    t = pc.if_else(pc.equal(pc.utf8_length(t), 0), pa.scalar(None, pa.string()), t)
    return t.to_numpy(zero_copy_only=False).astype(object)


def _free_text(cells: list) -> np.ndarray:
    """Free text (explanations, questions, answers) kept as written; blank or missing → None."""
    try:
        arr = pa.array(cells, type=pa.string(), from_pandas=True)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return np.array([_text_or_none(v) for v in cells] + [None], dtype=object)[:-1]
    blank = pc.fill_null(pc.equal(pc.utf8_length(pc.utf8_trim_whitespace(arr)), 0), True)
    keep = pc.invert(blank).to_numpy(zero_copy_only=False)
    out = arr.to_numpy(zero_copy_only=False).astype(object)
    out[~keep] = None
    return out


def _is_none(a: np.ndarray) -> np.ndarray:
    return pd.isna(a) if len(a) else np.zeros(0, dtype=bool)


def _normalise(raw: _Raw, dataset: str, model_names: Mapping[str, str] | None,
               judge_names: Mapping[str, str] | None) -> tuple[pd.DataFrame, np.ndarray, pd.DataFrame]:
    """Canonical values and one reason (or None) per row, the first problem found; also the texts.

    Column at a time: text columns through Arrow, checks as boolean masks; only the sentences of
    rejected rows are built one by one.
    """
    n = len(raw.line)
    reasons = np.array(list(raw.problem) + [None], dtype=object)[:-1]

    def col(name: str) -> list:
        return raw.cols.get(name) or [None] * n

    def flag(bad: np.ndarray, text) -> None:
        m = np.asarray(bad, dtype=bool) & _is_none(reasons)
        for i in np.flatnonzero(m):
            reasons[i] = text(i) if callable(text) else text

    def rename(a: np.ndarray, names: Mapping[str, str]) -> np.ndarray:
        return np.array([names.get(v, v) if v is not None else None for v in a] + [None], dtype=object)[:-1]

    txt = {c: _clean_text(col(c)) for c in
           ("prompt_id", "model_a", "model_b", "judge", "category", "annotator", "variant_kind", "order")}
    if model_names:
        for c in ("model_a", "model_b"):
            txt[c] = rename(txt[c], model_names)
    judge = txt["judge"].copy()
    judge[_is_none(judge)] = DEFAULT_JUDGE
    if judge_names:
        judge = rename(judge, judge_names)
    for c in ("prompt_id", "model_a", "model_b"):
        flag(_is_none(txt[c]), f"{c} is empty")
    ma, mb = txt["model_a"], txt["model_b"]
    flag(~_is_none(ma) & (ma == mb), lambda i: f"model_a and model_b are the same model ({ma[i]})")

    wraw = col("winner")
    wtxt = _clean_text(wraw)
    if all(isinstance(v, str) or v is None for v in wraw):
        low = pc.utf8_lower(pa.array(wtxt, type=pa.string(), from_pandas=True))
        keys = pd.Series(pc.replace_substring_regex(low, r"\s+", " ").to_numpy(zero_copy_only=False), dtype=object)
    else:
        keys = pd.Series([_winner_key(v) for v in wraw], dtype=object)
    winner = keys.map(WINNER_VALUES).astype(object).to_numpy(copy=True)
    winner[_is_none(winner)] = None
    flag(_is_none(wtxt), "winner is empty")
    flag(_is_none(winner), lambda i: f"winner value {_scalar_text(wraw[i])!r} is not one of {_WINNER_HELP}")

    ints = {}
    for name, default in (("variant", 0), ("turn", DEFAULT_TURN)):
        cells = col(name)
        present = ~_is_none(_clean_text(cells))
        num = pd.to_numeric(pd.Series(cells, dtype=object).where(present, None), errors="coerce").to_numpy(float)
        with np.errstate(invalid="ignore"):
            ok = np.isfinite(num) & (num >= 0) & (np.floor(num) == num)
        flag(present & ~ok, lambda i, cells=cells, name=name:
             f"{name} {_scalar_text(cells[i])!r} is not a non-negative integer")
        ints[name] = np.where(present & ok, np.nan_to_num(num), default).astype(np.int64)

    order = pd.Series(txt["order"], dtype=object).str.upper().to_numpy(copy=True)
    order[_is_none(order)] = None
    flag(~_is_none(order) & ~np.isin(order, ["AB", "BA"]),
         lambda i: f"order {txt['order'][i]!r} is not AB or BA")

    vk = pd.Series(txt["variant_kind"], dtype=object).str.lower().to_numpy(copy=True)
    vk[_is_none(vk)] = None
    flag(~_is_none(vk) & ~np.isin(vk, list(VARIANT_KINDS)),
         lambda i: f"variant_kind {txt['variant_kind'][i]!r} is not one of {', '.join(VARIANT_KINDS)}")
    vk = np.where(_is_none(vk), np.where(ints["variant"] == 0, "original", "paraphrase"), vk).astype(object)

    pcells = col("prob_a")
    ptxt = _clean_text(pcells)
    present = ~_is_none(ptxt)
    prob = pd.to_numeric(pd.Series(pcells, dtype=object).where(present, None), errors="coerce").to_numpy(float)
    flag(present & np.isnan(prob), lambda i: f"prob_a {ptxt[i]!r} is not a number")
    with np.errstate(invalid="ignore"):
        flag(present & ~np.isnan(prob) & ((prob < 0) | (prob > 1)), lambda i: f"prob_a {ptxt[i]} is outside [0, 1]")

    frame = pd.DataFrame({
        "dataset": pd.Series([dataset] * n, dtype=object),
        "judge": pd.Series(judge, dtype=object),
        "prompt_id": pd.Series(txt["prompt_id"], dtype=object),
        "variant": pd.Series(ints["variant"], dtype=np.int64),
        "variant_kind": pd.Series(vk, dtype=object),
        "turn": pd.Series(ints["turn"], dtype=np.int64),
        "category": pd.Series(txt["category"], dtype=object),
        "model_a": pd.Series(ma, dtype=object),
        "model_b": pd.Series(mb, dtype=object),
        "winner": pd.Series(winner, dtype=object),
        "order": pd.Series(order, dtype=object),
        "prob_a": pd.Series(np.where(present, prob, np.nan), dtype=np.float64),
        "annotator": pd.Series(txt["annotator"], dtype=object),
        "explanation": pd.Series(_free_text(col("explanation")), dtype=object),
        "source_file": pd.Series(raw.file, dtype=object),
        "source_line": pd.Series(raw.line, dtype=np.int64),
    })
    texts = pd.DataFrame({c: pd.Series(_free_text(col(c)), dtype=object) for c in TEXTS})
    return frame, reasons, texts


def _mark_duplicates(frame: pd.DataFrame, reasons: np.ndarray) -> None:
    """Exact repeats of an earlier valid row (same content, any line) are rejected, naming both lines."""
    content = [c for c in VERDICT_COLUMNS if c not in ("source_file", "source_line")]
    ok = _is_none(reasons)
    if ok.sum() < 2:
        return
    sub = frame.loc[ok, content].astype(object).where(frame.loc[ok, content].notna(), "\x00")
    dup = sub.duplicated(keep="first").to_numpy()
    if not dup.any():
        return
    first_idx = sub.groupby(content, sort=False, dropna=False).ngroup()
    firsts = pd.Series(sub.index, index=sub.index).groupby(first_idx.to_numpy()).transform("first")
    idx = sub.index[dup]
    for i in idx:
        j = firsts[i]
        where = (f"line {int(frame.at[j, 'source_line'])}" if frame.at[j, "source_file"] == frame.at[i, "source_file"]
                 else f"{frame.at[j, 'source_file']} line {int(frame.at[j, 'source_line'])}")
        reasons[i] = f"the row repeats {where} exactly (an identical verdict)"


def _texts_tables(frame: pd.DataFrame, texts: pd.DataFrame, ok: np.ndarray) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Question and answer texts of valid rows → rows of the prompts / answers tables (first wins)."""
    key = ["dataset", "prompt_id", "variant", "turn"]
    f = frame.loc[ok]
    t = texts.loc[ok]
    mq = t["question"].notna()
    q = f.loc[mq, [*key, "category", "variant_kind"]].assign(text=t.loc[mq, "question"].to_numpy())
    prompts = q.drop_duplicates(key, keep="first").reset_index(drop=True)
    parts = []
    for side in ("a", "b"):
        m = t[f"answer_{side}"].notna()
        parts.append(f.loc[m, key].assign(model=f.loc[m, f"model_{side}"].to_numpy(),
                                          text=t.loc[m, f"answer_{side}"].to_numpy()))
    answers = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()
    answers = answers.drop_duplicates([*key, "model"], keep="first").reset_index(drop=True)
    prompts = prompts.astype({"variant": "int64", "turn": "int64"})
    answers = answers.astype({"variant": "int64", "turn": "int64"})
    return prompts, answers


def _original_fields(row, header: tuple | None) -> dict:
    if isinstance(row, list):  # CSV values; a short row leaves the last fields empty
        return {h: _scalar_text(v) for h, v in zip(header or (), row, strict=False)}
    return {k: _scalar_text(v) for k, v in row.items()}


def _rejected_frame(raw: _Raw, reasons: np.ndarray, bad: np.ndarray) -> pd.DataFrame:
    idx = np.flatnonzero(bad)
    fields = [_original_fields(raw.orig[i], raw.headers.get(raw.file[i])) for i in idx]
    header = list(dict.fromkeys(k for f in fields for k in f))
    if idx.size and raw.file[idx[0]] in raw.headers:
        header = list(dict.fromkeys([*raw.headers[raw.file[idx[0]]], *header]))
    orig = pd.DataFrame(fields, columns=header, dtype=object)
    orig.index = idx
    head = pd.DataFrame({
        "source_file": np.asarray(raw.file, dtype=object)[idx],
        "source_line": np.asarray(raw.line, dtype=np.int64)[idx],
        "reason": reasons[bad].astype(str),
    }, index=idx)
    out = pd.concat([head, orig.drop(columns=[c for c in head.columns if c in orig.columns])], axis=1)
    return out.reset_index(drop=True).astype({"source_line": "int64"})


def validate_raw(raw: _Raw, *, dataset: str, source: str, fmt: str,
                 model_names: Mapping[str, str] | None = None,
                 judge_names: Mapping[str, str] | None = None) -> ValidationReport:
    """Normalise and check rows already read; used by ``validate_bytes`` and ``validate_many``."""
    frame, reasons, texts = _normalise(raw, dataset, model_names, judge_names)
    _mark_duplicates(frame, reasons)
    bad = ~_is_none(reasons)
    good = frame.loc[~bad].reset_index(drop=True).astype(VERDICT_DTYPES)
    prompts, answers = _texts_tables(frame, texts, ~bad)
    return ValidationReport(
        dataset=dataset, source=source, format=fmt, good=good,
        rejected=_rejected_frame(raw, reasons, bad), prompts=prompts, answers=answers,
        rows_read=int(len(frame)),
    )


def validate_bytes(
    data: bytes, filename: str, *, dataset: str, fmt: str | None = None,
    column_map: Mapping[str, str] | None = None, model_names: Mapping[str, str] | None = None,
    judge_names: Mapping[str, str] | None = None,
) -> ValidationReport:
    """Validate one file's bytes (named ``filename``, which also gives review-format models/judge)."""
    with _no_gc():
        raw, found = _read(data, filename, fmt, column_map)
    return validate_raw(raw, dataset=dataset, source=filename, fmt=found,
                        model_names=model_names, judge_names=judge_names)


def validate_many(
    files: Iterable[tuple[bytes, str]], *, dataset: str, fmt: str | None = None,
    column_map: Mapping[str, str] | None = None, model_names: Mapping[str, str] | None = None,
    judge_names: Mapping[str, str] | None = None,
) -> ValidationReport:
    """Validate several files as one import (duplicates are checked across files too)."""
    raws, fmts, names = [], [], []
    for data, filename in files:
        with _no_gc():
            raw, found = _read(data, filename, fmt, column_map)
        raws.append(raw)
        fmts.append(found)
        names.append(filename)
    if not raws:
        raise LensError("No files to import.")
    merged = _Raw(
        cols={k: [v for r in raws for v in (r.cols.get(k) or [None] * len(r.line))]
              for k in dict.fromkeys(k for r in raws for k in r.cols)},
        orig=[o for r in raws for o in r.orig],
        file=[f for r in raws for f in r.file],
        line=[n for r in raws for n in r.line],
        problem=[p for r in raws for p in r.problem],
        headers={k: v for r in raws for k, v in r.headers.items()},
    )
    source = names[0] if len(names) == 1 else f"{len(names)} files"
    fmt_used = fmts[0] if len(set(fmts)) == 1 else "mixed"
    return validate_raw(merged, dataset=dataset, source=source, fmt=fmt_used,
                        model_names=model_names, judge_names=judge_names)
