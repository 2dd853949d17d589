"""Issue 23 re-checked on the readers issues 24 and 25 added (part recheck23 of issue 26): names.

What note23 left alone, now caught, and the name rules on the pair-count reader:

- a name with a space other than the plain one inside (``gpt\\u00a04`` prints as ``gpt 4``) is refused
  by every name check (Python's ``name_problem`` and the RE2 pattern Arrow and DuckDB run), checked
  against every space separator Unicode lists (brute force over all code points);
- a model written wholly in look-alike Cyrillic or Greek letters beside the Latin model it reads as
  (``аре`` beside ``ape``) is flagged with its code points, checked against a brute-force
  transliteration of drawn names, through the verdict import and the pair-count import;
- a pair-count file's model names keep the verdict import's 256-character limit (a 5,000-character
  name was stored).
"""

from __future__ import annotations

import shutil
import sys
import unicodedata

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from cli_inprocess import run_engine
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.errors import LensError
from engine.ingest.importer import import_files
from engine.ingest.limits import INVISIBLE_RE, NAME_MAX_CHARS, lookalike_notes, name_problem
from engine.ingest.pair_count_files import import_pair_counts, read_pair_count_files
from engine.ranking.reference import keep_map
from engine.store.connection import Store
from engine.store.model_maps import stored_map

SPACES = [chr(c) for c in range(sys.maxunicode + 1) if unicodedata.category(chr(c)) == "Zs"]
"""Every space separator, by brute force over the code points (the rule's ranges are written by hand)."""

# Latin letter -> its Cyrillic and Greek look-alikes, written out here independently of the rule's table
TWINS = {"a": "а", "e": "е", "o": "оο", "p": "рρ", "c": "с", "y": "у", "x": "хχ", "i": "іι", "A": "АΑ",
         "B": "ВΒ", "E": "ЕΕ", "H": "НΗ", "K": "КΚ", "M": "МΜ", "O": "ОΟ", "P": "РΡ", "T": "ТΤ", "X": "ХΧ"}


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    return Store(tmp_path_factory.mktemp("r23") / "s.duckdb")


def test_every_space_but_the_plain_one_is_refused_and_named(tmp_path):
    assert " " in SPACES and "\u00a0" in SPACES and len(SPACES) > 10
    arrow = pc.match_substring_regex(pa.array([f"gpt{ch}4" for ch in SPACES]), INVISIBLE_RE).to_pylist()
    for ch, hit in zip(SPACES, arrow, strict=True):
        problem = name_problem(f"gpt{ch}4")
        if ch == " ":
            assert problem is None and not hit
        else:
            assert problem is not None and f"U+{ord(ch):04X} {unicodedata.name(ch)}" in problem, ch
            assert hit, f"the Arrow pattern misses U+{ord(ch):04X}"


def test_a_no_break_space_inside_a_name_is_one_sentence_in_every_import(store, tmp_path):
    verdicts = tmp_path / "v.csv"
    verdicts.write_text("prompt_id,model_a,model_b,winner\np1,gpt\u00a04,claude,A\np2,gpt 4,claude,B\n",
                        encoding="utf-8")
    result = import_files(store, [verdicts], "nbsp_v", skip_invalid=True, file_judges={str(verdicts): "j"})
    rejected = result.report.rejected
    assert result.rows_stored == 1 and len(rejected) == 1
    assert "U+00A0 NO-BREAK SPACE" in rejected["reason"].iloc[0]
    counts = tmp_path / "c.csv"
    counts.write_text("model_a,model_b,wins_a,wins_b,ties\ngpt\u20094,claude,1,2,0\n", encoding="utf-8")
    with pytest.raises(LensError, match=r"row 1 names the model .*U\+2009 THIN SPACE.*nothing was stored"):
        import_pair_counts(store, [counts], "nbsp_c")
    with pytest.raises(LensError, match=r"U\+3000 IDEOGRAPHIC SPACE"):
        import_files(store, [verdicts], "data\u3000set")


_latin_name = st.text(alphabet=sorted(TWINS) + list("0123-"), min_size=1, max_size=6).filter(
    lambda s: any(ch.isalpha() for ch in s))


@settings(max_examples=60, deadline=None)
@given(names=st.lists(_latin_name, min_size=1, max_size=5, unique=True), data=st.data())
def test_a_whole_script_look_alike_is_flagged_exactly_when_its_latin_twin_is_there(names, data):
    spelt = {}
    for name in names:  # write some names in look-alike letters, keeping or dropping the Latin one
        if data.draw(st.booleans()):
            spelt[name] = "".join(data.draw(st.sampled_from(TWINS[ch])) if ch in TWINS else ch for ch in name)
    keep_latin = {n for n in spelt if data.draw(st.booleans())}
    all_names = [n for n in names if n not in spelt or n in keep_latin] + list(spelt.values())
    notes = lookalike_notes(all_names)
    want = sorted(spelt[n] for n in keep_latin)
    flagged = sorted(n for n in spelt.values()
                     if any(f"model {n!r} is written in look-alike" in s for s in notes))
    assert flagged == want and len(notes) == len(want)
    for note in notes:
        assert "U+" in note and ("CYRILLIC" in note or "GREEK" in note)


