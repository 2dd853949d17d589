"""The call cache's tables: ``judge_calls`` (one row per completed model call) and
``judge_call_leases`` (calls a live run has claimed). Only SQL lives here; ``engine.judging.cache``
decides the keys, the row contents and when a lease has lapsed (see its docstring), and
``engine.judging.persist`` holds judging's other table access.
"""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd
import pyarrow as pa

from engine.store.call_shards import insert_new_calls
from engine.store.connection import Store

_CALL_RESULT = "text, top_logprobs, prompt_tokens, completion_tokens, latency_s, attempts"


def stored_calls(store: Store, keys: list[str], legacy: dict[str, str] | None = None) -> list[tuple]:
    """(key, text, top_logprobs, prompt_tokens, completion_tokens, latency_s, attempts) of the stored
    calls among ``keys``; a key not found is looked up by its ``legacy`` key among calls stored
    without a server (before the server was part of the key)."""
    sql = f"SELECT w.k, {_CALL_RESULT} FROM judge_calls c JOIN _wanted w ON c.call_key = w.call_key"
    with store.session():  # a store opened with keep_open=False lets go of the file after the read
        cur = store.cursor()
        wanted = list(dict.fromkeys(keys))
        cur.register("_wanted", pa.table({"call_key": wanted, "k": wanted}))
        rows = cur.execute(sql).fetchall()
        cur.unregister("_wanted")
        found = {r[0] for r in rows}
        old = {k: legacy[k] for k in wanted if legacy and k not in found and k in legacy}
        if old:
            cur.register("_wanted", pa.table({"call_key": list(old.values()), "k": list(old)}))
            rows += cur.execute(sql + " WHERE c.server IS NULL").fetchall()
            cur.unregister("_wanted")
    return rows


def has_serverless_calls(store: Store) -> bool:
    """Whether any call was stored before the server was part of the key (``server`` NULL): only then
    is a request also looked up by its old key."""
    with store.session():
        sql = "SELECT EXISTS (SELECT 1 FROM judge_calls WHERE server IS NULL)"
        row = store.cursor().execute(sql).fetchone()
    return bool(row and row[0])


def insert_calls(store: Store, calls: pd.DataFrame | pa.Table, owner: str) -> None:
    """Insert ``judge_calls`` rows (its columns, by name; a pandas frame or an Arrow table) and drop
    ``owner``'s leases on them, in one transaction; a key stored already (or met twice) is stored once."""
    cols = list(calls.column_names if isinstance(calls, pa.Table) else calls.columns)
    with store.transaction() as cur:
        cur.register("_calls", calls)
        insert_new_calls(cur, "_calls", cols)
        cur.execute(
            "DELETE FROM judge_call_leases WHERE owner = ? AND call_key IN (SELECT call_key FROM _calls)",
            [owner],
        )
        cur.unregister("_calls")


def claim_calls(
    store: Store, keys: list[str], owner: str, me: tuple[str, int, float | None], expires_at: float,
    lapsed: Callable[[str, int, float | None, float], bool],  # leases: pid NOT NULL, started nullable
) -> tuple[list[str], set[str]]:
    """In one transaction: the keys stored already or leased by another owner whose lease has not
    ``lapsed(host, pid, started, expires_at)`` are *held*; lapsed leases are dropped and every other
    key is leased to ``owner`` (process ``me`` = host, pid, start time) until ``expires_at``.
    Returns (claimed, held)."""
    wanted = list(dict.fromkeys(keys))
    with store.transaction() as cur:
        cur.register("_wanted", pa.table({"call_key": wanted}))
        held = {
            r[0]
            for r in cur.execute("SELECT call_key FROM judge_calls JOIN _wanted USING (call_key)").fetchall()
        }
        leases = cur.execute(
            "SELECT call_key, owner, host, pid, started, expires_at FROM judge_call_leases JOIN _wanted "
            "USING (call_key)"
        ).fetchall()
        cur.unregister("_wanted")
        stale = []
        for key, lowner, lhost, lpid, lstarted, expires in leases:
            if lowner == owner:
                continue
            if lapsed(lhost, lpid, lstarted, expires):
                stale.append(key)
            else:
                held.add(key)
        if stale:
            cur.execute(
                f"DELETE FROM judge_call_leases WHERE call_key IN ({', '.join('?' for _ in stale)})", stale
            )
        mine = [k for k in wanted if k not in held]
        if mine:
            cur.register("_mine", pa.table({"call_key": mine}))
            cur.execute(
                "INSERT INTO judge_call_leases (call_key, owner, host, pid, started, expires_at)"
                " SELECT call_key, ?, ?, ?, ?, ? FROM _mine ON CONFLICT DO UPDATE SET"
                " owner = excluded.owner, host = excluded.host, pid = excluded.pid,"
                " started = excluded.started, expires_at = excluded.expires_at",
                [owner, *me, expires_at],
            )
            cur.unregister("_mine")
    return mine, held


def renew_leases(store: Store, owner: str, expires_at: float, keys: list[str] | None = None) -> None:
    """Move every lease of ``owner`` (or its leases on ``keys`` only) to expire at ``expires_at`` (its run
    is still going)."""
    with store.transaction() as cur:
        if keys is None:
            cur.execute("UPDATE judge_call_leases SET expires_at = ? WHERE owner = ?", [expires_at, owner])
            return
        if not keys:
            return
        cur.register("_renewed", pa.table({"call_key": pa.array(keys, pa.string())}))
        cur.execute("UPDATE judge_call_leases SET expires_at = ? WHERE owner = ? AND call_key IN "
                    "(SELECT call_key FROM _renewed)", [expires_at, owner])
        cur.unregister("_renewed")


def release_leases(store: Store, owner: str, keys: list[str] | None = None, *,
                   keep: set[str] | None = None) -> None:
    """Drop ``owner``'s leases on ``keys``, or all of them for None (but those on ``keep``: calls in a
    kept shard file, whose lease goes when they are filed), so other runs may make those calls."""
    with store.transaction() as cur:
        if keys is None and keep:
            cur.register("_kept", pa.table({"call_key": pa.array(sorted(keep), pa.string())}))
            cur.execute("DELETE FROM judge_call_leases WHERE owner = ? AND call_key NOT IN "
                        "(SELECT call_key FROM _kept)", [owner])
            cur.unregister("_kept")
            return
        if keys is None:
            cur.execute("DELETE FROM judge_call_leases WHERE owner = ?", [owner])
            return
        cur.register("_gone", pa.table({"call_key": list(keys)}))
        cur.execute(
            "DELETE FROM judge_call_leases WHERE owner = ? AND call_key IN (SELECT call_key FROM _gone)",
            [owner],
        )
        cur.unregister("_gone")


def call_totals(store: Store) -> pd.DataFrame:
    """Stored calls, tokens and seconds per backend, model and template version (``calls`` summary)."""
    return store.cursor().execute(
        "SELECT backend, model, template_id, template_version, count(*) AS calls,"
        " sum(prompt_tokens)::BIGINT AS prompt_tokens, sum(completion_tokens)::BIGINT AS completion_tokens,"
        " round(sum(latency_s), 3) AS seconds, min(created_at) AS first_call, max(created_at) AS last_call"
        " FROM judge_calls GROUP BY ALL ORDER BY backend, model, template_id, template_version"
    ).df()
