"""Counting an answer's four style features from its text: tokens, markdown headers, list items, bold.

Tokens: the number of tokens of tiktoken's ``o200k_base`` encoding, special-token text read as plain
text (``encode_ordinary``). tiktoken installs from PyPI, but its wheel has no encoding file: it fetches
``o200k_base.tiktoken`` from the network on first use, which is not reached here at run time. The same
ranks ship inside the PyPI package ``quicktok-v1`` (its ``data/o200k.vocab``); ``o200k_encoding``
rewrites them in tiktoken's text form, checks the result's sha256 against the hash tiktoken itself
demands for ``o200k_base`` (``O200K_SHA256``), and hands it to tiktoken through its file cache, so the
encoding is tiktoken's own, byte for byte, with no download.

Markdown (the rule LMArena's battle data uses for its ``conv_metadata`` counts, written anew):

1. Code first: each fenced block, three backticks then text without a backtick then three backticks,
   has its text removed from the answer (every place that text occurs; the fences stay).
2. Headers: lines that start with 1 to 6 ``#`` followed by a whitespace character (no indent allowed;
   seven ``#`` is no header).
3. Lists: ordered items, a line of optional whitespace, digits, a dot and a whitespace character;
   unordered items, optional whitespace then ``-``, ``*`` or ``+`` and a whitespace character. The two
   kinds are counted separately and added (the leading whitespace may run over blank lines).
4. Bold: ``**text**`` and ``__text__`` with non-empty text holding no newline and no ``*`` (``_``
   respectively), counted left to right without overlap, the two kinds added.

``RULE`` names this counting; cached counts made under another rule are not reused.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import importlib.util
import os
import re
import struct
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from engine.errors import LensError

RULE = "o200k_base/markdown-1"
"""The tokenizer and markdown rule the counts are made with (a key of the store's cache)."""

O200K_SHA256 = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"
"""sha256 of the ``o200k_base.tiktoken`` file, the hash tiktoken checks it against."""
O200K_URL = "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"
"""Where tiktoken would fetch the file from: its file cache keys the file by this address."""
VOCAB_PACKAGE = "quicktok"
"""The Python package (PyPI ``quicktok-v1``) whose data folder holds the o200k_base ranks."""

_CODE_BLOCK = re.compile(r"```([^`]*)```")
_HEADER = re.compile(r"^#{1,6}\s", re.MULTILINE)
_ORDERED = re.compile(r"^\s*\d+\.\s", re.MULTILINE)
_UNORDERED = re.compile(r"^\s*[-*+]\s", re.MULTILINE)
_BOLD_STARS = re.compile(r"\*\*[^*\n]+\*\*")
_BOLD_UNDERSCORES = re.compile(r"__[^_\n]+__")


def without_code(text: str) -> str:
    """The text with the contents of its fenced code blocks removed (rule 1)."""
    for block in _CODE_BLOCK.findall(text):
        if block:
            text = text.replace(block, "")
    return text


def markdown_counts(text: str) -> tuple[int, int, int]:
    """(headers, list items, bold spans) of an answer, by rules 1-4 of the module docstring."""
    text = without_code(text)
    headers = len(_HEADER.findall(text))
    lists = len(_ORDERED.findall(text)) + len(_UNORDERED.findall(text))
    bold = len(_BOLD_STARS.findall(text)) + len(_BOLD_UNDERSCORES.findall(text))
    return headers, lists, bold


def count_answers(texts: Sequence[str | None]) -> np.ndarray:
    """(n, 4) float64 counts (tokens, headers, lists, bold) of each text; NaN for a missing text."""
    out = np.full((len(texts), 4), np.nan)
    present = [i for i, t in enumerate(texts) if isinstance(t, str)]
    if not present:
        return out
    enc = o200k_encoding()
    chunk = 4096
    for start in range(0, len(present), chunk):
        idx = present[start:start + chunk]
        batch = [str(texts[i]) for i in idx]
        tokens = enc.encode_ordinary_batch(batch, num_threads=max(1, min(4, os.cpu_count() or 1)))
        out[idx, 0] = [len(t) for t in tokens]
        out[idx, 1:] = [markdown_counts(t) for t in batch]
    return out


def _vocab_file() -> Path:
    spec = importlib.util.find_spec(VOCAB_PACKAGE)
    folders = list(spec.submodule_search_locations or []) if spec is not None else []
    for folder in folders:
        path = Path(folder) / "data" / "o200k.vocab"
        if path.is_file():
            return path
    raise LensError("Counting answer tokens needs the o200k_base ranks of the package quicktok-v1, which is "
                    "not installed (pip install -r requirements.txt).")


def o200k_tiktoken_text(vocab: bytes) -> bytes:
    """The ranks of a quicktok ``o200k.vocab`` file (a little-endian u32 count, then per token a u16
    length, its bytes and a u32 rank) in tiktoken's file form: one ``base64(token) rank`` line per token,
    by rank."""
    (count,) = struct.unpack_from("<I", vocab, 0)
    pos, ranks = 4, []
    for _ in range(count):
        (length,) = struct.unpack_from("<H", vocab, pos)
        token = vocab[pos + 2:pos + 2 + length]
        (rank,) = struct.unpack_from("<I", vocab, pos + 2 + length)
        pos += 6 + length
        ranks.append((rank, token))
    ranks.sort()
    return b"".join(base64.b64encode(t) + b" " + str(r).encode() + b"\n" for r, t in ranks)


_LOADING = threading.Lock()
"""One load at a time: the load points tiktoken's file cache at a folder of its own for a moment."""


def o200k_encoding():
    """tiktoken's ``o200k_base`` encoding, loaded without the network (module docstring), once per process;
    LensError when tiktoken or the ranks are missing, or the ranks are not o200k_base's."""
    with _LOADING:
        return _load_o200k()


@functools.cache
def _load_o200k():
    try:
        import tiktoken
    except ImportError:
        raise LensError("Counting answer tokens needs tiktoken, which is not installed "
                        "(pip install -r requirements.txt).") from None
    text = o200k_tiktoken_text(_vocab_file().read_bytes())
    if hashlib.sha256(text).hexdigest() != O200K_SHA256:
        raise LensError(f"The o200k_base ranks shipped in {VOCAB_PACKAGE} are not tiktoken's (their sha256 "
                        "differs); answer tokens cannot be counted.")
    folder = tempfile.mkdtemp(prefix="lens-tiktoken-", dir=os.environ.get("LENS_TMPDIR") or None)
    cached = Path(folder) / hashlib.sha1(O200K_URL.encode()).hexdigest()
    cached.write_bytes(text)
    saved = os.environ.get("TIKTOKEN_CACHE_DIR")
    os.environ["TIKTOKEN_CACHE_DIR"] = folder
    try:
        return tiktoken.get_encoding("o200k_base")
    finally:
        if saved is None:
            os.environ.pop("TIKTOKEN_CACHE_DIR", None)
        else:
            os.environ["TIKTOKEN_CACHE_DIR"] = saved
        cached.unlink(missing_ok=True)
        os.rmdir(folder)
