"""Style counts made from answer texts (issue 24 point 1, third source): tokens of tiktoken's o200k_base
loaded without the network, markdown counted by the stated rule, kept in the store once per dataset
version, and what ``store_vote_rows(style=True)`` reads from them.

Second paths: hand counts of crafted texts; a character scanner written here (no regular expression)
for the markdown rule, on drawn texts; quicktok's own encoder (a separate implementation of the same
encoding) for the tokens; the answers table joined in pandas for the per-verdict read."""

from __future__ import annotations

import shutil

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.ingest.importer import import_files
from engine.ranking.vote_query import store_style_coverage, store_vote_rows
from engine.store.connection import Store
from engine.style.counting import count_answers, markdown_counts, o200k_encoding

CRAFTED = [  # text, (headers, lists, bold) counted by hand
    ("plain words", (0, 0, 0)),
    ("# Title\n## Part\n###### six\n####### seven is no header\n#no space", (3, 0, 0)),
    ("  # indented is no header\n#\nnext", (1, 0, 0)),  # '#' then the newline counts
    ("1. one\n2. two\n   10. nested\n- a\n* b\n+ c\n-no space\n--- rule", (0, 6, 0)),
    ("intro\n\n\n  3. after blank lines\n1.\n*", (0, 2, 0)),  # '*' at the very end: no whitespace after
    # the rule pairs marks left to right: "** and **" after "lines" is a bold span too
    ("**bold** and __also__ and **two\nlines** and ****", (0, 0, 3)),
    ("**a**b**c** then __x__y__z__", (0, 0, 4)),
    ("```\n# not a header\n- not a list\n**not bold**\n```\n# Real\n- item **b**", (1, 1, 1)),
    ("```python\nx = 1\n```\ntext\n```\n```", (0, 0, 0)),
    ("`` ` `` inline ticks\n- item", (0, 1, 0)),
]


@pytest.mark.parametrize("text,want", CRAFTED)
def test_markdown_counts_by_hand(text, want):
    assert markdown_counts(text) == want


def scanned_counts(text: str) -> tuple[int, int, int]:
    """The markdown rule of engine/style/counting.py, by scanning characters (the second path)."""
    blocks, i = [], 0
    while True:
        i = text.find("```", i)
        if i < 0:
            break
        j = text.find("`", i + 3)
        if j >= 0 and text.startswith("```", j):
            blocks.append(text[i + 3:j])
            i = j + 3
        else:
            i += 1
    for block in blocks:
        if block:
            text = text.replace(block, "")
    lines = text.split("\n")
    headers = items = 0
    for k, line in enumerate(lines):
        newline_follows = k < len(lines) - 1
        run = len(line) - len(line.lstrip("#"))
        after = line[run:]
        if 1 <= run <= 6 and (after[:1].isspace() if after else newline_follows):
            headers += 1
    # list items: a line whose text after leading whitespace is digits + '.' or one of -*+, then
    # whitespace (or the newline); leading whitespace may span blank lines, each item counts once
    for k, line in enumerate(lines):
        body = line.lstrip()
        newline_follows = k < len(lines) - 1
        digits = len(body) - len(body.lstrip("0123456789"))
        if digits and body[digits:digits + 1] == "." and not any(not c.isdecimal() for c in body[:digits]):
            rest = body[digits + 1:]
        elif body[:1] in ("-", "*", "+") and body:
            rest = body[1:]
        else:
            continue
        if rest[:1].isspace() if rest else newline_follows:
            items += 1
    bold = 0
    for mark in ("*", "_"):
        i = 0
        while True:
            i = text.find(mark * 2, i)
            if i < 0:
                break
            j = i + 2
            while j < len(text) and text[j] not in (mark, "\n"):
                j += 1
            if j > i + 2 and text.startswith(mark * 2, j):
                bold += 1
                i = j + 2
            else:
                i += 1
    return headers, items, bold


PIECES = ["#", "##", "#######", " ", "  ", "\n", "\n\n", "-", "*", "+", "_", "**", "__", "1.", "12.", "```",
          "`", "word", "x", "\t"]
