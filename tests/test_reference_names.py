"""Reference names that map themselves (issue 25, point 1): name matching, the map kept with a dataset,
and ``compare`` / ``datasets map`` on a dataset no shipped mapping covers.

The Chatbot Arena names below are the 20 models of the lmsys Chatbot Arena conversations (written here
by us as plain names; no file of theirs is used). 16 of them are LMArena's own names; the four others
(gpt-4, gpt-3.5-turbo, claude-v1, claude-instant-v1) are not, and no normalisation makes them so.
"""

from __future__ import annotations

import itertools
import shutil

import numpy as np
import pandas as pd
import pytest
from conftest import run_engine
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.errors import LensError
from engine.ranking.name_match import match_names, name_key
from engine.ranking.reference import (
    load_reference,
    map_reference,
    model_map,
    name_map_table,
    reference_category,
    reference_for,
    reference_for_dataset,
)

ARENA_20 = ["alpaca-13b", "chatglm-6b", "claude-instant-v1", "claude-v1", "dolly-v2-12b", "fastchat-t5-3b",
            "gpt-3.5-turbo", "gpt-4", "gpt4all-13b-snoozy", "guanaco-33b", "koala-13b", "llama-13b",
            "mpt-7b-chat", "oasst-pythia-12b", "palm-2", "RWKV-4-Raven-14B", "stablelm-tuned-alpha-7b",
            "vicuna-13b", "vicuna-7b", "wizardlm-13b"]
NOT_ARENA = ["claude-instant-v1", "claude-v1", "gpt-3.5-turbo", "gpt-4"]


# -- name matching ----------------------------------------------------------------------------------
def test_name_key_is_nfkc_casefold_letters_and_digits():
    assert name_key("GPT-3.5 Turbo") == name_key("gpt-3.5-turbo") == "gpt35turbo"
    assert name_key("Ｇｐｔ－４") == "gpt4"  # full-width forms fold under NFKC
    assert name_key("Straße_7B") == "strasse7b"  # case folding, not lower(): ß → ss
    assert name_key("--- ") == ""


def _brute_force(models, refs, taken):
    """The rule read literally, pair by pair: exact first; else the one reference name with the same
    key, when no other reference name and no other not-exact model share that key and it is free."""
    models, refs = sorted(set(models)), list(dict.fromkeys(refs))
    exact = {m for m in models if m in refs}
    out = {m: m for m in exact}
    for m in sorted(set(models) - exact):
        k = name_key(m)
        cands = [r for r in refs if k and name_key(r) == k]
        rivals = [o for o in models if o not in exact and name_key(o) == k]
        if len(cands) == 1 and len(rivals) == 1 and cands[0] not in exact and cands[0] not in set(taken):
            out[m] = cands[0]
    return out


NAMES = st.text(alphabet="aAbB-. 1", min_size=1, max_size=4)


@settings(max_examples=150, deadline=None)
@given(st.lists(NAMES, max_size=8), st.lists(NAMES, max_size=8), st.lists(NAMES, max_size=2))
def test_match_names_equals_the_rule_read_literally(models, refs, taken):
    got = match_names(models, refs, taken=taken)
    assert got.matched == _brute_force(models, refs, taken)
    assert len(set(got.matched.values())) == len(got.matched)  # one-to-one
    assert set(got.matched) | set(got.unmatched) | set(got.ambiguous) == set(models)
    assert all(got.how[m] == ("exact" if m == r else "normalised") for m, r in got.matched.items())


def test_chatbot_arena_names_map_16_of_20_against_the_shipped_snapshot():
    got = match_names(ARENA_20, load_reference().index)
    assert len(got.matched) == 16 and set(got.how.values()) == {"exact"}
    assert sorted(got.unmatched) == NOT_ARENA and got.ambiguous == {}


@pytest.mark.parametrize(("dataset", "found", "normalised"), [("vicuna80", 2, 0), ("mt_bench", 13, 1)])
def test_name_matching_agrees_with_the_hand_written_shipped_maps(dataset, found, normalised):
    """A second path: the shipped maps were written by hand; matching by name alone finds a part of
    them (mt_bench: rwkv-4-raven-14b by its normalised form) and never another reference name."""
    from engine.ranking.reference import load_mapping

    shipped = load_mapping(dataset)
    by_hand = {r.model: r.arena_model.lower() for r in shipped.itertuples() if r.arena_model}
    got = match_names(shipped["model"], load_reference().index)
    assert len(got.matched) == found and list(got.how.values()).count("normalised") == normalised
    assert {m: r.lower() for m, r in got.matched.items()} == {m: by_hand[m] for m in got.matched}


