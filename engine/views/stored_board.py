"""The Leaderboard's first boards kept in the store, per dataset version: computed once, read back in ms.

A first open of the Leaderboard at a million votes reads the votes, the graphs that can hold a triad and the
reference, and ranks them (~0.6 s of CPU every time a server starts), then bootstraps the board (seconds).
Both boards (the point board and the board with its intervals, ``engine.views.leaderboard_first.first_board``)
are a few kB: kept in the results cache table (``engine.store.results_table``; rows under dataset, dataset
version, kind ``KIND``, parameter hash), a later server's first open reads them instead.

**Never stale.** The row's version is the dataset's store-wide version the board was computed from, and every
write to a dataset moves it (``engine.store.writes``: import, replace, delete, rename, judge run, map,
attach), so a board is only ever read for the contents it was computed from; rows of older versions are
dropped when a newer board of the dataset is stored. The parameters hashed into the key are the choice (judge,
category, ranker, bootstrap, seed), the inputs outside the store (the reference file and the dataset's mapping
files: ``engine.experiments.protocol_inputs.input_fingerprint``), ``FORMAT``, and a digest of the code that
computes the board (``code_digest``: every engine module and the app's files that pass its inputs): a board
stored by another version of the code is a different key, never read, whatever its columns. A store opened
read-only is read and never written.

**Bit for bit or not at all.** The table goes as Parquet with pandas' metadata (dtypes, index); the params,
distances and note as JSON in the file's metadata. ``encode`` decodes what it made and returns None unless
every column, dtype, index and value (NaN where NaN) and every params / distances value of the same Python
type comes back: a board that JSON or Parquet would change (a tuple, a NumPy scalar, an object column) is not
stored, and is computed each time as before. ``decode`` returns None for anything it cannot read (a damaged
row, another format): the caller computes.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from engine.store.connection import Store
    from engine.views.appstate import AppBoard

KIND = "app_board"
"""The results cache kind of a stored Leaderboard board."""

FORMAT = 1
"""Bump when the encoding or the meaning of a stored board changes (it is in every key)."""

_META = b"lens_board"
ENGINE = Path(__file__).resolve().parents[1]

APP_GLUE_FILES = tuple(str(ENGINE.parent / "app_pages" / name) for name in ("_lbopen_cache.py", "_lens.py"))
"""The app's files that pass a kept board its inputs (its caches of the votes, graphs and reference): their
bytes enter every board's key with the engine's (``code_digest``), whoever keeps the board (the app's
bootstrap job, or the import: ``engine.views.import_board``). Named by path, never imported: the engine does
not import the app (a copy of the engine without the app hashes them as empty, a key no app reads)."""


@lru_cache(maxsize=8)
def code_digest(extra: tuple[str, ...] = ()) -> str:
    """sha256 over every engine module's path and bytes, then the ``extra`` files' (the app's glue that passes
    the board its inputs): any change to that code is another key. Once per process (~7 ms: 2 MB hashed; the
    import-tracing ``protocol_inputs.code_digest`` costs ~1 s)."""
    h = hashlib.sha256()
    for path in sorted(ENGINE.rglob("*.py")):
        h.update(str(path.relative_to(ENGINE)).encode())
        h.update(path.read_bytes())
    for name in extra:
        path = Path(name)
        h.update(path.name.encode())
        h.update(path.read_bytes() if path.is_file() else b"")
    return h.hexdigest()


def board_params(dataset: str, judge: str | None, category: str | None, ranker: str, bootstrap: int,
                 seed: int, code: str) -> dict[str, Any]:
    """What a stored board is keyed by besides its dataset version (see the module's docstring)."""
    from engine.experiments.protocol_inputs import input_fingerprint

    return {"judge": judge, "category": category, "ranker": ranker, "bootstrap": int(bootstrap),
            "seed": int(seed), "format": FORMAT, "code": code, **input_fingerprint(dataset, "arena")}


def _same(a: Any, b: Any) -> bool:
    """``a`` and ``b`` equal with the same Python types all the way down (NaN equal to NaN)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    return bool(a == b)


def same_board(a: AppBoard, b: AppBoard) -> bool:
    """Whether two boards are the same bit for bit: the table (every column, dtype, index, value), the params
    and distances (values and Python types) and the note."""
    import pandas as pd

    try:
        pd.testing.assert_frame_equal(a.table, b.table, check_exact=True, check_dtype=True,
                                      check_index_type=True, check_column_type=True, check_names=True)
    except AssertionError:
        return False
    return (_same(a.params, b.params) and _same(a.distances, b.distances)
            and a.reference_note == b.reference_note)


def encode(board: AppBoard) -> bytes | None:
    """The board as Parquet bytes (its params, distances and note in the file's metadata), or None when the
    bytes would not decode to the very same board (``same_board``)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        meta = json.dumps({"format": FORMAT, "params": board.params, "distances": board.distances,
                           "reference_note": board.reference_note}, ensure_ascii=False)
        table = pa.Table.from_pandas(board.table, preserve_index=None)
        table = table.replace_schema_metadata({**(table.schema.metadata or {}), _META: meta.encode()})
        buf = io.BytesIO()
        pq.write_table(table, buf)
    except (TypeError, ValueError, pa.ArrowException):  # a value JSON or Arrow cannot hold
        return None
    data = buf.getvalue()
    back = decode(data)
    return data if back is not None and same_board(board, back) else None


def decode(data: bytes) -> AppBoard | None:
    """The board ``encode`` made, or None (not a board of this ``FORMAT``, or unreadable)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from engine.views.appstate import AppBoard

    try:
        table = pq.ParquetFile(io.BytesIO(data)).read()  # not read_table: it loads pyarrow.dataset (~0.1 s)
        meta = json.loads((table.schema.metadata or {})[_META])
        if meta.get("format") != FORMAT:
            return None
        return AppBoard(table.to_pandas(), meta["params"], meta["distances"], meta["reference_note"])
    except (KeyError, TypeError, ValueError, pa.ArrowException):
        return None


def read_board(store: Store, dataset: str, version: int, params: dict[str, Any]) -> AppBoard | None:
    """The board stored for this dataset version and key, or None."""
    from engine.experiments.results_cache import param_hash
    from engine.store.results_table import read_result

    data = read_result(store, dataset, version, KIND, param_hash(params))
    return None if data is None else decode(data)


def has_board(store: Store, dataset: str, version: int, params: dict[str, Any]) -> bool:
    """Whether a row is stored under this dataset version and key (without decoding it)."""
    from engine.experiments.results_cache import param_hash
    from engine.store.results_table import has_result

    return has_result(store, dataset, version, KIND, param_hash(params))


def store_board(store: Store, dataset: str, version: int, params: dict[str, Any], board: AppBoard,
                seconds: float | None = None) -> bool:
    """Keep ``board`` (computed from the dataset at ``version``) for the next read; the dataset's rows of
    this kind at other versions go. Nothing is written to a read-only store, for a dataset that has moved on
    (or gone) since ``version``, or for a board ``encode`` cannot give back exactly. Returns whether it was
    stored."""
    from engine.experiments.results_cache import canonical_params, param_hash
    from engine.store.results_table import write_latest_result

    if store.read_only:
        return False
    data = encode(board)
    if data is None:
        return False
    return write_latest_result(store, dataset, version, KIND, param_hash(params), canonical_params(params),
                               data, seconds)
