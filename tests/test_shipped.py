"""The shipped default dataset (engine/ingest/shipped.py): built from the raw rating files, it must give
exactly the verdicts of data/vicuna80/vicuna80_pairwise_long.csv (a table derived independently),
with the questions, every model's answers, and a bootstrap that runs once per store."""

from __future__ import annotations

import json
import shutil

import pandas as pd
import pytest

from engine.graphs.stack import build_stack
from engine.ingest.importer import delete_dataset, import_files
from engine.ingest.shipped import (
    JUDGE_NAMES,
    MODEL_NAMES,
    VICUNA80_DIR,
    ensure_default_dataset,
    import_vicuna80,
    open_store,
    prebuilt_report,
    vicuna80_report,
)
from engine.store.connection import Store

LONG = VICUNA80_DIR / "vicuna80_pairwise_long.csv"
KEY = ["prompt_id", "judge", "model_a", "model_b", "winner"]


@pytest.fixture(scope="module")
def long_table() -> pd.DataFrame:
    df = pd.read_csv(LONG, dtype=str, keep_default_na=False)
    df["winner"] = df["winner"].map({"model_a": "A", "model_b": "B", "tie": "tie", "error": "invalid"})
    return df


@pytest.fixture(scope="module")
def shipped(shipped_db) -> pd.DataFrame:
    with Store(shipped_db) as s:
        return s.verdicts("vicuna80")


def multiset(df: pd.DataFrame, cols: list[str]) -> pd.Series:
    return df[cols].astype(str).value_counts().sort_index()


def test_counts(shipped, long_table):
    assert len(shipped) == len(long_table) == 18560
    assert int((shipped["winner"] == "invalid").sum()) == int((long_table["winner"] == "invalid").sum()) == 13
    assert shipped.groupby("judge").size().to_dict() == long_table.groupby("judge").size().to_dict()


def test_same_multiset_as_long_table(shipped, long_table):
    pd.testing.assert_series_equal(multiset(shipped, KEY), multiset(long_table, KEY))


def test_human_annotators_and_categories_match(shipped, long_table):
    cols = [*KEY, "annotator", "category"]
    human = shipped[shipped["judge"] == "human"]
    pd.testing.assert_series_equal(
        multiset(human, cols), multiset(long_table[long_table["judge"] == "human"], cols)
    )
    cat = dict(zip(long_table["prompt_id"], long_table["category"], strict=False))
    assert (shipped["category"] == shipped["prompt_id"].map(cat)).all()


def test_presentation_order_and_rationales(shipped):
    assert set(shipped["order"]) == {"AB"}
    llm = shipped[shipped["judge"] != "human"]
    # the inspector shows the judge's rationale: present wherever the raw review has a text
    raw_texts = [
        json.loads(x).get("text", "")
        for f in sorted((VICUNA80_DIR / "raw").glob("*/ratings-*/*.jsonl"))
        if "-human-" not in f.name
        for x in f.read_text(encoding="utf-8").splitlines()
        if x.strip()
    ]
    assert len(raw_texts) == len(llm)
    assert int(llm["explanation"].notna().sum()) == sum(1 for t in raw_texts if t.strip())
    assert shipped.loc[shipped["judge"] == "human", "explanation"].isna().all()
    # the 13 unparsable outputs keep their text and never become ties
    inv = shipped[shipped["winner"] == "invalid"]
    assert len(inv) == 13 and inv["explanation"].str.len().gt(0).all()
    # every verdict points back to its raw line
    first = shipped.iloc[0]
    raw = (
        (VICUNA80_DIR / first["source_file"])
        .read_text(encoding="utf-8")
        .splitlines()[first["source_line"] - 1]
    )
    assert json.loads(raw)["text"] == first["explanation"]


def test_prompts_and_answers(shipped_db):
    with Store(shipped_db) as s:
        prompts = s.prompt_texts("vicuna80")
        answers = s.answer_texts("vicuna80")
    q = pd.read_csv(VICUNA80_DIR / "vicuna80_questions.csv", dtype=str)
    assert prompts[["prompt_id", "category", "text"]].sort_values("prompt_id").values.tolist() == \
        q.sort_values("question_id").values.tolist()
    counts = answers.groupby("model").size().to_dict()
    assert sorted(counts) == ["bard", "claude", "gpt35", "gpt4", "guanaco-13b", "guanaco-33b", "guanaco-65b",
                              "guanaco-7b", "vicuna-13b"]
    # brute force: one answer per non-empty line of each generation file
    prd = VICUNA80_DIR / "raw" / "prd" / "generations"
    for model in ("bard", "claude", "gpt35", "gpt4", "vicuna-13b"):
        lines = [
            x for x in (prd / f"answer_{model}.jsonl").read_text(encoding="utf-8").splitlines() if x.strip()
        ]
        assert counts[model] == len(lines)


