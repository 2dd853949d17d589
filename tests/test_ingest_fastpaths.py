"""The import's cheaper paths (issue 26 point 6) against what they replace, on data that separates them.

- ``cells.name_suspects`` on an all-ASCII column tests "not printable" instead of the control-character
  pattern: checked here against the pattern on every ASCII character, alone and inside a name.
- A batch whose valid rows carry no text skips the texts' tables: a file whose only texts are in a
  later batch, or only on rejected rows, stages exactly the prompts and answers a brute-force pass over
  the file's rows gives (first valid text per key wins).
- The style counts' check for a column that is all None counts the Nones in C: checked against a
  reading cell by cell on absent, sparse and odd columns (pandas' NA, an array in a cell).
- ``limits.name_problem`` answers a printable-ASCII name without scanning its characters: checked
  against the scan on every ASCII character and a few names.
"""

from __future__ import annotations

import math

import duckdb
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from engine.ingest.cells import name_suspects
from engine.ingest.importer import validate_paths
from engine.ingest.limits import bad_characters, marks_only, mixed_script, name_problem
from engine.store.schema import STYLE_COLUMNS
from engine.store.sql import params
from engine.style.given import given_counts


def test_ascii_names_are_suspect_exactly_where_the_control_pattern_matches():
    cells = [None, ""]
    for code in range(128):
        ch = chr(code)
        cells += [ch, f"model{ch}", f"{ch}model", f"mo{ch}del"]
    arr = pa.array(cells, type=pa.string())
    assert pc.all(pc.string_is_ascii(arr)).as_py()
    pattern = pc.fill_null(pc.match_substring_regex(arr, r"[\x00-\x1f\x7f]"), False).to_pylist()
    assert sum(pattern) == 33 * 4  # 0x00-0x1f and 0x7f, in each of the four places
    assert name_suspects(arr).tolist() == pattern
    assert name_suspects(pa.array(cells[2:], type=pa.string()).to_numpy(zero_copy_only=False)).tolist() \
        == pattern[2:]  # an object array of the same cells


def _rows(columns: str, relation) -> list[tuple]:
    return duckdb.connect().execute(f"SELECT {columns} FROM ({relation})", params(relation)).fetchall()


def _texts_by_brute_force(rows: list[dict]) -> tuple[dict, dict]:
    """The first question per prompt key and the first answer per (key, model), over the valid rows."""
    prompts: dict = {}
    answers: dict = {}
    for r in rows:
        if r["winner"] not in ("A", "B", "tie"):
            continue  # the rejected rows' texts are not stored
        key = (r["prompt_id"], 0, 1)
        if r.get("question") is not None:
            prompts.setdefault(key, r["question"])
        for side in ("a", "b"):
            if r.get(f"answer_{side}") is not None:
                answers.setdefault((*key, r[f"model_{side}"]), r[f"answer_{side}"])
    return prompts, answers


def test_texts_only_in_a_later_batch_or_on_rejected_rows_are_staged_as_a_brute_force_pass_says(
        tmp_path, monkeypatch):
    rows = []
    for i in range(120):
        row = {"prompt_id": f"p{i % 17}", "model_a": f"m{i % 5}", "model_b": f"n{i % 3}",
               "winner": "A" if i % 7 else "nonsense", "question": None, "answer_a": None, "answer_b": None}
        if i < 40 and i % 7 == 0:
            row["question"] = f"rejected question {i}"  # only on rejected rows in the first batches
        if i >= 90:
            row["question"] = f"question {i}"
            if i >= 110 and i % 2:  # the batch of rows 80-99 has questions and no answer
                row["answer_b"] = f"answer {i}"
        rows.append(row)
    path = tmp_path / "later_texts.parquet"
    pq.write_table(pa.Table.from_pylist(rows), path)
    monkeypatch.setenv("LENS_IMPORT_BATCH_ROWS", "20")
    report = validate_paths([path], dataset="d", file_judges={str(path): "j"})
    assert report.n_rejected == len([r for r in rows if r["winner"] != "A"])
    prompts, answers = _texts_by_brute_force(rows)
    assert prompts and answers
    staged_p = {(p, v, t): text for p, v, t, text in _rows(
        "prompt_id, variant, turn, text", report.texts_sql("prompts"))}
    staged_a = {(p, v, t, m): text for p, v, t, m, text in _rows(
        "prompt_id, variant, turn, model, text", report.texts_sql("answers"))}
    assert staged_p == prompts
    assert staged_a == answers


def _counts_by_brute_force(cells: list) -> tuple[list, list]:
    """Per cell: its count (NaN where absent or bad) and whether it is bad, one cell at a time."""
    values, bad = [], []
    for v in cells:
        if v is None:
            values.append(math.nan)
            bad.append(False)
        elif isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) and v >= 0:
            values.append(float(v))
            bad.append(False)
        else:
            values.append(math.nan)
            bad.append(True)
    return values, bad


@pytest.mark.parametrize("cells", [
    [None] * 6,  # a column the file does not have: counted in C
    [None, 3, None, 0, None, 2.5],
    [None, None, None, None, None, 7],  # one value, last
    [None, pd.NA, None, None, None, None],  # a cell whose == None is no truth value
    [None, None, np.array([1, 2]), None, None, None],
    [None, -1.0, None, math.inf, None, None],
])
def test_style_counts_of_mostly_absent_columns_equal_a_cell_by_cell_reading(cells):
    flagged: dict[int, str] = {}

    def flag(mask, reason):
        for i in np.flatnonzero(mask):
            flagged[int(i)] = reason(int(i))

    def col(name):
        return list(cells) if name == "tokens_a" else [None] * len(cells)

    out = given_counts(col, len(cells), flag)
    values, bad = _counts_by_brute_force(cells)
    k = STYLE_COLUMNS.index("tokens_a")
    np.testing.assert_array_equal(out[:, k], np.array(values))
    assert np.isnan(np.delete(out, k, axis=1)).all()
    assert sorted(flagged) == [i for i, b in enumerate(bad) if b]


def test_printable_ascii_names_are_answered_as_the_character_scan_answers():
    singles = [chr(c) for c in range(128)]
    names = [*singles, "gpt-4", "model 7 (beta)", "a\tb", "x\x7f", "", " ", "~!@#$%^&*()_+{}|:<>?"]
    for name in names:
        scanned = bad_characters(name)
        expected = f"contains {scanned}" if scanned else marks_only(name) or mixed_script(name)
        assert name_problem(name) == expected, repr(name)
    assert sum(name_problem(ch) is not None for ch in singles) == 33  # the controls: 0x00-0x1f, 0x7f
