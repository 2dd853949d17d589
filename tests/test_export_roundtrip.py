"""Export -> import is an exact round trip in every export format, texts included (issue 23, bug 2).

A dataset is imported from a JSON Lines file written here (the first path), exported as csv, jsonl
and parquet, and each export imported again (the second path): the verdicts, the prompt texts and
the answer texts stored the second time equal those stored the first time, value for value. The
drawn rows hold what broke it: a bare carriage return in a text (written unquoted, so the row ended
there), floats that need 17 digits (pandas' JSON writer keeps 10), formula-like and quote-led names,
and prompt / answer texts (not written at all). The CLI's file and the app's download are the same
bytes.
"""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.ingest.importer import import_files
from engine.ingest.verdict_export import EXPORT_FORMATS, export_verdicts, texts_left_out
from engine.store import writes
from engine.store.connection import Store
from tests.conftest import run_engine

VERDICT_CONTENT = [
    "judge", "prompt_id", "variant", "variant_kind", "turn", "category", "model_a", "model_b", "winner",
    "order", "prob_a", "annotator", "explanation", "battle_id", "tstamp", "strength",
]
PROMPT_CONTENT = ["prompt_id", "variant", "turn", "category", "variant_kind", "text"]
ANSWER_CONTENT = ["prompt_id", "variant", "turn", "model", "text"]

NAMES = st.sampled_from(["gpt4", "=HYPERLINK(1)", "-m", "@x", "'q", "+1x", "a,b", 'say "hi"', "é", "漢字"])
TEXT = st.text(
    alphabet=st.sampled_from([*"ab ,\"'=+-@\t\r\n;{}\\", "é", "\u2028", "😀"]),
    min_size=1, max_size=12,
)


@st.composite
def verdict_rows(draw) -> list[dict]:
    """Rows of a verdict file: every column the import reads, texts and awkward values included."""
    n = draw(st.integers(1, 12))
    rows = []
    for _ in range(n):
        a, b = draw(st.lists(NAMES, min_size=2, max_size=2, unique=True))
        row = {
            "prompt_id": draw(st.sampled_from(["p1", "=p2", "p 3"])),
            "model_a": a, "model_b": b,
            "winner": draw(st.sampled_from(["A", "B", "tie", "error"])),
            "judge": draw(st.sampled_from(["j1", "-j"])),
            "variant": draw(st.integers(0, 2)),
            "turn": draw(st.integers(1, 2)),
            "category": draw(st.sampled_from(["writing", "@cat"])),
            "order": draw(st.sampled_from(["AB", "BA", None])),
            "prob_a": draw(st.one_of(st.none(), st.floats(0, 1))),
            "annotator": draw(st.one_of(st.none(), NAMES)),
            "explanation": draw(st.one_of(st.none(), TEXT)),
            "battle_id": draw(st.one_of(st.none(), st.sampled_from(["b1", "007", "-3"]))),
            "tstamp": draw(st.one_of(st.none(), st.floats(0, 4e9))),
            "strength": draw(st.one_of(st.none(), st.sampled_from([1, 2]))),
            "question": draw(st.one_of(st.none(), TEXT)),
            "answer_a": draw(st.one_of(st.none(), TEXT)),
            "answer_b": draw(st.one_of(st.none(), TEXT)),
        }
        rows.append({k: v for k, v in row.items() if v is not None})
    return rows


def _stored(store: Store, dataset: str) -> dict[str, pd.DataFrame]:
    """What the store holds of a dataset, as plain objects (None for a missing value)."""
    frames = {
        "verdicts": store.verdicts(dataset)[VERDICT_CONTENT],
        "prompts": store.prompt_texts(dataset)[PROMPT_CONTENT],
        "answers": store.answer_texts(dataset)[ANSWER_CONTENT],
    }
    return {k: f.astype(object).where(f.notna(), None).reset_index(drop=True) for k, f in frames.items()}


def _assert_round_trip(store: Store, dataset: str, folder: Path, formats=EXPORT_FORMATS) -> None:
    """Each format's export imports back to exactly what ``dataset`` holds, and exports again to
    the same bytes."""
    want = _stored(store, dataset)
    assert texts_left_out(store, dataset) == (0, 0)
    for fmt in formats:
        out = folder / f"{dataset}.{fmt}"
        export_verdicts(store, dataset, out, fmt)
        back = f"{dataset}-{fmt}"
        res = import_files(store, [out], back, replace=True)
        assert (res.rows_read, res.rows_rejected) == (len(want["verdicts"]), 0), fmt
        got = _stored(store, back)
        for table in want:
            pd.testing.assert_frame_equal(got[table], want[table], check_dtype=False, obj=f"{fmt} {table}")
        again = folder / f"{back}.{fmt}"
        export_verdicts(store, back, again, fmt)
        if fmt != "parquet":  # Parquet's file metadata names the writer's pandas frame
            assert again.read_bytes() == out.read_bytes(), fmt


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=verdict_rows())
def test_export_import_is_exact_in_every_format(empty_store, tmp_path_factory, rows):
    folder = tmp_path_factory.mktemp("rt")
    src = folder / "src.jsonl"
    src.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    name = folder.name  # one store for every drawn dataset, each under its own name
    res = import_files(empty_store, [src], name)
    assert res.rows_stored == len(rows)
    _assert_round_trip(empty_store, name, folder)


