"""The Parquet reader of verdict files: columns decoded in bulk batch by batch (a dictionary once,
numbers through NumPy), row index + 1 as the line, and the decompression guard that refuses a small
file that would expand past what memory should hold."""

from __future__ import annotations

import io
import os
from collections.abc import Iterator, Mapping

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from engine.errors import LensError
from engine.ingest.csv_bulk import TextCells
from engine.ingest.limits import (
    BATCH_TEXT_BYTES,
    COLUMNS_MAX,
    EXPANSION_FREE_BYTES,
    EXPANSION_MAX_RATIO,
    TEXT_MAX_CHARS,
    batch_rows,
)
from engine.ingest.raw_rows import (
    RawRows,
    canonical_columns,
    dropped_columns,
    mapped_columns,
)


class _ColumnRecords:
    """Rows of a column table as dicts on demand (only rejected rows are ever looked at)."""

    def __init__(self, cols: dict[str, list | TextCells], n: int):
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


def _cells(arr) -> list | TextCells:
    """An Arrow column as the cells validation reads: a string column stays in Arrow as ``TextCells``
    (a dictionary decoded once, in C), which the checks read in bulk as they read a CSV column and
    which give the same Python strings cell by cell; otherwise a list of Python values (what
    ``to_pylist`` gives), binary through NumPy object arrays, numbers without nulls through NumPy,
    other types cell by cell."""
    t = arr.type
    if _is_string(t):
        return TextCells(pc.cast(arr, pa.string()))
    if pa.types.is_dictionary(t) and _is_text(t):
        words = np.append(
            arr.dictionary.to_numpy(zero_copy_only=False).astype(object), np.array([None], object)
        )
        idx = pc.fill_null(arr.indices, len(arr.dictionary)).to_numpy(zero_copy_only=False)
        return words[idx].tolist()
    if _is_text(t) or (arr.null_count == 0 and (pa.types.is_integer(t) or pa.types.is_floating(t)
                                                 or pa.types.is_boolean(t))):
        return arr.to_numpy(zero_copy_only=False).tolist()
    return arr.to_pylist()


def _is_string(t: pa.DataType) -> bool:
    """A UTF-8 string column, dictionary-encoded or not (binary columns are not: their bytes are read
    cell by cell)."""
    if pa.types.is_dictionary(t):
        t = t.value_type
    return pa.types.is_string(t) or pa.types.is_large_string(t)


def _is_text(t: pa.DataType) -> bool:
    """A string or binary column, dictionary-encoded or not."""
    if pa.types.is_dictionary(t):
        t = t.value_type
    return (
        pa.types.is_string(t)
        or pa.types.is_large_string(t)
        or pa.types.is_binary(t)
        or pa.types.is_large_binary(t)
    )


def parquet_batches(fh, filename: str, column_map: Mapping[str, str] | None) -> Iterator[RawRows]:
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
    check_width(filename, len(schema.names))
    chosen = canonical_columns(list(schema.names), filename, column_map)
    if pf.metadata.num_rows == 0:
        raise LensError(f"{filename} has no rows.")
    read = list(chosen)
    md = pf.metadata
    stored = sum(
        md.row_group(g).column(j).total_uncompressed_size
        for g in range(md.num_row_groups)
        for j in range(md.num_columns)
        if md.row_group(g).column(j).path_in_schema.split(".")[0] in read
    )
    check_expansion(filename, size, stored)
    texts = [c for c in read if _is_text(schema.field(c).type)]
    dictionary = [] if _plain_is_safe(fh, texts, schema, md) else texts
    decoded = 0
    first_line = 1
    cap = 4 * TEXT_MAX_CHARS
    try:
        fh.seek(0)
        batches = pq.ParquetFile(fh, read_dictionary=dictionary).iter_batches(
            batch_size=batch_rows(), columns=read
        )
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
                    for row in np.flatnonzero(over):
                        what = f"{c} is {int(lens[row]):,} bytes long, more than any verdict field may hold"
                        problems[row] = what if problems[row] is None else f"{problems[row]}; {what}"
                    lens = np.where(over, 0, lens)
                sizes += lens
            decoded += int(sizes.sum())
            check_expansion(filename, size, decoded)
            bounds = [0]
            run = 0
            for i, s in enumerate(
                sizes.tolist() if int(sizes.sum()) > BATCH_TEXT_BYTES else ()
            ):  # one slice when it fits
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
                yield RawRows(
                    cols,
                    _ColumnRecords(by_orig, b - a),
                    [filename] * (b - a),
                    lines,
                    problems[a:b],
                    {},
                    dropped_columns(filename, list(schema.names), chosen),
                    mapped_columns(chosen, column_map),
                )
            first_line += n
    except LensError:
        raise
    except (OSError, ValueError, pa.ArrowException) as exc:
        raise LensError(f"{filename} cannot be read as Parquet ({exc}).") from exc


