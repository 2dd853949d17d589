"""The JSON array reader's two gates (mutation pass survivors): the size limit is inclusive, measured
on the file's own bytes, and the first batch's header is checked for the required columns."""

from __future__ import annotations

import io
import json

import pytest

import engine.ingest.json_reader as jr
from engine.errors import LensError

ROWS = [{"prompt_id": f"p{i}", "model_a": "a", "model_b": "b", "winner": "A"} for i in range(5)]


def read(data: bytes):
    return list(jr.json_array_batches(io.BytesIO(data), "x.json", None))


def test_an_array_of_exactly_the_limit_is_read_and_one_byte_more_is_not(monkeypatch):
    data = json.dumps(ROWS).encode()
    monkeypatch.setattr(jr, "JSON_ARRAY_MAX_BYTES", len(data))
    (batch,) = read(data)
    assert batch.line == [1, 2, 3, 4, 5] and batch.cols["prompt_id"] == [r["prompt_id"] for r in ROWS]
    with pytest.raises(LensError, match="convert it to JSON Lines"):
        read(data + b" ")


def test_an_array_without_a_required_column_is_refused():
    data = json.dumps([{k: v for k, v in r.items() if k != "winner"} for r in ROWS]).encode()
    with pytest.raises(LensError, match="has no winner column"):
        read(data)


def test_json_lines_batches_fill_to_the_batch_size_across_blank_lines(monkeypatch):
    # a batch is yielded once it holds batch_rows() records, not per block of lines read: blank
    # lines (skipped) must not make batches short; every record comes once, in order
    monkeypatch.setenv("LENS_IMPORT_BATCH_ROWS", "100")
    text = "".join(
        "\n" if k % 7 == 3 else json.dumps({**ROWS[0], "prompt_id": f"p{k}"}) + "\n" for k in range(390)
    )
    records = list(jr.jsonl_records(io.BytesIO(text.encode())))
    expected_lines = [k + 1 for k in range(390) if k % 7 != 3]
    assert len(records) >= 2 and all(len(lines) >= 100 for _, lines, _ in records[:-1])
    assert [no for _, lines, _ in records for no in lines] == expected_lines


def test_a_line_that_is_not_json_is_one_rejected_row_with_its_column():
    from engine.ingest.verdicts import validate_bytes

    good = [json.dumps(r) for r in ROWS[:3]]
    bad = '{"prompt_id": "p9", "model_a": "a",, "winner": "A"}'
    text = "\n".join([good[0], bad, good[1], "[1, 2]", good[2]]) + "\n"
    records = list(jr.jsonl_records(io.BytesIO(text.encode())))
    problems = [p for _, _, probs in records for p in probs]
    col = bad.index(",,") + 2  # json's 1-based column of the second comma
    assert problems == [
        None,
        f"the line is not valid JSON (Expecting property name enclosed in double quotes at column {col})",
        None,
        "the line is not a JSON object",
        None,
    ]
    rep = validate_bytes(text.encode(), "v.jsonl", dataset="d")
    assert (rep.rows_read, rep.n_good, rep.n_rejected) == (5, 3, 2)


def _cut_after_good(good: str, cut: str, ending: str, last: str) -> tuple[list, json.JSONDecodeError]:
    """(each line's problem, read back by the JSON Lines reader, of a file of ``good`` then ``cut``; the
    error ``json.loads`` gives for ``cut`` alone, the second path the problem is checked against)."""
    records = list(jr.jsonl_records(io.BytesIO((good + ending + cut + last).encode())))
    try:
        json.loads(cut)
    except json.JSONDecodeError as exc:
        return [p for _, _, probs in records for p in probs], exc
    raise AssertionError(f"{cut!r} decodes")


@pytest.mark.parametrize(("ending", "last"), [("\n", "\n"), ("\r\n", "\r\n"), ("\n", "")])
def test_a_line_cut_short_names_its_end_not_a_column_of_the_next_line(ending, last):
    """A record missing its closing brace (or cut after a comma or a colon): the decoder runs past the
    line's end, so its column counted on a next line (1) named nothing; the problem names the column just
    after the line's last character, as ``json.loads`` of the line alone does (with or without a newline
    at the end of the file)."""
    good = json.dumps(ROWS[0])
    for cut in (good[:-1], good[: good.index(",") + 1], good[: good.index(":") + 1]):
        problems, want = _cut_after_good(good, cut, ending, last)
        assert want.colno == len(cut) + 1
        assert problems == [None, f"the line is not valid JSON: it ends before its value does ({want.msg} at "
                                  f"its end, column {len(cut) + 1})"]


@pytest.mark.parametrize(("ending", "last"), [("\n", "\n"), ("\r\n", "\r\n"), ("\n", "")])
def test_a_line_cut_inside_a_string_names_where_the_string_starts(ending, last):
    """Cut inside a string (a truncated answer text, the likeliest cut): the line's newline then reads as a
    control character in the string, or the file's end as an unterminated string; either way the problem says
    the line ends inside a string and names the column where the string starts, as ``json.loads`` of the line
    alone does."""
    good = json.dumps({**ROWS[0], "explanation": "a long rationale"})
    at = good.index("a long")
    for cut in (good[: at + 3], good[: at]):
        problems, want = _cut_after_good(good, cut, ending, last)
        assert want.msg.startswith("Unterminated string") and want.colno == at
        assert problems == [None, "the line is not valid JSON: it ends inside a string (the string from "
                                  f"column {at} is not closed)"]
