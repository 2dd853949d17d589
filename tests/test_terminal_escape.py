"""Issue 23 bug 9: no string from a file or the store reaches the terminal raw.

A CSV header with ``ESC ] 0 ;`` title and ``ESC [2J`` sequences was echoed as-is in "columns not kept",
and model names from an attached Parquet were printed raw by ``leaderboard``. Here the real CLI
process gets names and headers holding OSC / CSI escapes, C1 controls, bidi overrides, a bare CR and a
NUL, and every byte it writes to stdout and stderr (pipes, and a pseudo-terminal for CSV) is checked
for control characters, against a second definition (Unicode categories, character by character).
"""

from __future__ import annotations

import os
import pty
import shutil
import subprocess
import sys
import tty
import unicodedata
from pathlib import Path

import duckdb
import pandas as pd
import pytest
from cli_inprocess import run_engine
from conftest import REPO
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.terminal import EscapedStream, escape_controls

EVIL = [
    "\x1b]0;pwned\x07",  # OSC: set the window title
    "\x1b[2J",  # CSI: clear the screen
    "\x1b]52;c;cHduZWQ=\x07",  # OSC 52: write the clipboard
    "\x9b31m",  # C1 CSI
    "\x9d0;x\x9c",  # C1 OSC ... ST
    "\u202egnp.exe",  # right-to-left override
    "\u2066rtl\u2069",  # isolate
    "a\rb",  # carriage return: overprints the line
    "z\x00y\x7f",  # NUL and DEL
]
UNSAFE = {"Cc", "Cf", "Cs", "Zl", "Zp"}


def unsafe_chars(text: str, keep: str = "\n\t") -> list[str]:
    """The characters of ``text`` a terminal could act on (the test's own definition: by category)."""
    return [f"U+{ord(c):04X}" for c in text if c not in keep and unicodedata.category(c) in UNSAFE]


def by_category(text: str, keep: str = "\n\t") -> str:
    """The expected escaping, one character at a time (no regex)."""
    out = []
    for c in text:
        if c in keep or unicodedata.category(c) not in UNSAFE:
            out.append(c)
        elif ord(c) < 0x100:
            out.append(f"\\x{ord(c):02x}")
        elif ord(c) < 0x10000:
            out.append(f"\\u{ord(c):04x}")
        else:
            out.append(f"\\U{ord(c):08x}")
    return "".join(out)


def test_every_code_point_of_the_unsafe_categories_is_escaped():
    every = [chr(c) for c in range(sys.maxunicode + 1) if unicodedata.category(chr(c)) in UNSAFE]
    missed = [f"U+{ord(c):04X}" for c in every if c not in "\n\t" and escape_controls(c) == c]
    assert not missed, missed[:20]
    assert escape_controls("".join(every)) == by_category("".join(every))


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(codec=None), max_size=40), st.sampled_from(["", "\n\t"]))
def test_escaping_matches_the_category_definition(text, keep):
    escaped = escape_controls(text, keep=keep)
    assert escaped == by_category(text, keep)
    assert not unsafe_chars(escaped, keep)


def test_printable_text_is_untouched():
    text = "gpt-4 · Qwen2.5 7B · 日本語 · naïve · 🏆 · tab\there\nnext line"
    assert escape_controls(text) == text


def test_the_stream_escapes_whatever_is_printed(tmp_path):
    path = tmp_path / "out.txt"
    with open(path, "w", encoding="utf-8") as raw:
        print("title" + EVIL[0], "\ud800", file=EscapedStream(raw))
    assert path.read_text(encoding="utf-8") == "title\\x1b]0;pwned\\x07 \\ud800\n"


# -- the CLI as a process -------------------------------------------------------------------------------

def run_cli(db: Path, *args: str) -> tuple[int, bytes, bytes]:
    proc = subprocess.run([sys.executable, "-m", "engine", "--db", str(db), *args], capture_output=True,
                          cwd=REPO, timeout=300, env={**os.environ, "PYTHONPATH": str(REPO)})
    return proc.returncode, proc.stdout, proc.stderr


def assert_clean(what: str, data: bytes) -> str:
    text = data.decode("utf-8")  # strict: a lone surrogate or a raw C1 byte outside UTF-8 fails here
    bad = unsafe_chars(text)
    assert not bad, f"{what}: raw control characters {bad[:10]} in {text[:600]!r}"
    return text


def on_terminal(db: Path, *args: str) -> bytes:
    """What the CLI writes to stdout when it is a pseudo-terminal (output post-processing off, so the
    bytes are the program's own)."""
    master, slave = pty.openpty()
    tty.setraw(slave)
    proc = subprocess.Popen([sys.executable, "-m", "engine", "--db", str(db), *args], stdout=slave,
                            stderr=subprocess.DEVNULL, cwd=REPO,
                            env={**os.environ, "PYTHONPATH": str(REPO), "COLUMNS": "200"})
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    proc.wait(timeout=300)
    os.close(master)
    return b"".join(chunks)


MODELS = [f"m{i}{e}" for i, e in enumerate(EVIL)]
JUDGE = "judge\x1b[31mred"


def round_robin() -> pd.DataFrame:
    rows = [{"prompt_id": f"p{p}", "model_a": MODELS[i], "model_b": MODELS[j], "judge": JUDGE,
             "winner": "A" if (i + j + p) % 3 else "B"}
            for p in range(3) for i in range(len(MODELS)) for j in range(i + 1, len(MODELS))]
    return pd.DataFrame(rows)


