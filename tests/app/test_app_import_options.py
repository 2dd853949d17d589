"""Data page, import form (issue 25, points 2-4): the judge box filled in from the file's name when the
file names no judge, one value for every row ("Same value in every row", the command line's --set), and
the baseline of an Arena-Hard v0.1 file. Each stored value is read back from the store."""

from __future__ import annotations

import json
from pathlib import Path

# ruff: noqa: F811 - the fixtures imported from apphelpers are requested by name
from apphelpers import assert_clean, own_app_at, unescape_md  # noqa: F401

FIX = Path(__file__).resolve().parent.parent / "fixtures" / "formats"
ROWS = b"prompt_id,model_a,model_b,winner,order\np1,x,y,A,BA\np2,y,z,B,\np3,x,z,tie,BA\n"


def test_judge_box_is_filled_from_the_file_and_set_values_are_stored(own_app_at):
    from app_pages._lens import get_store

    at = own_app_at("app_pages/6_data.py")
    at.text_input(key="data_name").input("crowd").run()
    at.file_uploader(key="data_upload").set_value(("gpt4-comparisons.csv", ROWS, "text/csv")).run()
    assert at.text_input(key="data_judge").value == "gpt4"  # old: empty, the rows stored under 'judge'
    at.text_input(key="data_set").input("order=AB, category=coding").run()
    assert_clean(at)
    infos = [unescape_md(i.value) for i in at.info]
    assert ("gpt4-comparisons.csv: order=AB, set for every row, replaced the file's own order in 2 rows."
            in infos)
    at.button(key="data_import").click().run()
    assert_clean(at)
    v = get_store().verdicts("crowd")
    assert set(v["judge"]) == {"gpt4"} and v["order"].tolist() == ["AB"] * 3
    assert set(v["category"]) == {"coding"}

    # a second file that names no judge replaces the filled-in name; a name the user typed stays
    at.file_uploader(key="data_upload").set_value(("claude_judgments.csv", ROWS, "text/csv")).run()
    assert at.text_input(key="data_judge").value == "claude"
    at.text_input(key="data_judge").set_value("panel").run()
    at.file_uploader(key="data_upload").set_value(("llama.csv", ROWS, "text/csv")).run()
    assert at.text_input(key="data_judge").value == "panel"


def test_a_bad_set_value_is_one_error_box(own_app_at):
    at = own_app_at("app_pages/6_data.py")
    at.file_uploader(key="data_upload").set_value(("v.csv", ROWS, "text/csv")).run()
    at.text_input(key="data_set").input("order=left").run()
    errors = [unescape_md(e.value) for e in at.error]
    assert errors == ["Same value in every row: order=left: order 'left' is not AB or BA."]


def test_arena_hard_v01_file_takes_its_baseline_in_the_form(own_app_at):
    from app_pages._lens import get_store

    v01 = []
    for line in (FIX / "arena_hard_v01_excerpt.jsonl").read_text().splitlines():
        r = json.loads(line)
        v01.append({"question_id": r["uid"], "model": r["model"], "judge": r["judge"], "games": r["games"]})
    data = "\n".join(json.dumps(r) for r in v01).encode()
    at = own_app_at("app_pages/6_data.py")
    at.text_input(key="data_name").input("ah").run()
    at.file_uploader(key="data_upload").set_value(("run.jsonl", data, "application/json")).run()
    assert at.text_input(key="data_judge").value == ""  # the records name their judge
    assert {m.label: m.value for m in at.metric}["Valid rows"] == "0"  # no baseline yet: every row refused
    at.text_input(key="data_baseline").input("gpt-4-0314").run()
    assert_clean(at)
    assert {m.label: m.value for m in at.metric}["Valid rows"] == str(2 * len(v01))
    at.button(key="data_import").click().run()
    v = get_store().verdicts("ah")
    assert set(v["model_b"]) == {"gpt-4-0314"} and set(v["judge"]) == {v01[0]["judge"]}


