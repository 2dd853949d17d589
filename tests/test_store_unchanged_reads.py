"""Reads answered without opening the store while its file is unchanged (``Store.file_signature``,
``Store.read_unless_changed``; the app's per-run looks: ``dataset_stamps``, ``is_pair_count_dataset``,
``attached_source``, ``dataset_models``, the unfinished-run check): a value is given again only while the file
and its write-ahead log are as they were at the read, a commit from another process is read at the next look,
a file written within ``UNCHANGED_AFTER_S`` vouches for nothing, and a full rerun of a page whose results are
cached opens no file (about 30 ms of a DuckDB open and close a rerun before)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from engine.store import connection
from engine.store.connection import Store
from engine.store.datasets import dataset_models, dataset_stamps

SETTLE_S = 1.0
"""``UNCHANGED_AFTER_S`` in these tests (3 s in the product): how old a write must be before the file's
signature vouches for it."""


@pytest.fixture
def store(shipped_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Store:
    monkeypatch.setattr(connection, "UNCHANGED_AFTER_S", SETTLE_S)
    path = tmp_path / "lens.duckdb"
    shutil.copyfile(shipped_db, path)
    s = Store(path, keep_open=False)  # as the app opens it: the file held only inside a session
    settle()
    return s


def settle() -> None:
    time.sleep(SETTLE_S + 0.05)


def commit_elsewhere(path: Path, sql: str) -> None:
    """``sql`` committed by another process (a command-line writer)."""
    code = f"import duckdb; c = duckdb.connect({str(path)!r}); c.execute({sql!r}); c.close()"
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def look(store: Store, read=dataset_stamps):
    """``read(store)`` in one session, and whether it opened the file."""
    with store.session():
        value = read(store)
        opened = store.is_open
    return value, opened


def test_a_read_is_given_again_until_another_process_commits(store: Store) -> None:
    first, opened = look(store)
    assert opened and dict(first)["vicuna80"] >= 1
    again, opened = look(store)
    assert again == first and not opened  # unchanged file: no open
    commit_elsewhere(store.path, "UPDATE datasets SET version = version + 1000 WHERE name = 'vicuna80'")
    after, opened = look(store)
    assert opened and dict(after)["vicuna80"] == dict(first)["vicuna80"] + 1000
    settle()
    look(store)  # read and kept now
    kept, opened = look(store)
    assert kept == after and not opened


def test_the_models_read_follows_a_commit(store: Store) -> None:
    models, _ = look(store, lambda s: dataset_models(s, "vicuna80"))
    assert "gpt35" in models
    again, opened = look(store, lambda s: dataset_models(s, "vicuna80"))
    assert again == models and not opened
    commit_elsewhere(store.path, "UPDATE verdicts SET model_a = 'renamed-x' WHERE dataset = 'vicuna80' "
                                 "AND model_a = 'gpt35'")
    after, opened = look(store, lambda s: dataset_models(s, "vicuna80"))
    assert opened and "renamed-x" in after


def test_a_file_written_just_now_or_missing_vouches_for_nothing(store: Store, tmp_path: Path) -> None:
    assert store.file_signature() is not None
    with store.transaction() as tx:  # a commit of this process: checked at once after it
        tx.execute("UPDATE datasets SET description = 'x' WHERE name = 'vicuna80'")
    assert store.file_signature() is None
    settle()
    assert store.file_signature() is not None
    assert Store(":memory:").file_signature() is None
    gone = Store(tmp_path / "gone.duckdb", keep_open=False)
    gone.path.unlink()
    assert gone.file_signature() is None


def test_a_file_replaced_by_another_is_read_again(store: Store, tmp_path: Path) -> None:
    first, _ = look(store)
    other = tmp_path / "other.duckdb"
    shutil.copy2(store.path, other)  # the same bytes and modification time, another file
    with Store(other).transaction() as tx:
        tx.execute("UPDATE datasets SET version = version + 50 WHERE name = 'vicuna80'")
    was = store.path.stat()
    os.utime(other, ns=(was.st_atime_ns, was.st_mtime_ns))  # the old time: inode and change time differ
    os.replace(other, store.path)
    settle()
    after, opened = look(store)
    assert opened and dict(after)["vicuna80"] == dict(first)["vicuna80"] + 50


def test_a_value_is_kept_under_the_files_signature_from_before_its_read(store: Store) -> None:
    """A commit landing after the read's query but before the value is kept: the value (from before the
    commit) must not be kept under the file as the commit left it."""
    calls = []

    def read():
        with store.session():
            value = dict(store.cursor().execute("SELECT name, version FROM datasets").fetchall())["vicuna80"]
        if not calls:
            commit_elsewhere(store.path, "UPDATE datasets SET version = version + 5 WHERE name = 'vicuna80'")
            settle()
        calls.append(value)
        return value

    first = store.read_unless_changed("k", read)
    assert store.read_unless_changed("k", read) == first + 5
    assert store.read_unless_changed("k", read) == first + 5 and len(calls) == 2  # kept now


def test_a_busy_store_is_busy_never_a_dataset_that_is_not_attached(store: Store, tmp_path: Path) -> None:
    """An attached dataset's source read while another process holds the store: the busy sentence, not "not
    attached" (which would be kept while the holder writes nothing, and the dataset read as empty)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from engine.store.attached import attach, attached_source
    from engine.store.connection import StoreBusy

    pq.write_table(pa.table({"prompt_id": ["1", "2"], "model_a": ["x", "y"], "model_b": ["y", "x"],
                             "winner": ["A", "B"]}), tmp_path / "v.parquet")
    glob = str(tmp_path / "v.parquet")
    with store.session():
        attach(store, "att", glob)
    settle()
    app = Store(store.path, keep_open=False, lock_wait_s=0)  # another server process: nothing kept yet
    code = (f"import sys, time; sys.path.insert(0, {str(Path(__file__).parent.parent)!r}); "
            "from engine.store.connection import Store; "
            f"s = Store({str(store.path)!r}); s.con; print('held', flush=True); time.sleep(120)")
    holder = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(StoreBusy), app.session():
            attached_source(app, "att")
    finally:
        holder.kill()
        holder.wait(timeout=60)
    with app.session():
        assert attached_source(app, "att") == (glob, None)