def test_graphs_leave_invalid_out(shipped):
    gpt4 = shipped[shipped["judge"] == "gpt-4"]
    stack = build_stack(gpt4)
    assert int(stack.keys["n_invalid"].sum()) == 13
    assert int(stack.keys["n_verdicts"].sum()) == len(gpt4) - 13
    assert stack.invalid_only.empty  # every shipped graph has valid verdicts too


def test_generic_importer_gives_the_same_rows(shipped, tmp_path):
    """The `import` path on one judge's raw folder agrees with the bootstrap (no shipped-only logic)."""
    files = sorted((VICUNA80_DIR / "raw" / "prd" / "ratings-bard").glob("*.jsonl"))
    with Store(tmp_path / "x.duckdb") as s:
        res = import_files(s, files, "bard_only", model_names=MODEL_NAMES, judge_names=JUDGE_NAMES)
        got = s.verdicts("bard_only")
    assert res.rows_stored == 1600
    cols = ["prompt_id", "judge", "model_a", "model_b", "winner", "explanation"]
    pd.testing.assert_series_equal(multiset(got, cols), multiset(shipped[shipped["judge"] == "bard"], cols))


def test_bootstrap_runs_once(shipped_db, tmp_path):
    path = tmp_path / "s.duckdb"
    shutil.copy(shipped_db, path)
    with open_store(path) as s:  # already initialised: nothing new
        # the two shipped imports: vicuna80 and the arena pair counts (issue 25)
        assert s.cursor().execute("SELECT count(*) FROM import_log").fetchone()[0] == 2
        delete_dataset(s, "vicuna80")
    with open_store(path) as s:  # deleted stays deleted
        assert not s.has_dataset("vicuna80")
        assert ensure_default_dataset(s) is False


def test_existing_dataset_is_not_reimported(shipped_db, tmp_path):
    """A store holding vicuna80 but no bootstrap record (e.g. made by hand) just gets the record."""
    path = tmp_path / "s.duckdb"
    shutil.copy(shipped_db, path)
    with Store(path) as s:
        s.cursor().execute("DELETE FROM init_log")
        version = s.dataset_version("vicuna80")
        assert ensure_default_dataset(s) is False
        assert s.dataset_version("vicuna80") == version
        assert s.cursor().execute("SELECT count(*) FROM init_log").fetchone()[0] == 1


def test_prebuilt_parquet_equals_the_raw_import():
    """The shipped Parquet is exactly what validating the raw files gives (rebuild: write_prebuilt)."""
    built, raw = prebuilt_report(), vicuna80_report()
    assert built is not None, "data/vicuna80/prebuilt is missing"
    for name in ("good", "prompts", "answers"):
        pd.testing.assert_frame_equal(getattr(built, name), getattr(raw, name), check_exact=True)
    assert (built.format, built.rows_read, built.repeats) == (raw.format, raw.rows_read, raw.repeats)
    assert (dict(built.dropped), dict(built.file_hashes)) == (dict(raw.dropped), dict(raw.file_hashes))
    assert built.n_rejected == raw.n_rejected == 0


def test_raw_files_are_imported_without_the_prebuilt_copy(shipped, tmp_path):
    """A checkout without data/vicuna80/prebuilt still gets the same rows, from the raw files."""
    root = tmp_path / "v80"
    root.mkdir()
    for name in ("raw", "vicuna80_questions.csv"):
        (root / name).symlink_to(VICUNA80_DIR / name)
    assert prebuilt_report(root) is None
    with Store(tmp_path / "r.duckdb") as s:
        assert import_vicuna80(s, root=root).status == "stored"
        got = s.verdicts("vicuna80")
    cols = [*KEY, "annotator", "category", "explanation", "source_file", "source_line"]
    pd.testing.assert_series_equal(multiset(got, cols), multiset(shipped, cols))
