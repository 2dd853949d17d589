"""``writes.record_files`` writes every imported file's hash in one statement; the rows must be those the
row-by-row ``INSERT OR REPLACE`` (the code before the change, written out below as the second path) leaves,
including two files with the same bytes in one import (the later name kept), a replace, and rows already
there from an earlier import of another dataset or of the same one."""

from __future__ import annotations

from engine.store import writes


def _row_by_row(tx, dataset, hashes, import_id, *, replace):
    if replace:
        tx.execute("DELETE FROM dataset_files WHERE dataset = ?", [dataset])
    for name, digest in hashes.items():
        tx.execute("INSERT OR REPLACE INTO dataset_files (dataset, content_hash, source, import_id)"
                   " VALUES (?, ?, ?, ?)", [dataset, digest, name, import_id])


STEPS = [
    ("a", {"one.csv": "h1", "two.csv": "h2", "copy-of-one.csv": "h1"}, 1, False),
    ("b", {"one.csv": "h1"}, 2, False),
    ("a", {"three.csv": "h3", "again-two.csv": "h2"}, 3, False),
    ("a", {}, 4, False),
    ("b", {"four.csv": "h4", "four-again.csv": "h4", "five.csv": "h5"}, 5, True),
    ("a", {}, 6, True),
]


def _rows(store):
    with store.transaction() as tx:
        return tx.execute("SELECT dataset, content_hash, source, import_id FROM dataset_files "
                          "ORDER BY ALL").fetchall()


def test_one_statement_leaves_the_rows_row_by_row_replacing_leaves(empty_store, tmp_path, migrated_empty_db):
    import shutil

    from engine.store.connection import Store

    other_path = tmp_path / "other.duckdb"
    shutil.copyfile(migrated_empty_db, other_path)
    other = Store(other_path)
    try:
        for i, (dataset, hashes, import_id, replace) in enumerate(STEPS):
            with empty_store.transaction() as tx:
                writes.record_files(tx, dataset, hashes, import_id, replace=replace)
            with other.transaction() as tx:
                _row_by_row(tx, dataset, hashes, import_id, replace=replace)
            assert _rows(empty_store) == _rows(other), f"after step {i}"
        assert _rows(other) == [("b", "h4", "four-again.csv", 5), ("b", "h5", "five.csv", 5)]
    finally:
        other.close()
