"""DuckDB cache of protocol and curve results, keyed by dataset name + version + parameter hash.

Protocol tables and sensitivity curves take seconds; the app and the CLI ask for the same ones
again and again. A result is stored as Parquet bytes under (dataset, dataset version, kind,
sha256 of the canonical parameter JSON); importing new verdicts bumps the dataset version, so a
stale result can never be served. Every key also carries the hash of the engine code that
computes the result (``engine.experiments.protocol_inputs.code_digest`` of the kind's family: 'diagnose…'
kinds → the diagnostics modules and what they import, every other kind → the protocol / curve
modules and what they import), so a result cached by an older engine is never served. Inputs
outside the store (reference snapshot, mapping files, results format) enter the parameters
through ``engine.experiments.protocol_inputs.input_fingerprint``. Table:
``engine/store/migrations/021_results_cache.sql``.
"""

from __future__ import annotations

import hashlib
import io
import json
import time
from collections.abc import Callable
from typing import Any

import pandas as pd

from engine.store.connection import Store
from engine.store.results_table import delete_results, read_result, write_result


def canonical_params(params: dict[str, Any]) -> str:
    """Sorted-key JSON of the parameters (tuples as lists, numpy scalars as Python numbers)."""

    def norm(v: Any) -> Any:
        if isinstance(v, dict):
            return {str(k): norm(x) for k, x in sorted(v.items(), key=lambda kv: str(kv[0]))}
        if isinstance(v, (list, tuple)):
            return [norm(x) for x in v]
        if hasattr(v, "item") and callable(v.item):
            return v.item()
        return v

    return json.dumps(norm(params), sort_keys=True, separators=(",", ":"), default=str)


def param_hash(params: dict[str, Any]) -> str:
    """sha256 hex of the canonical parameter JSON: the cache key part that names what was asked."""
    return hashlib.sha256(canonical_params(params).encode("utf-8")).hexdigest()


def _to_bytes(frame: pd.DataFrame) -> bytes:
    buf = io.BytesIO()
    frame.reset_index(drop=True).to_parquet(buf, index=False)
    return buf.getvalue()


def keyed(kind: str, params: dict[str, Any]) -> dict[str, Any]:
    """The parameters as stored: ``params`` plus the digest of the engine code behind ``kind``."""
    from engine.experiments.protocol_inputs import code_digest, family_of

    return {**params, "_engine_code": code_digest(family_of(kind))}


def get(store: Store, dataset: str, kind: str, params: dict[str, Any], *,
        version: int | None = None) -> pd.DataFrame | None:
    """The cached frame for this dataset version (the current one unless given), parameters and
    engine code, or None."""
    version = store.dataset_version(dataset) if version is None else version
    frame = read_result(store, dataset, version, kind, param_hash(keyed(kind, params)))
    return None if frame is None else pd.read_parquet(io.BytesIO(frame))


def put(store: Store, dataset: str, kind: str, params: dict[str, Any], frame: pd.DataFrame,
        seconds: float | None = None, *, version: int | None = None) -> None:
    """Store (or replace) the frame under the dataset version it was computed from (the current
    one unless given), parameters and engine code."""
    version = store.dataset_version(dataset) if version is None else version
    params = keyed(kind, params)
    write_result(
        store, dataset, version, kind, param_hash(params), canonical_params(params), _to_bytes(frame), seconds
    )


def compute_and_put(store: Store, dataset: str, kind: str, params: dict[str, Any],
                    compute: Callable[[], pd.DataFrame], *, version: int | None = None) -> pd.DataFrame:
    """``compute()``, stored (with how long it took) for the next identical request, under the
    version read *before* computing: a write that lands while it computes (a judge run, an import
    from another process) gives a new version, which this frame never answers for."""
    version = store.dataset_version(dataset) if version is None else version
    t0 = time.perf_counter()
    frame = compute()
    put(store, dataset, kind, params, frame, time.perf_counter() - t0, version=version)
    return frame


def cached(
    store: Store, dataset: str, kind: str, params: dict[str, Any], compute: Callable[[], pd.DataFrame]
) -> tuple[pd.DataFrame, bool]:
    """(frame, hit): the cached result, or ``compute()`` stored for next time (one version read for both)."""
    version = store.dataset_version(dataset)
    hit = get(store, dataset, kind, params, version=version)
    if hit is not None:
        return hit, True
    return compute_and_put(store, dataset, kind, params, compute, version=version), False


def clear(store: Store, dataset: str | None = None) -> int:
    """Drop cached results (of one dataset, or all); returns how many rows went."""
    return delete_results(store, dataset)