MARKDOWNISH = st.lists(st.sampled_from(PIECES), max_size=40).map("".join)


@settings(max_examples=300, deadline=None)
@given(MARKDOWNISH)
def test_markdown_counts_equal_a_character_scanner(text):
    assert markdown_counts(text) == scanned_counts(text)


def test_the_scanner_agrees_with_the_hand_counts():
    for text, want in CRAFTED:
        assert scanned_counts(text) == want, text


@pytest.fixture(scope="module")
def quicktok_encoding():
    quicktok = pytest.importorskip("quicktok")
    return quicktok.get_encoding("o200k_base")


@settings(max_examples=30, deadline=None)
@given(st.text(max_size=200))
def test_tokens_equal_a_second_implementation(quicktok_encoding, text):
    """tiktoken's o200k_base (ranks from the shipped file) and quicktok's encoder give the same tokens."""
    assert o200k_encoding().encode_ordinary(text) == quicktok_encoding.encode_ordinary(text)


def test_token_counts_of_known_texts(quicktok_encoding):
    enc = o200k_encoding()
    assert enc.name == "o200k_base" and enc.encode_ordinary("hello world") == [24912, 2375]
    texts = [t for t, _ in CRAFTED] + ["<|endoftext|> is plain text here", "日本語のテキスト 😀"]
    counts = count_answers([*texts, None])
    assert np.isnan(counts[-1]).all()
    np.testing.assert_array_equal(counts[:-1, 0], [len(quicktok_encoding.encode_ordinary(t)) for t in texts])
    np.testing.assert_array_equal(counts[:-1, 1:], [scanned_counts(t) for t in texts])


@pytest.fixture(scope="module")
def counted_store(shipped_db, tmp_path_factory):
    """A copy of the shipped store (vicuna80: answer texts, no stored counts), its own to change."""
    path = tmp_path_factory.mktemp("style_counting") / "lens.duckdb"
    shutil.copy(shipped_db, path)
    store = Store(path)
    yield store
    store.close()


def test_verdicts_read_their_answers_counts_once_per_version(counted_store, tmp_path):
    """Each verdict's counts are those of its two answers (the answers table joined in pandas, counted
    here); counted once per dataset version: a second read recounts nothing, a new import recounts."""
    store = counted_store
    rows = store_vote_rows(store, "vicuna80", judge="gpt-4", style=True, order_by="input")
    verdicts = store.verdicts("vicuna80", judge="gpt-4", valid_only=True)
    answers = store.answer_texts("vicuna80")
    key = ["prompt_id", "variant", "turn"]
    sides = []
    for s in ("a", "b"):
        side = verdicts[[*key, f"model_{s}"]].merge(answers.rename(columns={"model": f"model_{s}"}),
                                                    on=[*key, f"model_{s}"], how="left")
        sides.append(count_answers(side["text"].where(side["text"].notna(), None).tolist()))
    np.testing.assert_array_equal(rows.style, np.hstack(sides))
    assert np.isfinite(rows.style).all()
    runs = store.cursor().execute("SELECT version, answers, counted_at FROM answer_style_runs "
                                  "WHERE dataset = 'vicuna80'").fetchall()
    assert len(runs) == 1 and runs[0][1] == len(answers)
    store_vote_rows(store, "vicuna80", style=True)
    assert store.cursor().execute("SELECT version, answers, counted_at FROM answer_style_runs "
                                  "WHERE dataset = 'vicuna80'").fetchall() == runs
    cov = store_style_coverage(store, "vicuna80", judge="gpt-4")
    assert (cov.given, cov.from_texts, cov.none, cov.sentence()) == (0, len(rows), 0, None)
    extra = pd.DataFrame({"prompt_id": ["new"], "model_a": ["m1"], "model_b": ["m2"], "winner": ["A"],
                          "answer_a": ["# Head\n- one"], "answer_b": ["plain"], "question": ["q"]})
    extra.to_csv(tmp_path / "extra.csv", index=False)
    import_files(store, [tmp_path / "extra.csv"], "vicuna80")
    new = store_vote_rows(store, "vicuna80", judge="judge", style=True)  # the new verdict's default judge
    assert new.style is not None and len(new) == 1
    np.testing.assert_array_equal(new.style[0], np.r_[count_answers(["# Head\n- one"])[0],
                                                         count_answers(["plain"])[0]])
    cur = store.cursor()
    after = cur.execute("SELECT version FROM answer_style_runs WHERE dataset = 'vicuna80'").fetchall()
    assert after == [(store.dataset_version("vicuna80"),)] and after[0][0] != runs[0][0]
    kept = cur.execute("SELECT count(DISTINCT version) FROM answer_style WHERE dataset = ?",
                       ["vicuna80"]).fetchone()
    assert kept == (1,)


