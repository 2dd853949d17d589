"""Issue 25, friction 8: ``experiment baselines`` as an aligned table printed float residue (1.55e-17,
which switched whole columns to scientific notation) and 200+ character rows (every row repeated its
cell's note). The table now shows rounded numbers and numbered notes; CSV keeps every value exactly."""

from __future__ import annotations

import io
import re

import numpy as np
import pandas as pd
from conftest import run_engine

from engine.cli._common import NOISE

ARGS = ["experiment", "baselines", "--dataset", "vicuna80", "--reference", "arena", "--judge", "gpt-4",
        "--resamples", "5"]
NUMBERS = ("mean", "ci_low", "ci_high", "half_width")


def shown(x: float) -> str:
    """How a reader should see ``x``: 4 decimals, residue within NOISE of 0 as 0 (computed here apart from
    the engine's pandas rounding)."""
    if np.isnan(x):
        return "NaN"
    return f"{0.0 if abs(x) < NOISE else x:.4f}"


def test_baselines_table_is_rounded_narrow_and_agrees_with_the_csv(shipped_db):
    csv = run_engine(["--db", shipped_db, *ARGS, "--format", "csv"], check=True).stdout
    full = pd.read_csv(io.StringIO(csv))
    residue = full[list(NUMBERS)].abs().to_numpy()
    assert ((residue > 0) & (residue < NOISE)).any()  # the data holds the float residue the table hid
    table = run_engine(["--db", shipped_db, *ARGS, "--format", "table"], check=True).stdout
    body, _, legend_text = table.partition("notes:\n")
    lines = body.splitlines()
    assert len(lines) == len(full) + 1  # a pipe gets every row
    assert max(len(line) for line in lines) <= 100, max(lines, key=len)
    assert not re.search(r"\de-\d|\.\d{5}", body)  # no scientific notation, at most 4 decimals
    legend = dict(re.findall(r"^ +\[(\d+)\] (.*)$", legend_text, re.MULTILINE))
    for line, row in zip(lines[1:], full.itertuples(), strict=True):
        tokens = line.split()
        note = tokens.pop() if tokens[-1].startswith("[") else ""
        mean, ci_low, ci_high, half_width, n_draw = tokens[-5:]
        assert [mean, ci_low, ci_high, half_width] == [shown(getattr(row, c)) for c in NUMBERS], line
        assert int(n_draw) == row.n_draw
        assert legend.get(note.strip("[]"), "") == (row.note if isinstance(row.note, str) else ""), line


def test_residue_below_zero_is_shown_as_zero_not_minus_zero():
    """Rounding alone prints -1.55e-17 as -0.0000; the table shows 0.0000 (and ints stay ints)."""
    from engine.cli._common import rounded_for_table

    frame = pd.DataFrame({"x": [-1.55e-17, 1.55e-17, 0.123456, np.nan], "n": [1, 2, 3, 4]})
    text = rounded_for_table(frame).to_string(index=False)
    assert [line.split() for line in text.splitlines()[1:]] == [
        [shown(-1.55e-17), "1"], [shown(1.55e-17), "2"], [shown(0.123456), "3"], ["NaN", "4"]]
    assert "-0" not in text
