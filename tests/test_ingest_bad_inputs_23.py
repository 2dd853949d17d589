"""Bad inputs of issue 23 that the import itself answers (bugs 3, 11, 12, 14, 18): each is one sentence
naming the file (and the line where there is one) or a rejected row, never a traceback, a silent
drop or a value stored as something else.

Expected counts come from how each file was written (rows written, rows planted bad), and the code
points a message must name are computed here with ``unicodedata``, not read from the engine.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys
import unicodedata
import zipfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import run_engine

from engine.errors import LensError
from engine.ingest.importer import validate_file
from engine.ingest.limits import COLUMNS_MAX, check_dataset_name
from engine.store.connection import Store

HEADER = "prompt_id,model_a,model_b,winner"
GOOD = ["p1,a,b,A", "p2,a,b,B", "p3,b,a,tie"]


def _csv(path: Path, rows: list[str], header: str = HEADER) -> Path:
    path.write_text(header + "\n" + "".join(r + "\n" for r in rows), encoding="utf-8")
    return path


def _verdicts(db: Path) -> dict[str, int]:
    with Store(db) as s:
        return {str(k): int(v) for k, v in s.datasets().set_index("name")["verdicts"].items()}


@pytest.fixture(autouse=True)
def _store_with_the_shipped_data(tmp_path: Path, shipped_db: Path) -> None:
    """Each test's store starts as a copy of one holding the shipped dataset (imported once a session)."""
    shutil.copyfile(shipped_db, tmp_path / "s.duckdb")


def _import(tmp_path: Path, *args: str):
    return run_engine(["--db", str(tmp_path / "s.duckdb"), "import", *args])


def _one_sentence(out) -> str:
    """The command's error: exit 2, no traceback, one ``error:`` line."""
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr[-2000:]
    errors = [x for x in out.stderr.splitlines() if x.startswith("error: ")]
    assert len(errors) == 1, out.stderr
    return errors[0]


# --- bug 3: one file given twice in one import ----------------------------------------------------------

@pytest.mark.parametrize("spelling", ["same", "dotdot", "symlink"])
def test_one_file_given_twice_in_one_import_is_refused_and_nothing_stored(tmp_path: Path, spelling: str):
    """fa0c159 stored 6 verdicts from this 3-row file, exit 0, when the same path came twice."""
    f = _csv(tmp_path / "v.csv", GOOD)
    second = {"same": str(f), "dotdot": str(tmp_path / ".." / tmp_path.name / "v.csv"),
              "symlink": str(tmp_path / "link.csv")}[spelling]
    if spelling == "symlink":
        os.symlink(f, second)
    line = _one_sentence(_import(tmp_path, str(f), second, "--dataset", "d"))
    assert "is given twice in this import" in line and "v.csv" in line
    assert _verdicts(tmp_path / "s.duckdb").get("d") is None
    ok = _import(tmp_path, str(f), "--dataset", "d")  # given once it is read once
    assert ok.returncode == 0 and _verdicts(tmp_path / "s.duckdb")["d"] == len(GOOD)


# --- bug 11: names that render blank or as a look-alike -----------------------------------------------------

BLANKS = ["\u3164", "\u115f", "\u1160", "\uffa0", "\u2800"]


def test_a_name_that_renders_blank_is_a_rejected_row_naming_the_code_point(tmp_path: Path):
    """fa0c159 stored Hangul fillers as model, judge and prompt names (they print as nothing). One row
    per (character, column, alone or inside a name), after three good rows."""
    planted = []
    rows = [r + ",j" for r in GOOD]
    for char in BLANKS:
        for column in ("prompt_id", "model_a", "model_b", "judge"):
            for name in (char, f"gpt{char}4"):
                cells = {"prompt_id": "p9", "model_a": "a", "model_b": "b", "winner": "A", "judge": "j"}
                cells[column] = name
                rows.append(",".join(cells.values()))
                planted.append((len(rows) + 1, column, char))
    f = _csv(tmp_path / "n.csv", rows, header=HEADER + ",judge")
    rep = validate_file(f, dataset="d")
    assert (rep.rows_read, rep.n_good, rep.n_rejected) == (len(rows), 3, len(planted))
    for sentence, (line, column, char) in zip(rep.sentences(), planted, strict=True):
        assert sentence.startswith(f"{f} line {line}: {column} ")
        assert f"U+{ord(char):04X} {unicodedata.name(char)}" in sentence


