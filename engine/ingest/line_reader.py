"""Physical lines and CSV records of a verdict file, streamed in blocks with their true line numbers.

``LineFeed`` reads a binary file about 4 MiB at a time and hands out physical lines (split at
``\\n`` only, so numbers match an editor), decoded as UTF-8 per block or, when a block is not
UTF-8, per line (one bad byte costs one line). A line longer than ``LINE_MAX_BYTES`` is skipped
with a problem instead of being held. ``csv_chunks`` turns the lines into CSV records: a block in
which every line is one record goes through the C parser in one call; otherwise records are read
one by one, so a row spanning lines keeps its first line, and a quote that is never closed is
reported at the line where it opens (the lines it would swallow are read again as rows).
"""

from __future__ import annotations

import csv
import io
import re
from collections import deque
from collections.abc import Iterator

from engine.errors import LensError
from engine.ingest.csv_bulk import TextCells, parse_block
from engine.ingest.limits import COLUMNS_MAX, LINE_MAX_BYTES, TEXT_MAX_CHARS

BLOCK_BYTES = 4 * 2**20
BAD_BYTES = "the line contains bytes that are not valid UTF-8 text"


def too_long() -> str:
    """The problem of a line over ``LINE_MAX_BYTES``."""
    return f"the line is longer than {_limit()}, the longest a verdict row may be; it was skipped"


def _limit() -> str:
    return f"{LINE_MAX_BYTES // 2**20} MiB" if LINE_MAX_BYTES >= 2**20 else f"{LINE_MAX_BYTES:,} bytes"

csv.field_size_limit(TEXT_MAX_CHARS + 1)  # a text of TEXT_MAX_CHARS characters (as exported) reads back

Line = tuple[int, str, str | None]
"""(line number, text with its ``\\n``, problem or None)."""


class LineFeed:
    """Numbered physical lines of a binary file, read in blocks; lines can be pushed back.

    Lines are kept as segments (first number, texts, problems or None, position) so that the
    common path hands out whole lists of texts without a tuple per line."""

    def __init__(self, fh):
        self.fh = fh
        self.no = 0
        self.segs: deque[list] = deque()
        self.eof = False
        self.first = True

    def _read_block(self) -> None:
        if self.eof:
            return
        data = self.fh.read(BLOCK_BYTES)
        if not data:
            self.eof = True
            return
        if self.first:
            self.first = False
            if data.startswith(b"\xef\xbb\xbf"):
                data = data[3:]
        runs_on = False  # the block's last line is longer than LINE_MAX_BYTES
        if not data.endswith(b"\n"):
            data += self.fh.readline(LINE_MAX_BYTES)
            if not data.endswith(b"\n"):
                tail = data.rfind(b"\n") + 1
                if len(data) - tail >= LINE_MAX_BYTES:  # the last line runs on: drop it up to its end
                    runs_on = True
                    data = data[:tail]
                    while True:
                        chunk = self.fh.readline(LINE_MAX_BYTES)
                        if not chunk or chunk.endswith(b"\n"):
                            break
        self._split(data)
        if runs_on:
            self.no += 1
            self.segs.append([self.no, [""], [too_long()], 0])

    def _split(self, data: bytes) -> None:
        try:
            parts = data.decode("utf-8").split("\n")
            bad = None
        except UnicodeDecodeError:
            raw = data.split(b"\n")
            parts, bad = [], set()
            for i, piece in enumerate(raw):
                try:
                    parts.append(piece.decode("utf-8"))
                except UnicodeDecodeError:
                    bad.add(i)
                    parts.append(piece.decode("utf-8", errors="replace"))
        last = parts.pop()
        texts = [p + "\n" for p in parts]
        if last:  # the file's last line, without a final newline
            texts.append(last)
            self.eof = True
        probs = None if not bad else [BAD_BYTES if i in bad else None for i in range(len(texts))]
        if texts and max(map(len, texts)) > LINE_MAX_BYTES:  # a line inside the block (a small limit)
            probs = probs or [None] * len(texts)
            for i, t in enumerate(texts):
                if len(t) > LINE_MAX_BYTES:
                    texts[i], probs[i] = "\n", too_long()
        if texts:
            self.segs.append([self.no + 1, texts, probs, 0])
        self.no += len(texts)

    def _head(self) -> list | None:
        while self.segs and self.segs[0][3] >= len(self.segs[0][1]):
            self.segs.popleft()
        if not self.segs:
            self._read_block()
            while self.segs and self.segs[0][3] >= len(self.segs[0][1]):
                self.segs.popleft()
        return self.segs[0] if self.segs else None

    def next_line(self) -> Line | None:
        """The next line, or None at the end of the file."""
        seg = self._head()
        if seg is None:
            return None
        start, texts, probs, pos = seg
        seg[3] = pos + 1
        return start + pos, texts[pos], probs[pos] if probs else None

    def peek(self) -> Line | None:
        """The next line (number, text, problem) without consuming it; None at the end."""
        seg = self._head()
        if seg is None:
            return None
        start, texts, probs, pos = seg
        return start + pos, texts[pos], probs[pos] if probs else None

    def take(self, max_lines: int) -> tuple[int, list[str], list | None] | None:
        """Up to ``max_lines`` next lines as (first number, texts, problems or None); None at the end."""
        seg = self._head()
        if seg is None:
            return None
        start, texts, probs, pos = seg
        end = min(len(texts), pos + max_lines)
        seg[3] = end
        if pos == 0 and end == len(texts):
            return start, texts, probs
        return start + pos, texts[pos:end], probs[pos:end] if probs else None

    def push_back(self, start: int, texts: list[str], probs: list | None) -> None:
        """Put consecutive lines (first number ``start``) back in front."""
        if texts:
            self.segs.appendleft([start, texts, probs, 0])

    def push_back_lines(self, lines: list[Line]) -> None:
        """Put (number, text, problem) lines taken too early back in front, in order."""
        if lines:
            probs = [p for _, _, p in lines]
            self.push_back(lines[0][0], [t for _, t, _ in lines], probs if any(probs) else None)


