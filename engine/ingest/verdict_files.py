"""Verdict files → raw rows: the readers of every accepted format, with true line numbers.

Part of the import (``engine/ingest/verdicts.py`` checks the rows these readers return). Formats: CSV/TSV,
JSON Lines, a JSON array, Parquet, and the *review* format of the Vicuna-bench rating files (one
JSONL file per ordered model pair, the pair and the judge named by the file name). Each row keeps
the line a user sees in an editor (CSV: header = line 1, a row spanning lines counts from its first;
JSONL: physical line; Parquet / JSON array: row index + 1). Bytes are decoded line by line when the
whole file is not UTF-8, so one bad line costs that line only. Problems of a single row become its
reason; problems of the whole file raise ``LensError`` with one sentence.
"""

from __future__ import annotations

import gc
import io
import json
import math
import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import PurePath

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from engine.errors import LensError
from engine.ingest.csv_bulk import TextCells
from engine.ingest.csv_cells import restore_csv_cell
from engine.ingest.formats import TOOL_NAMES, detect_fields, detect_tool, expand
from engine.ingest.limits import (
    BATCH_TEXT_BYTES,
    EXPANSION_FREE_BYTES,
    EXPANSION_MAX_RATIO,
    JSON_ARRAY_MAX_BYTES,
    TEXT_MAX_CHARS,
    batch_rows,
    open_source,
)
from engine.ingest.line_reader import LineFeed, csv_chunks, csv_header

CONTAINERS: tuple[str, ...] = ("csv", "jsonl", "json", "parquet", "review")
FORMATS: tuple[str, ...] = (*CONTAINERS, *TOOL_NAMES)
"""Accepted ``fmt`` values; ``None`` means detect from the file name, its first bytes and the
fields of its first record. A container name (csv, jsonl, …) reads the file as canonical columns;
a tool name (``engine/ingest/formats``) reads it with that tool's field meanings."""

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


def _dropped(filename: str, header: list, chosen: Mapping) -> dict[str, list[str]]:
    """The file's columns that are not verdict fields (reported, not kept)."""
    out = [str(c) for c in header if c not in chosen and c != "raw_text"]
    return {filename: out} if out else {}


def _batcher(max_rows: int):
    """Whether a batch of ``rows`` rows and ``chars`` characters is full."""
    return lambda rows, chars: rows >= max_rows or chars >= BATCH_TEXT_BYTES


class _CsvRows:
    """Rows of a batch parsed by columns, each as the list of its values, made on demand (only
    rejected rows are ever looked at)."""

    def __init__(self, columns: list[list], n: int):
        self.columns, self.n = columns, n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> list:
        return [c[i] for c in self.columns]


def _restored(column: TextCells) -> TextCells | list:
    """A CSV column with the tool's formula guard (engine/ingest/csv_cells.py) taken off its cells;
    a column without any ' in it has none to restore (and stays in Arrow)."""
    if not pc.any(pc.match_substring(column.arrow, "'")).as_py():
        return column
    return [restore_csv_cell(c) if c[:1] == "'" else c for c in column]


