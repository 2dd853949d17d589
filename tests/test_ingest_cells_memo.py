"""The cell checks' shortcuts (issue 26 point 6) against the conversions they skip.

- A column the batch does not have (every cell None) is answered without converting a list of Nones to
  Arrow (``cells._absent``: ``clean_arrow``, ``free_text``, ``cells_present``).
- Inside ``normalise_rows`` a list of cells is converted to Arrow once (``cells.arrow_memo``), where the
  boolean check, presence and the numbers each converted it.
- ``name_suspects`` answers a column of printable ASCII names without its other passes.
- The canonical frame's columns of one value (dataset, one file's name, no order, no explanation,
  derived variant kinds) and the winners are made in Arrow: checked against the rules row by row.

Each is checked by validating files whose columns are absent in some batches, sparse in others (one value
in the last row), mixed in type (JSON booleans, text in number columns, NaN and infinite numbers) with the
shortcuts on and off: the same counts, rows, rejected rows and sentences.
"""

from __future__ import annotations

import contextlib
import json
import math

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from engine.ingest import cells, normalise
from engine.ingest.importer import validate_paths
from engine.ingest.raw_rows import merge_raw
from engine.ingest.verdicts import read_batches
from tests.test_ingest_parquet_plain import _mixed_table, _report_rows, _same


def _sparse_rows(n: int) -> list[dict]:
    """Rows whose optional columns appear only now and then: absent from whole batches of 7, present
    in one row of another (the last one), mixed in type where they appear."""
    rng = np.random.default_rng(11)
    odd = [True, "x", "1e3", float("nan"), float("inf"), -2, 0.5, "2", None, " ", 7, False]
    rows = []
    for i in range(n):
        r: dict = {"prompt_id": f"p{i % 9}", "model_a": f"m{i % 4}", "model_b": f"m{(i + 1) % 4}",
                   "winner": ["A", "B", "tie", True, 2, 1.5, "bad"][i % 7]}
        block = i // 7
        if block % 3 == 1 and i % 7 == 6:  # one value, in the batch's last row
            r.update(prob_a=odd[i % len(odd)], tstamp=odd[(i + 3) % len(odd)],
                     strength=odd[(i + 5) % len(odd)],
                     variant=odd[(i + 1) % len(odd)], turn=odd[(i + 2) % len(odd)],
                     explanation=odd[(i + 4) % len(odd)], tokens_a=odd[(i + 6) % len(odd)],
                     category=odd[(i + 7) % len(odd)], order=["AB", "ba", "x"][i % 3])
        elif block % 3 == 2:  # present throughout, numbers with NaN
            r.update(prob_a=float(rng.random()), tstamp=float(1.7e9 + i) if i % 5 else float("nan"),
                     variant=int(i % 3), turn=1 + i % 2, strength=[1, 2, None][i % 3],
                     question=f"q{i % 9}" if i % 2 else "  ", tokens_a=float(i), judge=["j", None][i % 2])
        rows.append(r)  # block % 3 == 0: the optional columns are absent
    return rows


def _off(monkeypatch) -> None:
    """Every shortcut off: the conversions as they were."""
    monkeypatch.setattr(cells, "_absent", lambda c: False)
    monkeypatch.setattr(normalise, "arrow_memo", contextlib.nullcontext)
    real = cells.name_suspects

    def suspects(a):
        arr = cells.as_arrow(a)
        if len(arr) and pc.all(pc.string_is_ascii(arr)).as_py():
            return pc.fill_null(pc.invert(pc.ascii_is_printable(arr)), False).to_numpy(zero_copy_only=False)
        return real(a)
    monkeypatch.setattr(normalise, "name_suspects", suspects)


@pytest.mark.parametrize("kind", ["jsonl", "parquet", "mixed"])
def test_shortcuts_validate_as_the_full_conversions(tmp_path, monkeypatch, kind):
    monkeypatch.setenv("LENS_IMPORT_BATCH_ROWS", "7")
    if kind == "jsonl":
        path = tmp_path / "sparse.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in _sparse_rows(84)))
    elif kind == "parquet":  # numbers of one type per column, nulls and NaN: Arrow reads them in bulk
        rows = _sparse_rows(84)
        for r in rows:
            for c in ("prob_a", "tstamp", "strength", "variant", "turn", "tokens_a"):
                v = r.get(c)
                r[c] = float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None
            for c in ("winner", "explanation", "category"):
                r[c] = None if r.get(c) is None else str(r[c])
        path = tmp_path / "sparse.parquet"
        pq.write_table(pa.Table.from_pylist(rows), path, row_group_size=50)
    else:
        monkeypatch.setenv("LENS_IMPORT_BATCH_ROWS", "40")
        path = tmp_path / "mixed.parquet"
        pq.write_table(_mixed_table(200, seed=5), path, row_group_size=100)
    fast = _report_rows(validate_paths([str(path)], dataset="d"))
    _off(monkeypatch)
    slow = _report_rows(validate_paths([str(path)], dataset="d"))
    assert fast[0]["rejected"] > 5 and fast[0]["good"] > 20
    _same(fast, slow)


