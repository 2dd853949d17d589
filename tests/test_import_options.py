"""Issue 25, points 2, 3 and 6: constant columns (``--set``), judge names that are never the placeholder
``judge`` unless chosen, Arena battles stored with order AB, and ``datasets attach`` reading a file as
``import`` does (the same options, kept with the dataset).

Every expected number is computed another way: counts by pandas over the frame the file was written from,
the position table against a brute-force count of first-shown wins, and an attached dataset against the
same file imported (the import's reader is the second path for attach's SQL projection).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from engine.errors import LensError
from engine.ingest.attach_checks import attach_parquet
from engine.ingest.attach_options import AttachOptions
from engine.ingest.constant_columns import judge_from_filename, parse_set
from engine.ingest.importer import import_files, rename_dataset, validate_file
from engine.ranking.vote_query import store_vote_rows
from engine.store.connection import Store
from tests.conftest import run_engine

KEEP = ["judge", "prompt_id", "variant", "variant_kind", "turn", "category", "model_a", "model_b", "winner",
        "order", "prob_a", "annotator", "battle_id", "tstamp", "source_line"]
"""The verdict columns compared between an import and an attach (ids, dataset and file name differ)."""


@pytest.fixture
def db(shipped_db: Path, tmp_path: Path) -> Path:
    """A copy of the shipped store (a fresh one would import vicuna80 first)."""
    path = tmp_path / "lens.duckdb"
    shutil.copy(shipped_db, path)
    return path


def _verdicts(db: Path, dataset: str) -> pd.DataFrame:
    with Store(db, read_only=True) as s:
        v = s.verdicts(dataset)
    return v.sort_values("source_line").reset_index(drop=True)


def arena_log(seed: int, n: int = 60) -> pd.DataFrame:
    """A battle log in Chatbot Arena's field names (no ``order`` field: model_a is shown first)."""
    rng = np.random.default_rng(seed)
    models = ["gpt-4", "claude-2", "vicuna-13b", "llama-2-70b"]
    rows = []
    for i in range(n):
        a, b = rng.choice(models, 2, replace=False)
        rows.append({"question_id": f"q{int(rng.integers(0, 15))}", "model_a": str(a), "model_b": str(b),
                     "winner": str(rng.choice(["model_a", "model_a", "model_b", "tie", "tie (bothbad)"])),
                     "judge": f"arena_user_{int(rng.integers(0, 7))}", "turn": 1, "anony": True,
                     "language": "English", "tstamp": 1.69e9 + i, "num": i})
    return pd.DataFrame(rows)


# -- judge names -------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("name", "judge"), [
    ("gpt4-comparisons.json", "gpt4"), ("data/gpt-4_pair.jsonl", "gpt-4"), ("claude.csv", "claude"),
    ("llama-3_70b_annotations.json", "llama-3_70b"), ("comparisons.json", "comparisons"),
    ("gpt4.parquet", "gpt4"),
])
def test_judge_named_after_its_file_without_words_that_say_what_it_holds(name, judge):
    assert judge_from_filename(name) == judge  # old: gpt4-comparisons, gpt-4_pair, ...


def test_rows_without_a_judge_are_named_after_the_file_and_the_report_says_so(db, tmp_path):
    path = tmp_path / "gpt4-comparisons.csv"
    df = pd.DataFrame({"prompt_id": ["p1", "p2", "p3", "p4"], "model_a": ["x", "x", "y", "x"],
                       "model_b": ["y", "z", "z", "y"], "winner": ["A", "B", "tie", "A"],
                       "judge": ["claude", None, "claude", None]})
    df.to_csv(path, index=False)
    res = run_engine(["--db", db, "import", path, "--dataset", "j"])
    assert res.returncode == 0, res.stderr
    n_empty = int(df["judge"].isna().sum())
    assert (f"gpt4-comparisons.csv: {n_empty} rows name no judge; read as judge 'gpt4', named after the "
            "file (to name it: --judge NAME, or the Data page's judge box).") in res.stdout
    got = _verdicts(db, "j")["judge"].tolist()
    assert got == df["judge"].fillna("gpt4").tolist()  # old: 'judge' for the two empty rows
    assert "judge" not in got
    # --judge-from filename names every row after the file, with the same words left out
    res = run_engine(["--db", db, "import", path, "--dataset", "k", "--judge-from", "filename"])
    assert res.returncode == 0 and set(_verdicts(db, "k")["judge"]) == {"gpt4"}  # old: gpt4-comparisons


