"""The CLI import's early insert (``engine.ingest.early_insert``, issue 26 point 6: a new store's verdicts
inserted batch by batch while validation goes on) against the serial path (``ENABLED = False``: validate,
then ``store_report``), each into a new store, on the same files.

The store must come out the same: verdicts row for row in scan order (``rowid``) with their ids, every
other table's rows, every sequence's last value; the command's output, exit code and rejected-rows CSV
the same. The files separate the paths: several judges, both orders and one, repeats, variants, turns,
categories, question and answer texts, rejected rows between valid ones, batches of 40 rows (the early
insert takes several). A refusal known only at the end (a bad row in the last batch, after the earlier
batches were inserted) and a validation stopped by Ctrl-C must leave exactly what the serial path
leaves: nothing drawn from any sequence. Into a store that exists already: test_import_early_existing."""

from __future__ import annotations

import shutil
import threading
import time

import pytest
from cli_inprocess import run_engine
from store_snapshot import store_rows

from engine.cli import imports
from engine.ingest import early_insert, verdicts
from engine.store import writes
from engine.store.connection import Store

BATCH = 40


def _csv(path, n: int, bad: tuple[int, ...] = (), one_order: bool = False):
    lines = ["prompt_id,model_a,model_b,winner,judge,order,variant,turn,category,question,answer_a,answer_b,"
             "tstamp"]
    for i in range(n):
        winner = "nobody" if i in bad else ("A", "B", "tie", "invalid")[i % 4]
        order = "AB" if one_order else ("AB", "BA")[i % 2]
        row = (f"p{i % 13},m{i % 5},m{(i + 2) % 5 + 5},{winner},j{i % 3},{order},{i % 3},{1 + i % 2},"
               f"c{i % 4},question {i % 13},answer {i % 7},other {i % 11},{float(i)}")
        lines.append(row)
        if i % 17 == 0:
            lines.append(row)  # a repeated vote
    path.write_text("\n".join(lines) + "\n")
    return path


def _run(tmp_path, src, extra: list, enabled: bool, monkeypatch, tag: str = "run", dataset: str = "d",
         base=None):
    """The import of ``src`` into a new store, or with ``--hold-store`` into a copy of the store ``base``
    (test_import_early_existing); (exit code, output, store, what store_early did, rejected CSV)."""
    name = f"{tag}-{'early' if enabled else 'serial'}"
    db = tmp_path / f"{name}.duckdb"
    if base is not None:
        shutil.copyfile(base, db)
    rejected = tmp_path / f"{name}.rej.csv"
    ends: list[tuple[bool, int]] = []  # store_early's outcomes: (kept, rows inserted early)
    real = imports.store_early
    with monkeypatch.context() as m:
        m.setenv("LENS_IMPORT_BATCH_ROWS", str(BATCH))
        m.setattr(early_insert, "ENABLED", enabled)
        m.setattr(imports, "store_early",
                  lambda *a, **k: (r := real(*a, **k), ends.append((r is not None, a[3])))[0])
        proc = run_engine(["--db", db, "import", src, "--dataset", dataset,
                           *(["--hold-store"] if base is not None else []), *extra,
                           *(["--rejected", rejected] if "--skip-invalid" in extra else [])])
    text = (proc.stdout + proc.stderr).replace(str(tmp_path / name), "OUT")
    csv = rejected.read_bytes() if rejected.exists() else None
    return proc.returncode, text, store_rows(db, in_order=("verdicts",)), ends, csv


def _good(src) -> int:
    """How many of ``_csv``'s rows are valid (the rejected ones name judge ``nobody``)."""
    return sum(",nobody," not in line for line in src.read_text().splitlines()[1:])


@pytest.mark.parametrize("extra, bad, one_order", [
    (["--skip-invalid"], (3, 50, 51, 140, 199), False),  # rejected rows between valid ones, the last too
    ([], (), True),  # all-or-nothing, every row good, one order
])
def test_an_early_insert_stores_what_the_serial_path_stores(tmp_path, monkeypatch, extra, bad, one_order):
    src = _csv(tmp_path / "v.csv", 200, bad, one_order)
    early = _run(tmp_path, src, extra, True, monkeypatch)
    serial = _run(tmp_path, src, extra, False, monkeypatch)
    assert early[3] == [(True, _good(src))]  # the fast path was taken and kept, with every good row
    assert serial[3] == []
    assert early[0] == serial[0] == 0
    assert early[1] == serial[1]
    assert early[4] == serial[4]
    assert early[2] == serial[2]
    ids = early[2]["verdicts"]["verdict_id"].to_pylist()
    assert len(set(ids)) == len(ids) > 200  # vicuna80's and these


