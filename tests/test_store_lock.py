"""Several real processes on one real store file: never two writers inside it at once, never a damaged
file (engine/store/file_lock.py).

The bug these tests kill: a process holding a store, that constructs a second ``Store`` of the same path
(the app per session; any command opening the store twice), read the file's headers through a
descriptor of its own and closed it, and the kernel dropped DuckDB's record lock with it: another
process could then open the file for writing while the first still wrote to it.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import duckdb

from engine.store.connection import Store

REPO = Path(__file__).resolve().parents[1]
TIMEOUT_S = 120  # per process: a bound for a hung run, never a timing assertion

HOLDER = textwrap.dedent("""
    import sys
    from engine.store.connection import Store
    path = sys.argv[1]
    first = Store(path)  # holds the file from open to close, as a command does
    with first.session():
        first.con.execute("CREATE TABLE IF NOT EXISTS lock_probe (who VARCHAR)")
        second = Store(path, keep_open=False)  # the app opens the store once per session
        print("holding", flush=True)
        sys.stdin.readline()  # until the test has tried to get in
        first.con.execute("INSERT INTO lock_probe VALUES ('holder')")
    first.close()
    second.close()
""")

INTRUDER = textwrap.dedent("""
    import sys
    from engine.store.connection import Store, StoreBusy
    try:
        store = Store(sys.argv[1], lock_wait_s=0)
        store.con.execute("INSERT INTO lock_probe VALUES ('intruder')")
        store.close()
    except StoreBusy as exc:
        print(exc)
        sys.exit(3)
""")

TURNS = textwrap.dedent("""
    import sys
    from engine.store.connection import Store
    path, tag, turns = sys.argv[1], sys.argv[2], int(sys.argv[3])
    store = Store(path, keep_open=False, lock_wait_s=60)  # a judge run: the file let go between writes
    for k in range(turns):
        with store.session():
            store.con.execute("SELECT 1")  # inside the file from here to the session's end
            Store(path, keep_open=False)  # a second store of the same file in this process, as the app
            store.con.execute("INSERT INTO turns SELECT ?, range, repeat('x', 300) FROM range(3000)", [tag])
            got = store.con.execute("SELECT count(*) FROM turns WHERE tag = ?", [tag]).fetchone()[0]
            assert got == 3000 * (k + 1), (tag, k, got)
    store.close()
""")


def _python(code: str, *args: str, **kw) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", code, *args], cwd=REPO, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kw)


def test_no_second_writer_while_a_process_holds_the_store(tmp_path):
    """While one process holds the store (and has opened it a second time, which read its headers),
    another process is told the store is busy instead of writing into it; the holder's write lands."""
    db = tmp_path / "lens.duckdb"
    Store(db).close()
    holder = _python(HOLDER, str(db), stdin=subprocess.PIPE)
    try:
        assert holder.stdout.readline().strip() == "holding", holder.stderr.read()
        intruder = _python(INTRUDER, str(db))
        out, err = intruder.communicate(timeout=TIMEOUT_S)
        assert intruder.returncode == 3, f"a second process wrote into a held store: {out} {err}"
        assert "in use by another process" in out
    finally:
        holder.stdin.write("go\n")
        holder.stdin.close()
        holder.wait(timeout=TIMEOUT_S)
    assert holder.returncode == 0, holder.stderr.read()
    # once the holder let go, the same intruder gets in
    late = _python(INTRUDER, str(db))
    late.communicate(timeout=TIMEOUT_S)
    assert late.returncode == 0
    con = duckdb.connect(str(db), read_only=True)
    who = sorted(r[0] for r in con.execute("SELECT who FROM lock_probe").fetchall())
    assert who == ["holder", "intruder"]
    con.close()


def test_processes_taking_turns_leave_a_whole_file(tmp_path):
    """Three processes write by turns (each opening the store a second time on every turn); afterwards a
    fresh read-only connection reads every table whole and finds every row each process wrote."""
    db = tmp_path / "lens.duckdb"
    store = Store(db)
    store.con.execute("CREATE TABLE turns (tag VARCHAR, i BIGINT, pad VARCHAR)")
    store.close()
    turns, tags = 8, ["a", "b", "c"]
    procs = [_python(TURNS, str(db), tag, str(turns)) for tag in tags]
    errors = []
    for p in procs:
        _out, err = p.communicate(timeout=TIMEOUT_S)
        if p.returncode:
            errors.append(err.strip().splitlines()[-1] if err.strip() else f"exit {p.returncode}")
    assert not errors, errors
    con = duckdb.connect(str(db), read_only=True)
    for (table,) in con.execute("SELECT table_name FROM information_schema.tables").fetchall():
        con.execute(f'SELECT * FROM "{table}"').fetchall()  # every block read: a damaged one raises
    counts = dict(con.execute("SELECT tag, count(*) FROM turns GROUP BY tag").fetchall())
    con.close()
    assert counts == {tag: 3000 * turns for tag in tags}


def test_a_lock_file_that_cannot_be_made_is_one_sentence(tmp_path):
    """A folder where the lock file goes: one sentence naming it, and the store file left untouched."""
    import pytest

    from engine.store.connection import StoreError

    db = tmp_path / "lens.duckdb"
    Store(db).close()
    before = db.read_bytes()
    (tmp_path / "lens.duckdb.lock").unlink()  # left by the first open (a lock file is never removed)
    (tmp_path / "lens.duckdb.lock").mkdir()
    with pytest.raises(StoreError, match=r"its lock file .*lens\.duckdb\.lock cannot be made"):
        Store(db)
    assert db.read_bytes() == before


def test_a_store_whose_migration_fails_holds_neither_its_file_nor_its_lock(tmp_path, monkeypatch):
    """open_store holds the file from the migration through the first-use steps (keep_open=True until
    then): a migration that fails lets both go at once, even while the exception (and the half-made store
    in its traceback) is still referenced, for the app's store (keep_open=False) and the CLI's alike."""
    import pytest

    from engine.ingest.shipped import open_store
    from engine.store import connection, file_lock

    def broken(con):
        raise RuntimeError("migration failed")

    for keep_open in (False, True):
        db = tmp_path / f"m-{keep_open}.duckdb"
        monkeypatch.setattr(connection, "migrate", broken)
        with pytest.raises(RuntimeError) as caught:
            open_store(db, keep_open=keep_open, ensure_default=False)
        assert caught.value is not None  # the exception and its traceback are alive here
        assert file_lock.held_block_size(db)[0] is False, keep_open
        monkeypatch.undo()
        duckdb.connect(str(db)).close()  # no DuckDB lock left in this process either
