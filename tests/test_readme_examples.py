"""The command-line examples printed in README.md, "Command line", are what the CLI prints today."""

from __future__ import annotations

import io
import shlex
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

from engine.__main__ import main

README = Path(__file__).resolve().parents[1] / "README.md"


def readme_transcripts() -> list[tuple[str, list[str]]]:
    """(command after ``$ python -m engine``, the lines shown under it) of each ``$`` line in README
    blocks."""
    out, cmd, shown, in_block = [], None, [], False
    for line in README.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            if cmd is not None:
                out.append((cmd, shown))
            cmd, shown, in_block = None, [], not in_block
            continue
        if in_block and line.startswith("$ python -m engine "):
            if cmd is not None:
                out.append((cmd, shown))
            cmd, shown = line[len("$ python -m engine "):], []
        elif in_block and cmd is not None:
            shown.append(line)
    return out


def test_readme_leaderboard_table_example_is_current(shipped_db):
    """Every row and note the README shows for the bootstrap table example appears, token for token, in the
    output."""
    [(cmd, shown)] = [
        (c, s) for c, s in readme_transcripts() if "--bootstrap 200" in c and "--format table" in c
    ]
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        assert main(["--db", str(shipped_db), *shlex.split(cmd)]) == 0
    printed = [ln.split() for ln in (out.getvalue() + err.getvalue()).splitlines()]
    rows = [ln.split() for ln in shown if ln.strip() and ln.strip() != "…"]
    assert rows, shown
    for row in rows:
        assert row in printed, (row, out.getvalue())
