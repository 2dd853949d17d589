"""What a protocol table or a curve depends on besides the verdicts: reference ratings and files.

Two jobs, both so that a repeated request is instant and a changed input is never served stale:

- ``reference_ratings``: the per-category (or overall) reference of a dataset, the reference file
  parsed once per signature (path, size, mtime) of it and the dataset's mapping files, so a run over
  many judges and categories parses each file once; names are placed afresh on each call (shipped
  and stored maps, then by name: ``engine.ranking.reference.map_reference``).
- ``input_fingerprint``: the results-cache key part for those inputs — content hashes of the
  reference file and the mapping files, and ``RESULTS_FORMAT``. The dataset version (verdicts,
  synthetic truth) is keyed by the cache itself.
- ``code_digest(family)``: a hash of the engine files that compute a cached result — the family's
  entry modules and everything they import (``code_files``), for the experiment (protocols,
  curves) and the diagnose caches alike. ``engine.experiments.results_cache`` puts it into every key, so a
  result cached by an older engine is never served after that code changed.

The files are found through ``engine.ranking.reference`` (``DEFAULT_REFERENCE``, ``MAPPING_DIR``), read at
call time.
"""

from __future__ import annotations

import hashlib
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from engine.errors import LensError

if TYPE_CHECKING:
    from engine.store.connection import Store

RESULTS_FORMAT = 3
"""Bump when the meaning or columns of a cached protocol / curve frame change (3: empty cells are
NaN and left out of the macro, ``bt_nonconverged`` / ``n_categories`` columns, Random's pool size,
curve draws min(round(0.8·K), kept))."""

ENGINE = Path(__file__).resolve().parents[1]
ENTRY_FILES: dict[str, tuple[str, ...]] = {
    "experiment": (
        "experiments/protocols.py",
        "experiments/protocol_runs.py",
        "experiments/curves.py",
        "graphs/truncation.py",
        "experiments/protocol_inputs.py",
        "ingest/synthetic.py",
        "ranking/reference.py",
        "cli/experiment.py",
    ),
    "diagnose": ("diagnostics/__init__.py", "cli/diagnose.py"),
}
"""Per cached-result family, the modules that compute it; ``code_files`` adds everything they
import (transitively, lazy imports inside functions included)."""


def _module_file(dotted: str) -> Path | None:
    """engine.a.b → engine/a/b.py or engine/a/b/__init__.py (None outside the engine package)."""
    parts = dotted.split(".")
    if parts[0] != "engine":
        return None
    base = ENGINE.joinpath(*parts[1:])
    for cand in (base.with_suffix(".py") if len(parts) > 1 else None, base / "__init__.py"):
        if cand is not None and cand.is_file():
            return cand
    return None