def test_a_name_of_combining_marks_only_is_refused(tmp_path: Path):
    marks = "\u0301\u0308"
    f = _csv(tmp_path / "m.csv", [*GOOD, f"p4,{marks},b,A"])
    rep = validate_file(f, dataset="d")
    (sentence,) = rep.sentences()
    assert "combining marks only" in sentence and "U+0301" in sentence
    assert (rep.n_good, rep.n_rejected) == (3, 1)


@pytest.mark.parametrize("name,foreign,twin", [
    ("g\u0440t4", "\u0440", "gpt4"),  # Cyrillic er
    ("\u0430lpha", "\u0430", "alpha"),  # Cyrillic a
    ("\u03bfpus", "\u03bf", "opus"),  # Greek omicron
])
def test_a_word_mixing_latin_with_cyrillic_or_greek_is_refused_naming_the_look_alike(
        tmp_path: Path, name: str, foreign: str, twin: str):
    """fa0c159 kept ``gрt4`` beside ``gpt4`` as two models without a note."""
    f = _csv(tmp_path / "l.csv", ["p1,gpt4,b,A", f"p2,{name},b,A"])
    rep = validate_file(f, dataset="d")
    (sentence,) = rep.sentences()
    assert f"U+{ord(foreign):04X} {unicodedata.name(foreign)}" in sentence
    assert f"it reads as {twin!r}" in sentence


@pytest.mark.parametrize("name", ["модель-gpt", "α-model", "модель", "Ωμέγα", "gpt-4o", "Qwen2.5-72B"])
def test_words_of_one_script_each_are_kept(tmp_path: Path, name: str):
    f = _csv(tmp_path / "k.csv", [f"p1,{name},b,A"])
    rep = validate_file(f, dataset="d")
    assert rep.n_rejected == 0 and rep.good["model_a"].tolist() == [unicodedata.normalize("NFC", name)]


@pytest.mark.parametrize("name", ["\u3164", "a\u115fb", "\u0301", "g\u0440t4"])
def test_a_dataset_name_that_renders_blank_or_as_a_look_alike_is_refused(tmp_path: Path, name: str):
    with pytest.raises(LensError, match="U\\+"):
        check_dataset_name(name)
    f = _csv(tmp_path / "v.csv", GOOD)
    line = _one_sentence(_import(tmp_path, str(f), "--dataset", name))
    assert "The dataset name" in line and name not in _verdicts(tmp_path / "s.duckdb")


# --- bug 12: reader crashes (JSON) and bug 18: JSON NaN / true ---------------------------------------------

ROW = {"prompt_id": "p", "model_a": "a", "model_b": "b", "winner": "A"}
PLANTED = {
    "a 5,000-digit integer": ('"variant": ' + "7" * 5000, "an integer of 5,000 digits"),
    "a lone surrogate": ('"model_a": "x\\ud800"', "a lone surrogate \\ud800"),
    "NaN": ('"prob_a": NaN', "NaN, which is not JSON"),
    "Infinity": ('"tstamp": -Infinity', "-Infinity, which is not JSON"),
}


def _json_lines(planted: str) -> list[str]:
    good = [json.dumps({**ROW, "prompt_id": f"p{i}"}) for i in range(3)]
    bad = json.dumps({**ROW, "prompt_id": "bad"})[:-1] + ", " + planted + "}"
    return [good[0], bad, good[1], good[2]]


@pytest.mark.parametrize("container", ["jsonl", "json"])
def test_a_json_value_no_verdict_can_hold_is_its_row_rejected(tmp_path: Path, container: str):
    """fa0c159: the 5,000-digit integer and the lone surrogate ended the import with a traceback (exit 1);
    JSON NaN was stored as NULL where CSV ``nan`` is refused. Good rows at odd lines, planted at even."""
    lines = []
    for planted, _ in PLANTED.values():
        lines += [json.dumps({**ROW, "prompt_id": f"p{len(lines)}"}),
                  json.dumps({**ROW, "prompt_id": "bad"})[:-1] + ", " + planted + "}"]
    f = tmp_path / f"v.{container}"
    f.write_text("\n".join(lines) + "\n" if container == "jsonl" else "[" + ",\n".join(lines) + "]")
    out = _import(tmp_path, str(f), "--dataset", "d", "--skip-invalid", "--rejected", str(tmp_path / "r.csv"))
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr[-3000:]
    sentences = [x for x in out.stderr.splitlines() if x.startswith(str(f))]
    assert len(sentences) == len(PLANTED)
    for k, (sentence, (_, words)) in enumerate(zip(sentences, PLANTED.values(), strict=True)):
        assert sentence.startswith(f"{f} line {2 * k + 2}: the ") and words in sentence
    n = len(PLANTED)
    assert f"read {2 * n} = stored {n} + rejected {n}" in out.stdout
    assert _verdicts(tmp_path / "s.duckdb")["d"] == n