def test_the_look_alike_note_reaches_both_imports(store, tmp_path):
    verdicts = tmp_path / "v.csv"
    verdicts.write_text("prompt_id,model_a,model_b,winner\np1,ape,аре,A\np2,ape,gpt4,B\n", encoding="utf-8")
    result = import_files(store, [verdicts], "lookalike_v", file_judges={str(verdicts): "j"})
    notes = result.report.notes()
    assert any("'аре' is written in look-alike letters (U+0430 CYRILLIC SMALL LETTER A" in n
               and "reads as the model 'ape'" in n for n in notes), notes
    # a later import that brings the Latin twin of a stored look-alike is flagged too
    later = tmp_path / "w.csv"
    later.write_text("prompt_id,model_a,model_b,winner\np3,gpt4,ΤΟΡ,A\n", encoding="utf-8")
    import_files(store, [later], "lookalike_v", file_judges={str(later): "j"})
    third = tmp_path / "x.csv"
    third.write_text("prompt_id,model_a,model_b,winner\np4,gpt4,TOP,A\n", encoding="utf-8")
    notes = import_files(store, [third], "lookalike_v", file_judges={str(third): "j"}).report.notes()
    assert any("'ΤΟΡ'" in n and "GREEK" in n and "'TOP'" in n for n in notes), notes
    counts = tmp_path / "c.csv"
    counts.write_text("model_a,model_b,wins_a,wins_b,ties\nape,аре,1,2,0\nape,b,1,0,0\n", encoding="utf-8")
    sentences = read_pair_count_files([counts]).sentences()
    assert any("'аре' is written in look-alike letters" in s for s in sentences), sentences


def test_plain_names_of_one_script_raise_no_note():
    assert lookalike_notes(["gpt4", "модель", "Ωμέγα", "ape", "вот", "claude"]) == []


@pytest.mark.parametrize("length", [NAME_MAX_CHARS, NAME_MAX_CHARS + 1])
def test_a_pair_count_model_name_keeps_the_name_limit(tmp_path, length):
    counts = tmp_path / "c.csv"
    counts.write_text(f"model_a,model_b,wins_a,wins_b,ties\na,{'b' * length},3,1,0\n", encoding="utf-8")
    if length <= NAME_MAX_CHARS:
        assert read_pair_count_files([counts]).n_models == 2
    else:
        with pytest.raises(LensError, match=f"row 1 names the model .* is {length} characters long"):
            read_pair_count_files([counts])


@pytest.mark.parametrize("name", ["clau\u00a0de", "x\x1b]0;p\x07", "gр-4", "\u3164"])
def test_a_model_map_name_that_renders_blank_or_as_another_is_refused(store, tmp_path, name):
    verdicts = tmp_path / "v.csv"
    verdicts.write_text("prompt_id,model_a,model_b,winner\np1,claude,gpt-4,A\n", encoding="utf-8")
    import_files(store, [verdicts], "mapped", replace=True, file_judges={str(verdicts): "j"})
    before = store.dataset_revision("mapped")
    for row in ({"model": name, "reference_model": "claude-1"}, {"model": "claude", "reference_model": name}):
        with pytest.raises(LensError, match=r"Row 1 of the model map names the .*U\+.*nothing was kept"):
            keep_map(store, "mapped", pd.DataFrame([row]))
    assert store.dataset_revision("mapped") == before and stored_map(store, "mapped").empty


def test_datasets_map_says_which_map_names_match_no_model(tmp_path, shipped_db):
    db, verdicts, mapping = tmp_path / "s.duckdb", tmp_path / "v.csv", tmp_path / "m.csv"
    shutil.copyfile(shipped_db, db)  # a command on a new file would import the shipped datasets first
    verdicts.write_text("prompt_id,model_a,model_b,winner\np1,claude,gpt-4,A\n", encoding="utf-8")
    mapping.write_text("model,reference_model\nclaude,claude-1\ngpt-5,gpt-4-0314\n", encoding="utf-8")
    run_engine(["--db", db, "import", verdicts, "--dataset", "d", "--judge", "j"], check=True)
    done = run_engine(["--db", db, "datasets", "map", "d", mapping])
    assert done.returncode == 0, done.stderr
    said = "note: 1 model(s) of the map are not models of dataset d ('gpt-5'); they match nothing"
    assert said in done.stderr
