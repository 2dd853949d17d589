"""Verdict files → raw rows: the readers of every accepted format, with true line numbers.

Part of the import (``engine/ingest/verdicts.py`` checks the rows these readers return). Formats: CSV/TSV,
JSON Lines, a JSON array, Parquet, and the *review* format of the Vicuna-bench rating files (one
JSONL file per ordered model pair, the pair and the judge named by the file name). Each row keeps
the line a user sees in an editor (CSV: header = line 1, a row spanning lines counts from its first;
JSONL: physical line; Parquet / JSON array: row index + 1). Bytes are decoded line by line when the
whole file is not UTF-8, so one bad line costs that line only. Problems of a single row become its
reason; problems of the whole file raise ``LensError`` with one sentence. The vocabulary and
``RawRows`` live in ``raw_rows``, the JSON and Parquet readers in ``json_reader`` and ``parquet_reader``;
CSV (with its bulk path, ``csv_bulk``) and the tools' formats are read here.
"""

from __future__ import annotations

import io
from collections.abc import Iterator, Mapping, Sequence
from pathlib import PurePath

import pyarrow.compute as pc

from engine.errors import LensError
from engine.heap import collection_paused
from engine.ingest.csv_bulk import TextCells
from engine.ingest.csv_cells import restore_csv_cell
from engine.ingest.formats import TOOL_NAMES, detect_fields, detect_tool, expand
from engine.ingest.json_reader import json_array_batches, json_line, jsonl_batches, jsonl_records
from engine.ingest.limits import (
    COLUMNS_MAX,
    batch_rows,
    open_source,
)
from engine.ingest.line_reader import LineFeed, csv_chunks, csv_header
from engine.ingest.parquet_reader import check_expansion, check_width, parquet_batches
from engine.ingest.raw_rows import (
    CONTAINERS,
    FORMATS,
    REVIEW_NAME,
    RawRows,
    RowView,
    batch_full,
    canonical_columns,
    dropped_columns,
    mapped_columns,
    merge_raw,
)


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
        if REVIEW_NAME.match(PurePath(filename).stem) and b'"score"' in first and b'"winner"' not in first:
            return "review"
        return "jsonl"
    return "csv"


def read_as(head: bytes, filename: str, fmt: str | None) -> str:
    """The container ``iter_raw`` reads a file as: the one picked (``fmt``) when it names a container, else
    the one ``detect_format`` finds from the name and first bytes, a tool's file never being read as a review
    file. The import form's judge suggestion asks here too, so it follows a format picked by hand."""
    if fmt is not None and fmt not in TOOL_NAMES:
        return fmt
    found = detect_format(head, filename)
    return "jsonl" if found == "review" and fmt is not None else found


_COMPRESSED: tuple[tuple[bytes, str, str], ...] = (
    (b"\x1f\x8b", "gzip-compressed", "gunzip it"),
    (b"PK\x03\x04", "ZIP archive", "unzip it"),
    (b"PK\x05\x06", "ZIP archive (an empty one)", "unzip it"),
    (b"BZh", "bzip2-compressed", "bunzip2 it"),
    (b"\xfd7zXZ\x00", "xz-compressed", "unxz it"),
    (b"\x28\xb5\x2f\xfd", "Zstandard-compressed", "unzstd it"),
    (b"7z\xbc\xaf\x27\x1c", "7-Zip archive", "extract it"),
)
"""Magic bytes of archives and compressed files: read as text they are bad bytes on every line."""


def not_text(head: bytes, filename: str, fmt: str, kind: str = "text verdict file",
             rows: str = "verdicts") -> str | None:
    """One sentence when the file's first bytes show it cannot be a verdict file of format ``fmt`` read as
    text (compressed, an archive, a NUL byte in its first line, lines ended by a bare carriage return);
    None otherwise. ``kind`` and ``rows`` name what the file should be and hold (``import-texts`` asks
    about JSON files of prompt and answer texts).
    Parquet is binary and is read by its own reader."""
    if fmt == "parquet":
        return None
    for magic, what, how in _COMPRESSED:
        if head.startswith(magic):
            return (f"{filename} is a {what} file, not a {kind}; {how} and import what it holds"
                    + (" (Parquet files are read as they are)." if rows == "verdicts" else "."))
    nul = head.split(b"\n", 1)[0].find(b"\x00")  # (a NUL in a later row costs that row only)
    if nul >= 0:
        utf16 = head[:2] in (b"\xff\xfe", b"\xfe\xff") or (nul <= 1 and head[:4].count(b"\x00") == 2)
        return (f"{filename} has a NUL byte at byte {nul + 1:,}, so it is not a {kind}"
                + ("; it looks like UTF-16 text: save it as UTF-8 and import that." if utf16 else
                   f" (a binary file, or text saved as UTF-16 or UTF-32): save the {rows} as UTF-8 text."))
    if b"\r" in head and b"\n" not in head:  # (a CR in a quoted field has a \n-ended line around it)
        return (f"{filename} ends its lines with a bare carriage return (CR, classic Mac OS), so it reads as "
                "one line; convert the line ends to \\n (for example tr '\\r' '\\n' < old > new) and import "
                "that.")
    return None


