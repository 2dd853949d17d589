"""Issue 26, point 6: the import's faster paths store exactly what the general path stores.

- A Parquet file's string columns now stay in Arrow through validation (``csv_bulk.TextCells``, as a CSV
  column read in bulk does) instead of becoming Python lists. The second path is the same rows as JSON
  lines, which the JSON reader hands over as Python lists (what the Parquet reader gave before): both
  imports must store the same rows in the same order, the same prompt and answer texts, and reject the
  same rows with the same sentences. The drawn rows mix every column kind: names to trim, NFD names,
  blank-rendering and look-alike names, empty cells, winner spellings good and bad, numbers in range and
  out of it, free texts with spaces at the ends, style counts, repeated rows.
- Repeated rows are counted from content hashes first (``verdicts._repeats``): the count must equal
  pandas' ``duplicated`` over the stored rows' content (a brute force), with -0.0 beside 0.0 and nulls.
- ``cells.boolean_cells`` decides from the set of cell types: it must mark exactly the cells whose type
  is bool or numpy's bool (a brute force over every cell).
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from engine.ingest.cells import boolean_cells
from engine.ingest.importer import store_report, validate_file
from engine.store.connection import Store
from engine.store.schema import STYLE_COLUMNS

NAMES = ["alpha", "beta", " gamma ", "e\u0301clair", "\u00e9clair", "\u3164", "\u0430lpha", "", None,
         "x" * 300]
"""Model, judge and prompt names: plain, to be trimmed, NFD beside NFC, blank-rendering, look-alike,
empty, missing, over-long."""
WINNERS = ["A", "b", "model_a", "Model_B", " tie ", "tie (bothbad)", "error", "maybe", "", None]
TEXTS = [None, "", "  answer with spaces  ", "line\nbreak", "\u00e9t\u00e9", "x" * 50]
NUMBERS = [None, 0.0, -0.0, 0.25, 1.0, 1.5, -2.0, 3.0]

STRINGS = ("judge", "prompt_id", "model_a", "model_b", "winner", "category", "order", "annotator",
           "explanation", "battle_id", "variant_kind", "question", "answer_a", "answer_b")
INTS = ("variant", "turn")
FLOATS = ("prob_a", "tstamp", *STYLE_COLUMNS)


@st.composite
def verdict_rows(draw) -> list[dict]:
    """Rows with every column kind, some of them repeated verbatim."""
    n = draw(st.integers(1, 24))
    rows = []
    for _ in range(n):
        row = {
            "judge": draw(st.sampled_from(["gpt-4", " claude ", None, "\u0430i"])),
            "prompt_id": draw(st.sampled_from(["1", "2", " 3 ", "q\u0301", "", None])),
            "model_a": draw(st.sampled_from(NAMES)),
            "model_b": draw(st.sampled_from(NAMES)),
            "winner": draw(st.sampled_from(WINNERS)),
            "category": draw(st.sampled_from([None, "math", " coding ", ""])),
            "order": draw(st.sampled_from([None, "AB", "ba", "xy"])),
            "annotator": draw(st.sampled_from([None, "ann-1", " ann-2"])),
            "explanation": draw(st.sampled_from(TEXTS)),
            "battle_id": draw(st.sampled_from([None, "b1", "b2"])),
            "variant_kind": draw(st.sampled_from([None, "original", "Paraphrase", "odd"])),
            "question": draw(st.sampled_from(TEXTS)),
            "answer_a": draw(st.sampled_from(TEXTS)),
            "answer_b": draw(st.sampled_from(TEXTS)),
            "variant": draw(st.sampled_from([None, 0, 1, 2])),
            "turn": draw(st.sampled_from([None, 1, 2])),
            "prob_a": draw(st.sampled_from(NUMBERS)),
            "tstamp": draw(st.sampled_from([None, 1.7e9, 1.7e9 + 0.5, -1e20])),
        }
        for c in STYLE_COLUMNS:
            row[c] = draw(st.sampled_from([None, 0.0, 12.0, -1.0]))
        rows.append(row)
    repeats = draw(st.lists(st.integers(0, n - 1), max_size=4))
    return rows + [dict(rows[i]) for i in repeats]


def _parquet(path: Path, rows: list[dict], dictionary: bool) -> None:
    types = {**dict.fromkeys(STRINGS, pa.string()), **dict.fromkeys(INTS, pa.int64()),
             **dict.fromkeys(FLOATS, pa.float64())}
    table = pa.table({c: pa.array([r[c] for r in rows], type=t) for c, t in types.items()})
    pq.write_table(table, path, use_dictionary=dictionary)


def _jsonl(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")


def _stored(store: Store, dataset: str) -> pd.DataFrame:
    """The dataset's stored verdicts in insertion order, less what names the file or the dataset."""
    cur = store.cursor()
    df = cur.execute("SELECT * EXCLUDE (dataset, source_file, verdict_id) FROM verdicts "
                     "WHERE dataset = ? ORDER BY verdict_id", [dataset]).df()
    return df


