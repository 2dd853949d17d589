"""MT-Bench style judging inputs (engine/judging/inputs.py): a bad line of question.jsonl or of an
answer file is refused with one sentence naming the file and the line, whatever json raised."""

from __future__ import annotations

import json
import sys

import pytest

from engine.errors import LensError
from engine.judging.inputs import read_answers, read_questions


def _folder(tmp_path, question_lines: list[str], answer_lines: list[str] | None = None):
    (tmp_path / "question.jsonl").write_text("\n".join(question_lines) + "\n", encoding="utf-8")
    if answer_lines is not None:
        (tmp_path / "model_answer").mkdir()
        (tmp_path / "model_answer" / "m1.jsonl").write_text("\n".join(answer_lines) + "\n", encoding="utf-8")
    return tmp_path


def test_questions_read_one_row_per_question_and_turn(tmp_path):
    lines = [json.dumps({"question_id": 81, "category": "writing", "turns": ["first?", "second?"]}),
             "",
             json.dumps({"question_id": 82, "category": "math", "turns": ["only?"]})]
    q = read_questions(_folder(tmp_path, lines), turns=(1, 2))
    assert list(zip(q["prompt_id"], q["turn"], q["text"], strict=True)) == [
        ("81", 1, "first?"), ("81", 2, "second?"), ("82", 1, "only?")]


def test_a_line_that_is_not_json_names_the_file_the_line_and_the_decoder_message(tmp_path):
    lines = [json.dumps({"question_id": 1, "turns": ["q"]}), "{not json"]
    with pytest.raises(
        LensError, match=r"^question\.jsonl line 2 is not valid JSON \(Expecting property name"
    ):
        read_questions(_folder(tmp_path, lines))


def test_a_number_json_refuses_to_convert_is_a_sentence_not_a_traceback(tmp_path):
    # json raises a plain ValueError (no .msg) for an integer longer than Python's conversion limit;
    # reading exc.msg there raised AttributeError (fails on fa0c159)
    digits = sys.get_int_max_str_digits() + 1
    lines = [
        json.dumps({"question_id": 1, "turns": ["q"]}),
        '{"question_id": ' + "7" * digits + ', "turns": ["q"]}',
    ]
    with pytest.raises(LensError, match=r"^question\.jsonl line 2 is not valid JSON \(Exceeds the limit"):
        read_questions(_folder(tmp_path, lines))


def test_the_same_refusal_for_an_answer_file(tmp_path):
    digits = sys.get_int_max_str_digits() + 1
    folder = _folder(tmp_path, [json.dumps({"question_id": 1, "turns": ["q"]})],
                     ['{"question_id": 1, "model_id": "m1", "choices": [{"turns": [' + "9" * digits + "]}]}"])
    with pytest.raises(LensError, match=r"^m1\.jsonl line 1 is not valid JSON \(Exceeds the limit"):
        read_answers(folder, ["m1"])