def test_bare_carriage_return_is_quoted(empty_store, tmp_path):
    """The audit's case: rationales with a bare CR came back as 3 refused rows of 25."""
    rows = [{"prompt_id": str(i), "model_a": "a", "model_b": "b", "winner": "A",
             "explanation": f"line one\rline two {i}" if i % 8 == 0 else f"plain {i}"} for i in range(25)]
    src = tmp_path / "cr.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    import_files(empty_store, [src], "cr")
    export_verdicts(empty_store, "cr", tmp_path / "cr.csv", "csv")
    assert b'"line one\rline two 0"' in (tmp_path / "cr.csv").read_bytes()
    res = import_files(empty_store, [tmp_path / "cr.csv"], "cr2")
    assert (res.rows_stored, res.rows_rejected) == (25, 0)
    assert empty_store.verdicts("cr2")["explanation"].tolist() == [r["explanation"] for r in rows]


def test_shipped_dataset_texts_come_back(shipped_db, tmp_path):
    """The shipped dataset (18,560 verdicts, 80 prompt texts, 720 answers) through the CLI's CSV:
    everything back, and the file is the bytes the app's download button gets."""
    out = tmp_path / "v.csv"
    res = run_engine(["--db", str(shipped_db), "datasets", "export", "vicuna80", str(out)])
    assert res.returncode == 0, res.stderr
    assert "wrote 18560 verdicts" in res.stdout and "note:" not in res.stderr
    shutil.copy(shipped_db, tmp_path / "lens.duckdb")  # the session's copy stays as it is
    store = Store(tmp_path / "lens.duckdb")
    try:
        buf = io.BytesIO()  # what app_pages/6_data.py hands to export_verdicts
        export_verdicts(store, "vicuna80", buf, "csv")
        assert buf.getvalue() == out.read_bytes()
        want = _stored(store, "vicuna80")
        assert (len(want["prompts"]), len(want["answers"])) == (80, 720)
        import_files(store, [out], "back")
        got = _stored(store, "back")
        for table in want:
            pd.testing.assert_frame_equal(got[table], want[table], check_dtype=False, obj=table)
    finally:
        store.close()


@pytest.mark.parametrize("fmt", EXPORT_FORMATS)
def test_app_download_is_the_cli_file(shipped_db_copy, tmp_path, fmt):
    """The app's download (a BytesIO) and ``datasets export`` give the same bytes, texts included. On a
    copy of the seeded store: the CLI's first command on an empty one imports the shipped datasets first
    (0.45 s of CPU a test), which nothing here reads."""
    db_path, store = shipped_db_copy, Store(shipped_db_copy)
    src = tmp_path / "t.jsonl"
    row = {"prompt_id": "p", "model_a": "a", "model_b": "b", "winner": "A", "explanation": "x\ry",
           "question": "Q?", "answer_a": "x", "answer_b": "y"}
    src.write_text(json.dumps(row) + "\n")
    import_files(store, [src], "t")
    buf = io.BytesIO()
    export_verdicts(store, "t", buf, fmt)
    store.close()
    out = tmp_path / f"t.{fmt}"
    assert run_engine(["--db", str(db_path), "datasets", "export", "t", str(out)]).returncode == 0
    if fmt == "parquet":  # the file's metadata holds the writer's frame; the rows are what count
        pd.testing.assert_frame_equal(pd.read_parquet(io.BytesIO(buf.getvalue())), pd.read_parquet(out))
        assert pd.read_parquet(out)["question"].tolist() == ["Q?"]
    else:
        assert buf.getvalue() == out.read_bytes()
        assert b"Q?" in out.read_bytes()


def test_texts_no_verdict_names_are_counted_and_said(shipped_db_copy, tmp_path):
    """A prompt or answer text no verdict refers to cannot travel in a verdict file: the export says
    how many, on stderr, instead of losing them in silence. (On a copy of the seeded store, as above.)"""
    db_path, store = shipped_db_copy, Store(shipped_db_copy)
    src = tmp_path / "t.jsonl"
    src.write_text(json.dumps({"prompt_id": "p", "model_a": "a", "model_b": "b", "winner": "A",
                               "question": "Q?", "answer_a": "x", "answer_b": "y"}) + "\n")
    import_files(store, [src], "t")
    with store.transaction() as tx:  # texts as a judge run stores them: a prompt no verdict names,
        writes.upsert_prompts(tx, "t", pd.DataFrame({  # an answer of a model in none, a blank answer
            "prompt_id": ["q"], "variant": [0], "turn": [1], "category": [None], "variant_kind": ["original"],
            "parent_variant": [None], "text": ["Q2"]}))
        writes.upsert_answers(tx, "t", pd.DataFrame({
            "prompt_id": ["p", "p"], "variant": [0, 0], "turn": [1, 1], "model": ["c", "a"],
            "text": ["z", "  "]}))
    assert texts_left_out(store, "t") == (1, 2)
    store.close()
    res = run_engine(["--db", str(db_path), "datasets", "export", "t", str(tmp_path / "t.csv")])
    assert res.returncode == 0
    assert "note: 1 prompt text(s) and 2 answer text(s) of 't' are not in the file" in res.stderr


def test_floats_keep_every_digit_in_json_lines(empty_store, tmp_path):
    """pandas' JSON writer keeps 10 significant digits: 0.12345678901234568 came back 0.123456789."""
    rows = [{"prompt_id": "p", "model_a": "a", "model_b": "b", "winner": "A", "prob_a": 0.12345678901234568,
             "tstamp": 1700000000.1234567}]
    src = tmp_path / "f.jsonl"
    src.write_text(json.dumps(rows[0]) + "\n")
    import_files(empty_store, [src], "f")
    export_verdicts(empty_store, "f", tmp_path / "out.jsonl", "jsonl")
    import_files(empty_store, [tmp_path / "out.jsonl"], "f2")
    got = empty_store.verdicts("f2")[["prob_a", "tstamp"]].iloc[0].tolist()
    assert got == [0.12345678901234568, 1700000000.1234567]
