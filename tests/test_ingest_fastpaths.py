"""The import's cheaper paths (issue 26 point 6) against what they replace, on data that separates them.

- ``cells.name_suspects`` on an all-ASCII column tests "not printable" instead of the control-character
  pattern: checked here against the pattern on every ASCII character, alone and inside a name.
- A batch whose valid rows carry no text skips the texts' tables: a file whose only texts are in a
  later batch, or only on rejected rows, stages exactly the prompts and answers a brute-force pass over
  the file's rows gives (first valid text per key wins).
"""

from __future__ import annotations

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from engine.ingest.cells import name_suspects
from engine.ingest.importer import validate_paths
from engine.store.sql import params


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