def run_in_process(db: Path, *args: str) -> tuple[int, bytes, bytes]:
    """The command in this process (tests/cli_inprocess.py: stdout and stderr escaped as ``python -m
    engine`` escapes them), its output as the bytes a process writes: without a second interpreter for
    each of the many commands. test_the_cli_process_escapes_its_error_sentence keeps a process."""
    done = run_engine(["--db", db, *args])
    return done.returncode, done.stdout.encode("utf-8"), done.stderr.encode("utf-8")


def shipped_copy(shipped_db: Path, folder: Path) -> Path:
    """A copy of the shipped store (a command on a new file would first import the shipped datasets)."""
    db = folder / "lens.duckdb"
    shutil.copyfile(shipped_db, db)
    return db


@pytest.fixture(scope="module")
def evil_store(tmp_path_factory, shipped_db) -> Path:
    """A store whose verdicts name models and a judge full of escapes, written the way another tool
    or an older version could have: straight into the store's verdict table."""
    folder = tmp_path_factory.mktemp("evil")
    db, clean = shipped_copy(shipped_db, folder), folder / "clean.csv"
    frame = round_robin()
    plain = {m: f"plain{i}" for i, m in enumerate(MODELS)}
    frame.assign(model_a=frame.model_a.map(plain), model_b=frame.model_b.map(plain), judge="plainjudge") \
        .to_csv(clean, index=False)
    rc, _, err = run_in_process(db, "import", str(clean), "--dataset", "evil")
    assert rc == 0, err
    con = duckdb.connect(str(db))
    for name, evil in zip(plain.values(), MODELS, strict=True):
        for col in ("model_a", "model_b"):
            con.execute(f"UPDATE verdicts SET {col} = ? WHERE {col} = ?", [evil, name])
    con.execute("UPDATE verdicts SET judge = ? WHERE dataset = ?", [JUDGE, "evil"])
    con.close()
    return db


@pytest.mark.parametrize("args", [
    ("leaderboard", "--dataset", "evil", "--ranker", "elo"),
    ("graphs", "--dataset", "evil"),
    ("triads", "--dataset", "evil", "--prompt", "p0"),
    ("diagnose", "--dataset", "evil"),
    ("datasets",),
    ("leaderboard", "--dataset", "evil", "--judge", "nosuch"),  # the refusal lists the judges
])
def test_names_from_the_store_are_escaped_by_every_command(evil_store, args):
    rc, out, err = run_in_process(evil_store, *args)
    text = assert_clean("stdout", out) + assert_clean("stderr", err)
    assert "Traceback" not in text
    if args[0] != "datasets":
        assert "\\x1b" in text, text[:500]  # the names were printed, escaped, not dropped


def test_the_cli_process_escapes_its_error_sentence(evil_store):
    rc, out, err = run_cli(evil_store, "leaderboard", "--dataset", "evil", "--judge", "nosuch")
    assert rc == 2 and not out
    text = assert_clean("stderr", err)
    assert text.startswith("error: ") and "judge\\x1b[31mred" in text, text


def test_csv_is_escaped_on_a_terminal_and_exact_in_a_pipe(evil_store):
    shown = on_terminal(evil_store, "leaderboard", "--dataset", "evil", "--format", "csv")
    text = assert_clean("terminal", shown)
    assert "m0\\x1b]0;pwned\\x07" in text
    rc, out, _ = run_in_process(evil_store, "leaderboard", "--dataset", "evil", "--format", "csv")
    assert rc == 0
    for name in MODELS:  # data in a pipe or a file is exact
        assert name.encode("utf-8") in out, name


def test_a_header_of_escapes_is_reported_escaped(tmp_path, shipped_db):
    path = tmp_path / "evil_header.csv"
    header = ",".join(f'"extra{i}{e}"' for i, e in enumerate(EVIL) if "\r" not in e and "\x00" not in e)
    n = header.count(",") + 1
    path.write_text("prompt_id,model_a,model_b,winner," + header + "\n"
                    + "p1,m1,m2,A," + ",".join("x" * n) + "\n", encoding="utf-8")
    rc, out, err = run_in_process(shipped_copy(shipped_db, tmp_path), "import", str(path), "--dataset", "hdr",
                                  "--check")
    text = assert_clean("stdout", out) + assert_clean("stderr", err)
    assert "extra0\\x1b]0;pwned\\x07" in text, text[:800]


def test_model_names_from_an_attached_parquet_reach_the_terminal_escaped(tmp_path, shipped_db):
    files = tmp_path / "evil.parquet"
    round_robin().to_parquet(files)
    db = shipped_copy(shipped_db, tmp_path)
    rc, out, err = run_in_process(db, "datasets", "attach", "evil", str(files))
    assert_clean("stdout", out) + assert_clean("stderr", err)
    if rc != 0:  # attach may refuse such names: then in one escaped sentence
        assert rc == 2 and err.startswith(b"error: ") and b"Traceback" not in err
        return
    rc, out, err = run_in_process(db, "leaderboard", "--dataset", "evil")
    assert rc == 0, err
    assert "\\x9b31m" in assert_clean("stdout", out) + assert_clean("stderr", err)
