"""Filing call-cache rows kept outside the store into ``judge_calls``: one transaction per batch.

Two sources use it: the Parquet shards several judge processes write beside the store instead of
taking the store's one write lock for every group of calls (``engine.judging.shards``), and rows of
(request, response) that another engine produced (``calls --import``). Both hand over complete
``judge_calls`` rows. A key already stored is ignored, never doubled, and a key met twice in one batch
is filed once; in the same transaction every lease on a filed key is dropped (the call is now in the
cache, so nobody needs to wait for it or may pay for it again). Only SQL lives here: which files, in
which order, and what a row must hold are decided by the callers.

``judge_calls`` has no primary key (migration 079: its ART index held every key in the judge's memory),
so ``insert_new_calls`` is the one way a row enters it, here and in ``engine.judging.call_rows``: inside
the caller's transaction it inserts the distinct keys of a relation that the table does not hold. The
store's writer is one process (DuckDB's file lock, ``engine.store.file_lock``), and the store's writes
go through one connection, so the check and the insert see every committed row.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from engine.store.connection import Store

SHARD_COLUMNS: tuple[str, ...] = (
    "call_key", "backend", "model", "template_id", "template_version", "messages", "decoding", "text",
    "top_logprobs", "prompt_tokens", "completion_tokens", "latency_s", "attempts", "run_id", "server",
)
"""The ``judge_calls`` columns a filed row carries (``created_at`` is the time of filing)."""

_COLS = ", ".join(SHARD_COLUMNS)


def insert_new_calls(cur, source: str, columns: Sequence[str], params: Sequence | None = None) -> int:
    """Insert into ``judge_calls`` the ``columns`` of relation ``source``'s rows whose key it does not
    hold yet, one row per distinct key (any one of a key's rows: they answer one request); how many
    were inserted. Runs inside the caller's transaction (module docstring). An anti-join: DuckDB builds its
    hash table on the few new rows and streams the stored keys past it (``NOT IN`` would build it on
    every stored key: 120 ms and a table of 10^6 keys per write instead of 21 ms, measured in the notes)."""
    cols = ", ".join(columns)
    row = cur.execute(
        f"INSERT INTO judge_calls ({cols}) SELECT DISTINCT ON (call_key) {cols} FROM {source}"
        " ANTI JOIN judge_calls USING (call_key)", params
    ).fetchone()
    return int(row[0]) if row else 0


def _file(cur, source: str, params: Sequence | None = None, keys: str | None = None) -> int:
    """Insert the distinct new keys of relation ``source`` and drop their leases (the keys of relation
    ``keys``, default ``source``'s own); rows inserted."""
    n = insert_new_calls(cur, source, SHARD_COLUMNS, params)
    cur.execute(f"DELETE FROM judge_call_leases WHERE call_key IN (SELECT call_key FROM {keys or source})",
                None if keys else params)
    return n


def file_parquet_calls(store: Store, files: Sequence[str], keys) -> int:
    """File the rows of the Parquet ``files`` (SHARD_COLUMNS) into ``judge_calls`` in one transaction;
    returns how many calls were new. ``keys``: every call key the files hold (strings, or an Arrow string
    column), known to the caller before the store's lock is taken (a writer's own index of its files, or
    their key column read beforehand), so
    the files are read once under the lock, where they lie (no copy into a temporary table first: a fifth
    less CPU under the lock), and the leases are dropped by those keys (reading the files' key column again
    for them took a second pass over every file under the lock)."""
    if not files:
        return 0
    import pyarrow as pa

    filed = pa.table({"call_key": keys if isinstance(keys, pa.ChunkedArray | pa.Array) else
                      pa.array([str(k) for k in keys], pa.string())})
    with store.transaction() as cur:
        cur.register("_filed_keys", filed)
        try:
            n = _file(cur, "read_parquet(?, union_by_name = false)", [[str(f) for f in files]], "_filed_keys")
        finally:
            cur.unregister("_filed_keys")
    return n


def file_call_frame(store: Store, rows: pd.DataFrame) -> int:
    """File a frame of ``judge_calls`` rows (SHARD_COLUMNS) in one transaction; how many were new."""
    if rows.empty:
        return 0
    with store.transaction() as cur:
        cur.register("_frame_rows", rows[list(SHARD_COLUMNS)])
        n = _file(cur, "_frame_rows")
        cur.unregister("_frame_rows")
    return n
