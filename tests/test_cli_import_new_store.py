"""``import`` into a store that does not exist yet seeds it in a thread beside validation
(``shipped.NewStoreSeed``, issue 26 point 6): the store must come out as the serial order made it
(validate, then open and seed, then store): every table's rows, the sequences' last values, the
command's output and exit code, for an import that stores rows (some rejected) and for one refused
before any row is checked (its ``import_log`` row written into the new store, as before)."""

from __future__ import annotations

import threading

import pytest
from cli_inprocess import run_engine
from store_snapshot import store_rows

from engine.ingest import shipped


def _import(tmp_path, name: str, body: str, monkeypatch, serial: bool):
    src = tmp_path / f"{name}.csv"
    src.write_text(body)
    db = tmp_path / f"{name}-{'serial' if serial else 'thread'}.duckdb"
    seeded: list[str] = []  # the stores opened off the main thread (the real open_store, its calls noted)
    real_open = shipped.open_store
    with monkeypatch.context() as m:
        m.setattr(shipped, "open_store",
                  lambda path, **kw: (threading.current_thread() is threading.main_thread()
                                      or seeded.append(str(path)), real_open(path, **kw))[1])
        if serial:  # the reference: no thread, the store made by the open after validation
            m.setattr(shipped.NewStoreSeed, "__init__", lambda self, db, lock_wait_s=0.0: setattr(
                self, "thread", None))
        proc = run_engine(["--db", db, "import", src, "--dataset", "d", "--skip-invalid",
                           "--rejected", tmp_path / f"{name}-{serial}.rej.csv"])
    text = (proc.stdout + proc.stderr).replace(str(db), "DB").replace(f"-{serial}.rej", ".rej")
    assert seeded == ([] if serial else [str(db)])
    return proc.returncode, text, store_rows(db, skip_columns=("source_file", "source", "detail"))


@pytest.mark.parametrize("name, body", [
    ("stored", "prompt_id,model_a,model_b,winner,judge\n" + "".join(
        f"p{i},m{i % 3},m{i % 3 + 3},{'AB'[i % 2] if i % 4 else 'nobody'},j{i % 2}\n" for i in range(30))),
    ("refused", "prompt_id,winner\np1,A\n"),  # no model columns: refused before any row is checked
])
def test_a_new_store_seeded_beside_validation_equals_the_serial_one(tmp_path, monkeypatch, name, body):
    thread = _import(tmp_path, name, body, monkeypatch, serial=False)
    serial = _import(tmp_path, name, body, monkeypatch, serial=True)
    assert thread[0] == serial[0] == (0 if name == "stored" else 2)
    assert thread[1] == serial[1]
    assert thread[2] == serial[2]
    rows = thread[2]
    assert isinstance(rows, dict) and rows["init_log"] and rows["import_log"]  # seeded, and the import logged
