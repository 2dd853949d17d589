"""The limits of an import and the rules for names: what bounds memory, what a name may hold.

One place for every number that bounds an import (batch size, longest line, longest text, the
Parquet expansion guard) and for the name rules shared by verdict columns and dataset names: NFC
spelling, no control, invisible-formatting or line-separator characters, at most
``NAME_MAX_CHARS`` characters. The same limits hold on export (``ingest.verdict_export.export_verdicts``), so
every exported file imports again.
"""

from __future__ import annotations

import os
import re
import stat
import unicodedata
from collections.abc import Iterable
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
TSTAMP_RANGE = (-62_135_596_800.0, 253_402_300_799.0)
"""Earliest and latest ``tstamp`` (seconds since 1970): 0001-01-01 to 9999-12-31 UTC, the years a
date can be written in; a number past them is no time (milliseconds, or a corrupt cell)."""
COLUMNS_MAX = 1000
"""Most columns (CSV header fields, Parquet columns, distinct JSON keys in one batch) a verdict file
may have: checked before anything as wide is built, so a file of 400,000 header columns costs no
more memory than its header line."""
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


def import_memory_limit() -> str:
    """DuckDB's memory cap on the store while an import writes its rows (``Store.limit_memory``), "1GB";
    ``$LENS_IMPORT_MEMORY`` overrides (any DuckDB size, e.g. 256MB). The final insert sorts every staged
    row by its position in the files and the listing's summary counts distinct prompts and models over
    every row; under DuckDB's default cap (80 % of the machine's memory) both held their whole input in
    memory (a 10M-row import peaked at 4.0 GB), under this one they spill to the store's temporary folder."""
    return os.environ.get("LENS_IMPORT_MEMORY", "").strip() or "1GB"


BLANK_RANGES: tuple[tuple[int, int], ...] = (
    (0x034F, 0x034F),  # combining grapheme joiner
    (0x115F, 0x1160),  # Hangul choseong / jungseong fillers
    (0x17B4, 0x17B5),  # Khmer inherent vowels
    (0x180B, 0x180F),  # Mongolian variation selectors and vowel separator
    (0x2800, 0x2800),  # Braille pattern blank
    (0x3164, 0x3164),  # Hangul filler
    (0xFE00, 0xFE0F),  # variation selectors
    (0xFFA0, 0xFFA0),  # halfwidth Hangul filler
    (0xE0100, 0xE01EF),  # variation selectors supplement
)
"""Characters that are letters or marks to Unicode but draw nothing (or change nothing visible):
a name made of them renders blank, and ``gpt4`` with one of them appended looks like ``gpt4``."""

ODD_SPACES: tuple[tuple[int, int], ...] = (
    (0x00A0, 0x00A0),  # no-break space
    (0x1680, 0x1680),  # Ogham space mark
    (0x2000, 0x200A),  # en quad … hair space
    (0x202F, 0x202F),  # narrow no-break space
    (0x205F, 0x205F),  # medium mathematical space
    (0x3000, 0x3000),  # ideographic space
)
"""Every space separator (Unicode Zs) but the plain space U+0020: ``gpt\u00a04`` prints as ``gpt 4``
yet is another name, so a name may hold the plain space only."""

INVISIBLE_RE = (r"[\p{Cc}\p{Cf}\p{Zl}\p{Zp}"
                + "".join(f"\\x{{{a:X}}}" + (f"-\\x{{{b:X}}}" if b != a else "")
                          for a, b in BLANK_RANGES + ODD_SPACES)
                + "]")
"""Control (Cc: NUL, tab, newline, ESC …), invisible formatting (Cf: zero-width space and joiners,
bidi overrides, BOM, soft hyphen …), line / paragraph separators (Zl, Zp), the blank-rendering
characters of ``BLANK_RANGES`` and the spaces of ``ODD_SPACES``: refused in names (an RE2 pattern,
for Arrow)."""
_KINDS = {"Cc": "a control character", "Cf": "an invisible formatting character",
          "Zl": "a line separator", "Zp": "a paragraph separator"}
_BLANK_KIND = "a character that renders blank"
_SPACE_KIND = "a space other than the plain space"

MARKS_ONLY_RE = r"^[\p{M}\p{Zs}]+$"
"""A name of combining marks (and spaces) only: nothing for the marks to sit on, so it shows as a blank
or as marks on whatever is printed before it (an RE2 pattern)."""
MIXED_SCRIPT_RE = (r"\p{Latin}[\p{L}\p{N}]*[\p{Cyrillic}\p{Greek}]"
                   r"|[\p{Cyrillic}\p{Greek}][\p{L}\p{N}]*\p{Latin}")
"""A word (a run of letters and digits) mixing Latin with Cyrillic or Greek letters: the way a
look-alike is spelt (``gрt4`` with a Cyrillic ``р`` beside ``gpt4``); refused. Words of one script
each (``модель-gpt``, ``α-model``) are not (an RE2 pattern)."""
_WORD = re.compile(r"[^\W_]+")

_LOOKALIKES = dict(zip(
    "аеорсухіјѕԁԛԝһӏАВЕКМНОРСТХУІЈЅѴԜαονικτχρεΑΒΕΖΗΙΚΜΝΟΡΤΥΧ",
    "aeopcyxijsdqwhlABEKMHOPCTXYIJSVWaovikTxpeABEZHIKMNOPTYX", strict=True))
"""Cyrillic and Greek letters drawn like a Latin one, and that Latin letter (for the message)."""