def test_absent_means_every_cell_none():
    n = 50
    assert cells._absent([None] * n)
    for odd in (0, float("nan"), "", pa.scalar(None), False):
        col = [None] * n
        col[-1] = odd
        assert not cells._absent(col), odd
    assert not cells._absent([])
    assert not cells._absent(np.array([None] * n, dtype=object))  # not a list: converted as before
    last = [None] * (n - 1) + [3]
    assert not math.isnan(cells.cell_numbers(last, cells.cells_present(last))[-1])


def test_the_memo_converts_each_list_once_and_tells_lists_apart(monkeypatch):
    made: list[int] = []
    real = pa.array
    monkeypatch.setattr(cells.pa, "array", lambda c, *a, **k: made.append(id(c)) or real(c, *a, **k))
    a, b = [1.0, 2.0, None], [1.0, 2.0, None]
    with cells.arrow_memo():
        assert cells.any_arrow(a) is cells.any_arrow(a)
        assert cells.any_arrow(b).equals(cells.any_arrow(a))
        assert made == [id(a), id(b)]
        b[0] = 5.0  # not allowed inside; outside the memo the change is seen
    assert cells.any_arrow(b).to_pylist() == [5.0, 2.0, None]
    assert cells.any_arrow(a) is not cells.any_arrow(a)  # no memo outside


def _plain(series) -> list:
    """A frame column's cells as Python values, a missing one as None (Arrow-backed columns give NA)."""
    return [None if v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v)) else v
            for v in series.tolist()]


def test_columns_made_in_arrow_hold_what_a_row_by_row_reading_gives(tmp_path, monkeypatch):
    """dataset, source_file, winner, order, variant_kind and explanation, made in Arrow where a batch
    allows, against the rules read row by row: two files pooled in one batch (two file names), winners
    of every spelling, bad and missing, order and variant kinds absent from one file and given in the
    other."""
    monkeypatch.setenv("LENS_IMPORT_BATCH_ROWS", "200")
    spellings = ["A", " b ", "Tie", "tie  (bothbad)", "model_a", "error", "bogus", "", None, "1", "2.0"]
    n = 60
    base = {"prompt_id": [f"p{i}" for i in range(n)], "model_a": ["x"] * n, "model_b": ["y"] * n,
            "winner": [spellings[i % len(spellings)] for i in range(n)], "variant": [i % 3 for i in range(n)]}
    one, two = tmp_path / "one.parquet", tmp_path / "two.parquet"
    pq.write_table(pa.table(base), one)
    pq.write_table(pa.table({**base, "order": [["ab", None, "BA"][i % 3] for i in range(n)],
                             "variant_kind": [[None, "paraphrase", "Original"][i % 3] for i in range(n)],
                             "explanation": [["why", None][i % 2] for i in range(n)]}), two)
    batches = []
    for path in (one, two):
        _, it = read_batches(str(path), path.name)
        batches += list(it)
    for raw in (batches[0], merge_raw(batches)):
        frame, _, _ = normalise.normalise_rows(raw, "d", None, None)
        m = len(raw.line)
        assert _plain(frame["dataset"]) == ["d"] * m
        assert _plain(frame["source_file"]) == list(raw.file)
        words = [" ".join(str(w).lower().split()) if w is not None and str(w).strip() else None
                 for w in raw.cols["winner"]]
        assert _plain(frame["winner"]) == [normalise.WINNER_VALUES.get(w) if w else None for w in words]
        order = raw.cols.get("order") or [None] * m
        assert _plain(frame["order"]) == [None if o is None else o.upper() for o in order]
        kinds = raw.cols.get("variant_kind") or [None] * m
        derived = ["original" if v == 0 else "paraphrase" for v in raw.cols["variant"]]
        expected = [k.lower() if k else d for k, d in zip(kinds, derived, strict=True)]
        assert _plain(frame["variant_kind"]) == expected
        assert _plain(frame["explanation"]) == list(raw.cols.get("explanation") or [None] * m)
    assert len(set(merge_raw(batches).file)) == 2
