"""The JSON readers of verdict files: JSON Lines (one record per physical line, a bad line costs
that line only) and a JSON array (bounded in size, row index + 1 as its line)."""

from __future__ import annotations

import io
import json
import re
import sys
from collections.abc import Iterator, Mapping

from engine.errors import LensError
from engine.ingest.limits import (
    COLUMNS_MAX,
    JSON_ARRAY_MAX_BYTES,
    batch_rows,
)
from engine.ingest.line_reader import LineFeed
from engine.ingest.raw_rows import (
    RawRows,
    batch_full,
    canonical_columns,
    dropped_columns,
    mapped_columns,
    review_rows,
)

_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89abAB]")


def _int_max_digits() -> int:
    """Longest integer Python parses (4,300 digits by default; 0 = no limit): past it ``json`` fails
    with no position, so such a text is read again with the integers checked one by one."""
    limit = getattr(sys, "get_int_max_str_digits", lambda: 0)()
    return limit or 10**9


class _NotVerdictJson:
    """A JSON token the reader refuses (NaN / Infinity, an integer of thousands of digits), left in the
    parsed value where it stood so that the record holding it is the one rejected."""

    __slots__ = ("why",)

    def __init__(self, why: str):
        self.why = why


def _constant(token: str) -> _NotVerdictJson:
    return _NotVerdictJson(f"{token}, which is not JSON (write null for no value, or a number)")


def _integer(digits: str) -> int | _NotVerdictJson:
    n = len(digits.lstrip("-"))
    if n > _int_max_digits():
        return _NotVerdictJson(f"an integer of {n:,} digits (at most {_int_max_digits():,} are read)")
    return int(digits)


_DECODER = json.JSONDecoder(parse_constant=_constant)
"""Reused for every line (``json.loads`` with options builds a decoder per call); NaN / Infinity are the
only tokens it calls back for."""
_INTEGER_DECODER = json.JSONDecoder(parse_constant=_constant, parse_int=_integer)
"""For the rare text with an integer past Python's digit limit: every integer is a call back."""


def _strict_loads(text: str) -> tuple[object, bool]:
    """JSON text → its value with NaN / Infinity and over-long integers left as ``_NotVerdictJson``
    markers, and whether it may hold any (then ``refused_token`` finds them)."""
    try:
        return _DECODER.decode(text), "NaN" in text or "Infinity" in text
    except json.JSONDecodeError:
        raise
    except ValueError:  # an integer past the digit limit (Python's own check, raised mid-parse)
        return _INTEGER_DECODER.decode(text), True


def refused_token(value, escapes: bool = True) -> str | None:
    """Why a parsed JSON value cannot be a verdict record: a marker of ``_strict_loads`` or a lone
    surrogate escape (``"\\ud800"``: no character, and not UTF-8) anywhere inside it; else None.
    ``escapes``: whether the text had a surrogate escape at all (else only markers are looked for)."""
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, _NotVerdictJson):
            return f"it holds {v.why}"
        if isinstance(v, dict):
            stack.extend(v.values())
            if escapes:
                stack.extend(v.keys())
        elif isinstance(v, list):
            stack.extend(v)
        elif escapes and isinstance(v, str):
            try:
                v.encode("utf-8")
            except UnicodeEncodeError as exc:
                code = ord(v[exc.start])
                return (f"it holds a lone surrogate \\u{code:04x} (half of a UTF-16 pair, not a character); "
                        "the file's writer cut a character in two")
    return None


def _cut_short(text: str, exc: json.JSONDecodeError) -> str:
    """What is wrong with a line ``json`` could not decode, as the end of a sentence: where a value, or a
    string, is cut short by the line's end, that (the decoder's position then lies past the line's last
    character, on its newline, or at a string it never saw closed); else the decoder's message and column."""
    body = text.rstrip("\r\n")
    why = exc.msg.removesuffix(" at")  # "Invalid control character at", "Unterminated string starting at"
    if exc.pos < len(body) and not why.startswith("Unterminated string"):
        return f" ({why} at column {exc.colno})"
    try:  # the line without its ending: a string cut short then reads as unterminated, from its start
        _strict_loads(body)
    except json.JSONDecodeError as inner:
        exc, why = inner, inner.msg.removesuffix(" at")
    if why.startswith("Unterminated string"):
        return f": it ends inside a string (the string from column {exc.colno} is not closed)"
    return f": it ends before its value does ({why} at its end, column {len(body) + 1})"


