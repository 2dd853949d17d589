"""Issue 23's unreadable-file classes re-checked on ``import-texts`` (issue 25's text reader; part
recheck23 of issue 26). A gzip file, a file of NUL bytes, a first line holding a 5,000-digit number or a
lone surrogate each said "holds no JSON record to read texts from", as a wholly empty file does; each
now names its problem in one sentence, as the verdict import does (``verdict_files.not_text``,
``json_reader``'s line problems). Nothing is stored in any case (the shape is read before the stage).
"""

from __future__ import annotations

import gzip
import json

import pytest

from engine.errors import LensError
from engine.ingest.text_files import read_text_files

RECORD = {"question_id": 81, "model_id": "gpt-4", "choices": [{"index": 0, "turns": ["hi"]}]}
LINE = json.dumps(RECORD)


def _gzip(path):
    path.write_bytes(gzip.compress((LINE + "\n").encode()))


CASES = {
    "gzip": (_gzip, r"is a gzip-compressed file, not a JSON file of texts; gunzip it"),
    "nul": (lambda p: p.write_bytes(b"\x00" * 10_000),
            r"has a NUL byte at byte 1, so it is not a JSON file of texts"),
    "big_int": (lambda p: p.write_text(LINE.replace("81", "9" * 5000) + "\n"),
                r"line 1: .*an integer of 5,000 digits .*; nothing was stored"),
    "surrogate": (lambda p: p.write_text(LINE.replace("gpt-4", "gpt\\ud800") + "\n"),
                  r"line 1: .*a lone surrogate \\ud800.*; nothing was stored"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_an_unreadable_text_file_names_its_problem(tmp_path, case):
    write, said = CASES[case]
    path = tmp_path / "answers.jsonl"
    write(path)
    with pytest.raises(LensError, match=said):
        read_text_files([(str(path), path.name)], dataset="t")


def test_a_file_with_no_record_still_says_so_and_a_good_file_reads(tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n\n")
    with pytest.raises(LensError, match="holds no JSON record to read texts from"):
        read_text_files([(str(empty), empty.name)], dataset="t")
    good = tmp_path / "gpt-4.jsonl"
    good.write_text(LINE + "\n")
    read = read_text_files([(str(good), good.name)], dataset="t")
    assert (read.n_bad, read.n_answers) == (0, 1)