def _csv_batches(fh, filename: str, column_map: Mapping[str, str] | None) -> Iterator[RawRows]:
    feed = LineFeed(fh)
    header, delim = csv_header(feed, filename)
    header = [restore_csv_cell(h) for h in header]
    width = len(header)
    full = _batcher(batch_rows())
    chosen = None
    chunks: list = []
    n_lines = 0
    chars = 0
    any_rows = False

    def build() -> RawRows:
        nonlocal chosen
        lines = [x for c in chunks for x in c.lines]
        problems = [p for c in chunks for p in c.problems]
        if chosen is None:
            chosen = _canonical_columns(header, filename, column_map, check=any(p is None for p in problems))
        if all(c.cols is not None for c in chunks):  # every block parsed in bulk: every row has the header's width
            columns = [_restored(TextCells.join([c.cols[j] for c in chunks])) for j in range(width)]
            cols = {name: (c if isinstance(c := columns[header.index(orig)], TextCells) else list(c))
                    for orig, name in chosen.items()}  # (a list is copied: a value map rewrites it)
            return RawRows(cols, _CsvRows(columns, len(lines)), [filename] * len(lines), lines, problems,
                           {filename: tuple(header)}, _dropped(filename, header, chosen))
        recs = [r for c in chunks for r in (c.recs if c.cols is None else map(list, zip(*c.cols, strict=True)))]
        clean = all(p is None for p in problems)  # every row has the header's width
        # a CSV the tool wrote has ' before formula-like cells (engine/views/exports.py): read them back raw
        # (a batch without any ' in its cells, seen one column at a time, has none to restore)
        columns = list(zip(*recs, strict=True)) if clean else None
        if columns is None or any("'" in "\x1f".join(c) for c in columns):
            recs = [[restore_csv_cell(c) for c in r] if r is not None and any(
                isinstance(c, str) and c[:1] == "'" for c in r) else r for r in recs]
            columns = list(zip(*recs, strict=True)) if clean else None
        if columns is None:
            padded = [r if r is not None and len(r) == width else ((r or []) + [None] * width)[:width] for r in recs]
            columns = list(zip(*padded, strict=True))
        cols = {name: list(columns[header.index(orig)]) for orig, name in chosen.items()}
        orig = [r if r is not None else [] for r in recs]
        return RawRows(cols, orig, [filename] * len(lines), lines, problems, {filename: tuple(header)},
                       _dropped(filename, header, chosen))

    for chunk in csv_chunks(feed, delim, width, max_lines=min(65_536, batch_rows()), columns=True):
        chunks.append(chunk)
        n_lines += len(chunk.lines)
        chars += chunk.chars
        if n_lines and full(n_lines, chars):
            any_rows = True
            yield build()
            chunks, n_lines, chars = [], 0, 0
    if n_lines:
        yield build()
    elif not any_rows:
        raise LensError(f"{filename} has a header but no data rows.")


def _json_line(text: str) -> tuple[dict, str | None]:
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        return {"raw_text": text}, f"the line is not valid JSON ({exc.msg} at column {exc.colno})"
    except RecursionError:
        return {"raw_text": text[:200]}, "the line is not valid JSON (nested too deeply)"
    if not isinstance(obj, dict):
        return {"raw_text": text}, "the line is not a JSON object"
    return obj, None


def _record_batch(rows: list[dict], lines: list[int], problems: list, filename: str, fmt: str,
                  column_map: Mapping[str, str] | None, check: bool, seen: dict) -> RawRows:
    """JSON objects → raw rows with canonical column names (review records mapped first)."""
    if fmt == "review":
        mapped = _review_rows(rows, problems, filename, seen)
        keys = dict.fromkeys(k for r in mapped for k in r)
        cols = {k: [r.get(k) for r in mapped] for k in keys}
    else:
        header = list(dict.fromkeys(k for r in rows for k in r))
        chosen = _canonical_columns(header, filename, column_map, check=check and any(p is None for p in problems))
        cols = {name: [r.get(k) for r in rows] for k, name in chosen.items()}
        return RawRows(cols, rows, [filename] * len(lines), lines, problems, {}, _dropped(filename, header, chosen))
    return RawRows(cols, rows, [filename] * len(lines), lines, problems)


def _jsonl_batches(fh, filename: str, fmt: str, column_map: Mapping[str, str] | None) -> Iterator[RawRows]:
    first = True
    seen: dict[str, int] = {}
    for rows, lines, problems in _jsonl_records(fh):
        yield _record_batch(rows, lines, problems, filename, fmt, column_map, first, seen)
        first = False
    if first:
        raise LensError(f"{filename} has no rows.")


