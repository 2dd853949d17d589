"""A line longer than the longest row (``LINE_MAX_BYTES``) is one rejected row, named by its line,
in CSV and JSON Lines alike, at the real limit (issue 22 live bug 2, issue 23 item 1).

``LineFeed`` meets such a line in two places: inside the 4 MiB block it reads plus one bounded
``readline`` (a line up to about 20.8 MB: cut in ``_split``), or running on past both (dropped up
to its end in ``_read_block``). On ``fa0c159`` the second place called a local boolean that
shadowed ``too_long()``: ``import`` exited 1 with a TypeError traceback. And a JSON Lines reader
took the cut line's blank text for a blank line and dropped the row in silence.
The files are written in 1 MiB pieces to a temporary folder; nothing holds more than the reader does.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import run_engine

from engine.ingest.importer import validate_file
from engine.ingest.limits import LINE_MAX_BYTES
from engine.ingest.line_reader import BLOCK_BYTES

PIECE = 2**20
RUNS_ON = BLOCK_BYTES + LINE_MAX_BYTES + PIECE
"""Longer than the block plus the bounded readline: reaches ``_read_block``'s drop."""
CUT = LINE_MAX_BYTES + PIECE
"""Over the limit but within block + readline: cut in ``_split``."""


def _write(
    path: Path, head: list[str], long_prefix: str, long_len: int, long_suffix: str, tail: list[str]
) -> Path:
    with open(path, "w", encoding="ascii", newline="") as fh:
        fh.write("".join(line + "\n" for line in head))
        fh.write(long_prefix)
        left = long_len - len(long_prefix) - len(long_suffix)
        while left > 0:
            fh.write("z" * min(PIECE, left))
            left -= PIECE
        fh.write(long_suffix + "\n")
        fh.write("".join(line + "\n" for line in tail))
    return path


def _sentence(name: str, line: int) -> str:
    mib = LINE_MAX_BYTES // 2**20
    return (f"{name} line {line}: the line is longer than {mib} MiB, the longest a verdict row may be; "
            "it was skipped.")


def test_csv_import_of_a_line_running_past_block_and_readline_refuses_the_row(tmp_path: Path) -> None:
    path = _write(tmp_path / "long.csv", ["prompt_id,model_a,model_b,winner", "p1,a,b,A"], "p2,", RUNS_ON,
                  ",b,A", ["p3,a,b,B"])
    out = run_engine(["--db", str(tmp_path / "s.duckdb"), "import", str(path), "--dataset", "d",
                      "--skip-invalid", "--rejected", str(tmp_path / "rej.csv")])
    assert "Traceback" not in out.stderr and out.returncode == 0, out.stderr[-2000:]
    assert _sentence("long.csv", 3) in out.stdout + out.stderr
    assert "read 3 = stored 2 + rejected 1" in out.stdout


@pytest.mark.parametrize("length", [CUT, RUNS_ON], ids=["cut-in-split", "runs-on"])
def test_jsonl_line_over_the_limit_is_a_rejected_row_not_dropped(tmp_path: Path, length: int) -> None:
    row = '{"prompt_id": "%s", "model_a": "a", "model_b": "b", "winner": "A"}'
    path = _write(tmp_path / "long.jsonl", [row % "p1"], '{"prompt_id": "p2", "explanation": "', length,
                  '", "model_a": "a", "model_b": "b", "winner": "A"}', [row % "p3"])
    rep = validate_file(path, "long.jsonl", dataset="d")
    assert (rep.rows_read, rep.n_good, rep.n_rejected) == (3, 2, 1)
    assert rep.sentences() == [_sentence("long.jsonl", 2)]