class _CsvRows:
    """Rows of a batch parsed by columns, each as the list of its values, made on demand (only
    rejected rows are ever looked at)."""

    def __init__(self, columns: Sequence[RowView], n: int):
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
    full = batch_full(batch_rows())
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
            chosen = canonical_columns(header, filename, column_map, check=any(p is None for p in problems))
        if all(
            c.cols is not None for c in chunks
        ):  # every block parsed in bulk: every row has the header's width
            bulk = [_restored(TextCells.join([c.cols[j] for c in chunks])) for j in range(width)]
            cols = {name: (c if isinstance(c := bulk[header.index(orig)], TextCells) else list(c))
                    for orig, name in chosen.items()}  # (a list is copied: a value map rewrites it)
            return RawRows(cols, _CsvRows(bulk, len(lines)), [filename] * len(lines), lines, problems,
                           {filename: tuple(header)}, dropped_columns(filename, header, chosen),
                           mapped_columns(chosen, column_map))
        recs = [
            r for c in chunks for r in (c.recs if c.cols is None else map(list, zip(*c.cols, strict=True)))
        ]
        clean = all(p is None for p in problems)  # every row has the header's width
        # a CSV the tool wrote has ' before formula-like cells (engine/views/exports.py): read them back raw
        # (a batch without any ' in its cells, seen one column at a time, has none to restore)
        columns = list(zip(*recs, strict=True)) if clean else None
        if columns is None or any("'" in "\x1f".join(c) for c in columns):
            recs = [[restore_csv_cell(c) for c in r] if r is not None and any(
                isinstance(c, str) and c[:1] == "'" for c in r) else r for r in recs]
            columns = list(zip(*recs, strict=True)) if clean else None
        if columns is None:
            padded = [
                r if r is not None and len(r) == width else ((r or []) + [None] * width)[:width] for r in recs
            ]
            columns = list(zip(*padded, strict=True))
        cols = {name: list(columns[header.index(orig)]) for orig, name in chosen.items()}
        orig = [r if r is not None else [] for r in recs]
        return RawRows(cols, orig, [filename] * len(lines), lines, problems, {filename: tuple(header)},
                       dropped_columns(filename, header, chosen), mapped_columns(chosen, column_map))

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
            check_width(filename, md.num_columns)
            check_expansion(
                filename, size, sum(md.row_group(g).total_byte_size for g in range(md.num_row_groups))
            )
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
        yield from json_array_batches(fh, filename, {}, records_only=True)
    else:
        yield from jsonl_records(fh)


def _first_fields(fh, filename: str, container: str) -> list | None:
    """The field names of the file's first record, read cheaply (CSV header, first JSON line,
    Parquet schema); None for a JSON array (its records are read instead)."""
    try:
        if container == "parquet":
            import pyarrow.parquet as pq

            try:
                names = list(pq.read_schema(fh).names)
            except Exception:  # the reader proper says what is wrong
                return []
            return names if len(names) <= COLUMNS_MAX else []
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
                obj, prob = json_line(item[1])
                if prob is None:
                    return list(obj)
        return []
    finally:
        fh.seek(0)


def _tool_batches(fh, filename: str, container: str, name: str) -> Iterator[RawRows]:
    """Rows of tool ``name``'s judgment file (``engine/ingest/formats``), mapped a batch of records at a
    time."""
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
    unreadable = not_text(head, filename, fmt if fmt in CONTAINERS else detect_format(head, filename))
    if unreadable:
        fh.close()
        raise LensError(unreadable)
    if named_tool and column_map:
        fh.close()
        raise LensError(f"--map renames the columns of a file of verdict columns; a {named_tool} file is "
                        "read by its own field names, so --map would be ignored: leave out --map or "
                        "--format.")
    # a column map means canonical columns named otherwise: no tool is guessed then
    detect_tools = (fmt is None and not column_map) or named_tool is not None
    fmt = read_as(head, filename, fmt)
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
                yield from parquet_batches(fh, filename, column_map)
            elif fmt == "json":
                yield from json_array_batches(fh, filename, column_map)
            else:
                yield from jsonl_batches(fh, filename, fmt, column_map)
    return fmt, batches()


def read_rows(
    data: bytes, filename: str, fmt: str | None, column_map: Mapping[str, str] | None
) -> tuple[RawRows, str]:
    """One file's bytes → all its raw rows at once (small files and tests; imports use ``iter_raw``)."""
    found, batches = iter_raw(data, filename, fmt, column_map)
    return merge_raw(list(batches)), found


def no_gc():
    """Reading builds one small list or dict per row and holds them all; the cyclic collector would rescan
    them again and again (none of them can form a cycle), so it waits until the end
    (``engine.heap.collection_paused``: shared with the other threads' pauses)."""
    return collection_paused()


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
        unreadable = not_text(head, filename, fmt)
        if unreadable:
            raise LensError(unreadable)
        if fmt == "parquet":
            try:
                import pyarrow.parquet as pq

                names = list(pq.read_schema(fh).names)
            except Exception as exc:  # pyarrow raises several kinds for a damaged file
                raise LensError(f"{filename} cannot be read as Parquet ({exc}).") from exc
            check_width(filename, len(names))
            return names
        if fmt == "csv":
            return csv_header(LineFeed(fh), filename)[0]
        if fmt == "json":
            rows = next(json_array_batches(fh, filename, {}), None)
            objs = rows.orig if rows is not None else []
        else:
            feed = LineFeed(fh)
            objs = []
            while len(objs) < 1000 and (item := feed.next_line()) is not None:
                if item[1].strip() and item[2] is None:
                    objs.append(json_line(item[1])[0])
    return list(dict.fromkeys(k for r in list(objs)[:1000] for k in r if k != "raw_text"))
