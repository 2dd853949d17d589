"""A block of plain CSV lines parsed in bulk by Arrow: the fast path of ``line_reader.csv_chunks``.

A block qualifies only when every physical line is one well-formed record: each field either
unquoted (no quote, no carriage return, no delimiter) or wholly quoted with inner quotes doubled
(no line break inside), no line longer than the field limit, and Arrow reads exactly one record of
the header's width per line. On such lines Python's ``csv`` module and Arrow's reader give the
same fields, so the rows, their line numbers and every later sentence stay as the line reader's.
Anything else (a row spanning lines, a stray or unbalanced quote, a short row, bad bytes, an
over-long field) gives None, and the caller reads the block record by record, as before.
"""

from __future__ import annotations

import io

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from engine.ingest.limits import TEXT_MAX_CHARS

_BLANK = r"^[ \t\n\r\x0b\x0c\x1c-\x1f]*$"
"""A field Python's ``str.strip`` empties, when the field is ASCII (non-ASCII fields are checked in
Python)."""


class TextCells:
    """A column of CSV text cells kept as one Arrow string array: validation reads ``arrow`` as it
    is; per-cell code indexes or iterates it as Python strings (made only for the cells it reads)."""

    __slots__ = ("arrow",)

    def __init__(self, arrow: pa.Array):
        self.arrow = arrow

    def __len__(self) -> int:
        return len(self.arrow)

    def __getitem__(self, i: int) -> str:
        return self.arrow[i].as_py()

    def __iter__(self):
        return iter(self.arrow.to_pylist())

    @staticmethod
    def join(parts: list[TextCells]) -> TextCells:
        """Consecutive blocks' cells as one column."""
        return parts[0] if len(parts) == 1 else TextCells(pa.concat_arrays([p.arrow for p in parts]))


def _line_pattern(delim: str) -> str:
    """RE2 pattern of one line that is a single well-formed record (with its line end)."""
    d = f"\\x{ord(delim):02x}"
    field = f'[^"\\r\\n{d}]*|"(?:[^"\\r\\n]|"")*"'
    return f"^(?:{field})(?:{d}(?:{field}))*\\r?\\n?$"


def parse_block(texts: list[str], delim: str, width: int) -> tuple[list[TextCells], list[int]] | None:
    """The block's fields by column, and the offsets of the lines that are rows (blank lines are
    not rows); None when the block must be read record by record."""
    if not texts:
        return None
    lines = pa.array(texts, type=pa.string())
    if pc.max(pc.utf8_length(lines)).as_py() > TEXT_MAX_CHARS:
        return None  # a field may be over the limit: the line reader words it
    if not pc.all(pc.match_substring_regex(lines, _line_pattern(delim))).as_py():
        return None
    names = [f"c{i}" for i in range(width)]
    try:
        table = pacsv.read_csv(
            io.BytesIO("".join(texts).encode("utf-8")),
            read_options=pacsv.ReadOptions(column_names=names, use_threads=False),
            parse_options=pacsv.ParseOptions(
                delimiter=delim,
                quote_char='"',
                double_quote=True,
                escape_char=False,
                newlines_in_values=False,
                ignore_empty_lines=False,
            ),
            convert_options=pacsv.ConvertOptions(
                column_types=dict.fromkeys(names, pa.string()),
                strings_can_be_null=False,
                quoted_strings_can_be_null=False,
            ),
        )
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None  # e.g. a row of another width: the line reader says which
    if table.num_rows != len(texts) or table.num_columns != width:
        return None
    arrays = [table.column(i).combine_chunks() for i in range(width)]
    maybe = None  # rows that may be blank (every field empty after strip); most rows end this at column 0
    for a in arrays:
        m = pc.or_(pc.match_substring_regex(a, _BLANK), pc.invert(pc.string_is_ascii(a)))
        maybe = m if maybe is None else pc.and_(maybe, m)
        if not pc.any(maybe).as_py():
            break
    keep = list(range(len(texts)))
    if pc.any(maybe).as_py():
        blank = {int(k) for k in pc.indices_nonzero(maybe).to_pylist()
                 if not "".join(a[k].as_py() for a in arrays).strip()}
        if blank:
            keep = [k for k in keep if k not in blank]
            arrays = [a.take(pa.array(keep, type=pa.int64())) for a in arrays]
    return [TextCells(a) for a in arrays], keep