# -- --set -------------------------------------------------------------------------------------------------
def test_set_gives_every_row_the_value_and_counts_what_it_replaced(db, tmp_path):
    path = tmp_path / "crowd.csv"
    df = pd.DataFrame({"prompt_id": [f"p{i}" for i in range(6)], "model_a": ["x"] * 6,
                       "model_b": ["y", "z"] * 3, "winner": ["A", "B", "tie", "A", "A", "B"],
                       "order": ["AB", "BA", None, "BA", "AB", None]})
    df.to_csv(path, index=False)
    res = run_engine(["--db", db, "import", path, "--dataset", "s", "--set", "order=ab", "--set",
                      "judge=human", "--set", "category=writing", "--set", "turn=2"])
    assert res.returncode == 0, res.stderr
    v = _verdicts(db, "s")
    assert v["order"].tolist() == ["AB"] * 6 and set(v["judge"]) == {"human"}
    assert set(v["category"]) == {"writing"} and v["turn"].tolist() == [2] * 6
    differing = int((df["order"].notna() & (df["order"].str.upper() != "AB")).sum())
    assert (f"crowd.csv: order=ab, set for every row, replaced the file's own order in {differing} rows."
            in res.stdout)


@pytest.mark.parametrize(("spec", "words"), [
    ("order=left", "--set order=left: order 'left' is not AB or BA."),
    ("turn=-1", "--set turn=-1: turn '-1' is not a non-negative integer."),
    ("winner=A", "--set 'winner=A' names column 'winner', which cannot be one value for every row"),
    ("order", "--set 'order' is not of the form COLUMN=VALUE"),
])
def test_a_bad_set_is_one_sentence_and_nothing_is_stored(db, tmp_path, spec, words):
    path = tmp_path / "v.csv"
    path.write_text("prompt_id,model_a,model_b,winner\np1,x,y,A\n")
    res = run_engine(["--db", db, "import", path, "--dataset", "bad", "--set", spec])
    assert res.returncode == 2 and res.stderr.startswith(f"error: {words}")
    assert len(res.stderr.strip().splitlines()) == 1
    with Store(db, read_only=True) as s:
        assert not s.has_dataset("bad")


def test_set_judge_and_judge_together_are_refused():
    with pytest.raises(LensError, match="gives judge twice"):
        parse_set(["judge=a", "judge=b"])
    res = run_engine(["import", "x.csv", "--dataset", "d", "--set", "judge=a", "--judge", "b"])
    assert res.returncode == 2 and "not both" in res.stderr


# -- Arena: order AB, position bias ------------------------------------------------------------------------
def test_arena_log_records_order_ab_and_its_position_bias_shows(db, tmp_path):
    df = arena_log(1)
    path = tmp_path / "clean_battle.json"
    df.to_json(path, orient="records")
    res = run_engine(["--db", db, "import", path, "--dataset", "arena"])
    assert res.returncode == 0, res.stderr
    assert ("clean_battle.json: every battle is stored with order AB (in Chatbot Arena logs model_a is the "
            "answer shown first), so its position bias can be read.") in res.stdout
    assert set(_verdicts(db, "arena")["order"]) == {"AB"}  # old: all NULL
    pos = run_engine(["--db", db, "diagnose", "--dataset", "arena", "--table", "position", "--format", "csv"])
    assert pos.returncode == 0, pos.stderr  # old: refused, no verdict records the order
    from io import StringIO

    row = pd.read_csv(StringIO(pos.stdout)).set_index("judge").loc["human"]
    first = int((df["winner"] == "model_a").sum())
    second = int((df["winner"] == "model_b").sum())
    assert (row["verdicts"], row["first_wins"], row["second_wins"]) == (len(df), first, second)
    assert row["first_win_rate"] == pytest.approx(first / len(df))
    assert row["first_win_rate_decisive"] == pytest.approx(first / (first + second))


# -- attach as import --------------------------------------------------------------------------------------
def _compare(store: Store, imported: str, attached: str) -> None:
    a = store.verdicts(imported).sort_values("source_line").reset_index(drop=True)[KEEP]
    b = store.verdicts(attached).sort_values("source_line").reset_index(drop=True)[KEEP]
    pd.testing.assert_frame_equal(a, b, check_dtype=False)
    va, vb = store_vote_rows(store, imported), store_vote_rows(store, attached)
    assert va.models == vb.models and len(va.a) == len(vb.a) == len(a)


def test_attach_reads_an_arena_parquet_as_the_import_does(empty_store, tmp_path):
    path = tmp_path / "battles.parquet"
    arena_log(2).to_parquet(path, index=False)
    import_files(empty_store, [path], "imported")
    info = attach_parquet(empty_store, "attached", str(path))
    assert info["verdicts"] == 60 and info["notes"][0].startswith("Read as Chatbot Arena battle logs")
    _compare(empty_store, "imported", "attached")
    assert set(empty_store.verdicts("attached")["order"]) == {"AB"}


SPELLINGS = ["left", "right", "even", "A", "b", "Tie", "1", "model_a"]


@settings(max_examples=5, deadline=None)
@example(seed=7, n=20, judge_column=True, set_order="BA", rename=True)
@example(seed=8, n=20, judge_column=False, set_order=None, rename=True)
@given(seed=st.integers(0, 10**6), n=st.integers(1, 25), judge_column=st.booleans(),
       set_order=st.sampled_from([None, "AB", "BA"]), rename=st.booleans())