def _jsonl_records(fh) -> Iterator[tuple[list[dict], list[int], list[str | None]]]:
    """JSON Lines → batches of (objects, line numbers, problems); a bad line is a problem, not an error."""
    feed = LineFeed(fh)
    full = _batcher(batch_rows())
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
            if not text.strip():
                continue
            lines.append(no)
            chars += len(text)
            if prob is not None:
                rows.append({"raw_text": text[:1000]})
                problems.append(prob)
                continue
            obj, prob = _json_line(text)
            rows.append(obj)
            problems.append(prob)
        if lines and full(len(lines), chars):
            yield rows, lines, problems
            rows, lines, problems, chars = [], [], [], 0
    if lines:
        yield rows, lines, problems


def _json_array_batches(fh, filename: str, column_map: Mapping[str, str] | None,
                        records_only: bool = False) -> Iterator:
    size = fh.seek(0, io.SEEK_END)
    fh.seek(0)
    if size > JSON_ARRAY_MAX_BYTES:
        raise LensError(
            f"{filename} is a JSON array of {size / 2**20:,.0f} MiB; arrays over {JSON_ARRAY_MAX_BYTES // 2**20} MiB "
            "are not read (a JSON array is parsed whole, about ten times its size in memory): convert it to JSON "
            "Lines, one object per line (for example jq -c '.[]' file.json > file.jsonl), and import that.")
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
        yield _record_batch(rows, list(range(k + 1, k + len(part) + 1)), problems, filename, "json",
                            column_map, k == 0, {})


class _ColumnRecords:
    """Rows of a column table as dicts on demand (only rejected rows are ever looked at)."""

    def __init__(self, cols: dict[str, list], n: int):
        self.cols, self.n = cols, n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> dict:
        return {k: v[i] for k, v in self.cols.items()}


def _text_sizes(arr) -> tuple[np.ndarray, object]:
    """Bytes per row of a string column (dictionary or not), without decoding it."""
    if pa.types.is_dictionary(arr.type):
        lens = pc.take(pc.binary_length(arr.dictionary), arr.indices)
    else:
        lens = pc.binary_length(arr)
    return np.asarray(pc.fill_null(lens, 0).to_numpy(zero_copy_only=False), dtype=np.int64), arr


def _blank_rows(arr, mask: np.ndarray):
    """``arr`` with the masked rows set to null, without decoding them."""
    m = pa.array(mask)
    if pa.types.is_dictionary(arr.type):
        idx = pc.if_else(m, pa.scalar(None, arr.indices.type), arr.indices)
        return pa.DictionaryArray.from_arrays(idx, arr.dictionary)
    return pc.if_else(m, pa.scalar(None, arr.type), arr)


def _cells(arr) -> list:
    """An Arrow column as a list of Python values (what ``to_pylist`` gives), decoded in bulk:
    text through NumPy object arrays (a dictionary column decodes its dictionary once), numbers
    without nulls through NumPy; other types cell by cell."""
    t = arr.type
    if pa.types.is_dictionary(t) and _is_text(t):
        words = np.append(arr.dictionary.to_numpy(zero_copy_only=False).astype(object), None)
        idx = pc.fill_null(arr.indices, len(arr.dictionary)).to_numpy(zero_copy_only=False)
        return words[idx].tolist()
    if _is_text(t) or (arr.null_count == 0 and (pa.types.is_integer(t) or pa.types.is_floating(t)
                                                 or pa.types.is_boolean(t))):
        return arr.to_numpy(zero_copy_only=False).tolist()
    return arr.to_pylist()


def _is_text(t: pa.DataType) -> bool:
    """A string or binary column, dictionary-encoded or not."""
    if pa.types.is_dictionary(t):
        t = t.value_type
    return pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t) or pa.types.is_large_binary(t)


