"""Data page: several files into one dataset, each under the judge the user names; a tool's file
recognised from its fields; the same file twice refused; repeated rows and dropped columns shown."""

from __future__ import annotations

import json
from pathlib import Path

# ruff: noqa: F811 - the fixtures imported from apphelpers are requested by name
from apphelpers import assert_clean, own_app_at, unescape_md  # noqa: F401

FIX = Path(__file__).resolve().parent.parent / "fixtures" / "formats"
FIRST = b"prompt_id,model_a,model_b,winner,note\np1,x,y,A,a\np1,x,y,A,a\np2,y,z,B,b\n"
SECOND = b"prompt_id,model_a,model_b,winner\np1,x,y,B\np2,y,z,tie\n"


def test_add_files_to_a_dataset_each_with_its_judge(own_app_at):
    from app_pages._lens import get_store

    at = own_app_at("app_pages/6_data.py")
    at.text_input(key="data_name").input("panel").run()
    at.text_input(key="data_judge").input("judge-one").run()
    at.file_uploader(key="data_upload").set_value(("one.csv", FIRST, "text/csv")).run()
    assert_clean(at)
    infos = [unescape_md(i.value) for i in at.info]
    assert "1 row repeats an earlier row; kept as separate verdicts." in infos
    assert "one.csv: column not kept (not verdict fields): note." in infos
    at.button(key="data_import").click().run()
    assert_clean(at)

    at.radio(key="data_target").set_value("an existing dataset").run()
    at.selectbox(key="data_into").set_value("panel").run()
    at.text_input(key="data_judge").set_value("judge-two").run()
    at.file_uploader(key="data_upload").set_value(("two.csv", SECOND, "text/csv")).run()
    assert at.button(key="data_import").label == "Add to dataset panel"
    at.button(key="data_import").click().run()
    assert_clean(at)
    v = get_store().verdicts("panel")
    assert v.groupby("judge")["winner"].apply(list).to_dict() == {"judge-one": ["A", "A", "B"],
                                                                  "judge-two": ["B", "tie"]}
    assert any("Added two.csv to dataset panel" in unescape_md(s.value) for s in at.success)

    # the same file again is refused by its content, in the page's words (no command-line flag)
    at.radio(key="data_target").set_value("an existing dataset").run()
    at.selectbox(key="data_into").set_value("panel").run()
    at.file_uploader(key="data_upload").set_value(("two-again.csv", SECOND, "text/csv")).run()
    at.button(key="data_import").click().run()
    refusal = [unescape_md(e.value) for e in at.error if "Nothing was stored" in e.value]
    assert refusal and "two-again.csv is already in dataset 'panel'" in refusal[0] and "--" not in refusal[0]
    assert len(get_store().verdicts("panel")) == 5


def test_a_tool_file_is_read_by_its_fields(own_app_at):
    from app_pages._lens import get_store

    at = own_app_at("app_pages/6_data.py")
    at.text_input(key="data_name").input("mtb").run()
    data = (FIX / "gpt-4_pair.jsonl").read_bytes()
    at.file_uploader(key="data_upload").set_value(("gpt-4_pair.jsonl", data, "application/json")).run()
    assert_clean(at)
    assert any(
        "read as **FastChat MT-Bench pairwise judgments**" in unescape_md(m.value) for m in at.markdown
    )
    assert {m.label: m.value for m in at.metric}["Valid rows"] == "6"
    at.button(key="data_import").click().run()
    assert_clean(at)
    v = get_store().verdicts("mtb")
    n_records = len([ln for ln in data.decode().splitlines() if ln.strip()])
    assert len(v) == 2 * n_records and sorted(v["order"].value_counts().to_dict().items()) == [
        ("AB", 3),
        ("BA", 3),
    ]
    first = json.loads(data.decode().splitlines()[0])
    assert set(v["judge"]) == {first["judge"][0]}
