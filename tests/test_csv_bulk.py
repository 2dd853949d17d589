"""The bulk CSV path (engine/ingest/csv_bulk.py) and the line reader give the same import.

Each generated file is validated twice: as the importer reads it (plain blocks parsed in bulk by
Arrow) and with the bulk path switched off (every block through Python's ``csv`` record reader,
the reader all the line-number and quote sentences were written for). Valid rows, texts, rejected
rows with their line numbers, sentences and original fields, and the counts must be identical.
"""

from __future__ import annotations

import csv
import io
import random

import pandas as pd
import pytest

from engine.ingest import csv_bulk, line_reader
from engine.ingest.verdicts import validate_bytes

MODELS = ["alpha", "béta-7b", "gamma, the third", 'delta "quoted"', "ε-model", "zeta\u00a0z"]
WINNERS = ["A", "B", "tie", "model_a", "model_b", "tie (bothbad)"]


def _rows(rng: random.Random, n: int) -> list[list[str]]:
    out = []
    for i in range(n):
        a, b = rng.sample(MODELS, 2)
        expl = rng.choice(["", "plain", 'says "yes", twice', "ünïcödé ✓", "=SUM(A1)", "  "])
        if i in (50, 51, 333):
            expl = "a row that spans\ntwo lines" if i != 333 else "three\n\nlines"
        winner, prob = rng.choice(WINNERS), rng.choice(["", str(rng.random()), str(rng.randint(0, 1))])
        if i % 61 == 5:  # rows rejected inside blocks the bulk path reads: their original fields are reported
            winner, prob, b = "maybe", "1.5", a
        out.append([f"q{i % 37}", a, b, winner, rng.choice(["", "AB", "BA"]), prob, expl,
                    rng.choice(["", "writing", "math"])])
    return out


HEADER = ["prompt_id", "model_a", "model_b", "winner", "order", "prob_a", "explanation", "category"]


def _csv_text(rows: list[list[str]], quoting: int) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, quoting=quoting, lineterminator="\n")
    w.writerow(HEADER)
    w.writerows(rows)
    return buf.getvalue()


def _report(data: bytes, name: str, **kw) -> dict:
    rep = validate_bytes(data, name, dataset="d", **kw)
    return {"counts": rep.counts(), "good": rep.good, "prompts": rep.prompts, "rejected": rep.rejected,
            "sentences": rep.sentences(), "notes": rep.notes()}


def _both(monkeypatch, data: bytes, name: str = "v.csv", **kw) -> tuple[dict, dict, int]:
    calls = {"bulk": 0}
    real = csv_bulk.parse_block

    def counting(*args):
        out = real(*args)
        calls["bulk"] += out is not None
        return out

    monkeypatch.setattr(line_reader, "parse_block", counting)
    fast = _report(data, name, **kw)
    monkeypatch.setattr(line_reader, "parse_block", lambda *args: None)
    slow = _report(data, name, **kw)
    return fast, slow, calls["bulk"]


def _same(fast: dict, slow: dict) -> None:
    assert fast["counts"] == slow["counts"]
    assert fast["sentences"] == slow["sentences"]
    assert fast["notes"] == slow["notes"]
    for k in ("good", "prompts", "rejected"):
        pd.testing.assert_frame_equal(fast[k], slow[k])


@pytest.mark.parametrize("quoting", [csv.QUOTE_MINIMAL, csv.QUOTE_ALL, csv.QUOTE_NONNUMERIC])
def test_bulk_and_line_reader_agree_on_generated_csv(monkeypatch, quoting):
    monkeypatch.setenv("LENS_IMPORT_BATCH_ROWS", "40")  # blocks of 40 lines: bulk and line-read blocks mix
    rng = random.Random(quoting)
    lines = _csv_text(_rows(rng, 400), quoting).split("\n")
    # a bad row in the middle (too few fields), a stray quote, a blank line, a row of blanks, a bad byte
    lines.insert(150, "q9,alpha,gamma")
    lines.insert(230, 'q9,alpha,ab"c,A,,,,')
    lines.insert(260, "")
    lines.insert(300, " , ,,,,,,")
    lines.insert(190, "BAD-BYTES")
    data = "\n".join(lines).encode("utf-8").replace(b"BAD-BYTES", b"q5\xff,alpha,gamma,A,,,,")
    fast, slow, bulk_blocks = _both(monkeypatch, data)
    assert bulk_blocks >= 3, "the bulk path was not used: the test would compare the line reader with itself"
    assert slow["counts"]["rejected"] >= 3  # the short row, the bad byte, the same-model / stray-quote rows
    assert any("fields but the header has" in s for s in slow["sentences"])
    assert any("not valid UTF-8" in s for s in slow["sentences"])
    assert (
        sum(
            "winner value 'maybe'" in s and "model_a and model_b are the same" in s for s in slow["sentences"]
        )
        >= 5
    )
    _same(fast, slow)


def test_bulk_and_line_reader_agree_with_map_bom_tabs_and_formulas(monkeypatch):
    monkeypatch.setenv("LENS_IMPORT_BATCH_ROWS", "25")
    rng = random.Random(7)
    rows = _rows(rng, 120)
    for r in rows[::9]:
        r[6] = "'=HYPERLINK(x)"  # a cell the tool's CSV writer guarded
    buf = io.StringIO()
    w = csv.writer(buf, delimiter="\t", lineterminator="\r\n")
    w.writerow(["question_id", "Model_A", "model_b", "Verdict", "order", "prob_a", "explanation", "category"])
    w.writerows(rows)
    data = b"\xef\xbb\xbf" + buf.getvalue().encode("utf-8")
    kw = {"column_map": {"Verdict": "winner"}, "value_map": {"winner": {"model_a": "B", "model_b": "A"}}}
    fast, slow, bulk_blocks = _both(monkeypatch, data, name="v.tsv", **kw)
    assert bulk_blocks >= 2
    assert (fast["good"]["explanation"] == "=HYPERLINK(x)").any()
    _same(fast, slow)


def test_unbalanced_quote_is_left_to_the_line_reader(monkeypatch):
    text = _csv_text(_rows(random.Random(3), 30), csv.QUOTE_MINIMAL).split("\n")
    text.insert(12, 'q1,alpha,"gamma,A,,,,')
    data = "\n".join(text).encode()
    fast, slow, _ = _both(monkeypatch, data)
    assert any("unbalanced quote" in s and "line 13" in s for s in slow["sentences"])
    _same(fast, slow)


@pytest.mark.parametrize("line", ['"ab"c', 'ab"c', ' "ab"', '"a\rb"', "a\rb", '"a""b"', '""', '"é, ü"',
                                  "a\x00b", '"a\x1fb"', "\u2028"])
def test_parse_block_refuses_or_matches_python_csv(line):
    """A single line: Arrow's fields equal Python's csv fields, or the block is refused (None)."""
    texts = [f"x,{line},y\n", "1,2,3\n"]
    got = csv_bulk.parse_block(texts, ",", 3)
    if got is None:
        return
    cols, keep = got
    want = list(csv.reader(io.StringIO("".join(texts), newline="")))
    assert [list(r) for r in zip(*cols, strict=True)] == want
    assert keep == [0, 1]


def test_parse_block_takes_plain_quoted_lines():
    texts = ['"a","b ""c""",3\n', 'd,,"é"\n']
    cols, keep = csv_bulk.parse_block(texts, ",", 3)
    assert [list(r) for r in zip(*cols, strict=True)] == list(csv.reader(io.StringIO("".join(texts))))