def test_a_review_file_keeps_the_judge_its_name_gives_as_the_cli_import_does(own_app_at, tmp_path):
    """audit38: a FastChat review file (qlora's, PRD's: ``<first>-vs-<second>-<judge>-reviewer….jsonl``)
    names its judge in its name; the form offered the whole name and stored every row under it, where
    ``python -m engine import`` stores "human". Both imports of the same real file, read back."""
    from conftest import REPO, run_engine

    from app_pages._lens import get_store

    path = (REPO / "data" / "vicuna80" / "raw" / "prd" / "ratings-human"
            / "answer_bard-vs-answer_gpt35-human-reviewer_threeclass.jsonl")
    db = tmp_path / "cli.duckdb"
    run = run_engine(["--db", str(db), "import", "--dataset", "prd", str(path)])
    assert run.returncode == 0, run.stderr
    from engine.store.connection import Store

    with Store(db) as store:
        cli = store.verdicts("prd")
    at = own_app_at("app_pages/6_data.py")
    at.text_input(key="data_name").input("prd").run()
    at.file_uploader(key="data_upload").set_value((path.name, path.read_bytes(), "application/json")).run()
    assert at.text_input(key="data_judge").value == ""  # the file's name gives its judge
    at.button(key="data_import").click().run()
    assert_clean(at)
    page = get_store().verdicts("prd")
    assert set(page["judge"]) == set(cli["judge"]) == {"human"}
    cols = ["prompt_id", "model_a", "model_b", "winner", "judge"]
    assert page[cols].values.tolist() == cli[cols].values.tolist()


def test_the_judge_suggestion_follows_a_format_picked_by_hand(own_app_at, tmp_path):
    """nits39: a review file whose name does not say so (``.csv``: detected as CSV) read as ``review`` by a
    format picked by hand gets its judge from its name ("human"), as ``import --format review`` stores it;
    the box offered the whole file name (and kept it when the format changed), and every row went under
    it. Picking "detect" again offers the name once more; a name the user typed is never replaced."""
    from conftest import REPO, run_engine

    from app_pages._lens import get_store
    from engine.store.connection import Store

    raw = (REPO / "data" / "vicuna80" / "raw" / "prd" / "ratings-human"
           / "answer_bard-vs-answer_gpt35-human-reviewer_threeclass.jsonl")
    path = tmp_path / (raw.stem + ".csv")
    path.write_bytes(raw.read_bytes())
    db = tmp_path / "cli.duckdb"
    run = run_engine(["--db", str(db), "import", "--dataset", "prd", "--format", "review", str(path)])
    assert run.returncode == 0, run.stderr
    with Store(db) as store:
        cli = store.verdicts("prd")
    at = own_app_at("app_pages/6_data.py")
    at.text_input(key="data_name").input("prd").run()
    at.file_uploader(key="data_upload").set_value((path.name, path.read_bytes(), "text/csv")).run()
    assert at.text_input(key="data_judge").value == raw.stem  # read as CSV: no judge field, the name's
    at.selectbox(key="data_format").set_value("review").run()
    assert at.text_input(key="data_judge").value == ""  # the review file's name gives its judge
    at.selectbox(key="data_format").set_value("detect").run()
    assert at.text_input(key="data_judge").value == raw.stem
    at.text_input(key="data_judge").set_value("mine").run()
    at.selectbox(key="data_format").set_value("review").run()
    assert at.text_input(key="data_judge").value == "mine"
    at.text_input(key="data_judge").set_value("").run()
    at.button(key="data_import").click().run()
    assert_clean(at)
    page = get_store().verdicts("prd")
    assert set(page["judge"]) == set(cli["judge"]) == {"human"}
    cols = ["prompt_id", "model_a", "model_b", "winner", "judge"]
    assert page[cols].values.tolist() == cli[cols].values.tolist()