def _blank(ch: str) -> bool:
    code = ord(ch)
    return any(a <= code <= b for a, b in BLANK_RANGES)


def _odd_space(ch: str) -> bool:
    code = ord(ch)
    return any(a <= code <= b for a, b in ODD_SPACES)


def bad_characters(value: str) -> str | None:
    """``"a control character (U+0000)"``-style words for the refused characters of a name, or None;
    a blank-rendering character or an odd space is named too (``U+3164 HANGUL FILLER``)."""
    found: dict[str, list[str]] = {}
    for ch in value:
        cat = unicodedata.category(ch)
        kind = _KINDS.get(cat) or (_BLANK_KIND if _blank(ch) else _SPACE_KIND if _odd_space(ch) else None)
        if kind is not None:
            codes = found.setdefault(kind, [])
            named = kind in (_BLANK_KIND, _SPACE_KIND)
            code = f"U+{ord(ch):04X}" + (f" {unicodedata.name(ch, '')}" if named else "")
            if code not in codes:
                codes.append(code)
    if not found:
        return None
    return " and ".join(f"{kind} ({', '.join(codes)})" for kind, codes in found.items())


def _code(ch: str) -> str:
    return f"U+{ord(ch):04X} {unicodedata.name(ch, '')}".rstrip()


def marks_only(value: str) -> str | None:
    """Why a name of combining marks (and spaces) only is refused, naming its first marks; else None."""
    if not value or not all(unicodedata.category(ch)[0] in "MZ" for ch in value):
        return None
    marks = list(dict.fromkeys(ch for ch in value if unicodedata.category(ch)[0] == "M"))
    if not marks:
        return None
    return (f"consists of combining marks only ({', '.join(_code(ch) for ch in marks[:3])}), "
            "so it renders blank or on the character before it")


def mixed_script(value: str) -> str | None:
    """Why a name with a word mixing Latin letters with Cyrillic or Greek ones is refused: the foreign
    letters by code point, and the Latin name it looks like when each of them has a Latin twin; else
    None."""
    def script(ch: str) -> str:
        return unicodedata.name(ch, "").split(" ", 1)[0] if ch.isalpha() else ""
    mixed = [w for w in _WORD.findall(value) if "LATIN" in (scripts := {script(ch) for ch in w})
             and scripts & {"CYRILLIC", "GREEK"}]
    foreign = list(dict.fromkeys(ch for w in mixed for ch in w if script(ch) in ("CYRILLIC", "GREEK")))
    if not foreign:
        return None
    kinds = " and ".join(sorted({script(ch).title() for ch in foreign}))
    shown = ", ".join(_code(ch) for ch in foreign[:3]) + (" …" if len(foreign) > 3 else "")
    twin = "".join(_LOOKALIKES.get(ch, ch) for ch in value)
    looks = f"; it reads as {twin!r}" if all(ch in _LOOKALIKES for ch in foreign) else ""
    return f"mixes Latin with {kinds} letters ({shown}){looks}"


def lookalike_twin(value: str) -> str | None:
    """The Latin name a name written wholly in Cyrillic or Greek letters reads as (``аре`` → ``ape``),
    when every letter of it has a Latin twin in ``_LOOKALIKES``; else None (a Latin name, a name with
    a letter unlike any Latin one, a name without letters)."""
    letters = [ch for ch in value if ch.isalpha()]
    if not letters or not all(ch in _LOOKALIKES for ch in letters):
        return None
    return "".join(_LOOKALIKES.get(ch, ch) for ch in value)


def lookalike_notes(names: Iterable[str], what: str = "model") -> list[str]:
    """One sentence per name written wholly in Cyrillic or Greek letters that reads as another of
    ``names`` (``аре`` beside ``ape``), naming its code points: each word is of one script, so the
    mixed-script rule keeps it, yet a reader sees two models of one name. A note, not a refusal: such
    a name may be meant (a model named in Cyrillic), and the other name may arrive later."""
    known = set(names)
    out = []
    for name in sorted(known):
        twin = lookalike_twin(name)
        if twin is not None and twin != name and twin in known:
            foreign = list(dict.fromkeys(ch for ch in name if ch.isalpha()))
            shown = ", ".join(_code(ch) for ch in foreign[:3]) + (" …" if len(foreign) > 3 else "")
            out.append(f"The {what} {name!r} is written in look-alike letters ({shown}) and reads as the "
                       f"{what} {twin!r}; they are counted as two {what}s (rename one if they are the same).")
    return out


def name_problem(value: str) -> str | None:
    """Everything that makes a name render blank or as a look-alike, in words, or None: refused
    characters, combining marks only, Latin mixed with Cyrillic or Greek. A name of printable ASCII only
    (letters, digits, punctuation, the plain space) has none of these: answered without the scan of
    its characters (the shipped arena counts' 131 names cost 0.1 s of every new store's first open)."""
    if value.isascii() and value.isprintable():
        return None
    bad = bad_characters(value)
    return f"contains {bad}" if bad else marks_only(value) or mixed_script(value)


def check_dataset_name(name: object) -> str:
    """A dataset name as stored (NFC), or LensError: empty, outer spaces, a refused character, too long."""
    if not isinstance(name, str) or not name.strip():
        raise LensError("A dataset needs a non-empty name.")
    name = unicodedata.normalize("NFC", name)
    bad = name_problem(name)
    if bad:
        fix = "letters of one script in each word" if bad.startswith("mixes") else "visible characters only"
        raise LensError(f"The dataset name {name[:80]!r} {bad}; use {fix}.")
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