def _parquet_batches(fh, filename: str, column_map: Mapping[str, str] | None) -> Iterator[RawRows]:
    """Parquet row batches; string columns stay dictionary-encoded until their size is known, so a
    small file whose texts expand to gigabytes is refused before it is decoded."""
    import pyarrow.parquet as pq

    size = max(fh.seek(0, io.SEEK_END), 1)
    fh.seek(0)
    try:
        pf = pq.ParquetFile(fh)
        schema = pf.schema_arrow
    except Exception as exc:  # pyarrow raises several kinds for a damaged file
        raise LensError(f"{filename} cannot be read as Parquet ({exc}).") from exc
    chosen = _canonical_columns(list(schema.names), filename, column_map)
    if pf.metadata.num_rows == 0:
        raise LensError(f"{filename} has no rows.")
    read = list(chosen)
    md = pf.metadata
    stored = sum(md.row_group(g).column(j).total_uncompressed_size for g in range(md.num_row_groups)
                 for j in range(md.num_columns) if md.row_group(g).column(j).path_in_schema.split(".")[0] in read)
    _check_expansion(filename, size, stored)
    texts = [c for c in read if _is_text(schema.field(c).type)]
    decoded = 0
    first_line = 1
    cap = 4 * TEXT_MAX_CHARS
    try:
        fh.seek(0)
        batches = pq.ParquetFile(fh, read_dictionary=texts).iter_batches(batch_size=batch_rows(), columns=read)
        for batch in batches:
            n = batch.num_rows
            sizes = np.zeros(n, dtype=np.int64)
            problems: list[str | None] = [None] * n
            arrays = {c: batch.column(c) for c in read}
            for c in texts:
                lens, arr = _text_sizes(arrays[c])
                over = lens > cap
                if over.any():
                    arrays[c] = _blank_rows(arr, over)
                    for i in np.flatnonzero(over):
                        what = f"{c} is {int(lens[i]):,} bytes long, more than any verdict field may hold"
                        problems[i] = what if problems[i] is None else f"{problems[i]}; {what}"
                    lens = np.where(over, 0, lens)
                sizes += lens
            decoded += int(sizes.sum())
            _check_expansion(filename, size, decoded)
            bounds = [0]
            run = 0
            for i, s in enumerate(sizes.tolist() if int(sizes.sum()) > BATCH_TEXT_BYTES else ()):  # one slice when it fits
                if run and run + s > BATCH_TEXT_BYTES:
                    bounds.append(i)
                    run = 0
                run += s
            bounds.append(n)
            for a, b in zip(bounds, bounds[1:], strict=False):
                if b <= a:
                    continue
                by_orig = {c: _cells(arrays[c].slice(a, b - a)) for c in read}
                cols = {name: by_orig[orig] for orig, name in chosen.items()}
                lines = list(range(first_line + a, first_line + b))
                yield RawRows(cols, _ColumnRecords(by_orig, b - a), [filename] * (b - a), lines, problems[a:b], {},
                              _dropped(filename, list(schema.names), chosen))
            first_line += n
    except LensError:
        raise
    except (OSError, ValueError, pa.ArrowException) as exc:
        raise LensError(f"{filename} cannot be read as Parquet ({exc}).") from exc


def _size(n: int) -> str:
    """Bytes as a short size: 8.1 KiB, 2.8 GiB."""
    for unit, k in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 2**k:
            return f"{n / 2**k:,.1f} {unit}"
    return f"{n} bytes"


def _check_expansion(filename: str, size: int, decoded: int) -> None:
    if decoded > EXPANSION_FREE_BYTES and decoded > EXPANSION_MAX_RATIO * size:
        raise LensError(
            f"{filename} expands from {_size(size)} to more than {_size(decoded)} of text "
            f"(over {EXPANSION_MAX_RATIO} times its size), so it is refused as a possible decompression bomb; "
            "split it into smaller files or keep its long texts out of the verdict file.")