def delimiter_of(header_line: str, filename: str) -> str:
    """Comma, unless the file is .tsv or its header has no comma but tabs or semicolons
    (spreadsheets in many locales save CSV with ';')."""
    if filename.lower().endswith(".tsv"):
        return "\t"
    if "," not in header_line:
        for d in ("\t", ";"):
            if d in header_line:
                return d
    return ","


def _open_quote(lines: list[str], delim: str) -> bool:
    """Does the text end inside a quoted field (a quote that is never closed)?"""
    try:
        for _ in csv.reader(io.StringIO("".join(lines), newline=""), delimiter=delim, strict=True):
            pass
    except csv.Error as exc:
        return "unexpected end of data" in str(exc)
    return False


class CsvChunk:
    """Records of consecutive lines: first line numbers, fields (None when unreadable), problems."""

    __slots__ = ("lines", "recs", "cols", "problems", "chars")

    def __init__(self):
        self.lines: list[int] = []
        self.recs: list[list[str] | None] = []
        # a block parsed in bulk: its fields by column (``recs`` unused)
        self.cols: list[TextCells] | None = None
        self.problems: list[str | None] = []
        self.chars = 0


def csv_header(feed: LineFeed, filename: str) -> tuple[list[str], str]:
    """The header (first non-blank record) and the delimiter; LensError when the file has none."""
    while True:
        first = feed.peek()
        if first is None:
            raise LensError(f"{filename} is empty: it has no header and no rows.")
        if first[1].strip():
            break
        feed.next_line()
    delim = delimiter_of(first[1], filename)
    _check_width(_field_count(first[1], delim), first[0], filename)
    taken, rec, err = _one_record(feed, delim)
    if any(p is not None for _, _, p in taken):
        raise LensError(
            f"The header (line {taken[0][0]}) of {filename} contains bytes that are not valid UTF-8 text"
            if any(p == BAD_BYTES for _, _, p in taken)
            else f"The header (line {taken[0][0]}) of {filename} is longer than {_limit()}."
        )
    if err is not None or rec is None:
        raise LensError(f"The header (line {taken[0][0]}) of {filename} cannot be read as CSV ({err}).")
    _check_width(len(rec), taken[0][0], filename)
    return [h.strip() for h in rec], delim


_QUOTED = re.compile(r'"(?:[^"]|"")*"')


def _field_count(line: str, delim: str) -> int:
    """Fields of a one-line CSV record, counted without splitting it (quoted delimiters not counted)."""
    return (_QUOTED.sub("", line) if '"' in line else line).count(delim) + 1


def _check_width(width: int, line: int, filename: str) -> None:
    """Refuse a header wider than ``COLUMNS_MAX`` before its names are built (a 3.5 MB header line of
    400,000 names would otherwise cost gigabytes downstream)."""
    if width > COLUMNS_MAX:
        raise LensError(
            f"The header (line {line}) of {filename} has {width:,} columns; a verdict file may have at most "
            f"{COLUMNS_MAX:,} (keep the verdict columns and leave the others out)."
        )


