"""Verdict parsing and validation (engine/ingest/verdicts.py): formats, aliases, defaults, every rejection
reason with its exact line number, and the invariant rows_read = good + rejected."""

from __future__ import annotations

import io
import json

import numpy as np
import pandas as pd
import pytest

from engine.errors import LensError
from engine.ingest.importer import validate_file
from engine.ingest.verdicts import detect_format, parse_review_name, validate_bytes, validate_many
from engine.store.schema import VERDICT_COLUMNS, VERDICT_DTYPES


def check(data: bytes | str, name: str = "v.csv", **kw):
    """Validate and assert the accounting invariant every report must keep."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    rep = validate_bytes(data, name, dataset=kw.pop("dataset", "d"), **kw)
    assert rep.rows_read == rep.n_good + rep.n_rejected
    assert list(rep.good.columns) == list(VERDICT_COLUMNS)
    assert dict(rep.good.dtypes.astype(str)) == {c: str(pd.Series([], dtype=t).dtype)
                                                 for c, t in VERDICT_DTYPES.items()}
    return rep


def reasons(rep) -> dict[int, str]:
    return dict(zip(rep.rejected["source_line"].tolist(), rep.rejected["reason"].tolist(), strict=True))


# -- formats and aliases -------------------------------------------------------------------------
WINNER_SPELLINGS = [
    ("A", "A"), ("a", "A"), ("model_a", "A"), ("Model_A", "A"), ("1", "A"), ("1.0", "A"),
    ("B", "B"), ("model_b", "B"), ("2", "B"), ("2.0", "B"),
    ("tie", "tie"), ("TIE", "tie"), ("tie (bothbad)", "tie"), ("1.5", "tie"),
    ("error", "invalid"), ("invalid", "invalid"),
]


@pytest.mark.parametrize(("spelling", "expected"), WINNER_SPELLINGS)
def test_winner_spellings_in_csv(spelling, expected):
    rep = check(f"prompt_id,model_a,model_b,winner\np1,x,y,{spelling}\n")
    assert rep.good["winner"].tolist() == [expected]


def test_alpacaeval_numbers_in_jsonl_and_parquet(tmp_path):
    rows = [{"prompt_id": f"p{i}", "model_a": "x", "model_b": "y", "winner": w}
            for i, w in enumerate([1, 2, 1.5, 1.0, 2.0])]
    text = "\n".join(json.dumps(r) for r in rows) + "\n"
    assert check(text, "v.jsonl").good["winner"].tolist() == ["A", "B", "tie", "A", "B"]
    buf = io.BytesIO()
    pd.DataFrame(rows).to_parquet(buf, index=False)  # float column: 1.0, 2.0, 1.5, ...
    rep = check(buf.getvalue(), "v.parquet")
    assert rep.format == "parquet"
    assert rep.good["winner"].tolist() == ["A", "B", "tie", "A", "B"]
    assert rep.good["source_line"].tolist() == [1, 2, 3, 4, 5]  # row index + 1


def test_headers_case_insensitive_and_question_id_alias():
    rep = check("Question_ID,MODEL_A,Model_B,Winner,JUDGE,Turn\n81,gpt-4,claude-v1,model_b,human,2\n")
    row = rep.good.iloc[0]
    assert (row["prompt_id"], row["model_a"], row["model_b"], row["winner"], row["judge"], row["turn"]) == (
        "81", "gpt-4", "claude-v1", "B", "human", 2)


def test_lmsys_battle_rows():
    rows = [
        {"question_id": 81, "model_a": "alpaca-13b", "model_b": "gpt-3.5-turbo", "winner": "model_b",
         "judge": "author_2", "turn": 1, "conversation_a": [{"role": "user", "content": "hi"}]},
        {"question_id": 81, "model_a": "gpt-4", "model_b": "llama-13b", "winner": "tie (bothbad)",
         "judge": "gpt4_pair", "turn": 2},
        {"question_id": 82, "model_a": "gpt-4", "model_b": "llama-13b", "winner": "tie", "turn": 1},
    ]
    rep = check("\n".join(json.dumps(r) for r in rows), "battles.jsonl")
    assert rep.good["winner"].tolist() == ["B", "tie", "tie"]
    assert rep.good["judge"].tolist() == ["author_2", "gpt4_pair", "judge"]
    assert rep.good["prompt_id"].tolist() == ["81", "81", "82"]
    assert rep.good["turn"].tolist() == [1, 2, 1]


def test_json_array_uses_element_numbers():
    arr = [{"prompt_id": "1", "model_a": "x", "model_b": "y", "winner": "A"},
           {"prompt_id": "2", "model_a": "x", "model_b": "x", "winner": "A"}]
    rep = check(json.dumps(arr, indent=2), "battles.json")
    assert rep.format == "json"
    assert reasons(rep) == {2: "model_a and model_b are the same model (x)"}


def test_defaults_and_variant_kind():
    rep = check("prompt_id,model_a,model_b,winner,variant\np,x,y,A,\np,x,y,B,2\np,x,y,tie,0\n")
    g = rep.good
    assert g["variant"].tolist() == [0, 2, 0]
    assert g["variant_kind"].tolist() == ["original", "paraphrase", "original"]
    assert g["turn"].tolist() == [1, 1, 1]
    assert g["judge"].tolist() == ["judge"] * 3
    assert g["dataset"].tolist() == ["d"] * 3
    assert g["order"].isna().all() and g["prob_a"].isna().all()
    rep = check("prompt_id,model_a,model_b,winner,variant,variant_kind\np,x,y,A,3,sample\n")
    assert rep.good["variant_kind"].tolist() == ["sample"]


def test_optional_columns_are_kept():
    rep = check("prompt_id,model_a,model_b,winner,order,prob_a,category,annotator,explanation\n"
                "p,x,y,A,ba,0.25,math,ann1,\"because, it is\"\n")
    r = rep.good.iloc[0]
    assert (r["order"], r["prob_a"], r["category"], r["annotator"], r["explanation"]) == (
        "BA", 0.25, "math", "ann1", "because, it is")


def test_texts_go_to_prompts_and_answers():
    rep = check("prompt_id,model_a,model_b,winner,question,answer_a,answer_b\n"
                "p1,x,y,A,What?,ax,ay\np1,x,z,B,What?,ax2,az\np2,y,z,tie,,,\n")
    assert rep.prompts[["prompt_id", "text"]].values.tolist() == [["p1", "What?"]]
    got = sorted(map(tuple, rep.answers[["prompt_id", "model", "text"]].values.tolist()))
    assert got == [("p1", "x", "ax"), ("p1", "y", "ay"), ("p1", "z", "az")]  # first text wins


def test_column_map_and_format_override():
    text = json.dumps({"qid": "7", "left": "x", "right": "y", "verdict": "B"}) + "\n"
    with pytest.raises(LensError, match="no prompt_id / model_a / model_b / winner column"):
        check(text, "v.txt", fmt="jsonl")
    rep = check(text, "v.txt", fmt="jsonl",
                column_map={"qid": "prompt_id", "Left": "model_a", "right": "model_b", "verdict": "winner"})
    assert rep.good[["prompt_id", "model_a", "model_b", "winner"]].values.tolist() == [["7", "x", "y", "B"]]
    with pytest.raises(LensError, match="not a verdict column"):
        check(text, "v.txt", fmt="jsonl", column_map={"qid": "question_number"})


def test_column_map_overrides_same_named_column_and_aliases_yield():
    text = "prompt_id,model_a,model_b,winner,verdict\np,x,y,A,B\n"
    assert check(text).good["winner"].tolist() == ["A"]
    assert check(text, column_map={"verdict": "winner"}).good["winner"].tolist() == ["B"]
    both = "prompt_id,question_id,model_a,model_b,winner\np,q,x,y,A\n"
    assert check(both).good["prompt_id"].tolist() == ["p"]  # the alias yields to the real column
    with pytest.raises(LensError, match="two columns that both mean 'winner'"):
        check("prompt_id,model_a,model_b,Winner,WINNER\np,x,y,A,B\n")


def test_tsv_semicolons_crlf_bom_and_empty_spreadsheet_rows():
    rep = check("prompt_id\tmodel_a\tmodel_b\twinner\np\tx\ty\tA\n", "v.tsv")
    assert rep.good["winner"].tolist() == ["A"]
    rep = check("prompt_id;model_a;model_b;winner;explanation\np;x;y;B;a, b\n", "v.csv")
    assert rep.good[["winner", "explanation"]].values.tolist() == [["B", "a, b"]]
    rep = check(b"\xef\xbb\xbfprompt_id,model_a,model_b,winner\r\np1,x,y,A\r\n,,,\r\np2,x,y,B\r\n,,,\r\n")
    assert rep.rows_read == 2 and rep.good["source_line"].tolist() == [2, 4]


# -- review format -------------------------------------------------------------------------------
def test_review_file_name_parsing():
    assert parse_review_name("answer_bard-vs-answer_gpt4-gpt35-reviewer_threeclass.jsonl") == (
        "bard",
        "gpt4",
        "gpt35",
    )
    assert parse_review_name("13b-guanaco-x-vs-answer-vicuna-13b-gpt-4-reviewer-threeclass.jsonl") == (
        "13b-guanaco-x",
        "vicuna-13b",
        "gpt-4",
    )
    assert parse_review_name("answer_gpt4-vs-answer_vicuna-13b-vicuna-13b-reviewer.jsonl") == (
        "gpt4", "vicuna-13b", "vicuna-13b")
    assert parse_review_name("m1-vs-m2-myjudge-reviewer.jsonl") == ("m1", "m2", "myjudge")
    with pytest.raises(LensError, match="not named like a review file"):
        parse_review_name("ratings.jsonl")


def test_review_llm_judge_rows():
    rows = [
        {
            "review_id": "r1",
            "question_id": 1,
            "reviewer_id": 1,
            "metadata": {},
            "text": "first better",
            "score": 1,
        },
        {"review_id": "r2", "question_id": 2, "reviewer_id": 1, "metadata": {}, "text": "second", "score": 2},
        {"review_id": "r3", "question_id": 3, "reviewer_id": 1, "metadata": {}, "text": "same", "score": 3},
        {
            "review_id": "r4",
            "question_id": 4,
            "reviewer_id": 1,
            "metadata": {},
            "text": "garbled",
            "score": -1,
        },
        {"review_id": "r5", "question_id": 5, "reviewer_id": 1, "metadata": {}, "text": "?", "score": 7},
    ]
    name = "answer_bard-vs-answer_gpt4-claude-reviewer_threeclass.jsonl"
    data = "\n".join(json.dumps(r) for r in rows) + "\n"
    assert detect_format(data.encode(), name) == "review"
    rep = check(data, name, judge_names={"claude": "claude-v1"})
    g = rep.good
    assert g["winner"].tolist() == ["A", "B", "tie", "invalid"]
    assert set(g["model_a"]) == {"bard"} and set(g["model_b"]) == {"gpt4"}
    assert set(g["order"]) == {"AB"} and set(g["judge"]) == {"claude-v1"}
    assert g["explanation"].tolist() == [
        "first better",
        "second",
        "same",
        "garbled",
    ]  # invalid keeps its text
    assert rep.n_invalid == 1
    assert reasons(rep) == {5: "score '7' is not 1, 2, 3 or -1"}


def test_review_human_votes_are_numbered():
    rows = [
        {"question_id": q, "text": f"question {q}", "score": s} for q, s in [(3, 1), (3, 2), (3, 1), (4, 3)]
    ]
    rep = check("\n".join(json.dumps(r) for r in rows),
                "answer_gpt4-vs-answer_guanaco-7b-human-reviewer_threeclass.jsonl")
    assert rep.n_rejected == 0  # repeated rows are separate votes, not duplicates
    assert rep.good["annotator"].tolist() == ["human_vote1", "human_vote2", "human_vote3", "human_vote1"]
    assert rep.good["explanation"].isna().all()  # the text is the question, not a rationale
    assert rep.prompts[["prompt_id", "text"]].values.tolist() == [["3", "question 3"], ["4", "question 4"]]


# -- rejected rows, each with its exact line -----------------------------------------------------
HEADER = "prompt_id,model_a,model_b,winner,prob_a,variant,turn,order\n"
BAD_ROWS = [
    (",x,y,A,,,,", "prompt_id is empty"),
    ("p,,y,A,,,,", "model_a is empty"),
    ("p,x, ,A,,,,", "model_b is empty"),
    ("p,x,x,A,,,,", "model_a and model_b are the same model (x)"),
    ("p,x,y,maybe,,,,", "winner value 'maybe' is not one of"),
    ("p,x,y,,,,,", "winner is empty"),
    ("p,x,y,A,high,,,", "prob_a 'high' is not a number"),
    ("p,x,y,A,1.5,,,", "prob_a 1.5 is outside [0, 1]"),
    ("p,x,y,A,-0.1,,,", "prob_a -0.1 is outside [0, 1]"),
    ("p,x,y,A,,-1,,", "variant '-1' is not a non-negative integer"),
    ("p,x,y,A,,1.5,,", "variant '1.5' is not a non-negative integer"),
    ("p,x,y,A,,,two,", "turn 'two' is not a non-negative integer"),
    ("p,x,y,A,,,,XY", "order 'XY' is not AB or BA"),
    ("p,x,y,A,,,", "the row has 7 fields but the header has 8"),
]


@pytest.mark.parametrize(("row", "reason"), BAD_ROWS)
def test_each_bad_row_reason_with_line(row, reason):
    good = "q,x,y,B,,,,\n"
    rep = check(HEADER + good + good.replace("q", "q2") + row + "\n" + good.replace("q", "q3"))
    assert rep.n_good == 3 and rep.rows_read == 4
    (line, got), = reasons(rep).items()
    assert line == 4  # header = line 1, so the third data row is line 4
    assert got.startswith(reason)
    assert rep.sentences() == [f"v.csv line 4: {got}."]


def test_line_numbers_survive_multiline_fields_and_blank_lines():
    text = ('prompt_id,model_a,model_b,winner,explanation\n'
            'p1,x,y,A,"one\ntwo\nthree"\n'
            '\n'
            'p2,x,y,A,plain\n'
            'p3,x,x,A,"a\nb"\n'
            'p4,x,y,nope,\n')
    rep = check(text)
    # brute force: the physical line where each row starts
    starts = [i for i, ln in enumerate(text.split("\n"), start=1) if ln[:1] == "p" and ln[1:2].isdigit()]
    assert starts == [2, 6, 7, 9]
    assert rep.good["source_line"].tolist() == [2, 6]
    assert sorted(reasons(rep)) == [7, 9]
    assert rep.good["explanation"].tolist()[0] == "one\ntwo\nthree"


def test_repeated_rows_are_kept_and_counted():
    rep = check(HEADER + "p,x,y,A,,,,\np,x,y,B,,,,\np,x,y,A,,,,\np,x,y,A,,0,1,\n")
    # lines 4 and 5 equal line 2 once defaults are applied (variant 0, turn 1): three votes for x
    assert rep.n_rejected == 0 and rep.good["winner"].tolist() == ["A", "B", "A", "A"]
    assert rep.repeats == 2
    assert rep.notes() == ["2 rows repeat an earlier row; kept as separate verdicts."]


def test_a_battle_id_keeps_equal_rows_apart():
    text = "num,prompt_id,model_a,model_b,winner\n1,p,x,y,A\n2,p,x,y,A\n2,p,x,y,A\n"
    rep = check(text)
    assert rep.good["battle_id"].tolist() == ["1", "2", "2"]
    assert rep.repeats == 1  # only the row with the same num repeats


def test_repeats_across_files_are_counted_too():
    a = (HEADER + "p,x,y,A,,,,\n").encode()
    rep = validate_many([(a, "a.csv"), (a + b"p,x,y,B,,,,\n", "b.csv")], dataset="d")
    assert rep.n_rejected == 0 and rep.n_good == 3 and rep.repeats == 1


def test_undecodable_bytes_cost_one_line():
    data = (HEADER + "p1,x,y,A,,,,\n").encode() + b"p2,x\xff\xfe,y,A,,,,\n" + b"p3,x,y,B,,,,\n"
    rep = check(data)
    assert rep.good["prompt_id"].tolist() == ["p1", "p3"]
    assert reasons(rep) == {3: "the line contains bytes that are not valid UTF-8 text"}
    jl = b'{"prompt_id":"1","model_a":"x","model_b":"y","winner":"A"}\n{"prompt_id":"\xff"}\n'
    rep = check(jl, "v.jsonl")
    assert reasons(rep) == {2: "the line contains bytes that are not valid UTF-8 text"}


def test_malformed_json_lines():
    good = '{"prompt_id":"1","model_a":"x","model_b":"y","winner":"A"}'
    text = "\n".join([good, "", '{"prompt_id": "2", "model_a": ', "[1, 2]", good.replace('"1"', '"3"')])
    rep = check(text, "v.jsonl")
    r = reasons(rep)
    assert sorted(r) == [3, 4]  # the blank line 2 is not a row, but it is counted in line numbers
    assert r[3].startswith("the line is not valid JSON")
    assert r[4] == "the line is not a JSON object"
    assert rep.good["source_line"].tolist() == [1, 5]


def test_unparsable_judge_output_is_invalid_never_tie():
    rep = check("prompt_id,model_a,model_b,winner\np,x,y,error\np2,x,y,tie\n")
    assert rep.good["winner"].tolist() == ["invalid", "tie"]
    assert rep.n_invalid == 1 and rep.n_rejected == 0


# -- file-level problems: one sentence for the file ------------------------------------------------
@pytest.mark.parametrize(("data", "name", "match"), [
    (b"", "v.csv", "v.csv is empty"),
    (b"  \n\n", "v.jsonl", "v.jsonl is empty"),
    (b"prompt_id,model_a,model_b,winner\n", "v.csv", "has a header but no data rows"),
    (b"prompt_id,model_a,winner\np,x,A\n", "v.csv", r"has no model_b column \(required"),
    (b"PAR1garbage", "v.parquet", "cannot be read as Parquet"),
    (b"[1, 2", "v.json", "not a readable JSON array"),
])
def test_file_level_problems(data, name, match):
    with pytest.raises(LensError, match=match):
        validate_bytes(data, name, dataset="d")


def test_unreadable_paths(tmp_path):
    with pytest.raises(LensError, match="There is no file"):
        validate_file(tmp_path / "missing.csv")
    with pytest.raises(LensError, match="is a folder"):
        validate_file(tmp_path)


def test_every_row_failing_still_accounts():
    rep = check(b"\xff\xfe\n{oops\n", "v.jsonl")
    assert rep.rows_read == 2 and rep.n_rejected == 2 and rep.n_good == 0


PLANTS = [  # (column index in HEADER, bad value, reason prefix)
    (1, "m", "model_a and model_b are the same model"),
    (4, "2", "prob_a 2 is outside [0, 1]"),
    (4, "x", "prob_a 'x' is not a number"),
    (5, "-3", "variant '-3' is not a non-negative integer"),
    (6, "1.25", "turn '1.25' is not a non-negative integer"),
    (7, "AA", "order 'AA' is not AB or BA"),
    (3, "?", "winner value '?' is not one of"),
    (0, "", "prompt_id is empty"),
]


@pytest.mark.parametrize("multiline", [False, True])
@pytest.mark.parametrize("seed", [3, 4])
def test_random_tables_match_planted_errors(seed, multiline):
    """Seeded mix of good rows, planted errors and blank lines; the line and reason of every
    rejection are predicted by counting physical lines while writing (the brute-force twin).
    With ``multiline`` some explanations span lines, which takes the record-by-record reader."""
    rng = np.random.default_rng(seed)
    header = HEADER.strip() + ",explanation"
    out, expected, line = [header], {}, 1
    for i in range(400):
        row = [f"p{i}", "x", "y", str(rng.choice(["A", "B", "tie", "error"])), "", "", "", "", "ok"]
        if multiline and rng.random() < 0.2:
            row[8] = '"first\nsecond"'
        k = int(rng.integers(0, 2 * len(PLANTS)))
        if k < len(PLANTS):
            col, val, why = PLANTS[k]
            row[col] = val
            if col == 1:
                row[2] = val
        if rng.random() < 0.05:
            out.append("")
            line += 1
        line += 1
        if k < len(PLANTS):
            expected[line] = PLANTS[k][2]
        out.append(",".join(row))
        line += row[8].count("\n")
    rep = check("\n".join(out) + "\n")
    got = reasons(rep)
    assert sorted(got) == sorted(expected)
    assert all(got[n].startswith(why) for n, why in expected.items())
    assert rep.n_good == 400 - len(expected)


def test_random_tables_count_invariant():
    """Mixed good and bad rows from a seeded generator: the bad ones found are exactly those planted."""
    rng = np.random.default_rng(3)
    lines, planted = [HEADER.strip()], set()
    for i in range(300):
        row = [f"p{i}", "x", "y", rng.choice(["A", "B", "tie", "error"]), "", "", "", ""]
        kind = rng.integers(0, 6)
        if kind == 0:
            row[1] = row[2] = "m"
        elif kind == 1:
            row[4] = "2"
        if kind <= 1:
            planted.add(i + 2)
        lines.append(",".join(row))
    rep = check("\n".join(lines) + "\n")
    assert set(reasons(rep)) == planted
    assert rep.n_good == 300 - len(planted)


# -- every problem of a row, in one sentence -------------------------------------------------------
def test_all_problems_of_a_row_in_one_sentence():
    rep = check(HEADER + "p,x,y,A,1.7,x,,XY\n,x,x,,,,0,\np2,x,y,A,,,,\n")
    assert rep.sentences() == [
        "v.csv line 2: variant 'x' is not a non-negative integer; order 'XY' is not AB or BA; "
        "prob_a 1.7 is outside [0, 1].",
        "v.csv line 3: prompt_id is empty; model_a and model_b are the same model (x); winner is empty.",
    ]
    # a row that cannot be read keeps that one reason (its cells are not trustworthy)
    rep = check(HEADER + "p,x,y,A,1.7,x,\n")
    assert reasons(rep) == {2: "the row has 7 fields but the header has 8"}


# independent problems a row can have, in the order the sentence lists them
COMBINABLE = [  # (column index in HEADER + ",category", bad value, reason)
    (8, "c\x07t", "category 'c\\x07t' contains a control character (U+0007)"),
    (
        3,
        "??",
        "winner value '??' is not one of A, B, tie, model_a, model_b, tie (bothbad), 1, 2, 1.5 or error",
    ),
    (5, "v1", "variant 'v1' is not a non-negative integer"),
    (6, "-2", "turn '-2' is not a non-negative integer"),
    (7, "ba!", "order 'ba!' is not AB or BA"),
    (4, "3", "prob_a 3 is outside [0, 1]"),
]


@pytest.mark.parametrize("seed", [0, 1])
def test_random_rows_list_every_planted_problem(seed):
    """Each row gets a random subset of independent problems; its one sentence must list exactly
    those, in column-check order (the expected text is assembled while writing the file)."""
    rng = np.random.default_rng(seed)
    out, expected = [HEADER.strip() + ",category"], {}
    for i in range(300):
        row = [f"p{i}", "x", "y", "A", "", "", "", "", "c"]
        picked = [k for k in range(len(COMBINABLE)) if rng.random() < 0.25]
        for k in picked:
            col, val, _ = COMBINABLE[k]
            row[col] = val
        if picked:
            expected[i + 2] = "; ".join(COMBINABLE[k][2] for k in picked)
        out.append(",".join(row))
    rep = check("\n".join(out) + "\n")
    assert reasons(rep) == expected
    assert rep.n_good == 300 - len(expected)


# -- control characters in names -----------------------------------------------------------------
ID_COLS = ["prompt_id", "model_a", "model_b", "judge", "category", "annotator"]


CONTROL_CHARS = ["\x00", "\x07", "\t", "\n", "\x1b", "\x7f", "\x9f"]


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_control_characters_in_names_are_rejected(fmt):
    """Every control character in every id column, one bad row each (7 x 6), between two good rows:
    each bad row rejected at its own line with its own sentence, every good row kept. (One file per
    format since issue 26's second round; until then one two-row file per character, column and format,
    84 validations whose fixed cost was most of this file's time.)"""
    base = {"prompt_id": "p", "model_a": "a", "model_b": "b", "judge": "j", "category": "c",
            "annotator": "h", "winner": "A"}
    bad = [dict(base, **{column: base[column] + char + "z"}) for char in CONTROL_CHARS for column in ID_COLS]
    rows = [dict(base, prompt_id="q"), *bad, dict(base, prompt_id="r")]
    if fmt == "csv":
        data, name = pd.DataFrame(rows).to_csv(index=False).encode(), "v.csv"
        # a record starts on the line after the previous one's last: a quoted newline adds a line
        starts = np.cumsum([2] + [1 + sum(str(v).count("\n") for v in r.values()) for r in rows[:-1]])
    else:
        data, name = ("\n".join(json.dumps(r) for r in rows) + "\n").encode(), "v.jsonl"
        starts = np.arange(1, len(rows) + 1)
    rep = check(data, name)
    expected = {}
    for line, row, (char, column) in zip(starts[1:-1].tolist(), bad,
                                         [(c, col) for c in CONTROL_CHARS for col in ID_COLS], strict=True):
        expected[line] = f"{column} {row[column]!r} contains a control character (U+{ord(char):04X})"
    assert reasons(rep) == expected
    assert rep.good["prompt_id"].tolist() == ["q", "r"]
    assert set(rep.good["model_a"]) == {"a"}


def test_control_character_a_nul_is_not_a_second_model():
    """The audit's case: ``a\\x00`` was stored as a model distinct from ``a``."""
    rows = [{"prompt_id": "1", "model_a": "a", "model_b": "b", "winner": "A"},
            {"prompt_id": "2", "model_a": "a\x00", "model_b": "b", "winner": "A"}]
    rep = check("\n".join(json.dumps(r) for r in rows), "v.jsonl")
    models = set(rep.good["model_a"]) | set(rep.good["model_b"])
    assert models == {"a", "b"} and rep.n_rejected == 1


def test_tabs_and_newlines_stay_in_free_texts():
    text = 'prompt_id,model_a,model_b,winner,explanation,question\np,a,b,A,"x\ty\nz","q\tr"\n'
    rep = check(text)
    assert rep.n_rejected == 0
    assert rep.good["explanation"].tolist() == ["x\ty\nz"]
    assert rep.prompts["text"].tolist() == ["q\tr"]
