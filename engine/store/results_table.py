"""Rows of the results cache table (``results_cache``): Parquet bytes of a computed frame under
(dataset, dataset version, kind, parameter hash). The keys and the encoding are decided by
``engine.experiments.results_cache``; this module only reads and writes the rows."""

from __future__ import annotations

from engine.store.connection import Store
from engine.store.sql import scalar


def read_result(store: Store, dataset: str, version: int, kind: str, param_hash: str) -> bytes | None:
    """The stored frame bytes under this key, or None when nothing is stored."""
    row = store.cursor().execute(
        "SELECT frame FROM results_cache WHERE dataset = ? AND version = ? AND kind = ? AND param_hash = ?",
        [dataset, version, kind, param_hash],
    ).fetchone()
    return None if row is None else bytes(row[0])


def has_result(store: Store, dataset: str, version: int, kind: str, param_hash: str) -> bool:
    """Whether a row is stored under this key (its bytes not read)."""
    row = store.cursor().execute(
        "SELECT 1 FROM results_cache WHERE dataset = ? AND version = ? AND kind = ? AND param_hash = ?",
        [dataset, version, kind, param_hash],
    ).fetchone()
    return row is not None


def write_latest_result(store: Store, dataset: str, version: int, kind: str, param_hash: str,
                        params_json: str, frame: bytes, seconds: float | None) -> bool:
    """Store one result row computed from the dataset at ``version``, and drop the dataset's rows of ``kind``
    at any other version, in one transaction, if ``version`` is still the dataset's (a write that landed
    meanwhile, or the dataset deleted: nothing is written). Returns whether the row was stored."""
    with store.transaction() as tx:
        now = tx.execute("SELECT version FROM datasets WHERE name = ?", [dataset]).fetchone()
        if now is None or int(now[0]) != int(version):
            return False
        tx.execute("DELETE FROM results_cache WHERE dataset = ? AND kind = ? AND version <> ?",
                   [dataset, kind, version])
        tx.execute(
            "INSERT OR REPLACE INTO results_cache (dataset, version, kind, param_hash, params, frame, "
            "seconds) VALUES (?, ?, ?, ?, ?, ?, ?)",
            [dataset, version, kind, param_hash, params_json, frame, seconds],
        )
    return True


def write_result(store: Store, dataset: str, version: int, kind: str, param_hash: str, params_json: str,
                 frame: bytes, seconds: float | None) -> None:
    """Store (or replace) one result row, committed at once."""
    with store.transaction() as tx:
        tx.execute(
            "INSERT OR REPLACE INTO results_cache (dataset, version, kind, param_hash, params, frame, "
            "seconds) VALUES (?, ?, ?, ?, ?, ?, ?)",
            [dataset, version, kind, param_hash, params_json, frame, seconds],
        )


def delete_results(store: Store, dataset: str | None = None) -> int:
    """Delete the stored results of one dataset (or all, for None) in one transaction; how many went."""
    with store.transaction() as tx:
        where, args = ("WHERE dataset = ?", [dataset]) if dataset else ("", [])
        n = int(scalar(tx, f"SELECT count(*) FROM results_cache {where}", args))
        tx.execute(f"DELETE FROM results_cache {where}", args)
    return n