def _dotted(path: Path) -> str:
    rel = path.relative_to(ENGINE.parent).with_suffix("")
    parts = list(rel.parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@lru_cache(maxsize=1024)
def _deps(path: str, size: int, mtime_ns: int) -> tuple[str, ...]:
    """Engine files one file makes Python run: the modules it imports (anywhere in it, lazy imports
    inside functions included) and its parent packages' ``__init__``. Memoised on its signature."""
    import ast

    p = Path(path)
    me = _dotted(p)
    package = me if p.name == "__init__.py" else me.rpartition(".")[0]
    parts = me.split(".")
    names = [".".join(parts[:i]) for i in range(1, len(parts))]  # parent packages
    for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            names.append(mod)
            names += [f"{mod}.{a.name}" for a in node.names]  # `from . import bt`: a submodule
    files = {_module_file(x) for x in names} - {None, p}
    return tuple(sorted(str(f) for f in files))


def _stat(path: Path) -> tuple[str, int, int]:
    st = path.stat()
    return str(path), st.st_size, st.st_mtime_ns


def _code_signatures(family: str) -> dict[str, tuple[int, int]]:
    """Every file of ``code_files(family)`` (absolute path) with its size and mtime, each stat'ed once:
    the walk reads a file's imports and ``code_digest`` its bytes on that signature (both memoised)."""
    if family not in ENTRY_FILES:
        raise LensError(f"Unknown cached-result family {family!r}; choose {' or '.join(ENTRY_FILES)}.")
    todo = [str(ENGINE / f) for f in ENTRY_FILES[family]]
    seen: dict[str, tuple[int, int]] = {}
    while todo:
        f = todo.pop()
        if f in seen:
            continue
        path, size, mtime_ns = _stat(Path(f))
        seen[f] = (size, mtime_ns)
        todo += [d for d in _deps(path, size, mtime_ns) if d not in seen]
    return seen


def code_files(family: str) -> tuple[str, ...]:
    """Engine files (relative paths, sorted) whose code decides a cached result of ``family``
    ('experiment' or 'diagnose'): its entry modules, every engine module they import, transitively,
    and the package ``__init__`` files Python runs on the way."""
    return tuple(sorted(str(Path(f).relative_to(ENGINE)) for f in _code_signatures(family)))


CODE_FILES: tuple[str, ...] = ENTRY_FILES["experiment"]
"""The experiment family's entry modules (kept for callers that list them; see ``code_files``)."""


def _signature(path: Path) -> tuple[str, int, int]:
    st = path.stat()
    return str(path.resolve()), st.st_size, st.st_mtime_ns


@lru_cache(maxsize=512)
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
    from engine.ranking import reference

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
    from engine.ranking import reference

    paths = [reference.mapping_path(dataset, kind) for kind in ("models", "categories")]
    return [p for p in paths if p is not None]


def code_digest(family: str = "experiment") -> str:
    """sha256 over the engine files that compute a cached result of ``family`` (``code_files``):
    a result cached by another version of that code is never served."""
    signatures = _code_signatures(family)
    h = hashlib.sha256()
    for name, path in sorted((str(Path(f).relative_to(ENGINE)), f) for f in signatures):
        h.update(name.encode())
        # the file's bytes on the signature the walk took (was a second stat and a resolve per file
        # through ``file_digest``: 5 of the 7 ms a results-cache key took; ENGINE is resolved already)
        h.update(_digest(path, *signatures[path]).encode())
    return h.hexdigest()


def family_of(kind: str) -> str:
    """The code family of a results-cache kind: 'diagnose…' → diagnose, anything else → experiment."""
    return "diagnose" if kind.startswith("diagnose") else "experiment"


def input_fingerprint(dataset: str, spec: str) -> dict[str, str | int]:
    """The cache-key part for the inputs outside the store: reference file, mappings, results format.
    (The engine code enters every results-cache key in ``engine.experiments.results_cache`` itself.)"""
    ref = reference_path(spec)
    out: dict[str, str | int] = {"results_format": RESULTS_FORMAT}
    if ref is not None:
        out["reference_file"] = file_digest(ref)
        for p in mapping_paths(dataset):
            out[p.name] = file_digest(p)
    return out


@lru_cache(maxsize=64)
def _loaded(category: str | None, path: str | None, signature: tuple) -> pd.Series:
    from engine.ranking.reference import load_reference

    return load_reference(path, category)


@lru_cache(maxsize=512)
def _arena_category(dataset: str, category: str, path: str | None, signature: tuple) -> str:
    from engine.ranking.reference import reference_category

    return reference_category(dataset, category, path)[0]


def _files_signature(dataset: str, spec: str) -> tuple:
    files = [reference_path(spec), *mapping_paths(dataset)]
    return tuple(_signature(p) if p is not None and p.exists() else (str(p), -1, -1) for p in files)


def reference_ratings(store: Store, dataset: str, spec: str, categories: list[str], overall: bool):
    """A rating Series (overall) or a mapping category → Series (per-category arena references).

    ``spec``: 'arena' (the shipped LMArena snapshot, categories mapped by
    ``data/mappings/<dataset>.categories.csv``), 'truth' (a synthetic dataset's ground truth), or a
    reference file (JSON per category, or a CSV with one overall ranking). The files are parsed once
    per signature; every call returns fresh series. A dataset category with no category mapping uses
    the reference category of its name, else ``full`` (``reference_category``).
    """
    if spec == "truth":
        from engine.ingest.synthetic import synthetic_truth

        return synthetic_truth(store, dataset)
    from engine.ranking.reference import dataset_model_names, map_reference, model_map

    path = None if spec == "arena" else str(reference_path(spec))
    sig = _files_signature(dataset, spec)
    mapping = model_map(store, dataset)  # the stored map and the shipped one, read afresh: cheap
    models = dataset_model_names(store, dataset) if store.has_dataset(dataset) else None

    def rated(category: str | None) -> pd.Series:
        return map_reference(_loaded(category, path, sig).copy(), mapping, models)

    if overall or (path is not None and not path.lower().endswith(".json")):
        return rated(None)
    return {c: rated(_arena_category(dataset, c, path, sig)) for c in categories}


__all__ = [
    "ENTRY_FILES",
    "RESULTS_FORMAT",
    "code_digest",
    "code_files",
    "family_of",
    "file_digest",
    "input_fingerprint",
    "reference_ratings",
]
