"""Output paths that are not regular files are written in place or refused, never replaced
(issue 23, bug 8): ``datasets export NAME PATH`` and ``import --rejected PATH``.

The old writer made a temp file and renamed it over PATH: a FIFO, a symlink to a device or the
device itself became a regular file and success was reported (as root, ``--rejected /dev/full``
replaced the machine's ``/dev/full``). Each case here checks the file type of PATH after the command
(``os.lstat``: the link itself), what reached the other end, and the exit status. No test writes to
a real ``/dev`` entry through the old code: the devices are reached through symlinks in a temp
folder, so the old code replaced only the link.
"""

from __future__ import annotations

import os
import shutil
import socket
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from engine.ingest.output_files import check_output
from tests.conftest import REPO, run_engine

ROWS = "prompt_id,model_a,model_b,winner\np1,a,b,A\np2,a,c,tie\np3,b,c,nobody\n"


@pytest.fixture(scope="module")
def db(shipped_db: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One store for the file (a copy of the shipped one: a fresh store would import it first)
    holding dataset ``d``: the two good rows of ROWS (the third is rejected)."""
    folder = tmp_path_factory.mktemp("outputs")
    db = folder / "lens.duckdb"
    shutil.copy(shipped_db, db)
    src = folder / "v.csv"
    src.write_text(ROWS)
    res = run_engine(["--db", db, "import", src, "--dataset", "d", "--skip-invalid",
                      "--rejected", folder / "first.rejected.csv"])
    assert res.returncode == 0, res.stderr
    return db


def _read_fifo(path: Path) -> tuple[threading.Thread, list[bytes]]:
    """A reader on the FIFO's other end, in a thread (an open for writing blocks until one exists)."""
    got: list[bytes] = []

    def read() -> None:
        with open(path, "rb") as fh:
            got.append(fh.read())

    t = threading.Thread(target=read, daemon=True)
    t.start()
    return t, got


def test_export_into_a_fifo_writes_through_it(db, tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    reader, got = _read_fifo(fifo)
    res = run_engine(["--db", db, "datasets", "export", "d", fifo, "--format", "csv"])
    reader.join(20)
    assert res.returncode == 0, res.stderr
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)  # old: a regular file now
    assert got and got[0].startswith(b"judge,prompt_id") and got[0].count(b"\n") == 3
    assert "wrote 2 verdicts" in res.stderr  # the target may be this process's stdout


def test_rejected_rows_into_a_fifo_write_through_it(db, tmp_path):
    src = tmp_path / "v.csv"
    src.write_text(ROWS)
    fifo = tmp_path / "rejected"
    os.mkfifo(fifo)
    reader, got = _read_fifo(fifo)
    res = run_engine(["--db", db, "import", src, "--dataset", "r", "--skip-invalid", "--rejected", fifo])
    reader.join(20)
    assert res.returncode == 0, res.stderr
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert got and b"nobody" in got[0]


def test_symlink_to_a_device_stays_a_symlink(db, tmp_path):
    link = tmp_path / "null.csv"
    link.symlink_to("/dev/null")
    res = run_engine(["--db", db, "datasets", "export", "d", link])
    assert res.returncode == 0, res.stderr
    assert os.path.islink(link) and os.readlink(link) == "/dev/null"  # old: a regular file
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


def test_a_full_device_is_one_sentence_and_stays_a_device(db, tmp_path):
    link = tmp_path / "full.csv"
    link.symlink_to("/dev/full")
    src = tmp_path / "v.csv"
    src.write_text(ROWS)
    for args in (["datasets", "export", "d", link],
                 ["import", src, "--dataset", "e", "--skip-invalid", "--rejected", link]):
        res = run_engine(["--db", db, *args])
        assert res.returncode == 2, (args, res.stdout, res.stderr)  # old: 0, the link replaced
        assert "No space left on device" in res.stderr and "Traceback" not in res.stderr
        assert os.path.islink(link) and stat.S_ISCHR(os.stat(link).st_mode)


def test_symlink_to_a_regular_file_replaces_the_target_and_keeps_the_link(db, tmp_path):
    target = tmp_path / "real.csv"
    target.write_text("old\n")
    link = tmp_path / "link.csv"
    link.symlink_to(target)
    res = run_engine(["--db", db, "datasets", "export", "d", link])
    assert res.returncode == 0, res.stderr
    assert os.path.islink(link) and target.read_text().startswith("judge,prompt_id")
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []  # no temp file left


def test_a_socket_is_refused_in_one_sentence(db, tmp_path):
    path = tmp_path / "s.sock"
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(path))
        res = run_engine(["--db", db, "datasets", "export", "d", path, "--format", "csv"])
    assert res.returncode == 2
    want = f"error: Cannot write the verdicts of 'd' to {path}: it is a socket; give a file name."
    assert res.stderr.strip() == want
    assert stat.S_ISSOCK(os.lstat(path).st_mode)


def test_open_stream_redirected_to_a_file_gets_the_export(db, tmp_path):
    """``> out.csv`` then ``/dev/fd/1`` (what ``/dev/stdout`` links to): the export is appended to the
    open stream; the file the shell opened is not replaced behind its back, and the summary line goes
    to stderr. (``/dev/fd/1``, not ``/dev/stdout``: the old code, run as root, renamed its temp file
    over ``/dev/stdout`` itself; a rename into ``/proc`` fails harmlessly.)"""
    out = tmp_path / "out.csv"
    with open(out, "wb") as fh:
        res = subprocess.run([sys.executable, "-m", "engine", "--db", str(db), "datasets", "export", "d",
                              "/dev/fd/1", "--format", "csv"], stdout=fh, stderr=subprocess.PIPE,
                             cwd=REPO, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    text = out.read_text()
    assert text.startswith("judge,prompt_id") and text.count("\n") == 3 and "wrote" not in text
    assert check_output("/dev/stdout", "x").in_place