def test_a_kept_value_changed_by_a_caller_is_given_whole_again(store: Store) -> None:
    models, _ = look(store, lambda s: dataset_models(s, "vicuna80"))
    models.clear()
    again, opened = look(store, lambda s: dataset_models(s, "vicuna80"))
    assert not opened and "gpt35" in again


def test_a_commit_held_in_the_log_by_a_live_writer_is_not_answered_from_before(store: Store) -> None:
    """A writer that keeps the file open (a judge run) commits into the write-ahead log, leaving the file
    itself as it was: the log's appearance changes the signature, so the next look opens the file and meets
    the writer (busy), never the value from before the commit."""
    from engine.store.connection import StoreBusy

    look(store)
    _, opened = look(store)
    assert not opened
    code = (f"import duckdb, time; c = duckdb.connect({str(store.path)!r}); "
            "c.execute(\"UPDATE datasets SET version = version + 7 WHERE name = 'vicuna80'\"); "
            "print('held', flush=True); time.sleep(120)")
    holder = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        assert Path(f"{store.path}.wal").exists()
        with pytest.raises(StoreBusy):
            look(store)
    finally:
        holder.kill()
        holder.wait(timeout=60)


def test_each_datasets_answers_are_kept_apart_and_the_unfinished_run_look_follows_a_commit(
        store: Store, tmp_path: Path) -> None:
    """Two datasets of different kinds in one store (vicuna80's verdicts, the arena's pair counts, an attached
    Parquet file): each keeps its own answer, given again without opening the file; a judge run left
    unfinished by another process is seen at the next look."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from engine.judging.completeness import unfinished_runs
    from engine.store.attached import attach, attached_source
    from engine.store.pair_counts import is_pair_count_dataset

    arena = "chatbot_arena_2024_08_14"
    pq.write_table(pa.table({"prompt_id": ["1"], "model_a": ["x"], "model_b": ["y"], "winner": ["A"]}),
                   tmp_path / "v.parquet")
    with store.session():
        attach(store, "att", str(tmp_path / "v.parquet"))
    settle()

    def answers(s: Store) -> tuple:
        return (is_pair_count_dataset(s, "vicuna80"), is_pair_count_dataset(s, arena),
                attached_source(s, "vicuna80"), attached_source(s, "att"), unfinished_runs(s))

    first, _ = look(store, answers)
    assert first == (False, True, None, (str(tmp_path / "v.parquet"), None), [])
    again, opened = look(store, answers)
    assert again == first and not opened
    commit_elsewhere(store.path, "INSERT INTO judge_runs (kind, dataset, backend, model, status) "
                                 "VALUES ('judge', 'vicuna80', 'openai', 'm', 'interrupted')")
    after, opened = look(store, answers)
    assert opened and after[:4] == first[:4]
    assert [(r.dataset, r.state) for r in after[4]] == [("vicuna80", "interrupted")]


@pytest.mark.parametrize(("page", "query"), [
    ("app_pages/2_truncation.py", {"dataset": "vicuna80", "judge": "gpt-4"}),
    ("app_pages/1_leaderboard.py", {"dataset": "vicuna80"}),
    ("app_pages/5_judges.py", {"dataset": "vicuna80"}),
    ("app_pages/3_cycles.py", {"dataset": "vicuna80"}),
    ("app_pages/6_data.py", {"dataset": "vicuna80"}),
])
def test_a_full_rerun_of_a_cached_page_opens_no_file_and_a_cli_import_shows_at_the_next(
        page: str, query: dict, shipped_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A full rerun of a page whose results are cached opens no store file while the file is unchanged: the
    sidebar's reads (Truncation), the Leaderboard's look for a stored board (a computed board's miss is not
    asked again of an unchanged file), the dataset's shown version (Judges, Data), Cycles, and the Data page's
    reference-name table (only while its expander is open). A commit by another process (a CLI import) is
    looked for and seen at the next rerun."""
    sys.path.insert(0, str(Path(__file__).parent / "app"))
    from apphelpers import new_app
    from cli_inprocess import run_engine

    monkeypatch.setattr(connection, "UNCHANGED_AFTER_S", SETTLE_S)
    db = tmp_path / "lens.duckdb"
    shutil.copyfile(shipped_db, db)
    opens = []
    real = Store._connect_locked

    def counted(self, deadline):
        opens.append(1)
        return real(self, deadline)

    monkeypatch.setattr(Store, "_connect_locked", counted)
    at = new_app(db, monkeypatch, page, query)
    assert not at.exception
    deadline = time.monotonic() + 60
    while True:  # until a rerun finds every read it needs kept (the first runs' own writes settle first)
        settle()
        opens.clear()
        at.run()
        assert not at.exception
        if not opens or time.monotonic() > deadline:
            break
    assert opens == [], f"a full rerun of {page} on an unchanged store opened the file"
    shown = at.selectbox(key="dataset").options
    csv = tmp_path / "new.csv"
    csv.write_text("prompt_id,model_a,model_b,winner\n1,x,y,A\n2,y,z,B\n3,z,x,tie\n", encoding="utf-8")
    rc = run_engine(["--db", str(db), "import", str(csv), "--dataset", "fresh-one"])
    assert rc.returncode == 0, rc.stderr
    opens.clear()
    at.run()
    assert not at.exception and opens, "the rerun after a commit did not look at the store again"
    assert "fresh-one" in at.selectbox(key="dataset").options and "fresh-one" not in shown
