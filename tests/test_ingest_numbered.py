"""The import's insert with ids given (``writes.insert_numbered_verdicts``, issue 26 point 6) against the
insert that draws them row by row in ``seq`` order (``writes.insert_verdicts_from``), on the same reports.

Both are run into copies of one store that already holds verdicts (so the ids do not start at 1): the
verdicts must come out equal row for row in scan order (``rowid``: the physical order the app's scans
see), ids included, and ``verdict_id_seq`` must end at the same value. The data separate the paths:
several judges, both orders and one, repeated rows, variants, rejected rows between valid ones (``seq``
has gaps) and batches of 7 rows (the good file has several row groups). A good file whose ``seq`` does
not increase down the file must take the old path (file order is not the insert's order there).
"""

from __future__ import annotations

import dataclasses
import shutil

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from engine.ingest.importer import store_report, validate_paths
from engine.ingest.report import ValidationReport
from engine.store.connection import Store


def _rows(n: int, tag: str) -> list[dict]:
    rows = []
    for i in range(n):
        winner = ("A", "B", "tie", "nobody")[i % 4 if i % 5 else 0]  # a rejected winner between valid ones
        rows.append({"prompt_id": f"{tag}p{i % 9}", "model_a": f"m{i % 4}", "model_b": f"m{(i + 1) % 4 + 4}",
                     "winner": winner, "judge": ("j1", "j2", "j3")[i % 3], "order": ("AB", "BA")[i % 2],
                     "variant": i % 3, "tstamp": float(i)})
        if i % 11 == 0:
            rows.append(dict(rows[-1]))  # a repeat
    return rows


def _verdicts(store: Store) -> list[tuple]:
    return store.cursor().execute("SELECT rowid, * FROM verdicts ORDER BY rowid").fetchall()


def _last_id(store: Store) -> int:
    return int(store.cursor().execute("SELECT last_value FROM duckdb_sequences() "
                                      "WHERE sequence_name = 'verdict_id_seq'").fetchone()[0])


def _import_both(reports, tmp_path, migrated_empty_db, monkeypatch) -> tuple[Store, Store]:
    stores = []
    for name in ("new", "old"):
        path = tmp_path / f"{name}.duckdb"
        shutil.copyfile(migrated_empty_db, path)
        store = Store(path)
        with monkeypatch.context() as m:
            if name == "old":  # the reference: ids drawn by the column's default, ORDER BY seq
                m.setattr(ValidationReport, "rows_in_order", lambda self: None)
            for report, ds in reports:
                assert store_report(store, report, ds, skip_invalid=True).status == "stored"
        stores.append(store)
    return stores[0], stores[1]


def test_numbered_insert_stores_the_rows_ids_order_and_sequence_of_the_old_insert(
        tmp_path, migrated_empty_db, monkeypatch):
    monkeypatch.setenv("LENS_IMPORT_BATCH_ROWS", "7")
    reports = []
    for tag, n in (("a", 40), ("b", 61)):
        path = tmp_path / f"{tag}.parquet"
        pq.write_table(pa.Table.from_pylist(_rows(n, tag)), path)
        report = validate_paths([path], dataset="d")
        assert report.n_rejected and report.repeats and report.rows_in_order() == report.n_good
        reports.append((report, f"d{tag}"))
    new, old = _import_both(reports, tmp_path, migrated_empty_db, monkeypatch)
    got, want = _verdicts(new), _verdicts(old)
    assert len(want) == sum(r.n_good for r, _ in reports)
    assert min(r[1] for r in want if r[2] == "db") > 1  # the second import's ids follow the first's
    assert got == want
    assert _last_id(new) == _last_id(old) == max(r[1] for r in want)


def test_a_good_file_out_of_seq_order_takes_the_old_insert(tmp_path, migrated_empty_db, monkeypatch):
    path = tmp_path / "c.parquet"
    pq.write_table(pa.Table.from_pylist(_rows(30, "c")), path)
    report = validate_paths([path], dataset="d")
    table = pq.read_table(report.good_file)
    flipped = tmp_path / "flipped.parquet"
    pq.write_table(table.take(list(range(table.num_rows - 1, -1, -1))), flipped)
    report = dataclasses.replace(report, good_file=str(flipped))
    seq = table.column("seq").to_pylist()[::-1]
    assert report.rows_in_order() is None and seq != sorted(seq)  # brute force: not increasing
    new, old = _import_both([(report, "dc")], tmp_path, migrated_empty_db, monkeypatch)
    got, want = _verdicts(new), _verdicts(old)
    assert [r[0] for r in got] == list(range(len(want)))
    assert got == want and [r[1] for r in got] == sorted(r[1] for r in got)  # ids follow seq, not the file


@pytest.mark.parametrize("cut", [0, 1])
def test_rows_in_order_answers_as_a_pass_over_the_seq_column(tmp_path, cut):
    path = tmp_path / "s.parquet"
    pq.write_table(pa.Table.from_pylist(_rows(25, "s")), path)
    report = validate_paths([path], dataset="d")
    seq = pq.read_table(report.good_file).column("seq").to_pylist()
    expect = len(seq) if all(b > a for a, b in zip(seq, seq[1:], strict=False)) else None
    assert dataclasses.replace(report, n_good=report.n_good - cut).rows_in_order() == (
        expect if cut == 0 else None)  # a count that is not the file's is not trusted