def json_line(text: str) -> tuple[dict, str | None]:
    """One JSON Lines line → (its record, or {} with the reason it is not one)."""
    try:
        obj, marked = _strict_loads(text)
    except json.JSONDecodeError as exc:
        return {"raw_text": text}, "the line is not valid JSON" + _cut_short(text, exc)
    except RecursionError:
        return {"raw_text": text[:200]}, "the line is not valid JSON (nested too deeply)"
    if not isinstance(obj, dict):
        return {"raw_text": text}, "the line is not a JSON object"
    if len(obj) > COLUMNS_MAX:
        return ({"raw_text": _printable(text)},
                f"the record has {len(obj):,} fields; a verdict record may have at most {COLUMNS_MAX:,}")
    escapes = "\\u" in text and _SURROGATE_ESCAPE.search(text) is not None
    if marked or escapes:
        why = refused_token(obj, escapes)
        if why is not None:
            return {"raw_text": _printable(text)}, f"the line is not a verdict record: {why}"
    return obj, None


def _printable(text: str) -> str:
    """A refused line as kept for the rejected-rows file: at most 1,000 characters, valid UTF-8."""
    return text[:1000].encode("utf-8", "backslashreplace").decode("utf-8")


def record_batch(rows: list[dict], lines: list[int], problems: list, filename: str, fmt: str,
                  column_map: Mapping[str, str] | None, check: bool, seen: dict) -> RawRows:
    """JSON objects → raw rows with canonical column names (review records mapped first)."""
    if fmt == "review":
        mapped = review_rows(rows, problems, filename, seen)
        keys = dict.fromkeys(k for r in mapped for k in r)
        cols = {k: [r.get(k) for r in mapped] for k in keys}
    else:
        header = list(dict.fromkeys(k for r in rows for k in r))
        if len(header) > COLUMNS_MAX:
            raise LensError(
                f"The records of {filename} (lines {lines[0]}–{lines[-1]}) have {len(header):,} different "
                f"fields; a verdict file may have at most {COLUMNS_MAX:,} (keep the verdict fields and leave "
                "the others out).")
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
            mapped_columns(chosen, column_map),
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


def _element_text(o) -> str:
    """An array element that is not a record, as JSON text for the rejected-rows file."""
    return _printable(json.dumps(o, default=lambda v: f"<{v.why}>", ensure_ascii=False))


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
        text = fh.read().decode("utf-8-sig")
        arr, marked = _strict_loads(text)
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise LensError(f"{filename} is not a readable JSON array ({exc}).") from exc
    if not isinstance(arr, list):
        raise LensError(f"{filename} holds one JSON value, not an array of verdict objects.")
    if not arr:
        raise LensError(f"{filename} has no rows.")
    step = batch_rows()
    escapes = _SURROGATE_ESCAPE.search(text) is not None
    del text
    for k in range(0, len(arr), step):
        part = arr[k:k + step]
        problems = [None if isinstance(o, dict) else "the element is not a JSON object" for o in part]
        for i, o in enumerate(part):  # as a JSON Lines line: a record too wide is its own problem
            if problems[i] is None and len(o) > COLUMNS_MAX:
                problems[i] = (f"the record has {len(o):,} fields; a verdict record may have at most "
                               f"{COLUMNS_MAX:,}")
        for i, o in enumerate(part if marked or escapes else ()):  # NaN, huge integers, lone surrogates
            why = refused_token(o, escapes)
            if why is not None:
                problems[i] = f"the element is not a verdict record: {why}"
        rows = [o if isinstance(o, dict) and problems[i] is None else {"raw_text": _element_text(o)}
                for i, o in enumerate(part)]
        if records_only:
            yield rows, list(range(k + 1, k + len(part) + 1)), problems
            continue
        yield record_batch(rows, list(range(k + 1, k + len(part) + 1)), problems, filename, "json",
                            column_map, k == 0, {})