def test_normalised_matches_and_ambiguity_are_listed():
    ref = pd.Series({"gpt-4o": 1300.0, "GPT 4o": 1290.0, "claude-1": 1150.0, "mistral-7b-instruct": 1000.0,
                     "mistral-7b-instruct-v0.2": 1050.0, "palm-2": 1003.0})
    models = ["Claude 1", "MISTRAL 7B instruct", "GPT-4o", "Palm_2", "palm-2"]
    s = map_reference(ref, model_map(None, "no-such-dataset"), models)
    assert s.to_dict() == {"Claude 1": 1150.0, "MISTRAL 7B instruct": 1000.0, "palm-2": 1003.0}
    assert s.attrs["how"] == {"Claude 1": "normalised", "MISTRAL 7B instruct": "normalised",
                              "palm-2": "exact"}
    # two reference names share GPT-4o's key; Palm_2's one match is palm-2's own exact name
    assert s.attrs["ambiguous"] == {"GPT-4o": ["gpt-4o", "GPT 4o"], "Palm_2": ["palm-2"]}
    assert s.attrs["unmatched"] == []


# -- a dataset without a shipped mapping -------------------------------------------------------------
def arena_like_rows(seed: int = 3, prompts: int = 6) -> pd.DataFrame:
    """Verdicts among the 20 names, each pair once per prompt, the winner drawn from the reference's
    ratings (the four unmatched names get made-up ratings), so the ranking is close to the reference's."""
    ref = load_reference()
    strength = {m: (ref[m] if m in ref.index else 1100.0 + 10 * i) for i, m in enumerate(ARENA_20)}
    rng = np.random.default_rng(seed)
    rows = []
    for p in range(prompts):
        for a, b in itertools.combinations(ARENA_20, 2):
            pa = 1 / (1 + 10 ** ((strength[b] - strength[a]) / 400))
            rows.append({"prompt_id": f"q{p}", "model_a": a, "model_b": b, "winner": "A" if rng.random() < pa
                         else "B", "judge": "human"})
    return pd.DataFrame(rows)


@pytest.fixture(scope="module")
def arena_base(shipped_db, tmp_path_factory):
    """A store holding dataset ``arena`` (the 20 names) next to the shipped vicuna80, made once."""
    from engine.ingest.importer import import_files
    from engine.store.connection import Store

    path = tmp_path_factory.mktemp("arena") / "lens.duckdb"
    shutil.copyfile(shipped_db, path)
    csv = path.parent / "verdicts.csv"
    arena_like_rows().to_csv(csv, index=False)
    with Store(path) as s:
        import_files(s, [csv], "arena")
    return path


@pytest.fixture
def arena_db(arena_base, tmp_path):
    """A private copy of ``arena_base`` (tests that write)."""
    db = tmp_path / "lens.duckdb"
    shutil.copyfile(arena_base, db)
    return db


def _compare(db, *extra):
    done = run_engine(["--db", db, "compare", "--dataset", "arena", "--format", "csv", *extra])
    assert done.returncode == 0, done.stderr
    return pd.read_csv(pd.io.common.StringIO(done.stdout)), done.stderr


def test_compare_maps_names_itself_as_the_hand_written_identity_map_does(arena_db, tmp_path):
    """Friction 1: compare refused "no model-name mapping" although 16 of 20 names are LMArena's; the
    hand-written identity map of those 16 fixed it. Matching by name gives the same numbers."""
    auto, notes = _compare(arena_db)
    identity = tmp_path / "identity.csv"
    pd.DataFrame({"model": [m for m in ARENA_20 if m not in NOT_ARENA]}).assign(
        arena_model=lambda d: d["model"]).to_csv(identity, index=False)
    hand, _ = _compare(arena_db, "--model-map", identity)
    assert auto["n_shared"].tolist() == [16]
    pd.testing.assert_frame_equal(auto, hand)
    assert ("4 model name(s) match no reference name (claude-instant-v1, claude-v1, gpt-3.5-turbo, gpt-4)"
            in notes)