def test_stored_counts_come_before_the_texts(tmp_path, empty_store):
    """A verdict carrying counts keeps them; one without takes its answers' counts (per verdict)."""
    frame = pd.DataFrame({"prompt_id": ["p1", "p2"], "model_a": ["x", "x"], "model_b": ["y", "y"],
                          "winner": ["A", "B"], "answer_a": ["**b** text", "# h"], "answer_b": ["- i", "z"],
                          "tokens_a": [7.0, np.nan], "tokens_b": [9.0, np.nan]})
    frame.to_csv(tmp_path / "mix.csv", index=False)
    import_files(empty_store, [tmp_path / "mix.csv"], "mix")
    rows = store_vote_rows(empty_store, "mix", style=True, order_by="input")
    assert rows.style is not None
    np.testing.assert_array_equal(rows.style[0], [7, np.nan, np.nan, np.nan, 9, np.nan, np.nan, np.nan])
    np.testing.assert_array_equal(rows.style[1], np.r_[count_answers(["# h"])[0], count_answers(["z"])[0]])
    cov = store_style_coverage(empty_store, "mix")
    assert (cov.verdicts, cov.given, cov.from_texts) == (2, 1, 1)


def test_answers_of_other_models_say_so_and_the_frame_path_reads_texts(tmp_path, empty_store):
    """Answer texts that belong to no verdict's models serve none (the sentence says so); the frame path
    fills from the dataset's answer counts when given them (the app's cached selection)."""
    from engine.ranking.vote_query import frame_vote_rows
    from engine.store import writes
    from engine.style.features import answer_counts

    frame = pd.DataFrame({"prompt_id": ["p1", "p2"], "model_a": ["x", "x"], "model_b": ["y", "y"],
                          "winner": ["A", "tie"]})
    frame.to_csv(tmp_path / "v.csv", index=False)
    import_files(empty_store, [tmp_path / "v.csv"], "other")
    with empty_store.transaction() as tx:
        writes.upsert_answers(tx, "other", pd.DataFrame({"prompt_id": ["p1"], "variant": [0], "turn": [1],
                                                         "model": ["z"], "text": ["# not theirs"]}))
    cov = store_style_coverage(empty_store, "other")
    assert (cov.verdicts, cov.given, cov.from_texts, cov.answers) == (2, 0, 0, 1)
    assert cov.sentence() is not None and cov.sentence().endswith(
        "none of its 1 stored answer texts belongs to both models of a verdict (same prompt, variant, turn "
        "and model).")
    with empty_store.transaction() as tx:  # a write of texts is a new version (its writers record it)
        writes.upsert_answers(tx, "other", pd.DataFrame({"prompt_id": ["p1", "p1"], "variant": [0, 0],
                                                         "turn": [1, 1], "model": ["x", "y"],
                                                         "text": ["**b**", "- i\n- j"]}))
        writes.bump_dataset(tx, "other")
    verdicts = empty_store.verdicts("other")
    rows = frame_vote_rows(verdicts, style=True, order_by="input", texts=answer_counts(empty_store, "other"))
    assert rows.style is not None
    np.testing.assert_array_equal(rows.style[0],
                                  np.r_[count_answers(["**b**"])[0], count_answers(["- i\n- j"])[0]])
    assert np.isnan(rows.style[1]).all()  # p2 has no answer texts
