"""The Data page's texts section and the inspector after it: texts uploaded for a stored dataset are
matched, stored, and shown beside the verdicts (issue 25, point 5). The counts are checked against the
files read with ``json`` and the verdicts in plain Python."""

from __future__ import annotations

import itertools
import json

# ruff: noqa: F811 - the fixtures imported from apphelpers are requested by name
from apphelpers import assert_clean, own_app, unescape_md  # noqa: F401
from conftest import REPO

MT_BENCH = REPO / "data" / "mt_bench"
MODELS = ("gpt-4", "llama-13b", "vicuna-13b-v1.3")


CYCLE = {("gpt-4", "llama-13b"), ("llama-13b", "vicuna-13b-v1.3"), ("vicuna-13b-v1.3", "gpt-4")}
"""Who beats whom on every question: a cycle, so every prompt's graph has a bad triad."""


def _pairs(path) -> None:
    """A FastChat gpt-4_pair.jsonl (its own field names) on three MT-Bench questions, turn 1."""
    path.write_text("".join(json.dumps({
        "question_id": q, "model_1": a, "model_2": b, "g1_winner": w, "g2_winner": w,
        "judge": ["gpt-4", "pair-v2"], "g1_judgment": f"judged {a} vs {b}", "g2_judgment": "x", "turn": 1})
        + "\n" for q in (81, 101, 121) for a, b in itertools.permutations(MODELS, 2)
        for w in ["model_1" if (a, b) in CYCLE else "model_2"]))


def test_texts_uploaded_on_the_data_page_show_in_the_inspector(own_app, tmp_path):
    from app_pages._lens import get_store
    from engine.ingest.importer import import_files

    _pairs(tmp_path / "gpt-4_pair.jsonl")
    import_files(get_store(), [tmp_path / "gpt-4_pair.jsonl"], "mtb")
    files = [MT_BENCH / "question.jsonl", *(MT_BENCH / "model_answer" / f"{m}.jsonl" for m in MODELS[:2])]
    at = own_app.switch_page("app_pages/6_data.py").run()
    at.selectbox(key="texts_into").set_value("mtb").run()
    # texts of another dataset: the refusal in an error box, and nothing to store
    other = b"".join(json.dumps({"question_id": f"q{i}", "turns": ["x"]}).encode() + b"\n" for i in range(3))
    at.file_uploader(key="texts_upload").set_value([("question.jsonl", other, "application/jsonl")]).run()
    assert [e.message for e in at.exception] == []
    assert [unescape_md(e.value)[:57] for e in at.error] == [
        "Not one text of the files matches a verdict of dataset 'm"]
    assert not [b for b in at.button if b.key == "texts_store"]
    at.file_uploader(key="texts_upload").set_value(
        [(f.name, f.read_bytes(), "application/jsonl") for f in files]).run()
    assert_clean(at)
    report = unescape_md("\n".join(m.value for m in at.markdown))
    # 3 prompts of 80 (x2 turns) met; answers: 2 models with files x 3 prompts, of 2 x 80 x 2 in the files
    assert "prompt texts: 3 of 160 match" in report and "answer texts: 6 of 320 match" in report
    assert "3 of the 3 prompts and 6 of the 9 answers the verdicts compare have a text" in report
    at.button(key="texts_store").click().run()
    assert_clean(at)
    done = "stored 160 prompt texts and 320 answer texts in dataset mtb"
    assert any(done in s.value.lower() for s in at.success)

    at = at.switch_page("app_pages/4_inspector.py").run()
    assert_clean(at)
    assert at.session_state["dataset"] == "mtb"
    prompt = at.selectbox(key="insp_prompt").value
    question = json.loads((MT_BENCH / "question.jsonl").read_text().splitlines()[int(prompt) - 81])
    texts = [t.value for t in at.text]
    assert question["turns"][0] in texts
    # the chosen triad's answers: those of the two models whose answer files were uploaded, none of the third
    answers = {m: next(json.loads(line)["choices"][0]["turns"][0]
                       for line in (MT_BENCH / "model_answer" / f"{m}.jsonl").open()
                       if str(json.loads(line)["question_id"]) == prompt) for m in MODELS}
    assert at.selectbox(key="insp_triad").value == 0  # the cycle of the 3 models
    assert not any(answers[m] in texts for m in MODELS)  # drawn once a pair's answers are opened
    assert sum(c.value == "No answer text stored." for c in at.caption) == 0
    for k in range(3):
        at.session_state[f"insp_answers_{k}"] = True
    at.run()
    texts = [t.value for t in at.text]
    assert [m for m in MODELS if answers[m] in texts] == list(MODELS[:2])
    assert sum(c.value == "No answer text stored." for c in at.caption) >= 1  # vicuna's, not uploaded
    assert not any("holds no text for this prompt" in c.value for c in at.caption)
