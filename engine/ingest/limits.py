"""The limits of an import and the rules for names: what bounds memory, what a name may hold.

One place for every number that bounds an import (batch size, longest line, longest text, the
Parquet expansion guard) and for the name rules shared by verdict columns and dataset names: NFC
spelling, no control, invisible-formatting or line-separator characters, at most
``NAME_MAX_CHARS`` characters. The same limits hold on export (``ingest.verdict_export.export_verdicts``), so
every exported file imports again.
"""

from __future__ import annotations

import os
import stat
import unicodedata
from pathlib import Path

from engine.errors import LensError

NAME_MAX_CHARS = 256
"""Longest model, judge, prompt id, category, annotator or dataset name (characters)."""
TEXT_MAX_CHARS = 1_048_576
"""Longest free text: explanation, question, answer (characters; also the CSV field limit)."""
INT_MAX = 2**31 - 1
"""Largest variant / turn: the store keeps them as 32-bit INTEGER."""
LINE_MAX_BYTES = 4 * 4 * TEXT_MAX_CHARS + 65_536
"""Longest physical line of a CSV / JSONL file: four texts of the longest kind in 4-byte UTF-8."""
JSON_ARRAY_MAX_BYTES = 64 * 2**20
"""A JSON array is parsed whole (about 10x its size in memory); larger ones must be JSON Lines."""
EXPANSION_MAX_RATIO = 200
"""Parquet: text decoded per byte of file beyond which the file is refused as a decompression bomb…"""
EXPANSION_FREE_BYTES = 512 * 2**20
"""…once more than this much text has been decoded (small files may compress well)."""
BATCH_TEXT_BYTES = 64 * 2**20
"""Parquet rows are decoded in slices of at most about this much text."""


def batch_rows() -> int:
    """Rows per import batch (memory is bounded by one batch); ``$LENS_IMPORT_BATCH_ROWS`` overrides."""
    try:
        return max(1, int(os.environ.get("LENS_IMPORT_BATCH_ROWS", "100000")))
    except ValueError:
        return 100_000


INVISIBLE_RE = r"[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]"
"""Control (Cc: NUL, tab, newline, ESC …), invisible formatting (Cf: zero-width space and joiners,
bidi overrides, BOM, soft hyphen …) and line / paragraph separators (Zl, Zp): refused in names."""
_KINDS = {"Cc": "a control character", "Cf": "an invisible formatting character",
          "Zl": "a line separator", "Zp": "a paragraph separator"}


def bad_characters(value: str) -> str | None:
    """``"a control character (U+0000)"``-style words for the refused characters of a name, or None."""
    found: dict[str, list[str]] = {}
    for ch in value:
        cat = unicodedata.category(ch)
        if cat in _KINDS:
            codes = found.setdefault(_KINDS[cat], [])
            code = f"U+{ord(ch):04X}"
            if code not in codes:
                codes.append(code)
    if not found:
        return None
    return " and ".join(f"{kind} ({', '.join(codes)})" for kind, codes in found.items())


def check_dataset_name(name: object) -> str:
    """A dataset name as stored (NFC), or LensError: empty, outer spaces, a refused character, too long."""
    if not isinstance(name, str) or not name.strip():
        raise LensError("A dataset needs a non-empty name.")
    name = unicodedata.normalize("NFC", name)
    bad = bad_characters(name)
    if bad:
        raise LensError(f"The dataset name {name[:80]!r} contains {bad}; use visible characters only.")
    if name != name.strip():
        raise LensError(f"The dataset name {name!r} starts or ends with spaces.")
    if len(name) > NAME_MAX_CHARS:
        raise LensError(f"The dataset name is {len(name):,} characters long; the limit is {NAME_MAX_CHARS}.")
    return name


def open_source(path: str | os.PathLike[str]):
    """Open a verdict file for reading, refusing what is not a regular file (a folder, a device such
    as /dev/zero, a FIFO, a socket) before reading a byte, so nothing blocks or reads forever."""
    p = Path(path)
    try:
        st = os.stat(p)
    except FileNotFoundError as exc:
        raise LensError(f"There is no file {p}.") from exc
    except OSError as exc:
        raise LensError(f"Cannot read {p} ({exc.strerror}).") from exc
    if stat.S_ISDIR(st.st_mode):
        raise LensError(f"{p} is a folder; give the verdict files inside it (for example {p}/*.jsonl).")
    if not stat.S_ISREG(st.st_mode):
        kind = (
            "a FIFO (named pipe)"
            if stat.S_ISFIFO(st.st_mode)
            else "a device"
            if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode)
            else "a socket"
            if stat.S_ISSOCK(st.st_mode)
            else "not a regular file"
        )
        raise LensError(f"{p} is {kind}, not a regular file; save the verdicts to a file and import that.")
    try:
        return open(p, "rb")  # noqa: SIM115 - the caller closes it
    except OSError as exc:
        raise LensError(f"Cannot read {p} ({exc.strerror}).") from exc