def _record_batches(fh, filename: str, container: str) -> Iterator[tuple[list, list[int], list]]:
    """The file's records as dicts of its own fields, a batch at a time (for a tool's adapter)."""
    if container == "csv":
        feed = LineFeed(fh)
        header, delim = csv_header(feed, filename)
        for chunk in csv_chunks(feed, delim, len(header), max_lines=min(65_536, batch_rows())):
            if chunk.lines:
                yield ([dict(zip(header, r, strict=False)) if r is not None else {} for r in chunk.recs],
                       chunk.lines, chunk.problems)
    elif container == "parquet":
        import pyarrow.parquet as pq

        size = max(fh.seek(0, io.SEEK_END), 1)
        fh.seek(0)
        try:
            pf = pq.ParquetFile(fh)
            md = pf.metadata
            _check_expansion(filename, size, sum(md.row_group(g).total_byte_size for g in range(md.num_row_groups)))
            line = 1
            for batch in pf.iter_batches(batch_size=min(batch_rows(), 20_000)):
                recs = batch.to_pylist()
                yield recs, list(range(line, line + len(recs))), [None] * len(recs)
                line += len(recs)
        except LensError:
            raise
        except Exception as exc:  # pyarrow raises several kinds for a damaged file
            raise LensError(f"{filename} cannot be read as Parquet ({exc}).") from exc
    elif container == "json":
        yield from _json_array_batches(fh, filename, {}, records_only=True)
    else:
        yield from _jsonl_records(fh)


def _first_fields(fh, filename: str, container: str) -> list | None:
    """The field names of the file's first record, read cheaply (CSV header, first JSON line,
    Parquet schema); None for a JSON array (its records are read instead)."""
    try:
        if container == "parquet":
            import pyarrow.parquet as pq

            try:
                return list(pq.read_schema(fh).names)
            except Exception:  # the reader proper says what is wrong
                return []
        if container == "csv":
            try:
                return csv_header(LineFeed(fh), filename)[0]
            except LensError:
                return []
        if container != "jsonl":
            return None
        feed = LineFeed(fh)
        for _ in range(1000):  # skip blank lines and lines that are not JSON objects
            item = feed.next_line()
            if item is None:
                return []
            if item[1].strip() and item[2] is None:
                obj, prob = _json_line(item[1])
                if prob is None:
                    return list(obj)
        return []
    finally:
        fh.seek(0)


def _tool_batches(fh, filename: str, container: str, name: str) -> Iterator[RawRows]:
    """Rows of tool ``name``'s judgment file (``engine/ingest/formats``), mapped a batch of records at a time."""
    any_rows = False
    for records, lines, problems in _record_batches(fh, filename, container):
        ex = expand(name, records, lines, problems)
        if not ex.lines:
            continue
        any_rows = True
        keys = dict.fromkeys(k for r in ex.rows for k in r)
        cols = {k: [r.get(k) for r in ex.rows] for k in keys}
        yield RawRows(cols, ex.origs, [filename] * len(ex.lines), ex.lines, ex.problems, {},
                      {filename: ex.dropped} if ex.dropped else {})
    if not any_rows:
        raise LensError(f"{filename} has no rows.")


def sniff_tool(data: bytes, filename: str, fmt: str | None = None) -> str | None:
    """The tool format ``iter_raw`` would use for this file (``engine/ingest/formats``), or None for a
    file of canonical columns; a file that cannot be read gives None (validation says why)."""
    if fmt in TOOL_NAMES:
        return fmt
    if fmt is not None or not data or not data.strip():
        return None
    container = detect_format(data[:4096], filename)
    if container == "review":
        return None
    fh = io.BytesIO(data)
    fields = _first_fields(fh, filename, container)
    if fields is not None:
        return detect_fields(fields)
    try:
        first = next(_record_batches(fh, filename, container), None)
    except LensError:
        return None
    return detect_tool(first[0]) if first else None


def _open(source, filename: str):
    """A seekable binary file for ``source`` (a path, or bytes)."""
    if isinstance(source, bytes | bytearray | memoryview):
        return io.BytesIO(source)
    return open_source(source)


