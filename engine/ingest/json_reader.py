"""The JSON readers of verdict files: JSON Lines (one record per physical line, a bad line costs
that line only) and a JSON array (bounded in size, row index + 1 as its line)."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator, Mapping

from engine.errors import LensError
from engine.ingest.limits import (
    JSON_ARRAY_MAX_BYTES,
    batch_rows,
)
from engine.ingest.line_reader import LineFeed
from engine.ingest.raw_rows import (
    RawRows,
    batch_full,
    canonical_columns,
    dropped_columns,
    review_rows,
)


def json_line(text: str) -> tuple[dict, str | None]:
    """One JSON Lines line → (its record, or {} with the reason it is not one)."""
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        return {"raw_text": text}, f"the line is not valid JSON ({exc.msg} at column {exc.colno})"
    except RecursionError:
        return {"raw_text": text[:200]}, "the line is not valid JSON (nested too deeply)"
    if not isinstance(obj, dict):
        return {"raw_text": text}, "the line is not a JSON object"
    return obj, None


def record_batch(rows: list[dict], lines: list[int], problems: list, filename: str, fmt: str,
                  column_map: Mapping[str, str] | None, check: bool, seen: dict) -> RawRows:
    """JSON objects → raw rows with canonical column names (review records mapped first)."""
    if fmt == "review":
        mapped = review_rows(rows, problems, filename, seen)
        keys = dict.fromkeys(k for r in mapped for k in r)
        cols = {k: [r.get(k) for r in mapped] for k in keys}
    else:
        header = list(dict.fromkeys(k for r in rows for k in r))
        chosen = canonical_columns(
            header, filename, column_map, check=check and any(p is None for p in problems)
        )
        cols = {name: [r.get(k) for r in rows] for k, name in chosen.items()}
        return RawRows(
            cols,
            rows,
            [filename] * len(lines),
            lines,
            problems,
            {},
            dropped_columns(filename, header, chosen),
        )
    return RawRows(cols, rows, [filename] * len(lines), lines, problems)


def jsonl_batches(fh, filename: str, fmt: str, column_map: Mapping[str, str] | None) -> Iterator[RawRows]:
    """A JSON Lines file → RawRows batches, each record at its physical line."""
    first = True
    seen: dict[str, int] = {}
    for rows, lines, problems in jsonl_records(fh):
        yield record_batch(rows, lines, problems, filename, fmt, column_map, first, seen)
        first = False
    if first:
        raise LensError(f"{filename} has no rows.")


def jsonl_records(fh) -> Iterator[tuple[list[dict], list[int], list[str | None]]]:
    """JSON Lines → batches of (objects, line numbers, problems); a bad line is a problem, not an error."""
    feed = LineFeed(fh)
    full = batch_full(batch_rows())
    rows: list[dict] = []
    lines: list[int] = []
    problems: list[str | None] = []
    chars = 0
    while True:
        block = feed.take(min(65_536, batch_rows()))
        if block is None:
            break
        start, texts, probs = block
        for k, text in enumerate(texts):
            no, prob = start + k, probs[k] if probs else None
            if prob is None and not text.strip():  # a skipped line's text is blank: it is still a row
                continue
            lines.append(no)
            chars += len(text)
            if prob is not None:
                rows.append({"raw_text": text[:1000]})
                problems.append(prob)
                continue
            obj, prob = json_line(text)
            rows.append(obj)
            problems.append(prob)
        if lines and full(len(lines), chars):
            yield rows, lines, problems
            rows, lines, problems, chars = [], [], [], 0
    if lines:
        yield rows, lines, problems


def json_array_batches(fh, filename: str, column_map: Mapping[str, str] | None,
                        records_only: bool = False) -> Iterator:
    """A JSON array file (bounded in size) → RawRows batches, row index + 1 as the line."""
    size = fh.seek(0, io.SEEK_END)
    fh.seek(0)
    if size > JSON_ARRAY_MAX_BYTES:
        raise LensError(
            f"{filename} is a JSON array of {size / 2**20:,.0f} MiB; arrays over "
            f"{JSON_ARRAY_MAX_BYTES // 2**20} MiB "
            "are not read (a JSON array is parsed whole, about ten times its size in memory): convert it to "
            "JSON "
            "Lines, one object per line (for example jq -c '.[]' file.json > file.jsonl), and import that."
        )
    try:
        arr = json.loads(fh.read().decode("utf-8-sig"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise LensError(f"{filename} is not a readable JSON array ({exc}).") from exc
    if not isinstance(arr, list):
        raise LensError(f"{filename} holds one JSON value, not an array of verdict objects.")
    if not arr:
        raise LensError(f"{filename} has no rows.")
    step = batch_rows()
    for k in range(0, len(arr), step):
        part = arr[k:k + step]
        rows = [o if isinstance(o, dict) else {"raw_text": json.dumps(o)} for o in part]
        problems = [None if isinstance(o, dict) else "the element is not a JSON object" for o in part]
        if records_only:
            yield rows, list(range(k + 1, k + len(part) + 1)), problems
            continue
        yield record_batch(rows, list(range(k + 1, k + len(part) + 1)), problems, filename, "json",
                            column_map, k == 0, {})
