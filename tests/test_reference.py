"""Reference rankings: the shipped Arena files, dataset model mapping, and clear errors on bad files."""

from __future__ import annotations

import json

import pytest

from engine.errors import LensError
from engine.ranking.reference import (
    DEFAULT_REFERENCE,
    REFERENCE_DIR,
    arena_category,
    load_mapping,
    load_reference,
    map_reference,
    reference_for_dataset,
)


def test_shipped_json_full_and_categories():
    full = load_reference()
    raw = json.loads(DEFAULT_REFERENCE.read_text())
    assert len(full) == len(raw["full"])
    assert full["gpt-4-0314"] == pytest.approx(raw["full"]["gpt-4-0314"]["rating"])
    assert full.is_monotonic_decreasing
    coding = load_reference(category="coding")
    assert coding["claude-1"] == pytest.approx(raw["coding"]["claude-1"]["rating"])


def test_vicuna80_mapping_against_both_shipped_files():
    js = reference_for_dataset("vicuna80")
    assert list(js.index) == ["gpt4", "claude", "gpt35", "vicuna-13b", "guanaco-33b", "bard"]
    assert sorted(js.attrs["unmapped"]) == ["guanaco-13b", "guanaco-65b", "guanaco-7b"]
    csv = reference_for_dataset("vicuna80", path=REFERENCE_DIR / "lmsys_2024-06-19.csv")
    assert csv["gpt4"] == 1186 and csv["bard"] == 1003  # GPT-4-0314, PaLM-Chat-Bison-001 rows
    assert list(csv.index) == list(js.index)


def test_mapped_models_missing_from_reference_are_listed(tmp_path):
    p = tmp_path / "ref.json"
    p.write_text(json.dumps({"full": {"gpt-4-0314": {"rating": 1200}, "claude-1": {"rating": 1100}}}))
    s = map_reference(load_reference(p), load_mapping("vicuna80"))
    assert list(s.index) == ["gpt4", "claude"]
    assert "bard" in s.attrs["missing"]


def test_bad_inputs_are_one_sentence_errors(tmp_path):
    with pytest.raises(LensError, match="no category 'nope'"):
        load_reference(category="nope")
    with pytest.raises(LensError, match="does not exist"):
        load_reference(tmp_path / "missing.json")
    bad = tmp_path / "bad.csv"
    bad.write_text("model,arena_elo\nx,1000\ny,oops\n")
    with pytest.raises(LensError, match="Line 3 .* non-numeric"):
        load_reference(bad)
    with pytest.raises(LensError, match="one overall ranking"):
        load_reference(REFERENCE_DIR / "lmsys_2024-06-19.csv", category="coding")
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    with pytest.raises(LensError, match="not valid JSON"):
        load_reference(broken)
    with pytest.raises(LensError, match="no model-name mapping"):
        load_mapping("no_such_dataset")


def test_category_mapping_uses_fallback_when_needed():
    assert arena_category("vicuna80", "coding") == "coding"
    assert arena_category("vicuna80", "generic") == "full"


def test_mt_bench_mapping_covers_every_answer_file():
    from pathlib import Path

    answers = Path(__file__).resolve().parent.parent / "data" / "mt_bench" / "model_answer"
    mapping = load_mapping("mt_bench")
    assert mapping["model"].is_unique
    if answers.exists():
        assert {p.stem for p in answers.glob("*.jsonl")} <= set(mapping["model"])
    ref = reference_for_dataset("mt_bench")
    assert ref.attrs["missing"] == []  # every mapped name exists in the shipped JSON
    assert len(ref) == (mapping["arena_model"] != "").sum() == 22
    assert ref["gpt-4"] > ref["claude-v1"] > ref["vicuna-13b-v1.3"] > ref["llama-13b"]


def test_dataset_names_that_are_not_file_names_never_reach_a_mapping_file(tmp_path, monkeypatch):
    from engine.ranking import reference

    d = tmp_path / "mappings"
    d.mkdir()
    (tmp_path / "secret.models.csv").write_text("model,arena_model\nx,y\n")
    (d / "ok.models.csv").write_text("model,arena_model\nx,y\n")
    monkeypatch.setattr(reference, "MAPPING_DIR", d)
    assert reference.has_mapping("ok") and len(reference.load_mapping("ok")) == 1
    for name in ("../secret", "a/b", ".hidden", "a\\b", "x\ny"):
        assert reference.mapping_path(name) is None
        assert not reference.has_mapping(name)
        with pytest.raises(LensError, match="not a plain file name"):
            reference.load_mapping(name)
        with pytest.raises(LensError, match="not a plain file name"):
            reference.arena_category(name, "writing")


def test_a_reference_file_changed_on_disk_is_read_again(tmp_path):
    """The parsed reference is kept per version of the file: a file rewritten with other ratings is read again
    whether its size changed (same modification time) or its modification time did (same size); the ratings
    are json's own parse of each version."""
    import os

    from engine.ranking.reference import load_reference, reference_categories

    path = tmp_path / "ref.json"

    def write(ratings: dict, cats=("full",), mtime_ns: int = 1_700_000_000_000_000_000) -> dict:
        text = json.dumps({c: {m: {"rating": r} for m, r in ratings.items()} for c in cats})
        path.write_text(text)
        os.utime(path, ns=(mtime_ns, mtime_ns))
        return json.loads(text)

    write({"a": 1100.5, "b": 1000.25})
    assert load_reference(path).to_dict() == {"a": 1100.5, "b": 1000.25}
    write({"a": 1000.5, "b": 1100.25}, mtime_ns=1_700_000_000_000_000_001)  # same size, a later time
    assert load_reference(path).to_dict() == {"b": 1100.25, "a": 1000.5}
    write({"a": 1000.5, "b": 1100.25}, cats=("full", "coding"), mtime_ns=1_700_000_000_000_000_001)
    assert reference_categories(path) == ["coding", "full"]  # another size, the same time
    assert load_reference(path, "coding").to_dict() == {"b": 1100.25, "a": 1000.5}