def iter_raw(source, filename: str, fmt: str | None = None,
             column_map: Mapping[str, str] | None = None) -> tuple[str, Iterator[RawRows]]:
    """One file (a path, or bytes) → its format and an iterator of raw-row batches.

    Memory is bounded by one batch (``import_limits.batch_rows()`` rows or about
    ``BATCH_TEXT_BYTES`` of text); file-level problems raise ``LensError`` with one sentence.
    """
    fh = _open(source, filename)
    head = fh.read(4096)
    fh.seek(0)
    if not head.strip() and len(head) < 4096:
        fh.close()
        raise LensError(f"{filename} is empty.")
    if fmt is not None and fmt not in FORMATS:
        fh.close()
        raise LensError(f"Unknown format {fmt!r}; use one of {', '.join(FORMATS)}.")
    named_tool = fmt if fmt in TOOL_NAMES else None
    # a column map means canonical columns named otherwise: no tool is guessed then
    detect_tools = (fmt is None and not column_map) or named_tool is not None
    fmt = detect_format(head, filename) if fmt is None or named_tool else fmt
    if fmt == "review" and named_tool:
        fmt = "jsonl"
    tool_name = named_tool
    if detect_tools and fmt != "review" and tool_name is None:
        fields = _first_fields(fh, filename, fmt)
        if fields is None:  # a JSON array: the first records say
            try:
                first = next(_record_batches(fh, filename, fmt), None)
            except LensError:
                first = None
            fh.seek(0)
            tool_name = detect_tool(first[0]) if first else None
        else:
            tool_name = detect_fields(fields)
    if tool_name is not None:
        container = fmt

        def tool_batches() -> Iterator[RawRows]:
            with fh:
                yield from _tool_batches(fh, filename, container, tool_name)
        return tool_name, tool_batches()

    def batches() -> Iterator[RawRows]:
        with fh:
            if fmt == "csv":
                yield from _csv_batches(fh, filename, column_map)
            elif fmt == "parquet":
                yield from _parquet_batches(fh, filename, column_map)
            elif fmt == "json":
                yield from _json_array_batches(fh, filename, column_map)
            else:
                yield from _jsonl_batches(fh, filename, fmt, column_map)
    return fmt, batches()


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


def _review_rows(rows: list[dict], problems: list[str | None], filename: str,
                 seen: dict[str, int] | None = None) -> list[dict]:
    """Review records → canonical-named records: first shown model = model_a, order AB.

    Rows with a review id carry the judge's rationale in ``text``; rows without one (human votes)
    carry the question there, and repeated rows are separate votes, numbered per question.
    """
    first, second, judge = parse_review_name(filename)
    seen = {} if seen is None else seen  # vote numbers per question, carried across batches
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
    )


def read_rows(
    data: bytes, filename: str, fmt: str | None, column_map: Mapping[str, str] | None
) -> tuple[RawRows, str]:
    """One file's bytes → all its raw rows at once (small files and tests; imports use ``iter_raw``)."""
    found, batches = iter_raw(data, filename, fmt, column_map)
    return merge_raw(list(batches)), found


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




def list_columns(source, filename: str, fmt: str | None = None) -> list[str]:
    """The file's own column names, in order (for a column-mapping form before validation); reads
    only the header, the first 1,000 JSON objects or the Parquet schema."""
    fh = _open(source, filename)
    with fh:
        head = fh.read(4096)
        fh.seek(0)
        if not head.strip() and len(head) < 4096:
            raise LensError(f"{filename} is empty.")
        if fmt is None or fmt in TOOL_NAMES:
            fmt = detect_format(head, filename)
        if fmt == "parquet":
            try:
                import pyarrow.parquet as pq

                return list(pq.read_schema(fh).names)
            except Exception as exc:  # pyarrow raises several kinds for a damaged file
                raise LensError(f"{filename} cannot be read as Parquet ({exc}).") from exc
        if fmt == "csv":
            return csv_header(LineFeed(fh), filename)[0]
        if fmt == "json":
            rows = next(_json_array_batches(fh, filename, {}), None)
            objs = rows.orig if rows is not None else []
        else:
            feed = LineFeed(fh)
            objs = []
            while len(objs) < 1000 and (item := feed.next_line()) is not None:
                if item[1].strip() and item[2] is None:
                    objs.append(_json_line(item[1])[0])
    return list(dict.fromkeys(k for r in list(objs)[:1000] for k in r if k != "raw_text"))
