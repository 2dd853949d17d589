"""tests/cli_inprocess.py's ``run_engine`` gives what ``python -m engine`` as a process gives: the same
exit code, stdout and stderr, for a sample of command forms (a table, a LensError, an argparse error, a
help text, the store named by $LENS_DB, names holding terminal controls),
and a call leaves nothing behind for the next one (environment, folder, argv, log handlers, stdin).

The processes are started together before the in-process calls run, so the file's wall time is about one
process start-up; each comparison is exact (no normalisation of either side).
"""

from __future__ import annotations

import fcntl
import logging
import os
import shutil
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest
from cli_inprocess import REPO, run_engine

from engine.ingest.importer import store_report, validate_file
from engine.store.connection import Store

CONTROL = "\x1b]0;owned\x07\u202e"
"""A terminal title sequence, a bell and a bidi override: the process escapes all three."""


@pytest.fixture(scope="module")
def stores(tmp_path_factory, shipped_db) -> dict[str, Path]:
    """A copy of the shipped store (its first-use import done, so no command writes it again) with one
    more small dataset (a cycle and a tie, two judges)."""
    tmp = tmp_path_factory.mktemp("cli_inprocess")
    src = tmp / "v.csv"
    src.write_text("prompt_id,model_a,model_b,winner,judge\n"
                   "1,a,b,A,j1\n1,b,c,A,j1\n1,c,a,A,j1\n2,a,b,tie,j2\n2,a,c,B,j2\n3,b,c,B,j1\n",
                   encoding="utf-8")
    db = tmp / "s.duckdb"
    shutil.copyfile(shipped_db, db)
    with Store(db) as store:
        store_report(store, validate_file(src, dataset="d"), "d")
    return {"db": db}


def _cases(db: Path) -> dict[str, tuple[list, dict | None]]:
    db = str(db)
    bare = {k: v for k, v in os.environ.items() if k not in ("LENS_DB", "COLUMNS", "LINES")}
    return {
        "table": (["--db", db, "leaderboard", "--dataset", "d", "--format", "csv"], None),
        "lens error with controls, store from the environment": (
            ["leaderboard", "--dataset", f"no{CONTROL}such"], {**bare, "LENS_DB": db}),
        "argparse error with controls": (["--db", db, "leaderboard", f"--no-such-option{CONTROL}"], None),
        "help": (["diagnose", "--help"], bare),
    }


@pytest.fixture
def narrow_terminal_stdout(monkeypatch):
    """sys.__stdout__ on a 50-column terminal, as when pytest runs in one: a captured process still sizes
    its help for a pipe (80 columns), so the in-process call must not ask the test's terminal."""
    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.delenv("LINES", raising=False)
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 50, 0, 0))
    tty = os.fdopen(slave, "w")
    monkeypatch.setattr(sys, "__stdout__", tty)
    assert shutil.get_terminal_size().columns == 50
    yield
    tty.close()
    os.close(master)


def test_in_process_calls_give_what_the_process_gives(stores, narrow_terminal_stdout, tmp_path):
    """Each process reads its own copy of the store and the in-process calls one more (no command waits
    for another's lock, and none is served from a cache another filled); no output names the file."""
    procs = {}
    for k, name in enumerate(_cases(stores["db"])):
        own = tmp_path / f"p{k}.duckdb"
        shutil.copyfile(stores["db"], own)
        argv, env = _cases(own)[name]
        procs[name] = subprocess.Popen([sys.executable, "-m", "engine", *map(str, argv)], cwd=REPO, env=env,
                                       stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                       stderr=subprocess.PIPE, text=True)
    mine = tmp_path / "inner.duckdb"
    shutil.copyfile(stores["db"], mine)
    inner = {name: run_engine(argv, env=env) for name, (argv, env) in _cases(mine).items()}
    for name, proc in procs.items():
        out, err = proc.communicate(timeout=300)
        got = inner[name]
        assert (got.returncode, got.stdout, got.stderr) == (proc.returncode, out, err), name
    # the sample covers what it claims: each form's outcome, on both sides
    assert inner["table"].returncode == 0 and inner["table"].stdout.startswith("rank,model,")
    helped = inner["help"]
    assert helped.returncode == 0 and helped.stdout.startswith("usage: python -m engine diagnose")
    for name in ("lens error with controls, store from the environment", "argparse error with controls"):
        escaped = inner[name]
        assert escaped.returncode == 2 and "\\x1b]0;owned\\x07\\u202e" in escaped.stderr, name
        assert not any(c in escaped.stderr for c in "\x1b\x07\u202e"), name
    # the sentence lists the datasets of the store $LENS_DB names
    assert "(datasets: chatbot_arena_2024_08_14, d, vicuna80)" in inner[
        "lens error with controls, store from the environment"].stderr


def test_a_call_leaves_nothing_for_the_next(stores, monkeypatch):
    monkeypatch.delenv("LENS_DB", raising=False)
    root = logging.getLogger()
    before = (dict(os.environ), os.getcwd(), list(sys.argv), list(root.handlers), sys.stdin, sys.__stdout__)
    db = str(stores["db"])
    first = run_engine(["datasets", "--format", "csv"], env={**os.environ, "LENS_DB": db, "COLUMNS": "40"})
    assert first.returncode == 0 and first.stdout.splitlines()[2].startswith("d,")
    assert (dict(os.environ), os.getcwd(), list(sys.argv), list(root.handlers), sys.stdin,
            sys.__stdout__) == before
    monkeypatch.setenv("LENS_TEST_CALLERS_OWN", "x")
    assert run_engine(["--db", db, "leaderboard", "--dataset", "no-such"]).returncode == 2
    assert os.environ.get("LENS_TEST_CALLERS_OWN") == "x"  # the caller's own environment is kept


def test_a_command_that_sets_a_variable_does_not_leave_it_set(stores, monkeypatch):
    """The local judge's modules set HF_HUB_OFFLINE when imported; a command run in-process that sets a
    variable must not change the environment the next command sees (a new process would not)."""
    import engine.cli.datasets as datasets_cli

    monkeypatch.delenv("LENS_TEST_LEAK", raising=False)
    real = datasets_cli.register

    def register_and_set(sub):
        os.environ["LENS_TEST_LEAK"] = "1"
        return real(sub)

    monkeypatch.setattr(datasets_cli, "register", register_and_set)
    assert run_engine(["--db", stores["db"], "datasets"]).returncode == 0
    assert "LENS_TEST_LEAK" not in os.environ


def test_an_unexpected_exception_is_exit_1_with_its_traceback(stores, monkeypatch):
    import engine.cli.datasets as datasets_cli

    def broken(sub):
        raise RuntimeError("planted")

    monkeypatch.setattr(datasets_cli, "register", broken)
    done = run_engine(["--db", stores["db"], "datasets"])
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.startswith("Traceback (most recent call last):")
    assert "RuntimeError: planted" in done.stderr
