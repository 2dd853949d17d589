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
from collections import deque
from collections.abc import Iterator

from .errors import LensError
from .import_limits import LINE_MAX_BYTES, TEXT_MAX_CHARS

BLOCK_BYTES = 4 * 2**20
BAD_BYTES = "the line contains bytes that are not valid UTF-8 text"
TOO_LONG = f"the line is longer than {LINE_MAX_BYTES // 2**20} MiB, the longest a verdict row may be; it was skipped"

csv.field_size_limit(TEXT_MAX_CHARS + 1)  # a text of TEXT_MAX_CHARS characters (as exported) reads back

Line = tuple[int, str, str | None]
"""(line number, text with its ``\\n``, problem or None)."""


class LineFeed:
    """Numbered physical lines of a binary file, read in blocks; lines can be pushed back."""

    def __init__(self, fh):
        self.fh = fh
        self.no = 0
        self.pending: deque[Line] = deque()
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
        too_long = False
        if not data.endswith(b"\n"):
            data += self.fh.readline(LINE_MAX_BYTES)
            if not data.endswith(b"\n"):
                tail = data.rfind(b"\n") + 1
                if len(data) - tail >= LINE_MAX_BYTES:  # the last line runs on: drop it up to its end
                    too_long = True
                    data = data[:tail]
                    while True:
                        chunk = self.fh.readline(LINE_MAX_BYTES)
                        if not chunk or chunk.endswith(b"\n"):
                            break
        self._split(data)
        if too_long:
            self.no += 1
            self.pending.append((self.no, "", TOO_LONG))

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
        start = self.no + 1
        if bad is None:
            self.pending.extend(zip(range(start, start + len(parts)), [p + "\n" for p in parts],
                                    [None] * len(parts), strict=True))
        else:
            self.pending.extend((start + i, p + "\n", BAD_BYTES if i in bad else None) for i, p in enumerate(parts))
        self.no += len(parts)
        if last:  # the file's last line, without a final newline
            self.no += 1
            self.pending.append((self.no, last, BAD_BYTES if bad and len(parts) in bad else None))
            self.eof = True

    def next_line(self) -> Line | None:
        """The next line, or None at the end of the file."""
        if not self.pending:
            self._read_block()
        return self.pending.popleft() if self.pending else None

    def peek(self) -> Line | None:
        if not self.pending:
            self._read_block()
        return self.pending[0] if self.pending else None

    def take(self, max_lines: int) -> list[Line]:
        """Up to ``max_lines`` next lines (at least one unless the file has ended)."""
        if not self.pending:
            self._read_block()
        n = min(max_lines, len(self.pending))
        return [self.pending.popleft() for _ in range(n)]

    def push_back(self, lines: list[Line]) -> None:
        self.pending.extendleft(reversed(lines))


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

    __slots__ = ("lines", "recs", "problems", "chars")

    def __init__(self):
        self.lines: list[int] = []
        self.recs: list[list | None] = []
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
    taken, rec, err = _one_record(feed, delim)
    if any(p is not None for _, _, p in taken):
        raise LensError(f"The header (line {taken[0][0]}) of {filename} contains bytes that are not valid UTF-8 text"
                        if any(p == BAD_BYTES for _, _, p in taken) else
                        f"The header (line {taken[0][0]}) of {filename} is longer than {LINE_MAX_BYTES // 2**20} MiB.")
    if err is not None or rec is None:
        raise LensError(f"The header (line {taken[0][0]}) of {filename} cannot be read as CSV ({err}).")
    return [h.strip() for h in rec], delim


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
            if rec is not None and len(taken) == 1 and not any(c.strip() for c in rec):
                continue
            out.lines.append(start)
            out.recs.append(None)
            out.problems.append(p if no == start else
                                f"line {no} of the row contains bytes that are not valid UTF-8 text" if p == BAD_BYTES
                                else f"line {no} of the row is longer than {LINE_MAX_BYTES // 2**20} MiB")
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
                reason = (f"a quoted field that starts in this line is not closed where the row should end "
                          f"(an unbalanced quote): it runs to line {end}{' and the end of the file' if unclosed else ''}"
                          f"; lines {start + 1}–{end} are read again as rows of their own")
                feed.push_back(taken[1:])
            out.lines.append(start)
            out.recs.append(None)
            out.problems.append(reason)
            continue
        out.lines.append(start)
        if err is not None:
            out.recs.append(None)
            text = str(err)
            out.problems.append(f"a field is longer than {TEXT_MAX_CHARS:,} characters, the longest text a row may hold"
                                if "field larger than field limit" in text else
                                f"the row cannot be read as CSV ({text})")
            continue
        out.recs.append(rec)
        out.problems.append(None if len(rec) == width else f"the row has {len(rec)} fields but the header has {width}")


def csv_chunks(feed: LineFeed, delim: str, width: int, max_lines: int = 65_536) -> Iterator[CsvChunk]:
    """The data records after the header, a chunk of lines at a time; blank lines are not rows."""
    while True:
        block = feed.take(max_lines)
        if not block:
            return
        out = CsvChunk()
        texts = [t for _, t, _ in block]
        recs = None
        if all(p is None for _, _, p in block):
            try:
                recs = list(csv.reader(texts, delimiter=delim, strict=True))
            except csv.Error:
                recs = None
            if recs is not None and len(recs) != len(texts):
                recs = None
        if recs is None:  # a row spans lines, a quote error, bad bytes: record by record
            feed.push_back(block)
            _walk(feed, delim, width, block[-1][0], out)
            yield out
            continue
        out.chars = sum(map(len, texts))
        first = block[0][0]
        for k, r in enumerate(recs):
            if "".join(r).strip():
                out.lines.append(first + k)
                out.recs.append(r)
                out.problems.append(None if len(r) == width else f"the row has {len(r)} fields but the header has {width}")
        yield out
