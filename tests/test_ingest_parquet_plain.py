"""The Parquet reader's plain read of text columns (issue 26 point 6) against its dictionary read.

Reading text columns as dictionaries hashes every value of a column of unique ids; the reader now reads
them plainly when DuckDB's scan of the file finds at most ``BATCH_TEXT_BYTES`` of text in every batch
(``parquet_reader._plain_is_safe``). Checked here: the validated rows, rejected rows and sentences of a
file that separates paths are the same either way, and the gate's answer agrees with per-batch byte sums
computed by pyarrow, batch by batch, on files just under and just over the bound (and refuses what it
cannot scan: bytes, patterns in a path, binary columns, a delta encoding, a dictionary bomb).
"""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from engine.ingest import parquet_reader
from engine.ingest.importer import validate_paths


def _mixed_table(n: int, seed: int = 3) -> pa.Table:
    """Several judges (and none), variants, turns, both orders and bad ones, ties and bad winners,
    non-ASCII and look-alike names, empty ids, control characters, nulls, texts, timestamps or none."""
    rng = np.random.default_rng(seed)
    models = [f"m{k}" for k in range(12)] + ["gрt4", "gpt4", "café", "cafe\u0301", "Ω-model"]
    judges = ["gpt-4", "claude", None, " human ", "судья"]
    winners = ["A", "B", "tie", "model_a", "model_b", "tie (bothbad)", "error", "bogus", "", None, " a "]
    rows = []
    for i in range(n):
        a, b = rng.choice(len(models), 2, replace=bool(rng.random() > 0.03))
        rows.append({
            "battle_id": f"b{i}",
            "prompt_id": ["", "bad\x01id", None][i % 3] if rng.random() < 0.02 else f"p{rng.integers(0, 40)}",
            "model_a": models[a], "model_b": models[b],
            "winner": winners[rng.integers(0, len(winners))],
            "judge": judges[rng.integers(0, len(judges))],
            "variant": int(rng.integers(0, 3)), "turn": int(rng.integers(1, 3)),
            "order": ["AB", "BA", "ab", None, "XY"][rng.integers(0, 5)],
            "category": ["coding", None, "математика"][rng.integers(0, 3)],
            "tstamp": float(1.7e9 + i) if rng.random() < 0.8 else None,
            "question": f"question {rng.integers(0, 40)} ✓" if rng.random() < 0.3 else None,
            "answer_a": "x" * int(rng.integers(0, 300)) if rng.random() < 0.2 else None,
        })
        if rng.random() < 0.05:
            rows.append(dict(rows[-1]))  # a repeat
    return pa.Table.from_pylist(rows)


def _report_rows(rep) -> tuple:
    """The report's counts and every staged table, in file order."""
    rejected = rep.rejected.sort_values("source_line").reset_index(drop=True)
    return rep.counts(), rep.repeats, rep.good, rejected, rep.prompts, rep.answers


def _same(a: tuple, b: tuple) -> None:
    assert a[:2] == b[:2]
    for x, y in zip(a[2:], b[2:], strict=True):
        pd.testing.assert_frame_equal(x, y)


def test_plain_and_dictionary_reads_validate_a_mixed_file_alike(tmp_path, monkeypatch):
    path = tmp_path / "mixed.parquet"
    pq.write_table(_mixed_table(900), path, row_group_size=250)
    monkeypatch.setenv("LENS_IMPORT_BATCH_ROWS", "70")
    asked: list[bool] = []
    gate = parquet_reader._plain_is_safe
    monkeypatch.setattr(parquet_reader, "_plain_is_safe", lambda *a: asked.append(gate(*a)) or asked[-1])
    plain = _report_rows(validate_paths([str(path)], dataset="d"))
    assert asked == [True]
    monkeypatch.setattr(parquet_reader, "_plain_is_safe", lambda *a: False)
    dictionary = _report_rows(validate_paths([str(path)], dataset="d"))
    assert plain[0]["rejected"] > 50 and plain[0]["good"] > 300 and plain[1] > 0
    assert len(plain[4]) and len(plain[5])  # prompts and answers staged
    _same(plain, dictionary)


