"""The CLI import's early insert into an EXISTING store (``engine.ingest.early_insert``, issue 26 point 6,
round 36) against the serial path (``ENABLED = False``), each on its own copy of one store that already
holds data: a new dataset beside others, rows added to a dataset (a derived judge joining stored ones),
``--replace`` of a dataset (its old rows must stay until the import is known good).

Compared as in tests/test_import_early_insert.py: verdicts row for row in scan order (``rowid``, so the
replaced rows' deleted slots count) with their ids, every other table's rows, every sequence's last
value, the exit code, the output, the rejected-rows CSV; and which path ran. The files (``_csv``): three
judges, both orders and one, repeats, variants, turns, categories, texts, rejected rows between valid
ones and last; batches of 40 rows (several early inserts). A refusal in the last batch and a Ctrl-C
once rows were inserted must leave the store exactly as it was."""

from __future__ import annotations

import shutil

import duckdb
import pytest
from cli_inprocess import run_engine
from store_snapshot import store_rows
from test_import_early_insert import BATCH, _csv, _good, interrupted_runs
from test_import_early_insert import _run as run_import

from engine.ingest import early_insert


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    """A store holding vicuna80 (its seed) and dataset ``d`` (200 rows, three judges, both orders), made
    by the serial path once; each run imports into a copy."""
    folder = tmp_path_factory.mktemp("existing")
    src = _csv(folder / "d.csv", 200)
    db = folder / "base.duckdb"
    early_insert.ENABLED = False
    try:
        proc = run_engine(["--db", db, "import", src, "--dataset", "d"])
    finally:
        early_insert.ENABLED = True
    assert proc.returncode == 0, proc.stderr
    return db


def _far(base, path):
    """A copy of ``base`` where one more verdict of ``d`` is numbered far above the sequence, as a
    hand-made row could be: the early insert's rows are then not the only ones numbered that high."""
    shutil.copyfile(base, path)
    con = duckdb.connect(str(path))
    con.execute("INSERT INTO verdicts (verdict_id, dataset, prompt_id, model_a, model_b, winner, judge) "
                "SELECT 1000000000, dataset, prompt_id, model_a, model_b, winner, judge FROM verdicts "
                "WHERE dataset = 'd' ORDER BY verdict_id LIMIT 1")
    con.close()
    return path


def _run(tmp_path, base, src, extra: list, enabled: bool, monkeypatch, tag: str = "run",
         dataset: str = "e"):
    """The import of ``src`` with ``--hold-store`` into a copy of ``base`` (test_import_early_insert's)."""
    return run_import(tmp_path, src, extra, enabled, monkeypatch, tag=tag, dataset=dataset, base=base)


@pytest.mark.parametrize("dataset, extra, bad, one_order", [
    ("e", ["--skip-invalid"], (3, 50, 51, 140, 199), False),  # a new dataset beside d and vicuna80
    ("e", ["--replace"], (), True),  # all-or-nothing, one order; --replace of a dataset not there yet
    ("d", ["--replace", "--skip-invalid"], (0, 77, 199), False),  # d replaced
    ("d", ["--replace"], (), True),
    ("d", ["--replace"], (), False),  # d's own file again: a replace may repeat a stored file
    ("d", ["--skip-invalid"], (5, 120), False),  # rows added to d
])
def test_an_early_insert_into_a_store_with_data_stores_what_the_serial_path_stores(
        tmp_path, base, monkeypatch, dataset, extra, bad, one_order):
    src = _csv(tmp_path / "v.csv", 200, bad, one_order)
    early = _run(tmp_path, base, src, extra, True, monkeypatch, dataset=dataset)
    serial = _run(tmp_path, base, src, extra, False, monkeypatch, dataset=dataset)
    assert early[3] == [(True, _good(src))]  # the fast path was taken and kept, with every good row
    assert serial[3] == []
    assert early[0] == serial[0] == 0, early[1]
    assert early[1] == serial[1]
    assert early[4] == serial[4]
    assert early[2] == serial[2]


@pytest.mark.parametrize("extra", [["--replace"], []])
def test_a_verdict_numbered_above_the_early_rows_sends_the_import_to_the_serial_path(
        tmp_path, base, monkeypatch, extra):
    """d holds a verdict numbered above the early insert's ids: a replace must delete it, rows added to
    d must not count it twice; the early rows are not the only ones that high, so it rolls back."""
    far = _far(base, tmp_path / "far.duckdb")
    src = _csv(tmp_path / "v.csv", 120)
    early = _run(tmp_path, far, src, extra, True, monkeypatch, dataset="d")
    serial = _run(tmp_path, far, src, extra, False, monkeypatch, dataset="d")
    assert early[3] == [(False, _good(src))]
    assert early[0] == serial[0] == 0, early[1]
    assert early[1] == serial[1]
    assert early[2] == serial[2]
    assert (1000000000 in early[2]["verdicts"]["verdict_id"].to_pylist()) is not bool(extra)