def test_a_surrogate_pair_written_as_escapes_is_one_character_and_kept(tmp_path: Path):
    f = tmp_path / "e.jsonl"
    f.write_text(json.dumps({**ROW, "model_a": "robot \U0001f916"}, ensure_ascii=True) + "\n")
    rep = validate_file(f, dataset="d")
    assert rep.n_rejected == 0 and rep.good["model_a"].tolist() == ["robot \U0001f916"]


@pytest.mark.parametrize("column,value", [("model_a", True), ("winner", False), ("prob_a", True),
                                          ("explanation", False), ("variant", True)])
def test_a_json_boolean_is_a_rejected_row_not_stored_as_text_or_number(tmp_path: Path, column: str, value):
    """fa0c159 stored JSON ``true`` in a name as the text ``True`` and in prob_a as 1.0."""
    f = tmp_path / "b.jsonl"
    f.write_text("".join(json.dumps(r) + "\n" for r in [ROW, {**ROW, column: value}]))
    rep = validate_file(f, dataset="d")
    assert (rep.n_good, rep.n_rejected) == (1, 1)
    assert rep.sentences() == [f"{f} line 2: {column} is the boolean {str(value).lower()}, which is no value "
                               "of that column."]


def test_a_parquet_boolean_column_in_a_verdict_field_is_refused_per_row(tmp_path: Path):
    f = tmp_path / "b.parquet"
    pq.write_table(pa.table({"prompt_id": ["p1", "p2"], "model_a": ["a", "a"], "model_b": ["b", "b"],
                             "winner": ["A", "B"], "prob_a": pa.array([True, None])}), f)
    rep = validate_file(f, dataset="d")
    assert (rep.n_good, rep.n_rejected) == (1, 1) and "prob_a is the boolean true" in rep.sentences()[0]


# --- bug 18: tstamp out of range, --map naming nothing, unreadable files ---------------------------------

@pytest.mark.parametrize("stamp", ["1e20", "-1e300", "1.7e308", "1700000000000", "0001-01-01T00:00:00Z"])
def test_a_tstamp_outside_the_years_1_to_9999_is_refused(tmp_path: Path, stamp: str):
    """fa0c159 stored 1e20, -1e300 and 1.7e308 as times."""
    f = _csv(tmp_path / "t.csv",
             ["p1,a,b,A,1700000000", "p2,a,b,A,2024-05-01T12:00:00Z", f"p3,a,b,A,{stamp}"],
             header=HEADER + ",tstamp")
    rep = validate_file(f, dataset="d")
    if stamp.startswith("0001"):  # the first second of year 1 is inside
        assert rep.n_rejected == 0
        return
    (sentence,) = rep.sentences()
    assert sentence.startswith(f"{f} line 4: tstamp {stamp} is outside the years 1 to 9999")
    assert ("milliseconds" in sentence) == (stamp == "1700000000000")


def test_a_column_map_naming_no_column_is_refused(tmp_path: Path):
    """fa0c159 ignored ``--map nosuch=winner`` and exited 0."""
    f = _csv(tmp_path / "v.csv", GOOD)
    line = _one_sentence(_import(tmp_path, str(f), "--dataset", "d", "--map", "nosuch=winner"))
    assert "'nosuch'" in line and "not a column of" in line and "d" not in _verdicts(tmp_path / "s.duckdb")
    g = _csv(tmp_path / "w.csv", ["p1,a,b,A"], header="prompt_id,model_a,model_b,Verdict")
    both = _import(tmp_path, str(f), str(g), "--dataset", "d", "--map", "verdict=winner")  # one file has it
    assert both.returncode == 0 and _verdicts(tmp_path / "s.duckdb")["d"] == 4, both.stderr