def _one_record(feed: LineFeed, delim: str):
    """The next record read line by line: (lines taken, fields or None, csv.Error or None)."""
    taken: list[Line] = []

    def lines():
        while True:
            item = feed.next_line()
            if item is None:
                return
            taken.append(item)
            yield item[1]

    reader = csv.reader(lines(), delimiter=delim)
    try:
        return taken, next(reader), None
    except StopIteration:
        return taken, None, None
    except csv.Error as exc:
        return taken, None, exc


def _walk(feed: LineFeed, delim: str, width: int, upto: int, out: CsvChunk) -> None:
    """Read records one by one until line ``upto`` is consumed, finding each row's first line."""
    while True:
        nxt = feed.peek()
        if nxt is None or nxt[0] > upto:
            return
        taken, rec, err = _one_record(feed, delim)
        if not taken:
            return
        start = taken[0][0]
        out.chars += sum(len(t) for _, t, _ in taken)
        problem = next(((no, p) for no, _, p in taken if p is not None), None)
        if problem is not None:
            no, p = problem
            out.lines.append(start)
            out.recs.append(None)
            out.problems.append(
                p
                if no == start
                else f"line {no} of the row contains bytes that are not valid UTF-8 text"
                if p == BAD_BYTES
                else f"line {no} of the row is longer than {_limit()}"
            )
            continue
        if rec is not None and (not rec or all(not c.strip() for c in rec)) and len(taken) == 1:
            continue  # blank line: not a row
        at_end = feed.peek() is None
        unclosed = at_end and err is None and _open_quote([t for _, t, _ in taken], delim)
        if unclosed or ((err is not None or len(rec) != width) and len(taken) > 1):
            end = taken[-1][0]
            if unclosed and len(taken) == 1:
                reason = "a quote opened in this line is never closed (an unbalanced quote)"
            else:
                reason = (
                    f"a quoted field that starts in this line is not closed where the row should end "
                    "(an unbalanced quote): it runs to line "
                    f"{end}{' and the end of the file' if unclosed else ''}"
                    f"; lines {start + 1}–{end} are read again as rows of their own"
                )
                feed.push_back_lines(taken[1:])
            out.lines.append(start)
            out.recs.append(None)
            out.problems.append(reason)
            continue
        out.lines.append(start)
        if err is not None:
            out.recs.append(None)
            text = str(err)
            out.problems.append(
                f"a field is longer than {TEXT_MAX_CHARS:,} characters, the longest text a row may hold"
                if "field larger than field limit" in text
                else f"the row cannot be read as CSV ({text})"
            )
            continue
        out.recs.append(rec)
        out.problems.append(
            None if len(rec) == width else f"the row has {len(rec)} fields but the header has {width}"
        )


def csv_chunks(feed: LineFeed, delim: str, width: int, max_lines: int = 65_536,
               columns: bool = False) -> Iterator[CsvChunk]:
    """The data records after the header, a chunk of lines at a time; blank lines are not rows.
    With ``columns``, a block of plain one-line records is parsed in bulk (``csv_bulk``) and comes
    as columns (``CsvChunk.cols``); every other block as records, as before."""
    while True:
        block = feed.take(max_lines)
        if block is None:
            return
        first, texts, probs = block
        out = CsvChunk()
        if columns and (probs is None or not any(probs)):  # (a bad byte elsewhere in the 4 MiB block)
            bulk = parse_block(texts, delim, width)
            if bulk is not None:
                out.cols, keep = bulk
                out.chars = sum(map(len, texts))
                out.lines = [first + k for k in keep]
                out.problems = [None] * len(keep)
                yield out
                continue
        recs = None
        if probs is None:
            try:
                recs = list(csv.reader(texts, delimiter=delim, strict=True))
            except csv.Error:
                recs = None
            if recs is not None and len(recs) != len(texts):
                recs = None
        if recs is None:  # a row spans lines, a quote error, bad bytes: record by record
            feed.push_back(first, texts, probs)
            _walk(feed, delim, width, first + len(texts) - 1, out)
            yield out
            continue
        out.chars = sum(map(len, texts))
        blank = {k for k, r in enumerate(recs) if not r or not r[0].strip()}
        blank = {k for k in blank if not "".join(recs[k]).strip()}
        if blank:
            keep = [k for k in range(len(recs)) if k not in blank]
            recs = [recs[k] for k in keep]
            out.lines = [first + k for k in keep]
        else:
            out.lines = list(range(first, first + len(recs)))
        out.recs = list(recs)
        out.problems = [None if len(r) == width else f"the row has {len(r)} fields but the header has {width}"
                        for r in recs]
        yield out