def test_rows_added_to_a_dataset_count_only_its_stored_verdicts_in_the_joined_judge_note(
        tmp_path, base, monkeypatch):
    """A file without a judge column into ``vicuna80``, its judge named after the file as one of vicuna80's
    judges: the note counts the judge's stored verdicts, not the ones the early insert put in first."""
    src = tmp_path / "gpt-4.csv"
    lines = ["prompt_id,model_a,model_b,winner,order"]
    lines += [f"p{i % 9},m{i % 4},m{(i + 1) % 4 + 4},{('A', 'B', 'tie')[i % 3]},{('AB', 'BA')[i % 2]}"
              for i in range(150)]
    src.write_text("\n".join(lines) + "\n")
    early = _run(tmp_path, base, src, [], True, monkeypatch, dataset="vicuna80")
    serial = _run(tmp_path, base, src, [], False, monkeypatch, dataset="vicuna80")
    assert early[3] == [(True, 150)]
    assert "Judge 'gpt-4' already had" in serial[1]
    assert (early[0], early[1]) == (serial[0], serial[1])
    assert early[2] == serial[2]


@pytest.mark.parametrize("extra", [["--replace"], []])
def test_a_refusal_in_the_last_batch_leaves_the_store_as_it_was(tmp_path, base, monkeypatch, extra):
    """The bad row is the file's last: earlier batches were inserted (beside d's old rows, for
    --replace) before the refusal was known; the store is the serial path's, d untouched."""
    src = _csv(tmp_path / "v.csv", 200, bad=(199,))
    early = _run(tmp_path, base, src, extra, True, monkeypatch, dataset="d")
    serial = _run(tmp_path, base, src, extra, False, monkeypatch, dataset="d")
    assert len(early[3]) == 1 and early[3][0][0] is False and early[3][0][1] >= 200 - BATCH
    assert early[0] == serial[0] == 2
    assert early[1] == serial[1]
    assert early[2] == serial[2]
    before = store_rows(base, in_order=("verdicts",))
    assert early[2]["verdicts"] == before["verdicts"]  # d's old rows, where they were


@pytest.mark.parametrize("as_is", [True, False])
def test_ctrl_c_during_a_replace_leaves_the_store_as_it_was(tmp_path, base, monkeypatch, as_is):
    """Ctrl-C in the fourth batch of a --replace, once the early insert has inserted rows: rolled back,
    the store the serial path's and the one it was before. ``as_is`` False: a store whose open would
    write first (a first-use step not recorded): the thread leaves it to the serial path, which never
    opens it here, so that write does not happen either."""
    if not as_is:
        base = shutil.copyfile(base, tmp_path / "not-as-is.duckdb")
        con = duckdb.connect(str(base))
        con.execute("DELETE FROM init_log WHERE step = 'arena_counts_dataset'")
        con.close()
    src = _csv(tmp_path / "v.csv", 200)

    def run(enabled):
        return _run(tmp_path, base, src, ["--replace"], enabled, monkeypatch, tag="ctrl-c", dataset="d")[:3]

    made, results = interrupted_runs(monkeypatch, run, 20 if as_is else 2)
    for code, text, _ in results.values():
        assert (code, text) == (130, "interrupted\n")
    stores = {enabled: result[2] for enabled, result in results.items()}
    assert len(made) == 1 and (made[0].rows > 0) is as_is  # rows were in when Ctrl-C came, if as is
    assert stores[True] == stores[False] == store_rows(base, in_order=("verdicts",))


def test_without_hold_store_an_existing_store_and_a_replace_take_the_serial_path(tmp_path, base, monkeypatch):
    """Without ``--hold-store`` (the default) no insert thread for a store that exists or a --replace:
    its lock is taken only to write (tests/test_ingest_limits.py probes that from another process)."""
    from engine.ingest.shipped import NewStoreSeed

    seed = NewStoreSeed(base)
    assert seed.thread is None
    made = []
    try:
        for hold, replace in ((False, False), (False, True), (True, True)):
            made.append(early_insert.early_insert(seed, base, 0.0, "e", replace=replace, memory_limit="1GB",
                                                  hold_store=hold))
    finally:
        for e in made:
            if e is not None:
                e.abandon()
    assert made[:2] == [None, None]
    assert made[2] is not None