_PLAIN_ENCODINGS = frozenset({"PLAIN", "RLE", "BIT_PACKED", "RLE_DICTIONARY", "PLAIN_DICTIONARY"})
"""Encodings whose decoded text DuckDB's scan measures without holding it (dictionary pages stay
dictionaries there); a file using another (the delta encodings) is read the dictionary way."""


def _plain_is_safe(fh, texts: list[str], schema, md) -> bool:
    """May the text columns be decoded plainly, batch by batch, instead of as dictionaries?

    Reading them as dictionaries keeps a small file whose texts expand to gigabytes from being decoded
    before its sizes are known, but it hashes every value of a column whose pages are not dictionary
    pages (ids unique per row: 0.6 s of CPU per 1M arena rows). Plain decoding holds a whole batch's
    text at once, so it is chosen only when DuckDB's scan of the file (dictionary pages kept as
    dictionaries: a bomb costs it no memory) finds at most ``BATCH_TEXT_BYTES`` of text in every
    batch of ``batch_rows()`` rows (``iter_batches`` cuts batches at those row numbers across row
    groups). The sizes, sentences and expansion guard that follow are the same either way: a row's
    byte length is the same whether its cell came from a dictionary or not. A file given as bytes
    (an upload), a column that is not UTF-8 text, a path DuckDB would read as a pattern, another
    encoding, or any failure of the scan keep the dictionary read."""
    if not texts:
        return True
    path = getattr(fh, "name", None)
    if not isinstance(path, str) or any(ch in path for ch in "*?[{") or not os.path.isfile(path):
        return False
    if not all(_is_string(schema.field(c).type) for c in texts) \
            or len({c.lower() for c in schema.names}) != len(schema.names):
        return False
    used = set(texts)
    for g in range(md.num_row_groups):
        for j in range(md.num_columns):
            col = md.row_group(g).column(j)
            if col.path_in_schema.split(".")[0] in used and not set(col.encodings) <= _PLAIN_ENCODINGS:
                return False
    import duckdb

    from engine.store.sql import scratch

    size = " + ".join(f'coalesce(strlen("{c.replace(chr(34), chr(34) * 2)}"), 0)' for c in texts)
    try:
        with scratch() as con:
            row = con.execute(
                f"SELECT coalesce(max(t), 0), coalesce(sum(n), 0) FROM (SELECT file_row_number // $b AS k,"
                f" sum({size}) AS t, count(*) AS n FROM read_parquet($p, file_row_number = true) GROUP BY k)",
                {"b": batch_rows(), "p": os.path.abspath(path)}).fetchone()
    except duckdb.Error:
        return False
    return row is not None and int(row[1]) == md.num_rows and int(row[0]) <= BATCH_TEXT_BYTES


def _size(n: int) -> str:
    """Bytes as a short size: 8.1 KiB, 2.8 GiB."""
    for unit, k in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 2**k:
            return f"{n / 2**k:,.1f} {unit}"
    return f"{n} bytes"


def check_width(filename: str, width: int) -> None:
    """Refuse a Parquet file of more than ``COLUMNS_MAX`` columns before any column is read."""
    if width > COLUMNS_MAX:
        raise LensError(f"{filename} has {width:,} columns; a verdict file may have at most {COLUMNS_MAX:,} "
                        "(keep the verdict columns and leave the others out).")


def check_expansion(filename: str, size: int, decoded: int) -> None:
    """Refuse a file whose decoded size passes the expansion guard (a small file that would fill memory)."""
    if decoded > EXPANSION_FREE_BYTES and decoded > EXPANSION_MAX_RATIO * size:
        raise LensError(
            f"{filename} expands from {_size(size)} to more than {_size(decoded)} of text "
            f"(over {EXPANSION_MAX_RATIO} times its size), so it is refused as a possible decompression "
            "bomb; "
            "split it into smaller files or keep its long texts out of the verdict file."
        )