def _texts(store: Store, dataset: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    cur = store.cursor()
    prompts = cur.execute("SELECT * EXCLUDE (dataset) FROM prompts WHERE dataset = ? "
                          "ORDER BY prompt_id, variant, turn", [dataset]).df()
    answers = cur.execute("SELECT * EXCLUDE (dataset) FROM answers WHERE dataset = ? "
                          "ORDER BY prompt_id, variant, turn, model", [dataset]).df()
    return prompts, answers


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory):
    s = Store(tmp_path_factory.mktemp("scale10m") / "s.duckdb")
    yield s
    s.close()


_draws = itertools.count()


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=verdict_rows(), dictionary=st.booleans())
def test_parquet_in_arrow_stores_what_the_list_path_stores(tmp_path: Path, store: Store, rows: list[dict],
                                                           dictionary: bool):
    k = next(_draws)
    pq_path, js_path = tmp_path / f"v{k}.parquet", tmp_path / f"v{k}.jsonl"
    _parquet(pq_path, rows, dictionary)
    _jsonl(js_path, rows)
    reports = {fmt: validate_file(path, dataset="d") for fmt, path in (("pq", pq_path), ("js", js_path))}
    a, b = reports["pq"], reports["js"]
    assert (a.rows_read, a.n_good, a.n_rejected, a.n_invalid, a.repeats) == (
        b.rows_read, b.n_good, b.n_rejected, b.n_invalid, b.repeats)
    ra, rb = a.rejected, b.rejected
    assert ra["source_line"].tolist() == rb["source_line"].tolist()
    assert ra["reason"].tolist() == rb["reason"].tolist()
    if a.n_good == 0:
        return
    for fmt, rep in reports.items():
        result = store_report(store, rep, f"{fmt}{k}", skip_invalid=True)
        assert result.rows_read == result.rows_stored + result.rows_rejected  # nothing lost
    pd.testing.assert_frame_equal(_stored(store, f"pq{k}"), _stored(store, f"js{k}"))
    for x, y in zip(_texts(store, f"pq{k}"), _texts(store, f"js{k}"), strict=True):
        pd.testing.assert_frame_equal(x, y)


_CONTENT_EXCLUDED = ("verdict_id", "source_file", "source_line")


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=verdict_rows())
def test_repeats_equal_a_brute_force_count_of_duplicated_rows(tmp_path: Path, store: Store, rows: list[dict]):
    k = next(_draws)
    path = tmp_path / f"r{k}.parquet"
    # every row valid, so the stored rows are the validated ones and pandas can count their repeats
    for r in rows:
        r.update(model_a=r["model_a"] if r["model_a"] in ("alpha", "beta") else "alpha", winner="A",
                 prompt_id="1", judge="j", order=None, variant_kind=None,
                 tstamp=None if r["tstamp"] == -1e20 else r["tstamp"])
        r["model_b"] = "gamma" if r["model_a"] != "gamma" else "beta"
        r["prob_a"] = r["prob_a"] if r["prob_a"] in (None, 0.0, -0.0, 0.25, 1.0) else None
        for c in STYLE_COLUMNS:
            r[c] = None if r[c] == -1.0 else r[c]
    _parquet(path, rows, dictionary=False)
    rep = validate_file(path, dataset="d")
    assert rep.n_rejected == 0
    store_report(store, rep, f"rep{k}")
    stored = store.cursor().execute("SELECT * FROM verdicts WHERE dataset = ?", [f"rep{k}"]).df()
    content = stored.drop(columns=list(_CONTENT_EXCLUDED)).astype(object)
    content = content.map(lambda v: None if v is None or v is pd.NA or (isinstance(v, float) and np.isnan(v))
                          else (0.0 if v == 0 and isinstance(v, float) else v))
    assert rep.repeats == int(content.duplicated().sum())


@settings(max_examples=60, deadline=None)
@example(cells=[float("nan"), False])  # Arrow reads it as booleans with a null: the NaN is no boolean
@given(cells=st.lists(st.one_of(st.none(), st.floats(allow_nan=True), st.booleans(),
                                st.sampled_from([np.True_, np.False_, np.float64(1.5), "x"])), max_size=30))
def test_boolean_cells_marks_exactly_the_booleans(cells: list):
    """Cells Arrow reads as floats or as no one type (the path the type set decides); a column Arrow
    reads as integers is answered before (unchanged: Arrow refuses a Python bool among ints)."""
    brute = np.array([type(v) is bool or type(v) is np.bool_ for v in cells], dtype=bool)
    got = boolean_cells(cells)
    if got is None:
        assert not brute.any()
    else:
        assert got.tolist() == brute.tolist()