def _gzip(tmp_path: Path) -> Path:
    f = tmp_path / "v.csv.gz"
    f.write_bytes(gzip.compress((HEADER + "\n" + "\n".join(GOOD) + "\n").encode()))
    return f


def _zip(tmp_path: Path) -> Path:
    f = tmp_path / "v.zip"
    with zipfile.ZipFile(f, "w") as z:
        z.writestr("v.csv", HEADER + "\n" + "\n".join(GOOD) + "\n")
    return f


def _nul(tmp_path: Path) -> Path:
    f = tmp_path / "nul.csv"
    f.write_bytes(b"\x00" * 10_000)
    return f


def _utf16(tmp_path: Path) -> Path:
    f = tmp_path / "u16.csv"
    f.write_bytes((HEADER + "\n" + "\n".join(GOOD) + "\n").encode("utf-16"))
    return f


def _cr(tmp_path: Path) -> Path:
    f = tmp_path / "cr.csv"
    f.write_bytes((HEADER + "\r" + "\r".join(GOOD) + "\r").encode())
    return f


def _cr_jsonl(tmp_path: Path) -> Path:
    f = tmp_path / "cr.jsonl"
    f.write_bytes(("\r".join(json.dumps(ROW) for _ in range(3)) + "\r").encode())
    return f


@pytest.mark.parametrize("make,words", [
    (_gzip, "is a gzip-compressed file"), (_zip, "is a ZIP archive file"),
    (_nul, "has a NUL byte at byte 1,"), (_utf16, "looks like UTF-16"),
    (_cr, "ends its lines with a bare carriage return"),
    (_cr_jsonl, "ends its lines with a bare carriage return"),
], ids=["gzip", "zip", "nul", "utf16", "cr-csv", "cr-jsonl"])
def test_a_file_that_is_not_line_ended_utf8_text_is_one_sentence_saying_what_it_is(
        tmp_path: Path, make, words):
    """fa0c159: 'header not valid UTF-8' for gzip / ZIP, 'a header but no data rows' for 10,000 NUL
    bytes, 'universal-newline mode?' for CR line ends."""
    f = make(tmp_path)
    line = _one_sentence(_import(tmp_path, str(f), "--dataset", "d", *(["--check"] if make != _gzip else [])))
    assert line.startswith(f"error: {f} ") and words in line, line
    assert "d" not in _verdicts(tmp_path / "s.duckdb")


# --- bug 14: wide headers -------------------------------------------------------------------------------

def _peak_rss_mb(args: list[str]) -> tuple[int, subprocess.CompletedProcess]:
    """Peak RSS (MB) of ``python -m engine ARGS`` as its own process (a parent that runs nothing else)."""
    probe = ("import resource, subprocess, sys;"
             "p = subprocess.run(sys.argv[1:], capture_output=True, text=True);"
             "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss); print(p.returncode);"
             "sys.stderr.write(p.stderr)")
    out = subprocess.run([sys.executable, "-c", probe, sys.executable, "-m", "engine", *args],
                         capture_output=True, text=True, check=True, cwd=Path(__file__).resolve().parents[1])
    rss_kb, rc = out.stdout.split()[:2]
    return int(rss_kb) // 1024, subprocess.CompletedProcess(args, int(rc), "", out.stderr)


def test_a_400000_column_header_is_refused_in_bounded_memory(tmp_path: Path):
    """fa0c159 needed 3.86 GB (68 s) to ``--check`` this 3.5 MB file; now one sentence from its header
    line."""
    n = 400_000
    f = tmp_path / "wide.csv"
    f.write_text(",".join(["prompt_id", "model_a", "model_b", "winner", *(f"c{i}" for i in range(n - 4))])
                 + "\n" + ",".join(["p1", "a", "b", "A", *[""] * (n - 4)]) + "\n")
    rss, out = _peak_rss_mb(["--db", str(tmp_path / "s.duckdb"), "import", str(f), "--dataset", "d",
                             "--check"])
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert f"The header (line 1) of {f} has {n:,} columns; a verdict file may have at most {COLUMNS_MAX:,}" \
        in out.stderr
    assert rss < 600, rss


