"""What a protocol table or a curve depends on besides the verdicts: reference ratings and files.

Two jobs, both so that a repeated request is instant and a changed input is never served stale:

- ``reference_ratings``: the per-category (or overall) reference of a dataset, memoised on the
  signatures (path, size, mtime) of the reference snapshot and the dataset's mapping files, so a
  run over many judges and categories parses each file once.
- ``input_fingerprint``: the results-cache key part for those inputs — content hashes of the
  reference file and the mapping files, a hash of the engine code that computes the results, and
  ``RESULTS_FORMAT``. The dataset version (verdicts, synthetic truth) is keyed by the cache itself.

The files are found through ``engine.reference`` (``DEFAULT_REFERENCE``, ``MAPPING_DIR``), read at
call time.
"""

from __future__ import annotations

import hashlib
from functools import lru_cache
from pathlib import Path

import pandas as pd

from .errors import LensError

RESULTS_FORMAT = 2
"""Bump when the meaning or columns of a cached protocol / curve frame change."""

ENGINE = Path(__file__).resolve().parent
CODE_FILES: tuple[str, ...] = (
    "resampling.py", "curves.py", "truncation.py", "cycles.py", "graphs.py", "distances.py",
    "rankers/bt.py", "synthetic.py", "protocol_inputs.py",
)
"""Engine modules whose code decides a cached result (their hash is part of the key)."""


def _signature(path: Path) -> tuple[str, int, int]:
    st = path.stat()
    return str(path.resolve()), st.st_size, st.st_mtime_ns


@lru_cache(maxsize=256)
def _digest(path: str, size: int, mtime_ns: int) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def file_digest(path: str | Path) -> str:
    """sha256 of a file's bytes, memoised on (path, size, mtime); '' when the file does not exist."""
    p = Path(path)
    if not p.exists():
        return ""
    return _digest(*_signature(p))


def reference_path(spec: str) -> Path | None:
    """The file behind a reference spec: the shipped snapshot for 'arena', the file itself, or None
    ('truth' lives in the store)."""
    from . import reference

    if spec == "truth":
        return None
    if spec == "arena":
        return Path(reference.DEFAULT_REFERENCE)
    p = Path(spec)
    if not p.exists():
        raise LensError(f"The reference {spec!r} is neither 'arena', 'truth' nor an existing file.")
    return p


def mapping_paths(dataset: str) -> list[Path]:
    """The dataset's model-name and category mapping files (existing or not)."""
    from . import reference

    paths = [reference.mapping_path(dataset, kind) for kind in ("models", "categories")]
    return [p for p in paths if p is not None]


def code_digest() -> str:
    """sha256 over the engine modules that compute protocol and curve results."""
    h = hashlib.sha256()
    for name in CODE_FILES:
        h.update(name.encode())
        h.update(file_digest(ENGINE / name).encode())
    return h.hexdigest()


def input_fingerprint(dataset: str, spec: str) -> dict[str, str | int]:
    """The cache-key part for everything outside the dataset: reference file, mappings, code, format."""
    ref = reference_path(spec)
    out: dict[str, str | int] = {"results_format": RESULTS_FORMAT, "code": code_digest()}
    if ref is not None:
        out["reference_file"] = file_digest(ref)
        for p in mapping_paths(dataset):
            out[p.name] = file_digest(p)
    return out


@lru_cache(maxsize=512)
def _ratings(dataset: str, category: str | None, path: str | None, signature: tuple) -> pd.Series:
    from .reference import reference_for_dataset

    return reference_for_dataset(dataset, category, path)


@lru_cache(maxsize=512)
def _arena_category(dataset: str, category: str, path: str | None, signature: tuple) -> str:
    from .reference import arena_category

    return arena_category(dataset, category, path)


def _files_signature(dataset: str, spec: str) -> tuple:
    files = [reference_path(spec), *mapping_paths(dataset)]
    return tuple(_signature(p) if p is not None and p.exists() else (str(p), -1, -1) for p in files)


def reference_ratings(store, dataset: str, spec: str, categories: list[str], overall: bool):
    """A rating Series (overall) or a mapping category → Series (per-category arena references).

    ``spec``: 'arena' (the shipped LMArena snapshot, categories mapped by
    ``data/mappings/<dataset>.categories.csv``), 'truth' (a synthetic dataset's ground truth), or a
    reference file (JSON per category, or a CSV with one overall ranking). Memoised on the files'
    signatures; every call returns fresh copies.
    """
    if spec == "truth":
        from .synthetic import synthetic_truth

        return synthetic_truth(store, dataset)
    path = None if spec == "arena" else str(reference_path(spec))
    sig = _files_signature(dataset, spec)
    if overall or (path is not None and not path.lower().endswith(".json")):
        return _ratings(dataset, None, path, sig).copy()
    return {c: _ratings(dataset, _arena_category(dataset, c, path, sig), path, sig).copy() for c in categories}


__all__ = ["RESULTS_FORMAT", "code_digest", "file_digest", "input_fingerprint", "reference_ratings"]
