"""Issue 29 point 3: the call cache's memory stays bounded whatever its size.

``judge_calls`` lost its primary-key ART index (migration 079: the index held every key in the judge's
memory and each checkpoint wrote it whole), so ``insert_new_calls`` alone keeps a key stored once; a
cache's store caps DuckDB's memory (``Store.limit_memory``), also across the reopens of a store the
judge lets go of between writes. Each test checks against a second path: the rows read before the
migration, a brute-force count of the keys offered, DuckDB's own view of its settings and indexes.
"""

from __future__ import annotations

import hashlib

import duckdb
import pyarrow as pa
import pytest

from engine.judging.cache import STORE_MEMORY_LIMIT, CallCache
from engine.judging.call_rows import insert_calls
from engine.store.call_shards import SHARD_COLUMNS, file_call_frame
from engine.store.connection import Store, list_migrations


def _rows(keys: list[str], tag: str = "") -> pa.Table:
    n = len(keys)
    return pa.table({
        "call_key": keys, "backend": ["openai"] * n, "model": ["m"] * n, "template_id": ["t"] * n,
        "template_version": pa.array([1] * n, pa.int32()), "messages": [f"[{k}{tag}]" for k in keys],
        "decoding": ["{}"] * n, "text": [f"answer {k}{tag}" for k in keys], "top_logprobs": [None] * n,
        "prompt_tokens": pa.array([3] * n, pa.int32()), "completion_tokens": pa.array([1] * n, pa.int32()),
        "latency_s": [0.5] * n, "attempts": pa.array([1] * n, pa.int32()),
        "run_id": pa.array([7] * n, pa.int64()),
        "server": ["http://h:1/v1"] * n,
    })


def _key(i: int) -> str:
    return hashlib.sha256(str(i).encode()).hexdigest()


def _store_before_079(path) -> None:
    """A store as main left it: every migration before 079 applied (judge_calls with its primary key)."""
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name VARCHAR NOT NULL,"
                " applied_at TIMESTAMP NOT NULL DEFAULT current_timestamp)")
    for mig in list_migrations():
        if mig.version < 79:
            con.execute(mig.sql)
            con.execute("INSERT INTO schema_migrations (version, name) VALUES (?, ?)",
                        [mig.version, mig.name])
    con.close()


def test_migration_079_keeps_every_row_and_default_and_drops_the_key_index(tmp_path):
    db = tmp_path / "old.duckdb"
    _store_before_079(db)
    con = duckdb.connect(str(db))
    old_keys = con.execute("SELECT count(*) FROM duckdb_constraints() WHERE table_name = 'judge_calls' AND"
                           " constraint_type = 'PRIMARY KEY'").fetchall()
    assert old_keys == [(1,)]  # the old store had the key
    con.register("_r", _rows([_key(i) for i in range(50)]))
    con.execute(f"INSERT INTO judge_calls ({', '.join(SHARD_COLUMNS)}) SELECT * FROM _r")
    con.execute("INSERT INTO judge_calls (call_key, backend, model, template_id, template_version, messages,"
                " decoding) VALUES ('defaults', 'b', 'm', 't', 2, '[]', '{}')")
    before = con.execute("SELECT * FROM judge_calls ORDER BY call_key").fetchall()
    con.close()

    store = Store(db)
    after = store.cursor().execute("SELECT * FROM judge_calls ORDER BY call_key").fetchall()
    assert after == before  # every row, every column (created_at included), none twice
    cur = store.cursor()
    kinds = {r[0] for r in cur.execute(
        "SELECT constraint_type FROM duckdb_constraints() WHERE table_name = 'judge_calls'").fetchall()}
    assert kinds == {"NOT NULL"}
    indexes = cur.execute("SELECT count(*) FROM duckdb_indexes() WHERE table_name = 'judge_calls'").fetchall()
    assert indexes == [(0,)]
    # the column defaults survived the rebuild: a row given only the required columns takes them
    cur.execute("INSERT INTO judge_calls (call_key, backend, model, template_id, template_version, messages,"
                " decoding) VALUES ('new', 'b', 'm', 't', 2, '[]', '{}')")
    attempts, made = cur.execute(
        "SELECT attempts, created_at FROM judge_calls WHERE call_key = 'new'").fetchall()[0]
    assert attempts == 1 and made is not None
    store.close()


@pytest.mark.parametrize("path", ["runner", "import"])
def test_a_key_is_stored_once_however_often_it_is_offered(empty_store, path):
    """Batches overlapping the stored keys and repeating keys inside themselves: the table holds each
    distinct key once, and each write reports (import) the keys that were new, counted by brute force."""
    offered: list[list[int]] = [list(range(0, 40)) + [0, 1, 39], list(range(30, 70)) + list(range(30, 35)),
                                [5, 5, 5, 69, 70], list(range(0, 71))]
    seen: set[int] = set()
    for batch in offered:
        new = len(set(batch) - seen)
        table = _rows([_key(i) for i in batch], tag="x")
        if path == "runner":
            insert_calls(empty_store, table, "owner")
        else:
            assert file_call_frame(empty_store, table.to_pandas()) == new
        seen |= set(batch)
    n, distinct = empty_store.cursor().execute(
        "SELECT count(*), count(DISTINCT call_key) FROM judge_calls").fetchone()
    assert n == distinct == len(seen) == 71


def test_a_cache_caps_duckdbs_memory_across_reopens(db_path, migrated_empty_db):
    """The cap holds on the connection a cache writes through, and again each time the store reopens."""
    import shutil

    shutil.copy(migrated_empty_db, db_path)
    store = Store(db_path, keep_open=False)  # as the judge opens it: the file let go between ticks

    def limit() -> str:
        with store.session():
            return store.cursor().execute("SELECT current_setting('memory_limit')").fetchone()[0]

    untouched = limit()
    CallCache(store)
    capped = limit()  # the store was closed and is opened again here
    want = duckdb.connect().execute(f"SET memory_limit = '{STORE_MEMORY_LIMIT}'; "
                                    "SELECT current_setting('memory_limit')").fetchone()[0]
    assert capped == want != untouched
    assert limit() == want  # and on the next reopen
    with pytest.raises(ValueError):
        store.limit_memory("512MB'; DROP TABLE judge_calls; --")
    store.close()
