"""``datasets attach`` holds Parquet files to the import's rules (issue 23: bug 15 and the attach
parts of bugs 12 and 18).

Before: the 8 KB Parquet that ``import`` refuses as a decompression bomb attached, and ``graphs``,
``diagnose``, ``datasets export`` on it each passed 5 GB; a ``variant`` of 2^40 attached and
``leaderboard`` then failed with a ConversionException; a NULL ``model_b`` attached and
``--ranker pged`` failed with ``TypeError: boolean value of NA is ambiguous``; ``prob_a`` 5.0 and -1
attached and were used in the ranking. Now each is refused at attach in one sentence naming the file,
the row and the rule (exit 2), and nothing is attached. Each case is compared with the import's
verdict on the same file (a second path): what attach refuses, the import rejects the same row of.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from engine.ingest.importer import validate_file
from tests.conftest import run_engine

GOOD = {"prompt_id": ["1", "2", "3"], "model_a": ["a", "a", "b"], "model_b": ["b", "c", "c"],
        "winner": ["A", "B", "tie"]}


@pytest.fixture(scope="module")
def db(shipped_db: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One store for the file (a copy of the shipped one: a fresh store would import it first); a
    refused attach leaves it as it was."""
    path = tmp_path_factory.mktemp("attach") / "lens.duckdb"
    shutil.copy(shipped_db, path)
    return path


def _attach(db: Path, path: Path, name: str = "att"):
    return run_engine(["--db", db, "datasets", "attach", name, path])


def _names(db: Path) -> list[str]:
    res = run_engine(["--db", db, "datasets", "--format", "csv"])
    return [line.split(",")[0] for line in res.stdout.splitlines()[1:]]


def test_decompression_bomb_is_refused_at_attach(db, tmp_path):
    """The import's bomb (8 KB of zstd, 3 GB of text) is refused by attach as by import."""
    n = 3000
    text = pa.DictionaryArray.from_arrays(pa.array(np.zeros(n, np.int32)), pa.array(["x" * 1_000_000]))
    table = pa.table({"prompt_id": [str(i) for i in range(n)], "model_a": ["a"] * n, "model_b": ["b"] * n,
                      "winner": ["A"] * n, "explanation": text})
    path = tmp_path / "bomb.parquet"
    pq.write_table(table, path, compression="zstd", dictionary_pagesize_limit=8 * 2**20)
    assert path.stat().st_size < 100_000
    res = _attach(db, path)
    assert res.returncode == 2, res.stdout  # old: "attached 3000 verdicts", exit 0
    assert res.stderr.startswith(f"error: {path} expands from ") and "decompression bomb" in res.stderr
    assert res.stderr.count("\n") == 1 and "att" not in _names(db)


def test_a_cell_longer_than_any_field_is_refused(db, tmp_path):
    path = tmp_path / "long.parquet"
    pq.write_table(pa.table({**GOOD, "explanation": ["ok", "y" * (4 * 2**20 + 1), None]}), path,
                   compression="zstd")
    res = _attach(db, path)
    assert res.returncode == 2
    assert f"{path} row 2: explanation is 4,194,305 bytes long" in res.stderr
    assert [r.source_line for r in validate_file(path, dataset="d").rejected.itertuples()] == [2]