def test_a_refusal_in_the_last_batch_leaves_what_the_serial_path_leaves(tmp_path, monkeypatch):
    """The bad row is the file's last: the earlier batches were inserted before the refusal was known."""
    src = _csv(tmp_path / "v.csv", 200, bad=(199,))
    early = _run(tmp_path, src, [], True, monkeypatch)
    serial = _run(tmp_path, src, [], False, monkeypatch)
    assert len(early[3]) == 1 and early[3][0][0] is False and early[3][0][1] >= 200 - BATCH  # rolled back
    assert early[0] == serial[0] == 2
    assert early[1] == serial[1]
    assert early[2] == serial[2]  # verdicts (the seed's only), the refused import_log row, every sequence


def test_rows_added_to_an_existing_dataset_are_the_serial_paths(tmp_path, monkeypatch):
    """vicuna80 is in every new store (its seed): rows added to it early (round 36; round 35 rolled back
    and ran the serial path) give the serial path's store."""
    src = _csv(tmp_path / "v.csv", 120)
    early = _run(tmp_path, src, [], True, monkeypatch, dataset="vicuna80")
    serial = _run(tmp_path, src, [], False, monkeypatch, dataset="vicuna80")
    assert len(early[3]) == 1 and early[3][0] == (True, len(src.read_text().splitlines()) - 1)
    assert early[0] == serial[0] == 0
    assert early[1] == serial[1]
    assert early[2] == serial[2]


def interrupted_runs(monkeypatch, run, wait_s: float = 20):
    """Each path's import (early insert on, then off) with Ctrl-C in the fourth batch, raised once the early
    insert has inserted rows, or has given up (its ``error`` set: it inserts nothing from then on, e.g. a
    store that would not open as is), or after ``wait_s``: (the EarlyInsert objects made, ``run(enabled)``'s
    result per path). ``run`` runs the import and checks nothing."""
    made: list[early_insert.EarlyInsert] = []
    real_make, real_add = imports.early_insert, verdicts.ReportBuilder.add
    results = {}
    for enabled in (True, False):
        calls = [0]

        def add(self, raw, calls=calls):
            calls[0] += 1
            if calls[0] == 4:
                deadline = time.monotonic() + wait_s
                while (made and made[-1].rows == 0 and made[-1].error is None
                       and time.monotonic() < deadline):
                    time.sleep(0.01)
                raise KeyboardInterrupt
            real_add(self, raw)

        with monkeypatch.context() as m:
            m.setattr(verdicts.ReportBuilder, "add", add)
            m.setattr(imports, "early_insert",
                      lambda *a, **k: (e := real_make(*a, **k), e and made.append(e))[0])
            results[enabled] = run(enabled)
    return made, results


def test_ctrl_c_during_validation_leaves_the_seeded_store(tmp_path, monkeypatch):
    """Ctrl-C in the fourth batch, once the early insert has inserted rows: rolled back, the thread gone,
    the store as the serial path leaves it (seeded, nothing of the import, no sequence moved)."""
    src = _csv(tmp_path / "v.csv", 200)
    stores = {}

    def run(enabled):
        code, text = _run(tmp_path, src, [], enabled, monkeypatch, tag="ctrl-c")[:2]
        assert (code, text) == (130, "interrupted\n")
        stores[enabled] = store_rows(tmp_path / f"ctrl-c-{'early' if enabled else 'serial'}.duckdb",
                                     in_order=("verdicts",))

    made, _ = interrupted_runs(monkeypatch, run)
    assert len(made) == 1 and made[0].rows > 0  # rows were in when Ctrl-C came
    assert not any(t.name == "lens-early-insert" for t in threading.enumerate())
    assert stores[True] == stores[False]


def test_next_verdict_id_is_the_value_the_sequence_draws_next(tmp_path):
    """Read without drawing: on a new store, after draws, after a rolled-back draw, after a reopen."""
    path = tmp_path / "s.duckdb"
    store = Store(path)
    cur = store.con.cursor()
    for step in range(4):
        predicted = writes.next_verdict_id(cur)
        assert writes.next_verdict_id(cur) == predicted  # reading draws nothing
        if step == 2:
            cur.execute("BEGIN")
            assert writes.draw_verdict_ids(cur, 5) == predicted
            cur.execute("ROLLBACK")  # DuckDB keeps the sequence moved
            continue
        drawn = cur.execute("SELECT nextval('verdict_id_seq')").fetchone()[0]
        assert drawn == predicted
        cur.execute("SELECT nextval('verdict_id_seq') FROM range(3)").fetchall()
    store.close()
    store = Store(path)
    cur = store.con.cursor()
    predicted = writes.next_verdict_id(cur)
    assert cur.execute("SELECT nextval('verdict_id_seq')").fetchone()[0] == predicted
    store.close()
