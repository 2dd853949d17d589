"""The one escaping of text on its way to a terminal: control characters shown, never obeyed.

Model, judge, dataset and column names, rationales and error sentences come from files and from the
store; a name holding ``ESC ] 0 ;`` … ``BEL`` would retitle the user's terminal, ``ESC [2J`` clear it,
``ESC ] 52`` write the clipboard, C1 codes (U+0080-U+009F) act as escapes on some terminals, and the
bidi controls (U+202A-U+202E, U+2066-U+2069) reorder what is shown around them. ``escape_controls``
writes each such character as its Python escape (``\\x1b``, ``\\u202e``), so the text is still
readable and the terminal receives printable characters only.

``python -m engine`` routes all of its stdout and stderr through ``EscapedStream`` (``escape_streams``)
so that every sentence, note, table and traceback is escaped however it was printed; a command's CSV
sent to a pipe or a file is data, written exactly (``unescaped``), and escaped only on a terminal. The
app's server log of an unexpected page error (``app_pages/_lens.py: internal_error``) is escaped too.
"""

from __future__ import annotations

import io
import re
import sys
import unicodedata

_ESCAPED_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
"""Control, invisible formatting (bidi, zero-width), lone surrogate and line/paragraph separators."""

_MAYBE = re.compile(
    "[\x00-\x1f\x7f-\x9f\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180e"
    "\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff\ufff9-\ufffb\ud800-\udfff"
    "\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a"
    "\U000e0001-\U000e007f]"
)
"""Every character of an escaped category (the Cf list is short), found in one pass; the
category is checked again per match so that the list errs only towards looking, never towards missing
a category ``unicodedata`` knows (``test_terminal_escape`` compares it with a scan of all code points)."""


def _escape(ch: str) -> str:
    code = ord(ch)
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def escape_controls(text: str, keep: str = "\n\t") -> str:
    """``text`` with every control, invisible-formatting, separator and lone-surrogate character
    written as its Python escape, except those in ``keep`` (line breaks and tabs of the tool's own
    output; a table cell keeps none)."""
    if not _MAYBE.search(text):
        return text
    return _MAYBE.sub(
        lambda m: m.group() if m.group() in keep or unicodedata.category(m.group()) not in
        _ESCAPED_CATEGORIES else _escape(m.group()),
        text,
    )


def escape_cell(value: object) -> object:
    """A table cell as a terminal shows it: text escaped down to one line (``\\n``, ``\\r`` and tabs
    too, which would break the table's alignment); other values as they are."""
    return escape_controls(value, keep="") if isinstance(value, str) else value


class EscapedStream(io.TextIOBase):
    """A text stream that writes to ``unescaped`` what it is given, escaped by ``escape_controls``."""

    def __init__(self, unescaped):
        super().__init__()
        self.unescaped = unescaped

    def write(self, text: str) -> int:
        self.unescaped.write(escape_controls(text))
        return len(text)

    def flush(self) -> None:
        self.unescaped.flush()

    def isatty(self) -> bool:
        return on_terminal(self.unescaped)

    def fileno(self) -> int:
        return self.unescaped.fileno()

    def writable(self) -> bool:
        return True

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self.unescaped, "encoding", "utf-8")

    @property
    def errors(self) -> str | None:  # type: ignore[override]
        return getattr(self.unescaped, "errors", None)


def on_terminal(out) -> bool:
    """Whether ``out`` is an interactive terminal."""
    try:
        return bool(out.isatty())
    except (AttributeError, ValueError):
        return False


def escape_streams() -> None:
    """Route this process's stdout and stderr through ``EscapedStream`` (once; ``python -m engine``
    calls it before anything is printed, so tracebacks and warnings are escaped too)."""
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if stream is not None and not isinstance(stream, EscapedStream):
            setattr(sys, name, EscapedStream(stream))


def data_stream(out):
    """Where a command writes data (CSV): the stream itself on a terminal (escaped), else the stream
    below the escaping, so a pipe or a file gets the exact text."""
    return out if on_terminal(out) else getattr(out, "unescaped", out)
