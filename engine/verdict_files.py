"""Verdict files → raw rows: the readers of every accepted format, with true line numbers.

Part of the import (``engine/verdicts.py`` checks the rows these readers return). Formats: CSV/TSV,
JSON Lines, a JSON array, Parquet, and the *review* format of the Vicuna-bench rating files (one
JSONL file per ordered model pair, the pair and the judge named by the file name). Each row keeps
the line a user sees in an editor (CSV: header = line 1, a row spanning lines counts from its first;
JSONL: physical line; Parquet / JSON array: row index + 1). Bytes are decoded line by line when the
whole file is not UTF-8, so one bad line costs that line only. Problems of a single row become its
reason; problems of the whole file raise ``LensError`` with one sentence.
"""

from __future__ import annotations

import csv
import gc
import io
import json
import math
import re
from collections.abc import Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import PurePath

import numpy as np
import pandas as pd

from .errors import LensError
from .formats import TOOL_NAMES, detect_fields, detect_tool, expand

CONTAINERS: tuple[str, ...] = ("csv", "jsonl", "json", "parquet", "review")
FORMATS: tuple[str, ...] = (*CONTAINERS, *TOOL_NAMES)
"""Accepted ``fmt`` values; ``None`` means detect from the file name, its first bytes and the
fields of its first record. A container name (csv, jsonl, …) reads the file as canonical columns;
a tool name (``engine/formats``) reads it with that tool's field meanings."""

REQUIRED: tuple[str, ...] = ("prompt_id", "model_a", "model_b", "winner")
OPTIONAL: tuple[str, ...] = (
    "judge", "variant", "variant_kind", "turn", "category", "order", "prob_a", "annotator", "explanation",
    "battle_id", "tstamp", "strength",
)
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

_REVIEW_NAME = re.compile(r"^(?P<first>.+?)-vs-(?P<rest>.+)-reviewer(?:[-_].*)?$")
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


# ---------------------------------------------------------------------------------------------
# Reading: bytes → raw rows (original fields), with per-row parse problems
# ---------------------------------------------------------------------------------------------
@dataclass
class RawRows:
    """Rows of one or more files: canonical-named values, original fields, lines, parse problems."""

    cols: dict[str, list]  # canonical name → one cell per row (absent: no file has the column)
    orig: list  # per row: a dict of its original fields, or (CSV) the list of its values
    file: list[str]
    line: list[int]
    problem: list[str | None]  # a reason found while parsing, else None
    headers: dict[str, tuple] = field(default_factory=dict)  # CSV file → its header
    dropped: dict[str, list[str]] = field(default_factory=dict)  # file → its columns not kept


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


def _delimiter(lines: list[str], filename: str) -> str:
    """Comma, unless the file is .tsv or its header has no comma but tabs or semicolons
    (spreadsheets in many locales save CSV with ';')."""
    if filename.lower().endswith(".tsv"):
        return "\t"
    first = next((ln for ln in lines if ln.strip()), "")
    if "," not in first:
        for d in ("\t", ";"):
            if d in first:
                return d
    return ","


def _read_csv(data: bytes, filename: str) -> tuple[list[str], list[list], list[int], list[str | None]]:
    lines, bad = _split_lines(data)
    delim = _delimiter(lines, filename)
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


def read_rows(
    data: bytes, filename: str, fmt: str | None, column_map: Mapping[str, str] | None
) -> tuple[RawRows, str]:
    """One file → raw rows with canonical column names (file-level problems raise LensError)."""
    if not data or not data.strip():
        raise LensError(f"{filename} is empty.")
    if fmt is not None and fmt not in FORMATS:
        raise LensError(f"Unknown format {fmt!r}; use one of {', '.join(FORMATS)}.")
    named_tool = fmt if fmt in TOOL_NAMES else None
    # a column map means canonical columns named otherwise: no tool is guessed then
    detect_tools = (fmt is None and not column_map) or named_tool is not None
    fmt = detect_format(data, filename) if fmt is None or named_tool else fmt
    if fmt == "review" and named_tool:
        fmt = "jsonl"
    if detect_tools and fmt != "review":
        found = _tool_rows(data, filename, fmt, named_tool)
        if found is not None:
            return found
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
        header = list(df.columns)
        chosen = _canonical_columns(header, filename, column_map)
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
    kept = set(chosen) if fmt != "review" else set()
    dropped = [str(c) for c in header if c not in kept and c != "raw_text"] if fmt != "review" else []
    raw = RawRows(cols, orig, [filename] * len(lines), list(lines), list(problems), headers,
                  {filename: dropped} if dropped else {})
    return raw, fmt