def test_plain_read_slices_long_texts_and_blanks_oversized_cells_alike(tmp_path, monkeypatch):
    """Slices of at most BATCH_TEXT_BYTES and a cell over the field cap: the same rows and sentences."""
    cap = 4 * parquet_reader.TEXT_MAX_CHARS
    n = 40
    big = ["y" * 900 if i % 7 else None for i in range(n)]
    big[5] = "z" * (cap + 1)  # over any field's cap: blanked, its row refused with the byte count
    t = pa.table({"prompt_id": [f"p{i}" for i in range(n)], "model_a": ["a"] * n, "model_b": ["b"] * n,
                  "winner": ["A"] * n, "question": big})
    path = tmp_path / "long.parquet"
    pq.write_table(t, path)
    monkeypatch.setenv("LENS_IMPORT_BATCH_ROWS", "7")
    monkeypatch.setattr(parquet_reader, "BATCH_TEXT_BYTES", cap + 20_000)
    assert _gate(path, ["prompt_id", "model_a", "model_b", "winner", "question"])
    plain = _report_rows(validate_paths([str(path)], dataset="d"))
    monkeypatch.setattr(parquet_reader, "_plain_is_safe", lambda *a: False)
    dictionary = _report_rows(validate_paths([str(path)], dataset="d"))
    assert plain[0]["rejected"] == 1
    assert "bytes long, more than any verdict field may hold" in plain[3]["reason"][0]
    _same(plain, dictionary)


def _gate(path, texts: list[str]) -> bool:
    """``_plain_is_safe`` on the file at ``path``, opened as the reader opens it."""
    pf = pq.ParquetFile(path)
    with open(path, "rb") as fh:
        return parquet_reader._plain_is_safe(fh, texts, pf.schema_arrow, pf.metadata)


def _batch_text_max(path, texts: list[str], rows: int) -> int:
    """The most text bytes in one batch of ``rows`` rows, batch by batch with pyarrow."""
    most = 0
    for b in pq.ParquetFile(path).iter_batches(batch_size=rows, columns=texts):
        most = max(most, sum(int(pc.sum(pc.binary_length(b.column(c))).as_py() or 0) for c in texts))
    return most


@pytest.mark.parametrize("offset", [-400, -1, 0, 1, 900])
def test_the_gate_agrees_with_per_batch_byte_sums(tmp_path, monkeypatch, offset):
    """The bound set just under, at and over the heaviest batch's byte sum (found by pyarrow)."""
    rng = np.random.default_rng(7)
    n = 95
    lens = rng.integers(0, 30, n)
    lens[41] = 401  # one heavy batch (rows 40-49 with batches of 10): its sum decides near the bound
    ids = ["é" * int(k) if k % 5 else None for k in lens]  # two bytes a character, nulls
    t = pa.table({"prompt_id": ids, "model_a": [f"m{i % 3}" for i in range(n)], "tstamp": np.arange(n) * 1.0})
    path = tmp_path / "g.parquet"
    pq.write_table(t, path, row_group_size=33)  # batches cross row groups
    monkeypatch.setenv("LENS_IMPORT_BATCH_ROWS", "10")
    texts = ["prompt_id", "model_a"]
    most = _batch_text_max(path, texts, 10)
    assert most > 802  # the heavy batch: its heavy row and more
    assert _batch_text_max(path, texts, 95) > most + 900  # the whole file is over every bound tried
    limit = most + offset
    monkeypatch.setattr(parquet_reader, "BATCH_TEXT_BYTES", limit)
    assert _gate(path, texts) == (most <= limit)


def test_the_gate_keeps_the_dictionary_read_for_what_it_cannot_scan(tmp_path):
    n = 50
    t = pa.table({"prompt_id": [f"p{i}" for i in range(n)], "model_a": ["a"] * n})
    ok = tmp_path / "ok.parquet"
    pq.write_table(t, ok)
    texts = ["prompt_id", "model_a"]
    assert _gate(ok, texts)
    assert not parquet_reader._plain_is_safe(io.BytesIO(ok.read_bytes()), texts, t.schema,
                                             pq.ParquetFile(ok).metadata)
    pattern = tmp_path / "a[1].parquet"
    pq.write_table(t, pattern)
    assert not _gate(pattern, texts)
    delta = tmp_path / "delta.parquet"
    pq.write_table(t, delta, use_dictionary=False, column_encoding={"prompt_id": "DELTA_BYTE_ARRAY",
                                                                    "model_a": "PLAIN"})
    assert not _gate(delta, texts)
    binary = pa.table({"prompt_id": pa.array([b"p"] * n), "model_a": ["a"] * n})
    bpath = tmp_path / "bin.parquet"
    pq.write_table(binary, bpath)
    assert not _gate(bpath, texts)
    bomb = pa.table({"prompt_id": pa.DictionaryArray.from_arrays(pa.array([0] * 20_000, pa.int32()),
                                                                 pa.array(["x" * 100_000])),
                     "model_a": ["a"] * 20_000})
    bpath = tmp_path / "bomb.parquet"
    pq.write_table(bomb, bpath, compression="zstd")
    assert bpath.stat().st_size < 200_000
    assert not _gate(bpath, texts)