def test_the_column_limit_counts_quoted_delimiters_as_text(tmp_path: Path):
    names = [f'"c,{i}"' for i in range(COLUMNS_MAX - 4)]  # 2 x the limit in commas, within it in columns
    f = tmp_path / "q.csv"
    f.write_text(",".join([HEADER, *names]) + "\n" + ",".join(["p1,a,b,A", *[""] * len(names)]) + "\n")
    rep = validate_file(f, dataset="d")
    assert rep.n_good == 1
    wider = tmp_path / "w.csv"
    wider.write_text(",".join([HEADER, *names, "more"]) + "\n")
    with pytest.raises(LensError, match=f"has {COLUMNS_MAX + 1:,} columns"):
        validate_file(wider, dataset="d")


def test_wide_json_and_parquet_are_refused_and_the_columns_not_kept_note_is_bounded(tmp_path: Path):
    wide = {**ROW, **{f"k{i}": 1 for i in range(COLUMNS_MAX)}}
    f = tmp_path / "w.jsonl"
    f.write_text(json.dumps(ROW) + "\n" + json.dumps(wide) + "\n")
    rep = validate_file(f, dataset="d")
    assert rep.sentences() == [f"{f} line 2: the record has {COLUMNS_MAX + 4:,} fields; a verdict record may "
                               f"have at most {COLUMNS_MAX:,}."]
    a = tmp_path / "w.json"
    a.write_text(json.dumps([ROW, wide, ROW]))
    rep = validate_file(a, dataset="d")
    assert (rep.n_good, rep.n_rejected) == (2, 1)
    assert rep.sentences()[0].startswith(f"{a} line 2: the record has")
    p = tmp_path / "w.parquet"
    pq.write_table(pa.table({k: [v] for k, v in wide.items()}), p)
    with pytest.raises(LensError, match=f"has {COLUMNS_MAX + 4:,} columns"):
        validate_file(p, dataset="d")
    extra = 900
    c = tmp_path / "n.csv"
    c.write_text(",".join([HEADER, *(f"extra{i}" for i in range(extra))]) + "\n"
                 + ",".join(["p1,a,b,A", *[""] * extra]) + "\n")
    (note,) = validate_file(c, dataset="d").notes()
    assert note.endswith(f"extra19 and {extra - 20} more.") and len(note) < 400


@pytest.mark.parametrize("compress,words", [
    (lambda b: __import__("bz2").compress(b), "bzip2-compressed"),
    (lambda b: __import__("lzma").compress(b), "xz-compressed"),
    (lambda b: b"\x28\xb5\x2f\xfd" + b, "Zstandard-compressed"),
    (lambda b: b"7z\xbc\xaf\x27\x1c" + b, "7-Zip archive"),
], ids=["bz2", "xz", "zstd", "7z"])
def test_other_compressed_files_are_named_by_their_magic_bytes(tmp_path: Path, compress, words: str):
    f = tmp_path / "v.jsonl"
    f.write_bytes(compress((json.dumps(ROW) + "\n").encode()))
    with pytest.raises(LensError, match=f"^{f} is a {words}"):
        validate_file(f, dataset="d")


def test_a_column_map_with_a_tool_format_is_refused(tmp_path: Path):
    f = tmp_path / "v.jsonl"
    f.write_text(json.dumps({"question_id": 1, "model_1": "a", "model_2": "b", "g1_winner": "model_1",
                             "g2_winner": "model_2", "judge": ["gpt-4", "pair-v2"], "turn": 1}) + "\n")
    line = _one_sentence(_import(tmp_path, str(f), "--dataset", "d", "--format", "fastchat-pair",
                                 "--map", "model_1=model_a", "--check"))
    assert "--map would be ignored" in line


def test_one_upload_given_twice_is_refused():
    from engine.ingest.verdicts import validate_many

    data = (HEADER + "\n" + "\n".join(GOOD) + "\n").encode()
    with pytest.raises(LensError, match="a.csv is given twice in this import"):
        validate_many([(data, "a.csv"), (data, "a.csv")], dataset="d")


@pytest.mark.parametrize("option", [["--judge", "\u3164"], ["--model-name", "a=g\u0440t4"],
                                    ["--judge-name", "j=\u0301"]])
def test_a_name_given_on_the_command_line_that_renders_blank_is_one_sentence(tmp_path: Path, option):
    f = _csv(tmp_path / "v.csv", GOOD)
    line = _one_sentence(_import(tmp_path, str(f), "--dataset", "d", "--check", *option))
    name = option[1].partition("=")[2] or option[1]
    assert line.startswith(f"error: The name {name!r} given to {option[0]} ")
    assert "U+" in line