def _records(data: bytes, filename: str, container: str) -> tuple[list, list[int], list[str | None]]:
    """The file's records as dicts of its own fields (CSV rows zipped with the header)."""
    if container == "csv":
        header, recs, lines, problems = _read_csv(data, filename)
        return [dict(zip(header, r, strict=False)) for r in recs], lines, problems
    if container == "parquet":
        df, lines, problems = _read_parquet(data, filename)
        return df.to_dict("records"), lines, problems
    reader = _read_json_array if container == "json" else _read_jsonl
    return reader(data, filename)


def _first_fields(data: bytes, filename: str, container: str) -> list | None:
    """The field names of the file's first record, read cheaply (CSV header, first JSON line,
    Parquet schema); None when that needs the whole file (a JSON array) or the file is damaged."""
    if container == "parquet":
        try:
            import pyarrow.parquet as pq

            return list(pq.read_schema(io.BytesIO(data)).names)
        except Exception:  # the reader proper says what is wrong
            return []
    if container not in ("csv", "jsonl"):
        return None
    start = 0
    for _ in range(1000):  # skip blank lines and lines that are not JSON objects
        end = data.find(b"\n", start)
        line = data[start:] if end < 0 else data[start:end]
        text = line.decode("utf-8", errors="replace").lstrip("\ufeff").strip()
        if text:
            if container == "csv":
                return next(csv.reader([text], delimiter=_delimiter([text], filename)), [])
            try:
                obj = json.loads(text)
            except json.JSONDecodeError:
                obj = None
            if isinstance(obj, dict):
                return list(obj)
        if end < 0:
            return []
        start = end + 1
    return []


def _tool_rows(data: bytes, filename: str, container: str, named: str | None) -> tuple[RawRows, str] | None:
    """Rows of a tool's judgment file (``engine/formats``), or None when no tool's fields match and
    none was named (then the file is parsed once only, by the canonical reader)."""
    name = named
    if name is None:
        fields = _first_fields(data, filename, container)
        if fields is not None:
            name = detect_fields(fields)
            if name is None:
                return None
    records, lines, problems = _records(data, filename, container)
    if not lines:
        return None  # the container's own reader says what is missing
    name = name or detect_tool(records)
    if name is None:
        return None
    ex = expand(name, records, lines, problems)
    keys = dict.fromkeys(k for r in ex.rows for k in r)
    cols = {k: [r.get(k) for r in ex.rows] for k in keys}
    return RawRows(cols, ex.origs, [filename] * len(ex.lines), ex.lines, ex.problems, {},
                   {filename: ex.dropped} if ex.dropped else {}), name


@contextmanager
def no_gc():
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




def sniff_tool(data: bytes, filename: str, fmt: str | None = None) -> str | None:
    """The tool format ``read_rows`` would use for this file (``engine/formats``), or None for a
    file of canonical columns; a file that cannot be read gives None (validation says why)."""
    if fmt in TOOL_NAMES:
        return fmt
    if fmt is not None or not data or not data.strip():
        return None
    container = detect_format(data, filename)
    if container == "review":
        return None
    fields = _first_fields(data, filename, container)
    if fields is not None:
        return detect_fields(fields)
    try:
        records = _records(data, filename, container)[0]
    except LensError:
        return None
    return detect_tool(records)


def list_columns(data: bytes, filename: str, fmt: str | None = None) -> list[str]:
    """The file's own column names, in order (for a column-mapping form before validation)."""
    if not data or not data.strip():
        raise LensError(f"{filename} is empty.")
    if fmt is None or fmt in TOOL_NAMES:
        fmt = detect_format(data, filename)
    if fmt == "parquet":
        try:
            import pyarrow.parquet as pq

            return list(pq.read_schema(io.BytesIO(data)).names)
        except Exception as exc:  # pyarrow raises several kinds for a damaged file
            raise LensError(f"{filename} cannot be read as Parquet ({exc}).") from exc
    if fmt == "csv":
        return _read_csv(data, filename)[0]
    reader = _read_json_array if fmt == "json" else _read_jsonl
    rows = reader(data, filename)[0]
    return list(dict.fromkeys(k for r in rows[:1000] for k in r if k != "raw_text"))
