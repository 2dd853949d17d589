"""An uploaded dataset gets reference columns and sensitivity curves like the shipped one (issue 25,
point 1): its names map themselves, and a map uploaded on the Data page places the rest.

Expected reference ranks are read from the shipped LMArena JSON with plain pandas (competition ranks
among the models that have a reference name), not through the engine's mapping code."""

from __future__ import annotations

import json
import shutil

import pandas as pd
import pytest

# ruff: noqa: F811 - the fixtures imported from apphelpers are requested by name
from apphelpers import assert_clean, new_app, unescape_md
from curve_svg_read import page_curves
from test_reference_names import ARENA_20, NOT_ARENA, arena_like_rows

from engine.ranking.reference import DEFAULT_REFERENCE

FOUR = {"claude-instant-v1": "claude-instant-1", "claude-v1": "claude-1",
        "gpt-3.5-turbo": "gpt-3.5-turbo-0314", "gpt-4": "gpt-4-0314"}


@pytest.fixture
def arena_app(shipped_db, tmp_path, monkeypatch):
    """The app on a copy of the shipped store plus dataset ``arena`` (20 Chatbot Arena names, no map),
    opened on that dataset."""
    from engine.ingest.importer import import_files
    from engine.store.connection import Store

    db = tmp_path / "lens.duckdb"
    shutil.copyfile(shipped_db, db)
    csv = tmp_path / "arena.csv"
    arena_like_rows(prompts=3).to_csv(csv, index=False)
    with Store(db) as s:
        import_files(s, [csv], "arena")
    at = new_app(db, monkeypatch, query={"dataset": "arena"})
    return at


def expected_ref_ranks(names: dict[str, str]) -> dict[str, int]:
    """Dataset model → competition rank (1 = best) of its reference rating among the given models."""
    full = json.loads(DEFAULT_REFERENCE.read_text())["full"]
    ratings = pd.Series({m: full[r]["rating"] for m, r in names.items()})
    return ratings.rank(method="min", ascending=False).astype(int).to_dict()


def shown_ref_ranks(at) -> dict[str, str]:
    table = at.dataframe[0].value.set_index("model")
    return table["ref_rank"].astype(str).to_dict()


def test_uploaded_dataset_has_reference_columns_curves_and_a_map_from_the_data_page(arena_app):
    at = arena_app
    assert_clean(at)
    labels = {m.label for m in at.metric}
    assert "Spearman distance to reference" in labels and "Reference" not in labels  # was "Reference: none"
    by_name = {m: m for m in ARENA_20 if m not in NOT_ARENA}
    want = {m: str(r) for m, r in expected_ref_ranks(by_name).items()}
    got = shown_ref_ranks(at)
    assert {m: got[m] for m in want} == want
    assert all(got[m] == "—" for m in NOT_ARENA)

    trunc = at.switch_page("app_pages/2_truncation.py").run()
    assert_clean(trunc)
    assert not [i.value for i in trunc.info if "No sensitivity curves" in i.value]
    # distance vs K and vs mu, drawn
    assert [len(c["markers"]) > 0 for c in page_curves(trunc)] == [True, True]

    data = trunc.switch_page("app_pages/6_data.py").run()
    assert not [w for w in data.selectbox if w.key == "refmap_pick"]  # closed: its table is not even made
    data.session_state["refmap_open"] = True  # the reader opens the expander
    data.run()
    data.selectbox(key="refmap_pick").set_value("arena").run()
    assert any("16 of 20" in m.value for m in data.markdown)
    upload = "model,arena_model\n" + "".join(f"{m},{r}\n" for m, r in FOUR.items())
    data.file_uploader(key="refmap_upload").set_value(("four.csv", upload.encode(), "text/csv")).run()
    data.button(key="refmap_keep_upload").click().run()
    assert_clean(data)
    assert any("now keeps a map of 4 model name(s)" in unescape_md(s.value) for s in data.success)
    assert any("20 of 20" in m.value for m in data.markdown)

    board = data.switch_page("app_pages/1_leaderboard.py").run()
    assert_clean(board)
    want = {m: str(r) for m, r in expected_ref_ranks({**by_name, **FOUR}).items()}
    assert shown_ref_ranks(board) == want


def test_a_bad_map_upload_is_one_error_box_and_keeps_nothing(arena_app):
    from app_pages._lens import get_store
    from engine.store.model_maps import stored_map

    data = arena_app.switch_page("app_pages/6_data.py").run()
    data.session_state["refmap_open"] = True
    data.run()
    data.selectbox(key="refmap_pick").set_value("arena").run()
    data.file_uploader(key="refmap_upload").set_value(("bad.csv", b"name,target\na,b\n", "text/csv")).run()
    assert [unescape_md(e.value) for e in data.error] == [
        "The mapping file bad.csv needs the columns 'model' and 'arena_model' (or 'reference_model'); it "
        "has 'name', 'target'."]
    assert stored_map(get_store(), "arena").empty


def test_only_edited_names_are_kept():
    from app_pages._data_refmap import _changed_rows

    before = pd.DataFrame({"model": ["a", "b", "c"], "reference_model": ["x", "", "z"]})
    after = before.assign(reference_model=["x", " y ", None])
    assert _changed_rows(before, after).to_dict("list") == {"model": ["b", "c"], "reference_model": ["y", ""]}