def test_attach_with_the_import_options_equals_the_import(tmp_path_factory, migrated_empty_db, seed, n,
                                                          judge_column, set_order, rename):
    """A raw file (its own column names and winner spellings) attached with --map, --map-value, --set,
    --model-name and --judge-name reads the same verdicts as the file imported with them."""
    rng = np.random.default_rng(seed)
    folder = tmp_path_factory.mktemp("opts")
    df = pd.DataFrame({"qid": [f"q{int(i)}" for i in rng.integers(0, 6, n)],
                       "left_model": rng.choice(["m1", "m2"], n), "right_model": rng.choice(["m3", "m4"], n),
                       "verdict": rng.choice(SPELLINGS, n), "turn": rng.integers(1, 3, n)})
    if judge_column:
        df["judge"] = rng.choice(["gpt4", "claude"], n)
    path = folder / "gpt4-comparisons.parquet"
    df.to_parquet(path, index=False)
    column_map = {"qid": "prompt_id", "left_model": "model_a", "right_model": "model_b", "verdict": "winner"}
    value_map = {"winner": {"left": "a", "right": "model_b", "even": "tie (bothbad)"}}  # spellings again
    sets = {"order": set_order} if set_order else {}
    models = {"m1": "model-one"} if rename else {}
    judges = {"gpt4": "gpt-4"} if rename else {}
    db = folder / "s.duckdb"
    shutil.copyfile(migrated_empty_db, db)
    with Store(db) as store:
        import_files(store, [path], "imported", column_map=column_map, value_map=value_map,
                     model_names=models, judge_names=judges, set_columns=sets, derive_judge=True)
        attach_parquet(store, "attached", str(path), None,
                       AttachOptions(None, column_map, models, judges, value_map, sets))
        _compare(store, "imported", "attached")
        if not judge_column:  # named after the file on both paths, never 'judge'
            assert set(store.verdicts("attached")["judge"]) == {"gpt4" if not rename else "gpt-4"}


def test_attach_options_on_the_command_line_and_kept_through_a_rename(db, tmp_path):
    path = tmp_path / "raw.parquet"
    raw = pd.DataFrame({"question_id": ["1", "2", "3"], "model_a": ["a", "a", "b"],
                        "model_b": ["b", "c", "c"], "winner": ["model_a", "tie (bothbad)", "2"]})
    raw.to_parquet(path, index=False)
    res = run_engine(["--db", db, "datasets", "attach", "raw", path, "--set", "order=AB", "--set",
                      "judge=human", "--model-name", "a=alpha"])
    assert res.returncode == 0, res.stderr  # old: no such options; the raw winners were refused
    v = _verdicts(db, "raw")
    assert v["winner"].tolist() == ["A", "tie", "B"] and v["model_a"].tolist() == ["alpha", "alpha", "b"]
    assert set(v["order"]) == {"AB"} and set(v["judge"]) == {"human"}
    assert run_engine(["--db", db, "datasets", "rename", "raw", "renamed"]).returncode == 0
    pd.testing.assert_frame_equal(_verdicts(db, "renamed")[KEEP], v[KEEP])  # old: empty after the rename
    pos = run_engine(["--db", db, "diagnose", "--dataset", "renamed", "--table", "position", "--format",
                      "csv"])
    assert pos.returncode == 0, pos.stderr


def test_attach_refuses_formats_it_cannot_read_in_place(db, tmp_path):
    path = tmp_path / "v.parquet"
    pd.DataFrame({"prompt_id": ["1"], "model_a": ["a"], "model_b": ["b"], "winner": ["A"]}).to_parquet(path)
    res = run_engine(["--db", db, "datasets", "attach", "x", path, "--format", "fastchat-pair"])
    assert res.returncode == 2 and "fastchat-pair" in res.stderr  # --format offers parquet and arena
    with pytest.raises(LensError, match="not a column of the files"), Store(db) as s:
        attach_parquet(s, "y", str(path), None, AttachOptions(column_map={"nope": "judge"}))


def test_rename_of_a_stored_dataset_is_unchanged(empty_store, tmp_path):
    path = tmp_path / "v.csv"
    path.write_text("prompt_id,model_a,model_b,winner,judge\np1,x,y,A,j\n")
    import_files(empty_store, [path], "one")
    rename_dataset(empty_store, "one", "two")
    assert empty_store.verdicts("two")["winner"].tolist() == ["A"]


def test_attach_checks_the_rows_as_the_options_read_them(db, tmp_path):
    """The import's row rules apply to the mapped columns: an empty cell of the file's column that --map
    reads as model_a is refused under model_a's name, as the import rejects that row."""
    path = tmp_path / "v.parquet"
    pd.DataFrame({"prompt_id": ["1", "2"], "left": ["a", None], "model_b": ["b", "c"],
                  "winner": ["A", "B"]}).to_parquet(path, index=False)
    res = run_engine(["--db", db, "datasets", "attach", "m", path, "--map", "left=model_a"])
    assert res.returncode == 2
    assert res.stderr.startswith(f"error: {path} row 2 would not import: model_a NULL is empty; nothing was "
                                 "attached")
    rejected = validate_file(path, dataset="d", column_map={"left": "model_a"}).rejected  # the import
    assert rejected["source_line"].tolist() == [2]
