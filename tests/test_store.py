"""The store: refuses files that are not DuckDB databases, releases its lock between sessions, and
waits for (or clearly reports) another process that holds the file."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
from cli_inprocess import run_engine

from engine.errors import LensError
from engine.ingest.shipped import open_store
from engine.store.connection import Store, StoreBusy, StoreError

REPO = Path(__file__).resolve().parent.parent


def _hold_lock(path: Path, seconds: float) -> subprocess.Popen:
    """A second process that opens the file for writing, says so, and keeps it for ``seconds``."""
    code = (
        "import duckdb, sys, time\n"
        f"con = duckdb.connect({str(path)!r})\n"
        "con.execute('CREATE TABLE IF NOT EXISTS other_process (x INTEGER)')\n"
        "con.execute('INSERT INTO other_process VALUES (42)')\n"
        "print('held', flush=True)\n"
        f"time.sleep({seconds})\n"
        "con.close()\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "held"
    return proc


def test_a_csv_file_is_refused_and_left_unchanged(tmp_path: Path) -> None:
    csv = tmp_path / "verdicts.csv"
    csv.write_text("prompt_id,model_a,model_b,winner\n1,a,b,A\n", encoding="utf-8")
    before = csv.read_bytes()
    with pytest.raises(StoreError, match="is not a DuckDB database"):
        Store(csv)
    assert csv.read_bytes() == before


def test_a_folder_and_an_empty_file_are_refused(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="is a folder"):
        Store(tmp_path)
    empty = tmp_path / "empty.duckdb"
    empty.touch()
    with pytest.raises(StoreError, match="is not a DuckDB database"):
        Store(empty)


def test_cli_with_a_csv_as_db_says_so_and_stores_nothing(tmp_path: Path) -> None:
    csv = tmp_path / "hdr.csv"
    csv.write_text("prompt_id,model_a,model_b,winner\n1,a,b,A\n", encoding="utf-8")
    before = csv.read_bytes()
    proc = run_engine(["--db", csv, "import", csv, "--dataset", "lost"])
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert proc.stderr.strip().count("\n") == 0 and "is not a DuckDB database" in proc.stderr
    assert csv.read_bytes() == before


def test_a_released_store_lets_another_process_write_and_then_sees_it(tmp_path: Path) -> None:
    path = tmp_path / "lens.duckdb"
    store = Store(path, keep_open=False)
    assert not store.is_open  # the constructor's session (migrations) released the file
    proc = _hold_lock(path, 0.0)
    assert proc.wait(timeout=60) == 0
    with store.session():
        assert store.con.execute("SELECT x FROM other_process").fetchall() == [(42,)]
        assert store.is_open
    assert not store.is_open


def test_nested_sessions_release_only_at_the_outermost(tmp_path: Path) -> None:
    store = Store(tmp_path / "lens.duckdb", keep_open=False)
    with store.session():
        with store.session():
            store.datasets()
        assert store.is_open
        with store.transaction() as cur:
            cur.execute("SELECT 1")
        assert store.is_open
    assert not store.is_open


def test_a_held_file_is_waited_for(tmp_path: Path) -> None:
    path = tmp_path / "lens.duckdb"
    Store(path).close()
    proc = _hold_lock(path, 0.75)  # held from its "held" on: well over the 0.2 s asserted (was 1.5 s)
    started = time.monotonic()
    store = Store(path, keep_open=False, lock_wait_s=60)
    waited = time.monotonic() - started
    proc.wait(timeout=60)
    assert waited > 0.2  # it could only open once the other process let go
    with store.session():
        assert store.con.execute("SELECT x FROM other_process").fetchall() == [(42,)]


def test_a_held_file_without_waiting_is_one_clear_sentence(tmp_path: Path) -> None:
    path = tmp_path / "lens.duckdb"
    Store(path).close()
    proc = _hold_lock(path, 30)
    try:
        with pytest.raises(StoreBusy) as info:
            Store(path)
        assert isinstance(info.value, LensError)
        message = str(info.value)
        assert "in use by another process" in message and "\n" not in message
    finally:
        proc.kill()
        proc.wait(timeout=60)


def test_keep_open_store_holds_the_file(tmp_path: Path) -> None:
    path = tmp_path / "lens.duckdb"
    store = open_store(path, ensure_default=False)
    try:
        proc = subprocess.run(
            [sys.executable, "-c", f"import duckdb; duckdb.connect({str(path)!r})"],
            capture_output=True, text=True, timeout=60,
        )
        assert proc.returncode != 0 and "lock" in proc.stderr.lower()
    finally:
        store.close()
    proc = subprocess.run(
        [sys.executable, "-c", f"import duckdb; duckdb.connect({str(path)!r}).close()"],
        capture_output=True, text=True, timeout=60,
    )
    assert proc.returncode == 0, proc.stderr


def test_a_damaged_store_is_reported_as_damaged_not_as_busy(tmp_path: Path) -> None:
    """A store whose first data block no longer matches its checksum (as a write cut short by a full
    disk leaves it) is one "Cannot open the store" sentence naming DuckDB's reason, at once: not
    "in use by another process" (DuckDB's message says "block", which holds "lock")."""
    path = tmp_path / "lens.duckdb"
    Store(path).close()
    block_start = 3 * 4096  # after DuckDB's main header and its two database headers
    with open(path, "r+b") as fh:
        fh.seek(block_start + 64)
        fh.write(b"\xff" * 4096)
    with pytest.raises(StoreError) as info:
        Store(path, keep_open=False, lock_wait_s=0)
    assert not isinstance(info.value, StoreBusy)
    message = str(info.value)
    assert message.startswith(f"Cannot open the store at {path}: ") and "checksum" in message
    assert "in use by another process" not in message