def test_a_map_kept_with_the_dataset_places_the_other_four_and_follows_a_rename(arena_db, tmp_path):
    kept = tmp_path / "four.csv"
    pd.DataFrame({"model": NOT_ARENA, "arena_model": ["claude-instant-1", "claude-1", "gpt-3.5-turbo-0314",
                                                      "gpt-4-0314"]}).to_csv(kept, index=False)
    done = run_engine(["--db", arena_db, "datasets", "map", "arena", kept, "--format", "csv"], check=True)
    table = pd.read_csv(pd.io.common.StringIO(done.stdout), keep_default_na=False)
    assert table["how"].value_counts().to_dict() == {"exact": 16, "stored": 4}
    assert "note: 20 of 20 models have a reference name." in done.stderr
    with_map, _ = _compare(arena_db)
    assert with_map["n_shared"].tolist() == [20]
    # the same numbers as the whole map given on the command line
    whole = tmp_path / "whole.csv"
    table[["model", "reference_model"]].to_csv(whole, index=False)
    given_once, _ = _compare(arena_db, "--model-map", whole)
    pd.testing.assert_frame_equal(with_map, given_once)
    run_engine(["--db", arena_db, "datasets", "rename", "arena", "arena2"], check=True)
    shown = run_engine(["--db", arena_db, "datasets", "map", "arena2", "--format", "csv"], check=True)
    assert pd.read_csv(pd.io.common.StringIO(shown.stdout))["how"].eq("stored").sum() == 4
    run_engine(["--db", arena_db, "datasets", "delete", "arena2"], check=True)
    from engine.store.connection import Store

    with Store(arena_db, read_only=True) as s:
        assert s.cursor().execute("SELECT count(*) FROM model_maps").fetchone()[0] == 0


def test_layers_file_then_stored_then_shipped_then_names(shipped_store, tmp_path):
    from engine.store.model_maps import set_stored_map

    ref = load_reference()
    base = reference_for_dataset("vicuna80", store=shipped_store)
    assert base["gpt4"] == ref["gpt-4-0314"] and base.attrs["how"]["gpt4"] == "shipped"
    set_stored_map(shipped_store, "vicuna80", pd.DataFrame({"model": ["gpt4", "guanaco-7b"],
                                                            "reference_model": ["gpt-4-0613", "vicuna-7b"]}))
    try:
        stored = reference_for_dataset("vicuna80", store=shipped_store)
        assert stored["gpt4"] == ref["gpt-4-0613"] and stored["guanaco-7b"] == ref["vicuna-7b"]
        assert stored["claude"] == base["claude"]  # the shipped rows the stored map does not name
        f = tmp_path / "m.csv"
        f.write_text("model,arena_model\ngpt4,gpt-4-1106-preview\n")
        given = reference_for_dataset("vicuna80", store=shipped_store, map_file=f)
        assert given["gpt4"] == ref["gpt-4-1106-preview"] and given["guanaco-7b"] == ref["vicuna-7b"]
    finally:
        set_stored_map(shipped_store, "vicuna80", pd.DataFrame({"model": [], "reference_model": []}))
    assert reference_for_dataset("vicuna80", store=shipped_store).equals(base)


def test_reference_for_an_uploaded_dataset_and_its_categories(arena_db):
    from engine.store.connection import Store

    with Store(arena_db) as s:
        ref, note = reference_for("arena", None, s)
        assert ref is not None and len(ref) == 16
        assert note == "LMArena reference, category full, 16 mapped models, 16 by name"
        table = name_map_table(s, "arena")
        assert table.loc[table["how"] == "unmatched", "model"].tolist() == NOT_ARENA
    assert reference_category("arena", "coding") == ("coding", "")
    cat, why = reference_category("arena", "roleplay")
    assert cat == "full" and "no category 'roleplay'" in why


def test_setting_a_map_is_a_change_that_keeps_the_style_counts(arena_db):
    from engine.store.connection import Store
    from engine.store.model_maps import set_stored_map, stored_map
    from engine.store.style_cache import counted, write_counts

    with Store(arena_db) as s:
        v0, r0 = s.dataset_version("arena"), s.dataset_revision("arena")
        write_counts(s, "arena", v0, "rule-x", iter([]), lambda: 0.0)
        v1 = set_stored_map(s, "arena", pd.DataFrame({"model": ["gpt-4"], "reference_model": ["gpt-4-0314"]}))
        assert v1 == s.dataset_version("arena") > v0 and s.dataset_revision("arena") == r0 + 1
        assert counted(s, "arena", v1, "rule-x") and not counted(s, "arena", v0, "rule-x")
        assert stored_map(s, "arena").to_dict("list") == {"model": ["gpt-4"],
                                                          "reference_model": ["gpt-4-0314"]}


