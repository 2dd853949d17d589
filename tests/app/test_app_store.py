"""The app holds the store file only while a page runs, so the command line can write to the same
store while the app is open; a store held by another process past the wait is a warning, not a crash."""

from __future__ import annotations

import shutil
import subprocess
import sys

from apphelpers import assert_clean, new_app
from conftest import REPO


def _sidebar_datasets(at) -> list[str]:
    return list(at.sidebar.selectbox(key="dataset").options)


def test_cli_imports_while_the_app_is_open_and_the_app_shows_it(shipped_db, tmp_path, monkeypatch):
    db = tmp_path / "lens.duckdb"
    shutil.copyfile(shipped_db, db)
    at = new_app(db, monkeypatch)
    assert_clean(at)
    assert _sidebar_datasets(at) == ["chatbot_arena_2024_08_14", "vicuna80"]  # both shipped (issue 25)
    csv = tmp_path / "extra.csv"
    csv.write_text("prompt_id,model_a,model_b,winner\n1,x,y,A\n1,y,z,A\n1,x,z,B\n", encoding="utf-8")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "engine",
            "--db",
            str(db),
            "--lock-wait",
            "0",
            "import",
            str(csv),
            "--dataset",
            "extra",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr  # no wait needed: the app let go of the file after its run
    at.run()
    assert_clean(at)
    assert _sidebar_datasets(at) == ["chatbot_arena_2024_08_14", "extra", "vicuna80"]


def test_a_store_held_by_another_process_is_a_warning(shipped_db, tmp_path, monkeypatch):
    db = tmp_path / "lens.duckdb"
    shutil.copyfile(shipped_db, db)
    monkeypatch.setenv("LENS_LOCK_WAIT", "0.3")
    at = new_app(db, monkeypatch)
    assert_clean(at)
    holder = subprocess.Popen(
        [sys.executable, "-c",
         f"import duckdb, time; c = duckdb.connect({str(db)!r}); print('held', flush=True); time.sleep(60)"],
        stdout=subprocess.PIPE, text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        at.run()
        assert [e.message for e in at.exception] == []
        warnings = [w.value for w in at.warning]
        assert any("in use by another process" in w for w in warnings), warnings
    finally:
        holder.kill()
        holder.wait(timeout=60)
    at.run()  # the other process has gone: the page is back
    assert_clean(at)
    assert not [w.value for w in at.warning if "in use by another process" in w.value]


def test_a_store_reached_without_naming_one_is_not_the_checkouts():
    """A test that reaches the app's store before new_app has set $LENS_DB (get_store() first, then the
    app) opens tests/conftest.py's temp default, never the checkout's data/lens.duckdb: a converted test
    once imported a dataset into that file and then failed against the store it meant. Fails without
    conftest's default (the path resolves to data/lens.duckdb inside the checkout)."""
    from engine.store.connection import resolve_db_path

    assert not resolve_db_path().resolve().is_relative_to(REPO.resolve())