CASES = {  # column values with the bad row second, and the words of the rule it breaks
    "variant 2^40": ({"variant": pa.array([0, 2**40, 1], pa.int64())},
                     "variant '1099511627776' is not an integer from 0 to 2,147,483,647"),
    "NULL model_b": ({"model_b": ["b", None, "c"]}, "model_b NULL is empty"),
    "prob_a 5.0": ({"prob_a": [0.5, 5.0, 0.25]}, "prob_a '5.0' is not a number in [0, 1]"),
    "prob_a -1": ({"prob_a": [0.5, -1.0, None]}, "prob_a '-1.0' is not a number in [0, 1]"),
    "same model": ({"model_b": ["b", "a", "c"]}, "model_b 'a' is the same model as model_a"),
    "zero-width space": ({"model_a": ["a", "a\u200b", "b"]},
                         "model_a 'a\\u200b' contains an invisible formatting character (U+200B)"),
    "tstamp inf": ({"tstamp": [1.0, float("inf"), None]}, "tstamp 'inf' is not a finite time"),
    "turn text": ({"turn": ["1", "two", "1"]}, "turn 'two' is not an integer from 0 to 2,147,483,647"),
    "order": ({"order": ["AB", "left", None]}, "order 'left' is not AB or BA"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_rows_the_import_would_refuse_are_refused_at_attach(db, tmp_path, case):
    columns, words = CASES[case]
    path = tmp_path / "v.parquet"
    pq.write_table(pa.table({**GOOD, **columns}), path)
    res = _attach(db, path)
    assert res.returncode == 2, res.stdout  # old: attached, exit 0
    assert res.stderr == (f"error: {path} row 2 would not import: {words}; nothing was attached: fix the "
                          "files, or import them, which sets such rows aside.\n")
    assert "att" not in _names(db)
    if case != "variant 2^40":  # the import reads a 2^40 variant the same way; it rejects each row too
        assert [r.source_line for r in validate_file(path, dataset="d").rejected.itertuples()] == [2]


def test_bad_rows_are_counted_and_the_first_in_file_order_named(db, tmp_path):
    folder = tmp_path / "logs"
    folder.mkdir()
    pq.write_table(pa.table(GOOD), folder / "a.parquet")
    pq.write_table(pa.table({**GOOD, "prob_a": [7.0, 0.5, -2.0]}), folder / "b.parquet")
    pq.write_table(pa.table({**GOOD, "prob_a": [0.1, 9.0, 0.2]}), folder / "c.parquet")
    res = _attach(db, folder / "*.parquet")
    assert res.returncode == 2
    assert res.stderr.startswith(f"error: {folder / 'b.parquet'} row 1 would not import: prob_a '7.0' is not "
                                 "a number in [0, 1] (and 2 more such row(s));")


def test_good_files_still_attach_and_rank(db, tmp_path):
    path = tmp_path / "v.parquet"
    pq.write_table(pa.table({**GOOD, "prob_a": [0.0, 1.0, None], "variant": [0, 1, 2],
                             "order": ["AB", "ba", None], "tstamp": [1.7e9, None, 0.0],
                             "explanation": ["x\ry", None, "z"]}), path)
    res = _attach(db, path, "good")
    assert res.returncode == 0, res.stderr
    assert "attached 3 verdicts in 1 Parquet file(s)" in res.stdout
    board = run_engine(["--db", db, "leaderboard", "--dataset", "good", "--ranker", "pged",
                        "--format", "csv"])
    assert board.returncode == 0, board.stderr
    assert sorted(line.split(",")[1] for line in board.stdout.splitlines()[1:]) == ["a", "b", "c"]


NAME_CASES = {  # names the import refuses as rendering blank or as a look-alike (issue 23, bug 11)
    "Hangul filler": {"model_a": ["a", "\u3164", "b"]},
    "Hangul choseong filler": {"prompt_id": ["1", "\u115f", "3"]},
    "halfwidth filler in a name": {"model_b": ["b", "x\uffa0", "c"]},
    "combining marks only": {"judge": ["j", "\u0301\u0302", "j"]},
    "Cyrillic look-alike": {"model_b": ["b", "g\u0440t4", "c"]},
    "Greek look-alike": {"model_a": ["a", "cl\u03b1ude", "b"]},
}


@pytest.mark.parametrize("case", list(NAME_CASES))
def test_names_the_import_refuses_are_refused_at_attach_in_the_same_words(db, tmp_path, case):
    """Attach words a blank or look-alike name with the import's one definition
    (``limits.name_problem``): the sentence carries the import's rejection reason for the same row.
    Before: attach took the marks-only and mixed-script names (exit 0), and named the fillers only as
    "a control or invisible character"."""
    path = tmp_path / "v.parquet"
    pq.write_table(pa.table({**GOOD, **NAME_CASES[case]}), path)
    rejected = validate_file(path, dataset="d").rejected
    assert list(rejected.source_line) == [2]
    res = _attach(db, path)
    assert res.returncode == 2, res.stdout
    assert res.stderr == (f"error: {path} row 2 would not import: {rejected.reason.iloc[0]}; nothing was "
                          "attached: fix the files, or import them, which sets such rows aside.\n")
    assert "att" not in _names(db)


def test_names_of_one_script_per_word_still_attach(db, tmp_path):
    """The name rule's patterns are a superset; what the import accepts attaches (no false refusal):
    one script per word, a decomposed accent (stored NFC), a Greek word beside a Latin one."""
    path = tmp_path / "v.parquet"
    pq.write_table(pa.table({**GOOD, "model_a": ["\u043c\u043e\u0434\u0435\u043b\u044c-gpt",
                                                 "\u03b1-model", "cafe\u0301"],
                             "judge": ["\u03b1\u03b2 judge", "j", "j"]}), path)
    assert validate_file(path, dataset="d").rejected.empty
    res = _attach(db, path, "scripts")
    assert res.returncode == 0, res.stderr
    assert "attached 3 verdicts" in res.stdout