@pytest.mark.parametrize(("rows", "message"), [
    ({"model": ["a", "a"], "reference_model": ["x", "y"]}, "lists the model 'a' twice"),
    ({"model": ["a", " "], "reference_model": ["x", "y"]}, "Row 2 of the model map has no model name"),
])
def test_bad_maps_are_one_sentence_and_store_nothing(arena_db, rows, message):
    from engine.store.connection import Store
    from engine.store.model_maps import set_stored_map, stored_map

    with Store(arena_db) as s:
        v = s.dataset_version("arena")
        with pytest.raises(LensError, match=message):
            set_stored_map(s, "arena", pd.DataFrame(rows))
        assert stored_map(s, "arena").empty and s.dataset_version("arena") == v
        with pytest.raises(LensError, match="no dataset named 'nope'"):
            set_stored_map(s, "nope", pd.DataFrame({"model": ["a"], "reference_model": ["b"]}))


def test_datasets_map_refuses_bad_files_in_one_sentence(arena_db, tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("name,target\na,b\n")
    for args, said in (([bad], "needs the columns 'model' and 'arena_model'"),
                       ([tmp_path / "none.csv"], "does not exist"),
                       ([bad, "--clear"], "either a map FILE to keep or --clear"),
                       (["--clear"], None)):
        done = run_engine(["--db", arena_db, "datasets", "map", "arena", *args])
        if said is None:
            assert done.returncode == 0, done.stderr
        else:
            assert done.returncode == 2 and said in done.stderr and done.stderr.count("\n") == 1
    missing = run_engine(["--db", arena_db, "datasets", "map", "nope"])
    assert missing.returncode == 2 and "no dataset named 'nope'" in missing.stderr


def test_a_dataset_read_in_place_maps_its_names_too(empty_store, tmp_path):
    """Attached Parquet has no rows in the verdicts table: its names are read from the files."""
    from engine.store.attached import attach

    arena_like_rows(prompts=1).to_parquet(tmp_path / "battles.parquet", index=False)
    attach(empty_store, "inplace", str(tmp_path / "*.parquet"))
    ref, note = reference_for("inplace", None, empty_store)
    assert ref is not None and sorted(ref.index) == sorted(m for m in ARENA_20 if m not in NOT_ARENA)
    assert note.endswith("16 mapped models, 16 by name")


def test_map_rows_for_names_the_dataset_lacks_change_nothing():
    """A kept map may name models of a later import: they are neither rated, nor listed, nor do they
    take a reference name from the dataset's own models."""
    ref = pd.Series({"gpt-4-0314": 1186.0, "claude-1": 1150.0})
    mapping = pd.DataFrame({"model": ["later", "gone"], "arena_model": ["claude-1", ""],
                            "arena_display": ["", ""], "source": ["stored", "stored"]})
    s = map_reference(ref, mapping, ["Claude 1", "gpt-4-0314"])
    assert s.to_dict() == {"gpt-4-0314": 1186.0, "Claude 1": 1150.0}
    assert s.attrs["unmapped"] == [] and s.attrs["missing"] == []


def test_the_name_table_of_a_dataset_without_models_is_text_the_data_editor_takes(tmp_path):
    """Kills: the name table of a dataset with no model (a stale pick after a delete) built from empty
    lists, whose float columns made the Data page's st.data_editor raise (a TextColumn on floats), seen as
    "This page stopped on an unexpected error (StreamlitAPIException)" after a rename and a delete."""
    from streamlit.testing.v1 import AppTest

    from engine.ingest.shipped import open_store
    from engine.ranking.reference import name_map_table

    store = open_store(tmp_path / "s.duckdb", ensure_default=False)
    table = name_map_table(store, "nothing-here")
    assert len(table) == 0
    table[["model", "reference_model", "how", "candidates"]].to_pickle(tmp_path / "t.pkl")
    script = f'''
import pandas as pd, streamlit as st
table = pd.read_pickle({str(tmp_path / "t.pkl")!r})
st.data_editor(table, hide_index=True, disabled=["model", "how", "candidates"],
               column_config={{"reference_model": st.column_config.TextColumn("reference name")}})
'''
    at = AppTest.from_string(script).run()
    assert [e.message for e in at.exception] == []
